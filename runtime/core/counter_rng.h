// A counter-based random generator: Philox-4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel
// random numbers: as easy as 1, 2, 3", SC 2011), written here from the paper's definition, and
// the dropout keep-mask of any piece of a tensor drawn from it.
//
// Contract:
// - philox4x32_10(counter, key) is the paper's keyed bijection of 128-bit counters: 10 rounds,
//   multipliers 0xD2511F53 and 0xCD9E8D57, key increments 0x9E3779B9 and 0xBB67AE85. It gives the
//   paper's published known-answer vectors (tests/runtime/tst_counter_rng.cpp checks them).
// - A stream is a 64-bit key (its low 32 bits are the Philox key's first word). Its word i
//   (i = 0, 1, ...) is word i mod 4 of the block at counter (low and high 32 bits of i / 4, 0, 0).
//   A word depends on (key, i) alone: any words of a stream can be computed in any order, on any
//   machine, by any number of threads, and are the same words.
// - keepThreshold(q) is round(q · 2^32) clamped to [0, 2^32]; an element with word w is kept
//   when w < threshold, so the chance of keeping it is q to within 2^-33.
// - keepMask writes one byte per element (1 kept, 0 dropped) of a box of a row-major tensor of
//   shape `full` (a piece: `start` and `length` per dimension, every start + length within full),
//   the box's elements in row-major order. Element e's word is word flatIndex(e) of the stream,
//   its flat index in the FULL tensor. So the masks of the pieces of any partition of a tensor,
//   put together, are exactly the mask of the whole tensor drawn with the same key. A tensor of
//   rank 0 is one element (full and the box empty). keepMaskRows writes the box's rows (every
//   index but the last) [rowBegin, rowEnd) only, at out + row · length.back(), so that threads
//   can share one box.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace hap::runtime {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// Word `index` of stream `key` (see the contract).
uint32_t streamWord(uint64_t key, uint64_t index);

uint64_t keepThreshold(double keepProbability);

// The number of rows of a box (the product of every length but the last; 1 for rank 0 or 1).
int64_t boxRows(std::span<const int64_t> length);

void keepMask(uint64_t key, uint64_t threshold, std::span<const int64_t> full,
              std::span<const int64_t> start, std::span<const int64_t> length, uint8_t* out);
void keepMaskRows(uint64_t key, uint64_t threshold, std::span<const int64_t> full,
                  std::span<const int64_t> start, std::span<const int64_t> length, int64_t rowBegin,
                  int64_t rowEnd, uint8_t* out);

}  // namespace hap::runtime
