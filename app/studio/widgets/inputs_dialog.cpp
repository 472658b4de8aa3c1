#include "app/studio/widgets/inputs_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace hap::studio {
namespace {

enum Column { Name, Type, Shape, DType, Range, ColumnCount };

}  // namespace

InputsDialog::InputsDialog(const QString& modelPath, const std::vector<import::ForwardArgument>& arguments,
                           const std::vector<import::InputSpec>& given, QWidget* parent)
    : QDialog(parent) {
  setWindowTitle(tr("Input shapes — %1").arg(QFileInfo(modelPath).fileName()));
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(
      tr("<b>%1</b> does not say what <code>forward</code> takes (it has no <code>hap/inputs.json</code>). "
         "Give each argument's shape and dtype, as <code>hap plan --input</code> takes them: dimensions "
         "separated by <code>x</code> (<code>8x3x224x224</code>); for integer inputs such as token ids or "
         "labels, the range of valid values (<code>0..1000</code>).")
          .arg(QFileInfo(modelPath).fileName()),
      this);
  intro->setWordWrap(true);
  layout->addWidget(intro);

  m_table = new QTableWidget(static_cast<int>(arguments.size()), ColumnCount, this);
  m_table->setHorizontalHeaderLabels({tr("Argument"), tr("Type"), tr("Shape"), tr("Dtype"), tr("Values in")});
  m_table->verticalHeader()->hide();
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  // What the file or the command line already says for each argument.
  const std::vector<InputRow> rows = inputRows(arguments, given);
  for (int r = 0; r < m_table->rowCount(); ++r) {
    const InputRow& row = rows[static_cast<size_t>(r)];
    auto* name = new QTableWidgetItem(row.name);
    name->setFlags(Qt::ItemIsEnabled);
    auto* type = new QTableWidgetItem(row.type);
    type->setFlags(Qt::ItemIsEnabled);
    m_table->setItem(r, Name, name);
    m_table->setItem(r, Type, type);
    m_table->setItem(r, Shape, new QTableWidgetItem(row.shape));
    m_table->setItem(r, Range, new QTableWidgetItem(row.range));
    auto* dtype = new QComboBox(m_table);
    dtype->addItems(inputDtypeNames());
    dtype->setCurrentText(row.dtype);
    m_table->setCellWidget(r, DType, dtype);
  }
  layout->addWidget(m_table);

  m_error = new QLabel(this);
  m_error->setObjectName(QStringLiteral("inputsError"));
  m_error->setStyleSheet(QStringLiteral("color: #b3261e;"));
  m_error->setWordWrap(true);
  m_error->hide();
  layout->addWidget(m_error);

  m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  m_buttons->button(QDialogButtonBox::Ok)->setText(tr("Import"));
  connect(m_buttons, &QDialogButtonBox::accepted, this, &InputsDialog::accept);
  connect(m_buttons, &QDialogButtonBox::rejected, this, &InputsDialog::reject);
  layout->addWidget(m_buttons);
  resize(640, 160 + 30 * m_table->rowCount());
}

void InputsDialog::setRow(const QString& name, const QString& shape, const QString& dtype, const QString& range) {
  for (int r = 0; r < m_table->rowCount(); ++r) {
    if (m_table->item(r, Name)->text() != name) continue;
    m_table->item(r, Shape)->setText(shape);
    if (!dtype.isEmpty()) static_cast<QComboBox*>(m_table->cellWidget(r, DType))->setCurrentText(dtype);
    m_table->item(r, Range)->setText(range);
  }
}

QString InputsDialog::validate() {
  std::vector<InputRow> rows;
  for (int r = 0; r < m_table->rowCount(); ++r) {
    InputRow row;
    row.name = m_table->item(r, Name)->text();
    row.type = m_table->item(r, Type)->text();
    row.shape = m_table->item(r, Shape)->text();
    row.dtype = static_cast<QComboBox*>(m_table->cellWidget(r, DType))->currentText();
    row.range = m_table->item(r, Range)->text();
    rows.push_back(std::move(row));
  }
  ParsedInputs parsed = parseInputRows(rows);
  if (!parsed.ok()) return parsed.error;
  m_inputs = std::move(parsed.inputs);
  return {};
}

void InputsDialog::accept() {
  const QString error = validate();
  if (!error.isEmpty()) {
    m_error->setText(error);
    m_error->show();
    return;
  }
  QDialog::accept();
}

}  // namespace hap::studio
