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
// A finding of this target, fixed (docs/reliability.md): LibTorch's unpickler allocates and
// zero-fills the length a string opcode claims before reading it, so a damaged length made a 3 KB
// file cost up to 4 GiB and tens of seconds; checkpoint_format now checks the pickle first.
//
// Links LibTorch (the zip reader and unpickler are LibTorch's, not instrumented): only
// checkpoint_list.cpp, checkpoint_format.cpp and the engine are compiled for the target.
#include <ATen/core/ivalue.h>
#include <caffe2/serialize/inline_container.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

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

void writeFile(const std::string& path, const void* data, size_t size) {
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = scratchPath();
  if (size == 0) return 0;
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
