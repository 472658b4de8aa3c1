#include "runtime/launch/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "runtime/core/runtime_error.h"

extern char** environ;

namespace hap::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using Nanos = std::chrono::nanoseconds;

constexpr std::chrono::milliseconds kPollInterval{50};  // the longest the loop sleeps
constexpr std::chrono::seconds kDrainLimit{1};          // pipes left open after the last reap
constexpr size_t kMaxMessageLine = 2000;                // lastErrorLine is cut to this
constexpr std::chrono::microseconds kQuotaSampling{200};  // the shortest wait between CPU samples

// The CPU time process `pid` (all its threads) has used; nothing once it cannot be read (it exited).
std::optional<Nanos> cpuTime(pid_t pid) {
  clockid_t clock;
  if (::clock_getcpuclockid(pid, &clock) != 0) return std::nullopt;
  timespec ts{};
  if (::clock_gettime(clock, &ts) != 0) return std::nullopt;
  return Nanos(static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec);
}

void writeAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // the launcher's own output is gone; keep supervising
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
}

bool mentionsError(std::string_view line) {
  static constexpr std::string_view kWord = "error";
  auto it = std::search(line.begin(), line.end(), kWord.begin(), kWord.end(),
                        [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
  return it != line.end();
}

bool blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

struct Pipe {
  int fd = -1;
  std::string pending;  // bytes after the last newline
};

struct Worker {
  pid_t pid = -1;       // also the id of its process group
  bool alive = false;   // started and not yet reaped
  bool stopped = false; // SIGSTOPped by the CPU quota
  Pipe out, err;
  std::string lastError, lastStderr, lastStdout;
};

// The launcher's environment with `overrides` replacing or adding variables, as NAME=VALUE.
std::vector<std::string> mergedEnvironment(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    const bool replaced =
        std::any_of(overrides.begin(), overrides.end(), [&](const auto& o) { return o.first == name; });
    if (!replaced) env.emplace_back(entry);
  }
  for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
  return env;
}

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Forks and execs `c` in a new process group with stdin from `devNull` and stdout/stderr into
// fresh pipes. Returns only once the exec succeeded; throws RuntimeError naming the program when
// it did not.
void spawn(const WorkerCommand& c, int devNull, Worker& w) {
  // Everything the child needs is built before fork: after it, the child calls only
  // async-signal-safe functions.
  std::vector<std::string> envStrings = mergedEnvironment(c.env);
  std::vector<char*> envp, argv;
  for (std::string& s : envStrings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string program = c.program;
  argv.push_back(program.data());
  std::vector<std::string> args = c.args;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int outPipe[2], errPipe[2], execPipe[2];
  if (::pipe2(outPipe, O_CLOEXEC) != 0)
    throw RuntimeError(fmt::format("cannot create a pipe for {}: {}", c.program, std::strerror(errno)));
  if (::pipe2(errPipe, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(outPipe[0]), ::close(outPipe[1]);
    throw RuntimeError(fmt::format("cannot create a pipe for {}: {}", c.program, std::strerror(e)));
  }
  if (::pipe2(execPipe, O_CLOEXEC) != 0) {
    const int e = errno;
    for (int fd : {outPipe[0], outPipe[1], errPipe[0], errPipe[1]}) ::close(fd);
    throw RuntimeError(fmt::format("cannot create a pipe for {}: {}", c.program, std::strerror(e)));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {outPipe[0], outPipe[1], errPipe[0], errPipe[1], execPipe[0], execPipe[1]}) ::close(fd);
    throw RuntimeError(fmt::format("cannot start {}: fork failed: {}", c.program, std::strerror(e)));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the launcher died before prctl
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD}) ::signal(s, SIG_DFL);
    ::dup2(devNull, 0);
    ::dup2(outPipe[1], 1);
    ::dup2(errPipe[1], 2);
    for (int fd = 0; fd <= 2; ++fd) ::fcntl(fd, F_SETFD, 0);  // in case a pipe end already was 0..2
    ::execve(program.c_str(), argv.data(), envp.data());
    const int e = errno;
    [[maybe_unused]] ssize_t ignored = ::write(execPipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // in the parent too, so no signal to the group can precede the child's call
  ::close(outPipe[1]);
  ::close(errPipe[1]);
  ::close(execPipe[1]);
  int execErrno = 0;
  ssize_t n;
  do n = ::read(execPipe[0], &execErrno, sizeof execErrno);
  while (n < 0 && errno == EINTR);
  ::close(execPipe[0]);
  if (n == static_cast<ssize_t>(sizeof execErrno)) {
    ::waitpid(pid, nullptr, 0);
    ::close(outPipe[0]);
    ::close(errPipe[0]);
    throw RuntimeError(fmt::format("cannot start {}: {}", c.program, std::strerror(execErrno)));
  }
  for (int fd : {outPipe[0], errPipe[0]}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  w.pid = pid;
  w.alive = true;
  w.out.fd = outPipe[0];
  w.err.fd = errPipe[0];
}

class Supervisor {
 public:
  Supervisor(const std::vector<WorkerCommand>& commands, const LineSink& sink, const LaunchOptions& options,
             CpuQuota quota)
      : commands_(commands), sink_(sink), options_(options), quota_(std::move(quota)), workers_(commands.size()) {
    result_.workers.resize(commands.size());
  }

  LaunchResult run() {
    const int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devNull < 0) throw RuntimeError(fmt::format("cannot open /dev/null: {}", std::strerror(errno)));
    start_ = Clock::now();
    try {
      for (size_t i = 0; i < commands_.size(); ++i) spawn(commands_[i], devNull, workers_[i]);
    } catch (...) {
      ::close(devNull);
      for (Worker& w : workers_) {
        if (w.alive) ::kill(-w.pid, SIGKILL);
      }
      for (Worker& w : workers_) {
        if (w.alive) ::waitpid(w.pid, nullptr, 0);
        closeFd(w.out.fd);
        closeFd(w.err.fd);
      }
      throw;
    }
    ::close(devNull);
    quotaStart_ = Clock::now();
    loop();
    result_.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    return std::move(result_);
  }

 private:
  void loop() {
    std::optional<Clock::time_point> drainSince;
    for (;;) {
      const Clock::time_point now = Clock::now();
      reap();
      if (!stopping_) {
        const int signal = options_.interrupt ? options_.interrupt->load() : 0;
        if (signal != 0) {
          result_.signal = signal;
          beginStopping(LaunchResult::Outcome::Interrupted, -1);
        } else if (options_.timeout.count() > 0 && now - start_ >= options_.timeout) {
          beginStopping(LaunchResult::Outcome::TimedOut, -1);
        }
      }
      if (stopping_ && !killed_ && now - stopSince_ >= options_.grace) {
        for (Worker& w : workers_)
          if (w.alive) ::kill(-w.pid, SIGKILL);
        killed_ = true;
      }
      Nanos wait = kPollInterval;
      if (!stopping_ && quota_.anyThrottled()) wait = std::min(wait, applyQuota(now));

      const bool anyAlive = std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.alive; });
      if (!anyAlive) {
        // A process that left its worker's group may still hold a pipe: give it a moment.
        if (!drainSince) drainSince = now;
        if (!anyOpen() || now - *drainSince >= kDrainLimit) break;
      }
      pollAndRead(wait);
    }
    for (size_t i = 0; i < workers_.size(); ++i) {
      finishStream(i, OutputStream::Out);
      finishStream(i, OutputStream::Err);
    }
    for (size_t i = 0; i < workers_.size(); ++i) {
      const Worker& w = workers_[i];
      std::string line = !w.lastError.empty() ? w.lastError : !w.lastStderr.empty() ? w.lastStderr : w.lastStdout;
      if (line.size() > kMaxMessageLine) line = line.substr(0, kMaxMessageLine) + "...";
      result_.workers[i].lastErrorLine = std::move(line);
    }
  }

  // Reaps the workers that exited. The leader is only peeked at first (WNOWAIT): while it is a
  // zombie its process-group id cannot be reused, so the SIGKILL to what is left of its group
  // cannot hit an unrelated process.
  void reap() {
    int firstFailed = -1;
    for (size_t i = 0; i < workers_.size(); ++i) {
      Worker& w = workers_[i];
      if (!w.alive) continue;
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(w.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != w.pid)
        continue;
      ::kill(-w.pid, SIGKILL);
      int status = 0;
      while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
      }
      w.alive = false;
      WorkerExit& e = result_.workers[i];
      e.exited = WIFEXITED(status);
      e.code = e.exited ? WEXITSTATUS(status) : 0;
      e.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      // Among ranks seen failing at once, one killed by a signal is the cause rather than the
      // peers whose collectives failed because it went.
      if (!e.succeeded() && !stopping_ &&
          (firstFailed < 0 || (!e.exited && result_.workers[static_cast<size_t>(firstFailed)].exited)))
        firstFailed = static_cast<int>(i);
    }
    if (firstFailed >= 0) beginStopping(LaunchResult::Outcome::WorkerFailed, firstFailed);
  }

  void beginStopping(LaunchResult::Outcome outcome, int failed) {
    stopping_ = true;
    stopSince_ = Clock::now();
    result_.outcome = outcome;
    result_.failedWorker = failed;
    for (size_t i = 0; i < workers_.size(); ++i) {
      Worker& w = workers_[i];
      if (!w.alive) continue;
      result_.workers[i].stoppedByLauncher = true;
      ::kill(-w.pid, SIGTERM);
      ::kill(-w.pid, SIGCONT);  // a stopped process acts on SIGTERM only once continued
      w.stopped = false;
    }
  }

  // Stops and continues the throttled workers per their CPU quota; returns how long until the
  // next look: when a running worker's budget could be spent (at one busy thread), or the next
  // period starts, not sooner than kQuotaSampling.
  Nanos applyQuota(Clock::time_point now) {
    const Nanos t = now - quotaStart_;
    Nanos wait = quota_.nextPeriod(t) - t;
    for (size_t i = 0; i < workers_.size(); ++i) {
      Worker& w = workers_[i];
      if (!w.alive || !quota_.throttled(i)) continue;
      const std::optional<Nanos> cpu = cpuTime(w.pid);
      if (!cpu) continue;  // exited; reap() takes it
      const bool run = quota_.mayRun(i, t, *cpu);
      if (run == w.stopped) {
        ::kill(-w.pid, run ? SIGCONT : SIGSTOP);
        w.stopped = !run;
      }
      if (run) wait = std::min(wait, quota_.remaining(i, *cpu));
    }
    return std::max(wait, Nanos(kQuotaSampling));
  }

  bool anyOpen() const {
    return std::any_of(workers_.begin(), workers_.end(),
                       [](const Worker& w) { return w.out.fd >= 0 || w.err.fd >= 0; });
  }

  void pollAndRead(Nanos wait) {
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, OutputStream>> owners;
    for (size_t i = 0; i < workers_.size(); ++i)
      for (OutputStream s : {OutputStream::Out, OutputStream::Err})
        if (pipe(i, s).fd >= 0) {
          fds.push_back({pipe(i, s).fd, POLLIN, 0});
          owners.emplace_back(i, s);
        }
    // Round up, so that the loop does not spin through the last fraction of a millisecond.
    const int ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count());
    const int ready = ::poll(fds.data(), fds.size(), std::max(ms, 0));
    if (ready <= 0) return;  // timeout, or EINTR (a signal: the loop checks the interrupt)
    for (size_t k = 0; k < fds.size(); ++k)
      if (fds[k].revents != 0) readSome(owners[k].first, owners[k].second);
  }

  Pipe& pipe(size_t worker, OutputStream s) {
    return s == OutputStream::Out ? workers_[worker].out : workers_[worker].err;
  }

  // Reads what is there (bounded, so one chatty worker cannot starve the others) and delivers
  // complete lines; at end of stream delivers the rest and closes the pipe.
  void readSome(size_t worker, OutputStream s) {
    Pipe& p = pipe(worker, s);
    char buffer[16384];
    for (int chunk = 0; chunk < 8 && p.fd >= 0; ++chunk) {
      const ssize_t n = ::read(p.fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {  // end of stream, or an error that ends it
        finishStream(worker, s);
        return;
      }
      p.pending.append(buffer, static_cast<size_t>(n));
      size_t begin = 0;
      for (size_t nl; (nl = p.pending.find('\n', begin)) != std::string::npos; begin = nl + 1)
        deliver(worker, s, std::string_view(p.pending).substr(begin, nl - begin));
      p.pending.erase(0, begin);
      while (p.pending.size() >= kMaxLineBytes) {
        deliver(worker, s, std::string_view(p.pending).substr(0, kMaxLineBytes));
        p.pending.erase(0, kMaxLineBytes);
      }
    }
  }

  void finishStream(size_t worker, OutputStream s) {
    Pipe& p = pipe(worker, s);
    if (!p.pending.empty()) deliver(worker, s, p.pending);
    p.pending.clear();
    closeFd(p.fd);
  }

  void deliver(size_t worker, OutputStream s, std::string_view line) {
    Worker& w = workers_[worker];
    if (!blank(line)) {
      if (s == OutputStream::Err) {
        w.lastStderr = line;
        if (mentionsError(line)) w.lastError = line;
      } else {
        w.lastStdout = line;
      }
    }
    if (sink_) sink_(static_cast<int>(worker), s, line);
  }

  const std::vector<WorkerCommand>& commands_;
  const LineSink& sink_;
  const LaunchOptions& options_;
  CpuQuota quota_;
  std::vector<Worker> workers_;
  LaunchResult result_;
  Clock::time_point start_, quotaStart_, stopSince_;
  bool stopping_ = false, killed_ = false;
};

}  // namespace

LineSink prefixedSink(std::vector<std::string> prefixes) {
  return [prefixes = std::move(prefixes)](int worker, OutputStream stream, std::string_view line) {
    std::string text;
    text.reserve(prefixes.at(static_cast<size_t>(worker)).size() + line.size() + 1);
    text += prefixes.at(static_cast<size_t>(worker));
    text += line;
    text += '\n';
    writeAll(stream == OutputStream::Out ? 1 : 2, text);
  };
}

LaunchResult runWorkers(const std::vector<WorkerCommand>& workers, const LineSink& sink, const LaunchOptions& options) {
  if (options.quotaPeriod.count() <= 0) throw std::invalid_argument("runWorkers: the quota period must be positive");
  std::vector<double> shares;
  for (const WorkerCommand& w : workers) shares.push_back(w.cpuShare);
  CpuQuota quota(std::move(shares), options.quotaPeriod);
  return Supervisor(workers, sink, options, std::move(quota)).run();
}

const char* interruptName(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

std::string describeExit(const WorkerExit& e) {
  if (e.exited) return fmt::format("exit code {}", e.code);
  static constexpr std::pair<int, const char*> kNames[] = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
      {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
      {SIGSEGV, "SIGSEGV"}, {SIGPIPE, "SIGPIPE"}, {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"}};
  for (const auto& [number, name] : kNames)
    if (number == e.signal) return fmt::format("killed by signal {} ({})", e.signal, name);
  return fmt::format("killed by signal {}", e.signal);
}

CpuQuota::CpuQuota(std::vector<double> shares, Nanos period)
    : shares_(std::move(shares)), period_(period), accounts_(shares_.size()) {
  if (period_.count() <= 0) throw std::invalid_argument("CpuQuota: the period must be positive");
  for (double s : shares_)
    if (!(s > 0 && s <= 1)) throw std::invalid_argument(fmt::format("CpuQuota: CPU share {} is not in (0, 1]", s));
}

bool CpuQuota::anyThrottled() const {
  return std::any_of(shares_.begin(), shares_.end(), [](double s) { return s < 1; });
}

bool CpuQuota::mayRun(size_t worker, Nanos t, Nanos cpu) {
  if (!throttled(worker)) return true;
  Account& a = accounts_[worker];
  const int64_t period = t / period_;
  if (period != a.period) {
    // Overrun of the period before is owed; budget left unused is not kept (as cgroup cpu.max).
    const Nanos overrun = a.period < 0 ? Nanos(0) : std::max(Nanos(0), (cpu - a.start) - a.budget);
    a.period = period;
    a.start = cpu;
    a.budget = Nanos(std::llround(shares_[worker] * static_cast<double>(period_.count()))) - overrun;
  }
  return cpu - a.start < a.budget;
}

CpuQuota::Nanos CpuQuota::remaining(size_t worker, Nanos cpu) const {
  if (!throttled(worker)) return Nanos::max();
  const Account& a = accounts_[worker];
  return std::max(Nanos(0), a.budget - (cpu - a.start));
}

}  // namespace hap::runtime
