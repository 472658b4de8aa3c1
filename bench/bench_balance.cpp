// Whole optimisation (theory, search, LP, Q/B alternation) per model file on a cluster, and the
// LP's solve time per solve and per segment (one LP holds every segment); median of --repeat runs,
// import excluded.
// Run by scripts/bench-balance.sh; results in docs/benchmarks.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "engine/balance/alternation.h"
#include "engine/base/error.h"
#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/ir/segments.h"
#include "engine/plan/planner.h"

int main(int argc, char** argv) {
  CLI::App app{"Times the whole optimisation (search + LP + alternation) per model file."};
  std::vector<std::string> models;
  std::string clusterPath;
  int repeat = 5;
  app.add_option("MODELS", models, "TorchScript model files")->required();
  app.add_option("--cluster,-c", clusterPath, "Cluster inventory (YAML)")->required();
  app.add_option("--repeat", repeat, "Runs per model (the median is printed)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    hap::cost::Cluster cluster = hap::cost::loadCluster(clusterPath);
    std::cout << fmt::format("{:<24} {:>6} {:>9} {:>7} {:>9} {:>12} {:>14} {:>13} {:>14} {:>14}\n", "model", "nodes",
                             "segments", "steps", "LP solves", "LP ms/solve", "LP ms/segment", "optimise s",
                             "start ms", "final ms");
    for (const std::string& path : models) {
      const hap::ir::Graph imported = hap::import::importModel(path);
      std::vector<double> times, lp;
      hap::balance::AlternationResult r;
      int segments = 1;
      for (int i = 0; i < repeat; ++i) {
        auto start = std::chrono::steady_clock::now();
        hap::ir::Segmentation s = hap::ir::segmentGraph(imported, {});  // one per layer, as hap plan
        const hap::ir::Graph g = hap::ir::insertReshards(imported, s);
        segments = s.count();
        hap::synth::Theory theory(g, s.nodeSegment);
        hap::balance::AlternationOptions options;  // as hap plan: proportional and even starts
        options.moreStarts = hap::plan::furtherStarts(imported, cluster);
        r = hap::balance::alternate(
            theory, cluster, hap::plan::ratiosFor(imported, cluster, hap::plan::PlanOptions::Ratios::Proportional),
            options);
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        lp.push_back(r.lpSolves ? r.lpSeconds / r.lpSolves : 0);
      }
      std::sort(times.begin(), times.end());
      std::sort(lp.begin(), lp.end());
      const std::string name = path.substr(path.find_last_of('/') + 1);
      const double perSolve = lp[lp.size() / 2];
      std::cout << fmt::format("{:<24} {:>6} {:>9} {:>7} {:>9} {:>12.2f} {:>14.3f} {:>13.3f} {:>14.1f} {:>14.1f}\n",
                               name, imported.nodes.size(), segments, r.history.size(), r.lpSolves, perSolve * 1e3,
                               perSolve * 1e3 / segments, times[times.size() / 2], r.history.front().seconds * 1e3,
                               r.seconds * 1e3);
    }
  } catch (const hap::Error& e) {
    std::cerr << "bench_balance: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
