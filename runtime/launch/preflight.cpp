#include "runtime/launch/preflight.h"

#include <fcntl.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

#include "engine/import/model_tensors.h"
#include "engine/plan/open_plan.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_list.h"
#include "runtime/data/data.h"
#include "runtime/core/executor.h"
#include "runtime/launch/free_port.h"
#include "runtime/launch/local_launch.h"
#include "runtime/train/optimizer.h"
#include "runtime/core/runtime_error.h"
#include "runtime/train/trainer.h"  // worldInputPieces

namespace hap::runtime {
namespace {

namespace fs = std::filesystem;
using Status = PreflightCheck::Status;

// The first line of an exception's text (c10::Error appends a backtrace after it).
std::string firstLine(const std::exception& e) {
  std::string text = e.what();
  if (const size_t cut = text.find("\nException raised from"); cut != std::string::npos) text.resize(cut);
  return text;
}

// Runs one check: `body` returns the check's outcome; any exception it throws fails the check with
// its message, so one check's failure never stops the others.
PreflightCheck run(const std::string& what, const std::function<PreflightCheck()>& body) {
  try {
    PreflightCheck c = body();
    c.what = what;
    return c;
  } catch (const std::exception& e) {
    return {what, Status::Failed, firstLine(e)};
  }
}

PreflightCheck ok(std::string message) { return {{}, Status::Ok, std::move(message)}; }
PreflightCheck warning(std::string message) { return {{}, Status::Warning, std::move(message)}; }
PreflightCheck failed(std::string message) { return {{}, Status::Failed, std::move(message)}; }

// The model as the workers load it, or why it could not be loaded.
struct LoadedModel {
  std::string path;
  import::ModelTensors tensors;
  std::optional<ir::Graph> planned;
  std::string problem;  // non-empty: the model check failed (its message)
};

// "" when a file can be made in folder `dir` (or in the folder it would be created in); else what
// stands in the way. `role` names the field ("checkpoint folder", "export file's folder").
std::string writableProblem(const fs::path& dir, const std::string& role) {
  std::error_code ec;
  fs::path existing = fs::absolute(dir.empty() ? fs::path(".") : dir, ec).lexically_normal();
  while (!fs::exists(existing, ec) && existing.has_parent_path() && existing != existing.parent_path())
    existing = existing.parent_path();
  if (!fs::is_directory(existing, ec))
    return fmt::format("the {} '{}' cannot be made: '{}' is a file, not a folder; choose another folder", role,
                       dir.string(), existing.string());
  // A real probe (access() says yes to root even where nothing can be written, as under /proc).
  std::string probe = (existing / ".hap-preflight-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0)
    return fmt::format("the {} '{}' is not writable: cannot create a file in '{}' ({}); choose a folder you can "
                       "write to",
                       role, dir.string(), existing.string(), std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return {};
}

// The plan opened as the workers open it (plan::openPlan with the model's data), after a check
// that the model file is there at all (this item's own message).
PreflightCheck checkModel(const PreflightRequest& r, LoadedModel& model) {
  model.problem = "the model file could not be read (see Model file)";  // until it has been
  const std::optional<std::string> located = plan::locatePlanModel(r.plan, r.options.planPath, r.options.modelPath);
  std::error_code ec;
  if (located && !fs::is_regular_file(*located, ec))
    return failed(fmt::format("model file '{}' does not exist; choose the model the plan was made for ({})", *located,
                              r.plan.modelPath));
  plan::OpenPlanOptions options;
  options.modelPath = located.value_or("");  // none there: openPlan says so
  options.tensors = &model.tensors;
  plan::OpenedPlan opened = plan::openPlan(r.plan, r.options.planPath, options);
  model.path = opened.modelPath;
  model.planned = std::move(opened.planned);
  model.problem.clear();
  return ok(fmt::format("{}: the plan's model (SHA-256 {}…), and the plan verifies against it", model.path,
                        r.plan.modelSha256.substr(0, 12)));
}

PreflightCheck checkRanks(const PreflightRequest& r) {
  const int n = planRanks(r.plan, r.options.planPath);
  return ok(fmt::format("{} ranks, one worker per device of the plan (ranks 0 to {})", n, n - 1));
}

PreflightCheck checkShares(const PreflightRequest& r) {
  const int n = static_cast<int>(plan::worldDevices(r.plan).size());
  if (r.cpuShares.empty()) return ok("none: every rank may use a whole CPU");
  if (static_cast<int>(r.cpuShares.size()) != n)
    return failed(fmt::format("{} CPU shares for the {} ranks of {}: give one per rank (rank 0 first)",
                              r.cpuShares.size(), n, r.options.planPath));
  std::string list;
  for (size_t k = 0; k < r.cpuShares.size(); ++k) {
    const double s = r.cpuShares[k];
    if (!(s > 0 && s <= 1))
      return failed(fmt::format("the CPU share of rank {} is {:g}, not in (0, 1]: each is the share of one CPU a rank "
                                "may use, 1 for a full CPU",
                                k, s));
    list += fmt::format("{}{:g}", k == 0 ? "" : ", ", s);
  }
  return ok(fmt::format("ranks 0 to {} get {} of a CPU", n - 1, list));
}

PreflightCheck checkPort() {
  const int port = freeTcpPort();
  return ok(fmt::format("a port can be bound on 127.0.0.1 ({} now; the run picks its own when it starts)", port));
}

PreflightCheck checkWorker(const PreflightRequest& r) {
  if (r.worker.empty())
    return failed("hap-worker not found beside this program nor on PATH; build it (ninja hap-worker) or choose the "
                  "worker executable");
  std::error_code ec;
  if (!fs::exists(r.worker, ec))
    return failed(fmt::format("worker '{}' does not exist; build hap-worker (ninja hap-worker) or choose its path",
                              r.worker));
  if (!fs::is_regular_file(r.worker, ec) || ::access(r.worker.c_str(), X_OK) != 0)
    return failed(fmt::format("worker '{}' is not an executable file; choose the hap-worker executable", r.worker));
  return ok(r.worker);
}

PreflightCheck checkData(const PreflightRequest& r, const LoadedModel& model) {
  if (r.options.data.kind == "synthetic") return ok("synthetic: seeded random batches, no file");
  if (r.options.data.kind != "tokens" && r.options.data.kind != "cifar")
    return failed(fmt::format("data kind '{}' is unknown; use synthetic, tokens or cifar", r.options.data.kind));
  if (r.options.data.path.empty())
    return failed(fmt::format("data kind {} needs a data file (--data-path); choose one", r.options.data.kind));
  std::error_code ec;
  if (!fs::exists(r.options.data.path, ec))
    return failed(fmt::format("{} file '{}' does not exist; choose the data file", r.options.data.kind,
                              r.options.data.path));
  if (!model.problem.empty()) return warning("not checked: " + model.problem);
  DataOptions options;
  options.kind = r.options.data.kind;
  options.path = r.options.data.path;
  options.tokenDtype = r.options.data.tokenDtype;
  // Every rank's source, as the trainer makes it; the whole file is scanned once (rank 0).
  const int ranks = static_cast<int>(plan::worldDevices(r.plan).size());
  const int programRanks = static_cast<int>(r.plan.devices.size());
  std::string described;
  for (int rank = 0; rank < ranks; ++rank) {
    const std::vector<InputPiece> pieces = worldInputPieces(
        r.plan, planInputPieces(r.plan, *model.planned, model.tensors.inputs, rank % programRanks), rank);
    options.checkWholeFile = rank == 0;
    std::unique_ptr<BatchSource> source = makeBatchSource(options, pieces);
    source->batch(0);
    if (rank == 0) described = source->describe();
  }
  return ok(described);
}

PreflightCheck checkResume(const PreflightRequest& r, LoadedModel& model) {
  if (r.options.resumePath.empty()) return ok("none: training starts from the model file's values");
  std::error_code ec;
  if (!fs::exists(r.options.resumePath, ec))
    return failed(fmt::format("checkpoint '{}' does not exist; choose a step-N.pt a previous run wrote",
                              r.options.resumePath));
  OptimizerOptions options;
  options.kind = r.options.optimizer.kind;
  if (!model.problem.empty()) return warning("not checked: " + model.problem);
  // The model's parameters and buffers whole (one rank), loaded as a worker would load them:
  // loadCheckpoint checks every name, shape and the optimizer kind before it changes anything.
  const ir::Graph& g = *model.planned;
  std::vector<LocalParameter> params;
  std::vector<LocalBuffer> buffers;
  int64_t elements = 0;
  for (const bool isBuffer : {false, true})
    for (ir::ValueId v : isBuffer ? g.buffers : g.parameters) {
      auto found = model.tensors.values.find(v);
      if (found == model.tensors.values.end()) continue;  // the model check would have failed
      LocalParameter p;
      p.name = g.value(v).name;
      p.fullShape = g.value(v).shape;
      p.value = found->second.detach();  // loaded into in place: these tensors serve nothing else
      if (isBuffer) {
        buffers.push_back(std::move(p));
      } else {
        elements += p.value.numel();
        p.value.set_requires_grad(true);
        params.push_back(std::move(p));
      }
    }
  Optimizer optimizer(params, options);
  const int64_t iteration = loadCheckpoint(r.options.resumePath, params, optimizer, 0, &buffers);
  return ok(fmt::format("{}: step {} of this model ({} parameters in {} tensors, optimizer {}); the run continues "
                        "with step {}",
                        r.options.resumePath, iteration, elements, params.size(), optimizerKindName(options.kind),
                        iteration + 1));
}

PreflightCheck checkCheckpointDir(const PreflightRequest& r) {
  if (r.options.checkpointDir.empty()) return ok("none: no checkpoints are written");
  std::error_code ec;
  if (fs::exists(r.options.checkpointDir, ec) && !fs::is_directory(r.options.checkpointDir, ec))
    return failed(
        fmt::format("checkpoint folder '{}' is a file, not a folder; choose a folder", r.options.checkpointDir));
  if (std::string problem = writableProblem(r.options.checkpointDir, "checkpoint folder"); !problem.empty())
    return failed(problem);
  if (!fs::exists(r.options.checkpointDir, ec)) return ok(fmt::format("'{}' will be created", r.options.checkpointDir));
  const std::vector<CheckpointInfo> existing = listCheckpoints(r.options.checkpointDir);
  if (!existing.empty())
    return warning(fmt::format("'{}' already holds {} checkpoint{} (step-{}.pt to step-{}.pt); the run replaces those "
                               "of the steps it writes",
                               r.options.checkpointDir, existing.size(), existing.size() == 1 ? "" : "s",
                               existing.front().step, existing.back().step));
  return ok(fmt::format("'{}' is writable", r.options.checkpointDir));
}

PreflightCheck checkExport(const PreflightRequest& r) {
  if (r.options.exportPath.empty()) return ok("none: the trained model is not exported");
  std::error_code ec;
  if (fs::is_directory(r.options.exportPath, ec))
    return failed(fmt::format("export file '{}' is a folder; name the file to write, e.g. '{}'", r.options.exportPath,
                              (fs::path(r.options.exportPath) / "trained.pt").string()));
  if (std::string problem = writableProblem(fs::path(r.options.exportPath).parent_path(), "export file's folder");
      !problem.empty())
    return failed(fmt::format("export file '{}': {}", r.options.exportPath, problem));
  if (fs::exists(r.options.exportPath, ec))
    return warning(fmt::format("'{}' exists and will be replaced", r.options.exportPath));
  return ok(fmt::format("'{}' can be written", r.options.exportPath));
}

}  // namespace

std::vector<PreflightCheck> preflight(const PreflightRequest& request) {
  LoadedModel model;
  std::vector<PreflightCheck> checks;
  checks.push_back(run("Model file", [&] { return checkModel(request, model); }));
  checks.push_back(run("Ranks", [&] { return checkRanks(request); }));
  checks.push_back(run("CPU shares", [&] { return checkShares(request); }));
  checks.push_back(run("Port", [&] { return checkPort(); }));
  checks.push_back(run("Worker", [&] { return checkWorker(request); }));
  checks.push_back(run("Data", [&] { return checkData(request, model); }));
  checks.push_back(run("Resume", [&] { return checkResume(request, model); }));
  checks.push_back(run("Checkpoints", [&] { return checkCheckpointDir(request); }));
  checks.push_back(run("Export", [&] { return checkExport(request); }));
  return checks;
}

bool preflightPassed(const std::vector<PreflightCheck>& checks) {
  for (const PreflightCheck& c : checks)
    if (c.status == PreflightCheck::Status::Failed) return false;
  return true;
}

}  // namespace hap::runtime
