// The worker's job (DESIGN.md §5): load and check the plan and model, join the other ranks, and
// train: per iteration a batch piece, forward, backward, clipping, an optimizer step; metrics,
// a merged measured trace, checkpoints, resume and export. Also the exactness check the runtime
// tests run: the same iterations against the single-device program on every rank.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/data.h"
#include "runtime/exactness_check.h"
#include "runtime/executor.h"
#include "runtime/optimizer.h"
#include "runtime/worker_env.h"

namespace hap::rt {

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
  std::string exportPath;       // the trained model as a TorchScript file (rank 0 writes)
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
};

// Runs the worker. Returns the process exit status (0: success; 1: a check failed). Throws
// hap::Error (RuntimeError, PlanError, ImportError) for expected failures, with the rank named;
// the profile store's errors (db::StoreError) become RuntimeError naming the rank.
int runWorker(const TrainOptions& options, const WorkerEnv& env);

}  // namespace hap::rt
