// libFuzzer target: the cluster inventory loader (engine/cost/cluster.h parseCluster), as
// `hap plan --cluster FILE` and the app read a file. Contract checked: bad input throws
// ClusterError and nothing else; a cluster that loads is written back by formatClusterYaml
// (engine/cost/cluster_yaml.h) into text that loads again to the same devices.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <string_view>

#include "engine/cost/cluster.h"
#include "engine/cost/cluster_yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hap::cost;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Cluster cluster;
  try {
    cluster = parseCluster(text, "fuzz.yaml");
  } catch (const ClusterError&) {
    return 0;  // the documented answer to bad input
  }
  // Everything a loaded cluster offers must hold for what the loader accepted.
  (void)summary(cluster);
  for (int r = 0; r < cluster.size(); ++r) {
    (void)cluster.type(r).flops(hap::ir::DType::Float16);
    (void)cluster.machineOf(r);
  }
  const std::string again = formatClusterYaml(cluster);
  Cluster back;
  try {
    back = parseCluster(again, "fuzz-roundtrip.yaml");
  } catch (const ClusterError& e) {
    std::fprintf(stderr, "a loaded cluster does not load again after formatClusterYaml: %s\n--- text:\n%s\n",
                 e.what(), again.c_str());
    std::abort();
  }
  if (back.size() != cluster.size() || back.machines.size() != cluster.machines.size() ||
      back.types.size() != cluster.types.size() || back.name != cluster.name) {
    std::fprintf(stderr, "formatClusterYaml's round trip changed the cluster\n--- text:\n%s\n", again.c_str());
    std::abort();
  }
  return 0;
}
