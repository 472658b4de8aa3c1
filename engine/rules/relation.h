// Relations between a distributed value and its reference value (../shared/DESIGN.md §3): the
// vocabulary rules state their Hoare triples in, below both the rules and the search
// (engine/synth/fact.h makes them the search's facts). A relation is one of
//   I     identity: every device holds all of the value;
//   R     reduce: every device holds a same-shape partial; their element-wise sum is the value;
//   G(d)  gathered along d: device j holds slice j along dimension d (lengths from the
//         dimension's class and the ratios, possibly uneven or zero);
//   I*    (parameters only) identity whose gradient is formed by sufficient-factor broadcasting
//         (SFB) in the consumer instead of an all-reduce; only SFB rule variants accept it.
#pragma once

#include <cstdint>
#include <string>

namespace hap::rules {

using Rel = int8_t;
inline constexpr Rel kIdentity = -1;
inline constexpr Rel kReduce = -2;
inline constexpr Rel kIdentitySfb = -3;
inline constexpr Rel gather(int dim) { return static_cast<Rel>(dim); }
inline constexpr bool isGather(Rel r) { return r >= 0; }

// Largest tensor rank whose dimensions may be sharded (relations fit a 16-bit form mask).
inline constexpr int kMaxShardedRank = 13;

// "I", "R", "I*", "G(2)".
std::string formatRel(Rel r);

// A set of relations held for one value, as a bit mask: bit 0 = I, 1 = R, 2 = I*, 3 + d = G(d).
using FormMask = uint16_t;
inline constexpr FormMask bit(Rel r) { return static_cast<FormMask>(1u << (r >= 0 ? 3 + r : -1 - r)); }
// The relation of bit b of a FormMask (the inverse of bit()).
inline constexpr Rel relOfBit(int b) { return static_cast<Rel>(b >= 3 ? b - 3 : -1 - b); }

// Whether a value holding `m` has form r without communication: I gives every G(d) by a local
// slice and R by keeping the value on rank 0 only.
inline constexpr bool holds(FormMask m, Rel r) {
  if (m & bit(r)) return true;
  return (m & bit(kIdentity)) && (r >= 0 || r == kReduce);
}
// Adds form r to m, normalised: I subsumes every G(d) and R (derivable locally from it), so
// states that differ only in those compare equal.
inline constexpr FormMask addForm(FormMask m, Rel r) {
  m = static_cast<FormMask>(m | bit(r));
  if (m & bit(kIdentity)) m = static_cast<FormMask>(m & (bit(kIdentity) | bit(kIdentitySfb)));
  return m;
}

}  // namespace hap::rules
