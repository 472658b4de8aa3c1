// hap-worker PLAN.json: one rank of a plan's distributed training run. Reads the torchrun
// environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; HAP_TIMEOUT_S), joins the
// other ranks and trains (runtime/train/trainer.h). Its options and their command line are
// runtime/launch/worker_options.h's. Exit status: 0 success, 1 an error (message on stderr as
// `hap-worker: error: ...`) or a failed --check, 2 usage, 3 an internal error: an exception that
// is not a hap::Error escaped (a LibTorch error the runtime did not translate, a gap in the input
// checks), reported with the plan it ran instead of an abort.
#include <CLI/CLI.hpp>
#include <signal.h>

#include <atomic>
#include <iostream>

#include "engine/base/error.h"
#include "runtime/core/heap_policy.h"
#include "runtime/launch/worker_options.h"
#include "runtime/train/trainer.h"
#include "runtime/core/worker_env.h"

namespace {

// SIGTERM (the launcher's stop) and SIGINT: finish the current step, write what was recorded,
// exit with an error saying so. A second signal, or the launcher's SIGKILL after its grace
// period, ends the process at once.
std::atomic<int> gStop{0};

extern "C" void onStop(int signal) {
  if (gStop.exchange(signal) != 0) {
    ::signal(signal, SIG_DFL);
    ::raise(signal);
  }
}

}  // namespace

int main(int argc, char** argv) {
  hap::runtime::retainFreedHeapMemory();
  CLI::App app{"hap-worker: one rank of a HAP plan's distributed training run (started by `hap launch`, torchrun, "
               "Slurm or ssh; reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT)",
               "hap-worker"};
  hap::runtime::WorkerOptions o;
  hap::runtime::bindWorkerOptions(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    o.stop = &gStop;
    struct sigaction action {};
    action.sa_handler = onStop;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // a blocked collective goes on; the step ends, then the check
    ::sigaction(SIGTERM, &action, nullptr);
    ::sigaction(SIGINT, &action, nullptr);
    return hap::runtime::runWorker(o, hap::runtime::WorkerEnv::fromEnvironment());
  } catch (const hap::Error& e) {
    std::cerr << "hap-worker: error: " << e.what() << "\n" << std::flush;
    return 1;
  } catch (const std::exception& e) {
    // Last: c10::Error and friends (an operator failed, and the runtime did not say why in its
    // own words) are a message naming the plan, never an abort.
    std::string what = e.what();
    if (const size_t cut = what.find("\nException raised from"); cut != std::string::npos) what.resize(cut);
    std::cerr << "hap-worker: error: internal error while running " << o.planPath << ": " << what
              << " (exit status 3; please report it with the plan and the command line)\n"
              << std::flush;
    return 3;
  } catch (...) {
    std::cerr << "hap-worker: error: internal error while running " << o.planPath
              << ": an exception of unknown type (exit status 3; please report it)\n"
              << std::flush;
    return 3;
  }
}
