// `hap runs [show ID]`: the training runs recorded in the profile store (db/store.h), as a table,
// JSON or CSV.
#pragma once

#include <CLI/CLI.hpp>

namespace hap::cli {

void addRunsCommand(CLI::App& app, int& exitCode);

}  // namespace hap::cli
