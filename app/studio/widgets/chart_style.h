// The look every plan and profile chart of hap-studio shares (Qt Charts): light theme, no
// animation, square corners, small bold title, legend at the bottom.
#pragma once

#include <QString>

class QChart;
class QChartView;
class QWidget;

namespace hap::studio {

void styleChart(QChart* chart);

// A styled chart in an antialiased view named `name` (tests find views by object name).
QChartView* makeChartView(QWidget* parent, const QString& name);

// Removes every series and axis of `chart`, deleting them, before the chart is drawn anew.
void emptyChart(QChart* chart);

}  // namespace hap::studio
