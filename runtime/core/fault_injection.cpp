#include "runtime/core/fault_injection.h"

#include <cstdlib>
#include <string>

#include "runtime/core/runtime_error.h"

namespace hap::runtime {

Fault injectedFault() {
  static const Fault fault = [] {
    const char* text = std::getenv("HAP_INJECT_FAULT");
    const std::string name = text ? text : "";
    if (name.empty()) return Fault::None;
    if (name == "double-all-reduce") return Fault::DoubleAllReduce;
    if (name == "drop-reduction") return Fault::DropReduction;
    if (name == "wrong-slice") return Fault::WrongSlice;
    if (name == "local-batch-stats") return Fault::LocalBatchStatistics;
    throw RuntimeError("HAP_INJECT_FAULT is '" + name +
                       "'; it takes double-all-reduce, drop-reduction, wrong-slice or local-batch-stats (tests only)");
  }();
  return fault;
}

}  // namespace hap::runtime
