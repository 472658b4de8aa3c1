// Writes the seed plans of the plan target (fuzz/corpus/fuzz_plan/): fuzz_graph.h's MLP planned
// on the bundled clusters with HAP's search and the data-parallel and fully-sharded baselines.
// Usage: fuzz_plan_seeds RESOURCES_CLUSTERS_DIR OUT_DIR (scripts/fuzz.sh --seeds runs it)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/cost/cluster.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"
#include "engine/plan/verifier.h"
#include "fuzz_graph.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_plan_seeds RESOURCES_CLUSTERS_DIR OUT_DIR\n");
    return 2;
  }
  namespace fs = std::filesystem;
  const fs::path clusters = argv[1], out = argv[2];
  fs::create_directories(out);
  hap::ir::Graph g = hap::fuzz::mlpGraph();
  // The planner records the model file's hash: a stand-in file, not read by the fuzz target.
  const fs::path model = out / "fuzz-mlp.pt";
  std::ofstream(model) << "fuzz";
  g.sourceFile = model.string();
  int written = 0;
  for (const char* name : {"local-cpu-3", "local-cpu-hetero-3", "a100-p100-4", "paper-testbed-8"}) {
    const hap::cost::Cluster cluster = hap::cost::loadCluster((clusters / (std::string(name) + ".yaml")).string());
    using S = hap::plan::PlanOptions::Strategy;
    for (const S strategy : {S::Hap, S::DataParallel, S::FullySharded}) {
      hap::plan::PlanOptions options;
      options.strategy = strategy;
      options.baselines = strategy == S::Hap;
      if (strategy != S::Hap) options.ratios = hap::plan::PlanOptions::Ratios::Proportional;
      try {
        const hap::plan::Plan plan = hap::plan::makePlan(g, cluster, options);
        if (!hap::plan::verifyPlan(g, plan).empty()) {
          std::fprintf(stderr, "%s: the plan does not verify\n", name);
          return 1;
        }
        const std::string file = std::string("fuzz-mlp-") + name + "-" +
                                 (strategy == S::Hap ? "hap" : strategy == S::DataParallel ? "dp" : "fsdp") +
                                 ".plan.json";
        // Written as hap plan writes it, then compacted: smaller inputs mutate faster.
        const std::string path = (out / file).string();
        hap::plan::writePlan(plan, g, path);
        std::ifstream in(path);
        const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(in);
        in.close();
        std::ofstream(path) << doc.dump() << '\n';
        ++written;
      } catch (const hap::Error& e) {
        std::fprintf(stderr, "%s: %s\n", name, e.what());
      }
    }
  }
  fs::remove(model);
  std::printf("fuzz_plan_seeds: %d plans in %s\n", written, out.string().c_str());
  return written > 0 ? 0 : 1;
}
