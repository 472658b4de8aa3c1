#include "app/studio/core/graph/graph_search.h"

#include <QRegularExpression>

#include <optional>

namespace hap::studio {

SearchResult findInGraph(const ir::Graph& g, const SearchOptions& options) {
  SearchResult result;
  if (options.text.isEmpty()) return result;

  const Qt::CaseSensitivity cs = options.matchCase ? Qt::CaseSensitive : Qt::CaseInsensitive;
  QRegularExpression re;
  if (options.regex) {
    re.setPattern(options.text);
    if (!options.matchCase) re.setPatternOptions(QRegularExpression::CaseInsensitiveOption);
    if (!re.isValid()) {
      result.error = QObject::tr("Invalid regular expression: %1 (at offset %2)")
                         .arg(re.errorString())
                         .arg(re.patternErrorOffset());
      return result;
    }
    re.optimize();
  }
  auto matches = [&](const QString& s) {
    return options.regex ? re.match(s).hasMatch() : s.contains(options.text, cs);
  };

  // A node matches by its op first, then by its scope.
  auto matchNode = [&](const ir::Node& n) -> std::optional<SearchMatch> {
    if (options.fields & SearchOptions::OpField) {
      QString op = QString::fromStdString(n.op);
      QString shortOp = op.startsWith(QLatin1String("aten::")) ? op.mid(6) : QString();
      if (matches(op) || (!shortOp.isEmpty() && matches(shortOp)))
        return SearchMatch{Selection::node(n.id), SearchOptions::OpField, op};
    }
    if (options.fields & SearchOptions::ScopeField) {
      QString scope = QString::fromStdString(n.scope);
      if (!scope.isEmpty() && matches(scope))
        return SearchMatch{Selection::node(n.id), SearchOptions::ScopeField, scope};
    }
    return std::nullopt;
  };

  std::vector<bool> listed(g.values.size(), false);
  auto tryValue = [&](ir::ValueId id) {
    if (listed[static_cast<size_t>(id)]) return;
    listed[static_cast<size_t>(id)] = true;
    if (!(options.fields & SearchOptions::ValueNameField)) return;
    QString name = QString::fromStdString(g.value(id).name);
    if (matches(name))
      result.matches.push_back({Selection::value(id), SearchOptions::ValueNameField, name});
  };

  for (const ir::Node& n : g.nodes) {
    for (ir::ValueId in : n.tensorInputs())
      if (g.value(in).kind != ir::ValueKind::Activation) tryValue(in);

    if (std::optional<SearchMatch> m = matchNode(n)) result.matches.push_back(std::move(*m));
    for (ir::ValueId out : n.outputs) tryValue(out);
  }
  for (const ir::Value& v : g.values) tryValue(v.id);
  return result;
}

void GraphSearch::setGraph(std::shared_ptr<const ir::Graph> graph) {
  m_graph = std::move(graph);
  run();
}

bool GraphSearch::setOptions(const SearchOptions& options) {
  m_options = options;
  run();
  return m_result.ok();
}

void GraphSearch::run() {
  m_current = -1;
  m_result = m_graph ? findInGraph(*m_graph, m_options) : SearchResult{};
}

const SearchMatch* GraphSearch::next() {
  if (m_result.matches.empty()) return nullptr;
  m_current = (m_current + 1) % count();
  return &m_result.matches[static_cast<size_t>(m_current)];
}

const SearchMatch* GraphSearch::previous() {
  if (m_result.matches.empty()) return nullptr;
  m_current = m_current <= 0 ? count() - 1 : m_current - 1;
  return &m_result.matches[static_cast<size_t>(m_current)];
}

}  // namespace hap::studio
