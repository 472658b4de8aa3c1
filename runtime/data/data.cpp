#include "runtime/data/data.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "engine/import/model_tensors.h"
#include "runtime/core/runtime_error.h"

namespace hap::runtime {

ir::Shape InputPiece::pieceShape() const {
  ir::Shape s = shape;
  if (dim >= 0 && dim < static_cast<int>(s.size())) s[dim] = length;
  return s;
}

namespace {

bool isInteger(ir::DType t) { return !ir::isFloating(t) && t != ir::DType::Bool; }

// "input 'x' (int64 [4, 16])", for messages.
std::string describeInput(const InputPiece& p) {
  return fmt::format("input '{}' ({} {})", p.name, ir::dtypeName(p.dtype), ir::formatShape(p.shape));
}

// The half-open range of dimension d that piece p holds.
std::pair<int64_t, int64_t> range(const InputPiece& p, int d) {
  if (p.dim == d) return {p.offset, p.offset + p.length};
  return {0, p.shape[d]};
}

bool isEmpty(const InputPiece& p) {
  for (int64_t n : p.pieceShape())
    if (n == 0) return true;
  return false;
}

// Rejects pieces that do not fit their own shape (a plan that does not match the model).
void checkPieces(const std::vector<InputPiece>& pieces) {
  std::set<std::string> names;
  for (const InputPiece& p : pieces) {
    if (!names.insert(p.name).second)
      throw RuntimeError(fmt::format("input '{}' is listed twice; every forward argument has one piece", p.name));
    for (int64_t n : p.shape)
      if (n < 0) throw RuntimeError(fmt::format("{} has a negative dimension", describeInput(p)));
    const int rank = static_cast<int>(p.shape.size());
    if (p.dim < -1 || p.dim >= rank)
      throw RuntimeError(fmt::format("{}: the piece is cut along dim {}, which the shape does not have; the plan "
                                     "does not match the model's inputs",
                                     describeInput(p), p.dim));
    if (p.dim >= 0 && (p.offset < 0 || p.length < 0 || p.offset + p.length > p.shape[p.dim]))
      throw RuntimeError(fmt::format("{}: the piece [{}, {}) of dim {} lies outside the shape; the plan does not "
                                     "match the model's inputs",
                                     describeInput(p), p.offset, p.offset + p.length, p.dim));
    if (p.high && p.low.value_or(0) >= *p.high)
      throw RuntimeError(fmt::format("{}: the valid range [{}, {}) is empty", describeInput(p), p.low.value_or(0),
                                     *p.high));
  }
}

// "[0, 128)" or "[0, ...)", the valid range of an integer input, for messages.
std::string validRange(int64_t low, const std::optional<int64_t>& high) {
  return high ? fmt::format("[{}, {})", low, *high) : fmt::format("[{}, ...)", low);
}

// 1234567 -> "1.2M", for describe().
std::string human(int64_t n) {
  if (n >= 1'000'000) return fmt::format("{:.1f}M", n / 1e6);
  if (n >= 1'000) return fmt::format("{:.1f}K", n / 1e3);
  return std::to_string(n);
}

// A read-only file read by position (pread): the sources never hold a whole file in memory.
class File {
 public:
  File(std::string path, std::string_view what) : path_(std::move(path)) {
    if (path_.empty()) throw RuntimeError(fmt::format("the {} source needs a file path", what));
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0)
      throw RuntimeError(fmt::format("{} file '{}' cannot be opened: {}", what, path_, std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw RuntimeError(fmt::format("{} file '{}' is not a regular file", what, path_));
    }
    size_ = st.st_size;
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() { ::close(fd_); }

  const std::string& path() const { return path_; }
  int64_t size() const { return size_; }

  // Reads exactly n bytes at offset; a file that shrank since it was opened is an error.
  void read(int64_t offset, void* out, int64_t n) const {
    auto* p = static_cast<char*>(out);
    while (n > 0) {
      const ssize_t got = ::pread(fd_, p, static_cast<size_t>(n), offset);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0)
        throw RuntimeError(fmt::format("file '{}' could not be read at byte {}: {}", path_, offset,
                                       got < 0 ? std::strerror(errno) : "it ended early (changed while in use?)"));
      p += got;
      offset += got;
      n -= got;
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
};

// ---------------------------------------------------------------------------------------------
// synthetic

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

class SyntheticSource : public BatchSource {
 public:
  SyntheticSource(uint64_t seed, std::vector<InputPiece> pieces) : seed_(seed), pieces_(std::move(pieces)) {}

  std::vector<at::Tensor> batch(int64_t iteration) override {
    if (iteration < 0) throw std::logic_error("BatchSource::batch: negative iteration");
    std::vector<at::Tensor> out;
    for (const InputPiece& p : pieces_) {
      // Each input has its own generator, so adding an input does not change the others.
      const uint64_t s =
          splitmix64(splitmix64(splitmix64(seed_) ^ static_cast<uint64_t>(iteration)) ^ fnv1a(p.name));
      at::Generator gen = at::detail::createCPUGenerator(s);
      at::Tensor whole;
      if (ir::isFloating(p.dtype)) {
        whole = at::randn(p.shape, gen, at::TensorOptions().dtype(at::kFloat));
      } else {
        const int64_t low = p.dtype == ir::DType::Bool ? 0 : p.low.value_or(0);
        const int64_t high = p.dtype == ir::DType::Bool ? 2 : p.high.value_or(low + 2);
        whole = at::randint(low, high, p.shape, gen, at::TensorOptions().dtype(at::kLong));
      }
      whole = whole.to(import::toScalarType(p.dtype));
      out.push_back(p.dim < 0 ? whole.contiguous() : whole.narrow(p.dim, p.offset, p.length).contiguous());
    }
    return out;
  }

  std::string describe() const override { return fmt::format("synthetic: seed {}", seed_); }

 private:
  uint64_t seed_;
  std::vector<InputPiece> pieces_;
};

// ---------------------------------------------------------------------------------------------
// tokens

class TokenSource : public BatchSource {
 public:
  TokenSource(const DataOptions& o, std::vector<InputPiece> pieces)
      : pieces_(std::move(pieces)), file_(o.path, "token") {
    if (o.tokenDtype == "uint16") {
      elemSize_ = 2;
    } else if (o.tokenDtype == "int32") {
      elemSize_ = 4;
    } else {
      throw RuntimeError(fmt::format("token dtype '{}' is not supported; token files hold uint16 or int32 ids",
                                     o.tokenDtype));
    }
    dtypeName_ = o.tokenDtype;
    int x = -1, y = -1;
    for (size_t i = 0; i < pieces_.size(); ++i) {
      const InputPiece& p = pieces_[i];
      if (p.name == "x") {
        x = static_cast<int>(i);
      } else if (p.name == "y") {
        y = static_cast<int>(i);
      } else {
        throw RuntimeError(fmt::format("the tokens source feeds a language model's inputs x and y only, but the "
                                       "model also takes {}; use synthetic data for this model",
                                       describeInput(p)));
      }
      if (!isInteger(p.dtype) || p.shape.size() != 2)
        throw RuntimeError(fmt::format("the tokens source feeds integer [B, S] inputs x and y, but the model's {} "
                                       "is not one",
                                       describeInput(p)));
      if (p.low) low_ = std::max(low_, *p.low);
      if (p.high) high_ = std::min(high_.value_or(*p.high), *p.high);
    }
    if (x < 0 || y < 0)
      throw RuntimeError(fmt::format("the tokens source feeds a language model's inputs x and y, but the model "
                                     "has no input '{}'",
                                     x < 0 ? "x" : "y"));
    if (pieces_[x].shape != pieces_[y].shape)
      throw RuntimeError(fmt::format("the tokens source needs inputs x and y of one shape [B, S]; the model has {} "
                                     "and {}",
                                     describeInput(pieces_[x]), describeInput(pieces_[y])));
    batchRows_ = pieces_[x].shape[0];
    seqLen_ = pieces_[x].shape[1];
    if (seqLen_ < 1)
      throw RuntimeError(fmt::format("{}: a sequence length of 0 has no tokens to read", describeInput(pieces_[x])));
    if (file_.size() % elemSize_ != 0)
      throw RuntimeError(fmt::format("token file '{}' has {} bytes, not a whole number of {} ids ({} bytes each): it "
                                     "is truncated or holds another dtype",
                                     file_.path(), file_.size(), dtypeName_, elemSize_));
    tokens_ = file_.size() / elemSize_;
    if (tokens_ < seqLen_ + 1)
      throw RuntimeError(fmt::format("token file '{}' holds {} tokens, fewer than one window of {} (the model's "
                                     "sequence length {} + 1)",
                                     file_.path(), tokens_, seqLen_ + 1, seqLen_));
    windows_ = (tokens_ - 1) / seqLen_;
    if (o.checkWholeFile) scanWholeFile();
  }

  std::vector<at::Tensor> batch(int64_t iteration) override {
    if (iteration < 0) throw std::logic_error("BatchSource::batch: negative iteration");
    // Per batch row: the span [lo, hi) of window positions (0..S) that some piece needs; x needs
    // columns [c0, c1) at positions [c0, c1), y at [c0+1, c1+1).
    std::vector<int64_t> lo(batchRows_, seqLen_ + 1), hi(batchRows_, 0);
    for (const InputPiece& p : pieces_) {
      if (isEmpty(p)) continue;
      const int64_t shift = p.name == "y" ? 1 : 0;
      const auto [r0, r1] = range(p, 0);
      const auto [c0, c1] = range(p, 1);
      for (int64_t r = r0; r < r1; ++r) {
        lo[r] = std::min(lo[r], c0 + shift);
        hi[r] = std::max(hi[r], c1 + shift);
      }
    }
    std::vector<std::vector<int64_t>> rows(batchRows_);
    std::vector<char> raw;
    for (int64_t r = 0; r < batchRows_; ++r) {
      if (lo[r] >= hi[r]) continue;
      const auto window = static_cast<int64_t>((static_cast<__int128>(iteration) * batchRows_ + r) % windows_);
      const int64_t first = window * seqLen_ + lo[r];  // the file's token index of position lo[r]
      const int64_t n = hi[r] - lo[r];
      raw.resize(static_cast<size_t>(n * elemSize_));
      file_.read(first * elemSize_, raw.data(), n * elemSize_);
      bytesRead_ += n * elemSize_;
      rows[r].resize(n);
      decode(raw.data(), n, rows[r].data());
      for (int64_t k = 0; k < n; ++k) check(rows[r][k], first + k);
    }
    std::vector<at::Tensor> out;
    for (const InputPiece& p : pieces_) {
      const int64_t shift = p.name == "y" ? 1 : 0;
      const auto [r0, r1] = range(p, 0);
      const auto [c0, c1] = range(p, 1);
      at::Tensor t = at::empty({r1 - r0, c1 - c0}, at::TensorOptions().dtype(at::kLong));
      if (t.numel() > 0) {
        int64_t* d = t.data_ptr<int64_t>();
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) *d++ = rows[r][c + shift - lo[r]];
      }
      out.push_back(t.to(import::toScalarType(p.dtype)).contiguous());
    }
    return out;
  }

  std::string describe() const override {
    return fmt::format("tokens: {}, {} tokens ({}), {} windows of {} per pass", file_.path(), human(tokens_),
                       dtypeName_, windows_, seqLen_ + 1);
  }
  int64_t bytesRead() const override { return bytesRead_; }

 private:
  void decode(const char* raw, int64_t n, int64_t* out) const {
    for (int64_t k = 0; k < n; ++k) {
      if (elemSize_ == 2) {
        uint16_t v;
        std::memcpy(&v, raw + 2 * k, 2);
        out[k] = v;
      } else {
        int32_t v;
        std::memcpy(&v, raw + 4 * k, 4);
        out[k] = v;
      }
    }
  }

  void check(int64_t id, int64_t position) const {
    if (id >= low_ && (!high_ || id < *high_)) return;
    if (!high_ || id < low_)
      throw RuntimeError(fmt::format("token file '{}' holds id {} at token {}, outside the model's vocabulary {}; is "
                                     "the token dtype ({}) right?",
                                     file_.path(), id, position, validRange(low_, high_), dtypeName_));
    throw RuntimeError(fmt::format("token file '{}' holds id {} at token {}, outside the model's vocabulary {}; "
                                   "make the tokens with a vocabulary of at most {} (resources/data/make_samples.py "
                                   "tokens --vocab {}) or use a model with a larger vocabulary",
                                   file_.path(), id, position, validRange(low_, high_), *high_, *high_));
  }

  void scanWholeFile() const {
    if (low_ <= 0 && !high_ && elemSize_ == 2) return;  // every uint16 is a valid id
    constexpr int64_t kChunk = int64_t{1} << 20;
    std::vector<char> raw(kChunk);
    std::vector<int64_t> ids(kChunk / elemSize_);
    for (int64_t offset = 0; offset < file_.size(); offset += kChunk) {
      const int64_t n = std::min(kChunk, file_.size() - offset);
      file_.read(offset, raw.data(), n);
      decode(raw.data(), n / elemSize_, ids.data());
      for (int64_t k = 0; k < n / elemSize_; ++k) check(ids[k], offset / elemSize_ + k);
    }
  }

  std::vector<InputPiece> pieces_;
  File file_;
  int64_t elemSize_ = 2;
  std::string dtypeName_;
  int64_t low_ = 0;
  std::optional<int64_t> high_;
  int64_t batchRows_ = 0, seqLen_ = 0, tokens_ = 0, windows_ = 0;
  int64_t bytesRead_ = 0;
};

// ---------------------------------------------------------------------------------------------
// cifar

constexpr int64_t kSide = 32;                       // CIFAR images are 32x32
constexpr int64_t kPlane = kSide * kSide;           // bytes of one channel
constexpr int64_t kRecord = 1 + 3 * kPlane;         // label byte + R, G, B planes
// The usual CIFAR-10 per-channel mean and standard deviation of v/255.
constexpr std::array<float, 3> kMean = {0.4914f, 0.4822f, 0.4465f};
constexpr std::array<float, 3> kStd = {0.2470f, 0.2435f, 0.2616f};

class CifarSource : public BatchSource {
 public:
  CifarSource(const DataOptions& o, std::vector<InputPiece> pieces)
      : pieces_(std::move(pieces)), file_(o.path, "cifar") {
    const char* need = "the cifar source feeds a floating image input [B, 3, H, H] and an integer label input [B]";
    for (size_t i = 0; i < pieces_.size(); ++i) {
      const InputPiece& p = pieces_[i];
      if (ir::isFloating(p.dtype) && p.shape.size() == 4 && image_ < 0) {
        image_ = static_cast<int>(i);
      } else if (isInteger(p.dtype) && p.shape.size() == 1 && label_ < 0) {
        label_ = static_cast<int>(i);
      } else {
        throw RuntimeError(fmt::format("{}, but the model also takes {}", need, describeInput(p)));
      }
    }
    if (image_ < 0 || label_ < 0)
      throw RuntimeError(fmt::format("{}, but the model has no {} input", need, image_ < 0 ? "image" : "label"));
    const InputPiece& img = pieces_[image_];
    const InputPiece& lbl = pieces_[label_];
    if (img.shape[1] != 3)
      throw RuntimeError(fmt::format("{}: CIFAR images have 3 channels (dim 1), not {}", describeInput(img),
                                     img.shape[1]));
    side_ = img.shape[2];
    if (img.shape[3] != side_)
      throw RuntimeError(fmt::format("{}: CIFAR images are square, but the model's are {}x{}", describeInput(img),
                                     side_, img.shape[3]));
    if (side_ < 1 || side_ > kSide || kSide % side_ != 0)
      throw RuntimeError(fmt::format("{}: image size {} cannot be made from CIFAR's 32x32 images; sizes that divide "
                                     "32 (32, 16, 8, 4, 2, 1) are pooled from them",
                                     describeInput(img), side_));
    if (lbl.shape[0] != img.shape[0])
      throw RuntimeError(fmt::format("{} and {} have different batch sizes", describeInput(img),
                                     describeInput(lbl)));
    batchRows_ = img.shape[0];
    low_ = lbl.low.value_or(0);
    high_ = lbl.high;
    if (file_.size() == 0 || file_.size() % kRecord != 0)
      throw RuntimeError(fmt::format("cifar file '{}' has {} bytes, not a whole number of CIFAR-10 records ({} bytes "
                                     "each: 1 label byte and 3072 pixel bytes): it is truncated or another format",
                                     file_.path(), file_.size(), kRecord));
    records_ = file_.size() / kRecord;
    if (o.checkWholeFile) scanLabels();
  }

  std::vector<at::Tensor> batch(int64_t iteration) override {
    if (iteration < 0) throw std::logic_error("BatchSource::batch: negative iteration");
    const InputPiece& img = pieces_[image_];
    const InputPiece& lbl = pieces_[label_];
    const auto [i0, i1] = range(img, 0);
    const auto [l0, l1] = range(lbl, 0);
    const auto [ch0, ch1] = range(img, 1);
    const bool anyImage = !isEmpty(img), anyLabel = !isEmpty(lbl);
    // Per row: the bytes of its record that some piece needs: the label byte, and the planes
    // [ch0, ch1) (one read when both are wanted and adjacent).
    std::vector<std::vector<uint8_t>> planes(batchRows_);
    std::vector<uint8_t> labels(batchRows_, 0);
    for (int64_t r = 0; r < batchRows_; ++r) {
      const bool wantImage = anyImage && r >= i0 && r < i1, wantLabel = anyLabel && r >= l0 && r < l1;
      if (!wantImage && !wantLabel) continue;
      const int64_t base = recordOf(iteration, r) * kRecord;
      if (wantImage && wantLabel && ch0 == 0) {
        planes[r].resize(1 + ch1 * kPlane);
        file_.read(base, planes[r].data(), 1 + ch1 * kPlane);
        labels[r] = planes[r][0];
        planes[r].erase(planes[r].begin());
        bytesRead_ += 1 + ch1 * kPlane;
      } else {
        if (wantLabel) {
          file_.read(base, &labels[r], 1);
          bytesRead_ += 1;
        }
        if (wantImage) {
          planes[r].resize((ch1 - ch0) * kPlane);
          file_.read(base + 1 + ch0 * kPlane, planes[r].data(), (ch1 - ch0) * kPlane);
          bytesRead_ += (ch1 - ch0) * kPlane;
        }
      }
      if (wantLabel) checkLabel(labels[r], recordOf(iteration, r));
    }

    // Images: pooled k x k (an exact integer sum), scaled to [0, 1] and normalised per channel;
    // each value depends on its own pixels only, so any cut gives the same bits.
    const int64_t k = kSide / side_;
    const float scale = 1.0f / static_cast<float>(k * k * 255);
    at::Tensor image = at::empty(anyImage ? ir::Shape{i1 - i0, ch1 - ch0, side_, side_} : img.pieceShape(),
                                 at::TensorOptions().dtype(at::kFloat));
    if (anyImage) {
      float* d = image.data_ptr<float>();
      for (int64_t r = i0; r < i1; ++r)
        for (int64_t c = ch0; c < ch1; ++c) {
          const uint8_t* plane = planes[r].data() + (c - ch0) * kPlane;
          for (int64_t y = 0; y < side_; ++y)
            for (int64_t x = 0; x < side_; ++x) {
              int64_t sum = 0;
              for (int64_t dy = 0; dy < k; ++dy)
                for (int64_t dx = 0; dx < k; ++dx) sum += plane[(y * k + dy) * kSide + x * k + dx];
              *d++ = (static_cast<float>(sum) * scale - kMean[c]) / kStd[c];
            }
        }
    }
    for (int d : {2, 3})
      if (anyImage && img.dim == d) image = image.narrow(d, img.offset, img.length);
    at::Tensor label = at::empty({l1 - l0}, at::TensorOptions().dtype(at::kLong));
    if (label.numel() > 0) {
      int64_t* d = label.data_ptr<int64_t>();
      for (int64_t r = l0; r < l1; ++r) *d++ = labels[r];
    }

    std::vector<at::Tensor> out(2);
    out[image_] = image.to(import::toScalarType(img.dtype)).contiguous();
    out[label_] = label.to(import::toScalarType(lbl.dtype)).contiguous();
    return out;
  }

  std::string describe() const override {
    return fmt::format("cifar: {}, {} records, images {}x{}{}", file_.path(), records_, side_, side_,
                       side_ == kSide ? "" : fmt::format(" (pooled from {}x{})", kSide, kSide));
  }
  int64_t bytesRead() const override { return bytesRead_; }

 private:
  int64_t recordOf(int64_t iteration, int64_t row) const {
    return static_cast<int64_t>((static_cast<__int128>(iteration) * batchRows_ + row) % records_);
  }

  void checkLabel(int64_t label, int64_t record) const {
    if (label >= low_ && (!high_ || label < *high_)) return;
    throw RuntimeError(fmt::format("cifar file '{}' record {} has label {}, outside the model's classes {}; use a "
                                   "model with at least {} classes",
                                   file_.path(), record, label, validRange(low_, high_), label + 1));
  }

  void scanLabels() const {
    constexpr int64_t kChunkRecords = 341;  // about 1 MiB
    std::vector<uint8_t> raw(kChunkRecords * kRecord);
    for (int64_t first = 0; first < records_; first += kChunkRecords) {
      const int64_t n = std::min(kChunkRecords, records_ - first);
      file_.read(first * kRecord, raw.data(), n * kRecord);
      for (int64_t i = 0; i < n; ++i) checkLabel(raw[i * kRecord], first + i);
    }
  }

  std::vector<InputPiece> pieces_;
  File file_;
  int image_ = -1, label_ = -1;
  int64_t side_ = kSide, batchRows_ = 0, records_ = 0;
  int64_t low_ = 0;
  std::optional<int64_t> high_;
  int64_t bytesRead_ = 0;
};

}  // namespace

std::unique_ptr<BatchSource> makeBatchSource(const DataOptions& options, std::vector<InputPiece> pieces) {
  checkPieces(pieces);
  if (options.kind == "synthetic") return std::make_unique<SyntheticSource>(options.seed, std::move(pieces));
  if (options.kind == "tokens") return std::make_unique<TokenSource>(options, std::move(pieces));
  if (options.kind == "cifar") return std::make_unique<CifarSource>(options, std::move(pieces));
  throw RuntimeError(fmt::format("data kind '{}' is unknown; use synthetic, tokens or cifar", options.kind));
}

}  // namespace hap::runtime
