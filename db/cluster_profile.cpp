#include "db/cluster_profile.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <memory>

#include "db/store.h"
#include "engine/cost/profile.h"

namespace hap::db {

void attachProfile(cost::Cluster& cluster, const std::string& storePath) {
  if (cluster.profile.empty()) return;
  std::string name = cluster.profile;
  int version = 0;
  if (const size_t at = name.rfind('@'); at != std::string::npos) {
    const std::string_view digits = std::string_view(name).substr(at + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), version);
    if (ec != std::errc() || end != digits.data() + digits.size() || version < 1)
      throw StoreError(fmt::format("{}: profile: '{}' is not NAME or NAME@VERSION (a version is a positive integer)",
                                   cluster.source.empty() ? cluster.name : cluster.source, cluster.profile));
    name.resize(at);
  }
  const std::string where = cluster.source.empty() ? "cluster " + cluster.name : cluster.source;
  if (!std::filesystem::exists(storePath))
    throw StoreError(fmt::format("{}: profile: '{}' needs the profile store, and {} does not exist; run `hap profile "
                                 "--name {} --db {}` to measure this machine, or remove the profile line",
                                 where, cluster.profile, storePath, name, storePath));
  const Store store(storePath, Store::Mode::ReadOnly);
  std::optional<cost::Profile> p = store.loadProfile(name, version);
  if (!p) {
    std::string held;
    for (const ProfileInfo& i : store.profiles()) held += fmt::format("{}{}@{}", held.empty() ? "" : ", ", i.name, i.version);
    throw StoreError(fmt::format("{}: profile: the profile store {} holds no profile '{}'{}; it holds: {}. Run `hap "
                                 "profile --name {}` or name one of those",
                                 where, storePath, name, version ? fmt::format(" version {}", version) : "",
                                 held.empty() ? "none" : held, name));
  }
  cluster.profile = fmt::format("{}@{}", p->name, p->version);
  cluster.measured = std::make_shared<const cost::Profile>(std::move(*p));
}

}  // namespace hap::db
