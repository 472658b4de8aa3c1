// The look every plan and profile chart of hap-studio shares (Qt Charts): light theme, no
// animation, square corners, small bold title, legend at the bottom; and the fitting that keeps
// what a chart writes readable at every size its view gets (from a 1280×720 window up).
#pragma once

#include <QString>

class QChart;
class QChartView;
class QValueAxis;
class QWidget;

namespace hap::studio {

void styleChart(QChart* chart);

// A styled chart in an antialiased view named `name` (tests find views by object name), fitted
// (fitChartView).
QChartView* makeChartView(QWidget* parent, const QString& name);

// Removes every series and axis of `chart`, deleting them, before the chart is drawn anew.
void emptyChart(QChart* chart);

// Keeps `view`'s chart fitted to its space from now on: after every change of its size, axes,
// series or titles (seen at the next paint) one fitting pass runs (fitChartNow). makeChartView
// calls it; a view made otherwise calls it once.
void fitChartView(QChartView* view);

// One fitting pass over `view`'s chart as it is laid out now; returns whether it changed anything
// (a change lays the chart out again, and the next pass fits the new layout). What it does:
// - value axes: a tick every 1, 2, 2.5 or 5 × 10^k, the smallest whose labels stand apart, each
//   label written with the decimals its interval needs (0.25, never 0.3; integers on axes whose
//   format was integral), keeping the format's prefix and suffix ("%", " ms");
// - bar category axes: labels that do not fit side by side break onto up to three lines at
//   spaces, else stand on end; a left axis's labels wider than Qt gives them (0.4 of the chart)
//   break onto lines too;
// - bar labels: a bar set's labels hide when a bar of it is narrower than its label;
// - the title and axis titles: too long for their space, they break onto two lines, else elide
//   with the whole text in the view's tooltip;
// - the legend: too wide for one row under the chart, it moves to the chart's right (where each
//   entry has a row), and back when there is room; its tooltips show cut names.
bool fitChartNow(QChartView* view);

// Sets a value axis's range. A fitted axis keeps its tick interval until the next fitting pass,
// and Qt lays the axis out inside setRange: a span many times the old one would get a label per
// old interval (hundreds of thousands while a search's counts grow). Where the new span holds more
// than 50 of them, the interval first grows to a tenth of the span; the next pass fits it.
void setAxisRange(QValueAxis* axis, double lo, double hi);

}  // namespace hap::studio
