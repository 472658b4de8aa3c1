// Test helper: what a window shows that does not fit the space it is drawn in. Walks the visible
// widgets under a root and returns one line per misfit:
// - a header section narrower than its text (elided exactly as QHeaderView::paintSection elides:
//   the style's header label rectangle against the text's width);
// - a chart text (axis label, axis or chart title, legend entry, bar label) that Qt Charts cut
//   ("...") or that was elided without the whole in the chart view's tooltip, two chart texts
//   drawn over each other, or one past the chart's edge;
// - a one-line plain QLabel narrower than its text.
// Views behind another tab or dock tab are not visible and are not checked: show each in turn.
#pragma once

#include <QAbstractItemModel>
#include <QAbstractScrollArea>
#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QGraphicsScene>
#include <QGraphicsTextItem>
#include <QHeaderView>
#include <QLabel>
#include <QRegularExpression>
#include <QStyle>
#include <QStyleOptionHeader>
#include <QTextDocument>
#include <QWidget>

namespace hap::studio::testing {

// "MainWindow/dock.ratios/ratiosChart": the object names from the window down to `w`.
inline QString widgetPath(const QObject* w) {
  QStringList names;
  for (const QObject* o = w; o; o = o->parent())
    if (!o->objectName().isEmpty() && !o->objectName().startsWith(QLatin1String("qt_"))) names.prepend(o->objectName());
  return names.join(QLatin1Char('/')) + QStringLiteral(" (") + QString::fromLatin1(w->metaObject()->className()) +
         QLatin1Char(')');
}

// On screen: visible, and not behind another tab (a scroll area's viewport covers the area itself).
inline bool shown(const QWidget* w) {
  if (auto* area = qobject_cast<const QAbstractScrollArea*>(w)) w = area->viewport();
  return w->isVisible() && !w->visibleRegion().isEmpty();
}

inline QStringList headerMisfits(const QWidget* root) {
  QStringList out;
  for (QHeaderView* h : root->findChildren<QHeaderView*>()) {
    if (!shown(h) || !h->model()) continue;
    const QAbstractItemModel* m = h->model();
    for (int section = 0; section < h->count(); ++section) {
      const int size = h->sectionSize(section);
      if (h->isSectionHidden(section) || size <= 0) continue;
      // Only sections at least partly on screen.
      const int at = h->sectionViewportPosition(section);
      const int extent = h->orientation() == Qt::Horizontal ? h->viewport()->width() : h->viewport()->height();
      if (at >= extent || at + size <= 0) continue;
      const QString text = m->headerData(section, h->orientation(), Qt::DisplayRole).toString();
      if (text.isEmpty()) continue;
      const QVariant fontData = m->headerData(section, h->orientation(), Qt::FontRole);
      const QFont font = fontData.isValid() ? qvariant_cast<QFont>(fontData) : h->font();
      QStyleOptionHeader opt;
      opt.initFrom(h);
      opt.fontMetrics = QFontMetrics(font);
      opt.rect = h->orientation() == Qt::Horizontal ? QRect(0, 0, size, h->height()) : QRect(0, 0, h->width(), size);
      opt.section = section;
      opt.orientation = h->orientation();
      opt.text = text;
      opt.textAlignment = Qt::Alignment(m->headerData(section, h->orientation(), Qt::TextAlignmentRole).toInt());
      if (h->isSortIndicatorShown() && h->sortIndicatorSection() == section)
        opt.sortIndicator = h->sortIndicatorOrder() == Qt::AscendingOrder ? QStyleOptionHeader::SortDown
                                                                           : QStyleOptionHeader::SortUp;
      const QRect label = h->style()->subElementRect(QStyle::SE_HeaderLabel, &opt, h);
      // Elided (QHeaderView's textElideMode) or, without elision, clipped at both ends.
      for (const QString& line : text.split(QLatin1Char('\n'))) {
        if (opt.fontMetrics.horizontalAdvance(line) > label.width()) {
          out << QStringLiteral("%1: header \"%2\" does not fit (%3 px of %4)")
                     .arg(widgetPath(h), line)
                     .arg(label.width())
                     .arg(opt.fontMetrics.horizontalAdvance(line));
          break;
        }
      }
    }
  }
  return out;
}

inline QStringList chartMisfits(const QWidget* root) {
  QStringList out;
  for (QChartView* v : root->findChildren<QChartView*>()) {
    if (!shown(v) || !v->chart() || !v->scene()) continue;
    struct Text {
      QString text;
      QRectF rect;
    };
    std::vector<Text> texts;
    const QRectF chartRect = v->chart()->sceneBoundingRect();
    for (QGraphicsItem* item : v->scene()->items()) {
      auto* t = dynamic_cast<QGraphicsTextItem*>(item);
      if (!t || !t->isVisible() || t->effectiveOpacity() <= 0 || t->defaultTextColor().alpha() == 0) continue;
      const QString text = t->toPlainText();
      if (text.trimmed().isEmpty()) continue;
      // Qt Charts cuts with "..."; a fit elides with "…" and puts the whole text in the tooltip.
      const qsizetype cut = text.indexOf(QChar(0x2026));
      if (text.contains(QLatin1String("...")) ||
          (cut >= 0 && (cut == 0 || !v->toolTip().contains(text.left(cut))))) {
        out << QStringLiteral("%1: \"%2\" elided").arg(widgetPath(v), text);
        continue;
      }
      // The glyphs' box: less the document's margin, and the line's leading above and below.
      const qreal margin = t->document()->documentMargin();
      const QRectF r = t->sceneBoundingRect().adjusted(margin + 1, margin + 3, -margin - 1, -margin - 3);
      if (!chartRect.adjusted(-1, -1, 1, 1).contains(r))
        out << QStringLiteral("%1: \"%2\" cut by the chart's edge").arg(widgetPath(v), text);
      texts.push_back({text, r});
    }
    for (size_t i = 0; i < texts.size(); ++i)
      for (size_t j = i + 1; j < texts.size(); ++j) {
        const QRectF both = texts[i].rect.intersected(texts[j].rect);
        if (both.width() > 2 && both.height() > 2)
          out << QStringLiteral("%1: \"%2\" overlaps \"%3\"").arg(widgetPath(v), texts[i].text, texts[j].text);
      }
  }
  return out;
}

inline QStringList labelMisfits(const QWidget* root) {
  QStringList out;
  for (QLabel* l : root->findChildren<QLabel*>()) {
    if (!shown(l) || l->wordWrap() || l->text().isEmpty() || l->text().contains(QLatin1Char('\n'))) continue;
    if (l->textFormat() == Qt::RichText || (l->textFormat() == Qt::AutoText && Qt::mightBeRichText(l->text())))
      continue;
    QString text = l->text();  // as drawn: a mnemonic's & underlines the next letter
    text.replace(QRegularExpression(QStringLiteral("&(.)")), QStringLiteral("\\1"));
    const int need = l->fontMetrics().horizontalAdvance(text);
    if (need > l->contentsRect().width() + 1)
      out << QStringLiteral("%1: label \"%2\" cut (%3 px of %4)").arg(widgetPath(l), l->text()).arg(l->contentsRect().width()).arg(need);
  }
  return out;
}

inline QStringList misfits(const QWidget* root) { return headerMisfits(root) + chartMisfits(root) + labelMisfits(root); }

}  // namespace hap::studio::testing
