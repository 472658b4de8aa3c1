#include "runtime/comm/uneven_pieces.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "runtime/core/runtime_error.h"

namespace hap::runtime {
namespace {

int64_t sum(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

std::vector<int64_t> offsetsOf(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> out(lengths.size(), 0);
  for (size_t i = 1; i < lengths.size(); ++i) out[i] = out[i - 1] + lengths[i - 1];
  return out;
}

// `dim` of a tensor of rank `rank` as a non-negative index (negative counts from the end).
int wrapDim(int64_t rank, int dim, const char* what) {
  const int64_t d = dim < 0 ? dim + rank : dim;
  if (d < 0 || d >= rank)
    throw RuntimeError(
        fmt::format("{}: dimension {} does not exist in a tensor of rank {}; the plan and the "
                    "model disagree, re-plan for this model",
                    what, dim, rank));
  return static_cast<int>(d);
}

// `lengths` has one non-negative entry per rank and sums to `total`.
void checkLengths(const char* what, const std::vector<int64_t>& lengths, int world, int64_t total) {
  bool ok = static_cast<int>(lengths.size()) == world;
  for (int64_t l : lengths) ok = ok && l >= 0;
  if (!ok || sum(lengths) != total)
    throw RuntimeError(
        fmt::format("{}: the piece lengths [{}] are not {} non-negative numbers summing to the "
                    "dimension's size {}; the plan does not match this world or model",
                    what, fmt::join(lengths, ", "), world, total));
}

// `sizes` with entry `dim` replaced by `value`.
std::vector<int64_t> withSize(at::IntArrayRef sizes, int dim, int64_t value) {
  std::vector<int64_t> out(sizes.begin(), sizes.end());
  out[static_cast<size_t>(dim)] = value;
  return out;
}

int64_t numelOf(const std::vector<int64_t>& sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>());
}

}  // namespace

at::Tensor gatherPieces(PieceGroup& group, const at::Tensor& local, int dim,
                        const std::vector<int64_t>& lengths, CommMethod method) {
  const char* what = method == CommMethod::Padded ? "all-gather (padded)" : "all-gather (grouped)";
  const int n = group.size(), rank = group.rank();
  const int d = wrapDim(local.dim(), dim, what);
  checkLengths(what, lengths, n, sum(lengths));
  if (local.size(d) != lengths[static_cast<size_t>(rank)])
    throw RuntimeError(
        fmt::format("{}: rank {} holds a piece of length {} along dimension {}, the plan says {}",
                    what, rank, local.size(d), d, lengths[static_cast<size_t>(rank)]));
  if (n == 1) return local.clone(at::MemoryFormat::Contiguous);

  // Work with the cut dimension in front: every piece is then a contiguous row block.
  const at::Tensor front = local.movedim(d, 0);
  const int64_t total = sum(lengths);
  const std::vector<int64_t> outSizes = withSize(front.sizes(), 0, total);
  at::Tensor out = at::empty(outSizes, local.options());
  const int64_t rowNumel = numelOf(outSizes) / std::max<int64_t>(total, 1);
  const std::vector<int64_t> offsets = offsetsOf(lengths);
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  // Nothing to move (the same on every rank: shapes agree).
  if (rowNumel == 0 || longest == 0) return out.movedim(0, d).contiguous();

  if (method == CommMethod::Padded) {
    // Every piece padded to the longest (zeros, never uninitialised memory), one allgather into
    // views of one buffer, then trimmed.
    at::Tensor padded = at::zeros(withSize(front.sizes(), 0, longest), local.options());
    padded.narrow(0, 0, front.size(0)).copy_(front);
    at::Tensor gathered = at::empty(withSize(front.sizes(), 0, longest * n), local.options());
    std::vector<at::Tensor> outputs;
    for (int k = 0; k < n; ++k) outputs.push_back(gathered.narrow(0, k * longest, longest));
    group.gatherInto(outputs, padded, what, local);
    for (int k = 0; k < n; ++k)
      out.narrow(0, offsets[k], lengths[k]).copy_(gathered.narrow(0, k * longest, lengths[k]));
  } else {
    // One broadcast per rank of its actual piece, straight into its place in the result.
    out.narrow(0, offsets[rank], lengths[rank]).copy_(front);
    for (int k = 0; k < n; ++k) {
      if (lengths[k] == 0) continue;
      group.broadcastFrom(out.narrow(0, offsets[k], lengths[k]), k, what, local);
    }
  }
  return out.movedim(0, d).contiguous();
}

at::Tensor scatterSums(PieceGroup& group, const at::Tensor& full, int dim,
                       const std::vector<int64_t>& lengths, CommMethod method) {
  const char* what =
      method == CommMethod::Padded ? "reduce-scatter (padded)" : "reduce-scatter (grouped)";
  const int n = group.size(), rank = group.rank();
  const int d = wrapDim(full.dim(), dim, what);
  checkLengths(what, lengths, n, full.size(d));
  if (n == 1) return full.clone(at::MemoryFormat::Contiguous);

  const at::Tensor front = full.movedim(d, 0);
  const int64_t mine = lengths[rank];
  const std::vector<int64_t> offsets = offsetsOf(lengths);
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  at::Tensor result = at::empty(withSize(front.sizes(), 0, mine), full.options());
  if (front.numel() == 0) return result.movedim(0, d).contiguous();

  if (method == CommMethod::Padded) {
    // Gloo (1.13) has no reduce_scatter: send piece k, padded to the longest, to rank k with one
    // equal-split alltoall_base, then sum the n received copies locally in rank order.
    at::Tensor send = at::zeros(withSize(front.sizes(), 0, longest * n), full.options());
    for (int k = 0; k < n; ++k)
      send.narrow(0, k * longest, lengths[k]).copy_(front.narrow(0, offsets[k], lengths[k]));
    at::Tensor received = at::empty_like(send);
    group.exchange(received, send, {}, {}, what, full);
    result.copy_(received.narrow(0, 0, mine));
    for (int j = 1; j < n; ++j) result.add_(received.narrow(0, j * longest, mine));
  } else {
    // One reduce per rank of its piece to that rank.
    for (int k = 0; k < n; ++k) {
      if (lengths[k] == 0) continue;
      // A private copy: reduce may use its buffer as scratch on the other ranks.
      at::Tensor piece =
          front.narrow(0, offsets[k], lengths[k]).clone(at::MemoryFormat::Contiguous);
      group.sumInto(piece, k, what, full);
      if (k == rank) result = piece;
    }
  }
  return result.movedim(0, d).contiguous();
}

at::Tensor exchangePieces(PieceGroup& group, const at::Tensor& local, int fromDim,
                          const std::vector<int64_t>& fromLengths, int toDim,
                          const std::vector<int64_t>& toLengths) {
  const char* what = "all-to-all";
  const int n = group.size(), rank = group.rank();
  const int fd = wrapDim(local.dim(), fromDim, what);
  const int td = wrapDim(local.dim(), toDim, what);
  checkLengths(what, fromLengths, n, sum(fromLengths));
  if (local.size(fd) != fromLengths[rank])
    throw RuntimeError(
        fmt::format("{}: rank {} holds a piece of length {} along dimension {}, the plan says {}",
                    what, rank, local.size(fd), fd, fromLengths[rank]));
  const std::vector<int64_t> fullSizes = withSize(local.sizes(), fd, sum(fromLengths));
  checkLengths(what, toLengths, n, fullSizes[td]);
  if (fd == td && fromLengths == toLengths) return local;
  if (n == 1) return local.clone(at::MemoryFormat::Contiguous);

  // chunk(s, k): the part of rank s's piece that rank k holds afterwards. It starts at
  // sourceOffset along toDim inside s's piece and lands at targetOffset along fromDim inside
  // k's new piece (one dimension when fromDim == toDim). Every rank can compute every chunk, so
  // all agree on the counts and on whether anything moves at all.
  const std::vector<int64_t> fromOffsets = offsetsOf(fromLengths), toOffsets = offsetsOf(toLengths);
  struct Chunk {
    std::vector<int64_t> sizes;
    int64_t numel = 0;
    int64_t sourceOffset = 0;
    int64_t targetOffset = 0;
  };
  auto chunk = [&](int s, int k) {
    Chunk c;
    if (fd == td) {
      const int64_t lo = std::max(fromOffsets[s], toOffsets[k]);
      const int64_t hi = std::min(fromOffsets[s] + fromLengths[s], toOffsets[k] + toLengths[k]);
      const int64_t len = std::max<int64_t>(hi - lo, 0);
      c.sizes = withSize(fullSizes, fd, len);
      c.sourceOffset = len ? lo - fromOffsets[s] : 0;
      c.targetOffset = len ? lo - toOffsets[k] : 0;
    } else {
      c.sizes = withSize(withSize(fullSizes, fd, fromLengths[s]), td, toLengths[k]);
      c.sourceOffset = toOffsets[k];
      c.targetOffset = fromOffsets[s];
    }
    c.numel = numelOf(c.sizes);
    return c;
  };

  at::Tensor result = at::empty(withSize(fullSizes, td, toLengths[rank]), local.options());
  int64_t moved = 0;
  std::vector<int64_t> sendCounts(n), recvCounts(n);
  for (int s = 0; s < n; ++s)
    for (int k = 0; k < n; ++k) moved += chunk(s, k).numel;
  for (int k = 0; k < n; ++k) {
    sendCounts[k] = chunk(rank, k).numel;
    recvCounts[k] = chunk(k, rank).numel;
  }
  if (moved == 0) return result;

  // One flat buffer each way, chunks in rank order (the exchange splits along dimension 0).
  at::Tensor send = at::empty({sum(sendCounts)}, local.options());
  at::Tensor received = at::empty({sum(recvCounts)}, local.options());
  int64_t cursor = 0;
  for (int k = 0; k < n; ++k) {
    const Chunk c = chunk(rank, k);
    if (c.numel)
      send.narrow(0, cursor, c.numel)
          .view(c.sizes)
          .copy_(local.narrow(td, c.sourceOffset, c.sizes[td]));
    cursor += c.numel;
  }
  group.exchange(received, send, recvCounts, sendCounts, what, local);
  cursor = 0;
  for (int s = 0; s < n; ++s) {
    const Chunk c = chunk(s, rank);
    if (c.numel)
      result.narrow(fd, c.targetOffset, c.sizes[fd])
          .copy_(received.narrow(0, cursor, c.numel).view(c.sizes));
    cursor += c.numel;
  }
  return result;
}

at::Tensor localPiece(const at::Tensor& full, int dim, const std::vector<int64_t>& lengths,
                      int rank) {
  const int d = wrapDim(full.dim(), dim, "local piece");
  checkLengths("local piece", lengths, static_cast<int>(lengths.size()), full.size(d));
  if (rank < 0 || rank >= static_cast<int>(lengths.size()))
    throw RuntimeError(
        fmt::format("local piece: rank {} has no length in [{}]", rank, fmt::join(lengths, ", ")));
  return full.narrow(d, offsetsOf(lengths)[static_cast<size_t>(rank)],
                     lengths[static_cast<size_t>(rank)]);
}

}  // namespace hap::runtime
