// Test helper: a real plan of a tiny zoo model, made as the app makes it (plan::planModel, then
// makePlanDocument). The zoo comes from HAP_ZOO_DIR, the clusters from HAP_SOURCE_DIR.
#pragma once

#include <QtGlobal>

#include <memory>
#include <string>

#include "app/studio/core/documents/plan_document.h"
#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/plan/plan_request.h"

namespace hap::studio::testing {

inline std::string zooFile(const char* name) { return qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + name; }
inline std::string clusterFile(const char* name) {
  return qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() + "/resources/clusters/" + name;
}

// Plans `model` (a zoo file name, e.g. "bert-tiny.pt") on `cluster` (e.g. "local-cpu-4.yaml").
inline std::shared_ptr<const PlanDocument> planZoo(const char* model, const char* cluster,
                                                   const plan::PlanRequest& request = {}) {
  import::ImportOptions options;
  options.metaWeights = true;
  auto g = std::make_shared<const ir::Graph>(import::importModel(zooFile(model), options));
  const cost::Cluster c = cost::loadCluster(clusterFile(cluster));
  plan::PlannedModel planned = plan::planModel(g, options, c, request);
  return makePlanDocument(std::move(planned.plan), planned.graph, "", std::string(model) + " plan", request);
}

// A plan of bert-tiny with the kinds of step the views show: column- and row-parallel linears (its
// FFNs pinned so, as Megatron splits them), the all-reduce of their partial sums, the rest as the
// search chooses. Under the cost model alone bert-tiny's plan is data parallel on these clusters
// (replicated gradients are cheap in the runtime's buckets: engine/cost/bucketed_gradients.h).
inline std::shared_ptr<const PlanDocument> planWithCollectives(const char* cluster = "a100-p100-4.yaml") {
  plan::PlanRequest request;
  request.pins = {"layers.*.ffn.fc1=column", "layers.*.ffn.fc2=row"};
  return planZoo("bert-tiny.pt", cluster, request);
}

}  // namespace hap::studio::testing
