// The profile store (../shared/DESIGN.md §2): one SQLite file holding measured device and link
// profiles, cluster inventories, plans, and training runs with every rank's per-step measurements,
// so that `hap calibrate` can fit the cost model to what was measured and the app can browse it.
//
// Contract:
// - Opening creates the file (and its folder) when missing, turns on WAL, foreign keys and a busy
//   timeout, and migrates an older schema forward (PRAGMA user_version; migrations in code, one
//   per version, never edited once released). A file that is not a SQLite database, is corrupt,
//   has a newer schema than this program, belongs to another application, or cannot be written
//   raises StoreError with a one-line message naming the file and what to do.
// - Every write is one transaction: a reader never sees half of a record. Several processes (the
//   ranks of a run, the launcher, the app) may write at once; a writer waits for the lock up to
//   the busy timeout.
// - A run is `running` from beginRun until finishRun. A run whose recording process died
//   (SIGKILL, power loss) is found by recoverAbandonedRuns and marked `aborted`; no query
//   returns it as running after that. Its steps written so far stay, each step whole.
// - Values from users never reach SQL text: every statement is a constant with bound parameters.
//
// A Store is used by one thread at a time (SQLite's connection rules); open one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/cost/profile.h"
#include "engine/plan/stage_measurement.h"

namespace hap::db {

class StoreError : public Error {
 public:
  using Error::Error;
};

// Where the store lives unless told otherwise: $HAP_DB when set and non-empty, else
// $XDG_DATA_HOME/hap/profiles.db, else ~/.local/share/hap/profiles.db.
std::string defaultPath();

// A cluster inventory as stored: its text and the SHA-256 of that text (the key).
struct ClusterRecord {
  int64_t id = 0;
  std::string name;  // the inventory's `name`
  std::string sha256;
  std::string yaml;
};

// A plan as stored: the plan file's JSON and the figures `hap runs` and calibration read often.
struct PlanRecord {
  int64_t id = 0;
  std::string sha256;       // of `json`; plans are stored once
  std::string modelSha256;  // Plan::model.sha256
  std::string modelPath;
  std::string strategy;     // "hap", "dp-ev", "dp-cp", "fsdp", "megatron"
  int64_t clusterId = 0;    // ClusterRecord::id
  double predictedSeconds = 0;                // per iteration
  std::vector<double> predictedMemoryBytes;   // per rank
  std::vector<double> predictedComputeSeconds;  // per rank, per iteration
  std::string json;         // the whole plan file
};

enum class RunStatus { Running, Succeeded, Failed, Stopped, Aborted };
std::string_view runStatusName(RunStatus s);  // "running", "succeeded", "failed", "stopped", "aborted"
std::optional<RunStatus> parseRunStatus(std::string_view name);

struct RunRecord {
  int64_t id = 0;
  int64_t planId = 0;
  std::string label;            // free text ("bench-hetero HAP round 2")
  std::string settingsJson;     // launch settings: ranks, cpu shares, steps, warm-up, data, optimizer...
  int ranks = 0;
  std::vector<double> cpuShares;  // per rank; empty: not throttled
  std::string host;             // where the recording process ran
  int64_t pid = 0;              // the recording process (recoverAbandonedRuns)
  std::string startedAt, endedAt;  // ISO 8601 UTC; endedAt empty while running
  RunStatus status = RunStatus::Running;
  std::string exitReason;       // "", or why it did not succeed ("rank 2: exit code 1: ...")
};

// One rank's measurements of one optimizer step.
struct StepRecord {
  int rank = 0;
  int64_t step = 0;           // 1-based, as the worker prints it
  bool warmup = false;
  double seconds = 0;         // wall time of the step
  double computeSeconds = 0;  // the executor's compute spans in the step
  double communicationSeconds = 0;  // its collectives' spans
  double loss = 0;            // the global loss (every rank reports the same)
  double peakMemoryBytes = 0; // the rank's peak memory so far (RSS high-water on CPU, CUDA peak on GPU)
  double cpuSeconds = 0;      // process CPU time in the step
};

// One stage of the measured trace of one rank (the split the simulator predicts per stage; the
// type is the engine's, which builds the measured timeline from these: plan::measuredTimeline).
using StageRecord = plan::StageMeasurement;

// A stored profile's identity (Profile without its figures).
struct ProfileInfo {
  std::string name;
  int version = 0;
  std::string host, createdAt, note;
  int devices = 0, collectives = 0;
};

class Store {
 public:
  // The schema version this program writes; opening migrates any older one up to it.
  static constexpr int kSchemaVersion = 1;

  enum class Mode { ReadWrite, ReadOnly };
  // Opens (ReadWrite: creates) the store at `path`. Throws StoreError (contract above).
  explicit Store(const std::string& path, Mode mode = Mode::ReadWrite);
  ~Store();
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;

  const std::string& path() const;

  // Profiles. saveProfile stores `p` as the next version of p.name and returns that version.
  int saveProfile(const cost::Profile& p);
  // The given version, or the latest when version = 0; nullopt when there is none.
  std::optional<cost::Profile> loadProfile(const std::string& name, int version = 0) const;
  std::vector<ProfileInfo> profiles() const;  // every version, newest first

  // Clusters and plans are stored once by content hash; saving again returns the same id.
  int64_t saveCluster(const std::string& name, const std::string& yaml);
  std::optional<ClusterRecord> cluster(int64_t id) const;
  int64_t savePlan(const PlanRecord& p);
  std::optional<PlanRecord> plan(int64_t id) const;

  // Runs.
  int64_t beginRun(const RunRecord& r);  // status Running; fills nothing in `r`
  void recordSteps(int64_t run, const std::vector<StepRecord>& steps);    // one transaction
  void recordStages(int64_t run, const std::vector<StageRecord>& stages); // one transaction
  // endedAt: ISO 8601 UTC; empty: now (an imported run keeps its own, run_import.h).
  void finishRun(int64_t run, RunStatus status, const std::string& exitReason = {},
                 const std::string& endedAt = {});
  // Marks `aborted` every run still `running` whose recording process is gone (same host, pid
  // not alive). Returns how many. Runs of other hosts are left alone.
  int recoverAbandonedRuns();
  std::optional<RunRecord> run(int64_t id) const;
  std::vector<RunRecord> runs() const;  // newest first
  std::vector<StepRecord> steps(int64_t run) const;   // by step, then rank
  // Only what came since a reader last looked (the app follows a running run this way): rank r's
  // steps after afterStep[r] (every step of a rank past the vector's end), by rank, then step.
  // Each rank records its steps in order, so nothing is missed between two calls.
  std::vector<StepRecord> steps(int64_t run, const std::vector<int64_t>& afterStep, int ranks) const;
  std::vector<StageRecord> stages(int64_t run) const; // by rank, then stage

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hap::db
