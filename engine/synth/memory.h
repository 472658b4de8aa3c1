// Memory per device of a program (docs/synthesis.md "Memory"): each parameter's persistent form
// times (weights + gradient + optimizer state); every form of a value that needs a gradient,
// kept for backward; buffers' and constants' forms. Every device holds the same tensors, the G
// forms scaled by its share, so a device's bytes are constant + perShare * share.
#pragma once

#include <vector>

#include "engine/synth/cost_table.h"
#include "engine/synth/program.h"

namespace hap::synth {

struct MemoryTerm {
  ir::ValueId value;
  int segment;   // the value's segment: its shares scale bytes.perShare
  Rel cut;       // the value's first G form (kIdentity: none): its shares (CostTable::formShares) scale
                 // bytes.perShare, also for the value's other G forms
  Affine bytes;
  Affine state;  // of `bytes`, a parameter's gradient and optimizer state (zero for other values)
};

// A device's predicted memory by what it holds (the sum is deviceMemory's figure).
struct MemoryBreakdown {
  double parameters = 0;   // the parameters' persistent forms
  double gradients = 0;    // their gradients, in the same forms
  double optimizer = 0;    // optimizer state (CostOptions::optimizerStateFactor per parameter byte)
  double activations = 0;  // activations kept for backward
  double other = 0;        // inputs, buffers and constants
  double total() const { return parameters + gradients + optimizer + activations + other; }
};

// One term per value the program keeps, largest full size first.
std::vector<MemoryTerm> memoryTerms(const CostTable& table, const Program& program,
                                    const CostOptions& options);
// The sum of the terms for a device that has share `share` in every segment (messages, bounds).
Affine total(const std::vector<MemoryTerm>& terms);
// Bytes per device (rank) at the table's shares.
std::vector<double> deviceMemory(const CostTable& table, const Program& program, const CostOptions& options);
// The same by kind, per device.
std::vector<MemoryBreakdown> deviceMemoryBreakdown(const CostTable& table, const Program& program,
                                                   const CostOptions& options);

}  // namespace hap::synth
