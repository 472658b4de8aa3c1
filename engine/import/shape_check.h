// Inferred shapes checked against LibTorch (issue 33, item 3).
//
// The importer infers every value's shape and dtype without computing anything (meta tensors, a
// few shape formulas, CPU zeros where an op has no meta kernel). A meta kernel can disagree with
// the kernel that will run (LibTorch 1.13's _embedding_bag gives offset2bag [0] where the CPU
// kernel gives one entry per index), and then every rank stops at its first step. checkShapes
// imports the model twice, once as planned (Execution::Meta) and once running every op on real
// CPU tensors with the file's weights and random inputs drawn within each integer input's
// [low, high) (Execution::Real, as the worker's data does), and compares every node's every
// output (list and tuple outputs flattened, as ir::Node::outputs holds them): shape and dtype.
//
// localOutputShapes answers the same question for one node on other (a rank's local) input
// shapes: the plan verifier's shape function (plan/verifier.h), which `hap plan` and every opened
// plan use to refuse a plan whose local shapes disagree with what the op computes.
//
// Plain engine types only; LibTorch stays in shape_check.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/import/importer.h"
#include "engine/ir/graph.h"

namespace hap::import {

struct ShapeMismatch {
  ir::NodeId node = ir::kNone;  // of the inferred graph; kNone when the runs diverge before any node
  std::string op, scope;        // "aten::_embedding_bag", "bag" ("" = top level)
  ir::SourceLoc loc;
  int output = -1;        // index among the node's outputs (lists flattened); -1: the node itself
  std::string value;      // the output's name
  std::string inferred;   // "[0] int64"
  std::string actual;     // "[40] int64", or why the real run stopped
  // "node %offset2bag = aten::_embedding_bag (scope bag, model.py:12): output 1 'offset2bag' is
  // inferred [0] int64, LibTorch computes [40] int64"
  std::string message() const;
};

struct ShapeCheckResult {
  int64_t values = 0;  // node outputs compared
  std::vector<ShapeMismatch> mismatches;
  bool ok() const { return mismatches.empty(); }
};

// Imports `path` with `options` (Execution is ignored: both runs are made) and compares. Throws
// as importModel does when the model does not import at all (the inferred run); a real run that
// fails where inference went through is reported as a mismatch of the node it failed on.
ShapeCheckResult checkShapes(const std::string& path, const ImportOptions& options = {});

// The comparison alone: `inferred` (a Meta import) against `actual` (a Real import of the same
// model and inputs), value by value. Graphs that differ in structure give one mismatch at the
// first node where they part.
ShapeCheckResult compareShapes(const ir::Graph& inferred, const ir::Graph& actual);

// What LibTorch computes for node `n` of `g` on tensor inputs of `inputShapes` (one per
// n.tensorInputs(), with their dtypes from `g`): each output's shape, lists flattened. Runs the
// op on CPU zeros (the kernels the worker runs) when its tensor inputs take at most
// `cpuLimitBytes` and the node at most 5e7 forward FLOPs, else on meta tensors. nullopt when it
// cannot tell: a hap:: op, an operator not in the registry, an argument it cannot rebuild, an op
// whose shape depends on input values (a boolean index, repeat_interleave by a tensor, ...), or
// the op failing on these shapes (zeros are not the data; the runtime says what fails there).
std::optional<std::vector<ir::Shape>> localOutputShapes(const ir::Graph& g, const ir::Node& n,
                                                        const std::vector<ir::Shape>& inputShapes,
                                                        int64_t cpuLimitBytes = int64_t{64} << 20);

}  // namespace hap::import
