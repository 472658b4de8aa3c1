// The worker's job (../shared/DESIGN.md §5): open the plan and its model (plan::openPlan), join
// the other ranks, and train: per iteration a batch piece, forward, backward, clipping, an
// optimizer step; metrics, a merged measured trace, checkpoints, resume and export. Also the
// exactness check the runtime tests run: the same iterations against the single-device program on
// every rank.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/plan/plan.h"
#include "runtime/data/data.h"
#include "runtime/train/exactness_check.h"
#include "runtime/core/executor.h"
#include "runtime/train/optimizer.h"
#include "runtime/core/worker_env.h"
#include "runtime/launch/worker_options.h"

namespace hap::runtime {

// The pieces of the global batch world rank `rank` reads, from its program's pieces
// (Executor::inputPieces or planInputPieces): those themselves, or for a replicated plan
// (plan::Replication) its machine's rows of the global batch (the inputs' dimension
// Replication::inputDims, `machines` times the plan's length there), cut inside the machine as the
// program cuts them. RuntimeError when the program cuts an input along another dimension (the
// verifier rejects such plans).
std::vector<InputPiece> worldInputPieces(const plan::Plan& plan, std::vector<InputPiece> programPieces, int rank);

// Runs the worker: opens the plan (plan::openPlan with the model's data: located, its SHA-256
// checked, imported, verified), joins the other ranks, builds, trains and reports (the phases are
// described in trainer.cpp). Returns the process exit status (0: success; 1: a check failed).
// Throws hap::Error for expected failures: PlanError naming the plan file when the plan does not
// open (or the importer's ImportError); RuntimeError otherwise, naming the rank where the failure
// is this rank's (a collective, a stop signal; the profile store's errors, db::StoreError).
int runWorker(const WorkerOptions& options, const WorkerEnv& env);

}  // namespace hap::runtime
