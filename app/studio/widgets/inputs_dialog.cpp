#include "app/studio/widgets/inputs_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include "engine/base/error.h"
#include "engine/import/input_spec.h"
#include "engine/ir/dtype.h"

namespace hap::studio {
namespace {

enum Column { Name, Type, Shape, DType, Range, ColumnCount };

QString shapeText(const ir::Shape& s) {
  QStringList parts;
  for (int64_t d : s) parts << QString::number(d);
  return parts.join('x');
}

const char* const kDtypes[] = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"};

}  // namespace

InputsDialog::InputsDialog(const QString& modelPath, const std::vector<import::ForwardArgument>& arguments,
                           const std::vector<import::InputSpec>& given, QWidget* parent)
    : QDialog(parent), m_arguments(arguments) {
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
  for (int r = 0; r < m_table->rowCount(); ++r) {
    const import::ForwardArgument& a = arguments[static_cast<size_t>(r)];
    auto* name = new QTableWidgetItem(QString::fromStdString(a.name));
    name->setFlags(Qt::ItemIsEnabled);
    auto* type = new QTableWidgetItem(QString::fromStdString(a.type));
    type->setFlags(Qt::ItemIsEnabled);
    m_table->setItem(r, Name, name);
    m_table->setItem(r, Type, type);
    m_table->setItem(r, Shape, new QTableWidgetItem);
    m_table->setItem(r, Range, new QTableWidgetItem);
    auto* dtype = new QComboBox(m_table);
    for (const char* d : kDtypes) dtype->addItem(QString::fromLatin1(d));
    m_table->setCellWidget(r, DType, dtype);
    // What the file or the command line already says for this argument.
    std::optional<import::InputSpec> known = a.spec;
    for (const import::InputSpec& s : given)
      if (s.name == a.name) known = s;
    if (known) {
      m_table->item(r, Shape)->setText(shapeText(known->shape));
      dtype->setCurrentText(QString::fromStdString(std::string(ir::dtypeName(known->dtype))));
      if (known->low && known->high)
        m_table->item(r, Range)->setText(QStringLiteral("%1..%2").arg(*known->low).arg(*known->high));
    }
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
  std::vector<import::InputSpec> specs;
  for (int r = 0; r < m_table->rowCount(); ++r) {
    const QString name = m_table->item(r, Name)->text();
    const QString shape = m_table->item(r, Shape)->text().trimmed();
    const QString dtype = static_cast<QComboBox*>(m_table->cellWidget(r, DType))->currentText();
    const QString range = m_table->item(r, Range)->text().trimmed();
    if (shape.isEmpty() && !m_arguments[static_cast<size_t>(r)].type.starts_with("Tensor"))
      continue;  // a non-tensor argument: the importer says what it needs
    QString arg = QStringLiteral("%1=%2:%3").arg(name, shape, dtype);
    if (!range.isEmpty()) arg += QStringLiteral(":") + range;
    try {
      specs.push_back(import::parseInputArg(arg.toStdString()));
    } catch (const Error& e) {
      return QString::fromStdString(e.what());
    }
  }
  m_inputs = std::move(specs);
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
