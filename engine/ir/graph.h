// The reference graph: the single-device training program after import (../shared/DESIGN.md §3).
//
// Invariants (checked by Graph::check()):
// - Nodes are in a valid execution order: every tensor argument of node n is an input,
//   parameter, buffer, constant, or an output of a node before n.
// - Every value has a static shape and a dtype. Values are never removed.
// - Non-tensor arguments are folded to constants: the graph holds tensor operations only.
// - `loss` is a 0-dim floating-point activation.
// - Value::users lists each consuming node once, in node order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/ir/dtype.h"

namespace hap::ir {

using ValueId = int32_t;
using NodeId = int32_t;
inline constexpr int32_t kNone = -1;

using Shape = std::vector<int64_t>;
int64_t numel(const Shape& shape);
std::string formatShape(const Shape& shape);  // "[64, 128, 768]"

enum class ValueKind : uint8_t {
  Input,       // an argument of forward (a batch of data)
  Parameter,   // a trainable tensor of the module, by qualified name
  Buffer,      // a non-trainable tensor of the module, by qualified name
  Constant,    // a tensor known at import time (folded or embedded in the TorchScript graph)
  Activation,  // an output of a node
};
std::string_view valueKindName(ValueKind k);

struct Value {
  ValueId id = kNone;
  ValueKind kind = ValueKind::Activation;
  // Inputs: the forward argument name; parameters and buffers: the qualified name
  // ("encoder.layers.3.linear1.weight"); activations: the TorchScript debug name.
  std::string name;
  Shape shape;
  DType dtype = DType::Float32;
  NodeId producer = kNone;  // for activations
  int32_t producerOutput = 0;
  // For the output of an in-place op (add_, relu_): the value it overwrites. Readers after the
  // in-place op see this value instead of the original (the importer rebinds them).
  ValueId aliasOf = kNone;
  std::vector<NodeId> users;
  // Inputs of an integer dtype: the declared half-open range of valid values [low, high) (token
  // ids, class labels), when the input specification gives one.
  std::optional<int64_t> low, high;

  int64_t numel() const { return ir::numel(shape); }
  int64_t bytes() const { return numel() * dtypeSize(dtype); }
  int rank() const { return static_cast<int>(shape.size()); }
};

// A non-tensor argument folded at import time. Scalar types (dtype arguments) and devices are
// kept as the integer code and the string TorchScript prints for them.
using Constant = std::variant<std::monostate,  // None
                              bool, int64_t, double, std::string, std::vector<int64_t>,
                              std::vector<double>, std::vector<bool>>;
std::string formatConstant(const Constant& c);

struct Arg {
  enum class Kind : uint8_t { Tensor, TensorList, Constant };
  std::string name;  // the schema's argument name ("input", "weight", "dim")
  std::string type;  // the schema's type ("Tensor", "int[]", "Tensor?", "ScalarType?")
  Kind kind = Kind::Constant;
  std::vector<ValueId> values;  // one for Tensor, any number for TensorList
  Constant constant;            // for Constant
  // TensorList of optional tensors (aten::index's indices, x[:, idx]): where the Nones stand in
  // the list, `values` holding the tensors in order around them.
  std::vector<int> noneAt;
};

struct SourceLoc {
  std::string file;
  int line = 0;
  bool known() const { return line > 0; }
  std::string str() const;  // "model.py:45", or "" when unknown
};

// Forward cost of one node, independent of any device (the cost model turns it into time).
struct NodeCost {
  double flops = 0;          // floating-point operations (a multiply-add counts 2)
  int64_t bytesRead = 0;     // tensor bytes read from memory
  int64_t bytesWritten = 0;  // tensor bytes written (0 for views)
};

struct Node {
  NodeId id = kNone;
  std::string op;        // qualified op name: "aten::linear"
  std::string overload;  // schema overload name ("Tensor", "int", ""), for exact dispatch
  std::vector<Arg> args;         // in schema order
  std::vector<ValueId> outputs;  // tensor outputs (list outputs such as chunk's, flattened)
  std::string scope;             // module scope: "encoder.layers.3.self_attn" ("" = top level)
  SourceLoc loc;
  bool inplace = false;  // mutates its first argument; outputs[0].aliasOf names the old value
  NodeCost cost;

  // Tensor arguments in argument order (a list argument contributes all its elements).
  std::vector<ValueId> tensorInputs() const;
  const Arg* arg(std::string_view name) const;  // nullptr if the schema has no such argument
};

struct Diagnostic {
  enum class Severity : uint8_t { Warning, Error };
  Severity severity = Severity::Warning;
  NodeId node = kNone;  // kNone when not tied to a node
  std::string message;
};

class Graph {
 public:
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<ValueId> inputs;      // forward arguments, in order
  std::vector<ValueId> parameters;  // in order of first use
  std::vector<ValueId> buffers;     // in order of first use
  std::vector<ValueId> constants;
  ValueId loss = kNone;
  std::vector<Diagnostic> diagnostics;
  std::string sourceFile;  // the model file it was imported from
  std::string modelInfo;   // JSON object describing the model (from hap/inputs.json), or ""

  ValueId addValue(ValueKind kind, std::string name, Shape shape, DType dtype);
  // Appends a node, sets its id, registers it as a user of its tensor arguments and as the
  // producer of its outputs (which must be fresh activations).
  NodeId addNode(Node node);

  const Value& value(ValueId id) const { return values.at(static_cast<size_t>(id)); }
  Value& value(ValueId id) { return values.at(static_cast<size_t>(id)); }
  const Node& node(NodeId id) const { return nodes.at(static_cast<size_t>(id)); }
  Node& node(NodeId id) { return nodes.at(static_cast<size_t>(id)); }

  int64_t parameterCount() const;  // elements over all parameters

  // Describes a node for messages: "%x.5 = aten::linear (scope encoder.fc1, model.py:12)".
  std::string describe(NodeId id) const;

  // Throws std::logic_error naming the first broken invariant (see the file comment).
  void check() const;
};

}  // namespace hap::ir
