#include "app/studio/widgets/chart_style.h"

#include <QAbstractAxis>
#include <QAbstractBarSeries>
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QDebug>
#include <QEvent>
#include <QFontMetricsF>
#include <QHorizontalBarSeries>
#include <QHorizontalPercentBarSeries>
#include <QHorizontalStackedBarSeries>
#include <QLegend>
#include <QLegendMarker>
#include <QPointer>
#include <QRegularExpression>
#include <QTextDocument>
#include <QTimer>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace hap::studio {

void styleChart(QChart* chart) {
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->setTheme(QChart::ChartThemeLight);
  chart->setBackgroundRoundness(0);
  chart->setMargins(QMargins(4, 4, 4, 4));
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->legend()->setShowToolTips(true);
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
  fitChartView(view);
  return view;
}

void emptyChart(QChart* chart) {
  chart->removeAllSeries();
  for (QAbstractAxis* axis : chart->axes()) {
    chart->removeAxis(axis);
    delete axis;
  }
}

namespace {

// What a text was before fitting, kept on the object that shows it: `orig` holds the view's text,
// `fitted` the text the fit last wrote; a text differing from `fitted` is the view's new one.
QString original(QObject* o, const char* orig, const char* fitted, const QString& now) {
  if (!o->property(orig).isValid() || o->property(fitted).toString() != now) {
    o->setProperty(orig, now);
    o->setProperty(fitted, now);
  }
  return o->property(orig).toString();
}

QStringList originalList(QObject* o, const char* orig, const char* fitted, const QStringList& now) {
  if (!o->property(orig).isValid() || o->property(fitted).toStringList() != now) {
    o->setProperty(orig, now);
    o->setProperty(fitted, now);
  }
  return o->property(orig).toStringList();
}

qreal widthOf(const QFontMetricsF& fm, const QString& text) {
  qreal w = 0;
  for (const QString& line : text.split(QStringLiteral("<br>"))) w = std::max(w, fm.horizontalAdvance(line));
  return w;
}

// `text` broken at spaces into at most `maxLines` lines no wider than `width`, as HTML; empty
// when it cannot be. A lone "·" stays with the word before it.
QString wrapped(const QString& text, const QFontMetricsF& fm, qreal width, int maxLines) {
  QStringList words;
  for (const QString& w : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
    if ((w == QStringLiteral("·") || w == QStringLiteral("—")) && !words.isEmpty())
      words.back() += QLatin1Char(' ') + w;
    else
      words << w;
  }
  QStringList lines;
  QString current;
  for (const QString& w : words) {
    const QString candidate = current.isEmpty() ? w : current + QLatin1Char(' ') + w;
    if (current.isEmpty() || fm.horizontalAdvance(candidate) <= width) {
      current = candidate;
    } else {
      lines << current;
      current = w;
    }
  }
  if (!current.isEmpty()) lines << current;
  if (lines.size() < 2 || lines.size() > maxLines) return {};
  for (QString& line : lines) {
    if (fm.horizontalAdvance(line) > width) return {};
    line = line.toHtmlEscaped();
  }
  return lines.join(QStringLiteral("<br>"));
}

// The number format of a QValueAxis label format ("%.3g", "%.0f%%", "%d ms").
struct NumberFormat {
  QString prefix, suffix;
  bool integral = false;
};

NumberFormat parseFormat(const QString& format) {
  static const QRegularExpression conversion(QStringLiteral("%[-+ #0]*\\d*(?:\\.(\\d+))?([diufFgGeE])"));
  NumberFormat f;
  const QRegularExpressionMatch m = conversion.match(format);
  if (!m.hasMatch()) return f;
  f.prefix = format.left(m.capturedStart());
  f.suffix = format.mid(m.capturedEnd());
  const QString c = m.captured(2);
  f.integral = c == QLatin1String("d") || c == QLatin1String("i") || c == QLatin1String("u") ||
               ((c == QLatin1String("f") || c == QLatin1String("F")) && m.captured(1) == QLatin1String("0"));
  return f;
}

bool same(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)}); }

bool fitValueAxis(QValueAxis* axis, qreal length, bool horizontal) {
  const double lo = axis->min(), hi = axis->max(), span = hi - lo;
  if (!(span > 0) || length < 8 || !axis->labelsVisible()) return false;
  const NumberFormat nf = parseFormat(original(axis, "hapFormat", "hapFitFormat", axis->labelFormat()));
  const QFontMetricsF fm(axis->labelsFont());
  const double minimumGap = horizontal ? 14 : fm.height() * 1.6;
  double step = 0;
  QString format;
  const int e0 = static_cast<int>(std::floor(std::log10(span / 50)));
  for (int e = e0; e < e0 + 14 && step == 0; ++e) {
    for (double mult : {1.0, 2.0, 2.5, 5.0}) {
      const double s = mult * std::pow(10.0, e);
      if (nf.integral && (s < 1 || !same(s, std::round(s)))) continue;
      const int d = nf.integral ? 0 : std::clamp(-static_cast<int>(std::floor(std::log10(s) + 1e-9)) + (mult == 2.5 ? 1 : 0), 0, 9);
      const QString f = nf.prefix + QStringLiteral("%.%1f").arg(d) + nf.suffix;
      double need = minimumGap;
      if (horizontal) {
        qreal widest = 0;
        int n = 0;
        for (double v = std::ceil(lo / s - 1e-9) * s; v <= hi + 1e-9 * span && n < 200; v += s, ++n)
          widest = std::max(widest, fm.horizontalAdvance(QString::asprintf(f.toLatin1().constData(), v)));
        need = std::max(need + widest, 56.0);  // and not a label every few millimetres
      }
      if (s / span * length >= need || s >= span) {
        step = s;
        format = f;
        break;
      }
    }
  }
  if (step == 0) return false;
  // Ticks at multiples of the step (an anchor at 0 gives an exact 0 where the range has one).
  const double anchor = std::abs(lo / step) < 1e9 ? 0.0 : std::floor(lo / step) * step;
  bool changed = false;
  if (axis->tickType() != QValueAxis::TicksDynamic) {
    axis->setTickType(QValueAxis::TicksDynamic);
    changed = true;
  }
  if (!same(axis->tickInterval(), step)) {
    axis->setTickInterval(step);
    changed = true;
  }
  if (!same(axis->tickAnchor(), anchor)) {
    axis->setTickAnchor(anchor);
    changed = true;
  }
  if (axis->labelFormat() != format) {
    axis->setProperty("hapFitFormat", format);
    axis->setLabelFormat(format);
    changed = true;
  }
  return changed;
}

bool fitCategoryAxis(QBarCategoryAxis* axis, const QRectF& plot, qreal chartWidth, bool horizontal) {
  const QStringList labels = originalList(axis, "hapCategories", "hapFitCategories", axis->categories());
  const int n = static_cast<int>(labels.size());
  if (n == 0 || !axis->labelsVisible()) return false;
  const QFontMetricsF fm(axis->labelsFont());
  qreal widest = 0;
  for (const QString& l : labels) widest = std::max(widest, fm.horizontalAdvance(l));
  QStringList target = labels;
  int angle = 0;
  auto wrapAll = [&](qreal width, int maxLines) {
    QStringList out;
    for (const QString& l : labels) {
      if (fm.horizontalAdvance(l) <= width) {
        out << l;
        continue;
      }
      const QString w = wrapped(l, fm, width, maxLines);
      if (w.isEmpty()) return QStringList();
      out << w;
    }
    return out;
  };
  if (horizontal) {
    const qreal per = plot.width() / n - 10;
    if (widest > per) {
      const QStringList w = wrapAll(per, 3);
      if (!w.isEmpty())
        target = w;
      else
        angle = -90;
    }
  } else {
    // Qt gives the left axes at most 0.4 of the chart's width.
    const qreal room = chartWidth * 0.4 - 16;
    const int lines = std::clamp(static_cast<int>(plot.height() / n / fm.lineSpacing()), 1, 3);
    if (widest > room && lines > 1) {
      const QStringList w = wrapAll(room, lines);
      if (!w.isEmpty()) target = w;
    }
  }
  bool changed = false;
  if (axis->categories() != target) {
    axis->setProperty("hapFitCategories", target);
    axis->clear();
    axis->append(target);
    changed = true;
  }
  if (axis->labelsAngle() != angle) {
    axis->setLabelsAngle(angle);
    axis->setTruncateLabels(angle == 0);
    changed = true;
  }
  return changed;
}

// A title (the chart's or an axis's) in `width`: whole, on two lines, or elided (returned in
// `elidedFrom`, for the view's tooltip).
QString fittedTitle(const QString& title, const QFont& font, qreal width, QString* elidedFrom) {
  if (title.isEmpty() || Qt::mightBeRichText(title)) return title;
  const QFontMetricsF fm(font);
  if (fm.horizontalAdvance(title) <= width) return title;
  const QString two = wrapped(title, fm, width, 2);
  if (!two.isEmpty()) return two;
  if (elidedFrom) *elidedFrom = title;
  return fm.elidedText(title, Qt::ElideRight, width);
}

bool fitBarLabels(QAbstractBarSeries* bars, const QRectF& plot) {
  if (!bars->isLabelsVisible() || bars->labelsPosition() == QAbstractBarSeries::LabelsOutsideEnd) return false;
  const bool horizontalBars = qobject_cast<QHorizontalBarSeries*>(bars) || qobject_cast<QHorizontalStackedBarSeries*>(bars) ||
                              qobject_cast<QHorizontalPercentBarSeries*>(bars);
  QValueAxis* values = nullptr;
  for (QAbstractAxis* a : bars->attachedAxes())
    if (auto* v = qobject_cast<QValueAxis*>(a)) values = v;
  if (!values || !(values->max() > values->min())) return false;
  const qreal along = horizontalBars ? plot.width() : plot.height();
  const qreal span = values->max() - values->min();
  int count = 0;
  for (QBarSet* set : bars->barSets()) count = std::max(count, static_cast<int>(set->count()));
  if (count == 0) return false;
  const qreal across = (horizontalBars ? plot.height() : plot.width()) / count * bars->barWidth();
  bool changed = false;
  for (QBarSet* set : bars->barSets()) {
    if (!set->property("hapLabelColour").isValid()) set->setProperty("hapLabelColour", set->labelColor());
    const QColor colour = set->property("hapLabelColour").value<QColor>();
    if (colour.alpha() == 0) continue;
    const QFontMetricsF fm(set->labelFont());
    bool fits = true;
    for (int i = 0; i < set->count() && fits; ++i) {
      const double v = set->at(i);
      if (!(v > 0)) continue;
      QString text = bars->labelsFormat();
      text.replace(QStringLiteral("@value"), QString::number(v, 'g', bars->labelsPrecision()));
      const qreal w = fm.horizontalAdvance(text) + 6, h = fm.height();
      const qreal length = v / span * along;
      fits = horizontalBars ? (length >= w && across >= h) : (length >= h && across >= w);
    }
    const QColor want = fits ? colour : QColor(Qt::transparent);
    if (set->labelColor() != want) {
      set->setLabelColor(want);
      changed = true;
    }
  }
  return changed;
}

bool fitLegend(QChart* chart, qreal width) {
  QLegend* legend = chart->legend();
  if (!legend->isVisible() || !legend->isAttachedToChart()) return false;
  if (!legend->property("hapAlignment").isValid() ||
      legend->property("hapFitAlignment").toInt() != static_cast<int>(legend->alignment())) {
    legend->setProperty("hapAlignment", static_cast<int>(legend->alignment()));
    legend->setProperty("hapFitAlignment", static_cast<int>(legend->alignment()));
  }
  const auto wanted = static_cast<Qt::Alignment>(legend->property("hapAlignment").toInt());
  if (wanted != Qt::AlignBottom && wanted != Qt::AlignTop) return false;
  const QFontMetricsF fm(legend->font());
  qreal row = 0;
  for (QLegendMarker* m : legend->markers())
    if (m->isVisible()) row += fm.horizontalAdvance(m->label()) + fm.height() + 24;
  const Qt::Alignment target = row <= width ? wanted : Qt::AlignRight;
  if (legend->alignment() == target) return false;
  legend->setProperty("hapFitAlignment", static_cast<int>(target));
  legend->setAlignment(target);
  return true;
}

// The view's minimum height: the chart around its plot, and a plot with room for what the
// vertical axes write (a left category axis's labels one above the other, three value labels, the
// axis title along it), at most kTallest: a short dock then takes the room from a table beside
// the chart, which scrolls, instead of the chart cutting its labels.
constexpr int kTallest = 260;

bool fitHeight(QChartView* view, const QRectF& plot) {
  QChart* chart = view->chart();
  if (!view->property("hapMinimumHeight").isValid()) view->setProperty("hapMinimumHeight", view->minimumHeight());
  const int floor = view->property("hapMinimumHeight").toInt();
  qreal plotNeed = 0, axisNeed = 0, across = 0;  // across: the horizontal axes' height
  for (QAbstractAxis* axis : chart->axes()) {
    if (!axis->isVisible() || axis->orientation() != Qt::Horizontal) continue;
    if (axis->labelsVisible()) across += QFontMetricsF(axis->labelsFont()).height() + 8;
    if (!axis->titleText().isEmpty()) across += QFontMetricsF(axis->titleFont()).height() + 4;
  }
  for (QAbstractAxis* axis : chart->axes()) {
    if (!axis->isVisible() || axis->orientation() != Qt::Vertical) continue;
    const QFontMetricsF labels(axis->labelsFont());
    if (auto* c = qobject_cast<QBarCategoryAxis*>(axis)) {
      int lines = 1;
      for (const QString& l : c->categories()) lines = std::max(lines, static_cast<int>(l.count(QStringLiteral("<br>"))) + 1);
      // Qt cuts a category label taller than the axis's height (the plot's and the horizontal
      // axes') over the categories plus one, less twice its label padding
      // (VerticalAxis::updateGeometry).
      qreal per = lines * labels.lineSpacing() + 10;
      // Labels past the bars' ends stand one above the other (labels inside a bar hide when the
      // bar is too thin: fitBarLabels).
      for (QAbstractSeries* series : chart->series())
        if (auto* bars = qobject_cast<QAbstractBarSeries*>(series);
            bars && bars->isLabelsVisible() && bars->labelsPosition() == QAbstractBarSeries::LabelsOutsideEnd)
          for (QBarSet* set : bars->barSets()) per = std::max(per, QFontMetricsF(set->labelFont()).height() + 4);
      axisNeed = std::max(axisNeed, (c->count() + 1) * per);
    } else if (axis->labelsVisible()) {
      plotNeed = std::max(plotNeed, 3 * labels.height() * 1.6);
    }
    // The title along the axis, on two lines if it has a space.
    const QString title = axis->property("hapTitle").toString();
    const QFontMetricsF fm(axis->titleFont());
    qreal along = fm.horizontalAdvance(title);
    for (qsizetype at = title.indexOf(QLatin1Char(' ')); at > 0; at = title.indexOf(QLatin1Char(' '), at + 1))
      along = std::min(along, std::max(fm.horizontalAdvance(title.left(at)), fm.horizontalAdvance(title.mid(at + 1))));
    if (!title.isEmpty()) plotNeed = std::max(plotNeed, along + 12);
  }
  plotNeed = std::max(plotNeed, axisNeed - across);
  const int need = std::clamp(static_cast<int>(std::ceil(view->height() - plot.height() + plotNeed)), floor, kTallest);
  if (plotNeed <= 0 || view->minimumHeight() == std::max(floor, need)) return false;
  view->setMinimumHeight(std::max(floor, need));
  return true;
}

// What a fit depends on; a paint that finds it changed fits again.
QString signature(QChartView* view) {
  QChart* chart = view->chart();
  QString s;
  {
    QDebug d(&s);  // writes into s when it goes out of scope
    d << view->size() << chart->plotArea() << chart->title() << chart->legend()->isVisible();
    for (QAbstractAxis* a : chart->axes()) {
      d << a << a->titleText() << a->isVisible();
      if (auto* v = qobject_cast<QValueAxis*>(a)) d << v->min() << v->max() << v->labelFormat();
      if (auto* c = qobject_cast<QBarCategoryAxis*>(a)) d << c->categories();
    }
    for (QAbstractSeries* series : chart->series()) {
      d << series;
      if (auto* bars = qobject_cast<QAbstractBarSeries*>(series))
        for (QBarSet* set : bars->barSets()) d << set << set->count();
    }
    for (QLegendMarker* m : chart->legend()->markers()) d << m->label() << m->isVisible();
  }
  return s;
}

class ChartFitter : public QObject {
 public:
  explicit ChartFitter(QChartView* view) : QObject(view), m_view(view) {
    setObjectName(QStringLiteral("chartFitter"));
    view->installEventFilter(this);
    view->viewport()->installEventFilter(this);
  }

  bool eventFilter(QObject*, QEvent* e) override {
    if (e->type() == QEvent::Resize) m_passes = 0;
    if ((e->type() == QEvent::Paint || e->type() == QEvent::Resize) && !m_pending && signature(m_view) != m_signature) {
      m_pending = true;
      QTimer::singleShot(0, this, [this] {
        m_pending = false;
        // A fit that keeps changing (a layout that answers each change with another) stops after
        // a few passes until the view's size changes.
        if (m_passes < 8 && fitChartNow(m_view))
          ++m_passes;
        else if (m_passes < 8)
          m_passes = 0;
        m_signature = signature(m_view);
      });
    }
    return false;
  }

 private:
  QChartView* m_view;
  QString m_signature;
  bool m_pending = false;
  int m_passes = 0;
};

}  // namespace

void fitChartView(QChartView* view) {
  if (view->findChild<QObject*>(QStringLiteral("chartFitter"), Qt::FindDirectChildrenOnly)) return;
  new ChartFitter(view);
}

bool fitChartNow(QChartView* view) {
  QChart* chart = view->chart();
  if (!chart) return false;
  const QRectF plot = chart->plotArea();
  if (plot.width() < 4 || plot.height() < 4) return false;
  const qreal chartWidth = chart->size().width();
  bool changed = false;
  QStringList elided;

  QString from;
  const QString title = original(chart, "hapTitle", "hapFitTitle", chart->title());
  const QString t = fittedTitle(title, chart->titleFont(), chartWidth - chart->margins().left() - chart->margins().right() - 16, &from);
  if (!from.isEmpty()) elided << from;
  if (t != chart->title()) {
    chart->setProperty("hapFitTitle", t);
    chart->setTitle(t);
    changed = true;
  }

  for (QAbstractAxis* axis : chart->axes()) {
    if (!axis->isVisible()) continue;
    const bool horizontal = axis->orientation() == Qt::Horizontal;
    const qreal length = horizontal ? plot.width() : plot.height();
    if (auto* v = qobject_cast<QValueAxis*>(axis)) changed |= fitValueAxis(v, length, horizontal);
    if (auto* c = qobject_cast<QBarCategoryAxis*>(axis)) changed |= fitCategoryAxis(c, plot, chartWidth, horizontal);
    QString axisFrom;
    const QString text = original(axis, "hapTitle", "hapFitTitle", axis->titleText());
    const QString fitted = fittedTitle(text, axis->titleFont(), length - 8, &axisFrom);
    if (!axisFrom.isEmpty()) elided << axisFrom;
    if (fitted != axis->titleText()) {
      axis->setProperty("hapFitTitle", fitted);
      axis->setTitleText(fitted);
      changed = true;
    }
  }
  for (QAbstractSeries* series : chart->series())
    if (auto* bars = qobject_cast<QAbstractBarSeries*>(series)) changed |= fitBarLabels(bars, plot);
  changed |= fitHeight(view, plot);
  changed |= fitLegend(chart, chartWidth - chart->margins().left() - chart->margins().right() - 8);

  // The whole of what had to be elided, on hover (a tooltip the view set itself stays).
  const QString tip = elided.join(QLatin1Char('\n'));
  if (view->toolTip() == view->property("hapFitToolTip").toString() && view->toolTip() != tip) {
    view->setToolTip(tip);
    view->setProperty("hapFitToolTip", tip);
  }
  return changed;
}

void setAxisRange(QValueAxis* axis, double lo, double hi) {
  if (axis->tickType() == QValueAxis::TicksDynamic && axis->tickInterval() > 0 && hi - lo > 50 * axis->tickInterval())
    axis->setTickInterval((hi - lo) / 10);
  axis->setRange(lo, hi);
}

}  // namespace hap::studio
