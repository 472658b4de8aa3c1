// A process that records a run into a profile store, for tst_store_reliability (not a QtTest).
//
//   store_writer DB forever   begins a run and records steps (3 ranks each, one recordSteps per
//                             step) until killed, printing "run ID" first and "step N" after each
//                             step is committed
//   store_writer DB STEPS     records one run of STEPS steps × 3 ranks, finishes it (succeeded)
//                             and prints "run ID done"
//
// Exit status: 0 done, 1 a StoreError (message on stderr), 2 usage.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "db/store.h"

namespace {

constexpr int kRanks = 3;

std::vector<hap::db::StepRecord> stepOf(int64_t step) {
  std::vector<hap::db::StepRecord> ranks;
  for (int rank = 0; rank < kRanks; ++rank) {
    hap::db::StepRecord s;
    s.rank = rank;
    s.step = step;
    s.warmup = step <= 2;
    s.seconds = 0.01 * (rank + 1) + 1e-6 * static_cast<double>(step);
    s.computeSeconds = 0.007 * (rank + 1);
    s.communicationSeconds = 0.002;
    s.loss = 10.0 / static_cast<double>(step);
    s.peakMemoryBytes = 1e6 * (rank + 1);
    s.cpuSeconds = 0.009;
    ranks.push_back(s);
  }
  return ranks;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: store_writer DB forever|STEPS\n";
    return 2;
  }
  const std::string path = argv[1], what = argv[2];
  const bool forever = what == "forever";
  const int64_t steps = forever ? 0 : std::atoll(what.c_str());
  if (!forever && steps <= 0) {
    std::cerr << "store_writer: STEPS must be a positive number or 'forever'\n";
    return 2;
  }
  try {
    hap::db::Store store(path);
    hap::db::RunRecord r;
    r.label = forever ? "writer killed mid-run" : "concurrent writer";
    r.settingsJson = R"({"ranks": 3})";
    r.ranks = kRanks;
    r.cpuShares = {1, 0.5, 0.25};
    r.pid = getpid();
    const int64_t run = store.beginRun(r);
    std::printf("run %lld\n", static_cast<long long>(run));
    std::fflush(stdout);
    for (int64_t step = 1; forever || step <= steps; ++step) {
      store.recordSteps(run, stepOf(step));
      if (forever) {
        std::printf("step %lld\n", static_cast<long long>(step));
        std::fflush(stdout);
      }
    }
    store.recordStages(run, {{0, 0, 0.01, 0.002}, {1, 0, 0.02, 0.002}, {2, 0, 0.03, 0.002}});
    store.finishRun(run, hap::db::RunStatus::Succeeded);
    std::printf("run %lld done\n", static_cast<long long>(run));
    return 0;
  } catch (const hap::db::StoreError& e) {
    std::cerr << "store_writer: " << e.what() << "\n";
    return 1;
  }
}
