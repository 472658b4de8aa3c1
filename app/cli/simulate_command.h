// `hap simulate PLAN.json`: replay a plan's predicted iteration device by device, and write it as
// a trace (Chrome Trace Event JSON) and a Markdown report (docs/simulator.md).
#pragma once

#include <CLI/CLI.hpp>

namespace hap::cli {

void addSimulateCommand(CLI::App& app, int& exitCode);

}  // namespace hap::cli
