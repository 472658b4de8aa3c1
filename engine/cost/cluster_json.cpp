#include "engine/cost/cluster_json.h"

namespace hap::cost {

nlohmann::ordered_json clusterToJson(const Cluster& c) {
  using ojson = nlohmann::ordered_json;
  ojson doc;
  doc["name"] = c.name;
  if (!c.description.empty()) doc["description"] = c.description;
  if (!c.profile.empty()) doc["profile"] = c.profile;
  ojson types = ojson::object();
  for (const DeviceType& t : c.types) {
    ojson flops = {{"float32", t.flops32}};
    if (t.flops16 > 0) flops["float16"] = t.flops16;
    if (t.flops64 > 0) flops["float64"] = t.flops64;
    ojson j = {{"flops", flops},
               {"memory", t.memoryBytes},
               {"memory_bandwidth", t.memoryBandwidth},
               {"op_overhead", t.opOverheadSeconds}};
    if (t.collectiveCallSeconds > 0) j["collective_call"] = t.collectiveCallSeconds;
    if (!t.source.empty()) j["source"] = t.source;
    types[t.name] = j;
  }
  doc["device_types"] = types;
  ojson machines = ojson::array();
  for (const Machine& m : c.machines) {
    ojson j = {{"name", m.name}, {"host", m.host}, {"device_type", c.types[static_cast<size_t>(m.deviceType)].name},
               {"count", m.count}};
    if (m.link.bandwidth > 0) j["link"] = {{"bandwidth", m.link.bandwidth}, {"latency", m.link.latency}};
    machines.push_back(j);
  }
  doc["machines"] = machines;
  if (c.network.bandwidth > 0) doc["network"] = {{"bandwidth", c.network.bandwidth}, {"latency", c.network.latency}};
  ojson collectives = ojson::object();
  for (int i = 0; i < kCollectiveCount; ++i)
    if (c.efficiency[static_cast<size_t>(i)] != 1)
      collectives[std::string(collectiveName(static_cast<Collective>(i)))] = {
          {"efficiency", c.efficiency[static_cast<size_t>(i)]}};
  if (!collectives.empty()) doc["collectives"] = collectives;
  return doc;
}

Cluster clusterFromJson(const nlohmann::json& inventory, const std::string& origin) {
  Cluster c = parseCluster(inventory.dump(), origin);
  c.source = origin;
  return c;
}

}  // namespace hap::cost
