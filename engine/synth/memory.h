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
  Affine bytes;
};

// One term per value the program keeps, largest full size first.
std::vector<MemoryTerm> memoryTerms(const CostTable& table, const Program& program,
                                    const CostOptions& options);
// The sum of the terms for a device that has share `share` in every segment (messages, bounds).
Affine total(const std::vector<MemoryTerm>& terms);
// Bytes per device (rank) at the table's shares.
std::vector<double> deviceMemory(const CostTable& table, const Program& program, const CostOptions& options);

}  // namespace hap::synth
