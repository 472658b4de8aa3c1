#include "runtime/core/worker_env.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>

#include "runtime/core/runtime_error.h"

namespace hap::runtime {
namespace {

// The integer value of environment variable `name`, or `fallback` when it is unset.
int intVariable(const char* name, int fallback, int lowest) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  int value = 0;
  const char* end = text + std::char_traits<char>::length(text);
  auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end || value < lowest)
    throw RuntimeError(fmt::format("environment variable {}='{}' is not an integer >= {}; set it as torchrun "
                                   "does (hap launch sets it for you)",
                                   name, text, lowest));
  return value;
}

}  // namespace

WorkerEnv WorkerEnv::fromEnvironment() {
  WorkerEnv env;
  env.rank = intVariable("RANK", 0, 0);
  env.worldSize = intVariable("WORLD_SIZE", 1, 1);
  env.localRank = intVariable("LOCAL_RANK", env.rank, 0);
  if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) env.masterAddr = addr;
  env.masterPort = intVariable("MASTER_PORT", env.masterPort, 1);
  if (env.masterPort > 65535)
    throw RuntimeError(fmt::format("environment variable MASTER_PORT={} is not a TCP port (1..65535)", env.masterPort));
  env.timeout = std::chrono::seconds(intVariable("HAP_TIMEOUT_S", static_cast<int>(env.timeout.count()), 1));
  if (env.rank >= env.worldSize)
    throw RuntimeError(fmt::format("RANK={} is not below WORLD_SIZE={}; ranks are numbered 0..WORLD_SIZE-1",
                                   env.rank, env.worldSize));
  return env;
}

}  // namespace hap::runtime
