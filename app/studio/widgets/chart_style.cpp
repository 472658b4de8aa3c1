#include "app/studio/widgets/chart_style.h"

#include <QAbstractAxis>
#include <QChart>
#include <QChartView>
#include <QLegend>

namespace hap::studio {

void styleChart(QChart* chart) {
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->setTheme(QChart::ChartThemeLight);
  chart->setBackgroundRoundness(0);
  chart->setMargins(QMargins(4, 4, 4, 4));
  chart->legend()->setAlignment(Qt::AlignBottom);
  QFont title = chart->titleFont();
  title.setPointSizeF(10);
  title.setBold(true);
  chart->setTitleFont(title);
}

QChartView* makeChartView(QWidget* parent, const QString& name) {
  auto* chart = new QChart;
  styleChart(chart);
  auto* view = new QChartView(chart, parent);
  view->setObjectName(name);
  view->setRenderHint(QPainter::Antialiasing);
  view->setMinimumSize(200, 160);
  return view;
}

void emptyChart(QChart* chart) {
  chart->removeAllSeries();
  for (QAbstractAxis* axis : chart->axes()) {
    chart->removeAxis(axis);
    delete axis;
  }
}

}  // namespace hap::studio
