// The checks before a local run starts (../shared/DESIGN.md §5; the launch panel's preflight): what
// would make a worker refuse to start or fail at its first step, found before any process is
// started, each with a message naming the file or field and what to do. No LibTorch in this header:
// the desktop app includes it (preflight.cpp uses the runtime's own code for every check, so a
// check passes exactly when the worker would accept the same input).
//
// Every check runs, whatever the others found, in this order:
//   "Model file"     the model exists, its SHA-256 is the plan's and the plan verifies against
//                    it (plan::openPlan, engine/plan/open_plan.h, as the workers open it)
//   "Ranks"          the plan lists its devices by rank, one worker each (planRanks,
//                    local_launch.h)
//   "CPU shares"     one share per rank, each in (0, 1]
//   "Port"           a TCP port can be bound on 127.0.0.1 (freeTcpPort)
//   "Worker"         the hap-worker executable exists and can be executed
//   "Data"           synthetic, or the data file feeds the model's inputs: the runtime's batch
//                    source for every rank's pieces, the whole file scanned, batch 0 read
//   "Resume"         the checkpoint loads into the model's parameters with this optimizer
//                    (loadCheckpoint's checks)
//   "Checkpoints"    the checkpoint folder exists or can be created, and is writable
//   "Export"         the export file's folder exists or can be created, and is writable
// A check that cannot run because of another's failure (the data without a readable model) is a
// warning saying so, so that each bad input fails exactly one check.
//
// Cost: the model file is read whole for its hash and imported once (the whole preflight takes
// 20-40 ms for the zoo's tiny models); the data file is scanned whole, in 1 MiB chunks (as the
// worker does when it starts; fine for files of some hundred MB); the resume checkpoint is read
// whole and held in memory with a copy of the model's parameters. The writability checks create and
// remove an empty file (nothing else is written, no folder is created). Safe to call off the GUI
// thread; it starts no process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/plan/plan.h"
#include "runtime/launch/worker_options.h"

namespace hap::runtime {

struct PreflightCheck {
  enum class Status { Ok, Warning, Failed };
  std::string what;     // the check's title ("Model file", "Data", ...)
  Status status = Status::Ok;
  std::string message;  // what was found; on failure the file or field and what to do
};

struct PreflightRequest {
  plan::Plan plan;
  // The workers' options as the launch passes them: options.planPath is the plan's file (the
  // workers read it; messages name it), options.modelPath the model (--model; "": as the worker
  // finds it). The checks read the data (kind, path, token dtype), the optimizer's kind (a resumed
  // checkpoint must match it), the checkpoint folder, the resumed checkpoint and the export file.
  WorkerOptions options;
  std::string worker;             // the hap-worker executable; "": not found
  std::vector<double> cpuShares;  // one per rank; empty: all 1
};

// The checks above, in that order; never throws for a bad request.
std::vector<PreflightCheck> preflight(const PreflightRequest& request);

// True when no check failed (warnings allowed).
bool preflightPassed(const std::vector<PreflightCheck>& checks);

}  // namespace hap::runtime
