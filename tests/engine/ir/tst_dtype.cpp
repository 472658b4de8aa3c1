// Tests of the dtype table: canonical names, aliases, sizes and rejection of unknown names.
#include <QtTest>

#include <string>

#include "engine/ir/dtype.h"

using namespace hap::ir;

namespace {

constexpr DType kAll[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                          DType::Int64,   DType::Int32,   DType::Int16,   DType::Int8,
                          DType::UInt8,   DType::Bool};

}  // namespace

class TestDType : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void namesRoundTrip() {
    for (DType t : kAll) {
      std::string_view name = dtypeName(t);
      QVERIFY(!name.empty());
      std::optional<DType> parsed = parseDType(name);
      QVERIFY2(parsed.has_value(), std::string(name).c_str());
      QCOMPARE(*parsed, t);
      QVERIFY2(dtypeNames().find(name) != std::string_view::npos, std::string(name).c_str());
    }
    QCOMPARE(dtypeName(DType::Float32), std::string_view("float32"));
    QCOMPARE(dtypeName(DType::BFloat16), std::string_view("bfloat16"));
    QCOMPARE(dtypeName(DType::UInt8), std::string_view("uint8"));
    QCOMPARE(dtypeName(DType::Bool), std::string_view("bool"));
  }

  void aliases() {
    QCOMPARE(parseDType("float"), std::optional(DType::Float32));
    QCOMPARE(parseDType("double"), std::optional(DType::Float64));
    QCOMPARE(parseDType("half"), std::optional(DType::Float16));
    QCOMPARE(parseDType("long"), std::optional(DType::Int64));
    QCOMPARE(parseDType("int"), std::optional(DType::Int32));
  }

  void sizes() {
    QCOMPARE(dtypeSize(DType::Float32), int64_t{4});
    QCOMPARE(dtypeSize(DType::Float64), int64_t{8});
    QCOMPARE(dtypeSize(DType::Float16), int64_t{2});
    QCOMPARE(dtypeSize(DType::BFloat16), int64_t{2});
    QCOMPARE(dtypeSize(DType::Int64), int64_t{8});
    QCOMPARE(dtypeSize(DType::Int32), int64_t{4});
    QCOMPARE(dtypeSize(DType::Int16), int64_t{2});
    QCOMPARE(dtypeSize(DType::Int8), int64_t{1});
    QCOMPARE(dtypeSize(DType::UInt8), int64_t{1});
    QCOMPARE(dtypeSize(DType::Bool), int64_t{1});
  }

  void floating() {
    for (DType t : kAll) {
      bool expected =
          t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
      QCOMPARE(isFloating(t), expected);
    }
  }

  void unknownNames() {
    for (const char* name :
         {"", "float8", "complex64", "torch.float32", "int64 ", "float32x", "tensor"})
      QVERIFY2(!parseDType(name).has_value(), name);
  }
};

QTEST_GUILESS_MAIN(TestDType)
#include "tst_dtype.moc"
