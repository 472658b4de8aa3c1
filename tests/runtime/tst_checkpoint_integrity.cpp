// Checkpoints that cannot be loaded wrong (issue 32 item 3; runtime/train/checkpoint_format.h):
// - the checksums are those docs/formats.md describes (recomputed here from its canonical header
//   text, independently of the writer);
// - a flipped byte (or 64) inside a tensor's bytes is an error naming the file and the tensor;
//   the hand edit of the issue (iteration 2 -> 255) and a changed name are a damaged header;
//   every single-byte flip anywhere in a file is refused or loads exactly the intact state;
// - a negative iteration, an iteration other than optimizer_steps, a step count above it, a
//   truncated file, a folder, a version-2 file: errors naming the file and what is wrong;
// - a write that fails part-way (the file size limit, as a full disk) leaves the previous
//   checkpoint as it was and no temporary file.
// One rank in this process (a one-rank communicator); the worker processes are tst_checkpoints'.
#include <sys/resource.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/torch.h>
#include <QtTest>

#include <algorithm>
#include <csignal>
#include <functional>
#include <map>

#include "runtime/comm/communicator.h"
#include "runtime/core/runtime_error.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_format.h"
#include "runtime/train/checkpoint_list.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/parameters.h"

using namespace hap;
using namespace hap::runtime;

namespace {

// A world of one rank: every collective is the identity.
class SoloComm : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  c10::Device device() const override { return c10::kCPU; }
  void allReduce(at::Tensor&) override {}
  void allReduceMax(at::Tensor&) override {}
  at::Tensor allGather(const at::Tensor& local, int, const std::vector<int64_t>&,
                       CommMethod) override {
    return local;
  }
  at::Tensor reduceScatter(const at::Tensor& full, int, const std::vector<int64_t>&,
                           CommMethod) override {
    return full;
  }
  at::Tensor allToAll(const at::Tensor& local, int, const std::vector<int64_t>&, int,
                      const std::vector<int64_t>&) override {
    return local;
  }
  void broadcast(at::Tensor&, int) override {}
  void barrier() override {}
  std::unique_ptr<Pending> allReduceAsync(at::Tensor&) override {
    struct Done : Pending {
      void wait() override {}
    };
    return std::make_unique<Done>();
  }
  AllReduceCounts allReduceCounts() const override { return {}; }
};

at::Tensor pattern(const std::vector<int64_t>& shape, double phase) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return at::sin(at::arange(n, at::kDouble) * 0.77 + phase).to(at::kFloat).reshape(shape);
}

// A model's training state: parameters (one cut into one piece), Adam's state, a buffer.
struct State {
  std::vector<LocalParameter> params;
  std::vector<LocalBuffer> buffers;
  std::unique_ptr<Optimizer> optimizer;

  explicit State(int64_t width) {
    const std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
        {"w", {width, width}}, {"b", {width}}, {"head.weight", {4, width}}};
    for (size_t i = 0; i < shapes.size(); ++i) {
      LocalParameter p;
      p.name = shapes[i].first;
      p.fullShape = shapes[i].second;
      if (i == 0) {
        p.dim = 0;
        p.lengths = {width};
      }
      p.value = pattern(p.fullShape, 0.1 + static_cast<double>(i)).requires_grad_(true);
      params.push_back(std::move(p));
    }
    LocalBuffer bn;
    bn.name = "bn.running_mean";
    bn.fullShape = {width};
    bn.value = pattern(bn.fullShape, 7.3);
    buffers.push_back(std::move(bn));
    OptimizerOptions o;
    o.kind = OptimizerOptions::Kind::Adam;
    o.lr = 0.01;
    optimizer = std::make_unique<Optimizer>(params, o);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  void train(int64_t steps) {
    for (int64_t t = 0; t < steps; ++t) {
      for (size_t i = 0; i < params.size(); ++i)
        params[i].value.mutable_grad() =
            pattern(params[i].fullShape, 2.0 * static_cast<double>(t + i));
      optimizer->step();
      optimizer->zeroGrad();
    }
    c10::NoGradGuard noGrad;
    buffers[0].value.add_(0.5);
  }

  void save(const std::string& path) {
    SoloComm comm;
    saveCheckpoint(comm, path, params, *optimizer, optimizer->steps(), buffers);
  }

  int64_t load(const std::string& path) {
    return loadCheckpoint(path, params, *optimizer, 0, &buffers);
  }

  // Everything a load sets, to compare bit for bit.
  std::vector<at::Tensor> snapshot() const {
    std::vector<at::Tensor> out;
    for (size_t i = 0; i < params.size(); ++i) {
      out.push_back(params[i].value.detach().clone());
      const ParameterState s = optimizer->state(i);
      out.push_back(at::scalar_tensor(s.step, at::kLong));
      for (const auto& [name, t] : s.tensors) out.push_back(t.clone());
    }
    for (const LocalBuffer& b : buffers) out.push_back(b.value.clone());
    out.push_back(at::scalar_tensor(optimizer->steps(), at::kLong));
    return out;
  }
};

bool same(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].scalar_type() != b[i].scalar_type() || !at::equal(a[i], b[i])) return false;
  return true;
}

QByteArray readBytes(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool writeBytes(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
}

QByteArray rawBytes(const at::Tensor& t) {
  const at::Tensor c = t.detach().contiguous();
  return QByteArray(static_cast<const char*>(c.data_ptr()), static_cast<qsizetype>(c.nbytes()));
}

// The RuntimeError's message of f(), or "" when it throws none (other exceptions propagate).
QString errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const RuntimeError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

// ---- the documented checksums, recomputed here (docs/formats.md, "Checkpoint") ----

c10::impl::GenericDict rootOf(const QByteArray& bytes) {
  return torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end())).toGenericDict();
}

std::string dtypeName(at::ScalarType t) {
  return t == at::kFloat    ? "float32"
         : t == at::kLong   ? "int64"
         : t == at::kDouble ? "float64"
                            : "other";
}

std::string joined(c10::IntArrayRef v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::string counted(const std::string& s) {
  return std::to_string(s.size()) + ":" + s;
}

// Every tensor by key ("parameters/NAME", "optimizer_state/NAME/STATE", "buffers/NAME"), in key
// order.
std::map<std::string, at::Tensor> tensorsOf(const c10::impl::GenericDict& root) {
  std::map<std::string, at::Tensor> out;
  for (const auto& e : root.at("parameters").toGenericDict())
    out["parameters/" + e.key().toStringRef()] = e.value().toTensor();
  for (const auto& e : root.at("optimizer_state").toGenericDict())
    for (const auto& s : e.value().toGenericDict())
      out["optimizer_state/" + e.key().toStringRef() + "/" + s.key().toStringRef()] =
          s.value().toTensor();
  for (const auto& e : root.at("buffers").toGenericDict())
    out["buffers/" + e.key().toStringRef()] = e.value().toTensor();
  return out;
}

uint32_t crcOf(const at::Tensor& t) {
  const QByteArray b = rawBytes(t);
  return checkpoint_format::crc32(b.constData(), static_cast<size_t>(b.size()));
}

std::string headerText(const c10::impl::GenericDict& root,
                       const std::map<std::string, int64_t>& sums) {
  std::string s = "hap-checkpoint header\n";
  s += "format " + counted(root.at("format").toStringRef()) + "\n";
  s += "version " + std::to_string(root.at("version").toInt()) + "\n";
  s += "iteration " + std::to_string(root.at("iteration").toInt()) + "\n";
  s += "optimizer " + counted(root.at("optimizer").toStringRef()) + "\n";
  s += "optimizer_steps " + std::to_string(root.at("optimizer_steps").toInt()) + "\n";
  s += "algorithm " + counted("crc32") + "\n";
  for (const auto& [key, t] : tensorsOf(root))
    s += "tensor " + counted(key) + " " + dtypeName(t.scalar_type()) + " " + joined(t.sizes()) +
         " " + joined(t.strides()) + " " + std::to_string(t.storage_offset()) + " " +
         std::to_string(sums.at(key)) + "\n";
  return s;
}

// `root` with checksums recomputed as documented: a file edited by a tool that knows the format.
QByteArray resealed(c10::impl::GenericDict root) {
  std::map<std::string, int64_t> sums;
  c10::impl::GenericDict tensorSums(c10::StringType::get(), c10::IntType::get());
  for (const auto& [key, t] : tensorsOf(root)) {
    sums[key] = crcOf(t);
    tensorSums.insert(key, sums[key]);
  }
  const std::string text = headerText(root, sums);
  c10::impl::GenericDict checksums(c10::StringType::get(), c10::AnyType::get());
  checksums.insert("algorithm", std::string("crc32"));
  checksums.insert("header",
                   static_cast<int64_t>(checkpoint_format::crc32(text.data(), text.size())));
  checksums.insert("tensors", tensorSums);
  root.insert_or_assign("checksums", checksums);
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(root));
  return QByteArray(bytes.data(), static_cast<qsizetype>(bytes.size()));
}

// Sets a soft resource limit for the lifetime of the guard. RLIMIT_FSIZE: with SIGXFSZ ignored,
// so that a write past it fails with EFBIG as a write to a full disk fails with ENOSPC.
// RLIMIT_AS: a damaged length that made a reader allocate gigabytes fails here, not the machine.
class Limit {
 public:
  Limit(int resource, rlim_t value) : resource_(resource) {
    getrlimit(resource_, &saved_);
    if (resource_ == RLIMIT_FSIZE) previous_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = saved_;
    limited.rlim_cur = std::min(value, saved_.rlim_max);
    ok_ = setrlimit(resource_, &limited) == 0;
  }
  ~Limit() {
    setrlimit(resource_, &saved_);
    if (resource_ == RLIMIT_FSIZE) std::signal(SIGXFSZ, previous_);
  }
  bool ok() const { return ok_; }

 private:
  int resource_;
  rlimit saved_{};
  void (*previous_)(int) = SIG_DFL;
  bool ok_ = false;
};

}  // namespace

class TstCheckpointIntegrity : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  QString good_;                   // a checkpoint after 2 steps (width 16)
  std::vector<at::Tensor> saved_;  // its state
  QByteArray bytes_;               // its bytes

  // Writes `bytes` as a file and returns the error of loading it into a fresh state (which must
  // be left as it was when the load fails).
  QString loadError(const QString& name, const QByteArray& bytes) {
    const QString path = tmp_.filePath(name);
    if (!writeBytes(path, bytes)) return "cannot write " + path;
    State fresh(16);
    const std::vector<at::Tensor> before = fresh.snapshot();
    const QString error = errorOf([&] { fresh.load(path.toStdString()); });
    if (!error.isEmpty() && !same(fresh.snapshot(), before))
      return "a failed load changed the state: " + error;
    return error;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    good_ = tmp_.filePath("good.pt");
    State s(16);
    s.train(2);
    s.save(good_.toStdString());
    saved_ = s.snapshot();
    bytes_ = readBytes(good_);
    QVERIFY(!bytes_.isEmpty());
  }

  void intactRoundTrip() {
    State fresh(16);
    QCOMPARE(fresh.load(good_.toStdString()), int64_t{2});
    QVERIFY(same(fresh.snapshot(), saved_));
    const CheckpointInfo info = readCheckpointInfo(good_.toStdString());
    QVERIFY2(info.error.empty(), info.error.c_str());
    QCOMPARE(info.version, int64_t{3});
    QCOMPARE(info.iteration, int64_t{2});
    QCOMPARE(info.optimizerSteps, int64_t{2});
  }

  // The checksums are the documented ones: zlib's CRC-32 of each tensor's bytes and of the
  // canonical header text.
  void checksumsAreTheDocumentedOnes() {
    const char* check = "123456789";
    QCOMPARE(checkpoint_format::crc32(check, 9), uint32_t{0xCBF43926});  // CRC-32's check value
    const c10::impl::GenericDict root = rootOf(bytes_);
    const c10::impl::GenericDict sums = root.at("checksums").toGenericDict();
    QCOMPARE(QString::fromStdString(sums.at("algorithm").toStringRef()), QString("crc32"));
    const c10::impl::GenericDict tensorSums = sums.at("tensors").toGenericDict();
    std::map<std::string, int64_t> written;
    for (const auto& [key, t] : tensorsOf(root)) {
      QVERIFY2(tensorSums.contains(key), key.c_str());
      written[key] = tensorSums.at(key).toInt();
      QCOMPARE(written[key], static_cast<int64_t>(crcOf(t)));
    }
    QCOMPARE(written.size(),
             size_t{3 + 3 * 3 + 1});  // 3 parameters, Adam's step and 2 moments each, 1 buffer
    QCOMPARE(static_cast<size_t>(tensorSums.size()), written.size());
    const std::string text = headerText(root, written);
    QCOMPARE(sums.at("header").toInt(),
             static_cast<int64_t>(checkpoint_format::crc32(text.data(), text.size())));
    // A file resealed by this implementation loads: the two agree.
    QVERIFY2(loadError("resealed.pt", resealed(root)).isEmpty(), "a resealed intact file loads");
  }

  // Damaged tensor bytes: the error names the file and the tensor; nothing is loaded.
  void flippedPayloadNamesTheTensor_data() {
    QTest::addColumn<int>("which");  // the index in State's snapshot order below
    QTest::addColumn<QString>("named");
    QTest::addColumn<int>("flips");
    QTest::newRow("parameter, 1 byte") << 0 << "parameter 'w'" << 1;
    QTest::newRow("parameter, 64 bytes") << 0 << "parameter 'w'" << 64;
    QTest::newRow("optimizer state, 64 bytes")
        << 1 << "optimizer state 'exp_avg' of parameter 'w'" << 64;
    QTest::newRow("buffer, 1 byte") << 2 << "buffer 'bn.running_mean'" << 1;
  }
  void flippedPayloadNamesTheTensor() {
    QFETCH(int, which);
    QFETCH(QString, named);
    QFETCH(int, flips);
    const c10::impl::GenericDict root = rootOf(bytes_);
    const at::Tensor tensors[] = {
        root.at("parameters").toGenericDict().at("w").toTensor(),
        root.at("optimizer_state").toGenericDict().at("w").toGenericDict().at("exp_avg").toTensor(),
        root.at("buffers").toGenericDict().at("bn.running_mean").toTensor()};
    const QByteArray raw = rawBytes(tensors[which]);
    const qsizetype at = bytes_.indexOf(raw);
    QVERIFY2(at >= 0 && bytes_.indexOf(raw, at + 1) < 0, "the tensor's bytes are in the file once");
    QByteArray damaged = bytes_;
    const qsizetype start = at + (raw.size() - flips) / 2;
    for (int i = 0; i < flips; ++i)
      damaged[start + i] = static_cast<char>(damaged[start + i] ^ 0x5A);
    const QString error = loadError("payload.pt", damaged);
    QVERIFY2(error.contains(tmp_.filePath("payload.pt")) && error.contains(named) &&
                 error.contains("damaged") && error.contains("checksum"),
             qPrintable(error));
  }

  // The hand edit (iteration 2 -> 255 in data.pkl) and a changed parameter name: the
  // header no longer matches its checksum.
  void flippedHeaderIsRefused() {
    const QByteArray key = QByteArray("X\x09\x00\x00\x00iteration", 14);
    qsizetype at = bytes_.indexOf(key);
    QVERIFY2(at >= 0, "the pickled key \"iteration\"");
    at += key.size();
    if (bytes_[at] == 'q')
      at += 2;  // BINPUT n
    else if (bytes_[at] == 'r')
      at += 5;                  // LONG_BINPUT n
    QCOMPARE(bytes_[at], 'K');  // BININT1
    QCOMPARE(static_cast<int>(static_cast<uint8_t>(bytes_[at + 1])), 2);
    QByteArray edited = bytes_;
    edited[at + 1] = static_cast<char>(255);
    QString error = loadError("iteration.pt", edited);
    QVERIFY2(error.contains(tmp_.filePath("iteration.pt")) && error.contains("header") &&
                 error.contains("damaged"),
             qPrintable(error));
    CheckpointInfo info = readCheckpointInfo(tmp_.filePath("iteration.pt").toStdString());
    QVERIFY2(QString::fromStdString(info.error).contains("header"), info.error.c_str());

    const qsizetype name = bytes_.indexOf("head.weight");
    QVERIFY(name >= 0);
    edited = bytes_;
    edited[name + 3] = 'r';  // "hear.weight"
    error = loadError("name.pt", edited);
    QVERIFY2(error.contains(tmp_.filePath("name.pt")) && error.contains("header"),
             qPrintable(error));
  }

  // A header pickle that breaks the pickle machine's stack discipline is refused before LibTorch's
  // unpickler reads it (which would pop an empty stack, read an unset memo entry or pop below a
  // mark: heap overflows and bad frees, found by fuzz_checkpoint_header). In-place edits of the
  // good header, each naming what is wrong, by the worker's load and by the header reader alike.
  void brokenPickleStackIsRefused() {
    const qsizetype record = bytes_.indexOf("data.pkl");
    QVERIFY2(record >= 0, "the data.pkl record");
    const qsizetype start = bytes_.indexOf(QByteArray("\x80\x02", 2), record);
    QVERIFY2(start >= 0, "data.pkl's PROTO 2");
    // LibTorch's pickler starts with GLOBAL torch.jit._pickle restore_type_tag, BINPUT 0, then the
    // root EMPTY_DICT and the MARK of its SETITEMS.
    const qsizetype global = start + 2;
    QCOMPARE(bytes_[global], 'c');
    const qsizetype put = bytes_.indexOf('\n', bytes_.indexOf('\n', global) + 1) + 1;
    QCOMPARE(bytes_[put], 'q');  // BINPUT 0
    const qsizetype mark = bytes_.indexOf('(', put);
    QVERIFY(mark > put);
    const qsizetype root = global;
    struct Edit {
      const char* name;
      qsizetype at;
      char byte;
      const char* says;
    };
    for (const Edit& e : {Edit{"pop-empty", root, '0', "takes 1 values of a frame holding 0"},
                          Edit{"no-mark", mark, 'N', "ends a frame no MARK opened"},
                          Edit{"unset-memo", put, 'h', "never put"}}) {
      QByteArray edited = bytes_;
      edited[e.at] = e.byte;
      const QString file = QString("%1.pt").arg(e.name);
      const QString error = loadError(file, edited);
      QVERIFY2(error.contains("not a well-formed pickle") && error.contains(e.says), qPrintable(error));
      const CheckpointInfo info = readCheckpointInfo(tmp_.filePath(file).toStdString());
      QVERIFY2(QString::fromStdString(info.error).contains(e.says), info.error.c_str());
    }
  }

  // Every single-byte flip of a small checkpoint, anywhere in the file (zip headers, data.pkl,
  // tensor bytes, the directory): refused with a RuntimeError, or loads exactly the intact state
  // (a byte nothing reads: the zip's padding, a memo index nothing gets). Never another
  // exception, never a crash, never a different state, never gigabytes for a damaged length.
  void everyByteFlipIsRefusedOrHarmless() {
    const QString path = tmp_.filePath("small.pt");
    State s(2);
    s.train(1);
    s.save(path.toStdString());
    const std::vector<at::Tensor> intact = s.snapshot();
    const QByteArray bytes = readBytes(path);
    QVERIFY(bytes.size() > 1000);
    const QString flipped = tmp_.filePath("flipped.pt");
    int refused = 0, harmless = 0;
    const Limit memory(RLIMIT_AS, rlim_t{4} << 30);  // 4 GiB of address space (the test needs < 1)
    QVERIFY(memory.ok());
    for (qsizetype i = 0; i < bytes.size(); ++i) {
      QByteArray b = bytes;
      b[i] = static_cast<char>(b[i] ^ (i % 2 ? 0x01 : 0x80));
      QVERIFY(writeBytes(flipped, b));
      State fresh(2);
      const std::vector<at::Tensor> before = fresh.snapshot();
      QString error;
      try {
        fresh.load(flipped.toStdString());
      } catch (const RuntimeError& e) {
        error = QString::fromStdString(e.what());
      } catch (const std::exception& e) {
        QFAIL(qPrintable(QString("byte %1: not a RuntimeError: %2").arg(i).arg(e.what())));
      }
      if (!error.isEmpty()) {
        QVERIFY2(error.contains(flipped), qPrintable(QString("byte %1: %2").arg(i).arg(error)));
        QVERIFY2(same(fresh.snapshot(), before),
                 qPrintable(QString("byte %1: a failed load changed the state").arg(i)));
        QVERIFY2(!error.contains("alloc"),
                 qPrintable(QString("byte %1: refused for want of memory: %2").arg(i).arg(error)));
        ++refused;
      } else {
        QVERIFY2(same(fresh.snapshot(), intact),
                 qPrintable(QString("byte %1 loaded another state").arg(i)));
        ++harmless;
      }
      (void)readCheckpointInfo(flipped.toStdString());  // never throws
    }
    qInfo("%d of %d flips refused, %d read nowhere", refused, static_cast<int>(bytes.size()),
          harmless);
    QVERIFY(refused > bytes.size() / 2);
  }

  void negativeIteration() {
    c10::impl::GenericDict root = rootOf(bytes_);
    root.insert_or_assign("iteration", int64_t{-5});
    root.insert_or_assign("optimizer_steps", int64_t{-5});
    const QString error = loadError("negative.pt", resealed(root));
    QVERIFY2(error.contains(tmp_.filePath("negative.pt")) && error.contains("\"iteration\" is -5"),
             qPrintable(error));
  }

  // The iteration 255 in a file of 2 steps, resealed so the checksums pass: the counts
  // disagree. (--steps counts the steps after the checkpoint's, so no iteration is past a run's
  // steps; tst_checkpoints resumes a consistent file.)
  void iterationDisagreesWithTheCounts() {
    c10::impl::GenericDict root = rootOf(bytes_);
    root.insert_or_assign("iteration", int64_t{255});
    QString error = loadError("counts.pt", resealed(root));
    QVERIFY2(error.contains("\"iteration\" is 255") && error.contains("\"optimizer_steps\" is 2"),
             qPrintable(error));

    root = rootOf(bytes_);  // both 1, but the parameters' step counts say 2
    root.insert_or_assign("iteration", int64_t{1});
    root.insert_or_assign("optimizer_steps", int64_t{1});
    error = loadError("steps.pt", resealed(root));
    QVERIFY2(error.contains("parameter '") && error.contains("counts 2 steps"), qPrintable(error));

    // Consistent counts load, whatever the number.
    root = rootOf(bytes_);
    root.insert_or_assign("iteration", int64_t{255});
    root.insert_or_assign("optimizer_steps", int64_t{255});
    const QString path = tmp_.filePath("255.pt");
    QVERIFY(writeBytes(path, resealed(root)));
    State fresh(16);
    QCOMPARE(fresh.load(path.toStdString()), int64_t{255});
  }

  void truncatedFile() {
    for (const qsizetype size :
         {bytes_.size() - 1, bytes_.size() / 2, qsizetype{100}, qsizetype{22}, qsizetype{0}}) {
      const QString name = QString("truncated-%1.pt").arg(size);
      const QString error = loadError(name, bytes_.left(size));
      QVERIFY2(error.contains(tmp_.filePath(name)),
               qPrintable(QString("%1 bytes: %2").arg(size).arg(error)));
      const CheckpointInfo info = readCheckpointInfo(tmp_.filePath(name).toStdString());
      QVERIFY2(!info.error.empty(), qPrintable(name));
    }
  }

  void folderAndOlderVersion() {
    QString error = errorOf([&] {
      State fresh(16);
      fresh.load(tmp_.path().toStdString());
    });
    QVERIFY2(error.contains(tmp_.path()) && error.contains("folder"), qPrintable(error));

    c10::impl::GenericDict root = rootOf(bytes_);  // as a version-2 build wrote it
    QVERIFY(root.erase("checksums") == 1);
    root.insert_or_assign("version", int64_t{2});
    const std::vector<char> v2 = torch::jit::pickle_save(c10::IValue(root));
    error = loadError("v2.pt", QByteArray(v2.data(), static_cast<qsizetype>(v2.size())));
    QVERIFY2(error.contains("version 2") && error.contains("checksums") &&
                 error.contains("build that wrote it"),
             qPrintable(error));
  }

  // A write that fails part-way (the file size limit, as a full disk): an error naming the file
  // and the reason, the previous checkpoint intact, no temporary file left.
  void failedWriteKeepsThePreviousCheckpoint() {
    QTemporaryDir dir;
    const QString path = dir.filePath("step-2.pt");
    State s(16);
    s.train(2);
    s.save(path.toStdString());
    const std::vector<at::Tensor> atTwo = s.snapshot();
    const QByteArray before = readBytes(path);
    QVERIFY(before.size() > 8192);

    s.train(1);  // a step further, written over the same name
    QString error;
    {
      Limit limit(RLIMIT_FSIZE, 4096);
      QVERIFY(limit.ok());
      error = errorOf([&] {
        SoloComm comm;
        saveCheckpoint(comm, path.toStdString(), s.params, *s.optimizer, s.optimizer->steps(),
                       s.buffers);
      });
    }
    QVERIFY2(error.contains(path) && error.contains("File too large"), qPrintable(error));
    QCOMPARE(readBytes(path), before);
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList{"step-2.pt"});
    State fresh(16);
    QCOMPARE(fresh.load(path.toStdString()), int64_t{2});
    QVERIFY(same(fresh.snapshot(), atTwo));

    // Once there is room again the same write succeeds.
    s.save(path.toStdString());
    State after(16);
    QCOMPARE(after.load(path.toStdString()), int64_t{3});
  }
};

QTEST_GUILESS_MAIN(TstCheckpointIntegrity)
#include "tst_checkpoint_integrity.moc"
