// libFuzzer target: the checkpoint readers. The header (runtime/train/checkpoint_list.h
// readCheckpointInfo: the zip's directory and its pickled data.pkl, never the tensors' data), as
// the launch panel and the preflight read a checkpoint before a resume; then the whole root with
// its tensors' data, verified against its checksums (checkpoint_format.h readRoot and verify), as
// loadCheckpoint reads it. The first byte
// picks the input's shape: even, the rest is the whole file (zip directory and all); odd, the rest
// is data.pkl, written into a well-formed torch.save zip first, so that mutations reach the
// unpickler and the header's fields. Contract checked: readCheckpointInfo never throws (a bad file
// is reported in CheckpointInfo::error); readRoot and verify throw RuntimeError (a hap::Error) and
// nothing else; neither trips a sanitizer.
//
// Known finding, skipped by default: LibTorch's unpickler allocates (and zero-fills) the length a
// string opcode claims before reading it, so a damaged length makes a 3 KB file cost up to 4 GiB
// and tens of seconds (fuzz/crashes/fuzz_checkpoint_header/, docs/reliability.md); at that cost
// the target ran at 1 execution per second. Inputs whose data.pkl has a length-prefixed opcode
// claiming more bytes than remain (claimsLongString walks the opcodes) are skipped, unless
// HAP_FUZZ_CHECKPOINT_LONG_STRINGS=1.
//
// Links LibTorch (the zip reader and unpickler are LibTorch's, not instrumented): only
// checkpoint_list.cpp, checkpoint_format.cpp and the engine are compiled for the target.
#include <ATen/core/ivalue.h>
#include <caffe2/serialize/inline_container.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/base/error.h"
#if __has_include("runtime/train/checkpoint_format.h")
#include "runtime/train/checkpoint_format.h"
#define HAP_FUZZ_CHECKPOINT_FORMAT 1
#endif
#include "runtime/train/checkpoint_list.h"

namespace {

std::string scratchPath() {
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/hap-fuzz-checkpoint-" + std::to_string(getpid()) + ".pt";
}

// True when the pickle `p` (protocol 2, as torch::pickle_save writes it) has a length-prefixed
// opcode that claims more bytes than remain. Walks the opcodes as the unpickler does; stops
// (false) at one it does not know, where the unpickler fails early anyway.
bool claimsLongString(const uint8_t* p, size_t n) {
  size_t i = 0;
  auto le = [&](size_t at, size_t width) {
    uint64_t v = 0;
    for (size_t b = 0; b < width; ++b) v |= static_cast<uint64_t>(p[at + b]) << (8 * b);
    return v;
  };
  while (i < n) {
    const uint8_t op = p[i++];
    size_t fixed = 0, lengthWidth = 0;
    switch (op) {
      case '}': case ']': case ')': case '(': case 'u': case 's': case 'e': case 'a': case 't':
      case 0x85: case 0x86: case 0x87: case 'N': case 0x88: case 0x89: case 'R': case 'b':
      case 0x81: case '0': case '2': case 'Q': case 0x93: case 0x94: case 0x8f: case 0x91: case 0x90:
        break;
      case '.': return false;
      case 0x80: case 'q': case 'h': case 'K': fixed = 1; break;
      case 'M': fixed = 2; break;
      case 'r': case 'j': case 'J': fixed = 4; break;
      case 'G': case 0x95: fixed = 8; break;
      case 0x8a: case 0x8c: case 'C': case 'U': lengthWidth = 1; break;
      case 0x8b: case 'X': case 'B': case 'T': lengthWidth = 4; break;
      case 0x8d: case 0x8e: case 0x96: lengthWidth = 8; break;
      case 'c':  // GLOBAL: module and name, each ending with a newline
        for (int line = 0; line < 2; ++line) {
          while (i < n && p[i] != '\n') ++i;
          ++i;
        }
        continue;
      default: return false;
    }
    if (lengthWidth > 0) {
      if (i + lengthWidth > n) return false;
      const uint64_t length = le(i, lengthWidth);
      i += lengthWidth;
      if (length > n - i) return true;
      i += static_cast<size_t>(length);
    } else {
      i += fixed;
    }
  }
  return false;
}

// The pickle of the input: the rest in wrapped mode; in file mode, the data.pkl record of the zip
// when its local header is found (stored, as torch.save and pickle_save write it).
bool mayClaimLongString(const uint8_t* data, size_t size, bool wrapped) {
  if (wrapped) return claimsLongString(data, size);
  static const std::string name = "data.pkl";
  for (size_t i = 0; i + 30 <= size; ++i) {
    if (!(data[i] == 'P' && data[i + 1] == 'K' && data[i + 2] == 3 && data[i + 3] == 4)) continue;
    const size_t stored = data[i + 18] | data[i + 19] << 8 | data[i + 20] << 16 | size_t{data[i + 21]} << 24;
    const size_t nameLength = data[i + 26] | data[i + 27] << 8, extra = data[i + 28] | data[i + 29] << 8;
    if (i + 30 + nameLength > size) return false;
    const std::string_view entry(reinterpret_cast<const char*>(data) + i + 30, nameLength);
    if (entry.size() < name.size() || entry.substr(entry.size() - name.size()) != name) continue;
    const size_t at = i + 30 + nameLength + extra;
    if (at > size) return false;
    return claimsLongString(data + at, std::min(stored, size - at));
  }
  return false;
}

void writeFile(const std::string& path, const void* data, size_t size) {
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = scratchPath();
  static const bool longStrings = std::getenv("HAP_FUZZ_CHECKPOINT_LONG_STRINGS") != nullptr;
  if (size == 0) return 0;
  if (!longStrings && mayClaimLongString(data + 1, size - 1, (data[0] & 1) != 0)) return 0;
  if ((data[0] & 1) == 0) {
    writeFile(path, data + 1, size - 1);
  } else {
    std::string zip;
    {
      caffe2::serialize::PyTorchStreamWriter writer([&](const void* bytes, size_t n) {
        zip.append(static_cast<const char*>(bytes), n);
        return n;
      });
      writer.writeRecord("data.pkl", data + 1, size - 1);
      writer.writeEndOfFile();
    }
    writeFile(path, zip.data(), zip.size());
  }
  const hap::runtime::CheckpointInfo info = hap::runtime::readCheckpointInfo(path);
  (void)info;
#ifdef HAP_FUZZ_CHECKPOINT_FORMAT
  try {
    const c10::IValue root = hap::runtime::checkpoint_format::readRoot(path, /*withData=*/true);
    hap::runtime::checkpoint_format::verify(root, path, /*withData=*/true);
  } catch (const hap::Error&) {
    // the documented answer to a damaged checkpoint
  }
#endif
  std::remove(path.c_str());
  return 0;
}
