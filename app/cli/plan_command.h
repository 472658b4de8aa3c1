// `hap plan MODEL.pt --cluster C.yaml`: synthesise, verify and report a distributed program.
#pragma once

#include <CLI/CLI.hpp>

namespace hap::cli {

void addPlanCommand(CLI::App& app, int& exitCode);

}  // namespace hap::cli
