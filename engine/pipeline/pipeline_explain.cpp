#include "engine/pipeline/pipeline_explain.h"

#include <fmt/format.h>

#include <cmath>

namespace hap::pipeline {
namespace {

std::string ms(double s) { return fmt::format("{:.3f} ms", s * 1e3); }
std::string mib(double b) { return fmt::format("{:.1f} MiB", b / (1 << 20)); }

}  // namespace

std::string formatPipelineSummary(const PipelinePlan& p) {
  if (p.stages.empty())
    return fmt::format("Pipeline ({}): none; the SPMD-only plan is kept ({}).\n", p.requested, p.why);
  return fmt::format(
      "Pipeline: {} stages x {} micro-batches of {} (1F1B), predicted step {} ({}) against {} for the SPMD-only plan "
      "({}); predicted by the cost model, not measured.\n",
      p.stages.size(), p.microBatches, p.batch / std::max(1, p.microBatches), ms(p.cost.stepSeconds),
      p.cost.fits ? "fits" : "DOES NOT FIT", ms(p.spmdSeconds), p.spmdFits ? "fits" : "does not fit");
}

std::string formatPipelineExplain(const PipelinePlan& p) {
  std::string out = "Pipeline (predicted by the cost model; hap simulate and hap compare cannot show it yet)\n";
  if (p.stages.empty()) {
    out += fmt::format("  none ({}): {}\n", p.requested, p.why);
  } else {
    const PipelineCost& c = p.cost;
    out += fmt::format("  {} stages, {} micro-batches of {} rows (batch {}), schedule 1F1B\n", p.stages.size(),
                       p.microBatches, p.batch / std::max(1, p.microBatches), p.batch);
    for (size_t s = 0; s < p.stages.size(); ++s) {
      const PipelineStage& st = p.stages[s];
      const std::string first = p.segmentNames[static_cast<size_t>(st.firstSegment)];
      const std::string last = p.segmentNames[static_cast<size_t>(st.endSegment - 1)];
      out += fmt::format("  stage {}: segments {}-{} ({}{}), on {}\n", s, st.firstSegment, st.endSegment - 1, first,
                         st.endSegment - st.firstSegment > 1 ? " .. " + last : "", st.group);
      out += fmt::format("    per micro-batch: forward {}, backward {}; gradient all-reduce once a step {}; "
                         "program: {} steps, ratio policy {}{}\n",
                         ms(st.figures.forwardSeconds), ms(st.figures.backwardSeconds), ms(st.figures.gradientSeconds),
                         st.plan.steps.size(), st.plan.ratioPolicy, st.plan.provenOptimal ? "" : " (beam search)");
      const double fixedMost = st.figures.fixedBytes.empty() ? 0 : st.figures.fixedBytes[0];
      const double actMost = st.figures.activationBytes.empty() ? 0 : st.figures.activationBytes[0];
      out += fmt::format("    memory: {} micro-batches in flight, fullest device {} (first device: {} fixed + {} "
                         "activations each){}\n",
                         s < c.inFlight.size() ? c.inFlight[s] : 0, mib(s < c.memoryBytes.size() ? c.memoryBytes[s] : 0),
                         mib(fixedMost), mib(actMost), c.fits ? "" : "; some device of the pipeline does not fit");
      if (s + 1 < p.stages.size())
        out += fmt::format("    sends {} a micro-batch ({} value{}) to stage {}: {} forward, {} for the gradients back\n",
                           mib(p.stages[s + 1].receivedBytes), p.stages[s + 1].receives.size(),
                           p.stages[s + 1].receives.size() == 1 ? "" : "s", s + 1, ms(p.links[s].forwardSeconds),
                           ms(p.links[s].backwardSeconds));
      if (!st.sharedParameters.empty())
        out += fmt::format("    shares {} parameter(s) with another stage (tied weights; gradients summed once a step)\n",
                           st.sharedParameters.size());
    }
    out += fmt::format("  step {} (1F1B recurrence; closed form (m + S - 1) x slowest stage: {}); steady state {}, "
                       "bubble {} ({:.0f}%); bottleneck: {}\n",
                       ms(c.stepSeconds), ms(c.closedFormSeconds), ms(c.steadySeconds), ms(c.bubbleSeconds),
                       c.bubbleFraction * 100,
                       c.bottleneckIsLink ? fmt::format("the link from stage {} to {}", c.bottleneck, c.bottleneck + 1)
                                          : fmt::format("stage {}", c.bottleneck));
  }
  out += fmt::format("  why: SPMD-only plan on the whole cluster: {} ({}){}\n", ms(p.spmdSeconds),
                     p.spmdFits ? "fits" : "does not fit", p.why.empty() ? "" : "; " + p.why);
  if (!p.candidates.empty()) {
    out += "  candidates (stage plans at proportional shares while searching):";
    for (const PipelinePlan::Candidate& k : p.candidates)
      out += std::isfinite(k.stepSeconds)
                 ? fmt::format(" S={} m={}: {}{};", k.stages, k.microBatches, ms(k.stepSeconds), k.fits ? "" : " (no fit)")
                 : fmt::format(" S={} m={}: {};", k.stages, k.microBatches, k.note);
    out += "\n";
  }
  out += fmt::format("  search: {} stage plans priced, {} cache hits, {} pruned by the roofline bound, {:.2f} s\n",
                     p.stagePlansPriced, p.cacheHits, p.pruned, p.searchSeconds);
  return out;
}

}  // namespace hap::pipeline
