// Expected failures of the runtime: an unreachable peer, a plan that does not match its model, a
// malformed data file, a failed collective. Messages name the rank, file or node and say what to
// do (engine/base/error.h's contract).
#pragma once

#include "engine/base/error.h"

namespace hap::runtime {

class RuntimeError : public hap::Error {
 public:
  using hap::Error::Error;
};

}  // namespace hap::runtime
