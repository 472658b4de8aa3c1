// The worker's job (../shared/DESIGN.md §5): load and check the plan and model, join the other
// ranks, and train: per iteration a batch piece, forward, backward, clipping, an optimizer step; metrics,
// a merged measured trace, checkpoints, resume and export. Also the exactness check the runtime
// tests run: the same iterations against the single-device program on every rank.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/import/model_tensors.h"
#include "engine/plan/plan.h"
#include "runtime/data/data.h"
#include "runtime/train/exactness_check.h"
#include "runtime/core/executor.h"
#include "runtime/train/optimizer.h"
#include "runtime/core/worker_env.h"
#include "runtime/launch/worker_options.h"

namespace hap::runtime {

// The model file a worker of `plan` (read from `planPath`) loads: `modelPath` (--model) when
// given, else the plan's model path as written, else the file of that name beside the plan.
// RuntimeError naming the plan when none is there.
std::string workerModelPath(const std::string& modelPath, const plan::Plan& plan, const std::string& planPath);

// RuntimeError naming both files when `modelPath`'s SHA-256 is not the plan's model.sha256: the
// worker refuses such a model. Reads the whole file.
void checkModelHash(const plan::Plan& plan, const std::string& planPath, const std::string& modelPath);

// The model as a worker of `plan` loads it: imported with the plan's input shapes (its
// parameters', buffers' and constants' data into `tensors`) and checked by the plan verifier;
// returns the planned graph (plan::planGraph). RuntimeError naming both files when the plan does
// not verify; the importer's ImportError and planGraph's PlanError otherwise.
ir::Graph loadPlannedModel(const plan::Plan& plan, const std::string& planPath, const std::string& modelPath,
                           import::ModelTensors& tensors);

// The pieces of the global batch world rank `rank` reads, from its program's pieces
// (Executor::inputPieces or planInputPieces): those themselves, or for a replicated plan
// (plan::Replication) its machine's rows of the global batch (the inputs' dimension
// Replication::inputDims, `machines` times the plan's length there), cut inside the machine as the
// program cuts them. RuntimeError when the program cuts an input along another dimension (the
// verifier rejects such plans).
std::vector<InputPiece> worldInputPieces(const plan::Plan& plan, std::vector<InputPiece> programPieces, int rank);

// Runs the worker. Returns the process exit status (0: success; 1: a check failed). Throws
// hap::Error (RuntimeError, PlanError, ImportError) for expected failures, with the rank named;
// the profile store's errors (db::StoreError) become RuntimeError naming the rank.
int runWorker(const WorkerOptions& options, const WorkerEnv& env);

}  // namespace hap::runtime
