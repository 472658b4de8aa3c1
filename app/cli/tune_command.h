// `hap tune MODEL --cluster C --local`: the closed loop from measurement to plan
// (app/cli/tune_loop.h): profile what the store lacks, plan, run the plan and the baselines for a
// few steps, calibrate, re-plan, until the best measured step stops improving; write the plan
// measured fastest and print the rounds.
#pragma once

#include <CLI/CLI.hpp>

namespace hap::cli {

void addTuneCommand(CLI::App& app, int& exitCode);

}  // namespace hap::cli
