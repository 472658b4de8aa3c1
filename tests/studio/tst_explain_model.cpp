// ExplainModel and ExplainFilterModel: the Explain view's program table on a real plan (bert-tiny
// on the heterogeneous a100-p100-4 cluster). Every row is the plan's step (stage, variant or
// instruction, forms with each rank's lengths, times); the filter narrows by text and kind; the
// proxy sorts by the raw times; the text beside the table is hap plan --explain's.
#include <QAbstractItemModelTester>
#include <QtTest>

#include <algorithm>
#include <memory>

#include "app/studio/core/models/explain_filter.h"
#include "app/studio/core/models/explain_model.h"
#include "engine/plan/explain.h"
#include "engine/rules/relation.h"
#include "tests/studio/plan_fixture.h"
#include "tests/studio/view_helpers.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::cell;

namespace {

// The form as the plan holds it, spelled out independently: "G(0)[3,3,2,0]".
QString expectedForm(const plan::Form& f) {
  QString s = QString::fromStdString(rules::formatRel(f.rel));
  if (f.lengths.empty()) return s;
  QStringList l;
  for (int64_t x : f.lengths) l << QString::number(x);
  return s + QStringLiteral("[") + l.join(QStringLiteral(",")) + QStringLiteral("]");
}

}  // namespace

class TestExplainModel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    m_plan = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml");
    QVERIFY(m_plan);
    QVERIFY(m_plan->p().steps.size() > 20);
  }

  void emptyWithoutPlan() {
    ExplainModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), int(ExplainModel::ColumnCount));
    model.setPlan(m_plan);
    QCOMPARE(model.rowCount(), int(m_plan->p().steps.size()));
    model.setPlan(nullptr);
    QCOMPARE(model.rowCount(), 0);
  }

  // The text beside the table is `hap plan --explain`'s.
  void text() {
    const QString text = explainText(*m_plan);
    QCOMPARE(text, QString::fromStdString(plan::formatExplain(*m_plan->imported, m_plan->p())));
    QVERIFY(!text.startsWith(QStringLiteral("Cannot explain")));
  }

  void rowsAreTheSteps() {
    ExplainModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setPlan(m_plan);
    const plan::Plan& p = m_plan->p();
    QCOMPARE(model.rowCount(), int(p.steps.size()));
    for (int i = 0; i < model.rowCount(); ++i) {
      const plan::PlanStep& s = p.steps[size_t(i)];
      const bool compute = s.kind == plan::PlanStep::Kind::Compute;
      QCOMPARE(cell(model, i, ExplainModel::StepColumn, ExplainModel::StepRole).toInt(), i);
      QCOMPARE(cell(model, i, ExplainModel::KindColumn).toString(), compute ? QStringLiteral("compute") : QStringLiteral("convert"));
      QCOMPARE(cell(model, i, 0, ExplainModel::IsComputeRole).toBool(), compute);
      QCOMPARE(cell(model, i, ExplainModel::VariantColumn).toString(),
               QString::fromStdString(compute ? s.variant : s.instruction));
      QCOMPARE(cell(model, i, ExplainModel::MethodColumn).toString(), QString::fromStdString(compute ? "" : s.method));
      QCOMPARE(cell(model, i, ExplainModel::SegmentColumn).toString(),
               QString::fromStdString(p.segments[size_t(s.segment)].name));
      QCOMPARE(cell(model, i, 0, ExplainModel::NodeRole).toInt(), m_plan->stepNode(i));
      QCOMPARE(model.node(i), m_plan->stepNode(i));
      // Raw times in seconds, displayed in ms.
      QCOMPARE(cell(model, i, ExplainModel::ForwardColumn, ExplainModel::SortRole).toDouble(), s.forwardSeconds);
      QCOMPARE(cell(model, i, ExplainModel::BackwardColumn, ExplainModel::SortRole).toDouble(), s.backwardSeconds);
      QCOMPARE(cell(model, i, ExplainModel::TotalColumn, ExplainModel::SortRole).toDouble(), s.seconds());
      QCOMPARE(cell(model, i, ExplainModel::TotalColumn).toString(), QString::number(s.seconds() * 1e3, 'f', 3));
      QCOMPARE(cell(model, i, ExplainModel::TotalColumn, ExplainModel::SortRole).typeId(), QMetaType::Double);
      // Forms: every input and output (or from and to) with its lengths.
      const QString forms = cell(model, i, ExplainModel::FormsColumn).toString();
      if (compute) {
        for (const plan::Form& f : s.inputs) QVERIFY2(forms.contains(expectedForm(f)), qPrintable(forms));
        for (const plan::Form& f : s.outputs) QVERIFY2(forms.contains(expectedForm(f)), qPrintable(forms));
        QVERIFY(forms.contains(QStringLiteral(") -> (")));
      } else {
        QVERIFY2(forms.endsWith(expectedForm(s.from) + QStringLiteral(" -> ") + expectedForm(s.to)), qPrintable(forms));
      }
      // The op is the planned node's without its namespace.
      const std::string& op = m_plan->planned->node(s.node).op;
      QCOMPARE(cell(model, i, ExplainModel::OpColumn).toString(), QString::fromStdString(op.substr(op.find("::") + 2)));
    }
  }

  void knownStep() {
    // A computation with a sharded input: its variant and forms are the plan's, lengths per rank.
    ExplainModel model;
    model.setPlan(m_plan);
    const plan::Plan& p = m_plan->p();
    int found = -1;
    const plan::Form* sharded = nullptr;
    for (size_t i = 0; i < p.steps.size() && found < 0; ++i)
      if (p.steps[i].kind == plan::PlanStep::Kind::Compute)
        for (const plan::Form& f : p.steps[i].inputs)
          if (found < 0 && rules::isGather(f.rel) && !f.lengths.empty()) found = int(i), sharded = &f;
    QVERIFY2(found >= 0, "no computation with a sharded input");
    const plan::PlanStep& s = p.steps[size_t(found)];
    QCOMPARE(sharded->lengths.size(), p.devices.size());
    QCOMPARE(cell(model, found, ExplainModel::VariantColumn).toString(), QString::fromStdString(s.variant));
    QString ins, outs;
    for (const plan::Form& f : s.inputs)
      ins += (ins.isEmpty() ? "" : ", ") + QString::fromStdString(m_plan->planned->value(f.value).name) + " " + expectedForm(f);
    for (const plan::Form& f : s.outputs)
      outs += (outs.isEmpty() ? "" : ", ") + QString::fromStdString(m_plan->planned->value(f.value).name) + " " + expectedForm(f);
    QCOMPARE(cell(model, found, ExplainModel::FormsColumn).toString(), "(" + ins + ") -> (" + outs + ")");
    QCOMPARE(ExplainModel::formatForm(s.inputs.front()), expectedForm(s.inputs.front()));
    plan::Form g{0, rules::gather(0), {3, 3, 2, 0}};
    QCOMPARE(ExplainModel::formatForm(g), QStringLiteral("G(0)[3,3,2,0]"));
    QCOMPARE(ExplainModel::formatForm(plan::Form{0, rules::kReduce, {}}), QStringLiteral("R"));
  }

  void stagesAreTheForwardStages() {
    ExplainModel model;
    model.setPlan(m_plan);
    const plan::Plan& p = m_plan->p();
    int forward = 0;
    for (const plan::Stage& st : p.stages) {
      if (st.backward) continue;
      ++forward;
      for (int i = st.firstStep; i < st.endStep; ++i) {
        QCOMPARE(cell(model, i, ExplainModel::StageColumn).toString(), QString::number(forward));
        QCOMPARE(cell(model, i, ExplainModel::StageColumn, ExplainModel::SortRole).toDouble(), double(forward));
        QCOMPARE(model.stage(i), forward - 1);
      }
    }
    QVERIFY(forward > 1);
    // Every step runs in some forward stage.
    for (int i = 0; i < model.rowCount(); ++i) QVERIFY(model.stage(i) >= 0);
  }

  void filterByText() {
    ExplainModel model;
    model.setPlan(m_plan);
    ExplainFilterModel proxy;
    QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy.setSourceModel(&model);
    QCOMPARE(proxy.rowCount(), model.rowCount());
    // Some conversion runs as a collective; filter by its instruction.
    const plan::Plan& p = m_plan->p();
    std::string instruction;
    for (const plan::PlanStep& s : p.steps)
      if (s.kind == plan::PlanStep::Kind::Convert && s.seconds() > 0) instruction = s.instruction;
    QVERIFY2(!instruction.empty(), "the plan has no collective");
    const QString text = QString::fromStdString(instruction);
    int expected = 0;
    for (const plan::PlanStep& s : p.steps) expected += s.kind == plan::PlanStep::Kind::Convert && s.instruction == instruction;
    proxy.setText(text.toUpper());  // ignores case
    QVERIFY(proxy.rowCount() >= expected);
    QVERIFY(proxy.rowCount() < model.rowCount());
    int withInstruction = 0;
    for (int r = 0; r < proxy.rowCount(); ++r) {
      QVERIFY(proxy.index(r, 0).data(ExplainModel::SearchTextRole).toString().contains(text, Qt::CaseInsensitive));
      withInstruction += proxy.index(r, ExplainModel::VariantColumn).data().toString() == text;
    }
    QCOMPARE(withInstruction, expected);
    // Kind: computations only drops every conversion, and a text none contains empties the table.
    proxy.setText(QString());
    proxy.setKind(ExplainFilterModel::Kind::Computations);
    int computations = 0;
    for (const plan::PlanStep& s : p.steps) computations += s.kind == plan::PlanStep::Kind::Compute;
    QCOMPARE(proxy.rowCount(), computations);
    proxy.setKind(ExplainFilterModel::Kind::Communication);
    QCOMPARE(proxy.rowCount(), int(p.steps.size()) - computations);
    proxy.setText(text);
    QCOMPARE(proxy.rowCount(), withInstruction);  // the rows with the instruction are conversions
    proxy.setText(QStringLiteral("no step has this text"));
    QCOMPARE(proxy.rowCount(), 0);
    // Scope and segment texts match too.
    proxy.setKind(ExplainFilterModel::Kind::All);
    proxy.setText(QString::fromStdString(p.segments.back().name));
    int inSegment = 0;
    for (const plan::PlanStep& s : p.steps) inSegment += s.segment == int(p.segments.size()) - 1;
    QVERIFY(proxy.rowCount() >= inSegment);
    QVERIFY(inSegment > 0);
  }

  void sortsByTime() {
    ExplainModel model;
    model.setPlan(m_plan);
    ExplainFilterModel proxy;
    proxy.setSourceModel(&model);
    proxy.sort(ExplainModel::TotalColumn, Qt::DescendingOrder);
    double most = 0;
    for (const plan::PlanStep& s : m_plan->p().steps) most = std::max(most, s.seconds());
    QVERIFY(most > 0);
    QCOMPARE(proxy.index(0, ExplainModel::TotalColumn).data(ExplainModel::SortRole).toDouble(), most);
    for (int r = 1; r < proxy.rowCount(); ++r)
      QVERIFY(proxy.index(r - 1, ExplainModel::TotalColumn).data(ExplainModel::SortRole).toDouble() >=
              proxy.index(r, ExplainModel::TotalColumn).data(ExplainModel::SortRole).toDouble());
    // Numerically, not as text: step 10 sorts after step 9.
    proxy.sort(ExplainModel::StepColumn, Qt::AscendingOrder);
    for (int r = 0; r < proxy.rowCount(); ++r) QCOMPARE(proxy.index(r, 0).data(ExplainModel::StepRole).toInt(), r);
  }

 private:
  std::shared_ptr<const PlanDocument> m_plan;
};

QTEST_MAIN(TestExplainModel)
#include "tst_explain_model.moc"
