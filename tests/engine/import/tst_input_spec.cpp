// Input specifications: hap/inputs.json and --input parsing, with their documented messages.
#include <QtTest>

#include "engine/base/error.h"
#include "engine/import/input_spec.h"

using namespace hap;

namespace {

QString specError(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputSpecError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TstInputSpec : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void parsesInputArg() {
    import::InputSpec s = import::parseInputArg("x=64x3x32x32:float32");
    QCOMPARE(QString::fromStdString(s.name), QString("x"));
    QCOMPARE(s.shape, (ir::Shape{64, 3, 32, 32}));
    QCOMPARE(s.dtype, ir::DType::Float32);
    QVERIFY(s.dtypeGiven);

    import::InputSpec noDtype = import::parseInputArg("tokens=8x128");
    QVERIFY(!noDtype.dtypeGiven);
    QCOMPARE(noDtype.shape, (ir::Shape{8, 128}));

    import::InputSpec scalar = import::parseInputArg("lr=:float64");
    QVERIFY(scalar.shape.empty());
    QCOMPARE(scalar.dtype, ir::DType::Float64);
    QCOMPARE(import::parseInputArg("y=4:long").dtype, ir::DType::Int64);  // alias

    import::InputSpec labels = import::parseInputArg("y=8:int64:0..10");  // a half-open range
    QCOMPARE(labels.shape, (ir::Shape{8}));
    QCOMPARE(*labels.low, int64_t{0});
    QCOMPARE(*labels.high, int64_t{10});
    QCOMPARE(*import::parseInputArg("t=2x3:int32:-5..5").low, int64_t{-5});
  }

  void malformedInputArg_data() {
    QTest::addColumn<QString>("arg");
    QTest::addColumn<QString>("message");
    QTest::newRow("no =") << "x64x3" << "--input 'x64x3': expected NAME=DIMxDIMx...[:DTYPE[:LOW..HIGH]], e.g. x=64x3x32x32:float32";
    QTest::newRow("no name") << "=4x4" << "--input '=4x4': expected NAME=DIMxDIMx...[:DTYPE[:LOW..HIGH]], e.g. x=64x3x32x32:float32";
    QTest::newRow("bad dim") << "x=64xAx3" << "--input 'x=64xAx3': dimension 'A' is not a non-negative integer";
    QTest::newRow("negative") << "x=-1x3" << "--input 'x=-1x3': dimension '-1' is not a non-negative integer";
    QTest::newRow("trailing x") << "x=4x" << "--input 'x=4x': dimension '' is not a non-negative integer";
    QTest::newRow("empty range") << "y=4:int64:3..3" << "--input 'y=4:int64:3..3': range '3..3' is not LOW..HIGH with integers LOW < HIGH (the half-open range of valid values, e.g. y=64:int64:0..10)";
    QTest::newRow("bad range") << "y=4:int64:0-9" << "--input 'y=4:int64:0-9': range '0-9' is not LOW..HIGH with integers LOW < HIGH (the half-open range of valid values, e.g. y=64:int64:0..10)";
    QTest::newRow("float range") << "x=4:float32:0..1" << "--input 'x=4:float32:0..1': a range applies to integer inputs only, not float32";
    QTest::newRow("bad dtype") << "x=4:complex" << "--input 'x=4:complex': unknown dtype 'complex' (expected one of float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool)";
    // Shapes that cannot be made: refused before anything allocates (issue 32).
    QTest::newRow("count overflow") << "x=4294967296x4294967296"
                                    << "--input 'x=4294967296x4294967296': shape [4294967296, 4294967296] has more "
                                       "elements than HAP can count (2^63); check the dimensions (at most 1.00 TiB per input)";
    QTest::newRow("over the byte limit") << "x=65536x65536x65536:float32"
                                         << "--input 'x=65536x65536x65536:float32': shape [65536, 65536, 65536] is 1.00 "
                                            "PiB as float32, more than HAP accepts for one input (1.00 TiB); check the dimensions";
    // Without a dtype, at one byte per element (the importer checks again at the file's dtype).
    QTest::newRow("byte limit, no dtype") << "x=1099511627777"
                                          << "--input 'x=1099511627777': shape [1099511627777] is 1.00 TiB as uint8, more "
                                             "than HAP accepts for one input (1.00 TiB); check the dimensions";
    QTest::newRow("zeros still counted") << "x=4294967296x4294967296x0"
                                         << "--input 'x=4294967296x4294967296x0': shape [4294967296, 4294967296, 0] has "
                                            "more elements than HAP can count (2^63); check the dimensions (at most 1.00 TiB per input)";
    QTest::newRow("too many dimensions") << "x=" + QStringList(65, "1").join('x') + ":float32"
                                         << "--input 'x=" + QStringList(65, "1").join('x') +
                                                ":float32': 65 dimensions; HAP accepts at most 64 per input";
  }
  void malformedInputArg() {
    QFETCH(QString, arg);
    QFETCH(QString, message);
    QCOMPARE(specError([&] { import::parseInputArg(arg.toStdString()); }), message);
  }

  void parsesInputsJson() {
    import::ModelSpec m = import::parseInputsJson(
        R"({"format":"hap-inputs","version":1,
            "inputs":[{"name":"x","shape":[2,3],"dtype":"int64","low":0,"high":9},
                      {"name":"w","shape":[],"dtype":"float16"}],
            "model":{"name":"m","parameters":5}})",
        "f.pt:hap/inputs.json");
    QCOMPARE(m.inputs.size(), size_t{2});
    QCOMPARE(m.inputs[0].shape, (ir::Shape{2, 3}));
    QCOMPARE(*m.inputs[0].low, int64_t{0});
    QCOMPARE(*m.inputs[0].high, int64_t{9});
    QVERIFY(!m.inputs[1].low);
    QCOMPARE(m.inputs[1].dtype, ir::DType::Float16);
    QVERIFY(QString::fromStdString(m.modelInfo).contains("\"parameters\":5"));
  }

  void malformedInputsJson_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("message");
    QTest::newRow("not json") << "{" << "f: not valid JSON";
    QTest::newRow("format") << R"({"format":"x","version":1,"inputs":[]})" << "f: field 'format' must be \"hap-inputs\"";
    QTest::newRow("version") << R"({"format":"hap-inputs","version":2,"inputs":[]})" << "f: field 'version' must be 1";
    QTest::newRow("shape") << R"({"format":"hap-inputs","version":1,"inputs":[{"name":"x","shape":[2,-1],"dtype":"int64"}]})"
                           << "f: field 'inputs[0].shape' must be an array of non-negative integers";
    QTest::newRow("dtype") << R"({"format":"hap-inputs","version":1,"inputs":[{"name":"x","shape":[2],"dtype":"cplx"}]})"
                           << "f: field 'inputs[0].dtype': unknown dtype 'cplx'";
    QTest::newRow("range") << R"({"format":"hap-inputs","version":1,"inputs":[{"name":"x","shape":[2],"dtype":"int64","low":5,"high":5}]})"
                           << "f: field 'inputs[0]': low must be less than high";
    // Wrong JSON types are the same input errors as wrong values, never nlohmann's type_error.
    QTest::newRow("format not a string") << R"({"format":1,"version":1,"inputs":[]})"
                                         << "f: field 'format' must be \"hap-inputs\"";
    QTest::newRow("version not a number") << R"({"format":"hap-inputs","version":"1","inputs":[]})"
                                          << "f: field 'version' must be 1";
    QTest::newRow("shape too large") << R"({"format":"hap-inputs","version":1,"inputs":[{"name":"x","shape":[4294967296,4294967296],"dtype":"int64"}]})"
                                     << "f: field 'inputs[0].shape': shape [4294967296, 4294967296] has more elements";
  }
  void malformedInputsJson() {
    QFETCH(QString, text);
    QFETCH(QString, message);
    QString got = specError([&] { import::parseInputsJson(text.toStdString(), "f"); });
    QVERIFY2(got.startsWith(message), qPrintable(got));
  }

  void overridesReplaceAndAppend() {
    std::vector<import::InputSpec> specs = {
        {"x", {4, 16}, ir::DType::Int64, true, 0, 100},
        {"y", {4}, ir::DType::Int64, true, 0, 10},
    };
    import::applyOverrides(specs, {import::parseInputArg("x=8x16"), import::parseInputArg("y=8:int32"),
                               import::parseInputArg("z=3")});
    QCOMPARE(specs.size(), size_t{3});
    QCOMPARE(specs[0].shape, (ir::Shape{8, 16}));
    QCOMPARE(specs[0].dtype, ir::DType::Int64);  // kept: no dtype given
    QCOMPARE(*specs[0].high, int64_t{100});
    QCOMPARE(specs[1].dtype, ir::DType::Int32);  // replaced
    QVERIFY(!specs[1].high);
    QCOMPARE(specs[2].dtype, ir::DType::Float32);  // new name: float32 by default
  }
};

QTEST_GUILESS_MAIN(TstInputSpec)
#include "tst_input_spec.moc"
