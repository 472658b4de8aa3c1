// Golden tests of the embedding rule: sharded indices, embedding-dimension parallel, and
// vocabulary parallel (a partial sum, without padding_idx).
#include <QtTest>

#include "engine/rules/rule.h"
#include "tests/engine/rules/rule_test_util.h"

using hap::ir::DType;
using hap::ir::NodeId;
using hap::ir::ValueId;
using hap::test::GraphBuilder;
using hap::test::variantLines;

namespace {

// embedding(weight [128, 32], indices [4, 16]) -> [4, 16, 32].
NodeId embedding(GraphBuilder& b, int64_t paddingIdx, bool scaleGradByFreq) {
  ValueId w = b.param("w", {128, 32});
  ValueId ids = b.input("ids", {4, 16}, DType::Int64);
  return b.op("aten::embedding",
              {GraphBuilder::tensor("weight", w), GraphBuilder::tensor("indices", ids),
               GraphBuilder::constant("padding_idx", paddingIdx),
               GraphBuilder::constant("scale_grad_by_freq", scaleGradByFreq),
               GraphBuilder::constant("sparse", false)},
              {{4, 16, 32}});
}

}  // namespace

class TstRulesEmbedding : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void allVariants() {
    GraphBuilder b;
    NodeId n = embedding(b, -1, false);
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "shard: I G(0) -> G(0)",
                                       "shard: I G(1) -> G(1)",
                                       "column: G(1) I -> G(2)",
                                       "vocab: G(0) I -> R",
                                   }));
    std::string note = hap::rules::variantsFor(b.g, b.g.node(n)).back().note;
    QVERIFY(note.find("zero rows") != std::string::npos);
    // Only the vocabulary cut shifts the ids by the rank's first row.
    QCOMPARE(hap::test::executionNames(b.g, n),
             (QStringList{"plain", "plain", "plain", "plain", "vocab-offset"}));
  }

  // A padding row would have to be translated into each rank's vocabulary range.
  void paddingIdxRulesOutVocabParallel() {
    GraphBuilder b;
    NodeId n = embedding(b, 0, false);
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "shard: I G(0) -> G(0)",
                                       "shard: I G(1) -> G(1)",
                                       "column: G(1) I -> G(2)",
                                   }));
  }

  // Gradients scaled by index frequencies need every index on every rank, and a vocabulary cut
  // would count the other ranks' ids as lookups of local row 0.
  void scaleGradByFreqRulesOutShardedIndices() {
    GraphBuilder b;
    NodeId n = embedding(b, -1, true);
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "column: G(1) I -> G(2)",
                                   }));
  }
};

QTEST_GUILESS_MAIN(TstRulesEmbedding)
#include "tst_rules_embedding.moc"
