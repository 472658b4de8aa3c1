#include "runtime/launch/worker_options.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <memory>

#include "engine/base/error.h"

namespace hap::runtime {
namespace {

constexpr double kMiB = 1 << 20;

// The options whose command-line form is not their field's: their text, kept with the app (the
// parse converts it into `o` as each is read).
struct OptionTexts {
  std::string optimizer;
  double bucketMiB = 0;
  std::string checkDtype;
};

}  // namespace

void bindWorkerOptions(CLI::App& app, WorkerOptions& o, WorkerBinding binding) {
  const bool worker = binding == WorkerBinding::Worker;
  auto texts = std::make_shared<OptionTexts>();
  texts->optimizer = std::string(optimizerKindName(o.optimizer.kind));
  texts->bucketMiB = static_cast<double>(o.bucketBytes) / kMiB;
  texts->checkDtype = o.checkFloat32 ? "float32" : "float64";

  if (worker)
    app.add_option("plan", o.planPath, "Plan file (hap plan -o)")
        ->required()
        ->check(CLI::ExistingFile);
  app.add_option("--model", o.modelPath,
                 "Model file (default: the plan's, or the file of that name beside the plan)");
  app.add_option("--steps", o.steps, "Optimizer steps measured after the warm-up")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--warmup", o.warmup, "Steps run first, left out of the timing")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", o.seed, "Seed of random ops (dropout) and synthetic data")
      ->capture_default_str();
  app.add_option("--data", o.data.kind,
                 "Batches: synthetic, tokens (a token file) or cifar (CIFAR-10 binary)")
      ->capture_default_str()
      ->check(CLI::IsMember({"synthetic", "tokens", "cifar"}));
  app.add_option("--data-path", o.data.path, "The data file of --data tokens|cifar");
  app.add_option("--token-dtype", o.data.tokenDtype, "Token ids in the token file: uint16 or int32")
      ->capture_default_str()
      ->check(CLI::IsMember({"uint16", "int32"}));
  app.add_option("--optimizer", texts->optimizer, "sgd (with momentum), adam or adamw")
      ->capture_default_str()
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}))
      ->each([&o, texts](const std::string& v) { o.optimizer.kind = parseOptimizerKind(v); });
  app.add_option("--lr", o.optimizer.lr, "Learning rate")->capture_default_str();
  app.add_option("--momentum", o.optimizer.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--weight-decay", o.optimizer.weightDecay, "Weight decay (AdamW: decoupled)")
      ->capture_default_str();
  app.add_option("--clip-norm", o.optimizer.clipNorm,
                 "Clip gradients to this global L2 norm (0: off)")
      ->capture_default_str();
  app.add_option("--metrics", o.metricsPath, "Write metrics as JSON lines (rank 0)");
  app.add_option("--trace", o.tracePath,
                 "Write a Chrome trace of the last steps of every rank (rank 0)");
  app.add_option("--checkpoint-dir", o.checkpointDir,
                 "Write consolidated checkpoints step-N.pt here");
  app.add_option("--checkpoint-every", o.checkpointEvery,
                 "Checkpoint every N steps (and at the end)")
      ->check(CLI::NonNegativeNumber);
  CLI::Option* resume = app.add_option("--resume", o.resumePath, "Continue from this checkpoint");
  if (worker) resume->check(CLI::ExistingFile);
  app.add_option("--export", o.exportPath,
                 "Write the trained model as a TorchScript file (rank 0)");
  app.add_option("--threads", o.threads, "Intra-op threads (0: LibTorch's default)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--cuda", o.cuda, "Run on this rank's GPU with NCCL (needs LibTorch with CUDA)");
  app.add_option("--slowdown", o.slowdown,
                 "Emulate a device F times slower: every op of this rank's computation, forward "
                 "and backward, is followed by a sleep of F - 1 times its own time (paid in sleeps of "
                 "100 us or more), while its collectives run at full speed (>= 1; CPU runs)")
      ->capture_default_str()
      ->type_name("F")
      ->check(CLI::Validator(
          [](std::string& v) {
            double f = 0;
            if (!CLI::detail::lexical_cast(v, f) || !(f >= 1) || !std::isfinite(f))
              return fmt::format("{} is not a slowdown factor: give a number >= 1 (1: full speed, "
                                 "2: twice as slow)",
                                 v);
            return std::string();
          },
          "", "slowdown factor"));
  app.add_option("--bucket-mb", texts->bucketMiB,
                 "Size of the gradient all-reduce buckets in MiB, all-reduced while backward runs "
                 "(0: one bucket "
                 "after backward)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber)
      ->each([&o, texts](const std::string& v) {
        double mib = 0;
        CLI::detail::lexical_cast(v, mib);  // a number: checked just before
        o.bucketBytes = static_cast<int64_t>(mib * kMiB);
        o.bucketBytesGiven = true;
      });
  app.add_flag("--check", o.check,
               "Exactness check: run the single-device program beside the plan, both in float64, "
               "and compare, every "
               "step, the loss, every gradient after every reduction, and the parameters and "
               "buffers after the "
               "optimizer step (exit 1 when a tensor differs beyond ||a - b|| <= rtol * ||b|| + "
               "atol * sqrt(n))");
  app.add_option("--check-dtype", texts->checkDtype,
                 "float64 (both programs in float64), or float32 (the model's own, against a "
                 "float64 shadow of the "
                 "single-device program)")
      ->capture_default_str()
      ->check(CLI::IsMember({"float64", "float32"}))
      ->each([&o, texts](const std::string& v) { o.checkFloat32 = v == "float32"; });
  app.add_option("--check-rtol", o.checkRtol,
                 "Relative tolerance of --check (default 1e-7; float32: 1e-5)");
  app.add_option("--check-atol", o.checkAtol,
                 "Absolute tolerance of --check, per element (default 1e-7; float32: 1e-6)");
  CLI::Option* db =
      app.add_option(
             "--db", o.dbPath,
             "Record this rank's per-step measurements and per-stage split into this profile "
             "store (with --run-id; hap launch --db passes both)")
          ->type_name("PATH");
  CLI::Option* runId = app.add_option("--run-id", o.runId,
                                      "The run of --db these steps belong to (begun by hap launch)")
                           ->check(CLI::PositiveNumber)
                           ->type_name("N");
  db->needs(runId);
  runId->needs(db);
  app.add_option("--record", o.recordPath,
                 "Rank 0 records the whole run (every rank's steps and per-stage split, the plan, "
                 "its cluster) into this profile store file at the end, creating it when missing; "
                 "for launches without hap launch --db, e.g. the scripts of hap launch --emit "
                 "--record. Read it back with hap runs import or hap tune --emit")
      ->type_name("FILE")
      ->excludes(db);
}

std::string workerNumber(double value) {
  std::string text = fmt::format("{}", value);  // the shortest that reads back by correct rounding
  // CLI11 reads through long double, which could round a decimal lying near the middle of two
  // doubles the other way: then enough digits that the text is the double itself.
  double back = 0;
  if (!CLI::detail::lexical_cast(text, back) || back != value) text = fmt::format("{:.40g}", value);
  return text;
}

std::vector<std::string> workerArguments(const WorkerOptions& o) {
  const WorkerOptions d;
  std::vector<std::string> a;
  auto add = [&a](const char* name, std::string value) {
    a.emplace_back(name);
    a.push_back(std::move(value));
  };
  auto text = [&](const char* name, const std::string& value, const std::string& byDefault) {
    if (value != byDefault) add(name, value);
  };
  auto integer = [&](const char* name, auto value, auto byDefault) {
    if (value != byDefault) add(name, fmt::format("{}", value));
  };
  auto number = [&](const char* name, double value, double byDefault) {
    if (!(value == byDefault)) add(name, workerNumber(value));
  };
  text("--model", o.modelPath, d.modelPath);
  integer("--steps", o.steps, d.steps);
  integer("--warmup", o.warmup, d.warmup);
  integer("--seed", o.seed, d.seed);
  text("--data", o.data.kind, d.data.kind);
  text("--data-path", o.data.path, d.data.path);
  text("--token-dtype", o.data.tokenDtype, d.data.tokenDtype);
  if (o.optimizer.kind != d.optimizer.kind)
    add("--optimizer", std::string(optimizerKindName(o.optimizer.kind)));
  number("--lr", o.optimizer.lr, d.optimizer.lr);
  number("--momentum", o.optimizer.momentum, d.optimizer.momentum);
  number("--weight-decay", o.optimizer.weightDecay, d.optimizer.weightDecay);
  number("--clip-norm", o.optimizer.clipNorm, d.optimizer.clipNorm);
  text("--metrics", o.metricsPath, d.metricsPath);
  text("--trace", o.tracePath, d.tracePath);
  text("--checkpoint-dir", o.checkpointDir, d.checkpointDir);
  integer("--checkpoint-every", o.checkpointEvery, d.checkpointEvery);
  text("--resume", o.resumePath, d.resumePath);
  text("--export", o.exportPath, d.exportPath);
  integer("--threads", o.threads, d.threads);
  if (o.cuda) a.emplace_back("--cuda");
  number("--slowdown", o.slowdown, d.slowdown);
  if (o.bucketBytesGiven || o.bucketBytes != d.bucketBytes)
    add("--bucket-mb", workerNumber(static_cast<double>(o.bucketBytes) / kMiB));
  if (o.check) a.emplace_back("--check");
  if (o.checkFloat32) add("--check-dtype", "float32");
  if (o.checkRtol) add("--check-rtol", workerNumber(*o.checkRtol));
  if (o.checkAtol) add("--check-atol", workerNumber(*o.checkAtol));
  text("--db", o.dbPath, d.dbPath);
  integer("--run-id", o.runId, d.runId);
  text("--record", o.recordPath, d.recordPath);
  return a;
}

WorkerOptions parseWorkerArguments(const std::vector<std::string>& args, const WorkerOptions& base,
                                   std::vector<std::string>* given) {
  WorkerOptions o = base;
  CLI::App app{"hap-worker's options", "hap-worker"};
  app.set_help_flag();  // --help is no option to pass on
  bindWorkerOptions(app, o, WorkerBinding::Arguments);
  std::vector<std::string> reversed(args.rbegin(),
                                    args.rend());  // CLI11 reads the list from its end
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw Error(fmt::format("hap-worker arguments: {}", e.what()));
  }
  if (given)
    for (const CLI::Option* option : app.get_options())
      if (option->count() > 0) given->push_back(option->get_name());
  return o;
}

}  // namespace hap::runtime
