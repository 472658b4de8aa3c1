#include "app/studio/core/documents/model_inputs.h"

#include "engine/base/error.h"
#include "engine/import/input_spec.h"
#include "engine/ir/dtype.h"

namespace hap::studio {
namespace {

QString shapeText(const ir::Shape& s) {
  QStringList parts;
  for (int64_t d : s) parts << QString::number(d);
  return parts.join('x');
}

}  // namespace

QStringList inputDtypeNames() {
  return {QStringLiteral("float32"), QStringLiteral("float64"), QStringLiteral("float16"),
          QStringLiteral("bfloat16"), QStringLiteral("int64"), QStringLiteral("int32"),
          QStringLiteral("int16"), QStringLiteral("int8"), QStringLiteral("uint8"),
          QStringLiteral("bool")};
}

std::vector<InputRow> inputRows(const std::vector<import::ForwardArgument>& arguments,
                                const std::vector<import::InputSpec>& given) {
  std::vector<InputRow> rows;
  rows.reserve(arguments.size());
  for (const import::ForwardArgument& a : arguments) {
    InputRow row;
    row.name = QString::fromStdString(a.name);
    row.type = QString::fromStdString(a.type);
    row.dtype = inputDtypeNames().front();
    std::optional<import::InputSpec> known = a.spec;
    for (const import::InputSpec& s : given)
      if (s.name == a.name) known = s;
    if (known) {
      row.shape = shapeText(known->shape);
      row.dtype = QString::fromStdString(std::string(ir::dtypeName(known->dtype)));
      if (known->low && known->high)
        row.range = QStringLiteral("%1..%2").arg(*known->low).arg(*known->high);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

ParsedInputs parseInputRows(const std::vector<InputRow>& rows) {
  QStringList args;
  for (const InputRow& row : rows) {
    const QString shape = row.shape.trimmed(), range = row.range.trimmed();
    if (shape.isEmpty() && !row.isTensor()) continue;
    QString arg = QStringLiteral("%1=%2:%3").arg(row.name, shape, row.dtype);
    if (!range.isEmpty()) arg += QStringLiteral(":") + range;
    args << arg;
  }
  return parseInputArgs(args);
}

ParsedInputs parseInputArgs(const QStringList& args) {
  ParsedInputs parsed;
  for (const QString& arg : args) {
    try {
      parsed.inputs.push_back(import::parseInputArg(arg.toStdString()));
    } catch (const Error& e) {
      return {{}, QString::fromStdString(e.what())};
    }
  }
  return parsed;
}

}  // namespace hap::studio
