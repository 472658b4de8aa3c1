#include "runtime/train/parameters.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <numeric>
#include <stdexcept>

#include "runtime/comm/communicator.h"

namespace hap::runtime {

int64_t pieceOffset(const LocalParameter& p, int rank) {
  if (p.replicated()) return 0;
  return std::accumulate(p.lengths.begin(), p.lengths.begin() + rank, int64_t{0});
}

at::Tensor pieceOf(const LocalParameter& p, const at::Tensor& full, int rank) {
  if (p.replicated()) return full;
  return full.narrow(p.dim, pieceOffset(p, rank), p.lengths.at(static_cast<size_t>(rank)));
}

at::Tensor gatherFull(Communicator& comm, const LocalParameter& p, const at::Tensor& piece) {
  if (p.replicated()) return piece.detach();
  return comm.allGather(piece.detach(), p.dim, p.lengths, CommMethod::Padded);
}

void checkLocalParameter(const LocalParameter& p, int rank, int worldSize) {
  auto fail = [&](const std::string& what) {
    throw std::logic_error(fmt::format("parameter '{}' on rank {} of {}: {}", p.name, rank, worldSize, what));
  };
  if (!p.value.defined()) fail("no value");
  if (rank < 0 || rank >= worldSize) fail("rank out of range");
  ir::Shape expected = p.fullShape;
  if (!p.replicated()) {
    if (p.dim >= static_cast<int>(expected.size())) fail(fmt::format("cut dimension {} out of range", p.dim));
    if (p.lengths.size() != static_cast<size_t>(worldSize))
      fail(fmt::format("{} lengths for {} ranks", p.lengths.size(), worldSize));
    int64_t sum = 0;
    for (int64_t l : p.lengths) {
      if (l < 0) fail("negative length");
      sum += l;
    }
    if (sum != expected[static_cast<size_t>(p.dim)])
      fail(fmt::format("lengths sum to {}, dimension {} has {}", sum, p.dim, expected[static_cast<size_t>(p.dim)]));
    expected[static_cast<size_t>(p.dim)] = p.lengths[static_cast<size_t>(rank)];
  }
  if (p.value.sizes().vec() != expected)
    fail(fmt::format("piece has shape {}, expected {}", ir::formatShape(p.value.sizes().vec()),
                     ir::formatShape(expected)));
}

}  // namespace hap::runtime
