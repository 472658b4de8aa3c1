// Synthesis time: theory + cost table + A* search for each model file on a cluster, median of
// --repeat runs (the import is excluded). Prints one row per model. Run by
// scripts/bench-synthesis.sh; results in docs/benchmarks.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "engine/base/error.h"
#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/plan/planner.h"
#include "engine/synth/search.h"

int main(int argc, char** argv) {
  CLI::App app{"Times program synthesis (theory, cost table, A* search) per model file."};
  std::vector<std::string> models;
  std::string clusterPath;
  int repeat = 5;
  app.add_option("MODELS", models, "TorchScript model files")->required();
  app.add_option("--cluster,-c", clusterPath, "Cluster inventory (YAML)")->required();
  app.add_option("--repeat", repeat, "Runs per model (the median is printed)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    hap::cost::Cluster cluster = hap::cost::loadCluster(clusterPath);
    std::cout << fmt::format("{:<28} {:>7} {:>10} {:>12} {:>14} {:>10}\n", "model", "nodes", "expanded",
                             "synthesis s", "iteration ms", "optimal");
    for (const std::string& path : models) {
      hap::ir::Graph g = hap::import::importModel(path);
      std::vector<double> times;
      hap::synth::SearchStats stats;
      double iteration = 0;
      for (int r = 0; r < repeat; ++r) {
        auto start = std::chrono::steady_clock::now();
        hap::synth::Theory theory(g);
        hap::synth::CostTable table(theory, cluster,
                                    hap::plan::ratiosFor(g, cluster, hap::plan::PlanOptions::Ratios::Proportional));
        hap::synth::Program p = hap::synth::search(table, {}, &stats);
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        iteration = p.seconds;
      }
      std::sort(times.begin(), times.end());
      std::string name = path.substr(path.find_last_of('/') + 1);
      std::cout << fmt::format("{:<28} {:>7} {:>10} {:>12.3f} {:>14.1f} {:>10}\n", name, g.nodes.size(),
                               stats.expanded, times[times.size() / 2], iteration * 1e3,
                               stats.provenOptimal ? "yes" : "beam");
    }
  } catch (const hap::Error& e) {
    std::cerr << "bench_synthesis: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
