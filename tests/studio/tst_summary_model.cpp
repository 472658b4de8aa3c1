// SummaryModel: the `hap inspect` table as a model; numbers equal ir::summarize at every depth,
// numeric sorting through the proxy with the totals row kept last.
#include <QAbstractItemModelTester>
#include <QFont>
#include <QtTest>

#include <algorithm>
#include <memory>

#include "app/studio/core/models/summary_model.h"
#include "engine/import/importer.h"
#include "engine/ir/summary.h"
#include "tests/studio/view_helpers.h"

using namespace hap;
using hap::studio::SummaryModel;
using hap::studio::SummaryProxyModel;

using hap::studio::testing::cell;

namespace {

std::shared_ptr<const ir::Graph> loadZoo(const char* file) {
  const QByteArray dir = qgetenv("HAP_ZOO_DIR");
  return std::make_shared<const ir::Graph>(import::importModel(dir.toStdString() + "/" + file));
}

}  // namespace

class TestSummaryModel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { m_bert = loadZoo("bert-tiny.pt"); }

  void emptyWithoutGraph() {
    SummaryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), int(SummaryModel::ColumnCount));
    QCOMPARE(model.totalRow(), -1);
    model.setDepth(-1);
    QCOMPARE(model.rowCount(), 0);
  }

  void matchesSummarize_data() {
    QTest::addColumn<int>("depth");
    QTest::newRow("depth 0") << 0;
    QTest::newRow("depth 1") << 1;
    QTest::newRow("depth 2") << 2;
    QTest::newRow("full") << -1;
  }

  void matchesSummarize() {
    QFETCH(int, depth);
    SummaryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setGraph(m_bert);
    model.setDepth(depth);
    QCOMPARE(model.depth(), depth);

    const ir::GraphSummary expected = ir::summarize(*m_bert, depth);
    QCOMPARE(model.rowCount(), int(expected.scopes.size()) + 1);
    QCOMPARE(model.totalRow(), int(expected.scopes.size()));
    for (int row = 0; row <= int(expected.scopes.size()); ++row) {
      const bool total = row == model.totalRow();
      const ir::ScopeSummary& s = total ? expected.total : expected.scopes[size_t(row)];
      QCOMPARE(cell(model, row, SummaryModel::ParametersColumn, SummaryModel::SortRole).toLongLong(),
               s.parameters);
      QCOMPARE(cell(model, row, SummaryModel::ParameterBytesColumn, SummaryModel::SortRole)
                   .toLongLong(),
               s.parameterBytes);
      QCOMPARE(cell(model, row, SummaryModel::FlopsColumn, SummaryModel::SortRole).toDouble(),
               s.flops);
      QCOMPARE(cell(model, row, SummaryModel::ActivationsColumn, SummaryModel::SortRole)
                   .toLongLong(),
               s.activationBytes);
      QCOMPARE(cell(model, row, SummaryModel::OpsColumn, SummaryModel::SortRole).toInt(), s.nodes);
      QCOMPARE(cell(model, row, SummaryModel::FlopsColumn).toString(),
               QString::fromStdString(ir::formatCount(s.flops)));
      QCOMPARE(cell(model, row, SummaryModel::ParameterBytesColumn).toString(),
               QString::fromStdString(ir::formatBytes(s.parameterBytes)));
      QCOMPARE(cell(model, row, 0, SummaryModel::IsTotalRole).toBool(), total);
      QCOMPARE(qvariant_cast<QFont>(cell(model, row, 0, Qt::FontRole)).bold(), total);
      if (total) {
        QCOMPARE(cell(model, row, SummaryModel::ScopeColumn).toString(), QStringLiteral("total"));
        QVERIFY(cell(model, row, 0, SummaryModel::ScopePathRole).isNull());
      } else {
        QCOMPARE(cell(model, row, 0, SummaryModel::ScopePathRole).toString(),
                 QString::fromStdString(s.scope));
        QCOMPARE(cell(model, row, SummaryModel::ScopeColumn).toString(),
                 s.scope.empty() ? QStringLiteral("(top)") : QString::fromStdString(s.scope));
      }
    }
    // The top-ops column reads as `hap inspect` prints it.
    QCOMPARE(cell(model, model.totalRow(), SummaryModel::TopOpsColumn).toString(),
             QStringLiteral("linear×13 transpose×10 add×7 dropout×7 …"));
  }

  void maxDepthIsFullDepth() {
    SummaryModel model;
    model.setGraph(m_bert);
    const int max = model.maxDepth();
    QVERIFY(max > 1);
    const auto rows = [&](int depth) {
      QStringList out;
      for (const ir::ScopeSummary& s : ir::summarize(*m_bert, depth).scopes)
        out << QString::fromStdString(s.scope);
      return out;
    };
    QCOMPARE(rows(max), rows(-1));
    QVERIFY(rows(max - 1) != rows(-1));
  }

  void sortsNumericallyWithTotalLast() {
    SummaryModel model;
    model.setGraph(m_bert);
    model.setDepth(2);
    SummaryProxyModel proxy;
    QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy.setSourceModel(&model);
    const int n = proxy.rowCount();
    QCOMPARE(n, model.rowCount());

    // Unsorted: source order.
    for (int row = 0; row < n; ++row)
      QCOMPARE(proxy.mapToSource(proxy.index(row, 0)).row(), row);

    for (Qt::SortOrder order : {Qt::DescendingOrder, Qt::AscendingOrder}) {
      proxy.sort(SummaryModel::FlopsColumn, order);
      QVERIFY(proxy.data(proxy.index(n - 1, 0), SummaryModel::IsTotalRole).toBool());
      std::vector<double> flops;
      QStringList shown;
      for (int row = 0; row < n - 1; ++row) {
        flops.push_back(proxy.data(proxy.index(row, SummaryModel::FlopsColumn), SummaryModel::SortRole)
                            .toDouble());
        shown << proxy.data(proxy.index(row, SummaryModel::FlopsColumn)).toString();
      }
      std::vector<double> sorted = flops;
      if (order == Qt::AscendingOrder)
        std::sort(sorted.begin(), sorted.end());
      else
        std::sort(sorted.begin(), sorted.end(), std::greater<>());
      QCOMPARE(flops, sorted);
      // The displayed strings would sort differently ("682K" < "7.x" lexically): the order above
      // is numeric, not textual.
      QStringList textual = shown;
      std::sort(textual.begin(), textual.end());
      if (order == Qt::DescendingOrder) std::reverse(textual.begin(), textual.end());
      QVERIFY(textual != shown);
    }

    proxy.sort(SummaryModel::ScopeColumn, Qt::DescendingOrder);
    QVERIFY(proxy.data(proxy.index(n - 1, 0), SummaryModel::IsTotalRole).toBool());
    proxy.sort(SummaryModel::ScopeColumn, Qt::AscendingOrder);
    QVERIFY(proxy.data(proxy.index(n - 1, 0), SummaryModel::IsTotalRole).toBool());

    // A depth change resets the model; the proxy stays sorted with the total last.
    proxy.sort(SummaryModel::ParametersColumn, Qt::DescendingOrder);
    model.setDepth(1);
    QCOMPARE(proxy.rowCount(), model.rowCount());
    QVERIFY(proxy.data(proxy.index(proxy.rowCount() - 1, 0), SummaryModel::IsTotalRole).toBool());
    QVERIFY(proxy.data(proxy.index(0, SummaryModel::ParametersColumn), SummaryModel::SortRole)
                .toLongLong() >=
            proxy.data(proxy.index(1, SummaryModel::ParametersColumn), SummaryModel::SortRole)
                .toLongLong());
  }

 private:
  std::shared_ptr<const ir::Graph> m_bert;
};

QTEST_MAIN(TestSummaryModel)
#include "tst_summary_model.moc"
