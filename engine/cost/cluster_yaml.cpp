#include "engine/cost/cluster_yaml.h"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <vector>

namespace hap::cost {
namespace {

// A finite double's shortest round-trip decimal: value = ±d1.d2d3... × 10^exponent.
struct Decimal {
  bool negative = false;
  std::string digits;  // no leading zeros (except for zero itself), no trailing zeros
  int exponent = 0;
};

Decimal shortest(double v) {
  std::array<char, 64> buf{};
  auto [end, ec] =
      std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::scientific);
  std::string_view s(buf.data(), end - buf.data());  // "-1.95e+13"
  Decimal d;
  if (!s.empty() && s.front() == '-') d.negative = true, s.remove_prefix(1);
  size_t e = s.find('e');
  for (char c : s.substr(0, e))
    if (c != '.') d.digits += c;
  std::string_view exp = s.substr(e + 1);
  if (!exp.empty() && exp.front() == '+') exp.remove_prefix(1);
  std::from_chars(exp.data(), exp.data() + exp.size(), d.exponent);
  while (d.digits.size() > 1 && d.digits.back() == '0') d.digits.pop_back();
  return d;
}

// `digits` with the decimal point after `before` digits (may be <= 0 or past the end), as a
// plain decimal ("195", 2 -> "19.5"; "5", -1 -> "0.05"; "4", 3 -> "400"), or in scientific
// notation when that would need many padding zeros.
std::string placePoint(const std::string& digits, int before) {
  constexpr int kMaxPadding = 6;
  int n = static_cast<int>(digits.size());
  if (before - n > kMaxPadding || -before > kMaxPadding) {
    std::string mantissa = digits.substr(0, 1);
    if (n > 1) mantissa += "." + digits.substr(1);
    return fmt::format("{}e{}", mantissa, before - 1);
  }
  if (before >= n) return digits + std::string(before - n, '0');
  if (before <= 0) return "0." + std::string(-before, '0') + digits;
  return digits.substr(0, before) + "." + digits.substr(before);
}

struct Prefix {
  int exponent;  // decimal exponent, or binary shift for binary families
  std::string_view suffix;
};

constexpr std::array<Prefix, 6> kFlopsPrefixes{
    {{0, ""}, {3, "K"}, {6, "M"}, {9, "G"}, {12, "T"}, {15, "P"}}};
constexpr std::array<Prefix, 5> kBytesDecimal{
    {{0, "B"}, {3, "KB"}, {6, "MB"}, {9, "GB"}, {12, "TB"}}};
constexpr std::array<Prefix, 4> kBytesBinary{{{10, "KiB"}, {20, "MiB"}, {30, "GiB"}, {40, "TiB"}}};
constexpr std::array<Prefix, 5> kBandwidthDecimal{
    {{0, "B/s"}, {3, "KB/s"}, {6, "MB/s"}, {9, "GB/s"}, {12, "TB/s"}}};
constexpr std::array<Prefix, 4> kBandwidthBinary{
    {{10, "KiB/s"}, {20, "MiB/s"}, {30, "GiB/s"}, {40, "TiB/s"}}};
constexpr std::array<Prefix, 5> kBits{
    {{0, "bps"}, {3, "Kbps"}, {6, "Mbps"}, {9, "Gbps"}, {12, "Tbps"}}};
constexpr std::array<Prefix, 4> kSecondsPrefixes{{{-9, "ns"}, {-6, "us"}, {-3, "ms"}, {0, "s"}}};

struct Candidate {
  std::string text;
  size_t significant = 0;
  bool engineering = false;  // the number is in [1, 1000)
};

// Ranks spellings: fewest significant digits, then shortest, then a number in [1, 1000);
// the first of equals wins.
void consider(std::optional<Candidate>& best, Candidate c) {
  auto key = [](const Candidate& x) {
    return std::tuple(x.significant, x.text.size(), !x.engineering);
  };
  if (!best || key(c) < key(*best)) best = std::move(c);
}

Candidate spell(const Decimal& d, int before, std::string_view suffix) {
  return {fmt::format("{}{}{}", d.negative ? "-" : "", placePoint(d.digits, before), suffix),
          d.digits.size(), before >= 1 && before <= 3};
}

// Decimal prefixes: the loader applies them to the decimal digits before rounding, so the
// shortest digits of v with the point moved stay exact.
// `penalty` handicaps a family by that many significant digits.
void considerDecimal(std::optional<Candidate>& best, double v, std::span<const Prefix> prefixes,
                     size_t penalty = 0) {
  Decimal d = shortest(v);
  for (const Prefix& p : prefixes) {
    Candidate c = spell(d, d.exponent - p.exponent + 1, p.suffix);
    c.significant += penalty;
    consider(best, std::move(c));
  }
}

// Binary prefixes: v / 2^shift is exact, and so are its shortest digits.
void considerBinary(std::optional<Candidate>& best, double v, std::span<const Prefix> prefixes) {
  for (const Prefix& p : prefixes) {
    Decimal d = shortest(std::ldexp(v, -p.exponent));
    consider(best, spell(d, d.exponent + 1, p.suffix));
  }
}

bool isPlainChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == '/' || c == '+' || c == '@';
}

// A string as a YAML scalar that yaml-cpp reads back verbatim: plain when it is a simple name
// or address, double-quoted with escapes otherwise.
std::string yamlString(const std::string& s, bool forceQuotes = false) {
  bool plain = !forceQuotes && !s.empty() && s.front() != '-' && s.front() != '.';
  for (char c : s) plain = plain && isPlainChar(c);
  // Words some YAML readers take for null or booleans.
  static constexpr std::array<std::string_view, 11> kReserved{
      "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE", "yes", "no"};
  for (std::string_view r : kReserved) plain = plain && s != r;
  if (plain) return s;
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f)
          out += fmt::format("\\x{:02x}", c);
        else
          out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string plainNumber(double v) {
  std::array<char, 64> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), end);
}

bool isSet(const Link& l) {
  return l.bandwidth != 0 || l.latency != 0;
}

// Writes one cluster; `raw` overrides field values by path.
class Writer {
 public:
  explicit Writer(const RawFields& raw) : raw_(raw) {}

  bool overridden(const std::string& path) const { return raw_.count(path) > 0; }

  // The written value of a field: the override, quoted, or `formatted`.
  std::string value(const std::string& path, const std::string& formatted) const {
    auto it = raw_.find(path);
    return it == raw_.end() ? formatted : yamlString(it->second, /*forceQuotes=*/true);
  }

  std::string quantity(const std::string& path, double v, Unit unit) const {
    return value(path, formatYamlQuantity(v, unit));
  }

  std::string link(const std::string& path, const Link& l) const {
    return fmt::format("{{bandwidth: {}, latency: {}}}",
                       quantity(path + ".bandwidth", l.bandwidth, Unit::Bandwidth),
                       quantity(path + ".latency", l.latency, Unit::Seconds));
  }

  std::string cluster(const Cluster& c) const {
    std::string out;
    out += fmt::format("name: {}\n", value("name", yamlString(c.name)));
    if (!c.description.empty() || overridden("description"))
      out += fmt::format("description: {}\n",
                         value("description", yamlString(c.description, /*forceQuotes=*/true)));
    if (!c.profile.empty() || overridden("profile"))
      out += fmt::format("profile: {}\n", value("profile", yamlString(c.profile)));

    out += c.types.empty() ? "\ndevice_types: {}\n" : "\ndevice_types:\n";
    for (const DeviceType& t : c.types) {
      std::string path = "device_types." + t.name;
      out += fmt::format("  {}:\n", yamlString(t.name));
      std::string flops =
          fmt::format("float32: {}", quantity(path + ".flops.float32", t.flops32, Unit::Flops));
      if (t.flops16 != 0 || overridden(path + ".flops.float16"))
        flops +=
            fmt::format(", float16: {}", quantity(path + ".flops.float16", t.flops16, Unit::Flops));
      if (t.flops64 != 0 || overridden(path + ".flops.float64"))
        flops +=
            fmt::format(", float64: {}", quantity(path + ".flops.float64", t.flops64, Unit::Flops));
      out += fmt::format("    flops: {{{}}}\n", flops);
      out +=
          fmt::format("    memory: {}\n", quantity(path + ".memory", t.memoryBytes, Unit::Bytes));
      out += fmt::format("    memory_bandwidth: {}\n",
                         quantity(path + ".memory_bandwidth", t.memoryBandwidth, Unit::Bandwidth));
      if (t.opOverheadSeconds != 0 || overridden(path + ".op_overhead"))
        out += fmt::format("    op_overhead: {}\n",
                           quantity(path + ".op_overhead", t.opOverheadSeconds, Unit::Seconds));
      if (t.collectiveCallSeconds != 0 || overridden(path + ".collective_call"))
        out += fmt::format("    collective_call: {}\n",
                           quantity(path + ".collective_call", t.collectiveCallSeconds, Unit::Seconds));
      if (!t.source.empty() || overridden(path + ".source"))
        out += fmt::format("    source: {}\n",
                           value(path + ".source", yamlString(t.source, /*forceQuotes=*/true)));
    }

    out += c.machines.empty() ? "\nmachines: []\n" : "\nmachines:\n";
    for (size_t i = 0; i < c.machines.size(); ++i) {
      const Machine& m = c.machines[i];
      std::string path = fmt::format("machines[{}]", i);
      std::string typeName = m.deviceType >= 0 && m.deviceType < static_cast<int>(c.types.size())
                                 ? c.types[m.deviceType].name
                                 : std::string();
      std::string line = fmt::format("name: {}", value(path + ".name", yamlString(m.name)));
      if (m.host != m.name || overridden(path + ".host"))
        line += fmt::format(", host: {}", value(path + ".host", yamlString(m.host)));
      line += fmt::format(", device_type: {}", value(path + ".device_type", yamlString(typeName)));
      line += fmt::format(", count: {}", value(path + ".count", std::to_string(m.count)));
      if (isSet(m.link) || overridden(path + ".link.bandwidth") ||
          overridden(path + ".link.latency"))
        line += fmt::format(", link: {}", link(path + ".link", m.link));
      out += fmt::format("  - {{{}}}\n", line);
    }

    if (isSet(c.network) || overridden("network.bandwidth") || overridden("network.latency"))
      out += fmt::format("\nnetwork: {}\n", link("network", c.network));

    std::string collectives;
    for (int k = 0; k < kCollectiveCount; ++k) {
      std::string name(collectiveName(static_cast<Collective>(k)));
      std::string path = fmt::format("collectives.{}.efficiency", name);
      if (c.efficiency[k] != 1 || overridden(path))
        collectives += fmt::format("  {}: {{efficiency: {}}}\n", name,
                                   value(path, plainNumber(c.efficiency[k])));
    }
    if (!collectives.empty()) out += "\ncollectives:\n" + collectives;
    return out;
  }

 private:
  const RawFields& raw_;
};

}  // namespace

std::string formatYamlQuantity(double value, Unit unit) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  std::optional<Candidate> best;
  switch (unit) {
    case Unit::Flops:
      considerDecimal(best, value, kFlopsPrefixes);
      break;
    case Unit::Bytes:
      considerDecimal(best, value, kBytesDecimal);
      considerBinary(best, value, kBytesBinary);
      break;
    case Unit::Bandwidth:
      considerDecimal(best, value, kBandwidthDecimal);
      considerBinary(best, value, kBandwidthBinary);
      // Bits: the loader divides the parsed bit rate by 8 (exact), so write 8·v's digits. Only
      // when clearly rounder than bytes ("10Gbps" for 1.25GB/s, but "15.75GB/s", not "126Gbps").
      if (std::isfinite(value * 8)) considerDecimal(best, value * 8, kBits, /*penalty=*/2);
      break;
    case Unit::Seconds:
      considerDecimal(best, value, kSecondsPrefixes);
      break;
  }
  return best->text;
}

std::string formatClusterYaml(const Cluster& cluster, const RawFields& raw) {
  return Writer(raw).cluster(cluster);
}

void saveCluster(const Cluster& cluster, const std::string& path) {
  std::string text = formatClusterYaml(cluster);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw ClusterError(
        fmt::format("{}: cannot write the cluster file: {}", path, std::strerror(errno)));
  out << text;
  out.close();
  if (!out)
    throw ClusterError(
        fmt::format("{}: cannot write the cluster file: {}", path, std::strerror(errno)));
}

}  // namespace hap::cost
