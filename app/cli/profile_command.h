// `hap profile`: microbenchmarks of this machine (runtime/core/profiler.h) written to the profile
// store as the next version of a named profile, optionally exported as a cluster inventory whose
// numbers are the measured ones. The compute benchmarks run in this process; the collectives run
// among --ranks local processes of this same executable, started through runtime::runWorkers with the
// hidden subcommand `hap profile-worker` (rank 0 writes its fits as JSON to a temporary file that
// `hap profile` reads back).
#pragma once

#include <CLI/CLI.hpp>

namespace hap::cli {

// Adds `profile` and the hidden `profile-worker`.
void addProfileCommand(CLI::App& app, int& exitCode);

}  // namespace hap::cli
