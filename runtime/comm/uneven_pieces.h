// The collectives on uneven pieces (communicator.h's allGather, reduceScatter and allToAll, with
// the plan's exact lengths per rank) as algorithms over four calls of one process group
// (PieceGroup). The algorithms decide what moves: pieces padded to the longest and trimmed
// (CommMethod::Padded), sent one rank at a time (CommMethod::Grouped), or exchanged as uneven
// chunks (all-to-all); the group moves it (communicator.cpp: c10d on Gloo or NCCL, each failure a
// RuntimeError naming the collective). Gloo in LibTorch 1.13 has no reduce_scatter,
// _allgather_base or list alltoall, hence these emulations; runtime/README.md "Communication"
// gives the calls and traffic of each.
//
// Contract: communicator.h's, for these three; in particular the lengths (and dimensions) are
// checked first, RuntimeError naming the collective when they do not fit the tensor or the world,
// and every rank computes the same decisions (whether anything moves, the counts) from the
// lengths alone. The algorithms take `local`/`full` on the group's device and record no autograd.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "runtime/comm/communicator.h"

namespace hap::runtime {

// What the algorithms need of a process group: its size and this rank's place, and four calls on
// contiguous tensors of its device, each blocking until its part is done. `what` names the
// collective and `subject` the tensor it was asked for, for the group's failure messages. The
// algorithms call none of them in a world of one.
class PieceGroup {
 public:
  virtual ~PieceGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // outputs[k] (one per rank, each the shape of `input`) receives rank k's `input`, bit for bit.
  virtual void gatherInto(const std::vector<at::Tensor>& outputs, const at::Tensor& input,
                          const char* what, const at::Tensor& subject) = 0;
  // Rank `root`'s `t` into `t` on every rank, bit for bit.
  virtual void broadcastFrom(const at::Tensor& t, int root, const char* what,
                             const at::Tensor& subject) = 0;
  // The sum over ranks of `t` into rank `root`'s `t` (the others' may serve as scratch).
  virtual void sumInto(const at::Tensor& t, int root, const char* what,
                       const at::Tensor& subject) = 0;
  // Flat `send`, cut by `sendCounts` (the k-th part to rank k), into flat `received`, cut by
  // `receiveCounts` (the k-th part from rank k), bit for bit; empty counts: equal parts.
  virtual void exchange(const at::Tensor& received, const at::Tensor& send,
                        const std::vector<int64_t>& receiveCounts,
                        const std::vector<int64_t>& sendCounts, const char* what,
                        const at::Tensor& subject) = 0;
};

// Communicator::allGather: the concatenation along `dim` of every rank's `local`.
at::Tensor gatherPieces(PieceGroup& group, const at::Tensor& local, int dim,
                        const std::vector<int64_t>& lengths, CommMethod method);
// Communicator::reduceScatter: this rank's piece along `dim` of the sum of every rank's `full`.
at::Tensor scatterSums(PieceGroup& group, const at::Tensor& full, int dim,
                       const std::vector<int64_t>& lengths, CommMethod method);
// Communicator::allToAll: this rank's piece under the cut (toDim, toLengths) of the tensor whose
// pieces under (fromDim, fromLengths) the ranks hold.
at::Tensor exchangePieces(PieceGroup& group, const at::Tensor& local, int fromDim,
                          const std::vector<int64_t>& fromLengths, int toDim,
                          const std::vector<int64_t>& toLengths);

}  // namespace hap::runtime
