// hap: the command-line front end of HAP Studio (everything the app does that is not
// interactive). Exit status: 0 success, 1 an error in the input (message on stderr), 2 usage.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "app/cli/calibrate_command.h"
#include "app/cli/inspect_command.h"
#include "app/cli/launch_command.h"
#include "app/cli/plan_command.h"
#include "app/cli/profile_command.h"
#include "app/cli/runs_command.h"
#include "app/cli/compare_command.h"
#include "app/cli/simulate_command.h"
#include "app/cli/tune_command.h"
#include "engine/base/error.h"

int main(int argc, char** argv) {
  CLI::App app{
      "hap: plan and run SPMD training of a PyTorch model on a heterogeneous GPU cluster.\n"
      "Models are TorchScript files whose forward returns the loss; input shapes come from the\n"
      "file's hap/inputs.json (written by resources/models/export.py) or from --input.",
      "hap"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "hap 0.1.0");
  int exitCode = 0;
  hap::cli::addInspectCommand(app, exitCode);
  hap::cli::addPlanCommand(app, exitCode);
  hap::cli::addSimulateCommand(app, exitCode);
  hap::cli::addCompareCommand(app, exitCode);
  hap::cli::addLaunchCommand(app, exitCode);
  hap::cli::addProfileCommand(app, exitCode);
  hap::cli::addCalibrateCommand(app, exitCode);
  hap::cli::addRunsCommand(app, exitCode);
  hap::cli::addTuneCommand(app, exitCode);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help and --version succeed; usage errors exit 2
  } catch (const hap::Error& e) {
    std::cerr << "hap: error: " << e.what() << "\n";
    return 1;
  }
  return exitCode;
}
