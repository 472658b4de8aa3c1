// SummaryModel: the `hap inspect` table as a model, its rows the scope tree's levels (issue 31:
// Sequential children one level down, a wrapper module descended through); numbers equal
// ir::summarize's full-scope rows summed per row, numeric sorting through the proxy with the totals
// row kept last.
#include <QAbstractItemModelTester>
#include <QFont>
#include <QtTest>

#include <algorithm>
#include <map>
#include <memory>

#include "app/studio/core/graph/scope_tree.h"
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

// What the rows at `depth` must hold for a model without a wrapper: ir::summarize's rows for
// depth 0 and -1; else its full-scope rows summed per scope of the tree `depth` levels down.
ir::GraphSummary expectedSummary(const ir::Graph& g, int depth) {
  if (depth <= 0) return ir::summarize(g, depth);
  const studio::ScopeTree tree(g);
  ir::GraphSummary full = ir::summarize(g, -1), out = full;
  out.scopes.clear();
  std::map<studio::ScopeId, size_t> rowOf;
  for (const ir::ScopeSummary& r : full.scopes) {
    studio::ScopeId s = tree.find(r.scope);
    while (tree.scope(s).depth > depth) s = tree.scope(s).parent;
    auto [it, inserted] = rowOf.try_emplace(s, out.scopes.size());
    if (inserted) {
      out.scopes.emplace_back();
      out.scopes.back().scope = tree.scope(s).path;
    }
    ir::ScopeSummary& row = out.scopes[it->second];
    row.parameters += r.parameters;
    row.parameterBytes += r.parameterBytes;
    row.flops += r.flops;
    row.activationBytes += r.activationBytes;
    row.nodes += r.nodes;
    for (const auto& [op, n] : r.opCounts) row.opCounts[op] += n;
  }
  return out;
}

QStringList rowScopes(const SummaryModel& model) {
  QStringList out;
  for (int row = 0; row < model.totalRow(); ++row)
    out << cell(model, row, 0, SummaryModel::ScopePathRole).toString();
  return out;
}

ir::ValueId addOp(ir::Graph& g, const std::string& op, const std::string& scope, ir::ValueId in,
                  double flops = 10) {
  ir::Node n;
  n.op = op;
  n.scope = scope;
  n.args.push_back(ir::Arg{"in", "Tensor", ir::Arg::Kind::Tensor, {in}, {}, {}});
  n.cost.flops = flops;
  n.outputs = {g.addValue(ir::ValueKind::Activation, "v" + std::to_string(g.values.size()), {4},
                          ir::DType::Float32)};
  g.addNode(std::move(n));
  return g.nodes.back().outputs[0];
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

    const ir::GraphSummary expected = expectedSummary(*m_bert, depth);
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
      model.setDepth(depth);
      return rowScopes(model);
    };
    QCOMPARE(rows(max), rows(-1));
    QVERIFY(rows(max - 1) != rows(-1));
    // Depth 1 is the top level's modules, the ModuleList `layers` one row; depth 2 its blocks.
    QCOMPARE(rows(1), (QStringList{"tokens", "positions", "", "norm", "dropout", "layers",
                                   "head"}));
    QVERIFY(rows(2).contains(QStringLiteral("layers.0")));
    QCOMPARE(model.wrapperPath(), QString());
  }

  // A model wrapped in one module, its blocks nn.Sequential (a U-Net as users write it): depth 1
  // lists the wrapper's modules, each Sequential one row, not the single row `m`.
  void descendsThroughAWrapper() {
    auto g = std::make_shared<ir::Graph>();
    ir::ValueId v = g->addValue(ir::ValueKind::Input, "x", {4}, ir::DType::Float32);
    g->inputs.push_back(v);
    for (const char* block : {"d1", "mid", "u1"})
      for (const char* i : {"0", "1", "2"})
        v = addOp(*g, "aten::relu", std::string("m.") + block + "." + i, v);
    v = addOp(*g, "aten::cat", "m", v);
    ir::ValueId w = g->addValue(ir::ValueKind::Parameter, "m.d1.0.weight", {8}, ir::DType::Float32);
    g->parameters.push_back(w);
    addOp(*g, "aten::cross_entropy_loss", "loss", v, 1);
    SummaryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setGraph(g);
    QCOMPARE(model.wrapperPath(), QStringLiteral("m"));
    model.setDepth(1);
    QCOMPARE(rowScopes(model), (QStringList{"m.d1", "m.mid", "m.u1", "m", "loss"}));
    QCOMPARE(cell(model, 0, SummaryModel::OpsColumn, SummaryModel::SortRole).toInt(), 3);
    QCOMPARE(cell(model, 0, SummaryModel::ParametersColumn, SummaryModel::SortRole).toLongLong(),
             qint64{8});
    QCOMPARE(cell(model, 3, SummaryModel::OpsColumn, SummaryModel::SortRole).toInt(), 1);  // cat
    QCOMPARE(model.maxDepth(), 2);
    model.setDepth(2);
    QCOMPARE(rowScopes(model).size(), 9 + 2);
    QCOMPARE(rowScopes(model).front(), QStringLiteral("m.d1.0"));
    model.setDepth(0);
    QCOMPARE(rowScopes(model), QStringList{""});
    QCOMPARE(cell(model, model.totalRow(), SummaryModel::OpsColumn, SummaryModel::SortRole).toInt(),
             11);
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
