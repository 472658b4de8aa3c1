#include "runtime/train/checkpoint_list.h"

#include <ATen/core/ivalue.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "runtime/core/runtime_error.h"
#include "runtime/train/checkpoint_format.h"

namespace hap::runtime {
namespace {

namespace fs = std::filesystem;

c10::IValue lookup(const c10::impl::GenericDict& dict, const std::string& key) {
  auto it = dict.find(c10::IValue(key));
  return it == dict.end() ? c10::IValue() : it->value();
}

std::vector<CheckpointTensor> tensorsOf(const c10::IValue& v) {
  std::vector<CheckpointTensor> out;
  if (!v.isGenericDict()) return out;
  for (const auto& entry : v.toGenericDict())
    if (entry.key().isString() && entry.value().isTensor())
      out.push_back({entry.key().toStringRef(), entry.value().toTensor().sizes().vec()});
  return out;
}

// N of "step-N.pt", or -1.
int64_t stepOfName(const std::string& name) {
  constexpr std::string_view prefix = "step-", suffix = ".pt";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return -1;
  const char* first = name.data() + prefix.size();
  const char* last = name.data() + name.size() - suffix.size();
  int64_t n = -1;
  const auto [end, ec] = std::from_chars(first, last, n);
  return ec == std::errc() && end == last ? n : -1;
}

}  // namespace

CheckpointInfo readCheckpointInfo(const std::string& path) {
  CheckpointInfo info;
  info.path = path;
  info.step = stepOfName(fs::path(path).filename().string());
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    info.error = fmt::format("checkpoint '{}' does not exist: {}", path, std::strerror(errno));
    return info;
  }
  info.bytes = static_cast<int64_t>(st.st_size);
  info.modified = std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
  // The header only: its checksum covers every tensor's name, shape and checksum, but the tensors'
  // bytes are not read (loadCheckpoint verifies those).
  c10::IValue root;
  try {
    root = checkpoint_format::readRoot(path, /*withData=*/false);
    checkpoint_format::verify(root, path, /*withData=*/false);
  } catch (const std::exception& e) {
    info.error = e.what();
    return info;
  }
  const auto dict = root.isGenericDict() ? root.toGenericDict() : c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
  const c10::IValue format = lookup(dict, "format");
  if (!format.isString() || format.toStringRef() != "hap-checkpoint") {
    info.error = fmt::format("'{}' is not a HAP checkpoint (no \"format\": \"hap-checkpoint\" entry)", path);
    return info;
  }
  const auto integer = [&](const char* key, int64_t& out) {
    const c10::IValue v = lookup(dict, key);
    if (v.isInt()) out = v.toInt();
    else if (info.error.empty())
      info.error = fmt::format("checkpoint '{}': entry \"{}\" is missing or not an integer; the file is damaged", path, key);
  };
  integer("version", info.version);
  integer("iteration", info.iteration);
  integer("optimizer_steps", info.optimizerSteps);
  if (const c10::IValue v = lookup(dict, "optimizer"); v.isString()) info.optimizer = v.toStringRef();
  info.parameters = tensorsOf(lookup(dict, "parameters"));
  info.buffers = tensorsOf(lookup(dict, "buffers"));
  for (const CheckpointTensor& t : info.parameters) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    info.parameterElements += n;
  }
  if (info.step < 0) info.step = info.iteration;
  return info;
}

std::vector<CheckpointInfo> listCheckpoints(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return {};
  if (!fs::is_directory(dir, ec))
    throw RuntimeError(fmt::format("checkpoint folder '{}' is not a folder; choose the folder the run writes "
                                   "step-N.pt files into",
                                   dir));
  std::vector<CheckpointInfo> out;
  fs::directory_iterator it(dir, ec), end;
  if (ec) throw RuntimeError(fmt::format("cannot read the checkpoint folder '{}': {}", dir, ec.message()));
  for (; it != end; it.increment(ec)) {
    if (ec) throw RuntimeError(fmt::format("cannot read the checkpoint folder '{}': {}", dir, ec.message()));
    const std::string name = it->path().filename().string();
    if (stepOfName(name) < 0 || !it->is_regular_file(ec)) continue;
    out.push_back(readCheckpointInfo(it->path().string()));
  }
  std::sort(out.begin(), out.end(), [](const CheckpointInfo& a, const CheckpointInfo& b) {
    return a.step != b.step ? a.step < b.step : a.path < b.path;
  });
  return out;
}

}  // namespace hap::runtime
