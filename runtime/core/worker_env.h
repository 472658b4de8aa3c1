// The torchrun environment contract (../shared/DESIGN.md §5): RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT, read once at start-up.
#pragma once

#include <chrono>
#include <string>

namespace hap::runtime {

struct WorkerEnv {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  // How long rendezvous and every collective may wait for the other ranks (HAP_TIMEOUT_S,
  // default 120 s) before the worker fails naming the step.
  std::chrono::seconds timeout{120};

  // Reads the variables. A missing RANK/WORLD_SIZE means a single rank (rank 0 of 1); malformed or
  // inconsistent values throw RuntimeError naming the variable.
  static WorkerEnv fromEnvironment();
};

}  // namespace hap::runtime
