// `hap compare MODEL.pt --cluster C.yaml`: HAP's plan against the baselines engineers would
// otherwise use (plan/baselines.h), under one cost model.
#pragma once

#include <CLI/CLI.hpp>

namespace hap::cli {

void addCompareCommand(CLI::App& app, int& exitCode);

}  // namespace hap::cli
