#include "engine/cost/cluster.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <stdexcept>

#include "engine/base/text_file.h"
#include "engine/base/utf8.h"
#include "engine/cost/units.h"

namespace hap::cost {
namespace {

// Limits that keep a typo ("count: 80000") from allocating millions of devices.
constexpr int kMaxDevicesPerMachine = 1024;
constexpr int kMaxDevices = 65536;
// The smallest collective efficiency: below it a link's effective bandwidth leaves the range the
// solvers represent (units.h, supportedRange).
constexpr double kMinEfficiency = 1e-3;

constexpr std::array<std::string_view, kCollectiveCount> kCollectiveNames{
    "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "broadcast"};

// Edit distance, for "did you mean" hints on misspelt keys.
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t cost = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                            std::tolower(static_cast<unsigned char>(b[j - 1]))
                        ? 0
                        : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A plain decimal number (no unit), finite.
std::optional<double> plainNumber(const std::string& s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

std::string joinList(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Reads one cluster document; every method that finds a problem throws ClusterError naming the
// origin, the line and the field path.
class Parser {
 public:
  explicit Parser(const std::string& origin) : origin_(origin) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& path,
                         const std::string& what) const {
    std::string where = origin_;
    if (at.IsDefined() && !at.Mark().is_null()) where += fmt::format(":{}", at.Mark().line + 1);
    // Paths and quoted values may hold a hostile file's bytes: the message stays valid UTF-8.
    if (path.empty()) throw ClusterError(printableUtf8(fmt::format("{}: {}", where, what)));
    throw ClusterError(printableUtf8(fmt::format("{}: {}: {}", where, path, what)));
  }

  // Checks that n is a mapping whose keys are plain, unique and among `allowed`.
  void expectMap(const YAML::Node& n, const std::string& path,
                 std::initializer_list<std::string_view> allowed, std::string_view what) const {
    if (!n.IsMap()) fail(n, path, fmt::format("must be a mapping ({})", what));
    std::vector<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar()) fail(it->first, path, "keys must be plain names");
      const std::string& key = it->first.Scalar();
      std::string keyPath = path.empty() ? key : path + "." + key;
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::vector<std::string> names(allowed.begin(), allowed.end());
        std::string hint;
        size_t best = 3;
        for (std::string_view a : allowed) {
          // A misspelling (at most 2 edits) or an abbreviation ("lat" for "latency").
          bool abbreviation = key.size() >= 3 && a.substr(0, key.size()) == key;
          size_t d = abbreviation ? 1 : editDistance(key, a);
          if (d < best && d < a.size()) best = d, hint = fmt::format(" (did you mean '{}'?)", a);
        }
        fail(it->first, keyPath,
             fmt::format("unknown key{}; allowed keys: {}", hint, joinList(names)));
      }
      if (std::find(seen.begin(), seen.end(), key) != seen.end())
        fail(it->first, keyPath, "duplicate key; give each key once");
      seen.push_back(key);
    }
  }

  // The value of `key` in the mapping m, or a "missing" error that says what to write.
  YAML::Node required(const YAML::Node& m, const std::string& path, const char* key,
                      std::string_view hint) const {
    YAML::Node v = m[key];
    if (!v.IsDefined()) fail(m, join(path, key), fmt::format("missing; {}", hint));
    return v;
  }

  static std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
  }

  std::string text(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar() || n.Scalar().empty()) fail(n, path, "must be a non-empty string");
    utf8(n, path, n.Scalar());
    return n.Scalar();
  }

  // Names and texts are stored, shown and written into plans (JSON): they must be UTF-8.
  void utf8(const YAML::Node& n, const std::string& path, const std::string& s) const {
    const size_t bad = firstInvalidUtf8(s);
    if (bad == std::string::npos) return;
    fail(n, path,
         fmt::format("'{}' is not valid UTF-8 (byte 0x{:02x} at offset {}); write names and texts "
                     "in UTF-8 and save the file as UTF-8",
                     printableUtf8(s), static_cast<unsigned char>(s[bad]), bad));
  }

  // A quantity with units; positive, or non-negative when allowZero.
  double quantity(const YAML::Node& n, const std::string& path, Unit unit,
                  bool allowZero = false) const {
    if (!n.IsScalar())
      fail(n, path, fmt::format("must be a {}: {}", unitNoun(unit), unitForms(unit)));
    const std::string& s = n.Scalar();
    std::optional<double> v = parseQuantity(s, unit);
    if (!v)
      fail(n, path, fmt::format("'{}' is not a {}; write {}", s, unitNoun(unit), unitForms(unit)));
    if (allowZero ? *v < 0 : *v <= 0)
      fail(n, path,
           fmt::format("must be {} (got '{}')", allowZero ? "zero or positive" : "positive", s));
    // Within what the solvers represent (units.h); a zero time is exact and always fine.
    const QuantityRange range = supportedRange(unit);
    if (*v != 0 && (*v < range.min || *v > range.max))
      fail(n, path,
           fmt::format("'{}' is outside the range HAP supports for a {} ({}{}); check the number "
                       "and its unit (docs/cost-model.md, \"Ranges\")",
                       s, unitNoun(unit), rangeText(unit), allowZero ? ", or 0" : ""));
    return *v;
  }

  int positiveInt(const YAML::Node& n, const std::string& path, int max) const {
    std::string s = n.IsScalar() ? n.Scalar() : std::string();
    int v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v <= 0)
      fail(n, path, fmt::format("must be a positive integer (got '{}')", s));
    if (v > max) fail(n, path, fmt::format("{} is more than HAP supports (at most {})", v, max));
    return v;
  }

  Link link(const YAML::Node& n, const std::string& path) const {
    expectMap(n, path, {"bandwidth", "latency"},
              "bandwidth and latency, e.g. {bandwidth: 150GB/s, latency: 5us}");
    Link l;
    l.bandwidth = quantity(
        required(n, path, "bandwidth", "give the bandwidth per direction, e.g. bandwidth: 150GB/s"),
        join(path, "bandwidth"), Unit::Bandwidth);
    l.latency =
        quantity(required(n, path, "latency", "give the per-message latency, e.g. latency: 5us"),
                 join(path, "latency"), Unit::Seconds, /*allowZero=*/true);
    return l;
  }

  DeviceType deviceType(const std::string& name, const YAML::Node& n,
                        const std::string& path) const {
    expectMap(n, path, {"flops", "memory", "memory_bandwidth", "op_overhead", "collective_call", "source"},
              "a device type's flops, memory, memory_bandwidth, op_overhead, collective_call, source");
    DeviceType t;
    t.name = name;
    std::string fp = join(path, "flops");
    YAML::Node flops =
        required(n, path, "flops",
                 "give peak FLOP/s per dtype, e.g. flops: {float32: 15.7T, float16: 125T}");
    expectMap(flops, fp, {"float32", "float16", "float64"},
              "peak FLOP/s per dtype, e.g. {float32: 15.7T, float16: 125T}");
    t.flops32 =
        quantity(required(flops, fp, "float32", "give the float32 peak, e.g. float32: 15.7T"),
                 join(fp, "float32"), Unit::Flops);
    if (flops["float16"]) t.flops16 = quantity(flops["float16"], join(fp, "float16"), Unit::Flops);
    if (flops["float64"]) t.flops64 = quantity(flops["float64"], join(fp, "float64"), Unit::Flops);
    t.memoryBytes =
        quantity(required(n, path, "memory", "give the device memory, e.g. memory: 16GiB"),
                 join(path, "memory"), Unit::Bytes);
    t.memoryBandwidth =
        quantity(required(n, path, "memory_bandwidth",
                          "give the memory bandwidth, e.g. memory_bandwidth: 900GB/s"),
                 join(path, "memory_bandwidth"), Unit::Bandwidth);
    if (n["op_overhead"])
      t.opOverheadSeconds =
          quantity(n["op_overhead"], join(path, "op_overhead"), Unit::Seconds, true);
    if (n["collective_call"])
      t.collectiveCallSeconds =
          quantity(n["collective_call"], join(path, "collective_call"), Unit::Seconds, true);
    if (n["source"]) t.source = text(n["source"], join(path, "source"));
    return t;
  }

  Cluster cluster(const YAML::Node& root) const {
    if (!root.IsMap())
      fail(root, "",
           "expected a mapping with keys name, device_types, machines and network (see "
           "docs/cost-model.md)");
    expectMap(
        root, "",
        {"name", "description", "profile", "device_types", "machines", "network", "collectives"},
        "a cluster");
    Cluster c;
    c.source = origin_;
    c.name =
        text(required(root, "", "name", "give the cluster a name, e.g. name: my-cluster"), "name");
    if (root["description"]) c.description = text(root["description"], "description");
    if (root["profile"]) c.profile = text(root["profile"], "profile");

    // Device types, in file order.
    YAML::Node types = required(root, "", "device_types",
                                "define the device types, e.g. device_types: {V100-SXM2-16GB: "
                                "{flops: ..., memory: ..., memory_bandwidth: ...}}");
    if (!types.IsMap() || types.size() == 0)
      fail(types, "device_types",
           "must be a mapping from type name to {flops, memory, memory_bandwidth, op_overhead, "
           "collective_call, source} with at least one type");
    std::vector<std::string> typeNames;
    for (auto it = types.begin(); it != types.end(); ++it) {
      if (!it->first.IsScalar() || it->first.Scalar().empty())
        fail(it->first, "device_types", "type names must be plain non-empty names");
      const std::string& name = it->first.Scalar();
      std::string path = "device_types." + name;
      utf8(it->first, path, name);
      if (std::find(typeNames.begin(), typeNames.end(), name) != typeNames.end())
        fail(it->first, path, "duplicate device type; give each type once");
      typeNames.push_back(name);
      c.types.push_back(deviceType(name, it->second, path));
    }

    // Machines and ranks.
    YAML::Node machines = required(
        root, "", "machines",
        "list the machines, e.g. machines: [{name: m0, device_type: ..., count: 8, link: {...}}]");
    if (!machines.IsSequence() && !machines.IsNull())
      fail(
          machines, "machines",
          "must be a list of machines, e.g. - {name: m0, device_type: ..., count: 8, link: {...}}");
    if (machines.size() == 0)
      fail(machines, "machines",
           "no machines; list at least one, e.g. - {name: m0, device_type: ..., count: 8, link: "
           "{...}}");
    std::map<std::string, size_t> machineIndex;
    for (size_t i = 0; i < machines.size(); ++i) {
      const YAML::Node m = machines[i];
      std::string path = fmt::format("machines[{}]", i);
      expectMap(m, path, {"name", "host", "device_type", "count", "link"},
                "a machine's name, host, device_type, count, link");
      Machine machine;
      YAML::Node nameNode =
          required(m, path, "name", "give the machine a unique name, e.g. name: m0");
      machine.name = text(nameNode, join(path, "name"));
      if (auto [it, fresh] = machineIndex.emplace(machine.name, i); !fresh)
        fail(nameNode, join(path, "name"),
             fmt::format(
                 "duplicate machine name '{}' (also machines[{}]); give every machine its own name",
                 machine.name, it->second));
      machine.host = m["host"] ? text(m["host"], join(path, "host")) : machine.name;
      YAML::Node typeNode = required(m, path, "device_type",
                                     "name one of device_types, e.g. device_type: V100-SXM2-16GB");
      std::string typeName = text(typeNode, join(path, "device_type"));
      auto t = std::find(typeNames.begin(), typeNames.end(), typeName);
      if (t == typeNames.end())
        fail(typeNode, join(path, "device_type"),
             fmt::format("unknown device type '{}'; known types: {} (define it under device_types)",
                         typeName, joinList(typeNames)));
      machine.deviceType = static_cast<int>(t - typeNames.begin());
      machine.count = positiveInt(
          required(m, path, "count", "give the number of devices on this machine, e.g. count: 8"),
          join(path, "count"), kMaxDevicesPerMachine);
      if (m["link"])
        machine.link = link(m["link"], join(path, "link"));
      else if (machine.count > 1)
        fail(m, join(path, "link"),
             fmt::format("missing; a machine with {} devices needs the link between them, e.g. "
                         "link: {{bandwidth: 150GB/s, latency: 5us}}",
                         machine.count));
      if (c.size() + machine.count > kMaxDevices)
        fail(m, join(path, "count"),
             fmt::format("the cluster would have more than {} devices", kMaxDevices));
      int index = static_cast<int>(c.machines.size());
      for (int local = 0; local < machine.count; ++local)
        c.devices.push_back({c.size(), index, local, machine.deviceType});
      c.machines.push_back(std::move(machine));
    }

    if (root["network"])
      c.network = link(root["network"], "network");
    else if (c.machines.size() > 1)
      fail(root, "network",
           fmt::format("missing; a cluster with {} machines needs the network between them, e.g. "
                       "network: {{bandwidth: 10Gbps, latency: 50us}}",
                       c.machines.size()));

    if (YAML::Node coll = root["collectives"]) {
      expectMap(coll, "collectives",
                {"all_gather", "reduce_scatter", "all_reduce", "all_to_all", "broadcast"},
                "per-collective settings, e.g. {all_reduce: {efficiency: 0.8}}");
      for (int k = 0; k < kCollectiveCount; ++k) {
        YAML::Node entry = coll[std::string(kCollectiveNames[k])];
        if (!entry) continue;
        std::string path = fmt::format("collectives.{}", kCollectiveNames[k]);
        expectMap(entry, path, {"efficiency"}, "e.g. {efficiency: 0.8}");
        if (YAML::Node e = entry["efficiency"]) {
          std::optional<double> v = e.IsScalar() ? plainNumber(e.Scalar()) : std::nullopt;
          if (!v || *v <= 0 || *v > 1)
            fail(e, join(path, "efficiency"),
                 fmt::format("must be a number in (0, 1], the fraction of the link bandwidth "
                             "achieved (got '{}')",
                             e.IsScalar() ? e.Scalar() : std::string()));
          if (*v < kMinEfficiency)
            fail(e, join(path, "efficiency"),
                 fmt::format("'{}' is below the smallest efficiency HAP supports ({}); a "
                             "collective achieves at least that fraction of the link bandwidth",
                             e.Scalar(), kMinEfficiency));
          c.efficiency[k] = *v;
        }
      }
    }
    return c;
  }

 private:
  std::string origin_;
};

}  // namespace

double DeviceType::flops(ir::DType t) const {
  switch (t) {
    case ir::DType::Float16:
    case ir::DType::BFloat16:
      return flops16 > 0 ? flops16 : flops32;
    case ir::DType::Float64:
      return flops64 > 0 ? flops64 : flops32;
    default:
      return flops32;
  }
}

std::string_view collectiveName(Collective c) {
  return kCollectiveNames[static_cast<size_t>(c)];
}

const DeviceType& Cluster::type(int rank) const {
  return types.at(devices.at(rank).type);
}

const Machine& Cluster::machineOf(int rank) const {
  return machines.at(devices.at(rank).machine);
}

bool Cluster::spansMachines() const {
  return std::any_of(devices.begin(), devices.end(),
                     [&](const Device& d) { return d.machine != devices.front().machine; });
}

Cluster parseCluster(std::string_view yamlText, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yamlText));
  } catch (const YAML::Exception& e) {
    std::string where = e.mark.is_null() ? origin : fmt::format("{}:{}", origin, e.mark.line + 1);
    throw ClusterError(printableUtf8(fmt::format(
        "{}: not valid YAML: {}; check the indentation, brackets and quotes on or before that line",
        where, e.msg)));
  }
  if (!root.IsDefined() || root.IsNull())
    throw ClusterError(fmt::format(
        "{}: the file is empty; expected a mapping with keys name, device_types, machines and "
        "network (see docs/cost-model.md)",
        origin));
  try {
    return Parser(origin).cluster(root);
  } catch (const YAML::Exception& e) {
    // yaml-cpp's accessors should not throw on the checked paths above; if one does, report it
    // as a file problem rather than crash.
    throw ClusterError(printableUtf8(fmt::format("{}: cannot read the cluster: {}", origin, e.msg)));
  }
}

Cluster loadCluster(const std::string& path) {
  std::string text;
  try {
    text = readTextFile(path, "cluster file",
                        "check the path (bundled clusters are in resources/clusters/)");
  } catch (const ClusterError&) {
    throw;
  } catch (const Error& e) {
    throw ClusterError(printableUtf8(e.what()));
  }
  return parseCluster(text, path);
}

Cluster takeDevices(const Cluster& cluster, int perMachine) {
  if (perMachine < 1)
    throw ClusterError(
        fmt::format("cluster '{}': cannot take {} devices per machine; take at least 1",
                    cluster.name, perMachine));
  Cluster out = cluster;
  out.name = fmt::format("{}[{}/machine]", cluster.name, perMachine);
  out.devices.clear();
  for (size_t m = 0; m < out.machines.size(); ++m) {
    Machine& machine = out.machines[m];
    if (machine.count < perMachine)
      throw ClusterError(
          fmt::format("cluster '{}': cannot take {} devices per machine; machine '{}' has only {}",
                      cluster.name, perMachine, machine.name, machine.count));
    machine.count = perMachine;
    for (int local = 0; local < perMachine; ++local)
      out.devices.push_back({out.size(), static_cast<int>(m), local, machine.deviceType});
  }
  return out;
}

std::string extremeValues(const Cluster& cluster) {
  struct Extremes {
    Unit unit;
    std::string_view noun;
    double low = 0, high = 0;
    std::string lowPath, highPath;
    void add(double v, std::string path) {
      if (!(v > 0)) return;  // unset (0) values take no part
      if (lowPath.empty() || v < low) low = v, lowPath = path;
      if (highPath.empty() || v > high) high = v, highPath = std::move(path);
    }
  };
  Extremes flops{Unit::Flops, "FLOP/s"}, bytes{Unit::Bytes, "memory"},
      bandwidth{Unit::Bandwidth, "bandwidth"}, seconds{Unit::Seconds, "time"};
  for (const DeviceType& t : cluster.types) {
    const std::string p = "device_types." + t.name;
    flops.add(t.flops32, p + ".flops.float32");
    flops.add(t.flops16, p + ".flops.float16");
    flops.add(t.flops64, p + ".flops.float64");
    bytes.add(t.memoryBytes, p + ".memory");
    bandwidth.add(t.memoryBandwidth, p + ".memory_bandwidth");
    seconds.add(t.opOverheadSeconds, p + ".op_overhead");
    seconds.add(t.collectiveCallSeconds, p + ".collective_call");
  }
  for (size_t i = 0; i < cluster.machines.size(); ++i) {
    bandwidth.add(cluster.machines[i].link.bandwidth, fmt::format("machines[{}].link.bandwidth", i));
    seconds.add(cluster.machines[i].link.latency, fmt::format("machines[{}].link.latency", i));
  }
  bandwidth.add(cluster.network.bandwidth, "network.bandwidth");
  seconds.add(cluster.network.latency, "network.latency");
  std::vector<std::string> parts;
  for (const Extremes* e : {&flops, &bytes, &bandwidth, &seconds}) {
    if (e->lowPath.empty()) continue;
    if (e->low == e->high)
      parts.push_back(fmt::format("{} {} ({})", e->noun, formatQuantity(e->low, e->unit), e->lowPath));
    else
      parts.push_back(fmt::format("{} {} ({}) to {} ({})", e->noun, formatQuantity(e->low, e->unit),
                                  e->lowPath, formatQuantity(e->high, e->unit), e->highPath));
  }
  for (int k = 0; k < kCollectiveCount; ++k)
    if (cluster.efficiency[k] != 1)
      parts.push_back(fmt::format("efficiency {} (collectives.{}.efficiency)", cluster.efficiency[k],
                                  kCollectiveNames[k]));
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : "; ") + part;
  return printableUtf8(out);
}

std::string summary(const Cluster& cluster) {
  std::vector<int> perType(cluster.types.size(), 0);
  for (const Device& d : cluster.devices) ++perType[d.type];
  std::vector<std::string> parts;
  for (size_t t = 0; t < perType.size(); ++t)
    if (perType[t] > 0) parts.push_back(fmt::format("{} x {}", perType[t], cluster.types[t].name));
  return fmt::format("{}: {} device{} ({}) on {} machine{}", cluster.name, cluster.size(),
                     cluster.size() == 1 ? "" : "s", joinList(parts), cluster.machines.size(),
                     cluster.machines.size() == 1 ? "" : "s");
}

}  // namespace hap::cost
