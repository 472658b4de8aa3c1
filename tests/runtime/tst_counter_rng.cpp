// The counter-based generator (runtime/core/counter_rng.h) and its dropout
// (runtime/core/counter_dropout.h): Philox-4x32-10 gives the published known-answer vectors; the
// masks of pieces along any dimension, uneven and empty ones included, and of nested pieces (a
// machine's rows, then a rank's cut), put together are the whole tensor's mask; the keep rate is
// 1 - p; the single-device forms (the hap:: operators, a module rewritten by useCounterDropout)
// draw the same mask as the pieces; a dropout consumes exactly one number of the default
// generator, and none when it does not train. Prints how long a mask takes (the loop against the
// same generator as vectorised ATen ops, and against bernoulli_'s full-size mask).
#include <QtTest>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "runtime/core/counter_dropout.h"
#include "runtime/core/counter_rng.h"

using namespace hap::runtime;

namespace {

std::vector<int64_t> zeros(size_t n) { return std::vector<int64_t>(n, 0); }

// Random lengths summing to `total` over `parts` parts, some of them zero.
std::vector<int64_t> split(int64_t total, int parts, std::mt19937_64& gen) {
  std::vector<int64_t> cuts = {0, total};
  for (int k = 1; k < parts; ++k) cuts.push_back(static_cast<int64_t>(gen() % (total + 1)));
  cuts.push_back(cuts.back());  // an empty piece
  std::sort(cuts.begin(), cuts.end());
  std::vector<int64_t> lengths;
  for (size_t k = 1; k < cuts.size(); ++k) lengths.push_back(cuts[k] - cuts[k - 1]);
  return lengths;
}

// The Philox blocks of `blocks` counters (i, 0, 0, 0) computed with ATen ops on int64 tensors:
// each 32 × 32-bit product in 16-bit halves, so that no int64 overflows. Words as [blocks, 4].
at::Tensor philoxByTensorOps(uint64_t key, int64_t blocks) {
  const int64_t mask32 = 0xFFFFFFFF;
  at::Tensor x0 = at::arange(blocks, at::kLong), x1 = at::zeros_like(x0), x2 = at::zeros_like(x0),
             x3 = at::zeros_like(x0);
  auto mulhilo = [&](int64_t m, const at::Tensor& x) {
    const at::Tensor high = x.bitwise_right_shift(16) * m, low = x.bitwise_and(0xFFFF) * m;
    const at::Tensor hi = (high + low.bitwise_right_shift(16)).bitwise_right_shift(16);
    const at::Tensor lo = (high.bitwise_and(0xFFFF).bitwise_left_shift(16) + low).bitwise_and(mask32);
    return std::pair{hi, lo};
  };
  int64_t k0 = static_cast<int64_t>(key & 0xFFFFFFFFu), k1 = static_cast<int64_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 = (k0 + 0x9E3779B9) & mask32;
      k1 = (k1 + 0xBB67AE85) & mask32;
    }
    auto [hi0, lo0] = mulhilo(0xD2511F53, x0);
    auto [hi1, lo1] = mulhilo(0xCD9E8D57, x2);
    x0 = hi1.bitwise_xor(x1).bitwise_xor(k0);
    x1 = lo1;
    x2 = hi0.bitwise_xor(x3).bitwise_xor(k1);
    x3 = lo0;
  }
  return at::stack({x0, x1, x2, x3}, 1);
}

double millis(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

class TstCounterRng : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // The Random123 paper's known-answer vectors for Philox-4x32-10.
  void knownAnswers() {
    QCOMPARE(philox4x32_10({0, 0, 0, 0}, {0, 0}),
             (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
    QCOMPARE(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
             (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
    QCOMPARE(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
             (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
  }

  // Word i of a stream is word i mod 4 of block i / 4 (the 64-bit block index in two words).
  void streamLayout() {
    const uint64_t key = 0x0123456789abcdefULL;
    for (uint64_t i : {uint64_t{0}, uint64_t{3}, uint64_t{4}, uint64_t{77}, (uint64_t{5} << 34) + 2}) {
      const PhiloxCounter b = philox4x32_10(
          {static_cast<uint32_t>(i / 4), static_cast<uint32_t>((i / 4) >> 32), 0, 0}, {0x89abcdef, 0x01234567});
      QCOMPARE(streamWord(key, i), b[i % 4]);
    }
    QCOMPARE(keepThreshold(0), uint64_t{0});
    QCOMPARE(keepThreshold(1), uint64_t{1} << 32);
    QCOMPARE(keepThreshold(0.5), uint64_t{1} << 31);
    // Every element of a run, whatever its alignment to blocks, is its own word.
    std::vector<uint8_t> run(45);
    const std::vector<int64_t> full = {100}, start = {7}, length = {45};
    keepMask(key, keepThreshold(0.5), full, start, length, run.data());
    for (int64_t i = 0; i < 45; ++i)
      QCOMPARE(run[static_cast<size_t>(i)], uint8_t(streamWord(key, static_cast<uint64_t>(7 + i)) < (1u << 31)));
  }

  // Pieces along any dimension, uneven and empty ones included, put together are the whole mask.
  void piecesConcatenateToTheWhole() {
    std::mt19937_64 gen(7);
    const std::vector<std::vector<int64_t>> shapes = {{}, {13}, {5, 9}, {3, 4, 17}, {2, 3, 5, 7}, {4, 1, 6, 33}};
    for (const std::vector<int64_t>& shape : shapes) {
      const uint64_t key = gen();
      const at::Tensor whole = dropoutKeepMask(key, 0.3, shape, zeros(shape.size()), shape);
      QCOMPARE(whole.sizes().vec(), shape);
      for (size_t d = 0; d < shape.size(); ++d) {
        const std::vector<int64_t> lengths = split(shape[d], 3, gen);
        std::vector<at::Tensor> pieces;
        int64_t offset = 0;
        for (int64_t l : lengths) {
          std::vector<int64_t> start = zeros(shape.size()), length = shape;
          start[d] = offset;
          length[d] = l;
          pieces.push_back(dropoutKeepMask(key, 0.3, shape, start, length));
          offset += l;
        }
        QVERIFY2(at::equal(at::cat(pieces, static_cast<int64_t>(d)), whole),
                 qPrintable(QString("rank %1, cut along %2").arg(shape.size()).arg(d)));
      }
    }
  }

  // A replicated plan's nesting: a machine's rows of the global batch, then a rank's cut of them
  // along another dimension (or the same one).
  void nestedPieces() {
    const std::vector<int64_t> global = {6, 5, 8};
    const uint64_t key = 42;
    const at::Tensor whole = dropoutKeepMask(key, 0.5, global, zeros(3), global);
    for (int64_t machine = 0; machine < 2; ++machine) {
      for (int64_t d : {int64_t{0}, int64_t{2}}) {
        const std::vector<int64_t> lengths = d == 0 ? std::vector<int64_t>{1, 0, 2} : std::vector<int64_t>{3, 5, 0};
        std::vector<at::Tensor> pieces;
        int64_t offset = 0;
        for (int64_t l : lengths) {
          std::vector<int64_t> start = {machine * 3, 0, 0}, length = {3, 5, 8};
          start[static_cast<size_t>(d)] += offset;
          length[static_cast<size_t>(d)] = l;
          pieces.push_back(dropoutKeepMask(key, 0.5, global, start, length));
          offset += l;
        }
        QVERIFY(at::equal(at::cat(pieces, d), whole.narrow(0, machine * 3, 3)));
      }
    }
  }

  // The keep rate is 1 - p (within 5 standard deviations over 2^20 elements), neighbours are
  // independent, and another key gives another mask.
  void keepRate() {
    const std::vector<int64_t> shape = {1024, 1024};
    for (double p : {0.1, 0.5, 0.9}) {
      const at::Tensor keep = dropoutKeepMask(1234, p, shape, zeros(2), shape).to(at::kDouble);
      const double n = static_cast<double>(keep.numel()), q = 1 - p;
      const double mean = keep.mean().item<double>();
      QVERIFY2(std::abs(mean - q) < 5 * std::sqrt(q * p / n), qPrintable(QString("p %1: mean %2").arg(p).arg(mean)));
      const at::Tensor flat = keep.flatten();
      const double both = (flat.narrow(0, 0, flat.numel() - 1) * flat.narrow(0, 1, flat.numel() - 1)).mean().item<double>();
      QVERIFY2(std::abs(both - q * q) < 5 * std::sqrt(q * q * (1 - q * q) / n),
               qPrintable(QString("p %1: neighbours both kept %2").arg(p).arg(both)));
      const at::Tensor other = dropoutKeepMask(1235, p, shape, zeros(2), shape).to(at::kDouble);
      QVERIFY(!at::equal(other, keep));
    }
  }

  // counterDropout on pieces gives the pieces of counterDropout on the whole (one seed each),
  // native_dropout's mask too; each consumes one number of the default generator; without
  // training it draws nothing and copies.
  void dropoutOfPieces() {
    const at::Tensor x = at::randn({6, 10}, at::kDouble);
    at::manual_seed(5);
    const std::vector<at::Tensor> whole = counterDropout(x, 0.25, true, {6, 10}, {0, 0}, true);
    const int64_t next = at::randint(1 << 30, {1}, at::kLong).item<int64_t>();
    std::vector<at::Tensor> outs, masks;
    for (auto [offset, length] : {std::pair<int64_t, int64_t>{0, 4}, {4, 0}, {4, 6}}) {
      at::manual_seed(5);
      const std::vector<at::Tensor> piece =
          counterDropout(x.narrow(1, offset, length), 0.25, true, {6, 10}, {0, offset}, true);
      QCOMPARE(at::randint(1 << 30, {1}, at::kLong).item<int64_t>(), next);  // one number drawn
      outs.push_back(piece[0]);
      masks.push_back(piece[1]);
    }
    QVERIFY(at::equal(at::cat(outs, 1), whole[0]));
    QVERIFY(at::equal(at::cat(masks, 1), whole[1]));
    QCOMPARE(whole[1].scalar_type(), at::kBool);
    QVERIFY(at::allclose(whole[0], x * whole[1].to(at::kDouble) / 0.75));
    // p = 1 drops everything (no infinite scale).
    QVERIFY(at::equal(counterDropout(x, 1, true, {6, 10}, {0, 0}, false)[0], at::zeros_like(x)));
    // Not training: a copy, an all-true mask, nothing drawn.
    at::manual_seed(5);
    const int64_t first = at::randint(1 << 30, {1}, at::kLong).item<int64_t>();
    at::manual_seed(5);
    const std::vector<at::Tensor> off = counterDropout(x, 0.25, false, {6, 10}, {0, 0}, true);
    QCOMPARE(at::randint(1 << 30, {1}, at::kLong).item<int64_t>(), first);
    QVERIFY(at::equal(off[0], x));
    QVERIFY(off[1].all().item<bool>());
  }

  // The single-device forms: the hap:: operators and a TorchScript module rewritten by
  // useCounterDropout draw the mask the pieces draw.
  void singleDeviceForms() {
    const at::Tensor x = at::randn({4, 8}, at::kDouble);
    at::manual_seed(9);
    const std::vector<at::Tensor> expected = counterDropout(x, 0.4, true, {4, 8}, {0, 0}, true);
    for (const char* op : {"aten::dropout", "aten::dropout_", "aten::native_dropout"})
      QVERIFY(!counterDropoutOp(op).empty());
    QVERIFY(counterDropoutOp("aten::relu").empty());
    QVERIFY(counterDropoutOp("aten::feature_dropout").empty());  // RandomDraws: the op's own draws

    auto run = [](const std::string& name, std::vector<c10::IValue> stack) {
      for (const auto& op : torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(name))) {
        op->getOperation()(stack);
        return stack;
      }
      return std::vector<c10::IValue>{};
    };
    at::manual_seed(9);
    std::vector<c10::IValue> out = run("hap::native_dropout", {x, 0.4, true});
    QCOMPARE(out.size(), size_t{2});
    QVERIFY(at::equal(out[0].toTensor(), expected[0]));
    QVERIFY(at::equal(out[1].toTensor(), expected[1]));
    at::manual_seed(9);
    out = run("hap::dropout", {x, 0.4, true});
    QVERIFY(at::equal(out.at(0).toTensor(), expected[0]));
    at::manual_seed(9);
    const at::Tensor y = x.clone();
    out = run("hap::dropout_", {y, 0.4, true});
    QVERIFY(at::equal(y, expected[0]));

    torch::jit::Module m("m");
    m.define(R"(
def forward(self, x):
    a = torch.dropout(x, 0.4, True)
    b, mask = torch.native_dropout(x, 0.4, True)
    return a + b, mask
)");
    useCounterDropout(m);
    const std::string graph = m.get_method("forward").graph()->toString();
    QVERIFY2(graph.find("aten::dropout") == std::string::npos && graph.find("hap::dropout") != std::string::npos &&
                 graph.find("hap::native_dropout") != std::string::npos,
             graph.c_str());
    at::manual_seed(9);
    const auto results = m.forward({x}).toTuple()->elements();
    at::manual_seed(9);
    const at::Tensor a = counterDropout(x, 0.4, true, {4, 8}, {0, 0}, false)[0];
    const std::vector<at::Tensor> b = counterDropout(x, 0.4, true, {4, 8}, {0, 0}, true);
    QVERIFY(at::equal(results[0].toTensor(), a + b[0]));
    QVERIFY(at::equal(results[1].toTensor(), b[1]));
  }

  // The ATen-ops form of the same generator gives the same words (and how long each takes).
  void tensorOpsAgree() {
    const uint64_t key = 0xfeedbeefcafef00dULL;
    const int64_t blocks = 1 << 17;  // 2^19 words: a [32, 64, 256] activation
    auto since = std::chrono::steady_clock::now();
    const at::Tensor words = philoxByTensorOps(key, blocks);
    const double opsMs = millis(since);
    for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{4097}, blocks - 1})
      for (int w = 0; w < 4; ++w)
        QCOMPARE(static_cast<uint32_t>(words[i][w].item<int64_t>()), streamWord(key, static_cast<uint64_t>(4 * i + w)));
    const std::vector<int64_t> shape = {32, 64, 256};
    since = std::chrono::steady_clock::now();
    const at::Tensor keep = dropoutKeepMask(key, 0.1, shape, zeros(3), shape);
    const double loopMs = millis(since);
    since = std::chrono::steady_clock::now();
    const std::vector<int64_t> quarter = {8, 64, 256};
    const at::Tensor piece = dropoutKeepMask(key, 0.1, shape, {24, 0, 0}, quarter);
    const double pieceMs = millis(since);
    since = std::chrono::steady_clock::now();
    const at::Tensor bernoulli = at::empty(shape, at::kFloat).bernoulli_(0.9);
    const double bernoulliMs = millis(since);
    qInfo("mask of [32, 64, 256]: ATen ops %.2f ms, loop %.2f ms (its quarter %.2f ms); bernoulli_ %.2f ms "
          "(%d intra-op threads)",
          opsMs, loopMs, pieceMs, bernoulliMs, at::get_num_threads());
    QVERIFY(at::equal(piece, keep.narrow(0, 24, 8)));
  }
};

QTEST_GUILESS_MAIN(TstCounterRng)
#include "tst_counter_rng.moc"
