#include "engine/plan/plan_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "engine/base/error.h"
#include "engine/import/input_spec.h"
#include "engine/plan/open_plan.h"
#include "engine/plan/verifier.h"

namespace hap::plan {
namespace {

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
      throw Error(fmt::format("--ratios '{}': '{}' is not a non-negative number; give 'milp', 'lp', 'even', 'proportional' or "
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

}  // namespace

const std::vector<std::string>& baselineNames() {
  static const std::vector<std::string> names{"dp-ev", "dp-cp", "fsdp", "megatron"};
  return names;
}

std::vector<std::string> PlanRequest::arguments() const {
  const PlanRequest defaults;
  std::vector<std::string> out;
  auto option = [&](const char* name, const std::string& value) {
    out.push_back(name);
    out.push_back(value);
  };
  if (!baseline.empty()) option("--baseline", baseline);
  else if (ratios != defaults.ratios) option("--ratios", ratios);
  if (!segments.empty()) option("--segments", segments);
  if (collectives != defaults.collectives) option("--collectives", collectives);
  for (const std::string& pin : pins) option("--pin", pin);
  if (milpSeconds != defaults.milpSeconds) option("--milp-seconds", fmt::format("{:g}", milpSeconds));
  if (!evenStart) out.push_back("--no-even-start");
  if (maxStates != defaults.maxStates) option("--max-states", std::to_string(maxStates));
  if (beamWidth != defaults.beamWidth) option("--beam-width", std::to_string(beamWidth));
  if (!baselines) out.push_back("--no-baselines");
  if (preferSimplerWithin != defaults.preferSimplerWithin)
    option("--prefer-simpler-within", fmt::format("{:g}", preferSimplerWithin));
  if (bucketMiB != defaults.bucketMiB) option("--bucket-mb", fmt::format("{:g}", bucketMiB));
  return out;
}

PlanOptions planOptions(const PlanRequest& r, const cost::Cluster& cluster) {
  PlanOptions options;
  const std::vector<std::string>& names = baselineNames();
  if (!r.baseline.empty() && std::find(names.begin(), names.end(), r.baseline) == names.end())
    throw Error(fmt::format("--baseline '{}': unknown baseline; give dp-ev, dp-cp, fsdp or megatron", r.baseline));
  if (r.collectives != "auto" && r.collectives != "padded" && r.collectives != "grouped")
    throw Error(fmt::format("--collectives '{}': give auto, padded or grouped", r.collectives));
  if (r.maxStates < 1) throw Error(fmt::format("--max-states {}: give at least 1 state", r.maxStates));
  if (!(r.milpSeconds > 0)) throw Error(fmt::format("--milp-seconds {}: give a time limit above 0 seconds", r.milpSeconds));
  if (r.beamWidth < 0) throw Error(fmt::format("--beam-width {}: give 0 (no beam search) or more", r.beamWidth));
  // A baseline's program at even (dp-ev) or proportional shares; --ratios is HAP's only.
  const std::string ratios = r.baseline.empty() ? r.ratios : r.baseline == "dp-ev" ? "even" : "proportional";
  options.strategy = r.baseline.empty()      ? PlanOptions::Strategy::Hap
                     : r.baseline == "fsdp" ? PlanOptions::Strategy::FullySharded
                                            : PlanOptions::Strategy::DataParallel;
  options.ratios = ratios == "even"           ? PlanOptions::Ratios::Even
                   : ratios == "proportional" ? PlanOptions::Ratios::Proportional
                   : ratios == "lp"           ? PlanOptions::Ratios::Optimised
                   : ratios == "milp"         ? PlanOptions::Ratios::WholeLengths
                                              : PlanOptions::Ratios::Fixed;
  if (options.ratios == PlanOptions::Ratios::Fixed) options.fixedShares = parseShares(ratios, cluster);
  options.cost.restrictions.groupedCollectives = r.collectives != "padded";
  options.cost.restrictions.paddedCollectives = r.collectives != "grouped";
  options.segmentText = r.effectiveSegments();
  options.segments = ir::parseSegmentOptions(options.segmentText);
  options.baselines = r.baselines;
  if (!(r.preferSimplerWithin >= 0))
    throw Error(fmt::format("--prefer-simpler-within {}: give a fraction of 0 or more (0.1: 10%)", r.preferSimplerWithin));
  options.preferSimplerWithin = r.preferSimplerWithin;
  if (!(r.bucketMiB >= 0 && r.bucketMiB <= 1 << 20))
    throw Error(fmt::format("--bucket-mb {}: give a size in MiB from 0 (one bucket after backward) to 1048576",
                            r.bucketMiB));
  options.cost.gradientBucketBytes = std::round(r.bucketMiB * (1 << 20));
  options.milp.timeLimitSeconds = r.milpSeconds;
  options.evenStart = r.evenStart;
  options.search.maxStates = r.maxStates;
  options.search.beamWidth = r.beamWidth;
  for (const std::string& pin : r.pins) options.search.pins.push_back(synth::parsePin(pin));
  return options;
}

PlannedModel planModel(std::shared_ptr<const ir::Graph> model, const import::ImportOptions& importOptions,
                       const cost::Cluster& cluster, const PlanRequest& request, synth::SearchListener* listener,
                       const std::atomic<bool>* cancel) {
  PlanOptions options = planOptions(request, cluster);
  options.search.listener = listener;
  options.search.cancel = cancel;
  // The model at one machine's share of the batch: a Megatron plan's program, and the Megatron
  // baseline as `hap compare` prices it.
  auto importMachineBatch = [&] {
    import::ImportOptions perMachine = importOptions;
    perMachine.inputOverrides = import::dividedBatch(*model, static_cast<int>(cluster.machines.size()));
    perMachine.cancel = cancel;
    return import::importModel(model->sourceFile, perMachine);
  };
  PlannedModel out;
  if (request.baseline == "megatron") {
    if (!request.pins.empty())
      throw Error("--pin: --baseline megatron pins the attention and MLP projections itself, found by structure (q, "
                  "k, v and the MLP's first column, the attention output and the MLP's last row); leave --pin out, "
                  "or plan HAP's program with the pins instead");
    // The program is one machine's, on its share of the batch: its ids refer to that graph.
    auto machineBatch = std::make_shared<const ir::Graph>(importMachineBatch());
    out.plan = makeMegatronPlan(*model, *machineBatch, cluster, options);
    out.graph = std::move(machineBatch);
  } else {
    std::optional<ir::Graph> machineBatch;
    std::string notImported;
    if (options.strategy == PlanOptions::Strategy::Hap && options.baselines) {
      try {
        machineBatch = importMachineBatch();
        options.machineBatchGraph = &*machineBatch;
      } catch (const import::ImportCancelled&) {
        throw;
      } catch (const Error& e) {
        notImported = e.what();
      }
    }
    out.plan = makePlan(*model, cluster, options);
    if (!notImported.empty()) {
      Plan::Baseline b{"megatron", {}, false,
                       fmt::format("not applicable: the model does not import at one machine's batch: {}", notImported)};
      b.estimate.fits = false;
      out.plan.baselines.push_back(std::move(b));
    }
    out.graph = std::move(model);
  }
  const std::vector<std::string> problems = verifyPlan(*out.graph, out.plan, shapeFunction());
  if (!problems.empty()) {
    std::string list;
    for (const std::string& s : problems) list += "\n  " + s;
    throw Error(fmt::format("the synthesised plan failed verification (a bug; please report it):{}", list));
  }
  return out;
}

}  // namespace hap::plan
