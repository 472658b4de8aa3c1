// The shapes of forward's arguments as the app asks for them (the inputs dialog, hap-studio
// --input): each argument as editable text, and the text read back with the CLI's --input parser
// (import::parseInputArg), so that the rules and the messages are the CLI's.
#pragma once

#include <QString>
#include <QStringList>

#include <vector>

#include "app/studio/core/documents/model_document.h"

namespace hap::studio {

// One of forward's arguments, as text.
struct InputRow {
  QString name;   // forward's argument name
  QString type;   // its TorchScript type ("Tensor", "Optional[Tensor]", "int")
  QString shape;  // "8x3x224x224" ("" when unknown; "" also for a 0-dim tensor)
  QString dtype;  // "float32" (the first of inputDtypeNames() when unknown)
  QString range;  // "0..1000": an integer input's half-open range of values ("" when none)
  bool isTensor() const { return type.startsWith(QStringLiteral("Tensor")); }
};

// The dtypes an input may have, in the order the dialog offers them (float32 first).
QStringList inputDtypeNames();

// One row per argument, filled from what is known: the file's specification (ForwardArgument::
// spec), replaced by the one of the same name in `given` (what the user gave before).
std::vector<InputRow> inputRows(const std::vector<import::ForwardArgument>& arguments,
                                const std::vector<import::InputSpec>& given);

// The rows as --input arguments ("NAME=SHAPE:DTYPE[:RANGE]"), parsed. A row without a shape whose
// argument is not a tensor is left out (the importer says what it needs).
struct ParsedInputs {
  std::vector<import::InputSpec> inputs;
  QString error;  // the parser's message for the first row it refuses ("" when none)
  bool ok() const { return error.isEmpty(); }
};
ParsedInputs parseInputRows(const std::vector<InputRow>& rows);

// --input arguments as hap plan takes them (NAME=DIMxDIMx...[:DTYPE[:LOW..HIGH]]), parsed.
ParsedInputs parseInputArgs(const QStringList& args);

}  // namespace hap::studio
