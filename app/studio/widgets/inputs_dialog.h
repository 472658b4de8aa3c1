// Asks for the shapes and dtypes of forward's arguments when a model file does not give them
// (most users' own torch.jit.save files have no hap/inputs.json). One row per argument, named as
// forward names it; each row is checked with the CLI's --input parser, so the rules and the
// messages are the CLI's (core/documents/model_inputs.h fills the rows and parses them).
#pragma once

#include <QDialog>
#include <vector>

#include "app/studio/core/documents/model_inputs.h"

class QLabel;
class QTableWidget;
class QDialogButtonBox;

namespace hap::studio {

class InputsDialog : public QDialog {
  Q_OBJECT
 public:
  InputsDialog(const QString& modelPath, const std::vector<import::ForwardArgument>& arguments,
               const std::vector<import::InputSpec>& given, QWidget* parent = nullptr);

  // The specifications entered; valid after accept().
  std::vector<import::InputSpec> inputs() const { return m_inputs; }
  // Sets the row of `name` (tests, and --input values kept from the command line).
  void setRow(const QString& name, const QString& shape, const QString& dtype, const QString& range = {});
  // Validates every row; on success fills inputs() and returns "", else the first message.
  QString validate();

  void accept() override;

 private:
  QTableWidget* m_table = nullptr;
  QLabel* m_error = nullptr;
  QDialogButtonBox* m_buttons = nullptr;
  std::vector<import::InputSpec> m_inputs;
};

}  // namespace hap::studio
