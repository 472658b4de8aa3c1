#include "app/studio/core/display/units.h"

#include <cmath>

#include "engine/ir/summary.h"

namespace hap::studio {

TimeUnit timeUnitFor(double seconds) {
  const double a = std::abs(seconds);
  if (a < 1e-6) return {1e-9, "ns"};
  if (a < 1e-3) return {1e-6, "\u00b5s"};
  if (a < 1) return {1e-3, "ms"};
  return {1, "s"};
}

QString trimmedNumber(double value, int decimals) {
  QString s = QString::number(value, 'f', decimals);
  if (s.contains(QLatin1Char('.'))) {
    while (s.endsWith(QLatin1Char('0'))) s.chop(1);
    if (s.endsWith(QLatin1Char('.'))) s.chop(1);
  }
  if (s == QStringLiteral("-0")) s = QStringLiteral("0");
  return s;
}

QString formatDuration(double seconds) {
  if (!std::isfinite(seconds)) return QStringLiteral("?");
  if (seconds == 0) return QStringLiteral("0 s");
  TimeUnit u = timeUnitFor(seconds);
  double v = seconds / u.seconds;
  // 999.96 µs reads "1 ms", not "1000 µs".
  if (std::abs(v) >= 999.5 && u.seconds < 1) {
    u = timeUnitFor(std::copysign(u.seconds * 1000, seconds));
    v = seconds / u.seconds;
  }
  const double a = std::abs(v);
  const int decimals = a >= 100 ? 0 : a >= 10 ? 1 : 2;
  return trimmedNumber(v, decimals) + QLatin1Char(' ') + QString::fromUtf8(u.name);
}

QString formatMilliseconds(double seconds) {
  if (std::isinf(seconds) && seconds > 0) return QStringLiteral("∞");
  if (!(seconds >= 0)) return QStringLiteral("—");
  return QStringLiteral("%1 ms").arg(seconds * 1e3, 0, 'f', 3);
}

QString formatBytes(double bytes) {
  return QString::fromStdString(ir::formatBytes(static_cast<int64_t>(std::llround(bytes))));
}

QString formatCount(double n) {
  return QString::fromStdString(ir::formatCount(n));
}

}  // namespace hap::studio
