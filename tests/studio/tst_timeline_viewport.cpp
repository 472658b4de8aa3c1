// The stages view's time navigation on its own: zoom about an anchor, pan, fit, zoom to a range,
// the clamps at both ends and at the deepest zoom, pixel conversion and the ruler's ticks; the
// app's formatting of times, sizes and counts (units.h).
#include <QtTest>

#include <cmath>

#include "app/studio/core/display/timeline_viewport.h"
#include "app/studio/core/display/units.h"

using hap::studio::TimelineViewport;
using hap::studio::formatDuration;

class TestTimelineViewport : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void totalAndFit() {
    TimelineViewport v;
    QCOMPARE(v.span(), 0.0);
    v.zoomIn(0);  // no-op without a total
    QCOMPARE(v.end(), 0.0);
    v.setTotal(4e-3);
    QCOMPARE(v.start(), 0.0);
    QCOMPARE(v.end(), 4e-3);
    QVERIFY(v.isFit());
    v.setTotal(-1);
    QCOMPARE(v.total(), 0.0);
    v.setTotal(std::nan(""));
    QCOMPARE(v.total(), 0.0);
  }

  void zoomKeepsTheAnchorInPlace() {
    TimelineViewport v;
    v.setTotal(10);
    const double width = 1000;
    const double anchor = 2.5;
    const double xBefore = v.timeToX(anchor, width);
    v.zoomIn(anchor);
    QCOMPARE(v.span(), 10 / TimelineViewport::kZoomFactor);
    QVERIFY(std::abs(v.timeToX(anchor, width) - xBefore) < 1e-9);
    QVERIFY(!v.isFit());
    v.zoomIn(anchor);
    QVERIFY(std::abs(v.span() - 10 / std::pow(TimelineViewport::kZoomFactor, 2)) < 1e-12);
    QVERIFY(std::abs(v.timeToX(anchor, width) - xBefore) < 1e-9);
    // Out again about the same anchor returns to the whole iteration.
    v.zoomOut(anchor);
    v.zoomOut(anchor);
    QVERIFY(std::abs(v.span() - 10) < 1e-12);
    QVERIFY(v.isFit());
    // Zooming out of the whole iteration stays there.
    v.zoomOut(7);
    QCOMPARE(v.start(), 0.0);
    QCOMPARE(v.end(), 10.0);
  }

  void zoomAnchorNearAnEnd() {
    TimelineViewport v;
    v.setTotal(10);
    v.zoom(4, 10);  // about the end: [7.5, 10)
    QVERIFY(std::abs(v.start() - 7.5) < 1e-12);
    QCOMPARE(v.end(), 10.0);
    v.zoom(0.5, 0);  // anchor left of the window: its left edge, then shifted back inside
    QVERIFY(std::abs(v.span() - 5) < 1e-12);
    QVERIFY(std::abs(v.start() - 5) < 1e-12);
    QCOMPARE(v.end(), 10.0);
    v.zoom(0, 5);  // invalid factors do nothing
    v.zoom(-2, 5);
    QVERIFY(std::abs(v.span() - 5) < 1e-12);
  }

  void deepestZoom() {
    TimelineViewport v;
    v.setTotal(1);
    for (int i = 0; i < 200; ++i) v.zoomIn(0.5);
    QVERIFY(std::abs(v.span() - TimelineViewport::kMinSpanSeconds) < 1e-15);
    QVERIFY(v.start() < 0.5 && v.end() > 0.5);
    // A total shorter than the deepest zoom cannot be zoomed.
    v.setTotal(5e-8);
    v.zoomIn(1e-8);
    QCOMPARE(v.span(), 5e-8);
  }

  void panStopsAtTheEnds() {
    TimelineViewport v;
    v.setTotal(10);
    v.pan(1);  // the whole iteration cannot move
    QCOMPARE(v.start(), 0.0);
    v.zoom(5, 0);  // [0, 2)
    v.panBy(TimelineViewport::kPanFraction);
    QVERIFY(std::abs(v.start() - 0.4) < 1e-12);
    QVERIFY(std::abs(v.span() - 2) < 1e-12);
    v.panBy(-1);
    QCOMPARE(v.start(), 0.0);
    v.pan(100);
    QCOMPARE(v.end(), 10.0);
    QVERIFY(std::abs(v.start() - 8) < 1e-12);
    v.fit();
    QVERIFY(v.isFit());
  }

  void windowsAndRanges() {
    TimelineViewport v;
    v.setTotal(10);
    v.setWindow(6, 3);  // reversed
    QCOMPARE(v.start(), 3.0);
    QCOMPARE(v.end(), 6.0);
    v.setWindow(-2, 1);  // shifted inside, span kept
    QCOMPARE(v.start(), 0.0);
    QCOMPARE(v.end(), 3.0);
    v.setWindow(4, 4);  // too short: the deepest zoom about its middle
    QVERIFY(std::abs(v.span() - TimelineViewport::kMinSpanSeconds) < 1e-15);
    QVERIFY(std::abs(v.centre() - 4) < 1e-12);
    v.zoomToRange(2, 4, 0.1);
    QVERIFY(std::abs(v.start() - 1.8) < 1e-12);
    QVERIFY(std::abs(v.end() - 4.2) < 1e-12);
    v.zoomToRange(0, 10);  // margin clamped away by the ends
    QVERIFY(v.isFit());
  }

  void ensureVisible() {
    TimelineViewport v;
    v.setTotal(10);
    v.setWindow(0, 2);
    v.ensureVisible(0.5, 1.5);  // already shown
    QCOMPARE(v.start(), 0.0);
    v.ensureVisible(6, 7);  // centred on it
    QVERIFY(std::abs(v.centre() - 6.5) < 1e-12);
    QVERIFY(std::abs(v.span() - 2) < 1e-12);
    v.ensureVisible(1, 5);  // longer than the span: from its start
    QVERIFY(std::abs(v.start() - 1) < 1e-12);
    v.ensureVisible(0, 8);  // the window lies inside it: stays
    QVERIFY(std::abs(v.start() - 1) < 1e-12);
    v.ensureVisible(9.5, 10);  // near the end: clamped
    QCOMPARE(v.end(), 10.0);
  }

  void pixels() {
    TimelineViewport v;
    v.setTotal(8);
    v.setWindow(2, 6);
    QCOMPARE(v.timeToX(2, 400), 0.0);
    QCOMPARE(v.timeToX(6, 400), 400.0);
    QCOMPARE(v.timeToX(3, 400), 100.0);
    QCOMPARE(v.xToTime(100, 400), 3.0);
    QCOMPARE(v.xToTime(0, 400), 2.0);
    for (double x : {0.0, 17.0, 333.3, 400.0}) QVERIFY(std::abs(v.timeToX(v.xToTime(x, 400), 400) - x) < 1e-9);
  }

  void tickSteps() {
    QCOMPARE(TimelineViewport::tickStep(10, 1000, 90), 1.0);       // 0.9 -> 1
    QCOMPARE(TimelineViewport::tickStep(10, 1000, 100), 1.0);      // exactly 1
    QVERIFY(std::abs(TimelineViewport::tickStep(4.12e-3, 800, 90) - 5e-4) < 1e-15);  // 4.6e-4 -> 5e-4
    QVERIFY(std::abs(TimelineViewport::tickStep(3e-6, 1000, 90) - 5e-7) < 1e-18);    // 2.7e-7 -> 5e-7
    QVERIFY(std::abs(TimelineViewport::tickStep(1, 1000, 150) - 0.2) < 1e-15);       // 0.15 -> 0.2
    QCOMPARE(TimelineViewport::tickStep(0, 1000, 90), 0.0);
  }

  void ticks() {
    TimelineViewport v;
    v.setTotal(4.12e-3);
    const auto ticks = v.ticks(800, 90);
    QCOMPARE(ticks.size(), size_t(9));  // 0, 0.5, ..., 4 ms
    QCOMPARE(ticks.front().label, QStringLiteral("0 ms"));
    QCOMPARE(ticks[1].label, QStringLiteral("0.5 ms"));
    QCOMPARE(ticks[2].label, QStringLiteral("1 ms"));
    QCOMPARE(ticks.back().label, QStringLiteral("4 ms"));
    for (size_t i = 1; i < ticks.size(); ++i) QVERIFY(v.timeToX(ticks[i].seconds, 800) - v.timeToX(ticks[i - 1].seconds, 800) >= 90);
    // Zoomed into microseconds.
    v.setWindow(1.0e-3, 1.0e-3 + 40e-6);
    const auto fine = v.ticks(800, 90);
    QVERIFY(!fine.empty());
    QCOMPARE(fine.front().label, QStringLiteral("1 ms"));
    QCOMPARE(fine[1].label, QStringLiteral("1.005 ms"));
    for (const auto& t : fine) QVERIFY(t.seconds >= v.start() - 1e-15 && t.seconds <= v.end() + 1e-15);
  }

  void formatting() {
    QCOMPARE(formatDuration(0), QStringLiteral("0 s"));
    QCOMPARE(formatDuration(1.234e-3), QStringLiteral("1.23 ms"));
    QCOMPARE(formatDuration(45.6e-6), QStringLiteral("45.6 \u00b5s"));
    QCOMPARE(formatDuration(2.5), QStringLiteral("2.5 s"));
    QCOMPARE(formatDuration(120e-3), QStringLiteral("120 ms"));
    QCOMPARE(formatDuration(999.96e-6), QStringLiteral("1 ms"));
    QCOMPARE(formatDuration(1.5e-9), QStringLiteral("1.5 ns"));
    QCOMPARE(TimelineViewport::formatTick(1.5e-3, 5e-4), QStringLiteral("1.5 ms"));
    QCOMPARE(TimelineViewport::formatTick(2e-3, 1e-3), QStringLiteral("2 ms"));
    QCOMPARE(TimelineViewport::formatTick(2.25, 0.05), QStringLiteral("2250 ms"));
    QCOMPARE(TimelineViewport::formatTick(2.5, 0.5), QStringLiteral("2.5 s"));
    QCOMPARE(TimelineViewport::formatTick(3, 1), QStringLiteral("3 s"));
    // One unit for the ruler: the window's while the step needs at most 3 decimals in it.
    QCOMPARE(TimelineViewport::formatTick(29.02e-3, 20e-6, 29.2e-3), QStringLiteral("29.02 ms"));
    QCOMPARE(TimelineViewport::formatTick(0.95, 0.05, 1.2), QStringLiteral("0.95 s"));
    QCOMPARE(TimelineViewport::formatTick(1.0005e-3, 5e-7, 1.001e-3), QStringLiteral("1000.5 \u00b5s"));
    // Sizes and counts as the engine prints them.
    QCOMPARE(hap::studio::formatBytes(1536), QStringLiteral("1.50 KiB"));
    QCOMPARE(hap::studio::formatBytes(1.5 * (1 << 30)), QStringLiteral("1.50 GiB"));
    QCOMPARE(hap::studio::formatCount(1234567), QStringLiteral("1.23M"));
    QCOMPARE(hap::studio::formatCount(12), QStringLiteral("12"));
  }
};

QTEST_MAIN(TestTimelineViewport)
#include "tst_timeline_viewport.moc"
