// hap-worker PLAN.json: one rank of a plan's distributed training run. Reads the torchrun
// environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; HAP_TIMEOUT_S), joins the
// other ranks and trains (runtime/train/trainer.h). Exit status: 0 success, 1 an error (message on
// stderr as `hap-worker: error: ...`) or a failed --check, 2 usage.
#include <CLI/CLI.hpp>
#include <signal.h>

#include <atomic>
#include <iostream>

#include "engine/base/error.h"
#include "runtime/core/heap_policy.h"
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
  hap::runtime::TrainOptions o;
  std::string optimizer = "sgd";
  app.add_option("plan", o.planPath, "Plan file (hap plan -o)")->required()->check(CLI::ExistingFile);
  app.add_option("--model", o.modelPath, "Model file (default: the plan's, or the file of that name beside the plan)");
  app.add_option("--steps", o.steps, "Optimizer steps measured after the warm-up")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--warmup", o.warmup, "Steps run first, left out of the timing")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--seed", o.seed, "Seed of random ops (dropout) and synthetic data")->capture_default_str();
  app.add_option("--data", o.data.kind, "Batches: synthetic, tokens (a token file) or cifar (CIFAR-10 binary)")
      ->capture_default_str()
      ->check(CLI::IsMember({"synthetic", "tokens", "cifar"}));
  app.add_option("--data-path", o.data.path, "The data file of --data tokens|cifar");
  app.add_option("--token-dtype", o.data.tokenDtype, "Token ids in the token file: uint16 or int32")
      ->capture_default_str()
      ->check(CLI::IsMember({"uint16", "int32"}));
  app.add_option("--optimizer", optimizer, "sgd (with momentum), adam or adamw")
      ->capture_default_str()
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}));
  app.add_option("--lr", o.optimizer.lr, "Learning rate")->capture_default_str();
  app.add_option("--momentum", o.optimizer.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--weight-decay", o.optimizer.weightDecay, "Weight decay (AdamW: decoupled)")->capture_default_str();
  app.add_option("--clip-norm", o.optimizer.clipNorm, "Clip gradients to this global L2 norm (0: off)")->capture_default_str();
  app.add_option("--metrics", o.metricsPath, "Write metrics as JSON lines (rank 0)");
  app.add_option("--trace", o.tracePath, "Write a Chrome trace of the last steps of every rank (rank 0)");
  app.add_option("--checkpoint-dir", o.checkpointDir, "Write consolidated checkpoints step-N.pt here");
  app.add_option("--checkpoint-every", o.checkpointEvery, "Checkpoint every N steps (and at the end)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--resume", o.resumePath, "Continue from this checkpoint")->check(CLI::ExistingFile);
  app.add_option("--export", o.exportPath, "Write the trained model as a TorchScript file (rank 0)");
  app.add_option("--threads", o.threads, "Intra-op threads (0: LibTorch's default)")->check(CLI::NonNegativeNumber);
  app.add_flag("--cuda", o.cuda, "Run on this rank's GPU with NCCL (needs LibTorch with CUDA)");
  double bucketMiB = static_cast<double>(o.bucketBytes) / (1 << 20);
  app.add_option("--bucket-mb", bucketMiB,
                 "Size of the gradient all-reduce buckets in MiB, all-reduced while backward runs (0: one bucket "
                 "after backward)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--check", o.check,
               "Exactness check: run the single-device program beside the plan, both in float64, and compare, every "
               "step, the loss, every gradient after every reduction, and the parameters and buffers after the "
               "optimizer step (exit 1 when a tensor differs beyond ||a - b|| <= rtol * ||b|| + atol * sqrt(n))");
  std::string checkDtype = "float64";
  app.add_option("--check-dtype", checkDtype,
                 "float64 (both programs in float64), or float32 (the model's own, against a float64 shadow of the "
                 "single-device program)")
      ->capture_default_str()
      ->check(CLI::IsMember({"float64", "float32"}));
  app.add_option("--check-rtol", o.checkRtol, "Relative tolerance of --check (default 1e-7; float32: 1e-5)");
  app.add_option("--check-atol", o.checkAtol, "Absolute tolerance of --check, per element (default 1e-7; float32: 1e-6)");
  CLI::Option* db = app.add_option("--db", o.dbPath,
                                   "Record this rank's per-step measurements and per-stage split into this profile "
                                   "store (with --run-id; hap launch --db passes both)")
                        ->type_name("PATH");
  CLI::Option* runId = app.add_option("--run-id", o.runId, "The run of --db these steps belong to (begun by hap launch)")
                           ->check(CLI::PositiveNumber)
                           ->type_name("N");
  db->needs(runId);
  runId->needs(db);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    o.optimizer.kind = hap::runtime::parseOptimizerKind(optimizer);
    o.checkFloat32 = checkDtype == "float32";
    o.bucketBytes = static_cast<int64_t>(bucketMiB * (1 << 20));
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
    // c10::Error and friends: an operator or a collective failed; name it rather than abort.
    std::string what = e.what();
    if (const size_t cut = what.find("\nException raised from"); cut != std::string::npos) what.resize(cut);
    std::cerr << "hap-worker: error: " << what << "\n" << std::flush;
    return 1;
  }
}
