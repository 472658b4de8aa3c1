// `hap launch PLAN.json --local`: run one hap-worker per plan device on this machine, optionally
// each held to a share of one CPU (a heterogeneous cluster emulated on one machine), with their
// output prefixed by rank; `hap launch PLAN.json --emit torchrun|slurm|ssh DIR`: write the
// scripts an ops team runs on the real cluster (runtime/launch/launcher.h, runtime/launch/launch_scripts.h).
#pragma once

#include <CLI/CLI.hpp>

namespace hap::cli {

void addLaunchCommand(CLI::App& app, int& exitCode);

}  // namespace hap::cli
