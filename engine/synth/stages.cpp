#include "engine/synth/stages.h"

#include <algorithm>

namespace hap::synth {

StepTimes stepTimes(const CostTable& table, const Step& step) {
  StepTimes t;
  if (step.kind == Step::Kind::Convert) {
    t.forwardCommunication = step.conversion.forwardSeconds;
    t.backwardCommunication = step.conversion.backwardSeconds;
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

StageModel stageModel(const CostTable& table, const Program& program) {
  const size_t groups = static_cast<size_t>(table.groups());
  std::vector<StepTimes> times;
  times.reserve(program.steps.size());
  for (const Step& s : program.steps) times.push_back(stepTimes(table, s));

  StageModel model;
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
      st.communicationSeconds += comm;
      const std::vector<double>& work = backward ? t.backward : t.forward;
      if (!work.empty()) {
        computed = true;
        for (size_t g = 0; g < groups; ++g) st.groupComputation[g] += work[g];
      }
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
  return model;
}

double iterationSeconds(const CostTable& table, const Program& program) {
  return stageModel(table, program).seconds();
}

}  // namespace hap::synth
