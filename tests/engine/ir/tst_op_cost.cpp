// Per-node forward costs against hand-computed values (docs/op-costs.md).
#include <QtTest>

#include <string>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ir/op_cost.h"

using namespace hap::ir;

namespace {

Arg tensor(std::string name, ValueId v) {
  Arg a;
  a.name = std::move(name);
  a.type = "Tensor";
  a.kind = Arg::Kind::Tensor;
  a.values = {v};
  return a;
}

Arg tensorList(std::string name, std::vector<ValueId> vs) {
  Arg a;
  a.name = std::move(name);
  a.type = "Tensor[]";
  a.kind = Arg::Kind::TensorList;
  a.values = std::move(vs);
  return a;
}

Arg constant(std::string name, Constant c) {
  Arg a;
  a.name = std::move(name);
  a.kind = Arg::Kind::Constant;
  a.constant = std::move(c);
  return a;
}

Arg none(std::string name) {
  return constant(std::move(name), std::monostate{});
}

// Builds a graph node by node; every node's outputs are fresh activations.
struct Builder {
  Graph g;

  ValueId input(Shape shape, DType dtype = DType::Float32) {
    return g.addValue(ValueKind::Input, "x" + std::to_string(g.values.size()), std::move(shape),
                      dtype);
  }

  NodeId node(std::string op, std::vector<Arg> args, std::vector<Shape> outputs,
              DType dtype = DType::Float32) {
    Node n;
    n.op = std::move(op);
    n.args = std::move(args);
    for (Shape& s : outputs)
      n.outputs.push_back(g.addValue(ValueKind::Activation, "y" + std::to_string(g.values.size()),
                                     std::move(s), dtype));
    return g.addNode(std::move(n));
  }

  NodeCost cost(NodeId id, bool* known = nullptr) const { return nodeCost(g, g.node(id), known); }
  double flops(NodeId id) const { return cost(id).flops; }
};

}  // namespace

class TestOpCost : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void linearWithoutBias() {
    Builder b;
    ValueId x = b.input({8, 16});
    ValueId w = b.input({32, 16});
    NodeId n =
        b.node("aten::linear", {tensor("input", x), tensor("weight", w), none("bias")}, {{8, 32}});
    bool known = false;
    NodeCost c = b.cost(n, &known);
    QVERIFY(known);
    QCOMPARE(c.flops, 8192.0);  // 2·B·I·O
    QCOMPARE(c.bytesRead, int64_t{(8 * 16 + 32 * 16) * 4});
    QCOMPARE(c.bytesWritten, int64_t{8 * 32 * 4});
  }

  void linearWithBias() {
    Builder b;
    ValueId x = b.input({8, 16});
    ValueId w = b.input({32, 16});
    ValueId bias = b.input({32});
    NodeId n = b.node("aten::linear",
                      {tensor("input", x), tensor("weight", w), tensor("bias", bias)}, {{8, 32}});
    QCOMPARE(b.flops(n), 8192.0 + 8 * 32);
    QCOMPARE(b.cost(n).bytesRead, int64_t{(8 * 16 + 32 * 16 + 32) * 4});
  }

  void linearOn3dInput() {
    Builder b;
    ValueId x = b.input({2, 3, 16});
    ValueId w = b.input({32, 16});
    ValueId bias = b.input({32});
    NodeId n =
        b.node("aten::linear", {tensor("input", x), tensor("weight", w), tensor("bias", bias)},
               {{2, 3, 32}});
    QCOMPARE(b.flops(n), 2.0 * 6 * 16 * 32 + 6 * 32);
  }

  void matmulBroadcasting() {
    Builder b;
    ValueId a = b.input({2, 1, 4, 5});
    ValueId m = b.input({3, 5, 6});
    NodeId batched =
        b.node("aten::matmul", {tensor("self", a), tensor("other", m)}, {{2, 3, 4, 6}});
    QCOMPARE(b.flops(batched), 2.0 * (2 * 3) * 4 * 5 * 6);
    ValueId vec = b.input({5});
    NodeId vecMat = b.node("aten::matmul", {tensor("self", vec), tensor("other", m)}, {{3, 6}});
    QCOMPARE(b.flops(vecMat), 2.0 * 3 * 5 * 6);
    ValueId batch = b.input({2, 4, 5});
    NodeId matVec = b.node("aten::matmul", {tensor("self", batch), tensor("other", vec)}, {{2, 4}});
    QCOMPARE(b.flops(matVec), 2.0 * 2 * 4 * 5);
    NodeId dot = b.node("aten::matmul", {tensor("self", vec), tensor("other", vec)}, {{}});
    QCOMPARE(b.flops(dot), 2.0 * 5);
    QCOMPARE(b.cost(dot).bytesRead, int64_t{5 * 4});  // one distinct input
  }

  void bmm() {
    Builder b;
    ValueId x = b.input({3, 4, 5});
    ValueId y = b.input({3, 5, 6});
    NodeId n = b.node("aten::bmm", {tensor("self", x), tensor("mat2", y)}, {{3, 4, 6}});
    QCOMPARE(b.flops(n), 720.0);
  }

  void addmmFamily() {
    Builder b;
    ValueId bias = b.input({6});
    ValueId m1 = b.input({4, 5});
    ValueId m2 = b.input({5, 6});
    NodeId addmm = b.node("aten::addmm",
                          {tensor("self", bias), tensor("mat1", m1), tensor("mat2", m2),
                           constant("beta", int64_t{1}), constant("alpha", int64_t{1})},
                          {{4, 6}});
    QCOMPARE(b.flops(addmm), 2.0 * 4 * 5 * 6 + 4 * 6);
    ValueId acc = b.input({4});
    ValueId v = b.input({5});
    NodeId addmv =
        b.node("aten::addmv", {tensor("self", acc), tensor("mat", m1), tensor("vec", v)}, {{4}});
    QCOMPARE(b.flops(addmv), 2.0 * 4 * 5 + 4);
    ValueId b1 = b.input({3, 4, 5});
    ValueId b2 = b.input({3, 5, 6});
    ValueId sum = b.input({4, 6});
    NodeId addbmm =
        b.node("aten::addbmm", {tensor("self", sum), tensor("batch1", b1), tensor("batch2", b2)},
               {{4, 6}});
    QCOMPARE(b.flops(addbmm), 2.0 * 3 * 4 * 5 * 6 + 4 * 6);
  }

  void einsum() {
    Builder b;
    const int64_t B = 2, S = 3, D = 4, E = 5, C = 6, H = 7;
    ValueId x = b.input({B, S, D});
    ValueId mask = b.input({B, S, E, C});
    NodeId dispatch = b.node("aten::einsum",
                             {constant("equation", std::string("bsd,bsec->becd")),
                              tensorList("tensors", {x, mask}), none("path")},
                             {{B, E, C, D}});
    QCOMPARE(b.flops(dispatch), 2.0 * B * S * D * E * C);

    ValueId w = b.input({E, D, H});
    ValueId y = b.input({B, E, C, D});
    NodeId expert =
        b.node("aten::einsum",
               {constant("equation", std::string("edh,becd->bech")), tensorList("tensors", {w, y})},
               {{B, E, C, H}});
    QCOMPARE(b.flops(expert), 2.0 * E * D * H * B * C);

    // The ellipsis broadcasts [2, 3] against [3].
    ValueId p = b.input({2, 3, 4, 5});
    ValueId q = b.input({3, 5, 6});
    NodeId ellipsis = b.node(
        "aten::einsum",
        {constant("equation", std::string("...ij, ...jk -> ...ik")), tensorList("tensors", {p, q})},
        {{2, 3, 4, 6}});
    QCOMPARE(b.flops(ellipsis), 2.0 * 2 * 3 * 4 * 5 * 6);

    // Implicit output "ik": j is contracted.
    ValueId m = b.input({4, 5});
    ValueId n = b.input({5, 6});
    NodeId implicit = b.node(
        "aten::einsum", {constant("equation", std::string("ij,jk")), tensorList("tensors", {m, n})},
        {{4, 6}});
    QCOMPARE(b.flops(implicit), 2.0 * 4 * 5 * 6);

    // Nothing contracted: one multiplication per output element.
    ValueId u = b.input({4});
    ValueId v = b.input({6});
    NodeId outer = b.node(
        "aten::einsum",
        {constant("equation", std::string("i,j->ij")), tensorList("tensors", {u, v})}, {{4, 6}});
    QCOMPARE(b.flops(outer), 24.0);

    NodeId permuted =
        b.node("aten::einsum",
               {constant("equation", std::string("ij->ji")), tensorList("tensors", {m})}, {{5, 4}});
    QCOMPARE(b.flops(permuted), 20.0);

    bool known = true;
    NodeId wrong = b.node(
        "aten::einsum",
        {constant("equation", std::string("ijk,jk->i")), tensorList("tensors", {m, n})}, {{4}});
    b.cost(wrong, &known);
    QVERIFY(!known);
  }

  void conv2d() {
    Builder b;
    ValueId x = b.input({2, 4, 8, 8});
    ValueId w = b.input({6, 4, 3, 3});
    ValueId bias = b.input({6});
    auto args = [&](ValueId weight, Arg biasArg, int64_t groups) {
      return std::vector<Arg>{tensor("input", x),
                              tensor("weight", weight),
                              std::move(biasArg),
                              constant("stride", std::vector<int64_t>{1, 1}),
                              constant("padding", std::vector<int64_t>{1, 1}),
                              constant("dilation", std::vector<int64_t>{1, 1}),
                              constant("groups", groups)};
    };
    NodeId plain = b.node("aten::conv2d", args(w, none("bias"), 1), {{2, 6, 8, 8}});
    QCOMPARE(b.flops(plain), 2.0 * 2 * 6 * 64 * 4 * 9);
    NodeId biased = b.node("aten::conv2d", args(w, tensor("bias", bias), 1), {{2, 6, 8, 8}});
    QCOMPARE(b.flops(biased), 2.0 * 2 * 6 * 64 * 4 * 9 + 2 * 6 * 64);

    ValueId depthwiseWeight = b.input({4, 1, 3, 3});
    NodeId depthwise =
        b.node("aten::conv2d", args(depthwiseWeight, none("bias"), 4), {{2, 4, 8, 8}});
    QCOMPARE(b.flops(depthwise), 2.0 * 2 * 4 * 64 * 1 * 9);
  }

  void transposedConv() {
    Builder b;
    ValueId x = b.input({2, 4, 8, 8});
    ValueId w = b.input({4, 6, 3, 3});  // [C_in, C_out/groups, k, k]
    const double expected = 2.0 * 2 * 4 * 64 * 6 * 9;
    NodeId transpose =
        b.node("aten::conv_transpose2d",
               {tensor("input", x), tensor("weight", w), none("bias"),
                constant("stride", std::vector<int64_t>{2, 2}),
                constant("padding", std::vector<int64_t>{0, 0}),
                constant("output_padding", std::vector<int64_t>{0, 0}),
                constant("groups", int64_t{1}), constant("dilation", std::vector<int64_t>{1, 1})},
               {{2, 6, 17, 17}});
    QCOMPARE(b.flops(transpose), expected);

    ValueId bias = b.input({6});
    NodeId convolution = b.node(
        "aten::_convolution",
        {tensor("input", x), tensor("weight", w), tensor("bias", bias),
         constant("stride", std::vector<int64_t>{2, 2}),
         constant("padding", std::vector<int64_t>{0, 0}),
         constant("dilation", std::vector<int64_t>{1, 1}), constant("transposed", true),
         constant("output_padding", std::vector<int64_t>{0, 0}), constant("groups", int64_t{1})},
        {{2, 6, 17, 17}});
    QCOMPARE(b.flops(convolution), expected + 2 * 6 * 17 * 17);
  }

  void layerNorm() {
    Builder b;
    ValueId x = b.input({4, 10, 16});
    ValueId w = b.input({16});
    ValueId bias = b.input({16});
    auto shape = constant("normalized_shape", std::vector<int64_t>{16});
    NodeId affine = b.node("aten::layer_norm",
                           {tensor("input", x), shape, tensor("weight", w), tensor("bias", bias),
                            constant("eps", 1e-5)},
                           {{4, 10, 16}});
    QCOMPARE(b.flops(affine), 7.0 * 640);
    NodeId plain =
        b.node("aten::layer_norm",
               {tensor("input", x), shape, none("weight"), none("bias"), constant("eps", 1e-5)},
               {{4, 10, 16}});
    QCOMPARE(b.flops(plain), 5.0 * 640);
  }

  void batchNormWithRunningStatistics() {
    Builder b;
    ValueId x = b.input({2, 3, 4, 4});
    ValueId w = b.input({3});
    ValueId bias = b.input({3});
    auto node = [&](bool training) {
      return b.node("aten::batch_norm",
                    {tensor("input", x), tensor("weight", w), tensor("bias", bias),
                     none("running_mean"), none("running_var"), constant("training", training),
                     constant("momentum", 0.1), constant("eps", 1e-5)},
                    {{2, 3, 4, 4}});
    };
    QCOMPARE(b.flops(node(true)), 7.0 * 96);
    QCOMPARE(b.flops(node(false)), 4.0 * 96);
  }

  void softmax() {
    Builder b;
    ValueId x = b.input({4, 10});
    NodeId n = b.node("aten::softmax",
                      {tensor("self", x), constant("dim", int64_t{-1}), none("dtype")}, {{4, 10}});
    QCOMPARE(b.flops(n), 200.0);
    NodeId log =
        b.node("aten::log_softmax",
               {tensor("self", x), constant("dim", int64_t{-1}), none("dtype")}, {{4, 10}});
    QCOMPARE(b.flops(log), 200.0);
  }

  void pooling() {
    Builder b;
    ValueId x = b.input({2, 3, 8, 8});
    NodeId max = b.node("aten::max_pool2d",
                        {tensor("self", x), constant("kernel_size", std::vector<int64_t>{2, 2}),
                         constant("stride", std::vector<int64_t>{})},
                        {{2, 3, 4, 4}});
    QCOMPARE(b.flops(max), 96.0 * 4);
    NodeId single = b.node("aten::avg_pool2d",
                           {tensor("self", x), constant("kernel_size", std::vector<int64_t>{2})},
                           {{2, 3, 4, 4}});
    QCOMPARE(b.flops(single), 96.0 * 4);
    NodeId adaptive = b.node(
        "aten::adaptive_avg_pool2d",
        {tensor("self", x), constant("output_size", std::vector<int64_t>{1, 1})}, {{2, 3, 1, 1}});
    QCOMPARE(b.flops(adaptive), 384.0);
  }

  void elementwiseBroadcasting() {
    Builder b;
    ValueId x = b.input({4, 1, 8});
    ValueId y = b.input({3, 1});
    NodeId n =
        b.node("aten::add", {tensor("self", x), tensor("other", y), constant("alpha", int64_t{1})},
               {{4, 3, 8}});
    NodeCost c = b.cost(n);
    QCOMPARE(c.flops, 96.0);
    QCOMPARE(c.bytesRead, int64_t{(32 + 3) * 4});
    QCOMPARE(c.bytesWritten, int64_t{96 * 4});
    NodeId gelu =
        b.node("aten::gelu", {tensor("self", x), constant("approximate", std::string("none"))},
               {{4, 1, 8}});
    QCOMPARE(b.flops(gelu), 8.0 * 32);
  }

  void viewsAreFree() {
    Builder b;
    ValueId x = b.input({4, 8});
    NodeId view = b.node("aten::view",
                         {tensor("self", x), constant("size", std::vector<int64_t>{32})}, {{32}});
    NodeId transpose = b.node(
        "aten::transpose",
        {tensor("self", x), constant("dim0", int64_t{0}), constant("dim1", int64_t{1})}, {{8, 4}});
    NodeId chunk =
        b.node("aten::chunk",
               {tensor("self", x), constant("chunks", int64_t{2}), constant("dim", int64_t{1})},
               {{4, 4}, {4, 4}});
    for (NodeId n : {view, transpose, chunk}) {
      NodeCost c = b.cost(n);
      QCOMPARE(c.flops, 0.0);
      QCOMPARE(c.bytesRead, int64_t{0});
      QCOMPARE(c.bytesWritten, int64_t{0});
    }
    NodeId contiguous = b.node("aten::contiguous", {tensor("self", x)}, {{4, 8}});
    QCOMPARE(b.cost(contiguous).bytesRead, int64_t{128});
    QCOMPARE(b.cost(contiguous).bytesWritten, int64_t{128});
    QCOMPARE(b.flops(contiguous), 0.0);
  }

  void embeddingReadsGatheredRows() {
    Builder b;
    ValueId table = b.input({1000, 64});
    ValueId ids = b.input({4, 10}, DType::Int64);
    NodeId n = b.node(
        "aten::embedding",
        {tensor("weight", table), tensor("indices", ids), constant("padding_idx", int64_t{-1})},
        {{4, 10, 64}});
    NodeCost c = b.cost(n);
    QCOMPARE(c.flops, 0.0);
    QCOMPARE(c.bytesRead, int64_t{40 * 8 + 40 * 64 * 4});
    QCOMPARE(c.bytesWritten, int64_t{40 * 64 * 4});
  }

  void losses() {
    Builder b;
    ValueId logits = b.input({8, 10});
    ValueId target = b.input({8}, DType::Int64);
    auto args = [&](int64_t reduction) {
      return std::vector<Arg>{tensor("self", logits), tensor("target", target), none("weight"),
                              constant("reduction", reduction),
                              constant("ignore_index", int64_t{-100})};
    };
    NodeId ce = b.node("aten::cross_entropy_loss", args(1), {{}});
    NodeCost c = b.cost(ce);
    QCOMPARE(c.flops, 5.0 * 80 + 8 + 8);
    QCOMPARE(c.bytesRead, int64_t{80 * 4 + 8 * 8});
    QCOMPARE(c.bytesWritten, int64_t{4});
    NodeId nllSum = b.node("aten::nll_loss", args(2), {{}});
    QCOMPARE(b.flops(nllSum), 8.0);
    QCOMPARE(b.cost(nllSum).bytesRead, int64_t{8 * 8 + 8 * 4});  // target + gathered inputs
    ValueId prediction = b.input({8, 10});
    NodeId mse = b.node(
        "aten::mse_loss",
        {tensor("self", logits), tensor("target", prediction), constant("reduction", int64_t{1})},
        {{}});
    QCOMPARE(b.flops(mse), 240.0);
  }

  void inplaceCostsLikeBase() {
    Builder b;
    ValueId x = b.input({4, 8});
    NodeId relu = b.node("aten::relu", {tensor("self", x)}, {{4, 8}});
    NodeId relu_ = b.node("aten::relu_", {tensor("self", x)}, {{4, 8}});
    b.g.node(relu_).inplace = true;
    bool known = false;
    NodeCost inplace = b.cost(relu_, &known);
    QVERIFY(known);
    QCOMPARE(inplace.flops, b.flops(relu));
    QCOMPARE(inplace.bytesRead, b.cost(relu).bytesRead);
    QCOMPARE(inplace.bytesWritten, b.cost(relu).bytesWritten);
    QCOMPARE(inplace.flops, 32.0);

    ValueId mask = b.input({4, 8}, DType::Bool);
    NodeId dunder = b.node("aten::__and__", {tensor("self", mask), tensor("other", mask)}, {{4, 8}},
                           DType::Bool);
    b.cost(dunder, &known);
    QVERIFY(known);
  }

  void dropout() {
    Builder b;
    ValueId x = b.input({10});
    auto node = [&](bool train) {
      return b.node("aten::dropout",
                    {tensor("input", x), constant("p", 0.1), constant("train", train)}, {{10}});
    };
    NodeCost training = b.cost(node(true));
    QCOMPARE(training.flops, 20.0);
    QCOMPARE(training.bytesRead, int64_t{40});
    QCOMPARE(training.bytesWritten, int64_t{40 + 10});  // output and a one-byte mask
    NodeCost eval = b.cost(node(false));
    QCOMPARE(eval.flops, 0.0);
    QCOMPARE(eval.bytesWritten, int64_t{0});
  }

  void reductionsAndSorting() {
    Builder b;
    ValueId x = b.input({4, 8});
    NodeId sum = b.node("aten::sum", {tensor("self", x), none("dtype")}, {{}});
    QCOMPARE(b.flops(sum), 32.0);
    NodeId var =
        b.node("aten::var", {tensor("self", x), constant("dim", std::vector<int64_t>{1})}, {{4}});
    QCOMPARE(b.flops(var), 96.0);
    ValueId y = b.input({4, 8});
    NodeId maximum = b.node("aten::max", {tensor("self", x), tensor("other", y)}, {{4, 8}});
    QCOMPARE(b.flops(maximum), 32.0);
    NodeId sort =
        b.node("aten::sort", {tensor("self", x), constant("dim", int64_t{-1})}, {{4, 8}, {4, 8}});
    QCOMPARE(b.flops(sort), 32.0 * 3);
    NodeId topk =
        b.node("aten::topk", {tensor("self", x), constant("k", int64_t{4})}, {{4, 4}, {4, 4}});
    QCOMPARE(b.flops(topk), 32.0 * 2);
  }

  void factoriesReadNothing() {
    Builder b;
    ValueId x = b.input({4, 8});
    NodeId zeros = b.node("aten::zeros_like", {tensor("self", x), none("dtype")}, {{4, 8}});
    NodeCost c = b.cost(zeros);
    QCOMPARE(c.bytesRead, int64_t{0});
    QCOMPARE(c.bytesWritten, int64_t{128});
    NodeId empty = b.node("aten::empty_like", {tensor("self", x)}, {{4, 8}});
    QCOMPARE(b.cost(empty).bytesWritten, int64_t{0});
  }

  void unknownOpIsEstimated() {
    Builder b;
    ValueId x = b.input({4, 8});
    NodeId first = b.node("aten::foo", {tensor("self", x)}, {{4, 8}});
    b.node("aten::relu", {tensor("self", x)}, {{4, 8}});
    b.node("aten::foo", {tensor("self", x)}, {{2, 8}});
    bool known = true;
    NodeCost c = b.cost(first, &known);
    QVERIFY(!known);
    QCOMPARE(c.flops, 32.0);
    QCOMPARE(c.bytesRead, int64_t{128});
    QCOMPARE(c.bytesWritten, int64_t{128});

    annotateCosts(b.g);
    QCOMPARE(b.g.diagnostics.size(), size_t{1});
    const Diagnostic& d = b.g.diagnostics.front();
    QCOMPARE(d.severity, Diagnostic::Severity::Warning);
    QCOMPARE(d.node, first);
    QCOMPARE(d.message,
             std::string("no cost formula for aten::foo (2 nodes); estimated as elementwise"));
    QCOMPARE(b.g.node(1).cost.flops, 32.0);
    QCOMPARE(b.g.node(2).cost.flops, 16.0);
  }

  void unreadableArgumentsAreEstimated() {
    Builder b;
    ValueId x = b.input({8, 16});
    b.node("aten::linear", {tensor("input", x), none("weight")}, {{8, 32}});
    annotateCosts(b.g);
    QCOMPARE(b.g.node(0).cost.flops, 256.0);
    QCOMPARE(b.g.diagnostics.size(), size_t{1});
    QCOMPARE(b.g.diagnostics.front().message,
             std::string("cost formula for aten::linear does not fit its arguments (1 node); "
                         "estimated as elementwise"));
  }
};

QTEST_GUILESS_MAIN(TestOpCost)
#include "tst_op_cost.moc"
