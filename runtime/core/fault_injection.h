// Faults the runtime makes on request, for the exactness check's mutation test
// (tests/runtime/tst_exactness.cpp checkerCatchesFaults): each is a bug the check must catch.
// HAP_INJECT_FAULT names one; unset (every real run), the runtime makes none.
//   double-all-reduce    the replicated parameters' gradients are all-reduced twice
//   drop-reduction       they are not all-reduced (each rank keeps its partial sum)
//   wrong-slice          a parameter's piece is read from the next rank's range
//   local-batch-stats    synchronised batch norm uses each rank's own statistics
#pragma once

#include <cstdint>

namespace hap::runtime {

enum class Fault : uint8_t { None, DoubleAllReduce, DropReduction, WrongSlice, LocalBatchStatistics };

// The fault HAP_INJECT_FAULT names, read once. RuntimeError naming the variable and the choices
// when it names none of them.
Fault injectedFault();

}  // namespace hap::runtime
