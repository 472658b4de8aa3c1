// hap: the command-line front end of HAP Studio (everything the app does that is not
// interactive). Exit status: 0 success, 1 an error in the input (message on stderr), 2 usage,
// 3 an internal error: an exception that is not a hap::Error escaped a command (a gap in the input
// checks, or a bug), reported with the command line that caused it instead of an abort.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <exception>
#include <iostream>
#include <string>

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
#include "engine/base/utf8.h"

namespace {

// The command line, quoted where needed, naming the inputs an internal error came from.
std::string commandLine(int argc, char** argv) {
  std::string out = "hap";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = hap::printableUtf8(argv[i]);
    const bool plain = !arg.empty() && arg.find_first_of(" \t'\"") == std::string::npos;
    out += plain ? " " + arg : " '" + arg + "'";
  }
  return out;
}

// The first line of an exception's text (LibTorch's c10::Error appends a C++ backtrace).
std::string firstLine(const char* what) {
  std::string text = hap::printableUtf8(what ? what : "");
  if (const size_t cut = text.find("\nException raised from"); cut != std::string::npos) text.resize(cut);
  return text;
}

int internalError(int argc, char** argv, const std::string& what) {
  std::cerr << "hap: internal error in `" << commandLine(argc, argv) << "`: " << what
            << "\nThis is a gap in hap's checks of its input, not a problem you can fix: please report "
               "it with this command line and the files it names (exit status 3).\n";
  return 3;
}

}  // namespace

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
  } catch (const std::exception& e) {
    // Last: anything a command let through (a foreign library's exception) is a message, never an
    // abort. tests/app/tst_hostile_inputs.cpp asserts that no known hostile input gets here.
    return internalError(argc, argv, firstLine(e.what()));
  } catch (...) {
    return internalError(argc, argv, "an exception of unknown type");
  }
  return exitCode;
}
