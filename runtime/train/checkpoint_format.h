// The checkpoint file's integrity (checkpoint.h's format, version 3; docs/formats.md,
// "Checkpoint"): reading the zip's pickled root dict, with or without the tensors' data, and the
// checksums written with it, so that a damaged or edited file is an error naming the file and the
// tensor (or its header), never a run that resumes from wrong values.
//
// The checksums are CRC-32 (zlib's): one of each tensor's bytes (row-major, as stored), and one of
// the header: a canonical text of the scalar entries and of every tensor's key, dtype, shape,
// strides, storage offset and checksum, so that a changed iteration, name, shape or tensor
// checksum shows as a damaged header. They find damage (a disk, a copy, an edit), not an attacker.
//
// Used by checkpoint.cpp (save and load) and checkpoint_list.cpp (the header only). No LibTorch
// include: the root dict is passed as a c10::IValue, declared here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace c10 {
struct IValue;
}

namespace hap::runtime::checkpoint_format {

inline constexpr const char* kFormat = "hap-checkpoint";
inline constexpr int64_t kVersion = 3;  // 2: "buffers"; 3: "checksums"
inline constexpr const char* kAlgorithm = "crc32";

// zlib's CRC-32 of `n` bytes, continuing `crc` (0 to start).
uint32_t crc32(const void* data, size_t n, uint32_t crc = 0);

// The root object of the checkpoint `path` (a torch.save zip): data.pkl unpickled; with
// `withData` the tensors hold their data (each storage checked to lie inside its record, so a
// damaged size never reads past it), else they have their shapes and no data (only the zip's
// directory and data.pkl are read). RuntimeError naming the file when it does not exist, is a
// folder, is not a zip (or a truncated one), or was written on a big-endian machine.
c10::IValue readRoot(const std::string& path, bool withData);

// Checks that `root` is a HAP checkpoint this build reads and that it is intact: "format",
// "version" (exactly kVersion: older files carry no checksums and are refused with what to do,
// newer ones need a newer build), the sections' types, the header's checksum and, with
// `withData`, every tensor's bytes against its checksum. RuntimeError naming `path` and what is
// wrong: the entry, or the tensor ("parameter 'w'", "optimizer state 'exp_avg' of parameter
// 'w'", "buffer 'b'").
void verify(const c10::IValue& root, const std::string& path, bool withData);

// Adds the "checksums" entry to `root`, a root dict with every other entry in place (tensors
// contiguous on the CPU).
void seal(c10::IValue& root);

}  // namespace hap::runtime::checkpoint_format
