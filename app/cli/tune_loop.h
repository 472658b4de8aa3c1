// The closed loop from measurement to plan (`hap tune`, docs/cli.md; issue 30 item 3): profile the
// cluster's device types when the store has no figures for them, plan, run the plan and the
// baselines that matter for a few steps on this machine (recorded in the profile store), calibrate
// on every recorded run of the cluster, re-plan under the calibrated profile, and repeat until the
// best measured step stops improving. Plain C++ (no Qt): `hap tune` is a front end of runTune, and
// an app can drive it through TuneListener.
//
// Contract:
// - Round k plans HAP's program, DP-CP and the baseline predicted best under the profile version
//   current at its start, writes each plan to TuneRequest::workDir, and runs each plan whose
//   program and lengths (plan::Plan::steps' variants and forms, the replication) no earlier round
//   ran; a plan already run is not run again: its earlier measurement is reused (TuneRun::reused).
//   Round 1 also runs HAP's plan priced as the cluster file is ("hap-given": its own profile, else
//   its inventory) where that is another program: what `hap plan` gives without tuning, so the
//   loop never returns a plan measured slower than it.
// - A run is `hap launch --local --db`'s (runtime::runLocalLaunch, recorded in the store); its
//   measured step is, per measured step, the slowest rank's wall time, averaged (the calibration's
//   figure), with the standard deviation over those steps as its spread.
// - The calibration fits cost::fit to every succeeded run of the store whose plan was made for
//   this cluster (by name) under a version of the tuned profile, each run's stage prices first
//   re-expressed under the version the loop started from (the versions differ only by the
//   calibration's scales: compute scale per type, the cluster's collective slowdown, the gradient
//   exposure), and saves that version composed with the fit as the next version.
// - The loop stops after round k when the best measured step of rounds 1..k is not more than
//   `improvement` below that of rounds 1..k-1, when a round ran no new plan, when every plan so far
//   was one program (nothing to compare or calibrate), or at `rounds`.
// - The result's chosen run is the one with the lowest measured step among everything run, so it is
//   never measured slower than a baseline the loop ran; its plan file is copied to `output`.
// - Every failure a user can cause is a TuneError (a hap::Error) saying what to do: a model or
//   cluster that cannot be read (their own typed errors pass through), a rank that fails, a
//   calibration with too few runs. Interrupted (request.interrupt set) is a TuneError too.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/error.h"
#include "engine/cost/calibration.h"
#include "engine/cost/cluster.h"
#include "engine/cost/profile.h"
#include "engine/plan/plan_request.h"

namespace hap::tune {

class TuneError : public Error {
 public:
  using Error::Error;
};

struct TuneRequest {
  std::string modelPath;
  std::vector<std::string> inputs;  // --input NAME=DIMx...: forward argument shapes
  std::string clusterPath;
  std::string storePath;  // "" = db::defaultPath()
  // The tuned profile: "" = the cluster's `profile:` name, else the cluster's name.
  std::string profileName;
  std::string cpuShares;  // --cpu-share as hap launch takes it ("" = all 1)
  std::string slowdowns;  // --slowdown as hap launch takes it ("" = all 1)
  int cpuPeriodMs = 20;
  int64_t steps = 6;          // measured steps per run (hap-worker --steps)
  int64_t warmup = 2;         // warm-up steps per run (hap-worker --warmup)
  int rounds = 3;             // at most
  double improvement = 0.02;  // a round must improve the best measured step by more than this
  std::vector<std::string> workerArgs;  // more hap-worker arguments (hap launch's after --)
  std::string worker;                   // hap-worker; "" = runtime::resolveWorker("")
  std::string hap;                      // the hap executable that profiles; "" = this build's
  std::string workDir;                  // where the rounds' plan files go (must exist)
  std::string output;                   // the chosen plan is copied here ("" = not written)
  double runTimeoutSeconds = 600;       // per launch
  // A real cluster (hap tune --emit KIND --run-with CMD): every plan runs through the launch
  // folder `hap launch PLAN --emit KIND DIR --record run.db` writes (DIR: workDir/<plan>-KIND),
  // started by the sh command `runWith` with every "{dir}" replaced by DIR (absolute, quoted), which
  // must return once the run has ended, exit 0 when it succeeded, and leave rank 0's record at
  // DIR/run.db (launch-ssh.sh copies it back itself; with torchrun scripts on several hosts the
  // command copies it). The record is imported into the store (db/run_import.h) and measured as a
  // local run. "" = local runs (runtime::runLocalLaunch). No --cpu-share or --slowdown then, and
  // the store must hold a profile of every device type already (profiled on their machines).
  std::string emitKind;
  std::string runWith;
  int masterPort = 29500;  // written into the scripts (MASTER_PORT in runWith's environment wins)
  plan::PlanRequest plan;  // HAP's plan options (baseline/baselines are set by the loop)
  const std::atomic<int>* interrupt = nullptr;  // a signal number stops the loop
};

// One plan of one round, and its measurement.
struct TuneRun {
  int round = 0;
  // "hap", "dp-cp", "dp-ev", "fsdp", "megatron"; "hap-given": round 1's HAP plan priced as the
  // cluster file is (its own profile, else its inventory), where its program differs from "hap"
  std::string strategy;
  std::string planPath;
  std::string profile;          // "NAME@N" it was priced under, "inventory" without a profile
  double predictedSeconds = 0;  // its prediction under that profile
  double measuredSeconds = 0;   // mean over measured steps of the slowest rank
  double spreadSeconds = 0;     // standard deviation over those steps
  int measuredSteps = 0;
  int64_t runId = 0;   // the recorded run measured
  int reused = 0;      // > 0: the same program ran in that round; its measurement is reused
  std::string sameAs;  // with reused: the strategy that ran it
  bool baseline() const { return strategy != "hap" && strategy != "hap-given"; }
  double error() const { return measuredSeconds > 0 ? predictedSeconds / measuredSeconds - 1 : 0; }
};

// A calibration between rounds.
struct TuneCalibration {
  std::string saved;  // "NAME@N"
  int runs = 0, plans = 0;
  double mapeBefore = 0,
         mapeAfter = 0;  // step-time MAPE of the fitted runs under the base, the fit
};

struct TuneRound {
  int round = 0;
  std::string profile;  // "NAME@N" the round planned under
  std::vector<TuneRun> runs;
  double bestSeconds = 0;       // the lowest measured step of rounds 1..round
  TuneCalibration calibration;  // after the round; saved empty when none followed
  double mape() const;          // mean |error()| of the round's runs
};

struct TuneResult {
  std::string profiled;  // "" or what the loop profiled first ("NAME@N")
  std::vector<TuneRound> rounds;
  TuneRun chosen;
  TuneRun bestBaseline;  // the fastest baseline measured (strategy "" when none ran)
  std::string stopReason;
  double seconds = 0;  // wall time of the loop
};

// What the loop reports while it runs (all on the calling thread). Every method has an empty
// default.
class TuneListener {
 public:
  virtual ~TuneListener() = default;
  virtual void onMessage(std::string_view /*line*/) {}  // progress, in words
  virtual void onOutput(int /*rank*/, bool /*error*/, std::string_view /*line*/) {
  }  // a worker's line
  virtual void onRoundStarted(int /*round*/, const std::string& /*profile*/) {}
  virtual void onRunFinished(const TuneRun& /*run*/) {}
  virtual void onCalibrated(int /*round*/, const TuneCalibration& /*c*/) {}
  virtual void onRoundFinished(const TuneRound& /*round*/) {}
};

TuneResult runTune(const TuneRequest& request, TuneListener* listener = nullptr);

// A plan's priced stages as the calibration sees them (db::calibrateStore's preparation: per stage
// the communication, of which the replicated parameters' gradient all-reduces, and the slowest
// device of each type; per rank the predicted memory), re-expressed from the profile version `from`
// the plan was priced under to version `to` of the same profile: the two may differ only by the
// calibration's terms (compute scale per type, the cluster's collective slowdown, the gradient
// exposure, the memory terms), which multiply (or offset) the priced figures as the fit assumes.
// No measurement is filled in. With from == to, the stages' sum is the plan's prediction.
cost::RunObservation pricedObservation(const plan::Plan& p, const cost::Profile& from,
                                       const cost::Profile& to, const cost::Cluster& cluster);

// The identity of a plan's program: same key ⇔ same program and shard lengths (steps' kinds, nodes,
// variants, instructions, methods and forms; the replication), whatever it was priced at.
std::string programKey(const plan::Plan& p);

}  // namespace hap::tune
