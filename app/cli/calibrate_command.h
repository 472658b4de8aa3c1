// `hap calibrate`: fits the cost model to the runs recorded in the profile store
// (engine/cost/calibration.h), stores the fit as a new profile version, and reports predicted
// against measured step time and peak memory before and after, for the runs fitted and,
// separately, for held-out runs (plans not used in the fit).
#pragma once

#include <CLI/CLI.hpp>

namespace hap::cli {

void addCalibrateCommand(CLI::App& app, int& exitCode);

}  // namespace hap::cli
