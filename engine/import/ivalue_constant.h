// A folded (non-tensor) argument as the IR keeps it: ir::Constant from a LibTorch IValue. For the
// importer's own files only (it names LibTorch types; no other engine header includes it).
#pragma once

#include <ATen/core/ivalue.h>

#include "engine/ir/graph.h"

namespace hap::import {

// None, bool, int, double, string, int/double/bool lists and devices (their printed form) map to
// the matching alternative; any other value is kept as TorchScript prints it.
ir::Constant toConstant(const c10::IValue& v);

}  // namespace hap::import
