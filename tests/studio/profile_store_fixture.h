// A small profile store for the Profiles models and view: two versions of profile "lab-cpu" (two
// device types, op rates, collective fits) and an older profile "old-gpu", a cluster and a plan,
// and two runs with steps (run 1: 2 ranks, 4 steps, step 1 warm-up, succeeded, with the plan;
// run 2: 3 ranks, 2 steps, rank 2 missing at step 2, failed, no plan, started later).
#pragma once

#include <QString>

#include <cmath>
#include <string>

#include "db/store.h"
#include "engine/cost/profile.h"

namespace hap::studio::testing {

struct StoreFixture {
  int64_t planId = 0, firstRun = 0, secondRun = 0;
};

// Run 1's figures, for expected cells.
inline double fixtureStepSeconds(int rank, int step) { return 0.010 * (rank + 1) + 0.001 * step; }
inline double fixtureLoss(int step) { return 2.0 - 0.25 * step; }

inline cost::Profile fixtureProfile(const std::string& name, const std::string& createdAt, const std::string& note) {
  cost::Profile p;
  p.name = name;
  p.host = "bench-host";
  p.createdAt = createdAt;
  p.note = note;
  cost::DeviceProfile full;
  full.deviceType = "cpu-full";
  full.description = "cpu: Intel Xeon @ 2.2GHz, 1 thread";
  full.threads = 1;
  full.memoryBandwidth = 1.25e10;
  cost::OpThroughput mm;
  mm.family = cost::OpFamily::MatMul;
  mm.dtype = ir::DType::Float32;
  mm.samples = {{1e6, 1e-5}, {1e7, 5e-5}, {1e8, 4e-4}};  // 250 GFLOP/s at the largest
  cost::OpThroughput sm;
  sm.family = cost::OpFamily::Softmax;
  sm.dtype = ir::DType::BFloat16;
  sm.samples = {{4096, 2e-6}, {4194304, 1e-3}};  // 4 GiB/s at the largest
  full.ops = {mm, sm};
  cost::DeviceProfile quarter;
  quarter.deviceType = "cpu-quarter";
  quarter.description = "cpu: Intel Xeon @ 2.2GHz, 4 threads, share 0.25";
  quarter.threads = 4;
  quarter.memoryBandwidth = 3e9;
  quarter.computeScale = 1.25;
  quarter.collectiveSlowdown = 2.5;
  quarter.baseMemoryBytes = 3 * 1024.0 * 1024 * 1024;
  quarter.memoryScale = 1.5;
  quarter.ops = {mm};
  p.devices = {full, quarter};
  cost::CollectiveFit ar;
  ar.collective = cost::Collective::AllReduce;
  ar.algorithm = "ring";
  ar.linkClass = cost::LinkClass::Intra;
  ar.link.latency = 2.5e-5;
  ar.link.bandwidth = 3.1e9;
  ar.ranks = 3;
  ar.samples = 9;
  ar.relativeResidual = 0.031;
  cost::CollectiveFit ag = ar;
  ag.collective = cost::Collective::AllGather;
  ag.algorithm = "grouped";
  ag.linkClass = cost::LinkClass::Inter;
  ag.link.latency = 1e-4;
  ag.link.bandwidth = 1.1e9;
  ag.relativeResidual = std::nan("");
  p.collectives = {ar, ag};
  return p;
}

inline StoreFixture fillStore(const QString& path) {
  db::Store s(path.toStdString());
  StoreFixture f;
  cost::Profile old = fixtureProfile("old-gpu", "2026-10-01T08:00:00Z", "hap profile --cuda");
  old.devices.resize(1);
  old.collectives.clear();
  s.saveProfile(old);
  s.saveProfile(fixtureProfile("lab-cpu", "2026-11-20T07:00:00Z", "hap profile --quick"));
  s.saveProfile(fixtureProfile("lab-cpu", "2026-11-21T07:00:00Z", "hap calibrate: 2 runs, 1 plan"));

  const int64_t cluster = s.saveCluster("lab", "name: lab\nmachines: []\n");
  db::PlanRecord plan;
  plan.modelSha256 = std::string(64, 'a');
  plan.modelPath = "/zoo/bert-tiny.pt";
  plan.strategy = "hap";
  plan.clusterId = cluster;
  plan.predictedSeconds = 0.0125;
  plan.predictedMemoryBytes = {1.5e8, 2.25e8};
  plan.predictedComputeSeconds = {0.01, 0.02};
  plan.json = R"({"format": "hap-plan", "version": 2})";
  f.planId = s.savePlan(plan);

  db::RunRecord first;
  first.planId = f.planId;
  first.label = "first";
  first.ranks = 2;
  first.startedAt = "2026-11-21T10:00:00Z";
  f.firstRun = s.beginRun(first);
  std::vector<db::StepRecord> steps;
  for (int step = 1; step <= 4; ++step)
    for (int rank = 0; rank < 2; ++rank) {
      db::StepRecord r;
      r.rank = rank;
      r.step = step;
      r.warmup = step == 1;
      r.seconds = fixtureStepSeconds(rank, step);
      r.computeSeconds = 0.6 * r.seconds;
      r.communicationSeconds = 0.3 * r.seconds;
      r.loss = fixtureLoss(step);
      r.peakMemoryBytes = 1e8 + rank * 1e7;
      steps.push_back(r);
    }
  s.recordSteps(f.firstRun, steps);
  s.finishRun(f.firstRun, db::RunStatus::Succeeded);

  db::RunRecord second;
  second.label = "second";
  second.ranks = 3;
  second.startedAt = "2026-11-22T09:00:00Z";
  f.secondRun = s.beginRun(second);
  steps.clear();
  for (int step = 1; step <= 2; ++step)
    for (int rank = 0; rank < (step == 2 ? 2 : 3); ++rank) {
      db::StepRecord r;
      r.rank = rank;
      r.step = step;
      r.seconds = 0.02;
      r.loss = 3.0 - step;
      steps.push_back(r);
    }
  s.recordSteps(f.secondRun, steps);
  s.finishRun(f.secondRun, db::RunStatus::Failed, "rank 2: exit code 1: bad data file");
  return f;
}

}  // namespace hap::studio::testing
