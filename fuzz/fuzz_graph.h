// The model the plan target verifies plans against, built in C++ so that the fuzz build needs no
// LibTorch: x[8, 16] -> linear(32) -> relu -> linear(4) -> cross_entropy(y) -> loss, the zoo's
// "mlp" in miniature. fuzz_plan_seeds writes the plans of fuzz/corpus/fuzz_plan/ for it, so the
// seeds verify and the fuzzer starts deep inside the verifier.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ir/op_cost.h"

namespace hap::fuzz {

inline ir::Arg tensorArg(const std::string& name, ir::ValueId id) {
  ir::Arg a;
  a.name = name;
  a.type = "Tensor";
  a.kind = ir::Arg::Kind::Tensor;
  a.values = {id};
  return a;
}

inline ir::Arg constantArg(const std::string& name, ir::Constant c) {
  ir::Arg a;
  a.name = name;
  a.kind = ir::Arg::Kind::Constant;
  a.constant = std::move(c);
  return a;
}

inline ir::ValueId addOp(ir::Graph& g, const std::string& op, std::vector<ir::Arg> args, ir::Shape out,
                         const std::string& scope) {
  ir::Node n;
  n.op = op;
  n.args = std::move(args);
  n.scope = scope;
  n.outputs.push_back(g.addValue(ir::ValueKind::Activation, "v" + std::to_string(g.values.size()), std::move(out),
                                 ir::DType::Float32));
  return g.node(g.addNode(std::move(n))).outputs[0];
}

inline ir::Graph mlpGraph() {
  constexpr int64_t batch = 8, in = 16, hidden = 32, out = 4;
  ir::Graph g;
  g.sourceFile = "fuzz-mlp.pt";
  auto input = [&](const char* name, ir::Shape shape, ir::DType t) {
    const ir::ValueId id = g.addValue(ir::ValueKind::Input, name, std::move(shape), t);
    g.inputs.push_back(id);
    return id;
  };
  auto param = [&](const char* name, ir::Shape shape) {
    const ir::ValueId id = g.addValue(ir::ValueKind::Parameter, name, std::move(shape), ir::DType::Float32);
    g.parameters.push_back(id);
    return id;
  };
  const ir::ValueId x = input("x", {batch, in}, ir::DType::Float32);
  const ir::ValueId y = input("y", {batch}, ir::DType::Int64);
  const ir::ValueId w1 = param("fc1.weight", {hidden, in}), b1 = param("fc1.bias", {hidden});
  const ir::ValueId w2 = param("fc2.weight", {out, hidden}), b2 = param("fc2.bias", {out});
  const ir::ValueId h = addOp(g, "aten::linear",
                              {tensorArg("input", x), tensorArg("weight", w1), tensorArg("bias", b1)},
                              {batch, hidden}, "fc1");
  const ir::ValueId r = addOp(g, "aten::relu", {tensorArg("self", h)}, {batch, hidden}, "");
  const ir::ValueId logits = addOp(g, "aten::linear",
                                   {tensorArg("input", r), tensorArg("weight", w2), tensorArg("bias", b2)},
                                   {batch, out}, "fc2");
  g.loss = addOp(g, "aten::cross_entropy_loss",
                 {tensorArg("self", logits), tensorArg("target", y), constantArg("weight", std::monostate{}),
                  constantArg("reduction", int64_t{1}), constantArg("ignore_index", int64_t{-100}),
                  constantArg("label_smoothing", 0.0)},
                 {}, "");
  ir::annotateCosts(g);
  g.check();
  return g;
}

}  // namespace hap::fuzz
