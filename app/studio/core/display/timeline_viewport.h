// The time navigation of the stages view (issue 18 item 4), Perfetto-style: which window
// [start, end) of an iteration of `total` seconds is shown, zoomed and panned about times, and
// how times map to pixels of a drawing `width` pixels wide. Pure arithmetic (no widgets), so the
// navigation rules are tested on their own.
//
// Invariants, after every call: 0 <= start < end <= total (when total > 0) and
// minSpan() <= span() <= total; a window that would leave [0, total] is shifted back inside,
// keeping its span. With total == 0 the window is [0, 0) and every call is a no-op.
#pragma once

#include <QString>

#include <vector>

namespace hap::studio {

class TimelineViewport {
 public:
  static constexpr double kZoomFactor = 1.25;   // one W/S press or wheel notch
  static constexpr double kPanFraction = 0.2;   // one A/D press, as a fraction of the span
  static constexpr double kMinSpanSeconds = 1e-7;  // the deepest zoom: 100 ns across the view

  // The iteration's length in seconds (negative and non-finite read as 0); shows all of it.
  void setTotal(double seconds);
  double total() const { return m_total; }

  double start() const { return m_start; }
  double end() const { return m_end; }
  double span() const { return m_end - m_start; }
  // The smallest span a zoom reaches: kMinSpanSeconds, or the total when it is shorter.
  double minSpan() const;
  // Whether the whole iteration is shown.
  bool isFit() const;

  // Shows [0, total).
  void fit();
  // Shows [start, end) clamped into the rules above (a span under minSpan() grows about its middle).
  void setWindow(double start, double end);
  // Divides the span by `factor` (> 1 zooms in, < 1 out) keeping `anchor` at the same place on
  // screen (anchor outside the window: its nearest edge).
  void zoom(double factor, double anchor);
  void zoomIn(double anchor) { zoom(kZoomFactor, anchor); }
  void zoomOut(double anchor) { zoom(1 / kZoomFactor, anchor); }
  void zoomIn() { zoomIn(centre()); }
  void zoomOut() { zoomOut(centre()); }
  // Moves the window by `seconds` (positive: later), stopping at the ends.
  void pan(double seconds);
  // Moves the window by `fraction` of its span (A: -kPanFraction, D: +kPanFraction).
  void panBy(double fraction) { pan(fraction * span()); }
  // Shows [from, to) with `margin` of its length on each side (a stage: zoom to range).
  void zoomToRange(double from, double to, double margin = 0.04);
  // Pans, keeping the span, to bring [from, to) into view: centred on it when it fits in the
  // span, else starting at `from`. No-op when the window contains the range or lies inside it.
  void ensureVisible(double from, double to);
  double centre() const { return (m_start + m_end) / 2; }

  // Pixel <-> time for a drawing `width` pixels wide whose x = 0 is start() and x = width is end().
  double timeToX(double seconds, double width) const;
  double xToTime(double x, double width) const;

  // Ruler ticks: multiples of a 1-2-5 step of at least `minPixels` pixels on a drawing `width`
  // pixels wide, inside [start, end]. `label` is formatTick's.
  struct Tick {
    double seconds = 0;
    QString label;
  };
  std::vector<Tick> ticks(double width, double minPixels = 90) const;
  // The 1-2-5 step for `span` seconds over `width` pixels, ticks at least `minPixels` apart.
  static double tickStep(double span, double width, double minPixels);
  // `seconds` as a ruler with ticks `step` apart over a window ending at `windowEnd` labels it:
  // one unit for the whole ruler (the window's, while the step needs at most 3 decimals in it),
  // with the decimals the step needs ("29.02 ms", "0.5 ms", "1000.5 µs").
  static QString formatTick(double seconds, double step, double windowEnd = 0);

 private:
  void clampWindow(double start, double span);

  double m_total = 0, m_start = 0, m_end = 0;
};

}  // namespace hap::studio
