#include "app/cli/plan_command.h"

#include <fmt/format.h>

#include <iostream>
#include <string>
#include <unistd.h>
#include <memory>
#include <optional>

#include "db/cluster_profile.h"
#include "db/store.h"
#include "engine/base/error.h"
#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/import/input_spec.h"
#include "engine/pipeline/pipeline_explain.h"
#include "engine/pipeline/pipeline_json.h"
#include "engine/pipeline/stage_partition.h"
#include "engine/plan/explain.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/plan_request.h"

namespace hap::cli {
namespace {

struct PlanArgs {
  std::string model, cluster, output;
  std::string db;          // the profile store a cluster's `profile:` is looked up in
  bool noProfile = false;  // ignore the cluster's `profile:`
  std::vector<std::string> inputs;
  plan::PlanRequest request;
  bool explain = false, quiet = false;
  std::string pipeline = "off";  // --pipeline: off | auto | N (stages)
  int microBatches = 0;          // --micro-batches: 0 = chosen by the search
};

// --pipeline's value as a stage count: 0 for auto, -1 for off; throws hap::Error.
int pipelineStages(const std::string& text) {
  if (text == "off") return -1;
  if (text == "auto") return 0;
  try {
    size_t used = 0;
    const int n = std::stoi(text, &used);
    if (used == text.size() && n >= 2) return n;
  } catch (const std::exception&) {
  }
  throw Error("expected auto, off or a stage count of at least 2 (got '" + text + "')");
}

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

int runPlan(const PlanArgs& a) {
  import::ImportOptions importOptions;
  importOptions.metaWeights = true;  // shapes suffice: the weights are not read
  for (const std::string& in : a.inputs) importOptions.inputOverrides.push_back(import::parseInputArg(in));
  auto g = std::make_shared<const ir::Graph>(import::importModel(a.model, importOptions));
  cost::Cluster cluster = cost::loadCluster(a.cluster);
  if (a.noProfile) cluster.profile.clear();
  db::attachProfile(cluster, a.db.empty() ? db::defaultPath() : a.db);
  ProgressLine progress;
  const plan::PlannedModel planned =
      plan::planModel(std::move(g), importOptions, cluster, a.request, a.quiet ? nullptr : &progress);
  progress.finish();
  const plan::Plan& p = planned.plan;

  // Pipeline stages (engine/pipeline, docs/pipeline.md): searched beside the SPMD-only plan, kept
  // where asked for (N) or predicted faster (auto).
  std::optional<pipeline::PipelinePlan> pipelined;
  const int stages = pipelineStages(a.pipeline);
  if (stages >= 0) {
    if (!a.request.baseline.empty())
      throw Error(fmt::format("--pipeline {} plans HAP's stages; it does not combine with --baseline {}", a.pipeline,
                              a.request.baseline));
    pipeline::PartitionOptions po;
    po.stages = stages;
    po.microBatches = a.microBatches;
    po.stagePlan = plan::planOptions(a.request, cluster);
    po.stagePlan.search.listener = nullptr;
    po.stagePlan.baselines = false;
    const std::shared_ptr<const ir::Graph> global = planned.graph;
    auto atMicroBatches = [&](int m) -> std::shared_ptr<const ir::Graph> {
      if (m == 1) return global;
      import::ImportOptions o = importOptions;
      o.inputOverrides = import::dividedBatch(*global, m);
      return std::make_shared<const ir::Graph>(import::importModel(a.model, o));
    };
    pipeline::PipelinePlan pp = pipeline::planPipeline(*global, atMicroBatches, cluster, po);
    pp.spmdSeconds = p.estimate.iterationSeconds;
    pp.spmdFits = p.estimate.fits;
    if (stages > 0 && pp.stages.empty())
      throw Error(fmt::format("--pipeline {}: no pipeline of {} stages: {}", a.pipeline, stages, pp.why));
    if (!pp.stages.empty()) {
      const bool faster = pp.cost.fits && (!p.estimate.fits || pp.cost.stepSeconds < p.estimate.iterationSeconds);
      if (stages > 0)
        pp.why = fmt::format("{} stages asked for (--pipeline {}); the pipeline is predicted {} than the SPMD-only plan",
                             stages, a.pipeline, faster ? "faster" : "slower");
      else if (faster)
        pp.why = "auto: the pipeline is predicted faster than the SPMD-only plan";
      else {
        pp.why = fmt::format("auto: the best pipeline ({} stages, {:.3f} ms{}) is not predicted faster than the "
                             "SPMD-only plan",
                             pp.stages.size(), pp.cost.stepSeconds * 1e3, pp.cost.fits ? "" : ", does not fit");
        pp.stages.clear();
      }
    }
    pipelined = std::move(pp);
  }
  const bool writesPipeline = pipelined && !pipelined->stages.empty();

  if (a.explain) std::cout << plan::formatExplain(*planned.graph, p) << "\n";
  if (a.explain && pipelined) std::cout << pipeline::formatPipelineExplain(*pipelined) << "\n";
  std::cout << plan::formatSummary(p);
  if (pipelined) std::cout << pipeline::formatPipelineSummary(*pipelined);
  std::cout << "Plan verified.";
  if (!a.output.empty()) {
    if (writesPipeline)
      pipeline::writePipelinePlan(p, *planned.graph, *pipelined, a.output);
    else
      plan::writePlan(p, *planned.graph, a.output);
    std::cout << fmt::format(" Written to {}{}.", a.output,
                             writesPipeline ? fmt::format(" (version {}, with the pipeline)", pipeline::kPipelinePlanVersion) : "");
  }
  std::cout << "\n";
  if (!cluster.measured)
    std::cout << fmt::format(
        "Note: priced from {}'s peak figures alone (no measured profile), which leave out the runtime's own "
        "cost per op and per collective call: on this repository's emulated CPU clusters, steps measured 0.66-5.5x "
        "such predictions, the most on steps of a few milliseconds (docs/benchmarks.md, bench-tune). Measure "
        "before trusting the figures: hap tune --local, or hap profile, hap launch --db and hap calibrate "
        "(docs/cost-model.md).\n",
        a.cluster);
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
  CLI::Option* ratios = cmd->add_option("--ratios", args->request.ratios,
                  "Device shares of every sharded dimension: 'milp' optimises whole lengths (rows, heads, "
                  "experts per device) by mixed-integer programming after 'lp', which alternates the "
                  "search and a linear program over fractional shares (from the better of proportional "
                  "and even shares) and rounds them; 'even', or 'proportional' to each device's peak "
                  "FLOP/s, or one share per device (e.g. 0.5,0.3,0.2,0; normalised to sum 1; zero allowed)")
      ->capture_default_str();
  cmd->add_flag("--no-even-start{false}", args->request.evenStart,
                "With --ratios lp or milp, search from shares proportional to peak FLOP/s only, not also "
                "from even shares");
  cmd->add_option("--milp-seconds", args->request.milpSeconds,
                  "CBC's time limit per MILP solve (--ratios milp); at the limit the best whole lengths "
                  "found so far are kept, never worse than the LP's shares rounded, and --explain says so")
      ->capture_default_str();
  cmd->add_option("--collectives", args->request.collectives,
                  "Methods of uneven all-gathers and reduce-scatters: 'auto' (the cheaper), 'padded' or 'grouped' "
                  "only (to compare them, or to exercise one in the runtime)")
      ->check(CLI::IsMember({"auto", "padded", "grouped"}))
      ->capture_default_str();
  cmd->add_option("--segments", args->request.segments,
                  "Groups of nodes with their own ratios: 'layer' (one per repeated block such as a "
                  "transformer layer, found from module scopes; the default), 'scope:DEPTH' (per scope "
                  "prefix of DEPTH parts), 'auto:PARTS' (METIS partition) or 'none' (the default with "
                  "--baseline); values crossing a boundary are re-sharded by an all-to-all");
  cmd->add_option("--output,-o", args->output, "Write the plan (JSON, format hap-plan v2)")->type_name("FILE");
  cmd->add_flag("--explain", args->explain,
                "Print the program stage by stage: each collective with its tensor and cost, each "
                "computation with its rule variant and the sharding of its tensors");
  cmd->add_option("--pipeline", args->pipeline,
                  "Pipeline stages: 'off' (one SPMD program on every device), 'auto' (search 2 or more stages, "
                  "kept where predicted faster than the SPMD-only plan) or a stage count N (at least 2): the model "
                  "cut at segment boundaries, each stage planned on its own group of machines (devices on one "
                  "machine) at micro-batch shapes, run with 1F1B by hap-worker; hap simulate and hap compare "
                  "read SPMD plans only (docs/pipeline.md)")
      ->type_name("auto|off|N")
      ->check(CLI::Validator(
          [](std::string& text) {
            try {
              pipelineStages(text);
              return std::string();
            } catch (const Error& e) {
              return std::string(e.what());
            }
          },
          "auto|off|N", "pipeline"))
      ->capture_default_str();
  cmd->add_option("--micro-batches", args->microBatches,
                  "With --pipeline: the number of micro-batches a step is split into (a divisor of the batch; "
                  "0: the search tries the smallest divisors of the batch at least 2S and 4S for S stages)")
      ->type_name("M")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--max-states", args->request.maxStates,
                  "State budget of the A* search; beyond it the beam search takes over")
      ->capture_default_str();
  cmd->add_option("--beam-width", args->request.beamWidth,
                  "States kept per position by the fallback beam search (0: fail instead)")
      ->capture_default_str();
  cmd->add_option("--pin", args->request.pins,
                   "Compute the nodes whose module scope or op matches the glob under the named rule "
                   "variant only, e.g. 'layers.*.ffn.fc1=column' (repeatable)")
      ->type_name("PATTERN=VARIANT");
  cmd->add_option("--baseline", args->request.baseline,
                  "Plan a baseline instead of HAP's program, to run it with 'hap launch' and compare: "
                  "'dp-ev' (even shares) or 'dp-cp' (shares proportional to peak FLOP/s), replicated "
                  "parameters, batch split, gradients all-reduced; or 'fsdp' (proportional shares), every "
                  "parameter stored as shards and gathered for each use, gradients reduce-scattered; or "
                  "'megatron', tensor parallelism inside each machine (attention and MLP projections, found by "
                  "structure, column- then row-parallel, even shares) and data parallelism across machines "
                  "(the batch split evenly among them); one segment unless --segments is given")
      ->check(CLI::IsMember({"dp-ev", "dp-cp", "fsdp", "megatron"}))
      ->excludes(ratios);
  cmd->add_flag("!--no-baselines", args->request.baselines, "Skip pricing the baselines (DP-EV, DP-CP, FSDP, Megatron)");
  cmd->add_option("--prefer-simpler-within", args->request.preferSimplerWithin,
                  "Where DP-CP or DP-EV is priced within this fraction of HAP's cheapest program and makes fewer "
                  "collective calls, plan its program instead and say so (0: always HAP's own; not with --pin)")
      ->type_name("F")
      ->capture_default_str();
  cmd->add_option("--bucket-mb", args->request.bucketMiB,
                  "Size of the gradient all-reduce buckets the plan is priced with, in MiB (0: one bucket "
                  "after backward); recorded in the plan, and its workers' default --bucket-mb")
      ->type_name("MIB")
      ->capture_default_str();
  cmd->add_option("--db", args->db,
                  "Profile store that the cluster's 'profile:' is looked up in (default: $HAP_DB, else "
                  "~/.local/share/hap/profiles.db)")
      ->type_name("FILE");
  cmd->add_flag("--no-profile", args->noProfile,
                "Price by the inventory alone, ignoring the cluster's 'profile:' (to compare with the profiled plan)");
  cmd->add_flag("--quiet,-q", args->quiet, "No progress line on stderr");
  cmd->callback([args, &exitCode] { exitCode = runPlan(*args); });
}

}  // namespace hap::cli
