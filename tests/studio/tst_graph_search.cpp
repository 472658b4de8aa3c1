// Find over a graph: substring and regular-expression matches in graph order, fields, case,
// invalid expressions as errors, and next/previous wrapping around.
#include <QtTest>

#include <memory>

#include "app/studio/core/graph/graph_search.h"
#include "engine/import/importer.h"

using namespace hap;
using hap::studio::GraphSearch;
using hap::studio::SearchMatch;
using hap::studio::SearchOptions;
using hap::studio::Selection;

namespace {

std::shared_ptr<const ir::Graph> loadZoo(const char* file) {
  const QByteArray dir = qgetenv("HAP_ZOO_DIR");
  return std::make_shared<const ir::Graph>(import::importModel(dir.toStdString() + "/" + file));
}

SearchOptions text(const QString& t, bool regex = false, bool matchCase = false) {
  SearchOptions o;
  o.text = t;
  o.regex = regex;
  o.matchCase = matchCase;
  return o;
}

std::vector<Selection> targets(const std::vector<SearchMatch>& matches) {
  std::vector<Selection> out;
  for (const SearchMatch& m : matches) out.push_back(m.target);
  return out;
}

}  // namespace

class TestGraphSearch : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    m_mlp = loadZoo("mlp-tiny.pt");
    m_bert = loadZoo("bert-tiny.pt");
    // The facts these tests rely on (mlp-tiny: linear, relu, linear, relu, linear, ...).
    QCOMPARE(m_mlp->node(0).op, std::string("aten::linear"));
    QCOMPARE(m_mlp->node(1).op, std::string("aten::relu"));
    QCOMPARE(m_mlp->node(0).scope, std::string("hidden.0"));
  }

  void substringOnOps() {
    auto r = studio::findInGraph(*m_mlp, text(QStringLiteral("linear")));
    QVERIFY(r.ok());
    const std::vector<Selection> expected = {Selection::node(0), Selection::node(2),
                                             Selection::node(4)};
    QCOMPARE(targets(r.matches), expected);
    for (const SearchMatch& m : r.matches) {
      QCOMPARE(m.field, SearchOptions::OpField);
      QCOMPARE(m.matchedText, QStringLiteral("aten::linear"));
    }
  }

  void caseSensitivity() {
    QCOMPARE(studio::findInGraph(*m_mlp, text(QStringLiteral("LINEAR"))).matches.size(), size_t(3));
    QCOMPARE(studio::findInGraph(*m_mlp, text(QStringLiteral("LINEAR"), false, true)).matches.size(),
             size_t(0));
    QCOMPARE(studio::findInGraph(*m_mlp, text(QStringLiteral("LIN.AR"), true)).matches.size(),
             size_t(3));
    QCOMPARE(studio::findInGraph(*m_mlp, text(QStringLiteral("LIN.AR"), true, true)).matches.size(),
             size_t(0));
  }

  void valuesAndScopesInGraphOrder() {
    // Parameters come where they are first used (node 0 reads input, weight, bias), before the
    // node that matched by its scope.
    auto r = studio::findInGraph(*m_mlp, text(QStringLiteral("hidden.0")));
    QVERIFY(r.ok());
    const ir::Graph& g = *m_mlp;
    const ir::ValueId weight = g.node(0).arg("weight")->values.front();
    const ir::ValueId bias = g.node(0).arg("bias")->values.front();
    const std::vector<Selection> expected = {Selection::value(weight), Selection::value(bias),
                                             Selection::node(0)};
    QCOMPARE(targets(r.matches), expected);
    QCOMPARE(r.matches[0].field, SearchOptions::ValueNameField);
    QCOMPARE(r.matches[0].matchedText, QStringLiteral("hidden.0.weight"));
    QCOMPARE(r.matches[2].field, SearchOptions::ScopeField);
    QCOMPARE(r.matches[2].matchedText, QStringLiteral("hidden.0"));

    // Restricted to scopes: only nodes.
    SearchOptions scopes = text(QStringLiteral("hidden"));
    scopes.fields = SearchOptions::ScopeField;
    const std::vector<Selection> hiddenNodes = {Selection::node(0), Selection::node(2)};
    QCOMPARE(targets(studio::findInGraph(g, scopes).matches), hiddenNodes);

    // Restricted to value names.
    SearchOptions names = text(QStringLiteral("weight"));
    names.fields = SearchOptions::ValueNameField;
    auto w = studio::findInGraph(g, names);
    QCOMPARE(w.matches.size(), size_t(3));
    for (const SearchMatch& m : w.matches) {
      QCOMPARE(m.target.kind, Selection::Kind::Value);
      QCOMPARE(g.value(m.target.id).kind, ir::ValueKind::Parameter);
    }
  }

  void regex() {
    // Anchored patterns see the op without its "aten::" prefix too.
    auto r = studio::findInGraph(*m_mlp, text(QStringLiteral("^(relu|linear)$"), true));
    QVERIFY(r.ok());
    const std::vector<Selection> expected = {Selection::node(0), Selection::node(1),
                                             Selection::node(2), Selection::node(3),
                                             Selection::node(4)};
    QCOMPARE(targets(r.matches), expected);

    auto biases = studio::findInGraph(*m_mlp, text(QStringLiteral("hidden\\.[01]\\.bias$"), true));
    QCOMPARE(biases.matches.size(), size_t(2));
    QCOMPARE(biases.matches[0].matchedText, QStringLiteral("hidden.0.bias"));
    QCOMPARE(biases.matches[1].matchedText, QStringLiteral("hidden.1.bias"));
  }

  void invalidRegexIsAnError() {
    auto r = studio::findInGraph(*m_mlp, text(QStringLiteral("lin(ear"), true));
    QVERIFY(!r.ok());
    QVERIFY(r.matches.empty());
    QVERIFY2(r.error.contains(QStringLiteral("Invalid regular expression")), qPrintable(r.error));
    QVERIFY2(r.error.contains(QStringLiteral("offset 7")), qPrintable(r.error));
    // The same text as a substring is fine (and finds nothing).
    auto plain = studio::findInGraph(*m_mlp, text(QStringLiteral("lin(ear")));
    QVERIFY(plain.ok());
    QVERIFY(plain.matches.empty());

    GraphSearch search;
    search.setGraph(m_mlp);
    QVERIFY(!search.setOptions(text(QStringLiteral("["), true)));
    QVERIFY(!search.error().isEmpty());
    QCOMPARE(search.count(), 0);
    QCOMPARE(search.next(), nullptr);
    QCOMPARE(search.previous(), nullptr);
    QVERIFY(search.setOptions(text(QStringLiteral("relu"), true)));
    QVERIFY(search.error().isEmpty());
    QCOMPARE(search.count(), 2);
  }

  void emptyTextFindsNothing() {
    auto r = studio::findInGraph(*m_mlp, text(QString()));
    QVERIFY(r.ok());
    QVERIFY(r.matches.empty());
  }

  void nextPreviousWrapAround() {
    GraphSearch search;
    search.setGraph(m_mlp);
    QVERIFY(search.setOptions(text(QStringLiteral("relu"))));
    QCOMPARE(search.count(), 2);
    QCOMPARE(search.currentIndex(), -1);
    QCOMPARE(search.next()->target, Selection::node(1));
    QCOMPARE(search.next()->target, Selection::node(3));
    QCOMPARE(search.currentIndex(), 1);
    QCOMPARE(search.next()->target, Selection::node(1));  // wraps to the first
    QCOMPARE(search.previous()->target, Selection::node(3));  // wraps to the last
    QCOMPARE(search.previous()->target, Selection::node(1));
    QCOMPARE(search.currentIndex(), 0);

    // A new search starts over; previous() first gives the last match.
    QVERIFY(search.setOptions(text(QStringLiteral("linear"))));
    QCOMPARE(search.currentIndex(), -1);
    QCOMPARE(search.previous()->target, Selection::node(4));

    // A new graph re-runs the search.
    search.setGraph(m_bert);
    QCOMPARE(search.count(), 13);
    search.setGraph(nullptr);
    QCOMPARE(search.count(), 0);
    QCOMPARE(search.next(), nullptr);
  }

  void everyMatchContainsTheText() {
    const ir::Graph& g = *m_bert;
    for (const QString& t : {QStringLiteral("attn"), QStringLiteral("Norm"), QStringLiteral("1")}) {
      auto r = studio::findInGraph(g, text(t));
      QVERIFY(!r.matches.empty());
      int lastNode = -1;
      for (const SearchMatch& m : r.matches) {
        QVERIFY2(m.matchedText.contains(t, Qt::CaseInsensitive), qPrintable(m.matchedText));
        if (m.target.kind == Selection::Kind::Node) {
          QVERIFY(m.target.id > lastNode);  // nodes in execution order, each once
          lastNode = m.target.id;
        }
      }
      // Each target at most once.
      std::vector<Selection> all = targets(r.matches);
      for (size_t i = 0; i < all.size(); ++i)
        for (size_t j = i + 1; j < all.size(); ++j) QVERIFY(!(all[i] == all[j]));
    }
  }

 private:
  std::shared_ptr<const ir::Graph> m_mlp, m_bert;
};

QTEST_GUILESS_MAIN(TestGraphSearch)
#include "tst_graph_search.moc"
