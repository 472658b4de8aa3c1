#include "runtime/comm/liveness.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <condition_variable>
#include <exception>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace hap::runtime {

struct Liveness::State {
  int rank = 0, worldSize = 1;
  c10::intrusive_ptr<c10d::TCPStore> store;  // a client of its own (TCPStore serialises its calls)
  std::mutex mutex;
  std::condition_variable changed;
  bool stopping = false, beatEnded = false;
  std::mutex verdictMutex;  // held while the first verdict is made
  bool decided = false;
  std::string verdict;
};

namespace {

std::string aliveKey(int rank) {
  return fmt::format("hap-alive/{}", rank);
}

void beat(const std::shared_ptr<Liveness::State>& s) {
  const std::string key = aliveKey(s->rank);
  for (;;) {
    try {
      s->store->add(key, 1);
    } catch (...) {
      break;  // the store has gone (rank 0 ended): nothing left to tell
    }
    std::unique_lock lock(s->mutex);
    if (s->changed.wait_for(lock, Liveness::kBeat, [&] { return s->stopping; })) break;
  }
  std::lock_guard lock(s->mutex);
  s->beatEnded = true;
  s->changed.notify_all();
}

// Every rank's count of beats.
std::vector<int64_t> counts(Liveness::State& s) {
  std::vector<int64_t> c(static_cast<size_t>(s.worldSize));
  for (int r = 0; r < s.worldSize; ++r) c[static_cast<size_t>(r)] = s.store->add(aliveKey(r), 0);
  return c;
}

}  // namespace

std::shared_ptr<Liveness> Liveness::start(const WorkerEnv& env) {
  if (env.worldSize <= 1) return nullptr;
  auto state = std::make_shared<State>();
  state->rank = env.rank;
  state->worldSize = env.worldSize;
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(env.masterPort);
    options.isServer = false;
    options.waitWorkers = false;
    options.timeout = std::chrono::milliseconds(kStoreGrace);
    state->store = c10::make_intrusive<c10d::TCPStore>(env.masterAddr, options);
  } catch (...) {
    return nullptr;
  }
  std::thread([state] { beat(state); }).detach();
  return std::shared_ptr<Liveness>(new Liveness(std::move(state)));
}

Liveness::Liveness(std::shared_ptr<State> state) : state_(std::move(state)) {}

Liveness::~Liveness() {
  std::unique_lock lock(state_->mutex);
  state_->stopping = true;
  state_->changed.notify_all();
  // A beat stuck in a store call that cannot return (rank 0 stopped) is left to the exit.
  state_->changed.wait_for(lock, kBeat + kStoreGrace, [&] { return state_->beatEnded; });
}

std::string Liveness::verdict() {
  State& s = *state_;
  std::lock_guard decide(s.verdictMutex);
  if (s.decided) return s.verdict;
  s.decided = true;
  // Observed on a thread of its own, so that a store that does not answer cannot hold the caller.
  auto promise = std::make_shared<std::promise<std::vector<int>>>();
  std::future<std::vector<int>> silent = promise->get_future();
  std::thread([state = state_, promise] {
    try {
      const std::vector<int64_t> before = counts(*state);
      std::this_thread::sleep_for(kWindow);
      const std::vector<int64_t> after = counts(*state);
      std::vector<int> quiet;
      for (int r = 0; r < state->worldSize; ++r)
        if (r != state->rank && after[static_cast<size_t>(r)] == before[static_cast<size_t>(r)])
          quiet.push_back(r);
      promise->set_value(std::move(quiet));
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  }).detach();
  const double window = std::chrono::duration<double>(kWindow).count();
  bool storeAnswered = silent.wait_for(kWindow + kStoreGrace) == std::future_status::ready;
  std::vector<int> quiet;
  if (storeAnswered) {
    try {
      quiet = silent.get();
    } catch (...) {
      storeAnswered = false;
    }
  }
  if (!storeAnswered) {
    if (s.rank != 0)
      s.verdict =
          "rank 0 did not arrive (the rendezvous store it hosts does not answer: it is stopped, "
          "hung or dead)";
  } else if (quiet.size() == 1) {
    s.verdict = fmt::format(
        "rank {} did not arrive (no sign of life from it for {:g} s: stopped, hung or dead)",
        quiet[0], window);
  } else if (!quiet.empty()) {
    s.verdict = fmt::format(
        "ranks {} did not arrive (no sign of life from them for {:g} s: stopped, hung or dead)",
        fmt::join(quiet, ", "), window);
  }
  return s.verdict;
}

}  // namespace hap::runtime
