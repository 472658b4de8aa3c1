// The ranks' communication: one c10d process group (ProcessGroupGloo on CPU, ProcessGroupNCCL
// when LibTorch has CUDA and tensors live on a GPU) over a TCPStore rendezvous (../shared/DESIGN.md
// §5).
//
// Contract of every collective here:
// - Every rank calls the same collectives in the same order with the same `lengths` (the plan's
//   exact lengths, one per rank, summing to the dimension's size; zero allowed).
// - Not differentiable (collectives.h wraps them in autograd functions); dtypes are preserved
//   (buffers are never forced to float32).
// - Uneven pieces work for both methods: Padded moves n × the largest piece (pieces padded to the
//   largest, then trimmed), Grouped moves the actual pieces (one broadcast / reduce per rank).
// - Collectives missing from Gloo in LibTorch 1.13 (reduce_scatter, _allgather_base, list
//   alltoall) are emulated with supported ones; results are identical on every rank where the
//   result is replicated (all-reduce and all-gather results are bit-identical across ranks).
// - A peer that does not answer within WorkerEnv::timeout raises RuntimeError naming the
//   collective; it never hangs forever. A failed collective also names the ranks that gave no
//   sign of life (liveness.h: stopped, hung or dead), at the cost of one 1.5 s look.
// - All-reduces (allReduce, allReduceAsync) run the algorithm cost::allReduceCost names for the
//   tensor's bytes on the plan's cluster: hierarchical ones over per-machine and cross-machine
//   groups (a reduce-scatter inside each machine, an all-reduce of each chunk across machines,
//   an all-gather inside each machine), flat ones over all ranks. Either way every rank ends
//   with the same bits.
//
// Where it is done: communicator.cpp (the rendezvous, the process groups, the flat and the
// hierarchical all-reduce), uneven_pieces.h (the algorithms of allGather, reduceScatter and
// allToAll), job_chain.h (the gradient channel's hierarchical all-reduces, one at a time).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/cost/cluster.h"
#include "runtime/core/worker_env.h"

namespace hap::runtime {

enum class CommMethod { Padded, Grouped };

class Communicator {
 public:
  // Rendezvous with the other ranks (rank 0 hosts the TCPStore at masterAddr:masterPort) and
  // create the process group. `cuda`: use NCCL on GPU LOCAL_RANK, made the current device
  // (requires a CUDA build and that GPU; RuntimeError otherwise).
  // A world of one needs no store and no peers.
  // `cluster`: the cluster the plan was made for (Plan::cluster, whose devices are the ranks).
  // When it is a machine grid (cost::machineGrid) with one device per rank, connect also creates
  // the groups of the hierarchical all-reduce; null, or any other cluster: all-reduces are flat.
  static std::unique_ptr<Communicator> connect(const WorkerEnv& env, bool cuda = false,
                                               const cost::Cluster* cluster = nullptr);

  // A replicated plan's communicators (plan::Replication): WORLD_SIZE ranks on `machines`
  // machines of k = WORLD_SIZE / machines ranks, world rank r being rank r % k of machine r / k.
  // None has a hierarchy: their all-reduces are flat. Only `machine` has a gradient channel
  // (allReduceAsync).
  struct Replicated {
    std::unique_ptr<Communicator> world;    // every rank: losses, metrics, traces
    std::unique_ptr<Communicator> machine;  // this rank's machine (rank r % k): the program's collectives
    std::unique_ptr<Communicator> peers;    // rank r % k of every machine (rank r / k): gradient sums
  };
  // Rendezvous as connect does, creating the three. RuntimeError when WORLD_SIZE is not a multiple
  // of `machines`.
  static Replicated connectReplicated(const WorkerEnv& env, bool cuda, int machines);
  // A pipelined plan's communicators (runtime/train/pipeline_trainer.h): `groups` partitions the
  // world's ranks into stage groups (each ascending). `world`: every rank (losses, norms,
  // metrics); `group`: this rank's stage group (group rank = its place there), with a gradient
  // channel; flat all-reduces. RuntimeError when `groups` is not such a partition.
  struct Grouped {
    std::unique_ptr<Communicator> world, group;
  };
  static Grouped connectGroups(const WorkerEnv& env, bool cuda, const std::vector<std::vector<int>>& groups);
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The rank's device: GPU LOCAL_RANK with NCCL (connect's `cuda`), else the CPU.
  virtual c10::Device device() const = 0;

  // Element-wise sum over ranks, in place.
  virtual void allReduce(at::Tensor& t) = 0;
  // Element-wise maximum over ranks, in place.
  virtual void allReduceMax(at::Tensor& t) = 0;
  // `local` is this rank's piece along `dim` (length lengths[rank]); returns the concatenation
  // of all pieces in rank order.
  virtual at::Tensor allGather(const at::Tensor& local, int dim, const std::vector<int64_t>& lengths,
                               CommMethod method) = 0;
  // `full` is this rank's same-shape partial; returns this rank's piece (along `dim`, length
  // lengths[rank]) of the sum over ranks.
  virtual at::Tensor reduceScatter(const at::Tensor& full, int dim, const std::vector<int64_t>& lengths,
                                   CommMethod method) = 0;
  // `local` is this rank's piece of a tensor cut along `fromDim` by `fromLengths`; returns its
  // piece of the same tensor cut along `toDim` by `toLengths`. fromDim may equal toDim (a
  // re-cut between segments; returns `local` untouched when the lengths agree).
  virtual at::Tensor allToAll(const at::Tensor& local, int fromDim, const std::vector<int64_t>& fromLengths,
                              int toDim, const std::vector<int64_t>& toLengths) = 0;
  // Rank `root`'s tensor on every rank, in place.
  virtual void broadcast(at::Tensor& t, int root) = 0;
  virtual void barrier() = 0;

  // An all-reduce in flight: wait() returns once `t` holds the sum (RuntimeError on a failure or
  // a peer that does not answer within the timeout). Destroying it unwaited waits first.
  class Pending {
   public:
    virtual ~Pending() = default;
    virtual void wait() = 0;
  };
  // Starts an element-wise sum over ranks of contiguous `t`, in place, on the gradient channel:
  // a process group of its own, so that it runs beside (and never interleaves with) the
  // collectives above, which the backward pass issues meanwhile. Every rank starts the same
  // gradient all-reduces in the same order; `t` is not touched until wait() returns.
  virtual std::unique_ptr<Pending> allReduceAsync(at::Tensor& t) = 0;

  // The sum all-reduces run so far (allReduce and allReduceAsync; not allReduceMax), by
  // algorithm, and the machine grid of the hierarchical ones (0 × 0 when there is none).
  struct AllReduceCounts {
    int64_t flat = 0, hierarchical = 0;
    int machines = 0, perMachine = 0;
  };
  virtual AllReduceCounts allReduceCounts() const = 0;
};

// The piece of `full` that rank `rank` holds when `full` is cut along `dim` by `lengths` (a view).
at::Tensor localPiece(const at::Tensor& full, int dim, const std::vector<int64_t>& lengths, int rank);

}  // namespace hap::runtime
