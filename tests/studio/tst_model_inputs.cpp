// The shapes of forward's arguments as the app asks for them (model_inputs.h): rows filled from the
// file's specification and from what the user gave before, read back with the CLI's --input
// parser (its rules and its messages), and hap-studio's own --input arguments.
#include <QtTest>

#include "app/studio/core/documents/model_inputs.h"

using namespace hap;
using namespace hap::studio;

class TestModelInputs : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void rowsShowWhatIsKnown() {
    import::InputSpec ids{"ids", {4, 16}, ir::DType::Int64, true, 0, 1000};
    import::ForwardArgument x{"x", "Tensor", std::nullopt};
    import::ForwardArgument y{"ids", "Tensor", ids};
    import::ForwardArgument n{"n", "int", std::nullopt};
    import::InputSpec given{"x", {8, 3, 32, 32}, ir::DType::Float16, true, std::nullopt, std::nullopt};
    const std::vector<InputRow> rows = inputRows({x, y, n}, {given});
    QCOMPARE(rows.size(), size_t(3));
    QCOMPARE(rows[0].name, QStringLiteral("x"));
    QCOMPARE(rows[0].shape, QStringLiteral("8x3x32x32"));  // what the user gave
    QCOMPARE(rows[0].dtype, QStringLiteral("float16"));
    QCOMPARE(rows[0].range, QString());
    QCOMPARE(rows[1].shape, QStringLiteral("4x16"));  // the file's
    QCOMPARE(rows[1].dtype, QStringLiteral("int64"));
    QCOMPARE(rows[1].range, QStringLiteral("0..1000"));
    QCOMPARE(rows[2].type, QStringLiteral("int"));
    QVERIFY(!rows[2].isTensor());
    QCOMPARE(rows[2].shape, QString());
    QCOMPARE(rows[2].dtype, QStringLiteral("float32"));  // the first offered
    QCOMPARE(inputDtypeNames().front(), QStringLiteral("float32"));
    QVERIFY(inputDtypeNames().contains(QStringLiteral("bfloat16")));

    // Read back: the same specifications; the non-tensor argument without a shape is left out.
    const ParsedInputs parsed = parseInputRows(rows);
    QVERIFY2(parsed.ok(), qPrintable(parsed.error));
    QCOMPARE(parsed.inputs.size(), size_t(2));
    QCOMPARE(parsed.inputs[0].name, std::string("x"));
    QCOMPARE(parsed.inputs[0].shape, given.shape);
    QCOMPARE(parsed.inputs[0].dtype, ir::DType::Float16);
    QCOMPARE(parsed.inputs[1].shape, ids.shape);
    QCOMPARE(parsed.inputs[1].low, ids.low);
    QCOMPARE(parsed.inputs[1].high, ids.high);
  }

  void refusalsAreTheClis() {
    std::vector<InputRow> rows(1);
    rows[0] = {QStringLiteral("x"), QStringLiteral("Tensor"), QStringLiteral(" 4xz "),
               QStringLiteral("float32"), {}};
    ParsedInputs parsed = parseInputRows(rows);
    QVERIFY(!parsed.ok());
    QVERIFY(parsed.inputs.empty());
    QVERIFY2(parsed.error.startsWith(QStringLiteral("--input 'x=4xz:float32'")), qPrintable(parsed.error));
    QVERIFY2(parsed.error.contains(QStringLiteral("dimension")), qPrintable(parsed.error));
    // A tensor without a shape is given as a 0-dim tensor, as the CLI reads "x=:float32".
    rows[0].shape.clear();
    parsed = parseInputRows(rows);
    QVERIFY2(parsed.ok(), qPrintable(parsed.error));
    QVERIFY(parsed.inputs[0].shape.empty());
    // A range on a float input.
    rows[0].shape = QStringLiteral("4");
    rows[0].range = QStringLiteral("0..10");
    parsed = parseInputRows(rows);
    QVERIFY2(parsed.error.contains(QStringLiteral("integer inputs only")), qPrintable(parsed.error));
  }

  void commandLine() {
    ParsedInputs parsed = parseInputArgs({QStringLiteral("x=4x8:float32"), QStringLiteral("y=4:int64:0..4")});
    QVERIFY2(parsed.ok(), qPrintable(parsed.error));
    QCOMPARE(parsed.inputs.size(), size_t(2));
    QCOMPARE(parsed.inputs[1].high, std::optional<int64_t>(4));
    parsed = parseInputArgs({QStringLiteral("x=4x8"), QStringLiteral("bad")});
    QVERIFY(!parsed.ok());
    QVERIFY(parsed.inputs.empty());
    QVERIFY2(parsed.error.startsWith(QStringLiteral("--input 'bad'")), qPrintable(parsed.error));
    QVERIFY(parseInputArgs({}).ok());
  }
};

QTEST_GUILESS_MAIN(TestModelInputs)
#include "tst_model_inputs.moc"
