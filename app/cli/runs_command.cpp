#include "app/cli/runs_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "db/run_figures.h"
#include "db/run_import.h"
#include "db/store.h"
#include "engine/base/error.h"
#include "engine/ir/summary.h"

namespace hap::cli {
namespace {

using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct RunsArgs {
  std::string db;
  bool json = false, csv = false;
  int64_t id = 0;  // `show`
  std::vector<std::string> files;  // `import`
};

std::string ms(double seconds) { return std::isfinite(seconds) ? fmt::format("{:.3f} ms", seconds * 1e3) : "-"; }
std::string number(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "-"; }
std::string bytes(double b) { return std::isfinite(b) ? ir::formatBytes(static_cast<int64_t>(b)) : "-"; }
std::string fileName(const std::string& path) {
  return path.empty() ? "-" : std::filesystem::path(path).filename().string();
}
// NaN (not measured) as JSON null.
json jnum(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}
std::string csvNumber(double v) { return std::isfinite(v) ? fmt::format("{:.9g}", v) : ""; }

// Opens the store for reading; a missing store is an error (nothing has been recorded there). A
// writable store is opened read-write, which marks runs whose recording process died as aborted.
db::Store openStore(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw db::StoreError(fmt::format("{}: no profile store there (runs are recorded by `hap launch --db`); pass the "
                                     "store with --db or set HAP_DB",
                                     path));
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  const bool writable = access(path.c_str(), W_OK) == 0 && access(folder.empty() ? "." : folder.c_str(), W_OK) == 0;
  return db::Store(path, writable ? db::Store::Mode::ReadWrite : db::Store::Mode::ReadOnly);
}

int runList(const RunsArgs& a) {
  const db::Store store = openStore(a.db);
  struct Row {
    db::RunRecord run;
    std::optional<db::PlanRecord> plan;
    db::RunFigures figures;
  };
  std::vector<Row> rows;
  for (db::RunRecord& r : store.runs()) {
    Row row{r, r.planId != 0 ? store.plan(r.planId) : std::nullopt, db::RunFigures::of(store.steps(r.id))};
    rows.push_back(std::move(row));
  }
  auto strategy = [](const Row& r) { return r.plan ? r.plan->strategy : std::string(); };
  auto model = [](const Row& r) { return r.plan ? fileName(r.plan->modelPath) : std::string(); };
  auto predicted = [](const Row& r) { return r.plan ? r.plan->predictedSeconds : kNaN; };

  if (a.json) {
    json out = json::array();
    for (const Row& r : rows)
      out.push_back({{"id", r.run.id},
                     {"status", std::string(db::runStatusName(r.run.status))},
                     {"label", r.run.label},
                     {"started_at", r.run.startedAt},
                     {"ended_at", r.run.endedAt.empty() ? json(nullptr) : json(r.run.endedAt)},
                     {"ranks", r.run.ranks},
                     {"plan_id", r.run.planId != 0 ? json(r.run.planId) : json(nullptr)},
                     {"strategy", r.plan ? json(strategy(r)) : json(nullptr)},
                     {"model", r.plan ? json(model(r)) : json(nullptr)},
                     {"steps", r.figures.steps},
                     {"mean_step_seconds", jnum(r.figures.meanStepSeconds)},
                     {"predicted_step_seconds", jnum(predicted(r))},
                     {"final_loss", jnum(r.figures.finalLoss)},
                     {"exit_reason", r.run.exitReason}});
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (a.csv) {
    std::cout << "id,status,started_at,ended_at,ranks,strategy,model,steps,mean_step_seconds,predicted_step_seconds,"
                 "final_loss,label\n";
    for (const Row& r : rows)
      std::cout << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", r.run.id, db::runStatusName(r.run.status),
                               r.run.startedAt, r.run.endedAt, r.run.ranks, csvField(strategy(r)), csvField(model(r)),
                               r.figures.steps, csvNumber(r.figures.meanStepSeconds), csvNumber(predicted(r)),
                               csvNumber(r.figures.finalLoss), csvField(r.run.label));
    return 0;
  }
  if (rows.empty()) {
    std::cout << fmt::format("{}: no runs recorded.\n", a.db);
    return 0;
  }
  std::cout << fmt::format("{:>5}  {:<9}  {:<20}  {:>5}  {:<8}  {:<20}  {:>6}  {:>12}  {:>12}  {:>10}\n", "id",
                           "status", "started (UTC)", "ranks", "strategy", "model", "steps", "step (r0)", "predicted",
                           "final loss");
  for (const Row& r : rows)
    std::cout << fmt::format("{:>5}  {:<9}  {:<20}  {:>5}  {:<8}  {:<20}  {:>6}  {:>12}  {:>12}  {:>10}\n", r.run.id,
                             db::runStatusName(r.run.status), r.run.startedAt, r.run.ranks,
                             r.plan ? strategy(r) : "-", r.plan ? model(r) : "-", r.figures.steps,
                             ms(r.figures.meanStepSeconds), ms(predicted(r)), number(r.figures.finalLoss));
  std::cout << "\nstep (r0): rank 0's mean measured step time over the steps after warm-up; predicted: the plan's.\n";
  return 0;
}

int runShow(const RunsArgs& a) {
  const db::Store store = openStore(a.db);
  const std::optional<db::RunRecord> found = store.run(a.id);
  if (!found)
    throw db::StoreError(fmt::format("{}: no run {} in the store; `hap runs --db {}` lists them", a.db, a.id, a.db));
  const db::RunRecord& r = *found;
  const std::optional<db::PlanRecord> plan = r.planId != 0 ? store.plan(r.planId) : std::nullopt;
  const std::vector<db::StepRecord> steps = store.steps(r.id);
  const std::vector<db::StageRecord> stages = store.stages(r.id);
  const std::vector<db::RankMeans> means = db::rankMeans(steps);
  int ranks = r.ranks;
  for (const db::StepRecord& s : steps) ranks = std::max(ranks, s.rank + 1);

  // One row per step: its warm-up flag, rank 0's loss (every rank reports the global one) and
  // every rank's step time.
  struct StepRow {
    int64_t step = 0;
    bool warmup = false;
    double loss = kNaN;
    std::vector<double> seconds;
  };
  std::vector<StepRow> table;
  for (const db::StepRecord& s : steps) {
    if (table.empty() || table.back().step != s.step)
      table.push_back({s.step, s.warmup, s.loss, std::vector<double>(static_cast<size_t>(ranks), kNaN)});
    StepRow& row = table.back();
    row.warmup = row.warmup || s.warmup;
    if (s.rank == 0 || std::isnan(row.loss)) row.loss = s.loss;
    if (s.rank >= 0) row.seconds[static_cast<size_t>(s.rank)] = s.seconds;
  }

  if (a.csv) {
    std::cout << "step,rank,warmup,seconds,compute_seconds,communication_seconds,loss,peak_memory_bytes,cpu_seconds\n";
    for (const db::StepRecord& s : steps)
      std::cout << fmt::format("{},{},{},{},{},{},{},{},{}\n", s.step, s.rank, s.warmup ? 1 : 0, csvNumber(s.seconds),
                               csvNumber(s.computeSeconds), csvNumber(s.communicationSeconds), csvNumber(s.loss),
                               csvNumber(s.peakMemoryBytes), csvNumber(s.cpuSeconds));
    return 0;
  }
  const json settings = json::parse(r.settingsJson, nullptr, false);
  if (a.json) {
    json run = {{"id", r.id},
                {"status", std::string(db::runStatusName(r.status))},
                {"label", r.label},
                {"settings", settings.is_discarded() ? json(r.settingsJson) : settings},
                {"ranks", r.ranks},
                {"cpu_shares", r.cpuShares},
                {"host", r.host},
                {"pid", r.pid},
                {"started_at", r.startedAt},
                {"ended_at", r.endedAt.empty() ? json(nullptr) : json(r.endedAt)},
                {"exit_reason", r.exitReason},
                {"plan_id", r.planId != 0 ? json(r.planId) : json(nullptr)}};
    json planJson = nullptr;
    if (plan)
      planJson = {{"id", plan->id},
                  {"strategy", plan->strategy},
                  {"model_path", plan->modelPath},
                  {"model_sha256", plan->modelSha256},
                  {"predicted_step_seconds", jnum(plan->predictedSeconds)},
                  {"predicted_memory_bytes", plan->predictedMemoryBytes},
                  {"predicted_compute_seconds", plan->predictedComputeSeconds}};
    json stepRows = json::array();
    for (const StepRow& s : table) {
      json seconds = json::array();
      for (double v : s.seconds) seconds.push_back(jnum(v));
      stepRows.push_back({{"step", s.step}, {"warmup", s.warmup}, {"loss", jnum(s.loss)}, {"seconds", seconds}});
    }
    json rankRows = json::array();
    for (const db::RankMeans& m : means)
      rankRows.push_back({{"rank", m.rank},
                          {"steps", m.steps},
                          {"mean_step_seconds", jnum(m.stepSeconds)},
                          {"mean_compute_seconds", jnum(m.computeSeconds)},
                          {"mean_communication_seconds", jnum(m.communicationSeconds)},
                          {"peak_memory_bytes", jnum(m.peakMemoryBytes)}});
    json stageRows = json::array();
    for (const db::StageRecord& s : stages)
      stageRows.push_back({{"rank", s.rank},
                           {"stage", s.stage},
                           {"compute_seconds", jnum(s.computeSeconds)},
                           {"communication_seconds", jnum(s.communicationSeconds)}});
    std::cout << json{{"run", run}, {"plan", planJson}, {"steps", stepRows}, {"ranks", rankRows}, {"stages", stageRows}}
                     .dump(2)
              << "\n";
    return 0;
  }

  std::cout << fmt::format("run {}: {}{}\n", r.id, db::runStatusName(r.status),
                           r.exitReason.empty() ? "" : " (" + r.exitReason + ")");
  if (!r.label.empty()) std::cout << fmt::format("  label:    {}\n", r.label);
  if (plan)
    std::cout << fmt::format("  plan:     {} ({}, {}, predicted {} per step)\n", plan->id, plan->strategy,
                             plan->modelPath, ms(plan->predictedSeconds));
  std::cout << fmt::format("  started:  {}{}\n", r.startedAt, r.endedAt.empty() ? "" : ", ended " + r.endedAt);
  std::cout << fmt::format("  recorded: on {} by pid {}\n", r.host, r.pid);
  std::string shares;
  for (double s : r.cpuShares) shares += (shares.empty() ? "" : ", ") + fmt::format("{:g}", s);
  std::cout << fmt::format("  ranks:    {}{}\n", r.ranks, shares.empty() ? "" : ", cpu shares " + shares);
  if (!r.settingsJson.empty())
    std::cout << fmt::format("  settings: {}\n", settings.is_discarded() ? r.settingsJson : settings.dump());

  if (table.empty()) {
    std::cout << "\nNo steps recorded.\n";
    return 0;
  }
  std::cout << fmt::format("\n{:>6}  {:>12}", "step", "loss");
  for (int k = 0; k < ranks; ++k) std::cout << fmt::format("  {:>12}", fmt::format("rank {}", k));
  std::cout << "\n";
  for (const StepRow& s : table) {
    std::cout << fmt::format("{:>6}  {:>12}", fmt::format("{}{}", s.warmup ? "w " : "", s.step), number(s.loss));
    for (double v : s.seconds) std::cout << fmt::format("  {:>12}", ms(v));
    std::cout << "\n";
  }
  std::cout << fmt::format("\n{:>6}  {:>6}  {:>12}  {:>12}  {:>14}  {:>12}\n", "rank", "steps", "step", "compute",
                           "communication", "peak memory");
  for (const db::RankMeans& m : means)
    std::cout << fmt::format("{:>6}  {:>6}  {:>12}  {:>12}  {:>14}  {:>12}\n", m.rank, m.steps, ms(m.stepSeconds),
                             ms(m.computeSeconds), ms(m.communicationSeconds), bytes(m.peakMemoryBytes));
  std::cout << "\nw: a warm-up step. Per-rank figures are means over the steps after warm-up; peak memory is the "
               "largest of any step.\n";
  return 0;
}

// `hap runs import FILE...`: the finished runs of other store files (e.g. rank 0's --record file of
// an emitted launch) added to the store, each once (db/run_import.h).
int runImport(const RunsArgs& a) {
  db::Store store(a.db);
  for (const std::string& file : a.files) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
      throw db::StoreError(fmt::format("{}: no such store file (hap-worker --record writes one; hap launch --emit "
                                       "KIND DIR --record has rank 0 write DIR/run.db on its host)",
                                       file));
    const std::vector<db::ImportedRun> imported = db::importRuns(store, file);
    int added = 0;
    for (const db::ImportedRun& r : imported) {
      added += r.added ? 1 : 0;
      std::cout << fmt::format("{}: run {} {} run {} of {}\n", file, r.sourceId, r.added ? "imported as" : "is already",
                               r.id, a.db);
    }
    if (imported.empty()) std::cout << fmt::format("{}: no finished run to import\n", file);
    else
      std::cout << fmt::format("{}: {} run{} imported, {} already there\n", file, added, added == 1 ? "" : "s",
                               imported.size() - static_cast<size_t>(added));
  }
  return 0;
}

}  // namespace

void addRunsCommand(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<RunsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "runs",
      "List the training runs recorded in the profile store (status, plan, steps, measured and predicted step "
      "time, final loss), or show one with `hap runs show ID`.");
  args->db = db::defaultPath();
  cmd->add_option("--db", args->db,
                  "The profile store (SQLite); default $HAP_DB, else $XDG_DATA_HOME/hap/profiles.db, else "
                  "~/.local/share/hap/profiles.db")
      ->type_name("FILE")
      ->capture_default_str();
  CLI::Option* json = cmd->add_flag("--json", args->json, "Print JSON instead of a table");
  cmd->add_flag("--csv", args->csv, "Print CSV instead of a table (`show`: one row per step and rank)")->excludes(json);
  CLI::App* show = cmd->add_subcommand(
      "show", "Show one run: its settings, every step's loss and per-rank step time, and per-rank means");
  show->add_option("ID", args->id, "The run's id (the first column of `hap runs`)")->required();
  show->fallthrough();  // `hap runs show 3 --json` as well as `hap runs --json show 3`
  CLI::App* import = cmd->add_subcommand(
      "import",
      "Add the finished runs of other profile store files to the store (each once), e.g. the file rank 0 "
      "recorded in an emitted launch (hap launch --emit KIND DIR --record); hap calibrate then fits them");
  import->add_option("FILE", args->files, "Store files to read (never changed)")->required()->type_name("FILE");
  import->fallthrough();
  cmd->callback([args, show, import, &exitCode] {
    exitCode = show->parsed() ? runShow(*args) : import->parsed() ? runImport(*args) : runList(*args);
  });
}

}  // namespace hap::cli
