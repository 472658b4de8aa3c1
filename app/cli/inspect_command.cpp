#include "app/cli/inspect_command.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/base/text_file.h"
#include "engine/import/importer.h"
#include "engine/import/shape_check.h"
#include "engine/ir/graph_dot.h"
#include "engine/ir/graph_json.h"
#include "engine/ir/summary.h"

namespace hap::cli {
namespace {

struct InspectArgs {
  std::string model;
  std::vector<std::string> inputs;
  int depth = 1;
  std::string dotFile;
  bool json = false;
  bool verifyShapes = false;
};

// --verify-shapes: the inferred shapes against a real CPU run (import/shape_check.h). 1 on a
// mismatch.
int runVerifyShapes(const InspectArgs& a, const import::ImportOptions& options) {
  const import::ShapeCheckResult r = import::checkShapes(a.model, options);
  if (a.json) {
    nlohmann::json mismatches = nlohmann::json::array();
    for (const import::ShapeMismatch& m : r.mismatches)
      mismatches.push_back({{"node", m.node}, {"op", m.op}, {"scope", m.scope}, {"source", m.loc.str()},
                            {"output", m.output}, {"value", m.value}, {"inferred", m.inferred},
                            {"actual", m.actual}, {"message", m.message()}});
    std::cout << nlohmann::json{{"values", r.values}, {"mismatches", mismatches}}.dump(1) << "\n";
  } else if (r.ok()) {
    std::cout << fmt::format("shapes verified: {} values\n", r.values);
  } else {
    for (const import::ShapeMismatch& m : r.mismatches) std::cout << "shape mismatch: " << m.message() << "\n";
    std::cout << fmt::format("{} of {} values differ from LibTorch's\n", r.mismatches.size(), r.values);
  }
  return r.ok() ? 0 : 1;
}

int runInspect(const InspectArgs& a) {
  import::ImportOptions options;
  options.metaWeights = true;  // shapes suffice: the weights are not read
  for (const std::string& in : a.inputs) options.inputOverrides.push_back(import::parseInputArg(in));
  if (a.verifyShapes) return runVerifyShapes(a, options);
  auto start = std::chrono::steady_clock::now();
  ir::Graph g = import::importModel(a.model, options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ir::GraphSummary summary = ir::summarize(g, a.depth);

  if (!a.dotFile.empty()) {
    ir::DotOptions dot;
    dot.depth = a.depth < 0 ? -1 : std::max(a.depth, 2);
    writeTextFile(a.dotFile, ir::toDot(g, dot));
  }
  if (a.json) {
    nlohmann::json doc = {{"summary", ir::toJson(summary)},
                          {"graph", ir::toJson(g)},
                          {"importSeconds", seconds}};
    std::cout << doc.dump(1) << "\n";
  } else {
    std::cout << ir::formatSummaryTable(g, summary);
    std::cout << fmt::format("Imported {} nodes in {:.2f} s.", g.nodes.size(), seconds);
    if (!a.dotFile.empty()) std::cout << fmt::format(" Graph written to {}.", a.dotFile);
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

void addInspectCommand(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Import a TorchScript model and describe it: parameters, forward FLOPs, activation bytes "
      "and op counts per module scope, totals, and diagnostics for anything unsupported.");
  cmd->add_option("MODEL", args->model, "TorchScript file (.pt) whose forward returns the loss")
      ->required();
  cmd->add_option("--input,-i", args->inputs,
                  "Shape and dtype of a forward argument, NAME=DIMxDIMx...[:DTYPE[:LOW..HIGH]], e.g. "
                  "x=64x3x32x32:float32; repeatable; overrides the file's hap/inputs.json")
      ->type_name("SPEC");
  cmd->add_option("--depth,-d", args->depth,
                  "Module-scope depth of the table rows (-1 = full scopes, 0 = one row); list "
                  "indices stay with their parent, so depth 1 gives one row per layer")
      ->capture_default_str();
  cmd->add_option("--dot", args->dotFile,
                  "Write the graph as Graphviz DOT, clustered by module scope (render with "
                  "`dot -Tsvg FILE`)")
      ->type_name("FILE");
  cmd->add_flag("--json", args->json,
                "Print the summary and the whole graph as JSON instead of the table");
  cmd->add_flag("--verify-shapes", args->verifyShapes,
                "Run the model once on CPU (its weights, random inputs within each integer input's "
                "range) and compare every node's every output shape and dtype with the inferred "
                "ones; prints 'shapes verified: N values' or each mismatch (exit status 1)");
  cmd->callback([args, &exitCode] { exitCode = runInspect(*args); });
}

}  // namespace hap::cli
