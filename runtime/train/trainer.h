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

namespace hap::runtime {

struct TrainOptions {
  std::string planPath;
  std::string modelPath;        // empty: the plan's model path
  int64_t steps = 20;           // optimizer steps measured (after the warm-up)
  int64_t warmup = 2;           // steps run first and left out of the timing statistics
  uint64_t seed = 0;            // random ops (dropout) and synthetic data
  DataOptions data;
  OptimizerOptions optimizer;
  std::string metricsPath;      // JSON lines, one per step and a summary (rank 0 writes)
  std::string tracePath;        // Chrome trace of the last measured steps of every rank (rank 0)
  std::string checkpointDir;    // consolidated checkpoints step-N.pt here, every checkpointEvery
  int64_t checkpointEvery = 0;  // steps; 0: only at the end when checkpointDir is set
  std::string resumePath;       // a checkpoint to continue from
  std::string exportPath;       // the trained model as a TorchScript file (rank 0 writes; creates its folder)
  int threads = 0;              // intra-op threads; 0 keeps LibTorch's default
  bool cuda = false;            // NCCL and CUDA tensors (a CUDA build of LibTorch)
  // Gradient buckets all-reduced during backward (ExecutorOptions::bucketBytes; <= 0: one
  // bucket after backward).
  int64_t bucketBytes = ExecutorOptions{}.bucketBytes;
  // The exactness check (exactness_check.h): beside every step, the single-device program on the
  // whole batch; the loss, every gradient after every reduction, and the parameters and buffers
  // after every step are compared, each step from the same state.
  bool check = false;
  bool checkFloat32 = false;  // in the model's float32 against a float64 shadow, not in float64
  std::optional<double> checkRtol, checkAtol;  // overrides of CheckTolerance::forDtype
  // Recording into the profile store (db/store.h): both or neither. Every rank opens the store at
  // dbPath and adds to run runId (begun by `hap launch --db`, which also finishes it): its
  // StepRecord after every step, written in whole steps, one transaction per batch of steps (at
  // most every few steps or seconds, and at the end, so recording costs a step far less than a
  // millisecond), and at the end its measured per-stage split (StageRecord per Plan::stages).
  std::string dbPath;
  int64_t runId = 0;
  // Set (to the signal's number) by the worker's SIGTERM/SIGINT handler: the rank stops after the
  // step it is in, its recorded steps written, with a RuntimeError saying so. Null: never.
  const std::atomic<int>* stop = nullptr;
};

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
int runWorker(const TrainOptions& options, const WorkerEnv& env);

}  // namespace hap::runtime
