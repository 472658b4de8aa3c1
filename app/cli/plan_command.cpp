#include "app/cli/plan_command.h"

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <string>
#include <unistd.h>
#include <memory>

#include "engine/base/error.h"
#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/plan/explain.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"
#include "engine/plan/verifier.h"

namespace hap::cli {
namespace {

struct PlanArgs {
  std::string model, cluster, output, ratios = "lp", segments = "layer", collectives = "auto", baseline;
  std::vector<std::string> inputs, pins;
  bool explain = false, quiet = false, baselines = true;
  int64_t maxStates = 2'000'000;
  int beamWidth = 2000;
};

// Prints search progress on stderr: one line rewritten in place on a terminal, a line a second
// otherwise (logs).
class ProgressLine : public synth::SearchListener {
 public:
  void onProgress(const synth::SearchProgress& p) override {
    if (!terminal_ && p.elapsedSeconds - lastLine_ < 1.0) return;
    lastLine_ = p.elapsedSeconds;
    std::cerr << (terminal_ ? "\r" : "")
              << fmt::format("search: {} states expanded, {} in the frontier, bound {:.3f} ms, {:.1f} s",
                             p.expanded, p.frontier, p.boundSeconds * 1e3, p.elapsedSeconds)
              << (terminal_ ? "   " : "\n") << std::flush;
    printed_ = true;
  }
  void finish() {
    if (printed_ && terminal_) std::cerr << "\n";
  }

 private:
  bool terminal_ = isatty(STDERR_FILENO) != 0;
  bool printed_ = false;
  double lastLine_ = -1;
};

// --ratios S0,S1,...: one non-negative share per device of the cluster, normalised to sum 1.
std::vector<double> parseShares(const std::string& text, const cost::Cluster& cluster) {
  std::vector<double> shares;
  double total = 0;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    size_t used = 0;
    double share = -1;
    try {
      share = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || !(share >= 0) || !std::isfinite(share))
      throw Error(fmt::format("--ratios '{}': '{}' is not a non-negative number; give 'lp', 'even', 'proportional' or "
                              "one share per device, e.g. 0.5,0.3,0.2,0",
                              text, item));
    shares.push_back(share);
    total += share;
    start = comma + 1;
  }
  if (shares.size() != static_cast<size_t>(cluster.size()))
    throw Error(fmt::format("--ratios '{}': {} shares for the {} devices of cluster {}", text, shares.size(),
                            cluster.size(), cluster.name));
  if (total <= 0) throw Error(fmt::format("--ratios '{}': the shares sum to 0; give at least one device a share", text));
  for (double& s : shares) s /= total;
  return shares;
}

int runPlan(const PlanArgs& a) {
  ts::ImportOptions importOptions;
  importOptions.metaWeights = true;  // shapes suffice: the weights are not read
  for (const std::string& in : a.inputs) importOptions.inputOverrides.push_back(ts::parseInputArg(in));
  ir::Graph g = ts::importModel(a.model, importOptions);
  cost::Cluster cluster = cost::loadCluster(a.cluster);

  plan::PlanOptions options;
  // --baseline: a baseline's program at even (dp-ev) or proportional shares (--ratios is excluded).
  const std::string ratios = a.baseline.empty() ? a.ratios : a.baseline == "dp-ev" ? "even" : "proportional";
  options.strategy = a.baseline.empty()    ? plan::PlanOptions::Strategy::Hap
                     : a.baseline == "fsdp" ? plan::PlanOptions::Strategy::FullySharded
                                            : plan::PlanOptions::Strategy::DataParallel;
  options.ratios = ratios == "even"           ? plan::PlanOptions::Ratios::Even
                   : ratios == "proportional" ? plan::PlanOptions::Ratios::Proportional
                   : ratios == "lp"           ? plan::PlanOptions::Ratios::Optimised
                                              : plan::PlanOptions::Ratios::Fixed;
  if (options.ratios == plan::PlanOptions::Ratios::Fixed) options.fixedShares = parseShares(ratios, cluster);
  options.cost.restrictions.groupedCollectives = a.collectives != "padded";
  options.cost.restrictions.paddedCollectives = a.collectives != "grouped";
  options.segments = ir::parseSegmentOptions(a.segments);
  options.segmentText = a.segments;
  options.baselines = a.baselines;
  options.search.maxStates = a.maxStates;
  options.search.beamWidth = a.beamWidth;
  for (const std::string& pin : a.pins) options.search.pins.push_back(synth::parsePin(pin));
  ProgressLine progress;
  if (!a.quiet) options.search.listener = &progress;
  plan::Plan p;
  if (a.baseline == "megatron") {
    if (!a.pins.empty())
      throw Error("--pin: --baseline megatron pins the attention and FFN linears itself (q, k, v and fc1 column, out "
                  "and fc2 row); leave --pin out, or plan HAP's program with the pins instead");
    // The program is one machine's, on its share of the batch: its ids refer to that graph.
    ts::ImportOptions perMachine = importOptions;
    perMachine.inputOverrides = ts::dividedBatch(g, static_cast<int>(cluster.machines.size()));
    ir::Graph machineBatch = ts::importModel(a.model, perMachine);
    p = plan::makeMegatronPlan(g, machineBatch, cluster, options);
    g = std::move(machineBatch);
  } else {
    p = plan::makePlan(g, cluster, options);
  }
  progress.finish();

  std::vector<std::string> problems = plan::verifyPlan(g, p);
  if (!problems.empty()) {
    std::string list;
    for (const std::string& s : problems) list += "\n  " + s;
    throw Error(fmt::format("the synthesised plan failed verification (a bug; please report it):{}", list));
  }
  if (a.explain) std::cout << plan::formatExplain(g, p) << "\n";
  std::cout << plan::formatSummary(p);
  std::cout << "Plan verified.";
  if (!a.output.empty()) {
    plan::writePlan(p, g, a.output);
    std::cout << fmt::format(" Written to {}.", a.output);
  }
  std::cout << "\n";
  return 0;
}

}  // namespace

void addPlanCommand(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Synthesise the fastest distributed program for a model on a cluster (A* search over "
      "sharding rules under the cost model), verify it, and compare it with data parallelism "
      "(DP-EV: even shares, DP-CP: shares proportional to device speed).");
  cmd->add_option("MODEL", args->model, "TorchScript file (.pt) whose forward returns the loss")->required();
  cmd->add_option("--cluster,-c", args->cluster, "Cluster inventory (YAML), e.g. resources/clusters/paper-testbed-64.yaml")
      ->required()
      ->type_name("FILE");
  cmd->add_option("--input,-i", args->inputs,
                  "Shape and dtype of a forward argument, NAME=DIMxDIMx...[:DTYPE[:LOW..HIGH]]; repeatable; "
                  "overrides the file's hap/inputs.json")
      ->type_name("SPEC");
  CLI::Option* ratios = cmd->add_option("--ratios", args->ratios,
                  "Device shares of every sharded dimension: 'lp' optimises them (alternating the "
                  "search and a linear program, from the better of proportional and even shares), "
                  "'even', or 'proportional' to each device's peak FLOP/s, or one share per device "
                  "(e.g. 0.5,0.3,0.2,0; normalised to sum 1; zero allowed)")
      ->capture_default_str();
  cmd->add_option("--collectives", args->collectives,
                  "Methods of uneven all-gathers and reduce-scatters: 'auto' (the cheaper), 'padded' or 'grouped' "
                  "only (to compare them, or to exercise one in the runtime)")
      ->check(CLI::IsMember({"auto", "padded", "grouped"}))
      ->capture_default_str();
  CLI::Option* segments = cmd->add_option("--segments", args->segments,
                  "Groups of nodes with their own ratios: 'layer' (one per repeated block such as a "
                  "transformer layer, found from module scopes), 'scope:DEPTH' (per scope prefix of "
                  "DEPTH parts), 'auto:PARTS' (METIS partition) or 'none'; values crossing a "
                  "boundary are re-sharded by an all-to-all")
      ->capture_default_str();
  cmd->add_option("--output,-o", args->output, "Write the plan (JSON, format hap-plan v2)")->type_name("FILE");
  cmd->add_flag("--explain", args->explain,
                "Print the program stage by stage: each collective with its tensor and cost, each "
                "computation with its rule variant and the sharding of its tensors");
  cmd->add_option("--max-states", args->maxStates,
                  "State budget of the A* search; beyond it the beam search takes over")
      ->capture_default_str();
  cmd->add_option("--beam-width", args->beamWidth,
                  "States kept per position by the fallback beam search (0: fail instead)")
      ->capture_default_str();
  cmd->add_option("--pin", args->pins,
                   "Compute the nodes whose module scope or op matches the glob under the named rule "
                   "variant only, e.g. 'layers.*.ffn.fc1=column' (repeatable)")
      ->type_name("PATTERN=VARIANT");
  cmd->add_option("--baseline", args->baseline,
                  "Plan a baseline instead of HAP's program, to run it with 'hap launch' and compare: "
                  "'dp-ev' (even shares) or 'dp-cp' (shares proportional to peak FLOP/s), replicated "
                  "parameters, batch split, gradients all-reduced; or 'fsdp' (proportional shares), every "
                  "parameter stored as shards and gathered for each use, gradients reduce-scattered; or "
                  "'megatron', tensor parallelism inside each machine (attention and FFN linears column- then "
                  "row-parallel, even shares) and data parallelism across machines (the batch split evenly "
                  "among them); one segment unless --segments is given")
      ->check(CLI::IsMember({"dp-ev", "dp-cp", "fsdp", "megatron"}))
      ->excludes(ratios);
  cmd->add_flag("!--no-baselines", args->baselines, "Skip planning the DP-EV and DP-CP baselines");
  cmd->add_flag("--quiet,-q", args->quiet, "No progress line on stderr");
  cmd->callback([args, &exitCode, segments] {
    if (!args->baseline.empty() && segments->count() == 0) args->segments = "none";
    exitCode = runPlan(*args);
  });
}

}  // namespace hap::cli
