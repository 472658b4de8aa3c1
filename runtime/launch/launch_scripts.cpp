#include "runtime/launch/launch_scripts.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "engine/plan/plan.h"
#include "runtime/core/runtime_error.h"

namespace hap::runtime {
namespace {

namespace fs = std::filesystem;

bool plainWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
}

// A file-name-safe form of a machine name: [A-Za-z0-9._-], anything else as '_'.
std::string fileSafe(std::string_view name) {
  std::string out;
  for (char c : name) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '-' || c == '_';
    out += safe ? c : '_';
  }
  if (out.empty() || out[0] == '.' || out[0] == '-') out = "m" + out;
  return out;
}

int worldSize(const ScriptSpec& spec) {
  int n = 0;
  for (const HostRanks& h : spec.hosts) n += static_cast<int>(h.ranks.size());
  return n;
}

// The plan's machines and ranks come from a file: they are checked like user input.
void check(const ScriptSpec& spec) {
  if (spec.hosts.empty()) throw RuntimeError(fmt::format("{}: the plan has no device", spec.origin));
  if (spec.planFile.empty()) throw std::invalid_argument("launchScripts: no plan file name");
  const int n = worldSize(spec);
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (const HostRanks& h : spec.hosts) {
    if (h.ranks.empty()) throw std::invalid_argument("launchScripts: machine " + h.machine + " has no rank");
    for (int r : h.ranks) {
      if (r < 0 || r >= n || seen[static_cast<size_t>(r)])
        throw RuntimeError(fmt::format("{}: rank {} (machine {}) is out of range or repeated: devices must be "
                                       "numbered 0..{} once each; re-plan with hap plan",
                                       spec.origin, r, h.machine, n - 1));
      seen[static_cast<size_t>(r)] = true;
    }
    // Hostfiles, --nodelist and ssh take host names: no blanks, quotes or control characters.
    const bool bad = h.host.empty() || std::any_of(h.host.begin(), h.host.end(), [](char c) {
                       return static_cast<unsigned char>(c) <= ' ' || c == '\'' || c == '"' || c == ',' || c == '\\';
                     });
    if (bad)
      throw RuntimeError(fmt::format("{}: machine {} has host '{}', which is not a host name or address; fix "
                                     "machines[].host in the cluster file and re-plan",
                                     spec.origin, h.machine, h.host));
  }
}

// run-<machine>.sh for every machine, unique.
std::vector<std::string> runScriptNames(const ScriptSpec& spec) {
  std::vector<std::string> names;
  std::set<std::string> taken;
  for (size_t i = 0; i < spec.hosts.size(); ++i) {
    std::string name = "run-" + fileSafe(spec.hosts[i].machine) + ".sh";
    if (!taken.insert(name).second) {
      name = fmt::format("run-{}-{}.sh", fileSafe(spec.hosts[i].machine), i);
      taken.insert(name);
    }
    names.push_back(std::move(name));
  }
  return names;
}

// The worker's command line after the executable, as sh words: "$HAP_PLAN" --model "$HAP_MODEL"
// and the user's arguments, quoted.
std::string workerWords(const ScriptSpec& spec) {
  std::string words = "\"$HAP_PLAN\"";
  if (!spec.modelFile.empty()) words += " --model \"$HAP_MODEL\"";
  for (const std::string& a : spec.workerArgs) words += " " + shellQuote(a);
  if (!spec.recordFile.empty()) words += " --record \"$HAP_RECORD\"";
  return words;
}

// The lines that set HAP_DIR (from `dirExpression`), HAP_WORKER, HAP_PLAN, HAP_MODEL and the
// rendezvous variables, each overridable from the environment, and check the files exist.
std::string commonSettings(const ScriptSpec& spec, const std::string& scriptName, const std::string& dirExpression,
                           const std::string& masterAddr) {
  std::string s;
  s += "HAP_DIR=" + dirExpression + " || exit 1\n";
  s += "if [ -z \"${HAP_WORKER:-}\" ]; then\n";
  s += "  HAP_WORKER=$HAP_DIR/hap-worker\n";
  s += "  if [ ! -x \"$HAP_WORKER\" ] && command -v hap-worker >/dev/null 2>&1; then\n";
  s += "    HAP_WORKER=$(command -v hap-worker)\n";
  s += "  fi\n";
  s += "fi\n";
  s += "case $HAP_WORKER in */*) ;; *) HAP_WORKER=$(command -v \"$HAP_WORKER\" || echo \"$HAP_WORKER\") ;; esac\n";
  s += "HAP_PLAN=${HAP_PLAN:-$HAP_DIR/" + shellQuote(spec.planFile) + "}\n";
  if (!spec.modelFile.empty()) s += "HAP_MODEL=${HAP_MODEL:-$HAP_DIR/" + shellQuote(spec.modelFile) + "}\n";
  if (!spec.recordFile.empty()) s += "HAP_RECORD=${HAP_RECORD:-$HAP_DIR/" + shellQuote(spec.recordFile) + "}\n";
  s += "MASTER_ADDR=${MASTER_ADDR:-" + masterAddr + "}\n";
  s += fmt::format("MASTER_PORT=${{MASTER_PORT:-{}}}\n", spec.masterPort);
  s += fmt::format("HAP_TIMEOUT_S=${{HAP_TIMEOUT_S:-{}}}\n", spec.timeoutSeconds);
  s += "export MASTER_ADDR MASTER_PORT HAP_TIMEOUT_S\n";
  s += "for v in GLOO_SOCKET_IFNAME NCCL_SOCKET_IFNAME OMP_NUM_THREADS; do\n";
  s += "  if eval \"[ -n \\\"\\${$v:-}\\\" ]\"; then export \"$v\"; fi\n";
  s += "done\n";
  s += "if [ ! -x \"$HAP_WORKER\" ]; then\n";
  s += "  echo \"" + scriptName +
       ": hap-worker not found at $HAP_WORKER: copy it next to this script or set HAP_WORKER\" >&2\n";
  s += "  exit 1\n";
  s += "fi\n";
  s += std::string("for f in \"$HAP_PLAN\"") + (spec.modelFile.empty() ? "" : " \"$HAP_MODEL\"") + "; do\n";
  s += "  if [ ! -f \"$f\" ]; then echo \"" + scriptName + ": $f: no such file (see README.txt)\" >&2; exit 1; fi\n";
  s += "done\n";
  return s;
}

std::string overridableList(const ScriptSpec& spec) {
  std::string s;
  s += "# Environment variables that override the defaults below:\n";
  s += "#   HAP_WORKER     the hap-worker executable (default: next to this script, else on PATH)\n";
  s += "#   HAP_PLAN       the plan file\n";
  if (!spec.modelFile.empty()) s += "#   HAP_MODEL      the model file (TorchScript) the plan was made for\n";
  if (!spec.recordFile.empty())
    s += "#   HAP_RECORD     the store file rank 0 records the run into (hap runs import reads it)\n";
  s += "#   MASTER_ADDR    rank 0's address; MASTER_PORT its rendezvous port (free on that host)\n";
  s += "#   HAP_TIMEOUT_S  seconds the rendezvous and every collective wait for the other ranks\n";
  s += "#   GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME  the network interface between hosts (ib0, eth0)\n";
  s += "#   OMP_NUM_THREADS  threads per rank on CPU ranks\n";
  return s;
}

ScriptFile runScript(const ScriptSpec& spec, size_t hostIndex, const std::string& name, const char* kindName) {
  const HostRanks& h = spec.hosts[hostIndex];
  const int n = worldSize(spec);
  std::string ranks;
  for (int r : h.ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  std::string s = "#!/bin/sh\n";
  s += fmt::format("# Written by `hap launch --emit {}` from plan {}.\n", kindName, spec.origin);
  s += fmt::format("# Starts the {} rank{} ({}) of machine {} (host {}) of a {}-rank job. Run it on that\n",
                   h.ranks.size(), h.ranks.size() == 1 ? "" : "s", ranks, h.machine, h.host, n);
  s += "# host, from any folder; every host runs its own run-*.sh of this folder at about the same time.\n";
  s += "#\n";
  s += "# Each rank gets torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,\n";
  s += "# GROUP_RANK, MASTER_ADDR, MASTER_PORT), but the ranks are started here rather than by\n";
  s += "# torchrun: the plan fixes which shard every global rank holds, and torchrun would number\n";
  s += "# ranks in the order nodes join its rendezvous. Exits 0 when every rank here exits 0.\n";
  s += "#\n";
  s += overridableList(spec);
  s += "set -u\n";
  s += commonSettings(spec, name, "$(CDPATH= cd -- \"$(dirname -- \"$0\")\" && pwd)", shellQuote(spec.hosts[0].host));
  s += fmt::format("NNODES={}\n", spec.hosts.size());
  s += fmt::format("NODE_RANK={}\n", hostIndex);
  s += fmt::format("NPROC_PER_NODE={}\n", h.ranks.size());
  s += fmt::format("WORLD_SIZE={}\n", n);
  s += "export WORLD_SIZE\n";
  s += "\n";
  s += "pids=\n";
  s += "trap 'kill $pids 2>/dev/null; exit 130' INT TERM HUP\n";
  s += "# start_rank RANK LOCAL_RANK: one hap-worker in the background.\n";
  s += "start_rank() {\n";
  s += "  RANK=$1 LOCAL_RANK=$2 GROUP_RANK=$NODE_RANK LOCAL_WORLD_SIZE=$NPROC_PER_NODE \\\n";
  s += "    \"$HAP_WORKER\" " + workerWords(spec) + " &\n";
  s += "  pids=\"$pids $!\"\n";
  s += "}\n";
  for (size_t l = 0; l < h.ranks.size(); ++l) s += fmt::format("start_rank {} {}\n", h.ranks[l], l);
  s += "status=0\n";
  s += "for pid in $pids; do\n";
  s += "  wait \"$pid\" || status=1\n";
  s += "done\n";
  s += "exit $status\n";
  return {name, s, true};
}

ScriptFile hostfile(const ScriptSpec& spec) {
  std::vector<std::pair<std::string, size_t>> slots;  // by host, in order of first appearance
  for (const HostRanks& h : spec.hosts) {
    auto it = std::find_if(slots.begin(), slots.end(), [&](const auto& s) { return s.first == h.host; });
    if (it == slots.end())
      slots.emplace_back(h.host, h.ranks.size());
    else
      it->second += h.ranks.size();
  }
  std::string s;
  for (const auto& [host, count] : slots) s += fmt::format("{} slots={}\n", host, count);
  return {"hostfile", s, false};
}

ScriptFile sshLauncher(const ScriptSpec& spec, const std::vector<std::string>& runNames) {
  std::string s = "#!/bin/sh\n";
  s += fmt::format("# Written by `hap launch --emit ssh` from plan {}.\n", spec.origin);
  s += fmt::format("# Starts all {} ranks: runs each host's run-<machine>.sh there over ssh and waits for\n",
                   worldSize(spec));
  s += "# them. This folder must be at HAP_REMOTE_DIR on every host (default: the path it has here,\n";
  s += "# as on a shared filesystem; see README.txt). Exits 0 when every host's ranks exit 0.\n";
  s += "# Ctrl-C here ends the ssh sessions, which does not always end the ranks on the hosts (they have\n";
  s += "# no terminal to hang up): a rank stops when a peer's failure breaks its collectives, or after\n";
  s += "# HAP_TIMEOUT_S; stop leftovers on the hosts by hand (e.g. pkill -x hap-worker).\n";
  s += "#\n";
  s += "# HAP_REMOTE_DIR  the folder's path on the hosts\n";
  s += "# SSH             the ssh command (default: ssh; e.g. SSH='ssh -p 2222 -l trainer')\n";
  s += "# MASTER_ADDR, MASTER_PORT, HAP_TIMEOUT_S, GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME,\n";
  s += "# OMP_NUM_THREADS, HAP_WORKER, HAP_PLAN, HAP_MODEL: passed on to every host when set\n";
  s += "# (see run-*.sh).\n";
  s += "set -u\n";
  s += "HAP_DIR=$(CDPATH= cd -- \"$(dirname -- \"$0\")\" && pwd) || exit 1\n";
  s += "HAP_REMOTE_DIR=${HAP_REMOTE_DIR:-$HAP_DIR}\n";
  s += "SSH=${SSH:-ssh}\n";
  s += "# q WORD: WORD quoted for the remote shell.\n";
  s += "q() { printf \"'%s'\" \"$(printf '%s' \"$1\" | sed \"s/'/'\\\\\\\\''/g\")\"; }\n";
  s += "forward=\n";
  s += "for v in MASTER_ADDR MASTER_PORT HAP_TIMEOUT_S GLOO_SOCKET_IFNAME NCCL_SOCKET_IFNAME OMP_NUM_THREADS \\\n";
  s += "         HAP_WORKER HAP_PLAN HAP_MODEL HAP_RECORD; do\n";
  s += "  if eval \"[ -n \\\"\\${$v+set}\\\" ]\"; then\n";
  s += "    eval \"value=\\$$v\"\n";
  s += "    forward=\"$forward $v=$(q \"$value\")\"\n";
  s += "  fi\n";
  s += "done\n";
  s += "pids=\n";
  s += "trap 'kill $pids 2>/dev/null; exit 130' INT TERM HUP\n";
  s += "# on_host HOST SCRIPT: runs SCRIPT of the remote folder on HOST, in the background.\n";
  s += "on_host() {\n";
  s += "  $SSH -o BatchMode=yes \"$1\" \"cd $(q \"$HAP_REMOTE_DIR\") &&$forward sh $(q \"./$2\")\" </dev/null &\n";
  s += "  pids=\"$pids $!\"\n";
  s += "}\n";
  for (size_t i = 0; i < spec.hosts.size(); ++i)
    s += "on_host " + shellQuote(spec.hosts[i].host) + " " + shellQuote(runNames[i]) + "\n";
  s += "status=0\n";
  s += "for pid in $pids; do\n";
  s += "  wait \"$pid\" || status=1\n";
  s += "done\n";
  if (!spec.recordFile.empty()) {
    const std::string record = shellQuote(spec.recordFile);
    s += "# Rank 0's record of the run, copied here when the hosts' folder is not this one.\n";
    s += "if [ \"$status\" = 0 ] && [ -z \"${HAP_RECORD:-}\" ] && [ \"$HAP_REMOTE_DIR\" != \"$HAP_DIR\" ]; then\n";
    s += "  $SSH -o BatchMode=yes " + shellQuote(spec.hosts[0].host) + " \"cat $(q \"$HAP_REMOTE_DIR/\"" + record +
         ")\" > \"$HAP_DIR/\"" + record + " </dev/null || status=1\n";
    s += "fi\n";
  }
  s += "exit $status\n";
  return {"launch-ssh.sh", s, true};
}

std::vector<ScriptFile> slurmFiles(const ScriptSpec& spec) {
  const int n = worldSize(spec);
  std::vector<std::string> hostOfRank(static_cast<size_t>(n));
  for (const HostRanks& h : spec.hosts)
    for (int r : h.ranks) hostOfRank[static_cast<size_t>(r)] = h.host;
  std::vector<std::string> nodes;  // distinct, in rank order
  for (const std::string& host : hostOfRank)
    if (std::find(nodes.begin(), nodes.end(), host) == nodes.end()) nodes.push_back(host);
  std::string nodeList;
  for (const std::string& node : nodes) nodeList += (nodeList.empty() ? "" : ",") + node;
  size_t mostPerNode = 0;
  for (const std::string& node : nodes)
    mostPerNode = std::max(mostPerNode, static_cast<size_t>(std::count(hostOfRank.begin(), hostOfRank.end(), node)));

  std::string b = "#!/bin/sh\n";
  b += "#SBATCH --job-name=" + fileSafe(spec.jobName) + "\n";
  b += fmt::format("#SBATCH --nodes={}\n", nodes.size());
  b += fmt::format("#SBATCH --ntasks={}\n", n);
  b += fmt::format("#SBATCH --ntasks-per-node={}\n", mostPerNode);
  b += "#SBATCH --nodelist=" + nodeList + "\n";
  b += "#SBATCH --exclusive\n";
  b += "#SBATCH --output=hap-%j.out\n";
  b += fmt::format("# Written by `hap launch --emit slurm` from plan {}.\n", spec.origin);
  b += fmt::format("# Runs the plan's {} ranks on {} node{}: submit it from this folder, on a filesystem every\n", n,
                   nodes.size(), nodes.size() == 1 ? "" : "s");
  b += "# node sees:  sbatch hap.sbatch\n";
  b += "# srun places task i on line i+1 of slurm-hostfile (--distribution=arbitrary), so SLURM_PROCID\n";
  b += "# is the plan's rank. Whole nodes are allocated (--exclusive) so that every node can take the\n";
  b += "# ranks the file gives it; --ntasks-per-node is the most ranks on one node. If your Slurm node\n";
  b += "# names differ from the plan's hosts, edit slurm-hostfile (one node per rank, in rank order)\n";
  b += "# and --nodelist above. GPU ranks: add #SBATCH --gpus-per-node=K (K = the most ranks on one\n";
  b += "# node) and any partition or account your site needs.\n";
  b += "#\n";
  b += overridableList(spec);
  b += "set -u\n";
  b += "HAP_DIR=${SLURM_SUBMIT_DIR:-$(pwd)}\n";
  b += "SLURM_HOSTFILE=$HAP_DIR/slurm-hostfile\n";
  b += "MASTER_ADDR=${MASTER_ADDR:-$(head -n 1 \"$SLURM_HOSTFILE\")}\n";
  b += fmt::format("MASTER_PORT=${{MASTER_PORT:-{}}}\n", spec.masterPort);
  b += fmt::format("HAP_TIMEOUT_S=${{HAP_TIMEOUT_S:-{}}}\n", spec.timeoutSeconds);
  b += "export HAP_DIR SLURM_HOSTFILE MASTER_ADDR MASTER_PORT HAP_TIMEOUT_S\n";
  b += fmt::format("srun --ntasks={} --distribution=arbitrary --kill-on-bad-exit=1 sh \"$HAP_DIR/slurm-task.sh\"\n", n);

  std::string t = "#!/bin/sh\n";
  t += "# One rank of the job in hap.sbatch: srun runs it once per task, and SLURM_PROCID is the plan's\n";
  t += "# rank (tasks are placed by slurm-hostfile). See hap.sbatch for the variables it reads.\n";
  t += "set -u\n";
  t += commonSettings(spec, "slurm-task.sh", "${HAP_DIR:-$(CDPATH= cd -- \"$(dirname -- \"$0\")\" && pwd)}",
                      "$(head -n 1 \"$HAP_DIR/slurm-hostfile\")");
  t += fmt::format("if [ \"${{SLURM_NTASKS:-}}\" != {} ]; then\n", n);
  t += fmt::format(
      "  echo \"slurm-task.sh: SLURM_NTASKS is '${{SLURM_NTASKS:-}}' but the plan has {} ranks: run it through "
      "hap.sbatch\" >&2\n",
      n);
  t += "  exit 1\n";
  t += "fi\n";
  t += "RANK=$SLURM_PROCID\n";
  t += "LOCAL_RANK=${SLURM_LOCALID:-0}\n";
  t += "WORLD_SIZE=$SLURM_NTASKS\n";
  t += "node=$(sed -n \"$((RANK + 1))p\" \"$HAP_DIR/slurm-hostfile\")\n";
  t += "LOCAL_WORLD_SIZE=$(grep -c -x -F -e \"$node\" \"$HAP_DIR/slurm-hostfile\")\n";
  t += "here=${SLURMD_NODENAME:-$(hostname)}\n";
  t += "if [ \"$here\" != \"$node\" ]; then\n";
  t += "  echo \"slurm-task.sh: warning: rank $RANK runs on $here, but the plan puts it on $node (results are\" \\\n";
  t += "       \"the same; the plan's timing and memory assume $node)\" >&2\n";
  t += "fi\n";
  t += "export RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE\n";
  t += "exec \"$HAP_WORKER\" " + workerWords(spec) + "\n";

  std::string hosts;
  for (const std::string& host : hostOfRank) hosts += host + "\n";
  return {{"hap.sbatch", b, true}, {"slurm-task.sh", t, true}, {"slurm-hostfile", hosts, false}};
}

std::string readme(const ScriptSpec& spec, const std::vector<std::string>& runNames) {
  const int n = worldSize(spec);
  std::string s;
  s += fmt::format("Launch files for plan {} ({} ranks on {} machine{}), written by hap launch --emit.\n\n",
                   spec.origin, n, spec.hosts.size(), spec.hosts.size() == 1 ? "" : "s");
  s += "What every host needs, in this folder (or name them with the variables in the scripts):\n";
  s += "  " + spec.planFile + "   the plan (copied here)\n";
  if (!spec.modelFile.empty())
    s += "  " + spec.modelFile + "   the model the plan was made for: copy it here (or set HAP_MODEL)\n";
  s += "  hap-worker   the worker built for that host (build/app/worker/hap-worker): copy it here, put it on\n";
  s += "               PATH, or set HAP_WORKER\n";
  s += "  and the data files named in the worker arguments, at the same paths.\n\n";
  s += "Machines and ranks:\n";
  for (size_t i = 0; i < spec.hosts.size(); ++i) {
    std::string ranks;
    for (int r : spec.hosts[i].ranks) ranks += (ranks.empty() ? "" : " ") + std::to_string(r);
    s += fmt::format("  {} on {}: ranks {}{}\n", spec.hosts[i].machine, spec.hosts[i].host, ranks,
                     runNames.empty() ? "" : "  (" + runNames[i] + ")");
  }
  s += "\n";
  switch (spec.kind) {
    case ScriptKind::Torchrun:
      s += "Run: copy this folder to every host, then on each host run its script at about the same time, e.g.\n";
      s += "  sh " + runNames[0] + "   (on " + spec.hosts[0].host + ")\n";
      s += "Rank 0's host (MASTER_ADDR) must accept connections on MASTER_PORT from the others.\n";
      s += "hostfile lists the hosts as 'HOST slots=N' (DeepSpeed / Open MPI style).\n";
      break;
    case ScriptKind::Ssh:
      s += "Run, from a machine that reaches every host by ssh without a password:\n";
      s += "  sh launch-ssh.sh\n";
      s += "This folder must be at the same path on every host (a shared filesystem), or copy it there and\n";
      s += "set HAP_REMOTE_DIR to its path on the hosts. Each host runs its own run-*.sh (also usable by hand).\n";
      s += "hostfile lists the hosts as 'HOST slots=N' (DeepSpeed / Open MPI style).\n";
      break;
    case ScriptKind::Slurm:
      s += "Run: put this folder on a filesystem every node sees, then from inside it:\n";
      s += "  sbatch hap.sbatch\n";
      s += "slurm-hostfile names the node of every rank, in rank order; edit it (and --nodelist in hap.sbatch)\n";
      s += "when the Slurm node names differ from the plan's hosts.\n";
      break;
  }
  if (!spec.recordFile.empty()) {
    s += "\nRank 0 records the run (every rank's steps and per-stage times) into " + spec.recordFile + " in this\n";
    s += "folder on " + spec.hosts[0].host + " (HAP_RECORD names another file)" +
         (spec.kind == ScriptKind::Ssh ? "; launch-ssh.sh copies it back here" : "") + ". Bring it to the\n";
    s += "machine that planned and run `hap runs import " + spec.recordFile + "` (then hap calibrate), or let\n";
    s += "`hap tune --emit` read it.\n";
  }
  s += "\nOverride defaults with environment variables (listed at the top of each script), e.g.\n";
  s += "MASTER_PORT=29600 NCCL_SOCKET_IFNAME=ib0 GLOO_SOCKET_IFNAME=ib0 HAP_TIMEOUT_S=600.\n";
  s += "A rank that fails makes its peers' collectives fail; every rank gives up after HAP_TIMEOUT_S.\n";
  return s;
}

}  // namespace

std::string shellQuote(std::string_view text) {
  if (!text.empty() && std::all_of(text.begin(), text.end(), plainWordChar)) return std::string(text);
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  out += "'";
  return out;
}

std::optional<ScriptKind> parseScriptKind(std::string_view name) {
  if (name == "torchrun") return ScriptKind::Torchrun;
  if (name == "slurm") return ScriptKind::Slurm;
  if (name == "ssh") return ScriptKind::Ssh;
  return std::nullopt;
}

std::vector<HostRanks> hostsOf(const plan::Plan& plan) {
  std::vector<HostRanks> hosts;
  for (const plan::PlanDevice& d : plan::worldDevices(plan)) {
    auto it = std::find_if(hosts.begin(), hosts.end(), [&](const HostRanks& h) { return h.machine == d.machine; });
    if (it == hosts.end()) {
      hosts.push_back({d.machine, d.host.empty() ? d.machine : d.host, {}});
      it = hosts.end() - 1;
    }
    it->ranks.push_back(d.rank);
  }
  for (HostRanks& h : hosts) std::sort(h.ranks.begin(), h.ranks.end());
  std::sort(hosts.begin(), hosts.end(), [](const HostRanks& a, const HostRanks& b) { return a.ranks[0] < b.ranks[0]; });
  return hosts;
}

std::vector<ScriptFile> launchScripts(const ScriptSpec& spec) {
  check(spec);
  std::vector<ScriptFile> files;
  std::vector<std::string> runNames;
  if (spec.kind == ScriptKind::Slurm) {
    files = slurmFiles(spec);
  } else {
    const char* kindName = spec.kind == ScriptKind::Ssh ? "ssh" : "torchrun";
    runNames = runScriptNames(spec);
    for (size_t i = 0; i < spec.hosts.size(); ++i) files.push_back(runScript(spec, i, runNames[i], kindName));
    if (spec.kind == ScriptKind::Ssh) files.push_back(sshLauncher(spec, runNames));
    files.push_back(hostfile(spec));
  }
  files.push_back({"README.txt", readme(spec, runNames), false});
  return files;
}

std::vector<std::string> writeLaunchFolder(const ScriptSpec& spec, const std::string& planPath, const std::string& dir,
                                           bool force) {
  const std::vector<ScriptFile> files = launchScripts(spec);
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) throw RuntimeError(fmt::format("{}: exists and is not a folder", dir));
    if (!force && !fs::is_empty(dir, ec))
      throw RuntimeError(fmt::format("{}: the folder is not empty; name a new or empty folder, or pass --force to "
                                     "replace the files hap writes there",
                                     dir));
  } else if (!fs::create_directories(dir, ec) && ec) {
    throw RuntimeError(fmt::format("{}: cannot create the folder: {}", dir, ec.message()));
  }
  std::vector<std::string> written;
  const fs::path planCopy = fs::path(dir) / spec.planFile;
  if (!(fs::exists(planCopy, ec) && fs::equivalent(planPath, planCopy, ec))) {
    fs::copy_file(planPath, planCopy, fs::copy_options::overwrite_existing, ec);
    if (ec) throw RuntimeError(fmt::format("{}: cannot copy the plan there: {}", planCopy.string(), ec.message()));
  }
  written.push_back(spec.planFile);
  for (const ScriptFile& f : files) {
    const fs::path path = fs::path(dir) / f.name;
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << f.text;
      if (!out.good()) throw RuntimeError(fmt::format("{}: cannot write", path.string()));
    }
    using P = fs::perms;
    const P mode = f.executable ? P::owner_all | P::group_read | P::group_exec | P::others_read | P::others_exec
                                : P::owner_read | P::owner_write | P::group_read | P::others_read;
    fs::permissions(path, mode, fs::perm_options::replace, ec);
    if (ec) throw RuntimeError(fmt::format("{}: cannot set its permissions: {}", path.string(), ec.message()));
    written.push_back(f.name);
  }
  return written;
}

std::vector<std::string> emitLaunchFolder(const plan::Plan& plan, const std::string& planPath,
                                          const EmitRequest& request) {
  if (request.masterPort < 1 || request.masterPort > 65535)
    throw Error(fmt::format("--master-port {}: not a TCP port (1..65535)", request.masterPort));
  ScriptSpec spec;
  spec.kind = request.kind;
  spec.hosts = hostsOf(plan);
  spec.planFile = fs::path(planPath).filename().string();
  spec.workerArgs = workerArguments(request.options);
  if (request.options.modelPath.empty() && !plan.modelPath.empty())
    spec.modelFile = fs::path(plan.modelPath).filename().string();
  spec.masterPort = request.masterPort;
  spec.recordFile = request.recordFile;
  spec.jobName = "hap-" + fs::path(planPath).stem().string();
  spec.origin = planPath;
  return writeLaunchFolder(spec, planPath, request.dir, request.force);
}

}  // namespace hap::runtime
