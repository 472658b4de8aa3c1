// What the user has selected, shared by every view: a node, a value, or a module scope.
#pragma once

namespace hap::studio {

struct Selection {
  enum class Kind { None, Node, Value, Scope };
  Kind kind = Kind::None;
  int id = -1;  // NodeId, ValueId or ScopeId

  static Selection node(int n) { return {Kind::Node, n}; }
  static Selection value(int v) { return {Kind::Value, v}; }
  static Selection scope(int s) { return {Kind::Scope, s}; }
  bool empty() const { return kind == Kind::None; }
  bool operator==(const Selection&) const = default;
};

}  // namespace hap::studio
