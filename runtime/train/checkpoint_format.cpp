#include "runtime/train/checkpoint_format.h"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>
#include <torch/csrc/jit/serialization/unpickler.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <unordered_map>
#include <vector>

#include "runtime/core/runtime_error.h"

namespace hap::runtime::checkpoint_format {
namespace {

namespace fs = std::filesystem;

constexpr const char* kWhatToDo =
    "resume from another checkpoint (an earlier step-N.pt) or start the run afresh";

std::string firstLine(const std::exception& e) {
  std::string text = e.what();
  // c10::Error appends a C++ backtrace after the first line; the first line is the message.
  if (const size_t cut = text.find('\n'); cut != std::string::npos) text.resize(cut);
  return text;
}

c10::IValue lookup(const c10::impl::GenericDict& dict, const std::string& key) {
  auto it = dict.find(c10::IValue(key));
  return it == dict.end() ? c10::IValue() : it->value();
}

RuntimeError damaged(const std::string& path, const std::string& what) {
  return RuntimeError(fmt::format("checkpoint '{}' is damaged: {}; {}", path, what, kWhatToDo));
}

RuntimeError malformed(const std::string& path, const std::string& key,
                       const std::string& expected) {
  return RuntimeError(
      fmt::format("checkpoint '{}': entry \"{}\" is missing or not {}; the file is damaged or was "
                  "not written by HAP; {}",
                  path, key, expected, kWhatToDo));
}

// A tensor of the file: its key among the checksums, how messages name it, the tensor.
struct Entry {
  std::string key;   // "parameters/w", "optimizer_state/w/exp_avg", "buffers/b"
  std::string what;  // "parameter 'w'", "optimizer state 'exp_avg' of parameter 'w'", "buffer 'b'"
  at::Tensor tensor;
};

c10::impl::GenericDict dictEntry(const c10::impl::GenericDict& root, const std::string& key,
                                 const std::string& path) {
  c10::IValue v = lookup(root, key);
  if (!v.isGenericDict()) throw malformed(path, key, "a dict");
  return v.toGenericDict();
}

// Every tensor of the root's sections, sorted by key. RuntimeError when a section is not of the
// documented type.
std::vector<Entry> entriesOf(const c10::impl::GenericDict& root, const std::string& path) {
  std::vector<Entry> out;
  const auto tensors = [&](const c10::impl::GenericDict& dict, const std::string& section,
                           const std::string& prefix,
                           const std::function<std::string(const std::string&)>& what) {
    for (const auto& item : dict) {
      if (!item.key().isString() || !item.value().isTensor())
        throw malformed(path, section, "a dict of tensors by name");
      const std::string& name = item.key().toStringRef();
      out.push_back({prefix + name, what(name), item.value().toTensor()});
    }
  };
  tensors(dictEntry(root, "parameters", path), "parameters", "parameters/",
          [](const std::string& n) { return fmt::format("parameter '{}'", n); });
  for (const auto& item : dictEntry(root, "optimizer_state", path)) {
    if (!item.key().isString() || !item.value().isGenericDict())
      throw malformed(path, "optimizer_state", "a dict of dicts by parameter name");
    const std::string& parameter = item.key().toStringRef();
    tensors(item.value().toGenericDict(), "optimizer_state", "optimizer_state/" + parameter + "/",
            [&](const std::string& n) {
              return fmt::format("optimizer state '{}' of parameter '{}'", n, parameter);
            });
  }
  tensors(dictEntry(root, "buffers", path), "buffers", "buffers/",
          [](const std::string& n) { return fmt::format("buffer '{}'", n); });
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
  return out;
}

// Python's name of a dtype (torch.float32 -> "float32").
std::string dtypeName(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return "float32";
    case at::kDouble:
      return "float64";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    case at::kLong:
      return "int64";
    case at::kInt:
      return "int32";
    case at::kShort:
      return "int16";
    case at::kChar:
      return "int8";
    case at::kByte:
      return "uint8";
    case at::kBool:
      return "bool";
    default:
      return c10::toString(t);
  }
}

std::string text(const std::string& s) {
  return fmt::format("{}:{}", s.size(), s);
}

std::string list(c10::IntArrayRef values) {
  return fmt::format("[{}]", fmt::join(values, ","));
}

// The header's canonical text (docs/formats.md, "Checkpoint"): what its checksum covers.
std::string headerText(const c10::impl::GenericDict& root, const std::vector<Entry>& entries,
                       const std::vector<int64_t>& sums, const std::string& path) {
  const auto integer = [&](const char* key) {
    c10::IValue v = lookup(root, key);
    if (!v.isInt()) throw malformed(path, key, "an integer");
    return v.toInt();
  };
  const auto string = [&](const char* key) {
    c10::IValue v = lookup(root, key);
    if (!v.isString()) throw malformed(path, key, "a string");
    return v.toStringRef();
  };
  std::string out = "hap-checkpoint header\n";
  out += fmt::format("format {}\n", text(string("format")));
  out += fmt::format("version {}\n", integer("version"));
  out += fmt::format("iteration {}\n", integer("iteration"));
  out += fmt::format("optimizer {}\n", text(string("optimizer")));
  out += fmt::format("optimizer_steps {}\n", integer("optimizer_steps"));
  out += fmt::format("algorithm {}\n", text(kAlgorithm));
  for (size_t i = 0; i < entries.size(); ++i) {
    const at::Tensor& t = entries[i].tensor;
    out +=
        fmt::format("tensor {} {} {} {} {} {}\n", text(entries[i].key), dtypeName(t.scalar_type()),
                    list(t.sizes()), list(t.strides()), t.storage_offset(), sums[i]);
  }
  return out;
}

uint32_t crcOfText(const std::string& s) {
  return crc32(s.data(), s.size());
}

// Whether the tensor's elements lie inside its storage (sizes, strides and offset read from the
// file); a damaged shape must not read past the data.
bool insideStorage(const at::Tensor& t) {
  if (!t.has_storage() || t.storage_offset() < 0) return false;
  int64_t last = t.storage_offset();
  bool empty = false;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t size = t.sizes()[static_cast<size_t>(d)],
                  stride = t.strides()[static_cast<size_t>(d)];
    if (size < 0 || stride < 0) return false;
    if (size == 0) empty = true;
  }
  if (empty) return true;
  for (int64_t d = 0; d < t.dim(); ++d) {
    int64_t step = 0;
    if (__builtin_mul_overflow(t.sizes()[static_cast<size_t>(d)] - 1,
                               t.strides()[static_cast<size_t>(d)], &step) ||
        __builtin_add_overflow(last, step, &last))
      return false;
  }
  int64_t bytes = 0;
  if (__builtin_add_overflow(last, int64_t{1}, &last) ||
      __builtin_mul_overflow(last, static_cast<int64_t>(t.element_size()), &bytes))
    return false;
  return static_cast<uint64_t>(bytes) <= t.storage().nbytes() &&
         (bytes == 0 || t.storage().data() != nullptr);
}

uint32_t crcOfTensor(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return crc32(c.data_ptr(), c.nbytes());
}

void forEachTensor(const c10::IValue& v, const std::function<void(const at::Tensor&)>& f) {
  if (v.isTensor()) {
    f(v.toTensor());
  } else if (v.isGenericDict()) {
    for (const auto& item : v.toGenericDict()) forEachTensor(item.value(), f);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) forEachTensor(e, f);
  } else if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements()) forEachTensor(e, f);
  }
}

// The stack discipline of a pickle, as Python's pickle machine keeps it: each MARK opens a frame,
// an opcode takes its operands from the current frame only, an opcode that ends at the mark takes
// the whole frame, a memo entry is read only after it was put, and STOP leaves one value. LibTorch's
// unpickler trusts all of that (it pops below a mark, reads an empty stack or an unset memo entry
// with no check: heap overflows and bad frees, found by fuzz_checkpoint_header), so it is checked
// first. Returns what is wrong, or "".
class PickleStack {
 public:
  // `op` at byte `at`: `pops` operands of the current frame replaced by `pushes` values.
  std::string apply(size_t at, uint8_t op, int pops, int pushes) {
    if (depth_ < pops) return fmt::format("opcode 0x{:02x} at byte {} takes {} values of a frame holding {}", op, at, pops, depth_);
    depth_ += pushes - pops;
    return "";
  }
  void mark() {
    frames_.push_back(depth_);
    depth_ = 0;
  }
  // An opcode that ends at the mark; `parentNeeds` values must be below the mark (the container
  // APPENDS, SETITEMS and ADDITEMS add to), `pushes` are pushed in the parent frame. `pairs`: the
  // frame must hold key-value pairs.
  std::string endFrame(size_t at, uint8_t op, int parentNeeds, int pushes, bool pairs = false, int atLeast = 0) {
    if (frames_.empty()) return fmt::format("opcode 0x{:02x} at byte {} ends a frame no MARK opened", op, at);
    if (pairs && depth_ % 2 != 0) return fmt::format("opcode 0x{:02x} at byte {} takes pairs from {} values", op, at, depth_);
    if (depth_ < atLeast) return fmt::format("opcode 0x{:02x} at byte {} needs {} values in its frame", op, at, atLeast);
    depth_ = frames_.back();
    frames_.pop_back();
    if (depth_ < parentNeeds) return fmt::format("opcode 0x{:02x} at byte {} has no container below its mark", op, at);
    depth_ += pushes;
    return "";
  }
  void put(uint64_t index) {
    if (index >= defined_.size()) defined_.resize(static_cast<size_t>(index) + 1, false);
    defined_[static_cast<size_t>(index)] = true;
  }
  void memoize() { defined_.push_back(true); }
  bool defined(uint64_t index) const { return index < defined_.size() && defined_[static_cast<size_t>(index)]; }
  bool stopsWell() const { return frames_.empty() && depth_ == 1; }

 private:
  int64_t depth_ = 0;               // values in the current frame
  std::vector<int64_t> frames_;     // the enclosing frames' depths
  std::vector<bool> defined_;       // memo entries put so far
};

// Applies opcode `op` at byte `at` to `stack` (`memoIndex`: a PUT's or GET's operand; the text
// forms 'p' and 'g' carry theirs as text, read as one more entry).
std::string stackEffect(PickleStack& stack, size_t at, uint8_t op, uint64_t memoIndex) {
  switch (op) {
    case 0x80: case 0x95:  // PROTO, FRAME
      return "";
    case '(':
      stack.mark();
      return "";
    case 't': case 'l': case 0x91: case 'i':  // TUPLE, LIST, FROZENSET, INST
      return stack.endFrame(at, op, 0, 1);
    case 'd':  // DICT
      return stack.endFrame(at, op, 0, 1, true);
    case 'o':  // OBJ
      return stack.endFrame(at, op, 0, 1, false, 1);
    case 'e': case 0x90:  // APPENDS, ADDITEMS
      return stack.endFrame(at, op, 1, 0);
    case 'u':  // SETITEMS
      return stack.endFrame(at, op, 1, 0, true);
    case '1':  // POP_MARK
      return stack.endFrame(at, op, 0, 0);
    case 'h': case 'j':  // BINGET, LONG_BINGET
      if (!stack.defined(memoIndex)) return fmt::format("byte {} reads memo entry {}, which was never put", at, memoIndex);
      return stack.apply(at, op, 0, 1);
    case 'g':  // GET (text): LibTorch does not read it
      return fmt::format("byte {} is a text GET, which HAP's checkpoints do not use", at);
    case 'q': case 'r':  // BINPUT, LONG_BINPUT
      stack.put(memoIndex);
      return stack.apply(at, op, 1, 1);
    case 'p':  // PUT (text)
      return fmt::format("byte {} is a text PUT, which HAP's checkpoints do not use", at);
    case 0x94:  // MEMOIZE
      stack.memoize();
      return stack.apply(at, op, 1, 1);
    case '0':  // POP
      return stack.apply(at, op, 1, 0);
    case '2':  // DUP
      return stack.apply(at, op, 1, 2);
    case 'a': case 'b':  // APPEND, BUILD
      return stack.apply(at, op, 2, 1);
    case 's':  // SETITEM
      return stack.apply(at, op, 3, 1);
    case 'R': case 0x81: case 0x93: case 0x86:  // REDUCE, NEWOBJ, STACK_GLOBAL, TUPLE2
      return stack.apply(at, op, 2, 1);
    case 0x92: case 0x87:  // NEWOBJ_EX, TUPLE3
      return stack.apply(at, op, 3, 1);
    case 'Q': case 0x85: case 0x98:  // BINPERSID, TUPLE1, READONLY_BUFFER
      return stack.apply(at, op, 1, 1);
    default:  // everything else pushes one value: constants, strings, GLOBAL, PERSID, EXT*, ...
      return stack.apply(at, op, 0, 1);
  }
}

// What is wrong with the pickle `p` (data.pkl), or "": its opcodes walked before LibTorch's
// unpickler reads them, so that a damaged length or memo index cannot make it allocate gigabytes
// (it sizes strings and its memo table by them), and a damaged opcode cannot make it pop what is
// not there (PickleStack). Every length fits in the bytes left, every memo index is below the
// pickle's size (an entry takes 2 bytes or more) and was put before it is read, every opcode is
// one of pickle's, and the last byte is STOP, which leaves one value.
std::string pickleProblem(const char* p, size_t size) {
  PickleStack stack;
  size_t i = 0;
  const auto little = [&](size_t n) {
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i + k])) << (8 * k);
    return v;
  };
  while (i < size) {
    const size_t at = i;
    const auto op = static_cast<uint8_t>(p[i++]);
    size_t fixed = 0, lengthBytes = 0, lines = 0;
    bool memo = false;
    switch (op) {
      case '.':
        if (i != size) return fmt::format("it stops at byte {} of {}", at, size);
        return stack.stopsWell() ? "" : "it does not stop with one value";
      case 'N':
      case 0x88:
      case 0x89:
      case ']':
      case 'a':
      case 'e':
      case 'l':
      case ')':
      case 't':
      case 0x85:
      case 0x86:
      case 0x87:
      case '}':
      case 'd':
      case 's':
      case 'u':
      case 0x8f:
      case 0x90:
      case 0x91:
      case '0':
      case '2':
      case '(':
      case '1':
      case 0x94:
      case 0x93:
      case 'R':
      case 'b':
      case 'o':
      case 0x81:
      case 0x92:
      case 'Q':
      case 0x97:
      case 0x98:
        break;
      case 'K':
      case 0x82:
      case 0x80:
        fixed = 1;
        break;
      case 'h':
      case 'q':
        fixed = 1;
        memo = true;
        break;
      case 'M':
      case 0x83:
        fixed = 2;
        break;
      case 'J':
      case 0x84:
        fixed = 4;
        break;
      case 'j':
      case 'r':
        fixed = 4;
        memo = true;
        break;
      case 'G':
      case 0x95:
        fixed = 8;
        break;
      case 0x8a:
      case 'U':
      case 'C':
      case 0x8c:
        lengthBytes = 1;
        break;
      case 0x8b:
      case 'T':
      case 'B':
      case 'X':
        lengthBytes = 4;
        break;
      case 0x8e:
      case 0x96:
      case 0x8d:
        lengthBytes = 8;
        break;
      case 'I':
      case 'L':
      case 'S':
      case 'V':
      case 'F':
      case 'g':
      case 'p':
      case 'P':
        lines = 1;
        break;
      case 'c':
      case 'i':
        lines = 2;
        break;
      default:
        return fmt::format("byte {} is no pickle opcode (0x{:02x})", at, op);
    }
    const size_t head = fixed + lengthBytes;
    if (head > size - i) return fmt::format("it ends inside the opcode at byte {}", at);
    if (memo && little(fixed) >= size)
      return fmt::format("the memo index {} at byte {} is out of range", little(fixed), at);
    if (std::string problem = stackEffect(stack, at, op, memo ? little(fixed) : 0); !problem.empty())
      return problem;
    if (lengthBytes > 0) {
      const uint64_t n = little(lengthBytes);
      if (n > size - i - lengthBytes)
        return fmt::format("the length {} at byte {} reaches past its end ({} bytes)", n, at, size);
      i += static_cast<size_t>(n);
    }
    i += head;
    for (size_t l = 0; l < lines; ++l) {
      const void* newline = std::memchr(p + i, '\n', size - i);
      if (!newline) return fmt::format("the text at byte {} has no end", at);
      i = static_cast<size_t>(static_cast<const char*>(newline) - p) + 1;
    }
  }
  return "it has no STOP";
}

}  // namespace

uint32_t crc32(const void* data, size_t n, uint32_t crc) {
  if (n == 0) return crc;
  return static_cast<uint32_t>(::crc32_z(crc, static_cast<const Bytef*>(data), n));
}

c10::IValue readRoot(const std::string& path, bool withData) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status))
    throw RuntimeError(
        fmt::format("checkpoint '{}' does not exist; pass a file written by a previous run", path));
  if (fs::is_directory(status))
    throw RuntimeError(fmt::format(
        "checkpoint '{}' is a folder; pass one of the step-N.pt files a run wrote", path));
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    if (reader.hasRecord("byteorder")) {
      auto [order, size] = reader.getRecord("byteorder");
      if (std::string(static_cast<const char*>(order.get()), size) != "little")
        throw RuntimeError(
            fmt::format("checkpoint '{}' was written on a big-endian machine; this build reads "
                        "little-endian checkpoints only",
                        path));
    }
    // Not a structured binding: the lambdas below capture `size`, which clang before 16 refuses.
    auto pickled = reader.getRecord("data.pkl");
    const at::DataPtr& data = std::get<0>(pickled);
    const size_t size = std::get<1>(pickled);
    const char* bytes = static_cast<const char*>(data.get());
    if (const std::string problem = pickleProblem(bytes, size); !problem.empty())
      throw damaged(path, "its header (data.pkl) is not a well-formed pickle: " + problem);
    size_t pos = 0;
    std::unordered_map<const void*, size_t> records;  // each storage's data -> its record's size
    torch::jit::Unpickler unpickler(
        [&](char* out, size_t n) {
          n = std::min(n, size - pos);
          std::memcpy(out, bytes + pos, n);
          pos += n;
          return n;
        },
        /*type_resolver=*/nullptr, /*obj_loader=*/nullptr,
        /*read_record=*/
        [&](const std::string& name) {
          if (!withData) return at::DataPtr();
          auto [record, n] = reader.getRecord("data/" + name);
          records[record.get()] = n;
          return std::move(record);
        },
        /*device=*/c10::nullopt);
    unpickler.set_version(reader.version());
    c10::IValue root = unpickler.parse_ivalue();
    if (withData)
      forEachTensor(root, [&](const at::Tensor& t) {
        if (!t.has_storage() || t.storage().nbytes() == 0) return;
        auto it = records.find(t.storage().data());
        if (it == records.end() || it->second < t.storage().nbytes())
          throw damaged(path,
                        fmt::format("a tensor's data record holds {} bytes, but its header says {}",
                                    it == records.end() ? 0 : it->second, t.storage().nbytes()));
      });
    return root;
  } catch (const RuntimeError&) {
    throw;
  } catch (const std::exception& e) {
    throw RuntimeError(
        fmt::format("checkpoint '{}' is not a complete torch.save file ({}); it is damaged or "
                    "truncated (a write that did not finish?), or was not written by HAP; {}",
                    path, firstLine(e), kWhatToDo));
  }
}

void verify(const c10::IValue& rootValue, const std::string& path, bool withData) {
  const auto notOurs = [&] {
    return RuntimeError(
        fmt::format("'{}' is not a HAP checkpoint (no \"format\": \"{}\" entry)", path, kFormat));
  };
  if (!rootValue.isGenericDict()) throw notOurs();
  const c10::impl::GenericDict root = rootValue.toGenericDict();
  if (const c10::IValue f = lookup(root, "format"); !f.isString() || f.toStringRef() != kFormat)
    throw notOurs();
  const c10::IValue version = lookup(root, "version");
  if (!version.isInt()) throw malformed(path, "version", "an integer");
  if (version.toInt() > kVersion)
    throw RuntimeError(fmt::format(
        "checkpoint '{}' has version {}, this build reads version {}; use a newer build", path,
        version.toInt(), kVersion));
  if (version.toInt() < kVersion)
    throw RuntimeError(
        fmt::format("checkpoint '{}' has version {}, written before checkpoints carried checksums "
                    "(version {}); this build "
                    "does not resume from a file it cannot verify. Continue that run with the "
                    "build that wrote it, or start "
                    "afresh from the model file",
                    path, version.toInt(), kVersion));

  const c10::impl::GenericDict sums = dictEntry(root, "checksums", path);
  if (const c10::IValue a = lookup(sums, "algorithm");
      !a.isString() || a.toStringRef() != kAlgorithm)
    throw malformed(path, "checksums/algorithm", fmt::format("\"{}\"", kAlgorithm));
  const c10::IValue header = lookup(sums, "header");
  if (!header.isInt()) throw malformed(path, "checksums/header", "an integer");
  const c10::IValue tensorSums = lookup(sums, "tensors");
  if (!tensorSums.isGenericDict()) throw malformed(path, "checksums/tensors", "a dict");

  const std::vector<Entry> entries = entriesOf(root, path);
  std::vector<int64_t> written;
  for (const Entry& e : entries) {
    const c10::IValue sum = lookup(tensorSums.toGenericDict(), e.key);
    if (!sum.isInt() || sum.toInt() < 0 || sum.toInt() > std::numeric_limits<uint32_t>::max())
      throw damaged(path,
                    fmt::format("its header (data.pkl) holds {} but no checksum for it", e.what));
    written.push_back(sum.toInt());
  }
  if (tensorSums.toGenericDict().size() != entries.size())
    throw damaged(path, fmt::format("its header's checksums name {} tensors, but it holds {}",
                                    tensorSums.toGenericDict().size(), entries.size()));
  if (crcOfText(headerText(root, entries, written, path)) != header.toInt())
    throw damaged(path,
                  "its header (data.pkl: the iteration, optimizer, tensor names, shapes and "
                  "checksums) does not "
                  "match the checksum written with it");
  if (!withData) return;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (!insideStorage(e.tensor))
      throw damaged(path, fmt::format("the shape of {} reaches past its data", e.what));
    if (const uint32_t crc = crcOfTensor(e.tensor); crc != written[i])
      throw damaged(
          path,
          fmt::format("the data of {} does not match the checksum written with it (CRC-32 {:08x}, "
                      "written {:08x})",
                      e.what, crc, written[i]));
  }
}

void seal(c10::IValue& rootValue) {
  c10::impl::GenericDict root = rootValue.toGenericDict();
  const std::vector<Entry> entries = entriesOf(root, "(being written)");
  std::vector<int64_t> sums;
  c10::impl::GenericDict tensorSums(c10::StringType::get(), c10::IntType::get());
  for (const Entry& e : entries) {
    sums.push_back(crcOfTensor(e.tensor));
    tensorSums.insert(e.key, sums.back());
  }
  c10::impl::GenericDict checksums(c10::StringType::get(), c10::AnyType::get());
  checksums.insert("algorithm", std::string(kAlgorithm));
  checksums.insert("header", static_cast<int64_t>(
                                 crcOfText(headerText(root, entries, sums, "(being written)"))));
  checksums.insert("tensors", tensorSums);
  root.insert_or_assign("checksums", checksums);
}

}  // namespace hap::runtime::checkpoint_format
