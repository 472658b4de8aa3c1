#include "app/cli/compare_command.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "db/cluster_profile.h"
#include "db/store.h"
#include "engine/base/error.h"
#include "engine/base/text_file.h"
#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/ir/summary.h"
#include "engine/plan/plan_request.h"

namespace hap::cli {
namespace {

struct CompareArgs {
  std::string model, cluster, csv, segments = "layer";
  std::string db;          // the profile store a cluster's `profile:` is looked up in
  bool noProfile = false;
  std::vector<std::string> inputs;
};

int runCompare(const CompareArgs& a) {
  import::ImportOptions importOptions;
  importOptions.metaWeights = true;  // shapes suffice: the weights are not read
  for (const std::string& in : a.inputs) importOptions.inputOverrides.push_back(import::parseInputArg(in));
  auto g = std::make_shared<const ir::Graph>(import::importModel(a.model, importOptions));
  cost::Cluster cluster = cost::loadCluster(a.cluster);
  if (a.noProfile) cluster.profile.clear();
  db::attachProfile(cluster, a.db.empty() ? db::defaultPath() : a.db);
  // `hap plan`'s planning with the default options but --segments: HAP's plan priced against the
  // four baselines (the Megatron one at one machine's batch).
  plan::PlanRequest request;
  request.segments = a.segments;
  const plan::Plan p = plan::planModel(std::move(g), importOptions, cluster, request).plan;

  struct Row {
    std::string name;
    const plan::Estimate* e;
    bool applicable;
    std::string note;
  };
  std::vector<Row> rows{{"HAP", &p.estimate, true,
                         fmt::format("{} segment{}, ratios by LP", p.segments.size(), p.segments.size() == 1 ? "" : "s")}};
  for (const plan::Plan::Baseline& b : p.baselines) rows.push_back({b.name, &b.estimate, b.applicable, b.note});

  std::cout << fmt::format("{} on {}\n\n", a.model, cost::summary(cluster));
  std::cout << fmt::format("  {:<9} {:>13} {:>13} {:>5} {:>8}  {}\n", "plan", "iteration", "memory (max)", "fits",
                           "speedup", "how");
  for (const Row& r : rows) {
    if (!r.applicable) {
      std::cout << fmt::format("  {:<9} {:>13} {:>13} {:>5} {:>8}  {}\n", r.name, "-", "-", "-", "-", r.note);
      continue;
    }
    std::cout << fmt::format("  {:<9} {:>10.3f} ms {:>13} {:>5} {:>7.2f}x  {}\n", r.name, r.e->iterationSeconds * 1e3,
                             ir::formatBytes(static_cast<int64_t>(r.e->maxMemoryBytes())), r.e->fits ? "yes" : "NO",
                             r.e->iterationSeconds / p.estimate.iterationSeconds, r.note);
  }
  std::cout << "\nspeedup: the plan's predicted iteration time over HAP's (above 1: HAP is faster).\n";
  if (!a.csv.empty()) {
    std::string csv = "plan,iteration_ms,max_memory_bytes,fits,applicable,hap_speedup\n";
    for (const Row& r : rows)
      csv += fmt::format("{},{:.6f},{:.0f},{},{},{:.4f}\n", r.name, r.e->iterationSeconds * 1e3, r.e->maxMemoryBytes(),
                         r.e->fits, r.applicable, r.e->iterationSeconds / p.estimate.iterationSeconds);
    writeTextFile(a.csv, csv);
  }
  return 0;
}

}  // namespace

void addCompareCommand(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Plan a model with HAP and price the baselines under the same cost model: DP-EV, DP-CP, "
      "FSDP (ZeRO-3) and Megatron-style tensor parallelism inside machines with data parallelism "
      "across them; print predicted time, memory, feasibility and HAP's speedup over each.");
  cmd->add_option("MODEL", args->model, "TorchScript file (.pt) whose forward returns the loss")->required();
  cmd->add_option("--cluster,-c", args->cluster, "Cluster inventory (YAML)")->required()->type_name("FILE");
  cmd->add_option("--input,-i", args->inputs, "Shape and dtype of a forward argument, NAME=DIMxDIM...[:DTYPE[:LOW..HIGH]]")
      ->type_name("SPEC");
  cmd->add_option("--segments", args->segments, "HAP's segments: layer, scope:DEPTH, auto:PARTS or none")
      ->capture_default_str();
  cmd->add_option("--csv", args->csv, "Also write the table as CSV")->type_name("FILE");
  cmd->add_option("--db", args->db, "Profile store that the cluster's 'profile:' is looked up in (default: $HAP_DB, "
                  "else ~/.local/share/hap/profiles.db)")->type_name("FILE");
  cmd->add_flag("--no-profile", args->noProfile, "Price by the inventory alone, ignoring the cluster's 'profile:'");
  cmd->callback([args, &exitCode] { exitCode = runCompare(*args); });
}

}  // namespace hap::cli
