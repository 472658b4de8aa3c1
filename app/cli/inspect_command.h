// `hap inspect MODEL.pt`: import a model and describe it per module scope.
#pragma once

#include <CLI/CLI.hpp>

namespace hap::cli {

// Registers the subcommand on `app`; it runs when parsed and sets `exitCode`.
void addInspectCommand(CLI::App& app, int& exitCode);

}  // namespace hap::cli
