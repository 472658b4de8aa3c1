// Test helpers for views and models: a cell's data, and a picture of a widget for a person to look
// at (HAP_SHOTS_DIR, by default /tmp/shots).
#pragma once

#include <QAbstractItemModel>
#include <QDir>
#include <QWidget>
#include <QtTest>

#include <cmath>
#include <cstdint>

#include "engine/ir/summary.h"

namespace hap::studio::testing {

inline QVariant cell(const QAbstractItemModel& m, int row, int column, int role = Qt::DisplayRole) {
  return m.data(m.index(row, column), role);
}

// Bytes as the engine writes them (ir::formatBytes), for expected cells.
inline QString bytes(double b) {
  return QString::fromStdString(ir::formatBytes(static_cast<int64_t>(std::llround(b))));
}

inline void saveShot(QWidget& w, const QString& name) {
  const QString dir = qEnvironmentVariable("HAP_SHOTS_DIR", QStringLiteral("/tmp/shots"));
  QDir().mkpath(dir);
  // Charts lay out on posted events and delete replaced axes' items later.
  QTest::qWait(50);
  QVERIFY(w.grab().save(dir + QLatin1Char('/') + name + QStringLiteral(".png")));
}

}  // namespace hap::studio::testing
