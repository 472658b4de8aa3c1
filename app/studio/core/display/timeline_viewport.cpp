#include "app/studio/core/display/timeline_viewport.h"

#include <algorithm>
#include <cmath>

#include "app/studio/core/display/units.h"

namespace hap::studio {

void TimelineViewport::setTotal(double seconds) {
  m_total = std::isfinite(seconds) && seconds > 0 ? seconds : 0;
  fit();
}

double TimelineViewport::minSpan() const { return std::min(kMinSpanSeconds, m_total); }

bool TimelineViewport::isFit() const { return m_start <= m_total * 1e-12 && m_end >= m_total * (1 - 1e-12); }

void TimelineViewport::fit() {
  m_start = 0;
  m_end = m_total;
}

void TimelineViewport::clampWindow(double start, double span) {
  if (m_total <= 0) return fit();
  if (!std::isfinite(start) || !std::isfinite(span)) return;
  span = std::clamp(span, minSpan(), m_total);
  if (span >= m_total * (1 - 1e-12)) return fit();  // rounding must not leave a sliver out
  start = std::clamp(start, 0.0, m_total - span);
  m_start = start;
  m_end = std::min(m_total, start + span);
}

void TimelineViewport::setWindow(double start, double end) {
  if (end < start) std::swap(start, end);
  double span = end - start;
  if (span < minSpan()) {
    start = (start + end) / 2 - minSpan() / 2;
    span = minSpan();
  }
  clampWindow(start, span);
}

void TimelineViewport::zoom(double factor, double anchor) {
  if (!(factor > 0) || !std::isfinite(factor) || m_total <= 0 || span() <= 0) return;
  if (!std::isfinite(anchor)) anchor = centre();
  anchor = std::clamp(anchor, m_start, m_end);
  const double fraction = (anchor - m_start) / span();
  const double newSpan = std::clamp(span() / factor, minSpan(), m_total);
  clampWindow(anchor - fraction * newSpan, newSpan);
}

void TimelineViewport::pan(double seconds) {
  if (!std::isfinite(seconds)) return;
  clampWindow(m_start + seconds, span());
}

void TimelineViewport::zoomToRange(double from, double to, double margin) {
  if (to < from) std::swap(from, to);
  const double pad = (to - from) * std::max(0.0, margin);
  setWindow(from - pad, to + pad);
}

void TimelineViewport::ensureVisible(double from, double to) {
  if (to < from) std::swap(from, to);
  const bool contains = m_start <= from && to <= m_end;
  const bool inside = from <= m_start && m_end <= to;
  if (contains || inside) return;
  if (to - from <= span())
    clampWindow((from + to) / 2 - span() / 2, span());
  else
    clampWindow(from, span());
}

double TimelineViewport::timeToX(double seconds, double width) const {
  return span() > 0 ? (seconds - m_start) / span() * width : 0;
}

double TimelineViewport::xToTime(double x, double width) const {
  return width > 0 ? m_start + x / width * span() : m_start;
}

double TimelineViewport::tickStep(double span, double width, double minPixels) {
  if (!(span > 0) || !(width > 0)) return 0;
  const double raw = span * std::max(1.0, minPixels) / width;
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * decade >= raw * (1 - 1e-9)) return m * decade;
  return 10 * decade;
}

std::vector<TimelineViewport::Tick> TimelineViewport::ticks(double width, double minPixels) const {
  std::vector<Tick> out;
  const double step = tickStep(span(), width, minPixels);
  if (step <= 0) return out;
  const double first = std::ceil(m_start / step - 1e-9);
  const double last = std::floor(m_end / step + 1e-9);
  for (double k = first; k <= last && out.size() < 1000; k += 1) {
    const double t = k * step;
    out.push_back({t, formatTick(t, step, m_end)});
  }
  return out;
}

QString TimelineViewport::formatTick(double seconds, double step, double windowEnd) {
  if (!(step > 0)) return formatDuration(seconds);
  auto decimalsFor = [step](const TimeUnit& u) {
    return std::max(0, static_cast<int>(-std::floor(std::log10(step / u.seconds) + 1e-9)));
  };
  // The window's unit while the step needs at most 3 decimals in it ("29.02 ms"), else the
  // largest unit in which the step is at least 0.1 ("1000.5 µs", "0.5 ms", "2.5 s").
  TimeUnit u = timeUnitFor(std::max(std::abs(windowEnd), step * 10 * (1 + 1e-9)));
  if (decimalsFor(u) > 3) u = timeUnitFor(step * 10 * (1 + 1e-9));
  return trimmedNumber(seconds / u.seconds, decimalsFor(u)) + QLatin1Char(' ') + QString::fromUtf8(u.name);
}

}  // namespace hap::studio
