// Training state: optimizers on local pieces equal LibTorch's on the full tensors, clipping by the
// true global norm, consolidated checkpoints (resume bitwise; N ranks <-> 1 rank; Python reads
// them), model export.
//
// Several ranks run as threads of this process over an in-memory communicator (collectives in
// rank order, so results are identical on every rank, as the real communicator promises); the
// multi-process runs go through the executor's tests.
#include <QtTest>
#include <torch/script.h>
#include <torch/torch.h>

#include <barrier>
#include <cmath>
#include <functional>
#include <thread>

#include "runtime/train/checkpoint.h"
#include "runtime/comm/communicator.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/parameters.h"
#include "runtime/core/runtime_error.h"

using namespace hap;
using namespace hap::runtime;

namespace {

// ---- an in-process world of threads ----

class World {
 public:
  explicit World(int size) : slots_(static_cast<size_t>(size)), sync_(size) {}
  int size() const { return static_cast<int>(slots_.size()); }
  // Every rank's tensor, in rank order, once all ranks have called it.
  std::vector<at::Tensor> exchange(int rank, const at::Tensor& t) {
    slots_[static_cast<size_t>(rank)] = t.defined() ? t.detach().clone() : t;
    sync_.arrive_and_wait();
    std::vector<at::Tensor> all = slots_;
    sync_.arrive_and_wait();
    return all;
  }
  void drop() { sync_.arrive_and_drop(); }  // a rank that failed: the others do not wait for it

 private:
  std::vector<at::Tensor> slots_;
  std::barrier<> sync_;
};

class ThreadComm : public Communicator {
 public:
  ThreadComm(World& world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  c10::Device device() const override { return c10::kCPU; }
  int size() const override { return world_.size(); }
  void allReduce(at::Tensor& t) override {
    std::vector<at::Tensor> all = world_.exchange(rank_, t);
    at::Tensor sum = all[0].clone();
    for (size_t r = 1; r < all.size(); ++r) sum.add_(all[r]);
    t.copy_(sum);
  }
  void allReduceMax(at::Tensor& t) override {
    std::vector<at::Tensor> all = world_.exchange(rank_, t);
    at::Tensor max = all[0].clone();
    for (size_t r = 1; r < all.size(); ++r) max = at::maximum(max, all[r]);
    t.copy_(max);
  }
  at::Tensor allGather(const at::Tensor& local, int dim, const std::vector<int64_t>& lengths, CommMethod) override {
    std::vector<at::Tensor> all = world_.exchange(rank_, local);
    for (size_t r = 0; r < all.size(); ++r)
      if (all[r].size(dim) != lengths[r]) throw std::logic_error("allGather: a piece has the wrong length");
    return at::cat(all, dim);
  }
  at::Tensor reduceScatter(const at::Tensor&, int, const std::vector<int64_t>&, CommMethod) override {
    throw std::logic_error("reduceScatter: not used by the training state");
  }
  at::Tensor allToAll(const at::Tensor&, int, const std::vector<int64_t>&, int, const std::vector<int64_t>&) override {
    throw std::logic_error("allToAll: not used by the training state");
  }
  void broadcast(at::Tensor& t, int root) override { t.copy_(world_.exchange(rank_, t)[static_cast<size_t>(root)]); }
  void barrier() override { world_.exchange(rank_, at::Tensor()); }
  std::unique_ptr<Pending> allReduceAsync(at::Tensor&) override {
    throw std::logic_error("allReduceAsync: not used by the training state");
  }
  AllReduceCounts allReduceCounts() const override { return {}; }

 private:
  World& world_;
  int rank_;
};

// Runs `body(comm)` on `size` ranks, one thread each; returns each rank's error ("" when none).
std::vector<std::string> runRanks(int size, const std::function<void(Communicator&)>& body) {
  World world(size);
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      ThreadComm comm(world, r);
      try {
        body(comm);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = std::string("error: ") + e.what();
        world.drop();
      }
    });
  for (std::thread& t : threads) t.join();
  return errors;
}

// A check inside a rank's thread: throws (QtTest's macros would return from one rank only and
// leave the others waiting in a collective).
void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("check failed: " + what);
}

void expectNoErrors(const std::vector<std::string>& errors) {
  for (size_t r = 0; r < errors.size(); ++r)
    if (!errors[r].empty()) QFAIL(qPrintable(QString("rank %1: %2").arg(r).arg(QString::fromStdString(errors[r]))));
}

// ---- a small deterministic problem ----

// Parameters of a model and how 3 ranks hold them: uneven, zero-length and replicated pieces.
struct Spec {
  std::string name;
  ir::Shape shape;
  int dim;                       // -1: replicated
  std::vector<int64_t> lengths;  // for 3 ranks
};

const std::vector<Spec>& specs() {
  static const std::vector<Spec> s = {
      {"a.weight", {4, 5}, 1, {2, 0, 3}},
      {"a.bias", {4}, -1, {}},
      {"b.weight", {6, 3}, 0, {1, 5, 0}},
      {"c", {3}, 0, {0, 3, 0}},
      {"d.weight", {2, 2}, -1, {}},
  };
  return s;
}

// A deterministic tensor of `shape` (no random generator: the ranks run in threads).
at::Tensor pattern(const ir::Shape& shape, double phase, double frequency) {
  return at::sin(at::arange(ir::numel(shape), at::kDouble) * frequency + phase).to(at::kFloat).reshape(shape);
}

at::Tensor initialValue(size_t i) { return pattern(specs()[i].shape, 0.3 * static_cast<double>(i), 0.71); }

// The full gradient of parameter i at step t for full value w: w * A_t + B_t (element-wise, so a
// piece's gradient is the same expression on pieces).
at::Tensor gradientOf(size_t i, int64_t t, const at::Tensor& w, const LocalParameter& p, int rank) {
  const ir::Shape& shape = specs()[i].shape;
  at::Tensor a = pattern(shape, 1.3 * static_cast<double>(t) + static_cast<double>(i), 0.37);
  at::Tensor b = 3 * pattern(shape, 0.7 * static_cast<double>(t) - static_cast<double>(i), 1.9);
  return w.detach() * pieceOf(p, a, rank) + pieceOf(p, b, rank);
}

// Rank `rank` of `world`'s pieces, at their initial values (world 1: one piece per parameter,
// the cut ones still cut, into one length).
std::vector<LocalParameter> makeParams(int rank, int world) {
  std::vector<LocalParameter> params;
  for (size_t i = 0; i < specs().size(); ++i) {
    const Spec& s = specs()[i];
    LocalParameter p;
    p.name = s.name;
    p.fullShape = s.shape;
    p.dim = s.dim;
    if (s.dim >= 0) p.lengths = world == 1 ? std::vector<int64_t>{s.shape[static_cast<size_t>(s.dim)]} : s.lengths;
    p.value = pieceOf(p, initialValue(i), rank).clone().requires_grad_(true);
    params.push_back(std::move(p));
  }
  return params;
}

// Steps [from, to): gradients, clipping, update. Returns the norms.
std::vector<double> train(std::vector<LocalParameter>& params, Optimizer& optimizer, Communicator& comm, int64_t from,
                          int64_t to) {
  std::vector<double> norms;
  for (int64_t t = from; t < to; ++t) {
    for (size_t i = 0; i < params.size(); ++i)
      params[i].value.mutable_grad() = gradientOf(i, t, params[i].value, params[i], comm.rank());
    norms.push_back(optimizer.clipGradients(comm));
    optimizer.step();
    optimizer.zeroGrad();
  }
  return norms;
}

// The full tensor of parameter i from every rank's pieces.
at::Tensor assemble(const std::vector<std::vector<LocalParameter>>& ranks, size_t i,
                    const std::function<at::Tensor(int rank)>& piece = {}) {
  const LocalParameter& p0 = ranks[0][i];
  std::vector<at::Tensor> pieces;
  for (size_t r = 0; r < ranks.size(); ++r)
    pieces.push_back(piece ? piece(static_cast<int>(r)) : ranks[r][i].value.detach());
  return p0.replicated() ? pieces[0] : at::cat(pieces, p0.dim);
}

std::unique_ptr<torch::optim::Optimizer> referenceOptimizer(const std::vector<at::Tensor>& ts,
                                                            const OptimizerOptions& o) {
  switch (o.kind) {
    case OptimizerOptions::Kind::Sgd:
      return std::make_unique<torch::optim::SGD>(
          ts, torch::optim::SGDOptions(o.lr).momentum(o.momentum).weight_decay(o.weightDecay));
    case OptimizerOptions::Kind::Adam:
      return std::make_unique<torch::optim::Adam>(
          ts, torch::optim::AdamOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weightDecay));
    case OptimizerOptions::Kind::AdamW:
      return std::make_unique<torch::optim::AdamW>(
          ts, torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weightDecay));
  }
  return nullptr;
}

OptimizerOptions optionsFor(const QString& kind) {
  OptimizerOptions o;
  o.kind = parseOptimizerKind(kind.toStdString());
  o.lr = o.kind == OptimizerOptions::Kind::Sgd ? 0.05 : 0.01;
  o.weightDecay = 0.01;
  o.clipNorm = 2.0;
  return o;
}

void addKinds() {
  QTest::addColumn<QString>("kind");
  QTest::newRow("sgd") << "sgd";
  QTest::newRow("adam") << "adam";
  QTest::newRow("adamw") << "adamw";
}

QString tempPath(const QTemporaryDir& dir, const char* name) { return dir.filePath(QString::fromLatin1(name)); }

template <class F>
QString runtimeErrorOf(F&& f) {
  try {
    f();
  } catch (const RuntimeError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TstTrainingState : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void optimizerKinds() {
    QCOMPARE(parseOptimizerKind("sgd"), OptimizerOptions::Kind::Sgd);
    QCOMPARE(parseOptimizerKind("Adam"), OptimizerOptions::Kind::Adam);
    QCOMPARE(parseOptimizerKind("ADAMW"), OptimizerOptions::Kind::AdamW);
    for (auto k : {OptimizerOptions::Kind::Sgd, OptimizerOptions::Kind::Adam, OptimizerOptions::Kind::AdamW})
      QCOMPARE(parseOptimizerKind(optimizerKindName(k)), k);
    QString error = runtimeErrorOf([] { parseOptimizerKind("lamb"); });
    QVERIFY2(error.contains("'lamb'") && error.contains("adamw"), qPrintable(error));

    std::vector<LocalParameter> params = makeParams(0, 1);
    OptimizerOptions bad;
    bad.lr = -1;
    error = runtimeErrorOf([&] { Optimizer o(params, bad); });
    QVERIFY2(error.contains("lr"), qPrintable(error));
    bad = {};
    bad.beta2 = 1.0;
    error = runtimeErrorOf([&] { Optimizer o(params, bad); });
    QVERIFY2(error.contains("beta2"), qPrintable(error));
  }

  // N steps on the pieces of 3 ranks (uneven, zero-length, replicated) with clipping equal
  // LibTorch's optimizer and clip_grad_norm_ on the full tensors.
  void piecesMatchFullTensors_data() { addKinds(); }
  void piecesMatchFullTensors() {
    QFETCH(QString, kind);
    const OptimizerOptions options = optionsFor(kind);
    const int64_t steps = 6;

    std::vector<at::Tensor> full;
    for (size_t i = 0; i < specs().size(); ++i) full.push_back(initialValue(i).clone().requires_grad_(true));
    std::unique_ptr<torch::optim::Optimizer> reference = referenceOptimizer(full, options);
    std::vector<LocalParameter> fullParams = makeParams(0, 1);  // only for gradientOf's pieces
    std::vector<double> referenceNorms;
    bool clipped = false;
    for (int64_t t = 0; t < steps; ++t) {
      for (size_t i = 0; i < full.size(); ++i) full[i].mutable_grad() = gradientOf(i, t, full[i], fullParams[i], 0);
      referenceNorms.push_back(torch::nn::utils::clip_grad_norm_(full, options.clipNorm));
      clipped = clipped || referenceNorms.back() > options.clipNorm;
      reference->step();
      for (at::Tensor& f : full) f.mutable_grad() = at::Tensor();
    }
    QVERIFY2(clipped, "the problem must exercise clipping");

    std::vector<std::vector<LocalParameter>> ranks;
    for (int r = 0; r < 3; ++r) ranks.push_back(makeParams(r, 3));
    std::vector<std::vector<double>> norms(3);
    expectNoErrors(runRanks(3, [&](Communicator& comm) {
      auto& params = ranks[static_cast<size_t>(comm.rank())];
      Optimizer optimizer(params, options);
      norms[static_cast<size_t>(comm.rank())] = train(params, optimizer, comm, 0, steps);
      require(optimizer.steps() == steps, "steps()");
    }));

    for (int64_t t = 0; t < steps; ++t) {
      QVERIFY2(std::abs(norms[0][t] - referenceNorms[t]) <= 1e-5 * referenceNorms[t],
               qPrintable(QString("step %1: norm %2 vs %3").arg(t).arg(norms[0][t]).arg(referenceNorms[t])));
      for (int r = 1; r < 3; ++r) QCOMPARE(norms[r][t], norms[0][t]);  // bit-identical on every rank
    }
    for (size_t i = 0; i < specs().size(); ++i) {
      at::Tensor assembled = assemble(ranks, i);
      QVERIFY2(at::allclose(assembled, full[i].detach(), 0, 1e-6), specs()[i].name.c_str());
      QVERIFY2(!at::equal(assembled, initialValue(i)), "the parameters must have moved");
      if (ranks[0][i].replicated())
        for (int r = 1; r < 3; ++r) QVERIFY(at::equal(ranks[r][i].value, ranks[0][i].value));
    }
  }

  // The norm by hand: replicated gradient [3, 4] (25) and a piece cut over 3 ranks whose full
  // gradient is [12, 0] (144): 13 on every rank. The replicated part counted on every rank would
  // give sqrt(219); a local norm 13, 5 and 5.
  void clipNormByHand() {
    auto build = [](int rank, int world) {
      std::vector<LocalParameter> params(2);
      params[0] = {"r", {2}, at::zeros({2}).requires_grad_(true), -1, {}};
      params[1] = {"s", {2}, {}, 0, world == 1 ? std::vector<int64_t>{2} : std::vector<int64_t>{1, 1, 0}};
      params[0].value.mutable_grad() = at::tensor({3.0f, 4.0f});
      params[1].value = pieceOf(params[1], at::zeros({2}), rank).clone().requires_grad_(true);
      params[1].value.mutable_grad() = pieceOf(params[1], at::tensor({12.0f, 0.0f}), rank).clone();
      return params;
    };
    for (int world : {1, 3}) {
      std::vector<std::vector<LocalParameter>> ranks;
      for (int r = 0; r < world; ++r) ranks.push_back(build(r, world));
      std::vector<double> norms(static_cast<size_t>(world));
      expectNoErrors(runRanks(world, [&](Communicator& comm) {
        OptimizerOptions o;
        o.clipNorm = 6.5;
        Optimizer optimizer(ranks[static_cast<size_t>(comm.rank())], o);
        norms[static_cast<size_t>(comm.rank())] = optimizer.clipGradients(comm);
      }));
      const float scale = static_cast<float>(6.5 / (13.0 + 1e-6));
      for (int r = 0; r < world; ++r) {
        QCOMPARE(norms[static_cast<size_t>(r)], 13.0);
        QVERIFY(at::allclose(ranks[r][0].value.grad(), at::tensor({3.0f, 4.0f}) * scale, 0, 1e-6));
      }
      at::Tensor sharded = assemble(ranks, 1, [&](int r) { return ranks[static_cast<size_t>(r)][1].value.grad(); });
      QVERIFY(at::allclose(sharded, at::tensor({12.0f, 0.0f}) * scale, 0, 1e-6));
    }

    // Below the limit (or no limit) the gradients stay bit for bit; the norm is still returned.
    for (double limit : {20.0, 0.0}) {
      std::vector<LocalParameter> params = build(0, 1);
      OptimizerOptions o;
      o.clipNorm = limit;
      Optimizer optimizer(params, o);
      World world(1);
      ThreadComm comm(world, 0);
      QCOMPARE(optimizer.clipGradients(comm), 13.0);
      QVERIFY(at::equal(params[0].value.grad(), at::tensor({3.0f, 4.0f})));
      QVERIFY(at::equal(params[1].value.grad(), at::tensor({12.0f, 0.0f})));
    }
  }

  void zeroGradDropsGradients() {
    std::vector<LocalParameter> params = makeParams(0, 1);
    Optimizer optimizer(params, {});
    for (LocalParameter& p : params) p.value.mutable_grad() = at::ones_like(p.value);
    optimizer.zeroGrad();
    for (const LocalParameter& p : params) QVERIFY(!p.value.grad().defined());
    optimizer.step();  // nothing to update: values unchanged, no state
    for (size_t i = 0; i < params.size(); ++i) {
      QVERIFY(at::equal(params[i].value, initialValue(i)));
      QCOMPARE(optimizer.parameterSteps(i), int64_t{0});
    }
  }

  // N steps straight vs k steps, save, load into fresh parameters and optimizer, N - k steps:
  // bitwise-equal parameters, on 1 rank and on 3.
  void resumeIsBitwise_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<int>("world");
    for (const char* kind : {"sgd", "adam", "adamw"})
      for (int world : {1, 3}) QTest::addRow("%s-%d", kind, world) << kind << world;
  }
  void resumeIsBitwise() {
    QFETCH(QString, kind);
    QFETCH(int, world);
    const OptimizerOptions options = optionsFor(kind);
    const int64_t total = 7, split = 3;
    QTemporaryDir dir;
    const std::string path = tempPath(dir, "resume.ckpt").toStdString();

    std::vector<std::vector<LocalParameter>> straight, resumed;
    for (int r = 0; r < world; ++r) {
      straight.push_back(makeParams(r, world));
      resumed.push_back(makeParams(r, world));
    }
    expectNoErrors(runRanks(world, [&](Communicator& comm) {
      const size_t r = static_cast<size_t>(comm.rank());
      Optimizer a(straight[r], options);
      train(straight[r], a, comm, 0, total);

      {
        Optimizer b(resumed[r], options);
        train(resumed[r], b, comm, 0, split);
        saveCheckpoint(comm, path, resumed[r], b, split);
      }
      std::vector<LocalParameter> fresh = makeParams(comm.rank(), world);
      Optimizer c(fresh, options);
      require(loadCheckpoint(path, fresh, c, comm.rank()) == split, "the iteration read back");
      require(c.steps() == split, "the step count read back");
      train(fresh, c, comm, split, total);
      resumed[r] = fresh;  // tensors are shared handles: the values outlive `c`
    }));
    for (int r = 0; r < world; ++r)
      for (size_t i = 0; i < specs().size(); ++i)
        QVERIFY2(at::equal(resumed[r][i].value, straight[r][i].value),
                 qPrintable(QString("rank %1, %2").arg(r).arg(QString::fromStdString(specs()[i].name))));
  }

  // A checkpoint holds full tensors: written by 3 ranks, it resumes 1 rank (values and state are
  // the assembled pieces, and training continues alike); written by 1 rank, each of 3 ranks takes
  // its slices, zero-length ones included.
  void checkpointIsConsolidated_data() { addKinds(); }
  void checkpointIsConsolidated() {
    QFETCH(QString, kind);
    const OptimizerOptions options = optionsFor(kind);
    QTemporaryDir dir;
    const std::string fromThree = tempPath(dir, "three.ckpt").toStdString();
    const std::string fromOne = tempPath(dir, "one.ckpt").toStdString();

    std::vector<std::vector<LocalParameter>> three;
    for (int r = 0; r < 3; ++r) three.push_back(makeParams(r, 3));
    std::vector<std::vector<ParameterState>> threeStates(3);
    expectNoErrors(runRanks(3, [&](Communicator& comm) {
      const size_t r = static_cast<size_t>(comm.rank());
      Optimizer optimizer(three[r], options);
      train(three[r], optimizer, comm, 0, 4);
      saveCheckpoint(comm, fromThree, three[r], optimizer, 4);
      for (size_t i = 0; i < three[r].size(); ++i) threeStates[r].push_back(optimizer.state(i));
      train(three[r], optimizer, comm, 4, 6);  // continued on 3 ranks
    }));

    std::vector<LocalParameter> one = makeParams(0, 1);
    Optimizer optimizer(one, options);
    QCOMPARE(loadCheckpoint(fromThree, one, optimizer, 0), int64_t{4});
    QCOMPARE(optimizer.steps(), int64_t{4});
    for (size_t i = 0; i < one.size(); ++i) {
      ParameterState s = optimizer.state(i);
      QCOMPARE(s.step, int64_t{4});
      QCOMPARE(s.tensors.size(), optimizer.stateNames().size());
      for (const std::string& name : optimizer.stateNames()) {
        at::Tensor assembled = assemble(three, i, [&](int r) { return threeStates[r][i].tensors.at(name); });
        QVERIFY2(at::equal(s.tensors.at(name), assembled), (specs()[i].name + "." + name).c_str());
      }
    }

    // Saved from 1 rank and read by each of 3: the pieces are the slices of the full tensors.
    expectNoErrors(runRanks(1, [&](Communicator& comm) { saveCheckpoint(comm, fromOne, one, optimizer, 4); }));
    for (int r = 0; r < 3; ++r) {
      std::vector<LocalParameter> piece = makeParams(r, 3);
      Optimizer o(piece, options);
      QCOMPARE(loadCheckpoint(fromOne, piece, o, r), int64_t{4});
      for (size_t i = 0; i < piece.size(); ++i) {
        QVERIFY(at::equal(piece[i].value, pieceOf(piece[i], one[i].value, r)));
        QCOMPARE(piece[i].value.size(std::max(piece[i].dim, 0)),
                 piece[i].replicated() ? specs()[i].shape[0] : specs()[i].lengths[static_cast<size_t>(r)]);
        for (const std::string& name : o.stateNames())
          QVERIFY(at::equal(o.state(i).tensors.at(name), pieceOf(piece[i], optimizer.state(i).tensors.at(name), r)));
      }
    }

    // Continuing on 1 rank follows the 3-rank run (to rounding: the norms sum in another order).
    World world(1);
    ThreadComm comm(world, 0);
    train(one, optimizer, comm, 4, 6);
    for (size_t i = 0; i < one.size(); ++i)
      QVERIFY2(at::allclose(one[i].value, assemble(three, i), 0, 1e-6), specs()[i].name.c_str());
  }

  // The file is torch.save's format: Python's torch.load reads the dict documented in checkpoint.h.
  void pythonReadsCheckpoint() {
    const QString python = QStringLiteral(HAP_PYTHON);
    // The zoo fixture every runtime test needs is exported by the same Python: never skipped.
    QVERIFY2(!python.isEmpty() && QFileInfo(python).isExecutable(), "no Python with torch (HAP_PYTHON)");
    QTemporaryDir dir;
    const std::string path = tempPath(dir, "py.ckpt").toStdString();
    std::vector<std::vector<LocalParameter>> ranks;
    for (int r = 0; r < 3; ++r) ranks.push_back(makeParams(r, 3));
    const OptimizerOptions options = optionsFor("adamw");
    expectNoErrors(runRanks(3, [&](Communicator& comm) {
      Optimizer optimizer(ranks[static_cast<size_t>(comm.rank())], options);
      train(ranks[static_cast<size_t>(comm.rank())], optimizer, comm, 0, 2);
      optimizer.setSteps(17);  // as after 17 steps of which the parameters took 2
      saveCheckpoint(comm, path, ranks[static_cast<size_t>(comm.rank())], optimizer, 17);
    }));

    const char* script = R"PY(
import sys, zlib, torch
d = torch.load(sys.argv[1])
assert d["format"] == "hap-checkpoint" and d["version"] == 3, d.keys()
assert d["buffers"] == {}, d["buffers"]
# The checksums as docs/formats.md describes them: zlib's CRC-32 of each tensor's bytes and of the
# canonical header text.
c = d["checksums"]
assert c["algorithm"] == "crc32", c
tensors = {"parameters/" + k: v for k, v in d["parameters"].items()}
tensors.update({"optimizer_state/%s/%s" % (k, n): v for k, s in d["optimizer_state"].items() for n, v in s.items()})
tensors.update({"buffers/" + k: v for k, v in d["buffers"].items()})
assert sorted(tensors) == sorted(c["tensors"]), (sorted(tensors), sorted(c["tensors"]))
for k, t in tensors.items():
    assert c["tensors"][k] == zlib.crc32(t.contiguous().numpy().tobytes()), k
def text(x): return "%d:%s" % (len(x.encode()), x)
dtypes = {torch.float32: "float32", torch.float64: "float64", torch.int64: "int64"}
header = "hap-checkpoint header\n" + "".join("%s %s\n" % kv for kv in [
    ("format", text(d["format"])), ("version", d["version"]), ("iteration", d["iteration"]),
    ("optimizer", text(d["optimizer"])), ("optimizer_steps", d["optimizer_steps"]), ("algorithm", text("crc32"))])
for k in sorted(tensors):
    t = tensors[k]
    header += "tensor %s %s [%s] [%s] %d %d\n" % (text(k), dtypes[t.dtype], ",".join(map(str, t.shape)),
                                                  ",".join(map(str, t.stride())), t.storage_offset(), c["tensors"][k])
assert c["header"] == zlib.crc32(header.encode()), header
print(d["iteration"], d["optimizer"], d["optimizer_steps"])
for name in sorted(d["parameters"]):
    t, s = d["parameters"][name], d["optimizer_state"][name]
    assert s["exp_avg"].shape == t.shape and s["exp_avg_sq"].shape == t.shape, name
    print("|".join([name, "x".join(map(str, t.shape)), repr(t.double().sum().item()), str(int(s["step"])),
                    repr(s["exp_avg_sq"].double().sum().item())]))
)PY";
    QProcess process;
    process.start(python, {"-c", script, QString::fromStdString(path)});
    if (!process.waitForFinished(120000)) {
      process.kill();
      process.waitForFinished(5000);
      QFAIL("python did not finish within 120 s");
    }
    const QString err = QString::fromUtf8(process.readAllStandardError());
    QVERIFY2(process.exitStatus() == QProcess::NormalExit && process.exitCode() == 0, qPrintable(err));
    QStringList lines = QString::fromUtf8(process.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1 + static_cast<int>(specs().size()));
    QCOMPARE(lines[0], QString("17 adamw 17"));

    std::map<std::string, size_t> byName;  // sorted, as Python prints them
    for (size_t i = 0; i < specs().size(); ++i) byName[specs()[i].name] = i;
    int line = 1;
    for (const auto& [name, i] : byName) {
      const QStringList f = lines[line++].split('|');
      QCOMPARE(f.size(), 5);
      QCOMPARE(f[0], QString::fromStdString(name));
      QStringList dims;
      for (int64_t d : specs()[i].shape) dims << QString::number(d);
      QCOMPARE(f[1], dims.join('x'));
      const double sum = assemble(ranks, i).to(at::kDouble).sum().item<double>();
      QVERIFY2(std::abs(f[2].toDouble() - sum) < 1e-9, qPrintable(f.join(' ')));
      QCOMPARE(f[3], QString("2"));
      QVERIFY2(f[4].toDouble() > 0, qPrintable(f.join(' ')));
    }
  }

  void checkpointErrors() {
    QTemporaryDir dir;
    const std::string path = tempPath(dir, "good.ckpt").toStdString();
    std::vector<LocalParameter> params = makeParams(0, 1);
    Optimizer optimizer(params, optionsFor("adamw"));
    World world(1);
    ThreadComm comm(world, 0);
    train(params, optimizer, comm, 0, 1);
    saveCheckpoint(comm, path, params, optimizer, 1);
    QVERIFY(QFileInfo::exists(QString::fromStdString(path)));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 1);  // no temporary file left

    // A missing file, and a file that is no checkpoint.
    const std::string missing = tempPath(dir, "missing.ckpt").toStdString();
    QString error = runtimeErrorOf([&] { loadCheckpoint(missing, params, optimizer, 0); });
    QVERIFY2(error.contains(QString::fromStdString(missing)), qPrintable(error));
    const std::string garbage = tempPath(dir, "garbage.ckpt").toStdString();
    {
      QFile f(QString::fromStdString(garbage));
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("not a checkpoint");
    }
    error = runtimeErrorOf([&] { loadCheckpoint(garbage, params, optimizer, 0); });
    QVERIFY2(error.contains(QString::fromStdString(garbage)), qPrintable(error));

    // A parameter the file lacks, and one whose shape differs: named, and nothing is changed.
    std::vector<LocalParameter> other = makeParams(0, 1);
    other.push_back({"extra.weight", {2}, at::zeros({2}).requires_grad_(true), -1, {}});
    Optimizer otherOptimizer(other, optionsFor("adamw"));
    error = runtimeErrorOf([&] { loadCheckpoint(path, other, otherOptimizer, 0); });
    QVERIFY2(error.contains(QString::fromStdString(path)) && error.contains("'extra.weight'"), qPrintable(error));
    QVERIFY(at::equal(other[0].value, initialValue(0)));

    std::vector<LocalParameter> reshaped = makeParams(0, 1);
    reshaped[4].fullShape = {4};
    reshaped[4].value = at::zeros({4}).requires_grad_(true);
    Optimizer reshapedOptimizer(reshaped, optionsFor("adamw"));
    error = runtimeErrorOf([&] { loadCheckpoint(path, reshaped, reshapedOptimizer, 0); });
    QVERIFY2(error.contains("'d.weight'") && error.contains("[2, 2]") && error.contains("[4]"), qPrintable(error));

    // Another optimizer kind.
    std::vector<LocalParameter> sgdParams = makeParams(0, 1);
    Optimizer sgd(sgdParams, optionsFor("sgd"));
    error = runtimeErrorOf([&] { loadCheckpoint(path, sgdParams, sgd, 0); });
    QVERIFY2(error.contains("adamw") && error.contains("sgd"), qPrintable(error));

    // Rank 0 cannot write: every rank fails, none waits.
    const std::string unwritable = tempPath(dir, "no-such-folder/x.ckpt").toStdString();
    std::vector<std::vector<LocalParameter>> ranks;
    for (int r = 0; r < 3; ++r) ranks.push_back(makeParams(r, 3));
    std::vector<std::string> errors = runRanks(3, [&](Communicator& c) {
      Optimizer o(ranks[static_cast<size_t>(c.rank())], optionsFor("sgd"));
      saveCheckpoint(c, unwritable, ranks[static_cast<size_t>(c.rank())], o, 0);
    });
    QVERIFY2(QString::fromStdString(errors[0]).contains(QString::fromStdString(unwritable)), errors[0].c_str());
    for (int r = 1; r < 3; ++r) QVERIFY2(QString::fromStdString(errors[r]).contains("rank 0"), errors[r].c_str());
  }

  // Export: the zoo's MLP with trained values, from 1 rank and from 3 (cut, empty and replicated
  // pieces); the copy reloads with those values and runs forward.
  void exportModelRoundTrip_data() {
    QTest::addColumn<int>("world");
    QTest::newRow("1 rank") << 1;
    QTest::newRow("3 ranks") << 3;
  }
  void exportModelRoundTrip() {
    QFETCH(int, world);
    const std::string modelPath = qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/mlp-tiny.pt";
    QVERIFY2(QFileInfo::exists(QString::fromStdString(modelPath)), "run the zoo fixture (export_zoo_tiny) first");
    QTemporaryDir dir;
    const std::string outPath = tempPath(dir, "trained.pt").toStdString();

    // Trained values: the model's own plus a pattern; cut as a plan might cut them.
    std::map<std::string, std::pair<int, std::vector<int64_t>>> cuts = {
        {"hidden.0.weight", {0, {10, 0, 22}}}, {"hidden.1.weight", {1, {0, 32, 0}}}, {"head.bias", {0, {1, 1, 2}}}};
    torch::jit::Module original = torch::jit::load(modelPath);
    std::map<std::string, at::Tensor> trained;
    std::vector<std::vector<LocalParameter>> ranks(static_cast<size_t>(world));
    for (const auto& named : original.named_parameters()) {
      at::Tensor t = named.value.detach() + pattern(named.value.sizes().vec(), 0.1, 0.5);
      trained[named.name] = t;
      for (int r = 0; r < world; ++r) {
        LocalParameter p;
        p.name = named.name;
        p.fullShape = named.value.sizes().vec();
        if (auto it = cuts.find(named.name); it != cuts.end() && world == 3) std::tie(p.dim, p.lengths) = it->second;
        p.value = pieceOf(p, t, r).clone().requires_grad_(true);
        ranks[static_cast<size_t>(r)].push_back(std::move(p));
      }
    }
    QCOMPARE(trained.size(), size_t{6});
    expectNoErrors(runRanks(world, [&](Communicator& comm) {
      exportModel(comm, modelPath, outPath, ranks[static_cast<size_t>(comm.rank())]);
    }));

    torch::jit::Module exported = torch::jit::load(outPath);
    size_t count = 0;
    for (const auto& named : exported.named_parameters()) {
      QVERIFY2(at::equal(named.value, trained.at(named.name)), named.name.c_str());
      QVERIFY(named.value.requires_grad());
      ++count;
    }
    QCOMPARE(count, trained.size());
    std::map<std::string, at::Tensor> before;
    for (const auto& named : original.named_parameters()) before[named.name] = named.value;
    for (const auto& named : torch::jit::load(modelPath).named_parameters())  // the source is untouched
      QVERIFY(at::equal(named.value, before.at(named.name)));
    at::Tensor x = pattern({8, 16}, 0.2, 0.3);
    at::Tensor y = at::arange(8, at::kLong).remainder(4);
    at::Tensor loss = exported.forward({x, y}).toTensor();
    QVERIFY(loss.dim() == 0 && std::isfinite(loss.item<double>()));
    QVERIFY(!at::equal(loss, original.forward({x, y}).toTensor()));
  }

  void exportErrors() {
    const std::string modelPath = qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/mlp-tiny.pt";
    QTemporaryDir dir;
    const std::string outPath = tempPath(dir, "out.pt").toStdString();
    std::vector<std::vector<LocalParameter>> ranks(3);
    for (int r = 0; r < 3; ++r) {
      LocalParameter p{"no.such.weight", {3}, {}, 0, {1, 1, 1}};
      p.value = pieceOf(p, at::zeros({3}), r).clone().requires_grad_(true);
      ranks[static_cast<size_t>(r)].push_back(p);
    }
    std::vector<std::string> errors = runRanks(3, [&](Communicator& comm) {
      exportModel(comm, modelPath, outPath, ranks[static_cast<size_t>(comm.rank())]);
    });
    QVERIFY2(QString::fromStdString(errors[0]).contains("'no.such.weight'") &&
                 QString::fromStdString(errors[0]).contains(QString::fromStdString(modelPath)),
             errors[0].c_str());
    for (int r = 1; r < 3; ++r) QVERIFY2(!errors[r].empty(), "every rank fails");
    QVERIFY(!QFileInfo::exists(QString::fromStdString(outPath)));

    errors = runRanks(1, [&](Communicator& comm) { exportModel(comm, outPath + ".missing", outPath, {}); });
    QVERIFY2(QString::fromStdString(errors[0]).contains(".missing"), errors[0].c_str());
  }
};

QTEST_GUILESS_MAIN(TstTrainingState)
#include "tst_training_state.moc"
