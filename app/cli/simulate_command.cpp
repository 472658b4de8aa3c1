#include "app/cli/simulate_command.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "engine/base/error.h"
#include "engine/base/text_file.h"
#include "engine/plan/open_plan.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"
#include "engine/plan/report.h"
#include "engine/plan/simulator.h"
#include "engine/plan/trace_export.h"

namespace hap::cli {
namespace {

struct SimulateArgs {
  std::string plan, model, trace, report;
};

std::string ms(double seconds) { return fmt::format("{:.3f} ms", seconds * 1e3); }

// The plan opened as the worker opens it (plan::openPlan: read with every field checked, its
// model located, its hash checked, imported at the plan's shapes, the plan verified): a plan that
// does not verify, or whose model is not there, is never replayed. Steps are labelled by op and
// module scope.
int runSimulate(const SimulateArgs& a) {
  plan::OpenPlanOptions options;
  options.modelPath = a.model;
  options.metaWeights = true;
  const plan::OpenedPlan opened = plan::openPlan(a.plan, options);
  const plan::Plan& p = opened.plan;
  const std::vector<std::string> labels = plan::stepLabels(p, opened.imported);
  plan::Timeline t;
  try {
    t = plan::simulate(p, labels);
  } catch (const plan::PlanError& e) {
    throw plan::PlanError(fmt::format("{}: {}", a.plan, e.what()));
  }

  size_t backwardStages = 0;
  for (const plan::StageSpan& s : t.stages) backwardStages += s.backward;
  const plan::PlanDevice& slowest = p.devices[static_cast<size_t>(plan::bottleneckRank(t))];
  const plan::DeviceTimeline& busiest = t.devices[static_cast<size_t>(slowest.rank)];
  const std::string devices =
      p.replication.replicated()
          ? fmt::format("{} devices per machine, replicated on {} machines", p.devices.size(), p.replication.machines)
          : fmt::format("{} devices", p.devices.size());
  std::cout << fmt::format("Simulated iteration of {} on {} ({}): {}\n", p.modelPath, p.cluster.name, devices,
                           ms(t.totalSeconds));
  std::cout << fmt::format("  forward    {} in {} stages\n", ms(t.forwardSeconds), t.stages.size() - backwardStages);
  std::cout << fmt::format("  backward   {} in {} stages\n", ms(t.backwardSeconds), backwardStages);
  std::cout << fmt::format("  bottleneck rank {} ({} on {}): busy {} ({:.1f}%), idle {}\n", slowest.rank,
                           slowest.type, slowest.machine, ms(busiest.busySeconds()),
                           t.totalSeconds > 0 ? 100 * busiest.busySeconds() / t.totalSeconds : 0.0,
                           ms(busiest.idleSeconds));
  if (plan::matchesPrediction(p, t))
    std::cout << "Simulated total equals the plan's prediction.\n";
  else
    std::cout << fmt::format("Warning: the simulated total {:.9f} ms differs from the plan's prediction {:.9f} ms.\n",
                             t.totalSeconds * 1e3, p.estimate.iterationSeconds * 1e3);

  std::string written;
  if (!a.trace.empty()) {
    writeTextFile(a.trace, plan::traceJson(p, t).dump() + "\n");
    written += fmt::format("Trace written to {} (open it in ui.perfetto.dev).", a.trace);
  }
  if (!a.report.empty()) {
    writeTextFile(a.report, plan::formatReport(p, t));
    written += fmt::format("{}Report written to {}.", written.empty() ? "" : " ", a.report);
  }
  if (!written.empty()) std::cout << written << "\n";
  return 0;
}

}  // namespace

void addSimulateCommand(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Replay a plan's predicted iteration device by device (stage by stage: collectives on every "
      "device, then each device's computations at its own speed, then waiting for the slowest), "
      "check it against the plan's prediction, and write it as a trace and a report.");
  cmd->add_option("PLAN", args->plan, "Plan file (JSON) written by 'hap plan -o'")->required();
  cmd->add_option("--trace,-t", args->trace,
                  "Write the timeline as Chrome Trace Event JSON (one process per rank, computation "
                  "and communication tracks), for ui.perfetto.dev or chrome://tracing")
      ->type_name("FILE");
  cmd->add_option("--report,-r", args->report,
                  "Write a Markdown report: summary, segments, the most expensive stages, devices, memory")
      ->type_name("FILE");
  cmd->add_option("--model,-m", args->model,
                  "The model file the plan was made for (default: the plan's model path, else the file of "
                  "that name beside the plan); the plan is verified against it before it is replayed")
      ->type_name("FILE");
  cmd->callback([args, &exitCode] { exitCode = runSimulate(*args); });
}

}  // namespace hap::cli
