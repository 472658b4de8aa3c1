#include "app/studio/core/models/explain_model.h"

#include <QColor>
#include <QFont>
#include <QFontDatabase>

#include "engine/plan/explain.h"
#include "engine/rules/relation.h"

namespace hap::studio {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString ms(double seconds) { return QString::number(seconds * 1e3, 'f', 3); }

// "linear" for "aten::linear", "reshard" for "hap::reshard".
QString shortOp(const std::string& op) {
  const size_t colon = op.find("::");
  return qs(colon == std::string::npos ? op : op.substr(colon + 2));
}

QString valueName(const ir::Graph& g, ir::ValueId v) {
  if (v < 0 || static_cast<size_t>(v) >= g.values.size()) return QStringLiteral("value %1").arg(v);
  return qs(g.value(v).name);
}

QString namedForm(const ir::Graph& g, const plan::Form& f) {
  return valueName(g, f.value) + QLatin1Char(' ') + ExplainModel::formatForm(f);
}

QString formList(const ir::Graph& g, const std::vector<plan::Form>& forms) {
  QStringList parts;
  for (const plan::Form& f : forms) parts << namedForm(g, f);
  return parts.join(QStringLiteral(", "));
}

bool isTimeColumn(int column) {
  return column == ExplainModel::ForwardColumn || column == ExplainModel::BackwardColumn ||
         column == ExplainModel::TotalColumn;
}

bool isNumberColumn(int column) {
  return isTimeColumn(column) || column == ExplainModel::StepColumn || column == ExplainModel::StageColumn;
}

}  // namespace

ExplainModel::ExplainModel(QObject* parent) : QAbstractTableModel(parent) {}

QString ExplainModel::formatForm(const plan::Form& form) {
  QString out = qs(rules::formatRel(form.rel));
  if (!form.lengths.empty()) {
    QStringList lengths;
    for (int64_t l : form.lengths) lengths << QString::number(l);
    out += QLatin1Char('[') + lengths.join(QLatin1Char(',')) + QLatin1Char(']');
  }
  return out;
}

void ExplainModel::setPlan(std::shared_ptr<const PlanDocument> plan) {
  beginResetModel();
  m_plan = std::move(plan);
  m_rows.clear();
  if (m_plan) {
    const plan::Plan& p = m_plan->p();
    const ir::Graph& g = *m_plan->planned;
    m_rows.resize(p.steps.size());
    // Plan::stages: the forward ones first, as formatExplain numbers them.
    int forward = 0;
    for (const plan::Stage& st : p.stages) {
      if (st.backward) continue;
      for (int i = std::max(0, st.firstStep); i < std::min<int>(st.endStep, static_cast<int>(m_rows.size())); ++i)
        m_rows[static_cast<size_t>(i)].stage = forward;
      ++forward;
    }
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const plan::PlanStep& s = p.steps[i];
      Row& r = m_rows[i];
      r.node = m_plan->stepNode(static_cast<int>(i));
      if (s.node >= 0 && static_cast<size_t>(s.node) < g.nodes.size()) {
        const ir::Node& n = g.node(s.node);
        r.op = shortOp(n.op);
        r.scope = qs(n.scope);
      }
      if (s.kind == plan::PlanStep::Kind::Compute) {
        r.what = qs(s.variant);
        r.forms = QStringLiteral("(%1) -> (%2)").arg(formList(g, s.inputs), formList(g, s.outputs));
      } else {
        r.what = qs(s.instruction);
        r.method = qs(s.method);
        QString shape;
        if (s.to.value >= 0 && static_cast<size_t>(s.to.value) < g.values.size())
          shape = QLatin1Char(' ') + qs(ir::formatShape(g.value(s.to.value).shape));
        r.forms = QStringLiteral("%1%2: %3 -> %4")
                      .arg(valueName(g, s.to.value), shape, formatForm(s.from), formatForm(s.to));
      }
      if (s.segment >= 0 && static_cast<size_t>(s.segment) < p.segments.size())
        r.segment = qs(p.segments[static_cast<size_t>(s.segment)].name);
    }
  }
  endResetModel();
}

ir::NodeId ExplainModel::node(int row) const {
  return row >= 0 && row < static_cast<int>(m_rows.size()) ? m_rows[static_cast<size_t>(row)].node : ir::kNone;
}

int ExplainModel::stage(int row) const {
  return row >= 0 && row < static_cast<int>(m_rows.size()) ? m_rows[static_cast<size_t>(row)].stage : -1;
}

int ExplainModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int ExplainModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ExplainModel::display(const Row& r, const plan::PlanStep& s, int column) const {
  switch (static_cast<Column>(column)) {
    case StepColumn: return QVariant();  // set by data(): the row
    case StageColumn: return r.stage < 0 ? QString() : QString::number(r.stage + 1);
    case KindColumn: return s.kind == plan::PlanStep::Kind::Compute ? tr("compute") : tr("convert");
    case OpColumn: return r.op;
    case ScopeColumn: return r.scope.isEmpty() ? tr("(top)") : r.scope;
    case VariantColumn: return r.what;
    case FormsColumn: return r.forms;
    case MethodColumn: return r.method;
    case SegmentColumn: return r.segment;
    case ForwardColumn: return ms(s.forwardSeconds);
    case BackwardColumn: return ms(s.backwardSeconds);
    case TotalColumn: return ms(s.seconds());
    case ColumnCount: break;
  }
  return {};
}

QVariant ExplainModel::raw(const Row& r, const plan::PlanStep& s, int index, int column) const {
  switch (static_cast<Column>(column)) {
    case StepColumn: return static_cast<double>(index);
    case StageColumn: return static_cast<double>(r.stage + 1);
    case ForwardColumn: return s.forwardSeconds;
    case BackwardColumn: return s.backwardSeconds;
    case TotalColumn: return s.seconds();
    case ScopeColumn: return r.scope;
    default: return display(r, s, column);
  }
}

QVariant ExplainModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const int row = index.row();
  const Row& r = m_rows[static_cast<size_t>(row)];
  const plan::PlanStep& s = m_plan->p().steps[static_cast<size_t>(row)];
  const int column = index.column();
  const bool compute = s.kind == plan::PlanStep::Kind::Compute;

  switch (role) {
    case Qt::DisplayRole:
      return column == StepColumn ? QVariant(QString::number(row)) : display(r, s, column);
    case SortRole:
      return raw(r, s, row, column);
    case NodeRole:
      return static_cast<int>(r.node);
    case StepRole:
      return row;
    case IsComputeRole:
      return compute;
    case SearchTextRole:
      return QStringList{r.op, r.scope, r.what, r.forms, r.segment}.join(QLatin1Char('\n'));
    case Qt::ToolTipRole:
      switch (static_cast<Column>(column)) {
        case ScopeColumn: return r.scope.isEmpty() ? tr("Top-level module") : r.scope;
        case FormsColumn:
          return compute ? tr("Inputs -> outputs, each value's form with every rank's length of a "
                              "sharded dimension:\n%1").arg(r.forms)
                         : tr("The value before -> after the conversion:\n%1").arg(r.forms);
        case VariantColumn:
          return compute ? tr("Rule variant %1").arg(r.what) : tr("Conversion %1").arg(r.what);
        case ForwardColumn:
        case BackwardColumn:
        case TotalColumn:
          if (compute)
            return tr("Slowest device, %1 s").arg(raw(r, s, row, column).toDouble(), 0, 'g', 6);
          return tr("Communication, %1 s; forward %2, backward %3")
              .arg(raw(r, s, row, column).toDouble(), 0, 'g', 6)
              .arg(s.forwardSync ? tr("synchronising") : tr("not synchronising"),
                   s.backwardSync ? tr("synchronising") : tr("not synchronising"));
        default: break;
      }
      break;
    case Qt::TextAlignmentRole:
      return QVariant::fromValue((isNumberColumn(column) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
    case Qt::FontRole:
      if (column == FormsColumn) return QFontDatabase::systemFont(QFontDatabase::FixedFont);
      break;
    case Qt::ForegroundRole:
      // Free steps' times and the top-level scope recede; collectives that cost time stand out.
      if (isTimeColumn(column) && raw(r, s, row, column).toDouble() == 0) return QColor(0x9a, 0x9a, 0x9a);
      if (column == ScopeColumn && r.scope.isEmpty()) return QColor(0x9a, 0x9a, 0x9a);
      if (column == VariantColumn && !compute && s.seconds() > 0) return QColor(0xa3, 0x4a, 0x00);
      break;
    default:
      break;
  }
  return {};
}

QVariant ExplainModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole) {
    switch (static_cast<Column>(section)) {
      case StepColumn: return tr("#");
      case StageColumn: return tr("Stage");
      case KindColumn: return tr("Kind");
      case OpColumn: return tr("Op");
      case ScopeColumn: return tr("Scope");
      case VariantColumn: return tr("Variant / collective");
      case FormsColumn: return tr("Forms");
      case MethodColumn: return tr("Method");
      case SegmentColumn: return tr("Segment");
      case ForwardColumn: return tr("Fwd (ms)");
      case BackwardColumn: return tr("Bwd (ms)");
      case TotalColumn: return tr("Total (ms)");
      case ColumnCount: break;
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (static_cast<Column>(section)) {
      case StepColumn: return tr("The step's position in the program");
      case StageColumn: return tr("The forward stage it runs in (backward mirrors them in reverse)");
      case KindColumn: return tr("A computation, or a conversion (collective, slice) preparing an input");
      case OpColumn: return tr("The node's op; for a conversion, the op of the node it prepares");
      case ScopeColumn: return tr("Module scope");
      case VariantColumn: return tr("Computation: the rule variant; conversion: the instruction");
      case FormsColumn: return tr("Inputs -> outputs (or before -> after) with every rank's length");
      case MethodColumn: return tr("How an uneven collective runs: padded or grouped");
      case SegmentColumn: return tr("The segment whose ratios shard it");
      case ForwardColumn: return tr("Predicted forward time of the slowest device, communication included");
      case BackwardColumn: return tr("Predicted backward time of the slowest device, communication included");
      case TotalColumn: return tr("Forward + backward");
      case ColumnCount: break;
    }
  }
  if (role == Qt::InitialSortOrderRole)
    return isTimeColumn(section) ? Qt::DescendingOrder : Qt::AscendingOrder;
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue((isNumberColumn(section) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
  return {};
}

QString explainText(const PlanDocument& plan) {
  try {
    return QString::fromStdString(plan::formatExplain(*plan.imported, *plan.plan));
  } catch (const std::exception& e) {
    return QObject::tr("Cannot explain this plan: %1").arg(QString::fromUtf8(e.what()));
  }
}

}  // namespace hap::studio
