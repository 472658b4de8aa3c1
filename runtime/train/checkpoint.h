// Consolidated checkpoints and model export (../shared/DESIGN.md §5).
//
// A checkpoint holds the single-device-equivalent training state: full tensors by qualified name,
// never pieces, so a checkpoint written by a run on N ranks resumes a run on M ranks with any
// other plan of the same model. The file is torch.save's zip format written by
// torch::pickle_save; `torch.load(path)` in Python gives a dict:
//   "format":          "hap-checkpoint" (str)       "version": 3 (int)
//   "iteration":       the iteration to continue from: the steps taken (int, >= 0)
//   "optimizer":       "sgd" | "adam" | "adamw" (str)
//   "optimizer_steps": Optimizer::steps() (int; equal to "iteration")
//   "parameters":      {qualified name: full tensor}
//   "optimizer_state": {qualified name: {"step": int, "momentum_buffer" | "exp_avg",
//                       "exp_avg_sq": full tensor}}
//   "buffers":         {qualified name: full tensor} (running statistics and other module state)
//   "checksums":       {"algorithm": "crc32", "header": int, "tensors": {key: int}}: CRC-32 of
//                       every tensor's bytes and of the header (checkpoint_format.h; the canonical
//                       header text is in docs/formats.md, so a Python tool can check them too)
// Tensors are on the CPU in the parameters' dtype. Versions 1 and 2 (no checksums) are refused.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/train/optimizer.h"
#include "runtime/train/parameters.h"

namespace hap::runtime {

class Communicator;

// Writes the training state to `path` from rank 0; every rank must call it (sharded pieces and
// their optimizer state are all-gathered, parameter by parameter). The file is written to a
// temporary file beside `path`, flushed to disk (fsync), renamed over `path` and the folder
// flushed, so after a crash, a full disk or a failed write `path` is either the old or the
// complete new file (a crash may leave a temporary ".step-N.pt.tmp-PID" beside it; listings skip
// those). Returns on every rank once the file is in place; RuntimeError on every rank when rank 0
// could not write it (the message names the file and the system's reason). `iteration` must be
// the optimizer's step count (std::logic_error otherwise: the loader would refuse the file).
// `buffers` are written consolidated beside the parameters.
void saveCheckpoint(Communicator& comm, const std::string& path, const std::vector<LocalParameter>& params,
                    const Optimizer& optimizer, int64_t iteration, const std::vector<LocalBuffer>& buffers = {});

// Reads `path` (every rank reads it) and sets each parameter to rank `rank`'s piece of its full
// tensor, and the optimizer's state and step count likewise, in place. Returns the iteration to
// continue from (>= 0). Before anything changes, the whole file is verified: RuntimeError naming
// the file and what is wrong when it is missing, truncated or not a HAP checkpoint, has another
// version, its header or any tensor's bytes do not match their checksums (naming the tensor), its
// counts disagree (a negative "iteration", "optimizer_steps" other than "iteration", a parameter's
// step count above it), or a parameter is missing, has another shape, or the optimizer kind is not
// the optimizer's; names in the file that `params` lacks are ignored. A checkpoint without
// momentum buffers loaded into SGD with momentum starts them afresh.
// `buffers`, when given, are set to their pieces of the file's buffers.
int64_t loadCheckpoint(const std::string& path, std::vector<LocalParameter>& params, Optimizer& optimizer,
                       int rank, std::vector<LocalBuffer>* buffers = nullptr);

// Rank 0 writes a copy of the TorchScript model `modelPath` to `outPath` (atomically, as above)
// with every parameter in `params` and buffer in `buffers` replaced by its trained value
// (all-gathered; found by qualified name, nested modules through the name's dots); the model's
// other parameters and buffers are kept. Every rank must call it. RuntimeError naming the file and
// the parameter when the model cannot be read or written, lacks a parameter, or holds it with
// another shape.
void exportModel(Communicator& comm, const std::string& modelPath, const std::string& outPath,
                 const std::vector<LocalParameter>& params, const std::vector<LocalBuffer>& buffers = {});

}  // namespace hap::runtime
