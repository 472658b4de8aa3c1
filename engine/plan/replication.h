// Data parallelism across machines around a per-machine program (Plan::Replication): what makes
// `hap plan --baseline megatron` an executable plan.
//
// A model is data parallel across M machines when the data-parallel rules give a program over M
// ranks at even shares that needs no communication but the parameters' gradient sums: every
// value is either split along its batch dimension or the same on every machine, and only the loss
// is a sum of per-machine parts. The planner proves this by searching that program (the
// data-parallel baseline's forms, plan/baselines.h) on the model at the global batch, and reads
// off what the runtime needs: the batch dimension of every input and every random op's output,
// and how the machines' losses combine.
#pragma once

#include <string>

#include "engine/base/error.h"
#include "engine/ir/graph.h"
#include "engine/plan/plan.h"

namespace hap::plan {

// A model that cannot be replicated across machines this way; the message says why (the node,
// the collective it would need, or the loss) and what to do.
class NotReplicable : public Error {
 public:
  using Error::Error;
};

// The Replication of `machines` copies of a program planned on `machine` (the model imported at
// the global batch divided by `machines`: import::dividedBatch) when `global` is the same model at the
// global batch. allReduceSeconds is left 0 (the caller prices the gradient sums). Throws
// NotReplicable when the two graphs differ in more than their batch size, the global batch does
// not divide by `machines`, the data-parallel program needs a collective in forward, or the loss
// is not a sum or mean over the batch.
Replication replicationFor(const ir::Graph& global, const ir::Graph& machine, int machines);

}  // namespace hap::plan
