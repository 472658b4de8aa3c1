// Physical quantities written with units, as in cluster inventories: "15.7T" (FLOP/s), "16GiB",
// "900GB/s", "10.4Gbps", "5us". Values are returned in base units: FLOP/s, bytes, bytes/s and
// seconds. The accepted spellings are listed in docs/cost-model.md ("Units").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hap::cost {

// What a quantity measures; decides which unit suffixes are accepted.
enum class Unit {
  Flops,      // FLOP/s. Suffixes K/k, M, G, T, P (decimal), optionally followed by FLOPS or FLOP/s
  Bytes,      // bytes. B; KB/kB, MB, GB, TB (decimal); KiB, MiB, GiB, TiB (binary)
  Bandwidth,  // bytes/s. B/s, KB/s, MB/s, GB/s, TB/s, KiB/s ... TiB/s; bits: bps, Kbps, Mbps,
              // Gbps, Tbps, bit/s, Kbit/s, Mbit/s, Gbit/s, Tbit/s (divided by 8)
  Seconds,    // seconds. s, ms, us (or µs), ns
};

// Parses "NUMBER[ ]SUFFIX" into base units. NUMBER is a decimal with optional sign, fraction and
// exponent ("1.5e3"); a plain number is in base units. Whitespace around the text and between
// number and suffix is allowed. Returns nullopt for anything else, including an unknown suffix
// and non-finite values. Negative numbers parse (callers validate the sign, so that "-5us" gets
// "must be positive" rather than "not a time").
//
// Decimal prefixes are applied to the decimal digits before rounding, so the result is the
// double nearest to the exact value: "10.4Gbps" == 1.3e9 exactly, "5us" == 5e-6.
std::optional<double> parseQuantity(std::string_view text, Unit unit);

// The range HAP accepts for a quantity of a cluster inventory (docs/cost-model.md "Ranges"):
// wider than any real device or link, and narrow enough that every time the cost model derives
// from them (bytes / bandwidth, FLOPs / FLOP/s, latency sums) stays well inside what the LP and
// MILP solvers (CLP, CBC) represent: their coefficients stay below 1e25 and above 1e-25, so the
// solvers neither assert nor treat a value as infinite or zero.
//   Flops      1M (1e6)         .. 1000P (1e18)
//   Bytes      1MiB (2^20)      .. 1024TiB (2^50)
//   Bandwidth  1KB/s (1e3)      .. 10000TB/s (1e16)
//   Seconds    1ns (1e-9)       .. 60s               (a time may also be zero where allowed)
struct QuantityRange {
  double min = 0, max = 0;
};
QuantityRange supportedRange(Unit unit);
// The range as text for messages, in the loader's spellings: "1M to 1000P FLOP/s".
std::string rangeText(Unit unit);

// A short noun for messages: "FLOP/s value", "byte size", "bandwidth", "time".
std::string_view unitNoun(Unit unit);
// The accepted forms, for messages: "a number with a suffix K, M, G, T or P, e.g. 15.7T".
std::string_view unitForms(Unit unit);

// Human-readable value in the unit's customary prefix, 4 significant digits:
// "15.7 TFLOP/s", "16 GiB" (bytes use binary prefixes), "1.3 GB/s", "5 us", "0 s".
std::string formatQuantity(double value, Unit unit);

}  // namespace hap::cost
