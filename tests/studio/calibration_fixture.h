// A profile store to calibrate on, written by the test as `hap plan` and `hap launch --db` would
// write it: profile "bench" v1 (cpu-core's matmul 4x slower than local-cpu-3's inventory), the
// cluster local-cpu-3 with `profile: bench`, mlp-tiny planned on it (priced under bench@1) as HAP's
// plan, DP-EV and FSDP, one succeeded run of each whose measured steps take `slowdown` times the
// plan's prediction and whose ranks peak at 300 MiB + the predicted bytes, and one failed run.
// The same known figures as tests/app/tst_calibrate_cli.cpp: the fit must find them.
#pragma once

#include <QDir>
#include <QFile>
#include <QString>
#include <QtGlobal>

#include <memory>
#include <string>
#include <vector>

#include "db/cluster_profile.h"
#include "db/store.h"
#include "engine/cost/cluster.h"
#include "engine/cost/profile.h"
#include "engine/import/importer.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/plan_request.h"

namespace hap::studio::testing {

inline constexpr double kRuntimeMemoryBytes = 300.0 * (1 << 20);

inline cost::Profile benchProfile() {
  cost::Profile p;
  p.name = "bench";
  p.host = "test";
  p.note = "made by the test";
  cost::DeviceProfile d;
  d.deviceType = "cpu-core";
  d.description = "synthetic";
  d.threads = 1;
  d.ops.push_back({cost::OpFamily::MatMul, ir::DType::Float32, {{1e4, 50e-6}, {1e6, 80e-6}, {1e9, 80e-3}}});
  p.devices.push_back(d);
  cost::CollectiveFit ar;
  ar.collective = cost::Collective::AllReduce;
  ar.algorithm = "ring";
  ar.linkClass = cost::LinkClass::Intra;
  ar.link = {2e8, 200e-6};
  ar.ranks = 2;
  ar.samples = 5;
  ar.relativeResidual = 0.02;
  p.collectives.push_back(ar);
  return p;
}

// local-cpu-3.yaml with `profile: <profile>`, written into `dir` as bench-cluster.yaml.
inline QString writeBenchCluster(const QString& dir, const QString& profile = QStringLiteral("bench")) {
  QFile in(qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/local-cpu-3.yaml");
  if (!in.open(QIODevice::ReadOnly)) qFatal("cannot read local-cpu-3.yaml");
  QString text = QString::fromUtf8(in.readAll());
  text.replace("name: local-cpu-3", "name: local-cpu-3\nprofile: " + profile);
  const QString path = QDir(dir).filePath("bench-cluster.yaml");
  QFile out(path);
  if (!out.open(QIODevice::WriteOnly)) qFatal("cannot write the cluster");
  out.write(text.toUtf8());
  return path;
}

struct CalibrationStore {
  QString path;     // the store
  QString cluster;  // the cluster file (profile: bench)
  std::vector<int64_t> plans;  // hap, dp-ev, fsdp
  std::vector<int64_t> runs;   // one succeeded run per plan, in that order
  int64_t failedRun = 0;       // of the first plan, after the others
};

// Records a run of `p` (stored as plan `planId`): 4 steps, the first warm-up, every rank taking
// `slowdown` times the prediction (3x at warm-up), peaking at 300 MiB + its predicted bytes.
inline int64_t recordRun(db::Store& store, int64_t planId, const plan::Plan& p, double slowdown,
                         db::RunStatus status = db::RunStatus::Succeeded) {
  db::RunRecord run;
  run.planId = planId;
  run.ranks = static_cast<int>(p.devices.size());
  run.label = "recorded by the test";
  const int64_t id = store.beginRun(run);
  std::vector<db::StepRecord> steps;
  for (int step = 1; step <= 4; ++step)
    for (const plan::PlanDevice& d : p.devices) {
      db::StepRecord s;
      s.rank = d.rank;
      s.step = step;
      s.warmup = step == 1;
      s.seconds = (step == 1 ? 3 : slowdown) * p.estimate.iterationSeconds;
      s.peakMemoryBytes = kRuntimeMemoryBytes + d.memoryBytes;
      s.loss = 2.0 / step;
      steps.push_back(s);
    }
  store.recordSteps(id, steps);
  store.finishRun(id, status, status == db::RunStatus::Succeeded ? "" : "rank 2: exit code 1: bad data file");
  return id;
}

// Plans mlp-tiny on `cluster` (its profile attached) as `baseline` ("" = HAP's plan), stores the
// plan under cluster `clusterId`, and returns its id (and the plan in `out`).
inline int64_t storePlan(db::Store& store, const cost::Cluster& cluster, int64_t clusterId, const char* baseline,
                         plan::Plan* out) {
  import::ImportOptions options;
  options.metaWeights = true;
  const std::string model = qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/mlp-tiny.pt";
  auto graph = std::make_shared<const ir::Graph>(import::importModel(model, options));
  plan::PlanRequest request;
  request.baseline = baseline;
  request.baselines = false;
  plan::PlannedModel planned = plan::planModel(graph, options, cluster, request);
  db::PlanRecord rec;
  rec.json = plan::toJson(planned.plan, *planned.graph).dump(2);
  rec.sha256 = std::to_string(std::hash<std::string>{}(rec.json));
  rec.modelSha256 = planned.plan.modelSha256;
  rec.modelPath = model;
  rec.strategy = planned.plan.strategy;
  rec.clusterId = clusterId;
  rec.predictedSeconds = planned.plan.estimate.iterationSeconds;
  *out = std::move(planned.plan);
  return store.savePlan(rec);
}

inline CalibrationStore makeCalibrationStore(const QString& dir, double slowdown = 1.7) {
  CalibrationStore out;
  QDir().mkpath(dir);
  out.path = QDir(dir).filePath("calibrate.db");
  out.cluster = writeBenchCluster(dir);
  db::Store store(out.path.toStdString());
  store.saveProfile(benchProfile());
  cost::Cluster cluster = cost::loadCluster(out.cluster.toStdString());
  db::attachProfile(cluster, out.path.toStdString());  // bench → bench@1
  const int64_t clusterId = store.saveCluster(cluster.name, "name: local-cpu-3\nprofile: bench\n");
  std::vector<plan::Plan> plans(3);
  const char* baselines[] = {"", "dp-ev", "fsdp"};
  for (size_t i = 0; i < 3; ++i) out.plans.push_back(storePlan(store, cluster, clusterId, baselines[i], &plans[i]));
  for (size_t i = 0; i < plans.size(); ++i) out.runs.push_back(recordRun(store, out.plans[i], plans[i], slowdown));
  out.failedRun = recordRun(store, out.plans[0], plans[0], slowdown, db::RunStatus::Failed);
  return out;
}

}  // namespace hap::studio::testing
