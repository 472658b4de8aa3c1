// Batch sources: determinism, pieces of several ranks concatenating to the whole batch (dim 0 and
// dim 1 cuts, zero-length pieces), token and CIFAR file formats, their errors, the shipped samples.
#include <ATen/ATen.h>
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <vector>

#include "runtime/data/data.h"
#include "runtime/core/runtime_error.h"

using namespace hap;
using runtime::InputPiece;

namespace {

InputPiece input(std::string name, ir::DType dtype, ir::Shape shape, std::optional<int64_t> high = std::nullopt) {
  InputPiece p;
  p.name = std::move(name);
  p.dtype = dtype;
  p.shape = std::move(shape);
  if (high) {
    p.low = 0;
    p.high = high;
  }
  return p;
}

// The pieces of `whole` for ranks holding `lengths` of dimension `dim`, in rank order.
std::vector<std::vector<InputPiece>> cut(const std::vector<InputPiece>& whole, int dim,
                                         const std::vector<int64_t>& lengths) {
  std::vector<std::vector<InputPiece>> ranks;
  int64_t offset = 0;
  for (int64_t n : lengths) {
    std::vector<InputPiece> mine = whole;
    for (InputPiece& p : mine) {
      p.dim = dim;
      p.offset = offset;
      p.length = n;
    }
    ranks.push_back(mine);
    offset += n;
  }
  return ranks;
}

// Batch `iteration` as the ranks of `ranks` read it, each input's pieces concatenated along `dim`.
std::vector<at::Tensor> concatenated(const runtime::DataOptions& o, const std::vector<std::vector<InputPiece>>& ranks,
                                     int dim, int64_t iteration) {
  std::vector<std::vector<at::Tensor>> parts;
  for (const auto& pieces : ranks) {
    std::vector<at::Tensor> got = runtime::makeBatchSource(o, pieces)->batch(iteration);
    for (size_t i = 0; i < got.size(); ++i) {
      if (parts.size() <= i) parts.emplace_back();
      const std::vector<int64_t> want = pieces[i].pieceShape();
      if (got[i].sizes().vec() != want || !got[i].is_contiguous()) return {};  // fails the caller's compare
      parts[i].push_back(got[i]);
    }
  }
  std::vector<at::Tensor> out;
  for (auto& p : parts) out.push_back(at::cat(p, dim));
  return out;
}

bool same(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].scalar_type() != b[i].scalar_type() || !at::equal(a[i], b[i])) return false;
  return true;
}

// The message of the RuntimeError `f` throws, or "(no error)".
QString errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const runtime::RuntimeError& e) {
    return QString::fromStdString(e.what());
  }
  return "(no error)";
}

void writeFile(const QString& path, const void* data, size_t bytes) {
  std::ofstream f(path.toStdString(), std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

// Token k of the test token files: a pattern that tells positions apart.
uint16_t tokenAt(int64_t k) { return static_cast<uint16_t>((k * 7) % 100); }

QString writeTokens(const QTemporaryDir& dir, const char* name, int64_t n) {
  std::vector<uint16_t> ids(n);
  for (int64_t k = 0; k < n; ++k) ids[k] = tokenAt(k);
  const QString path = dir.filePath(name);
  writeFile(path, ids.data(), ids.size() * 2);
  return path;
}

// CIFAR test record r: label r % 10, channel c pixel (y, x) = (40c + 3y + 5x + r) % 256.
uint8_t pixelAt(int64_t r, int c, int y, int x) { return static_cast<uint8_t>((40 * c + 3 * y + 5 * x + r) % 256); }

QString writeCifar(const QTemporaryDir& dir, const char* name, int records) {
  std::vector<uint8_t> data;
  for (int r = 0; r < records; ++r) {
    data.push_back(static_cast<uint8_t>(r % 10));
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x) data.push_back(pixelAt(r, c, y, x));
  }
  const QString path = dir.filePath(name);
  writeFile(path, data.data(), data.size());
  return path;
}

constexpr float kMean[3] = {0.4914f, 0.4822f, 0.4465f};
constexpr float kStd[3] = {0.2470f, 0.2435f, 0.2616f};

std::vector<InputPiece> lmInputs(int64_t b, int64_t s, int64_t vocab) {
  return {input("x", ir::DType::Int64, {b, s}, vocab), input("y", ir::DType::Int64, {b, s}, vocab)};
}

std::vector<InputPiece> imageInputs(int64_t b, int64_t side, int64_t classes = 10) {
  return {input("x", ir::DType::Float32, {b, 3, side, side}), input("y", ir::DType::Int64, {b}, classes)};
}

QString sourceDir() { return qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/data"; }

}  // namespace

class TstData : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // ---- synthetic ----------------------------------------------------------------------------

  void syntheticIsAPureFunctionOfSeedIterationAndName() {
    const std::vector<InputPiece> pieces = {input("x", ir::DType::Float32, {4, 6}),
                                            input("y", ir::DType::Int64, {4}, 5)};
    runtime::DataOptions o;
    o.seed = 11;
    auto a = runtime::makeBatchSource(o, pieces);
    auto b = runtime::makeBatchSource(o, pieces);
    QVERIFY(same(a->batch(3), b->batch(3)));
    QVERIFY(same(a->batch(3), a->batch(3)));
    QVERIFY(!at::equal(a->batch(3)[0], a->batch(4)[0]));
    o.seed = 12;
    QVERIFY(!at::equal(a->batch(3)[0], runtime::makeBatchSource(o, pieces)->batch(3)[0]));
    // Each input has its own stream: x does not depend on which other inputs exist.
    QVERIFY(at::equal(a->batch(3)[0], runtime::makeBatchSource({"synthetic", "", "uint16", 11}, {pieces[0]})->batch(3)[0]));
    // Dtypes and ranges as the pieces say.
    const std::vector<at::Tensor> got = a->batch(0);
    QCOMPARE(got[0].scalar_type(), at::kFloat);
    QCOMPARE(got[1].scalar_type(), at::kLong);
    QVERIFY(got[1].min().item<int64_t>() >= 0 && got[1].max().item<int64_t>() < 5);
    // Unknown range: [0, 2).
    auto bits = runtime::makeBatchSource(o, {input("m", ir::DType::Int32, {64})})->batch(0)[0];
    QCOMPARE(bits.scalar_type(), at::kInt);
    QCOMPARE(bits.min().item<int64_t>(), int64_t{0});
    QCOMPARE(bits.max().item<int64_t>(), int64_t{1});
  }

  void syntheticLeavesTheDefaultGeneratorAlone() {
    at::manual_seed(7);
    const at::Tensor expected = at::rand({8});
    at::manual_seed(7);
    runtime::makeBatchSource({}, {input("x", ir::DType::Float32, {16, 16})})->batch(0);
    QVERIFY(at::equal(at::rand({8}), expected));
  }

  void syntheticPiecesConcatenateToTheGlobalBatch_data() {
    QTest::addColumn<int>("dim");
    QTest::newRow("dim 0") << 0;
    QTest::newRow("dim 1") << 1;
  }
  void syntheticPiecesConcatenateToTheGlobalBatch() {
    QFETCH(int, dim);
    const std::vector<InputPiece> whole = {input("x", ir::DType::Float32, {4, 4, 3}),
                                           input("ids", ir::DType::Int64, {4, 4}, 50)};
    runtime::DataOptions o;
    o.seed = 3;
    const std::vector<at::Tensor> global = runtime::makeBatchSource(o, whole)->batch(2);
    QCOMPARE(global[0].sizes().vec(), (std::vector<int64_t>{4, 4, 3}));
    QVERIFY(same(concatenated(o, cut(whole, dim, {3, 0, 1}), dim, 2), global));
    QVERIFY(same(concatenated(o, cut(whole, dim, {1, 1, 2}), dim, 2), global));
  }

  void inconsistentPiecesAreErrors() {
    InputPiece p = input("x", ir::DType::Float32, {4, 8});
    p.dim = 0;
    p.offset = 3;
    p.length = 2;
    QVERIFY(errorOf([&] { runtime::makeBatchSource({}, {p}); }).contains("input 'x'"));
    p.dim = 2;
    QVERIFY(errorOf([&] { runtime::makeBatchSource({}, {p}); }).contains("dim 2"));
    QVERIFY(errorOf([&] { runtime::makeBatchSource({"images", "", "uint16", 0}, {}); }).contains("'images' is unknown"));
    const QString empty = errorOf([&] { runtime::makeBatchSource({}, {input("y", ir::DType::Int64, {4}, 0)}); });
    QVERIFY2(empty.contains("input 'y'") && empty.contains("[0, 0) is empty"), qPrintable(empty));
  }

  // ---- tokens -------------------------------------------------------------------------------

  void tokenBatchesAreWindowsOfTheFile() {
    QTemporaryDir dir;
    const int64_t n = 1000, b = 4, s = 8, windows = (n - 1) / s;  // 124 windows
    runtime::DataOptions o{"tokens", writeTokens(dir, "tokens.bin", n).toStdString()};
    auto src = runtime::makeBatchSource(o, lmInputs(b, s, 100));
    QVERIFY(QString::fromStdString(src->describe()).contains("tokens.bin"));
    for (int64_t it : {int64_t{0}, int64_t{1}, int64_t{31}, int64_t{1000003}}) {  // 31 and 1000003 wrap
      const std::vector<at::Tensor> xy = src->batch(it);
      QCOMPARE(xy[0].sizes().vec(), (std::vector<int64_t>{b, s}));
      QCOMPARE(xy[0].scalar_type(), at::kLong);
      for (int64_t r = 0; r < b; ++r) {
        const int64_t start = ((it * b + r) % windows) * s;
        for (int64_t c = 0; c < s; ++c) {
          QCOMPARE(xy[0][r][c].item<int64_t>(), int64_t{tokenAt(start + c)});
          QCOMPARE(xy[1][r][c].item<int64_t>(), int64_t{tokenAt(start + c + 1)});  // y is x shifted by one
        }
      }
    }
  }

  void tokenPiecesConcatenateToTheWholeBatch_data() {
    QTest::addColumn<int>("dim");
    QTest::addColumn<QList<qlonglong>>("lengths");
    QTest::newRow("rows 3,0,1") << 0 << QList<qlonglong>{3, 0, 1};
    QTest::newRow("rows 1,1,1,1") << 0 << QList<qlonglong>{1, 1, 1, 1};
    QTest::newRow("sequence 5,0,3") << 1 << QList<qlonglong>{5, 0, 3};
    QTest::newRow("sequence 2,6") << 1 << QList<qlonglong>{2, 6};
  }
  void tokenPiecesConcatenateToTheWholeBatch() {
    QFETCH(int, dim);
    QFETCH(QList<qlonglong>, lengths);
    QTemporaryDir dir;
    runtime::DataOptions o{"tokens", writeTokens(dir, "tokens.bin", 500).toStdString()};
    const std::vector<InputPiece> whole = lmInputs(4, 8, 100);
    const std::vector<at::Tensor> global = runtime::makeBatchSource(o, whole)->batch(5);
    const std::vector<int64_t> n(lengths.begin(), lengths.end());
    QVERIFY(same(concatenated(o, cut(whole, dim, n), dim, 5), global));
  }

  void aRankReadsOnlyItsPiece() {
    QTemporaryDir dir;
    runtime::DataOptions o{"tokens", writeTokens(dir, "tokens.bin", 500).toStdString()};
    // One row of 4: x and y of that row need its S + 1 tokens, read once.
    auto row = runtime::makeBatchSource(o, cut(lmInputs(4, 8, 100), 0, {1, 1, 2})[1]);
    row->batch(0);
    QCOMPARE(row->bytesRead(), int64_t{9 * 2});
    // Columns [2, 5) of 4 rows: tokens 2..5 of each window.
    auto cols = runtime::makeBatchSource(o, cut(lmInputs(4, 8, 100), 1, {2, 3, 3})[1]);
    cols->batch(0);
    QCOMPARE(cols->bytesRead(), int64_t{4 * 4 * 2});
    auto none = runtime::makeBatchSource(o, cut(lmInputs(4, 8, 100), 0, {4, 0})[1]);
    QCOMPARE(none->batch(0)[0].sizes().vec(), (std::vector<int64_t>{0, 8}));
    QCOMPARE(none->bytesRead(), int64_t{0});
  }

  void int32TokenFilesAndInt32Inputs() {
    QTemporaryDir dir;
    std::vector<int32_t> ids(100);
    for (int k = 0; k < 100; ++k) ids[k] = 1000 + k;
    writeFile(dir.filePath("t32.bin"), ids.data(), ids.size() * 4);
    runtime::DataOptions o{"tokens", dir.filePath("t32.bin").toStdString(), "int32"};
    std::vector<InputPiece> pieces = lmInputs(2, 4, 2000);
    for (InputPiece& p : pieces) p.dtype = ir::DType::Int32;
    const std::vector<at::Tensor> xy = runtime::makeBatchSource(o, pieces)->batch(1);
    QCOMPARE(xy[0].scalar_type(), at::kInt);
    QCOMPARE(xy[0][0][0].item<int64_t>(), int64_t{1008});  // window 2 starts at token 8
    QCOMPARE(xy[1][1][3].item<int64_t>(), int64_t{1016});  // window 3: tokens 12..16
  }

  void tokenIdsOutsideTheVocabularyAreErrors() {
    QTemporaryDir dir;
    std::vector<uint16_t> ids(400, 5);
    ids[300] = 200;  // window 37 (tokens 296..304) of S = 8
    const QString path = dir.filePath("oov.bin");
    writeFile(path, ids.data(), ids.size() * 2);
    runtime::DataOptions o{"tokens", path.toStdString()};
    // Checked when opened...
    QString e = errorOf([&] { runtime::makeBatchSource(o, lmInputs(4, 8, 128)); });
    QVERIFY2(e.contains(path) && e.contains("id 200") && e.contains("[0, 128)"), qPrintable(e));
    // ...and in every batch: batch 9 holds windows 36..39.
    o.checkWholeFile = false;
    auto src = runtime::makeBatchSource(o, lmInputs(4, 8, 128));
    QCOMPARE(errorOf([&] { src->batch(8); }), QString("(no error)"));
    e = errorOf([&] { src->batch(9); });
    QVERIFY2(e.contains(path) && e.contains("id 200"), qPrintable(e));
    // A vocabulary that holds the id is fine.
    QCOMPARE(errorOf([&] { runtime::makeBatchSource({"tokens", path.toStdString()}, lmInputs(4, 8, 256))->batch(9); }),
             QString("(no error)"));
  }

  void badTokenFilesAndInputsAreErrors() {
    QTemporaryDir dir;
    const QString truncated = dir.filePath("truncated.bin");
    std::vector<uint8_t> bytes(201, 1);
    writeFile(truncated, bytes.data(), bytes.size());
    QString e = errorOf([&] { runtime::makeBatchSource({"tokens", truncated.toStdString()}, lmInputs(4, 8, 128)); });
    QVERIFY2(e.contains(truncated) && e.contains("201 bytes"), qPrintable(e));
    e = errorOf([&] { runtime::makeBatchSource({"tokens", truncated.toStdString(), "int32"}, lmInputs(4, 8, 128)); });
    QVERIFY2(e.contains(truncated), qPrintable(e));
    const QString missing = dir.filePath("missing.bin");
    e = errorOf([&] { runtime::makeBatchSource({"tokens", missing.toStdString()}, lmInputs(4, 8, 128)); });
    QVERIFY2(e.contains(missing), qPrintable(e));
    const QString tiny = writeTokens(dir, "tiny.bin", 8);
    e = errorOf([&] { runtime::makeBatchSource({"tokens", tiny.toStdString()}, lmInputs(4, 8, 128)); });
    QVERIFY2(e.contains(tiny) && e.contains("fewer than one window of 9"), qPrintable(e));
    const std::string ok = writeTokens(dir, "ok.bin", 100).toStdString();
    e = errorOf([&] { runtime::makeBatchSource({"tokens", ok, "uint8"}, lmInputs(4, 8, 128)); });
    QVERIFY2(e.contains("'uint8'"), qPrintable(e));
    e = errorOf([&] { runtime::makeBatchSource({"tokens", ok}, imageInputs(4, 32)); });
    QVERIFY2(e.contains("input 'x'"), qPrintable(e));
    e = errorOf([&] { runtime::makeBatchSource({"tokens", ok}, {lmInputs(4, 8, 128)[0]}); });
    QVERIFY2(e.contains("no input 'y'"), qPrintable(e));
  }

  // ---- cifar --------------------------------------------------------------------------------

  void cifarRecordsReadBackNormalised() {
    QTemporaryDir dir;
    const QString path = writeCifar(dir, "data_batch_1.bin", 7);
    auto src = runtime::makeBatchSource({"cifar", path.toStdString()}, imageInputs(4, 32));
    QVERIFY(QString::fromStdString(src->describe()).contains("7 records"));
    const std::vector<at::Tensor> xy = src->batch(1);  // records 4, 5, 6, 0 (wrapping)
    QCOMPARE(xy[0].sizes().vec(), (std::vector<int64_t>{4, 3, 32, 32}));
    QCOMPARE(xy[0].scalar_type(), at::kFloat);
    QCOMPARE(xy[1].scalar_type(), at::kLong);
    const int64_t records[4] = {4, 5, 6, 0};
    for (int r = 0; r < 4; ++r) {
      QCOMPARE(xy[1][r].item<int64_t>(), records[r] % 10);
      for (int c = 0; c < 3; ++c)
        for (auto [y, x] : {std::pair{0, 0}, std::pair{31, 31}, std::pair{5, 17}}) {
          const float want = (pixelAt(records[r], c, y, x) / 255.0f - kMean[c]) / kStd[c];
          QVERIFY(std::abs(xy[0][r][c][y][x].item<float>() - want) < 1e-5f);
        }
    }
  }

  void cifarDownsamplesByAveragePooling() {
    QTemporaryDir dir;
    const QString path = writeCifar(dir, "data_batch_1.bin", 4);
    const std::vector<at::Tensor> xy = runtime::makeBatchSource({"cifar", path.toStdString()}, imageInputs(2, 16))->batch(0);
    QCOMPARE(xy[0].sizes().vec(), (std::vector<int64_t>{2, 3, 16, 16}));
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 3; ++c)
        for (auto [y, x] : {std::pair{0, 0}, std::pair{15, 15}, std::pair{7, 3}}) {
          double sum = 0;
          for (int dy = 0; dy < 2; ++dy)
            for (int dx = 0; dx < 2; ++dx) sum += pixelAt(r, c, 2 * y + dy, 2 * x + dx);
          const double want = (sum / 4 / 255.0 - kMean[c]) / kStd[c];
          QVERIFY(std::abs(xy[0][r][c][y][x].item<float>() - want) < 1e-5);
        }
  }

  void cifarPiecesConcatenateToTheWholeBatch_data() {
    QTest::addColumn<int>("dim");
    QTest::addColumn<QList<qlonglong>>("lengths");
    QTest::newRow("rows 3,0,1") << 0 << QList<qlonglong>{3, 0, 1};
    QTest::newRow("channels 2,0,1") << 1 << QList<qlonglong>{2, 0, 1};
    QTest::newRow("image rows 10,0,6") << 2 << QList<qlonglong>{10, 0, 6};
    QTest::newRow("image columns 0,16") << 3 << QList<qlonglong>{0, 16};
  }
  void cifarPiecesConcatenateToTheWholeBatch() {
    QFETCH(int, dim);
    QFETCH(QList<qlonglong>, lengths);
    QTemporaryDir dir;
    runtime::DataOptions o{"cifar", writeCifar(dir, "data_batch_1.bin", 10).toStdString()};
    std::vector<InputPiece> whole = imageInputs(4, 16);
    const std::vector<at::Tensor> global = runtime::makeBatchSource(o, whole)->batch(3);
    // The image is cut along `dim`; the label (rank 1) along dim 0 only, else it stays whole.
    std::vector<std::vector<InputPiece>> ranks = cut(whole, dim, std::vector<int64_t>(lengths.begin(), lengths.end()));
    std::vector<at::Tensor> images;
    for (auto& pieces : ranks) {
      if (dim != 0) pieces[1].dim = -1;
      auto src = runtime::makeBatchSource(o, pieces);
      const std::vector<at::Tensor> got = src->batch(3);
      QCOMPARE(got[0].sizes().vec(), pieces[0].pieceShape());
      images.push_back(got[0]);
      if (dim != 0) QVERIFY(at::equal(got[1], global[1]));
      // A rank reads only its records' channels, and the label bytes of the labels it holds
      // (spatial cuts read whole records: pooling needs them).
      const int64_t rows = dim == 0 ? pieces[0].length : 4, channels = dim == 1 ? pieces[0].length : 3;
      if (dim <= 1) QCOMPARE(src->bytesRead(), rows * (1 + channels * 1024));
    }
    QVERIFY(at::equal(at::cat(images, dim), global[0]));
  }

  void badCifarInputsAndFilesAreErrors() {
    QTemporaryDir dir;
    const QString path = writeCifar(dir, "data_batch_1.bin", 3);
    const std::string p = path.toStdString();
    QString e = errorOf([&] { runtime::makeBatchSource({"cifar", p}, imageInputs(4, 20)); });
    QVERIFY2(e.contains("image size 20"), qPrintable(e));
    e = errorOf([&] { runtime::makeBatchSource({"cifar", p}, imageInputs(4, 64)); });
    QVERIFY2(e.contains("image size 64"), qPrintable(e));
    e = errorOf([&] {
      runtime::makeBatchSource({"cifar", p}, {input("x", ir::DType::Float32, {4, 1, 32, 32}), imageInputs(4, 32)[1]});
    });
    QVERIFY2(e.contains("3 channels"), qPrintable(e));
    e = errorOf([&] { runtime::makeBatchSource({"cifar", p}, {imageInputs(4, 32)[0]}); });
    QVERIFY2(e.contains("no label input"), qPrintable(e));
    e = errorOf([&] { runtime::makeBatchSource({"cifar", p}, lmInputs(4, 8, 128)); });
    QVERIFY2(e.contains("input 'x'"), qPrintable(e));
    e = errorOf([&] { runtime::makeBatchSource({"cifar", p}, imageInputs(4, 32, 2)); });  // record 2 has label 2
    QVERIFY2(e.contains(path) && e.contains("label 2"), qPrintable(e));
    std::vector<uint8_t> bytes(3073 * 2 + 100, 0);
    writeFile(dir.filePath("short.bin"), bytes.data(), bytes.size());
    e = errorOf([&] { runtime::makeBatchSource({"cifar", dir.filePath("short.bin").toStdString()}, imageInputs(4, 32)); });
    QVERIFY2(e.contains("short.bin") && e.contains("6246 bytes"), qPrintable(e));
  }

  // ---- shipped samples ----------------------------------------------------------------------

  void shippedSamplesParse() {
    QVERIFY2(!qEnvironmentVariable("HAP_SOURCE_DIR").isEmpty(), "HAP_SOURCE_DIR is not set (run under ctest)");
    const QString data = sourceDir();
    // The public-domain text: at least 1 MB of English.
    QFile text(data + "/text/bible-web-excerpt.txt");
    QVERIFY2(text.open(QIODevice::ReadOnly), qPrintable(text.fileName()));
    QVERIFY(text.size() >= 1'000'000);
    QVERIFY(text.read(4096).contains("In the beginning"));
    // Tokens for the tiny BERT (vocabulary 128, [4, 16]): every id is checked when opened.
    QFile vocab(data + "/tokens-v128/vocab.txt");
    QVERIFY(vocab.open(QIODevice::ReadOnly | QIODevice::Text));
    const QStringList words = QString::fromUtf8(vocab.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(words.size(), 128);
    QCOMPARE(words[0], QString("<unk>"));
    QVERIFY(words.contains("the"));
    const std::string tokenFile = (data + "/tokens-v128/tokens.bin").toStdString();
    auto tokens = runtime::makeBatchSource({"tokens", tokenFile}, lmInputs(4, 16, 128));
    qInfo("%s", tokens->describe().c_str());
    QVERIFY(QString::fromStdString(tokens->describe()).contains("tokens ("));
    const std::vector<at::Tensor> xy = tokens->batch(0);
    QVERIFY(at::equal(xy[0].narrow(1, 1, 15), xy[1].narrow(1, 0, 15)));
    QVERIFY(xy[0].max().item<int64_t>() < 128);
    // The CIFAR-format shapes, for the tiny ViT (16x16) and for 32x32 models.
    for (int64_t side : {16, 32}) {
      auto cifar = runtime::makeBatchSource({"cifar", (data + "/cifar-sample.bin").toStdString()}, imageInputs(4, side));
      qInfo("%s", cifar->describe().c_str());
      QVERIFY(QString::fromStdString(cifar->describe()).contains("400 records"));
      const std::vector<at::Tensor> img = cifar->batch(99);
      QVERIFY(img[0].isfinite().all().item<bool>());
      QVERIFY(img[1].max().item<int64_t>() < 10);
    }
  }
};

QTEST_GUILESS_MAIN(TstData)
#include "tst_data.moc"
