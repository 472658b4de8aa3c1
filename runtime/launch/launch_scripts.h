// Launch scripts for a real cluster (`hap launch --emit`, ../shared/DESIGN.md §5): what an ops team
// copies to its machines and runs, written from a plan's devices. Plain C++ (no LibTorch, no Qt).
//
// Contract:
// - A plan fixes which shard every global rank holds, so the scripts give each process the plan's
//   rank (RANK) themselves; nothing renumbers ranks (torchrun would, by rendezvous order).
// - Every value that comes from the plan or the user (hosts, file names, worker arguments) is
//   quoted with shellQuote, so any byte string survives POSIX sh unchanged.
// - Defaults are overridable at run time through environment variables named in each script's
//   header (HAP_WORKER, HAP_PLAN, HAP_MODEL, MASTER_ADDR, MASTER_PORT, HAP_TIMEOUT_S,
//   GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME, OMP_NUM_THREADS; HAP_REMOTE_DIR and SSH for ssh).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/launch/worker_options.h"

namespace hap::plan {
struct Plan;
}

namespace hap::runtime {

// `text` as one POSIX sh word that the shell reads back unchanged: as it is when it consists only
// of characters sh never treats specially ([A-Za-z0-9_@%+=:,./-]), otherwise in single quotes
// with every ' written as '\''; the empty string is ''.
std::string shellQuote(std::string_view text);

enum class ScriptKind { Torchrun, Slurm, Ssh };

// "torchrun", "slurm", "ssh"; nullopt for anything else.
std::optional<ScriptKind> parseScriptKind(std::string_view name);

// The ranks of one machine.
struct HostRanks {
  std::string machine;     // the plan's machine name
  std::string host;        // address or host name (the machine name when the plan has none)
  std::vector<int> ranks;  // the plan's global ranks there, ascending; LOCAL_RANK = index
};

// The plan's devices grouped by machine, machines in the order of their first rank.
std::vector<HostRanks> hostsOf(const plan::Plan& plan);

struct ScriptSpec {
  ScriptKind kind = ScriptKind::Torchrun;
  std::vector<HostRanks> hosts;  // every rank 0..N-1 exactly once
  std::string planFile;          // the plan's file name inside the folder
  std::string modelFile;         // the model's expected file name inside the folder (HAP_MODEL's
                                 // default, passed as --model); empty: no --model is passed
  std::vector<std::string> workerArgs;  // after PLAN and --model (workerArguments)
  // Non-empty: rank 0 records the whole run into this store file inside the folder on its host
  // (hap-worker --record "$HAP_RECORD"; HAP_RECORD overrides the path); the ssh launcher copies it
  // back into the folder here when the hosts' folder is elsewhere (HAP_REMOTE_DIR).
  std::string recordFile;
  int masterPort = 29500;
  int timeoutSeconds = 300;  // HAP_TIMEOUT_S's default: rendezvous and collectives
  std::string jobName = "hap";
  std::string origin;  // where the plan came from, for comments
};

struct ScriptFile {
  std::string name;  // inside the folder
  std::string text;
  bool executable = false;
};

// The files of spec.kind:
// - Torchrun: run-<machine>.sh per machine (its ranks, started in a loop with torchrun's
//   environment), hostfile ("HOST slots=N"), README.txt.
// - Ssh: the same run-<machine>.sh files and hostfile, plus launch-ssh.sh, which runs each one
//   on its host over ssh, README.txt.
// - Slurm: hap.sbatch (srun --distribution=arbitrary over slurm-hostfile, so SLURM_PROCID is the
//   plan's rank), slurm-task.sh (one rank), slurm-hostfile (one node per rank), README.txt.
// Throws std::invalid_argument when the spec is inconsistent (a bug in the caller).
std::vector<ScriptFile> launchScripts(const ScriptSpec& spec);

// Writes launchScripts(spec) into `dir` (created when missing; scripts mode 755, other files 644)
// and copies the plan file `planPath` there as spec.planFile. Refuses a folder that is not empty
// unless `force` (then files of the same names are replaced, others are left alone). Returns the
// names written, the plan's first. Throws RuntimeError naming the path on failure.
std::vector<std::string> writeLaunchFolder(const ScriptSpec& spec, const std::string& planPath,
                                           const std::string& dir, bool force);

// `hap launch PLAN --emit KIND DIR`, shared by the CLI and the app.
struct EmitRequest {
  ScriptKind kind = ScriptKind::Torchrun;
  std::string dir;
  // Every worker's options (workerArguments in the scripts). Its planPath is not used (the
  // scripts pass the plan's copy in the folder); a modelPath is passed as it is, else the scripts
  // pass the plan's model file in the folder.
  WorkerOptions options;
  int masterPort = 29500;
  bool force = false;  // write into a folder that is not empty
  std::string recordFile;  // ScriptSpec::recordFile (`--record [NAME]`); empty: no recording
};
// Writes the launch folder of `plan`, read from the plan file `planPath` (copied into the folder):
// the scripts of spec.kind for the plan's world devices (rank 0 recording into recordFile when set) (plan::worldDevices), passing the model's
// file name as --model unless the worker options name a model. Returns the names written, the
// plan's first. Throws hap::Error for a master port outside 1..65535 and RuntimeError (naming
// the file) for a plan without devices or a folder that is not empty without `force`.
std::vector<std::string> emitLaunchFolder(const plan::Plan& plan, const std::string& planPath,
                                          const EmitRequest& request);

}  // namespace hap::runtime
