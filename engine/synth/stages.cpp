#include "engine/synth/stages.h"

#include <algorithm>
#include <map>

#include "engine/cost/bucketed_gradients.h"

namespace hap::synth {

StepTimes stepTimes(const CostTable& table, const Step& step) {
  StepTimes t;
  if (step.kind == Step::Kind::Convert) {
    t.forwardCommunication = step.conversion.forwardSeconds;
    t.backwardCommunication = step.conversion.backwardSeconds;
    if (step.conversion.kind == ConversionKind::ParamReplicate) {  // bucketed, asynchronous
      t.gradientSeconds = t.backwardCommunication;
      t.backwardCommunication = 0;
    }
    t.forwardSync = t.forwardCommunication > 0;
    t.backwardSync = t.backwardCommunication > 0;
    return t;
  }
  const NodeCommunication comm = table.nodeCommunication(step.node, step.variant);
  t.forwardCommunication = comm.forward;
  t.backwardCommunication = comm.backward;
  const bool reshard = table.isReshard(step.node, step.variant);
  t.forwardSync = reshard || comm.forward > 0;
  t.backwardSync = (reshard && table.theory().requiresGrad(table.theory().graph().node(step.node).outputs[0])) ||
                   comm.backward > 0;
  for (int g = 0; g < table.groups(); ++g) {
    t.forward.push_back(table.groupSeconds(step.node, step.variant, g, Pass::Forward));
    t.backward.push_back(table.groupSeconds(step.node, step.variant, g, Pass::Backward));
  }
  return t;
}

double StageModel::gradientSeconds() const {
  double total = 0;
  for (const GradientBucket& b : buckets) total += b.seconds;
  return total;
}

namespace {

// The gradient buckets of the program's replicate-parameter steps, as the runtime forms them
// (replicated parameters in the graph's parameter order), scheduled after their backward stages.
void scheduleGradients(const CostTable& table, const Program& program, const std::vector<StepTimes>& times,
                       const std::vector<int>& backwardStage, const std::vector<int>& backwardPosition,
                       const std::vector<double>& backwardOffset, StageModel& model) {
  const ir::Graph& g = table.theory().graph();
  std::map<ir::ValueId, int> stepOf;
  for (size_t i = 0; i < program.steps.size(); ++i)
    if (times[i].gradientSeconds > 0) stepOf[program.steps[i].value] = static_cast<int>(i);
  if (stepOf.empty()) return;
  std::vector<cost::GradientSlot> order;
  std::vector<int> steps;
  for (ir::ValueId p : g.parameters) {
    const auto it = stepOf.find(p);
    if (it == stepOf.end()) continue;
    order.push_back({g.value(p).bytes(), static_cast<int>(g.value(p).dtype)});
    steps.push_back(it->second);
  }
  std::vector<double> stageStart(model.stages.size(), 0.0);  // each stage's start, once
  for (size_t k = 1; k < model.stages.size(); ++k) stageStart[k] = stageStart[k - 1] + model.stages[k - 1].seconds();
  std::vector<double> ready, seconds;
  for (const std::vector<size_t>& positions :
       cost::assignGradientBuckets(order, static_cast<int64_t>(table.options().gradientBucketBytes))) {
    GradientBucket b;
    b.readyStep = steps[positions.front()];
    auto later = [&](int i, int j) {  // whether step i's backward runs after step j's
      const size_t a = static_cast<size_t>(i), c = static_cast<size_t>(j);
      return backwardStage[a] != backwardStage[c] ? backwardStage[a] > backwardStage[c]
                                                  : backwardPosition[a] > backwardPosition[c];
    };
    for (size_t k : positions) {
      const int i = steps[k];
      b.steps.push_back(i);
      b.seconds += times[static_cast<size_t>(i)].gradientSeconds;
      if (later(i, b.readyStep)) b.readyStep = i;
    }
    // Offsets grow along a stage, so the last step to run is the one every device reaches last.
    b.readyStage = backwardStage[static_cast<size_t>(b.readyStep)];
    b.readyOffset = backwardOffset[static_cast<size_t>(b.readyStep)];
    const size_t r = static_cast<size_t>(b.readyStage);
    b.ready = stageStart[r] + model.stages[r].communicationSeconds + b.readyOffset;
    ready.push_back(b.ready);
    seconds.push_back(b.seconds);
    model.buckets.push_back(std::move(b));
  }
  const std::vector<cost::BucketSpan> spans = cost::scheduleBuckets(ready, seconds);
  for (size_t k = 0; k < spans.size(); ++k) model.buckets[k].start = spans[k].start, model.buckets[k].end = spans[k].end;
  model.exposedGradientSeconds =
      std::max(0.0, spans.back().end - (model.forwardSeconds + model.backwardSeconds));
}

}  // namespace

StageModel stageModel(const CostTable& table, const Program& program) {
  const size_t groups = static_cast<size_t>(table.groups());
  std::vector<StepTimes> times;
  times.reserve(program.steps.size());
  for (const Step& s : program.steps) times.push_back(stepTimes(table, s));

  StageModel model;
  // Each step's backward stage, and the slowest group's computation in that stage up to and
  // including the step (when the step's backward is done on every device, after the stage's
  // communication).
  std::vector<int> backwardStage(program.steps.size(), 0), backwardPosition(program.steps.size(), 0);
  std::vector<double> backwardOffset(program.steps.size(), 0.0);
  auto pass = [&](bool backward) {
    bool open = false, computed = false;  // a stage is open / has computation steps
    const int n = static_cast<int>(program.steps.size());
    for (int k = 0; k < n; ++k) {
      const int i = backward ? n - 1 - k : k;
      const StepTimes& t = times[static_cast<size_t>(i)];
      const double comm = backward ? t.backwardCommunication : t.forwardCommunication;
      const bool sync = backward ? t.backwardSync : t.forwardSync;
      if (!open || (sync && computed)) {
        model.stages.push_back({backward, {}, 0, std::vector<double>(groups, 0.0), 0});
        open = true;
        computed = false;
      }
      StageCost& st = model.stages.back();
      st.steps.push_back(i);
      if (backward) {
        backwardStage[static_cast<size_t>(i)] = static_cast<int>(model.stages.size()) - 1;
        backwardPosition[static_cast<size_t>(i)] = static_cast<int>(st.steps.size()) - 1;
      }
      st.communicationSeconds += comm;
      const std::vector<double>& work = backward ? t.backward : t.forward;
      if (!work.empty()) {
        computed = true;
        for (size_t g = 0; g < groups; ++g) st.groupComputation[g] += work[g];
      }
      if (backward)
        backwardOffset[static_cast<size_t>(i)] = *std::max_element(st.groupComputation.begin(), st.groupComputation.end());
    }
  };
  pass(false);
  const size_t forwardStages = model.stages.size();
  pass(true);
  for (size_t k = 0; k < model.stages.size(); ++k) {
    StageCost& st = model.stages[k];
    st.computationSeconds = *std::max_element(st.groupComputation.begin(), st.groupComputation.end());
    (k < forwardStages ? model.forwardSeconds : model.backwardSeconds) += st.seconds();
  }
  scheduleGradients(table, program, times, backwardStage, backwardPosition, backwardOffset, model);
  return model;
}

double iterationSeconds(const CostTable& table, const Program& program) {
  return stageModel(table, program).seconds();
}

}  // namespace hap::synth
