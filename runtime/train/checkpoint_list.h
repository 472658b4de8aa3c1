// The checkpoints of a run, for the launch panel (../shared/DESIGN.md §5): the step-N.pt files the
// worker writes into --checkpoint-dir (trainer.h), with what their header says (checkpoint.h's
// format). No LibTorch in this header: the desktop app includes it.
//
// Cost: listing reads the folder, and from each file the zip's directory and its pickled header
// (data.pkl: a few KiB per thousand parameters), never the tensor data, so a checkpoint of a
// large model lists as fast as a small one.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace hap::runtime {

// A tensor a checkpoint holds: its qualified name and full (single-device) shape.
struct CheckpointTensor {
  std::string name;
  std::vector<int64_t> shape;
};

struct CheckpointInfo {
  std::string path;  // the file
  int64_t step = 0;  // N of step-N.pt (the iteration when the name has no step)
  int64_t bytes = 0;
  std::chrono::system_clock::time_point modified;
  // The header, valid when `error` is empty; else why it could not be read (missing, not a HAP
  // checkpoint, damaged), naming the file. Whether a run can resume from it is loadCheckpoint's
  // (or preflight's) to say.
  std::string error;
  int64_t version = 0;
  int64_t iteration = 0;  // the step a run resumed from it continues after
  std::string optimizer;  // "sgd", "adam" or "adamw": a resume must use the same
  int64_t optimizerSteps = 0;
  std::vector<CheckpointTensor> parameters, buffers;  // in the file's order
  // The parameters' element count: a checkpoint of the plan's model has Plan::parameters.
  int64_t parameterElements = 0;
};

// The header of one checkpoint file (any name). Never throws for a bad file: `error` says what is
// wrong (a missing file too).
CheckpointInfo readCheckpointInfo(const std::string& path);

// Every step-N.pt in `dir` (N a decimal number; temporaries and other files are skipped), sorted
// by step, each with its header (readCheckpointInfo). A folder that does not exist yet gives an
// empty list (no checkpoint written so far). RuntimeError naming `dir` when it is not a folder or
// cannot be read.
std::vector<CheckpointInfo> listCheckpoints(const std::string& dir);

}  // namespace hap::runtime
