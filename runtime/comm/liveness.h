// Every rank's sign of life in the rendezvous store, so that a collective that fails (a peer that
// does not answer within HAP_TIMEOUT_S, a closed connection) can say which rank did not arrive.
//
// Contract:
// - start() connects a client of its own to the TCPStore at MASTER_ADDR:MASTER_PORT (after the
//   rendezvous, so the store is up) and a thread adds 1 to the key "hap-alive/<rank>" every
//   kBeat. The thread stops when the Liveness is destroyed, or at the first store error (rank 0,
//   which hosts the store, has gone: nothing left to tell). A rank that is stopped (SIGSTOP),
//   killed or hung in a way that stops every thread beats no more; one that merely waits in a
//   collective beats on.
// - verdict() reads every rank's count twice, kWindow apart, and names the other ranks whose count
//   did not move: "rank 1 did not arrive (no sign of life from it for 1.5 s: stopped, hung or
//   dead)"; rank 0 when the store itself does not answer within kWindow + kStoreGrace. "" when
//   every other rank is alive (a rank waiting in another collective, a bug). The first call
//   decides; later calls (the other collectives failing as the worker unwinds) return the same
//   text at once, so a failure costs at most one window.
// - Nothing here ever blocks a caller for longer than kWindow + kStoreGrace, nor the destructor
//   for longer than kBeat + kStoreGrace: a thread stuck in a store call that cannot return (rank 0
//   stopped) is left to the process's exit.
// Plain C++ in this header; LibTorch's c10d only in the .cpp.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "runtime/core/worker_env.h"

namespace hap::runtime {

class Liveness {
 public:
  static constexpr std::chrono::milliseconds kBeat{500};
  static constexpr std::chrono::milliseconds kWindow{1500};
  static constexpr std::chrono::milliseconds kStoreGrace{2000};

  // Starts beating for env.rank of env.worldSize; null for a world of one, or when the store
  // cannot be reached (the caller's own failures will say so).
  static std::shared_ptr<Liveness> start(const WorkerEnv& env);
  ~Liveness();
  Liveness(const Liveness&) = delete;
  Liveness& operator=(const Liveness&) = delete;

  // Which other ranks gave no sign of life (above); "" when all did.
  std::string verdict();

  struct State;  // shared with the threads, which may outlive this object

 private:
  explicit Liveness(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace hap::runtime
