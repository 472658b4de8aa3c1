#include "engine/cost/units.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace hap::cost {
namespace {

// One accepted suffix: value = number · 10^decimalExponent · 2^binaryShift (/ 8 for bits).
struct Suffix {
  std::string_view text;
  int decimalExponent = 0;
  int binaryShift = 0;
  bool bits = false;
};

constexpr std::array<Suffix, 35> kFlops{{
    {""},      {"FLOPS"},      {"FLOP/s"},      {"flops"},      {"flop/s"},
    {"K", 3},  {"KFLOPS", 3},  {"KFLOP/s", 3},  {"Kflops", 3},  {"Kflop/s", 3},
    {"k", 3},  {"kFLOPS", 3},  {"kFLOP/s", 3},  {"kflops", 3},  {"kflop/s", 3},
    {"M", 6},  {"MFLOPS", 6},  {"MFLOP/s", 6},  {"Mflops", 6},  {"Mflop/s", 6},
    {"G", 9},  {"GFLOPS", 9},  {"GFLOP/s", 9},  {"Gflops", 9},  {"Gflop/s", 9},
    {"T", 12}, {"TFLOPS", 12}, {"TFLOP/s", 12}, {"Tflops", 12}, {"Tflop/s", 12},
    {"P", 15}, {"PFLOPS", 15}, {"PFLOP/s", 15}, {"Pflops", 15}, {"Pflop/s", 15},
}};

constexpr std::array<Suffix, 11> kBytes{{
    {""},
    {"B"},
    {"KB", 3},
    {"kB", 3},
    {"MB", 6},
    {"GB", 9},
    {"TB", 12},
    {"KiB", 0, 10},
    {"MiB", 0, 20},
    {"GiB", 0, 30},
    {"TiB", 0, 40},
}};

constexpr std::array<Suffix, 23> kBandwidth{{
    {""},
    {"B/s"},
    {"KB/s", 3},
    {"kB/s", 3},
    {"MB/s", 6},
    {"GB/s", 9},
    {"TB/s", 12},
    {"KiB/s", 0, 10},
    {"MiB/s", 0, 20},
    {"GiB/s", 0, 30},
    {"TiB/s", 0, 40},
    {"bps", 0, 0, true},
    {"bit/s", 0, 0, true},
    {"Kbps", 3, 0, true},
    {"kbps", 3, 0, true},
    {"Kbit/s", 3, 0, true},
    {"kbit/s", 3, 0, true},
    {"Mbps", 6, 0, true},
    {"Mbit/s", 6, 0, true},
    {"Gbps", 9, 0, true},
    {"Gbit/s", 9, 0, true},
    {"Tbps", 12, 0, true},
    {"Tbit/s", 12, 0, true},
}};

constexpr std::array<Suffix, 6> kSeconds{{
    {""},
    {"s"},
    {"ms", -3},
    {"us", -6},
    {"\u00b5s", -6},
    {"ns", -9},
}};

template <size_t N>
const Suffix* find(const std::array<Suffix, N>& table, std::string_view text) {
  for (const Suffix& s : table)
    if (s.text == text) return &s;
  return nullptr;
}

const Suffix* findSuffix(Unit unit, std::string_view text) {
  switch (unit) {
    case Unit::Flops:
      return find(kFlops, text);
    case Unit::Bytes:
      return find(kBytes, text);
    case Unit::Bandwidth:
      return find(kBandwidth, text);
    case Unit::Seconds:
      return find(kSeconds, text);
  }
  return nullptr;
}

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}
bool isSpace(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && isSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && isSpace(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<double> parseQuantity(std::string_view text, Unit unit) {
  text = trim(text);
  // NUMBER = [+-] digits [. digits] [(e|E) [+-] digits], at least one mantissa digit.
  size_t i = 0;
  std::string mantissa;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    if (text[i] == '-') mantissa += '-';
    ++i;
  }
  size_t digits = 0;
  for (; i < text.size() && isDigit(text[i]); ++i, ++digits) mantissa += text[i];
  if (i < text.size() && text[i] == '.') {
    mantissa += '.';
    for (++i; i < text.size() && isDigit(text[i]); ++i, ++digits) mantissa += text[i];
  }
  if (digits == 0) return std::nullopt;
  long exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    // Only an exponent when digits follow: "5E" is not a number with an exponent.
    size_t j = i + 1;
    if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
    if (j < text.size() && isDigit(text[j])) {
      size_t end = j;
      while (end < text.size() && isDigit(text[end])) ++end;
      const char* first = text.data() + i + 1;
      if (*first == '+') ++first;  // from_chars accepts '-' but not '+'
      auto [ptr, ec] = std::from_chars(first, text.data() + end, exponent);
      if (ec != std::errc() || std::labs(exponent) > 10000) return std::nullopt;
      i = end;
    }
  }
  const Suffix* suffix = findSuffix(unit, trim(text.substr(i)));
  if (!suffix) return std::nullopt;

  // Let from_chars apply the decimal prefix so that the result is correctly rounded.
  std::string decimal = fmt::format("{}e{}", mantissa, exponent + suffix->decimalExponent);
  double value = 0;
  auto [ptr, ec] = std::from_chars(decimal.data(), decimal.data() + decimal.size(), value);
  if (ec != std::errc() || ptr != decimal.data() + decimal.size()) return std::nullopt;
  value = std::ldexp(value, suffix->binaryShift);  // exact: a power of two
  if (suffix->bits) value /= 8;                    // exact: a power of two
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

QuantityRange supportedRange(Unit unit) {
  switch (unit) {
    case Unit::Flops:
      return {1e6, 1e18};
    case Unit::Bytes:
      return {0x1p20, 0x1p50};
    case Unit::Bandwidth:
      return {1e3, 1e16};
    case Unit::Seconds:
      return {1e-9, 60};
  }
  return {};
}

std::string rangeText(Unit unit) {
  switch (unit) {
    case Unit::Flops:
      return "1M to 1000P FLOP/s";
    case Unit::Bytes:
      return "1MiB to 1024TiB";
    case Unit::Bandwidth:
      return "1KB/s to 10000TB/s";
    case Unit::Seconds:
      return "1ns to 60s";
  }
  return "";
}

std::string_view unitNoun(Unit unit) {
  switch (unit) {
    case Unit::Flops:
      return "FLOP/s value";
    case Unit::Bytes:
      return "byte size";
    case Unit::Bandwidth:
      return "bandwidth";
    case Unit::Seconds:
      return "time";
  }
  return "quantity";
}

std::string_view unitForms(Unit unit) {
  switch (unit) {
    case Unit::Flops:
      return "a number with an optional suffix K, M, G, T or P (decimal), e.g. 15.7T";
    case Unit::Bytes:
      return "a number with an optional unit B, KB, MB, GB, TB (decimal) or KiB, MiB, GiB, TiB "
             "(binary), e.g. 16GiB";
    case Unit::Bandwidth:
      return "a number with a unit B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s or "
             "bits: bps, Kbps, Mbps, Gbps, Tbps, bit/s, Kbit/s, Mbit/s, Gbit/s, Tbit/s; e.g. "
             "900GB/s or 10.4Gbps";
    case Unit::Seconds:
      return "a number with an optional unit s, ms, us or ns, e.g. 5us";
  }
  return "";
}

std::string formatQuantity(double value, Unit unit) {
  struct Scale {
    double factor;
    std::string_view name;
  };
  auto pick = [&](auto const& scales) {
    // The largest scale whose factor does not exceed |value|; the smallest one otherwise.
    const Scale* best = &scales[0];
    for (const Scale& s : scales)
      if (std::fabs(value) >= s.factor) best = &s;
    return fmt::format("{:.4g} {}", value / best->factor, best->name);
  };
  if (value == 0) {
    switch (unit) {
      case Unit::Flops:
        return "0 FLOP/s";
      case Unit::Bytes:
        return "0 B";
      case Unit::Bandwidth:
        return "0 B/s";
      case Unit::Seconds:
        return "0 s";
    }
  }
  switch (unit) {
    case Unit::Flops: {
      static constexpr std::array<Scale, 6> k{{{1, "FLOP/s"},
                                               {1e3, "KFLOP/s"},
                                               {1e6, "MFLOP/s"},
                                               {1e9, "GFLOP/s"},
                                               {1e12, "TFLOP/s"},
                                               {1e15, "PFLOP/s"}}};
      return pick(k);
    }
    case Unit::Bytes: {
      static constexpr std::array<Scale, 6> k{{{1, "B"},
                                               {0x1p10, "KiB"},
                                               {0x1p20, "MiB"},
                                               {0x1p30, "GiB"},
                                               {0x1p40, "TiB"},
                                               {0x1p50, "PiB"}}};
      return pick(k);
    }
    case Unit::Bandwidth: {
      static constexpr std::array<Scale, 5> k{
          {{1, "B/s"}, {1e3, "KB/s"}, {1e6, "MB/s"}, {1e9, "GB/s"}, {1e12, "TB/s"}}};
      return pick(k);
    }
    case Unit::Seconds: {
      static constexpr std::array<Scale, 4> k{{{1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}, {1, "s"}}};
      return pick(k);
    }
  }
  return fmt::format("{}", value);
}

}  // namespace hap::cost
