// Point-to-point transfers between world ranks (../shared/DESIGN.md §3 "Pipeline stages"): the
// boundary activations a pipeline stage sends to a later one, and their gradients coming back
// (runtime/train/pipeline_trainer.h says which rank sends what to whom).
//
// Contract:
// - Two c10d process groups over every world rank, of their own (they never interleave with the
//   stage programs' collectives or the world's): the Forward channel carries activations, the
//   Backward channel gradients. On NCCL each channel is one stream per pair of ranks, on which a
//   pair's transfers run in the order both post them: the 1F1B schedule posts a link's
//   activations in micro-batch order on both sides, and its gradients likewise, so neither
//   channel can deadlock however the two directions interleave.
// - send() starts a transfer and returns; the tensor is kept until flush() has waited for every
//   transfer started (a send completes when its receiver has posted the receive). receive()
//   blocks until the data is there. Sender and receiver pass the same tag (Gloo matches on it;
//   NCCL on the order), shape and dtype; the receiver knows them from the plan.
// - Dtypes are preserved (bfloat16 and bool travel bit for bit as half and uint8).
// - A peer that does not answer within WorkerEnv::timeout raises RuntimeError naming this rank,
//   the peer, what was moved and the timeout; nothing hangs forever.
// - With NCCL (a CUDA build, tensors on this rank's GPU) transfers run on GPU tensors; on Gloo on
//   CPU tensors. A tensor elsewhere travels through a copy.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/core/worker_env.h"

namespace hap::runtime {

class PointToPoint {
 public:
  enum class Channel { Forward, Backward };

  // Joins the two channels' process groups over every rank (through a TCPStore client of the
  // store rank 0 hosts: call after Communicator::connect*, whose store must outlive this).
  // `device`: the communicator's (a GPU: NCCL).
  static std::unique_ptr<PointToPoint> connect(const WorkerEnv& env, c10::Device device);
  virtual ~PointToPoint() = default;

  virtual void send(const at::Tensor& t, int peer, int tag, Channel channel,
                    const std::string& what) = 0;
  virtual at::Tensor receive(const std::vector<int64_t>& shape, at::ScalarType dtype, int peer,
                             int tag, Channel channel, const std::string& what) = 0;
  // Waits for every send started (RuntimeError naming the first that failed).
  virtual void flush() = 0;
};

}  // namespace hap::runtime
