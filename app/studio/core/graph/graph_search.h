// Find over a reference graph (issue 17, item 3: Ctrl+F by name, op or regular expression).
//
// Matches are nodes (by op name, or by their module scope) and values (by name: parameters by
// their qualified name, activations by their TorchScript debug name). They come in graph order:
// walking the nodes in execution order, each node's not yet listed non-activation inputs that
// match (parameters appear where they are first used), then the node, then its matching outputs;
// values no node uses come last, by id. Each node or value appears at most once.
#pragma once

#include <QFlags>
#include <QString>
#include <memory>
#include <vector>

#include "app/studio/core/documents/selection.h"
#include "engine/ir/graph.h"

namespace hap::studio {

struct SearchOptions {
  enum Field {
    OpField = 0x1,         // node op, with and without the "aten::" prefix ("aten::linear")
    ValueNameField = 0x2,  // value names ("encoder.fc1.weight", "input.1")
    ScopeField = 0x4,      // node module scopes ("encoder.layers.0.attn")
    AllFields = OpField | ValueNameField | ScopeField,
  };
  Q_DECLARE_FLAGS(Fields, Field)

  QString text;            // empty finds nothing
  bool regex = false;      // text is a QRegularExpression (unanchored: it may match a part)
  bool matchCase = false;  // otherwise case-insensitive
  Fields fields = AllFields;
};

struct SearchMatch {
  Selection target;  // a node or a value
  SearchOptions::Field field = SearchOptions::OpField;  // what matched (the first that did)
  QString matchedText;  // the whole text that matched: the op, the value name or the scope
};

struct SearchResult {
  std::vector<SearchMatch> matches;  // in graph order (see the file comment)
  QString error;                     // non-empty for an invalid regular expression
  bool ok() const { return error.isEmpty(); }
};

// Searches g. Never throws: an invalid regular expression gives an empty result with an error
// naming the problem and its offset.
SearchResult findInGraph(const ir::Graph& g, const SearchOptions& options);

// A search with a current match that steps forwards and backwards, wrapping around at either end
// (what the find bar drives).
class GraphSearch {
 public:
  void setGraph(std::shared_ptr<const ir::Graph> graph);  // re-runs the current search
  // Runs a search; returns false (and sets error()) for an invalid regular expression. The
  // current match is reset: next() then gives the first match, previous() the last.
  bool setOptions(const SearchOptions& options);
  const SearchOptions& options() const { return m_options; }

  const QString& error() const { return m_result.error; }
  const std::vector<SearchMatch>& matches() const { return m_result.matches; }
  int count() const { return static_cast<int>(m_result.matches.size()); }
  // Index of the current match in matches(), or -1 before the first step (or with no matches).
  int currentIndex() const { return m_current; }

  // Steps to the next or previous match, wrapping around; nullptr when there are no matches.
  const SearchMatch* next();
  const SearchMatch* previous();

 private:
  void run();

  std::shared_ptr<const ir::Graph> m_graph;
  SearchOptions m_options;
  SearchResult m_result;
  int m_current = -1;
};

}  // namespace hap::studio

Q_DECLARE_OPERATORS_FOR_FLAGS(hap::studio::SearchOptions::Fields)
