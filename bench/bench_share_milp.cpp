// Whole shard lengths by MILP vs the LP's shares after the plan's rounding (issue 21 item 1), on
// the models and clusters of scripts/paper-experiments.sh. For each case: today's planning (the
// alternation from proportional and even starts, as plan::makePlan runs it), then, for its final
// program, the LP's shares rounded per dimension class and the MILP's lengths, both priced by the
// MILP's model (balance::priceCuts: the exact stage model per class). One row per case.
// Usage: bench_share_milp --models build/paper-models --clusters resources/clusters [--limit S] [--quick]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "engine/balance/alternation.h"
#include "engine/balance/share_lp.h"
#include "engine/balance/share_milp.h"
#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/ir/segments.h"
#include "engine/plan/planner.h"
#include "engine/synth/stages.h"

using namespace hap;

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void runCase(const std::string& file, const std::string& label, const cost::Cluster& c, double limit) {
  if (!std::filesystem::exists(file)) {
    std::cout << fmt::format("{:<14} {:<28} missing {}\n", label, c.name, file);
    return;
  }
  const ir::Graph imported = import::importModel(file);
  ir::Segmentation segmentation = ir::segmentGraph(imported, ir::parseSegmentOptions("layer"));
  const ir::Graph g = ir::insertReshards(imported, segmentation);
  const synth::Theory theory(g, segmentation.nodeSegment);
  balance::AlternationOptions o;
  o.moreStarts = plan::furtherStarts(g, c);
  const auto t0 = std::chrono::steady_clock::now();
  const balance::AlternationResult a =
      balance::alternate(theory, c, plan::ratiosFor(g, c, plan::PlanOptions::Ratios::Proportional), o);
  const double planSeconds = since(t0);
  const synth::CostTable& table = *a.table;
  const balance::ShareLpResult lp = balance::optimiseShares(table, a.program, o.cost);
  const balance::CutPrice rounded =
      balance::priceCuts(table, a.program, balance::roundedCuts(table, a.program, lp.shares), o.cost);
  balance::ShareMilpOptions mo;
  mo.timeLimitSeconds = limit;
  const balance::ShareMilpResult r = balance::optimiseLengths(table, a.program, o.cost, mo);
  std::cout << fmt::format(
      "{:<14} {:<28} {:>3} dev {:>3} seg  plan {:>9.3f} ms  LP+round {:>9.3f} ms{}  MILP {:>9.3f} ms ({:+.2f}%)  "
      "solve {:.3f} s {}  {} rows {} cols {} int  (plan {:.1f} s)\n",
      label, c.name, c.size(), theory.segmentCount(), a.seconds * 1e3, rounded.seconds * 1e3, rounded.fits ? "" : " (no fit)",
      r.seconds * 1e3, 100 * (r.seconds / rounded.seconds - 1), r.solveSeconds,
      r.status == balance::ShareMilpResult::Status::Optimal ? "optimal" : fmt::format("time limit (bound {:.3f} ms)", r.bound * 1e3),
      r.rows, r.columns, r.integers, planSeconds);
  std::cout.flush();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"LP + rounding vs MILP lengths on the paper experiments' models and clusters."};
  std::string models, clusters;
  double limit = 10;
  bool quick = false;
  app.add_option("--models", models, "Folder of exported models (scripts/paper-experiments.sh makes it)")->required();
  app.add_option("--clusters", clusters, "Folder of cluster inventories")->required();
  app.add_option("--limit", limit, "CBC's time limit per solve, seconds")->capture_default_str();
  app.add_flag("--quick", quick, "8 and 16 GPUs only");
  CLI11_PARSE(app, argc, argv);
  try {
    const cost::Cluster testbed = cost::loadCluster(clusters + "/paper-testbed-64.yaml");
    const cost::Cluster homogeneous = cost::loadCluster(clusters + "/paper-homogeneous-32.yaml");
    const std::vector<int> perMachine = quick ? std::vector<int>{1, 2} : std::vector<int>{1, 2, 4, 8};
    const std::vector<int> homPerMachine = quick ? std::vector<int>{2, 4} : std::vector<int>{2, 4, 6, 8};
    for (const std::string model : {"vgg19", "vit", "bert", "bert_moe"}) {
      auto fileFor = [&](const cost::Cluster& c) {
        return models + "/" + model + (model == "bert_moe" ? fmt::format("-d{}", c.size()) : "") + ".pt";
      };
      for (int k : perMachine) {
        const cost::Cluster c = cost::takeDevices(testbed, k);
        runCase(fileFor(c), model, c, limit);
      }
      for (int k : homPerMachine) {
        const cost::Cluster c = cost::takeDevices(homogeneous, k);
        runCase(fileFor(c), model, c, limit);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
