// How the app writes times, sizes and counts: one place, so that every view reads alike.
#pragma once

#include <QString>

namespace hap::studio {

// The unit a length of `seconds` reads best in: ns, µs, ms or s.
struct TimeUnit {
  double seconds;
  const char* name;
};
TimeUnit timeUnitFor(double seconds);

// `value` with `decimals` decimals, trailing zeros (and a trailing point) removed; never "-0".
QString trimmedNumber(double value, int decimals);

// A time in the unit that reads best, to three significant figures: "1.25 ms", "412 µs", "0 s";
// "?" when not finite.
QString formatDuration(double seconds);

// A time in milliseconds with three decimals, as `hap plan` prints it ("4.937 ms"), for tables
// read beside the CLI's; "∞" for +infinity (no completion), "—" for none (negative or NaN).
QString formatMilliseconds(double seconds);

// Bytes as the engine prints them (ir::formatBytes, rounded to a whole byte): "1.50 GiB".
QString formatBytes(double bytes);

// A count as the engine prints it (ir::formatCount): "124.4M".
QString formatCount(double n);

}  // namespace hap::studio
