#include "runtime/comm/communicator.h"

#include <c10/core/GradMode.h>
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>
#include <torch/cuda.h>
#ifdef HAP_HAVE_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <future>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "engine/cost/collective_cost.h"
#include "runtime/core/runtime_error.h"

namespace hap::runtime {
namespace {

// The process-group interface both backends implement: ProcessGroup in LibTorch 1.13, Backend in
// 2.x (where ProcessGroup became a wrapper around backends). Same method names and signatures.
#if TORCH_VERSION_MAJOR >= 2
using CommBackend = c10d::Backend;
#else
using CommBackend = c10d::ProcessGroup;
#endif

int64_t sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

std::vector<int64_t> offsetsOf(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> out(lengths.size(), 0);
  for (size_t i = 1; i < lengths.size(); ++i) out[i] = out[i - 1] + lengths[i - 1];
  return out;
}

// `dim` of a tensor of rank `rank` as a non-negative index (negative counts from the end).
int wrapDim(int64_t rank, int dim, const char* what) {
  const int64_t d = dim < 0 ? dim + rank : dim;
  if (d < 0 || d >= rank)
    throw RuntimeError(fmt::format("{}: dimension {} does not exist in a tensor of rank {}; the plan and the "
                                   "model disagree, re-plan for this model",
                                   what, dim, rank));
  return static_cast<int>(d);
}

// `lengths` has one non-negative entry per rank and sums to `total`.
void checkLengths(const char* what, const std::vector<int64_t>& lengths, int world, int64_t total) {
  bool ok = static_cast<int>(lengths.size()) == world;
  for (int64_t l : lengths) ok = ok && l >= 0;
  if (!ok || sum(lengths) != total)
    throw RuntimeError(fmt::format("{}: the piece lengths [{}] are not {} non-negative numbers summing to the "
                                   "dimension's size {}; the plan does not match this world or model",
                                   what, fmt::join(lengths, ", "), world, total));
}

// Gloo moves only the dtypes it can reduce (no bfloat16, bool or int16); the collectives that
// only move data carry bfloat16 as half and bool as uint8, bit for bit.
at::Tensor wire(const at::Tensor& t) {
  if (t.scalar_type() == at::kBFloat16) return t.view(at::kHalf);  // Gloo moves no int16
  if (t.scalar_type() == at::kBool) return t.view(at::kByte);
  return t;
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

// The detail of a c10d/Gloo failure: the message without LibTorch's C++ backtrace.
std::string detailOf(const std::exception& e) {
  std::string text;
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e))
    text = c10->what_without_backtrace();
  else
    text = e.what();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '.')) text.pop_back();
  return text;
}

// The two groups a hierarchical all-reduce runs over, for one channel (the program's or the
// gradients'): the ranks of this rank's machine (group rank = local index), and the ranks of
// this rank's local index on every machine (group rank = machine index).
struct GridGroups {
  c10::intrusive_ptr<CommBackend> machine, across;
};

// What the hierarchical all-reduce needs on a machine grid: the plan's cluster (for
// cost::allReduceCost), its grid, and each channel's groups.
struct Hierarchy {
  cost::Cluster cluster;
  cost::MachineGrid grid;
  GridGroups program, gradients;
};

// A rank's place in a communicator's groups: the world (name "") or a subgroup of it.
struct Membership {
  int rank = 0, size = 1;
  std::string name;  // for messages: "machine 1", "program rank 0 on every machine"
};

// One c10d process group (or none for a world of one) and the emulations of the collectives
// Gloo lacks. Every collective works on contiguous buffers it owns; inputs are never modified
// except by the in-place collectives (allReduce, allReduceMax, broadcast). A tensor that is not
// on the group's device (NCCL: this rank's GPU; Gloo: the CPU), e.g. a CPU count or the trace
// text under NCCL, travels through a copy there and comes back on its own device.
class GroupCommunicator final : public Communicator {
 public:
  // `member`: this rank's place in the groups (the world: env's rank and size); `hierarchy`: set on
  // a machine grid.
  GroupCommunicator(WorkerEnv env, Membership member, c10::intrusive_ptr<CommBackend> group,
                    c10::intrusive_ptr<CommBackend> gradients, c10::Device device,
                    std::optional<Hierarchy> hierarchy = std::nullopt)
      : env_(std::move(env)),
        member_(std::move(member)),
        group_(std::move(group)),
        gradients_(std::move(gradients)),
        device_(device),
        hierarchy_(std::move(hierarchy)) {}

  ~GroupCommunicator() override {
    {
      std::lock_guard<std::mutex> lock(chainMutex_);
      stopping_ = true;
    }
    chainReady_.notify_all();
    if (chain_.joinable()) chain_.join();  // runs the queued all-reduces first
  }

  int rank() const override { return member_.rank; }
  int size() const override { return member_.size; }
  c10::Device device() const override { return device_; }

  AllReduceCounts allReduceCounts() const override {
    AllReduceCounts c{flatCount_.load(), hierarchicalCount_.load(), 0, 0};
    if (hierarchy_) {
      c.machines = hierarchy_->grid.machines;
      c.perMachine = hierarchy_->grid.perMachine;
    }
    return c;
  }

  void allReduce(at::Tensor& t) override { reduceInPlace(t, c10d::ReduceOp::SUM, "all-reduce"); }
  void allReduceMax(at::Tensor& t) override { reduceInPlace(t, c10d::ReduceOp::MAX, "all-reduce (max)"); }

  at::Tensor allGather(const at::Tensor& local, int dim, const std::vector<int64_t>& lengths,
                       CommMethod method) override {
    const char* what = method == CommMethod::Padded ? "all-gather (padded)" : "all-gather (grouped)";
    c10::NoGradGuard noGrad;
    if (foreign(local)) return allGather(local.to(device_), dim, lengths, method).to(local.device());
    const int d = wrapDim(local.dim(), dim, what);
    checkLengths(what, lengths, size(), sum(lengths));
    if (local.size(d) != lengths[static_cast<size_t>(rank())])
      throw RuntimeError(fmt::format("{}: rank {} holds a piece of length {} along dimension {}, the plan says {}",
                                     what, rank(), local.size(d), d, lengths[static_cast<size_t>(rank())]));
    if (size() == 1) return local.clone(at::MemoryFormat::Contiguous);

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
      at::Tensor gathered = at::empty(withSize(front.sizes(), 0, longest * size()), local.options());
      std::vector<std::vector<at::Tensor>> outputs(1);
      for (int k = 0; k < size(); ++k) outputs[0].push_back(wire(gathered.narrow(0, k * longest, longest)));
      std::vector<at::Tensor> inputs{wire(padded)};
      guarded(what, local, [&] { group_->allgather(outputs, inputs)->wait(); });
      for (int k = 0; k < size(); ++k)
        out.narrow(0, offsets[k], lengths[k]).copy_(gathered.narrow(0, k * longest, lengths[k]));
    } else {
      // One broadcast per rank of its actual piece, straight into its place in the result.
      out.narrow(0, offsets[rank()], lengths[rank()]).copy_(front);
      for (int k = 0; k < size(); ++k) {
        if (lengths[k] == 0) continue;
        std::vector<at::Tensor> piece{wire(out.narrow(0, offsets[k], lengths[k]))};
        c10d::BroadcastOptions opts;
        opts.rootRank = k;
        guarded(what, local, [&] { group_->broadcast(piece, opts)->wait(); });
      }
    }
    return out.movedim(0, d).contiguous();
  }

  at::Tensor reduceScatter(const at::Tensor& full, int dim, const std::vector<int64_t>& lengths,
                           CommMethod method) override {
    const char* what = method == CommMethod::Padded ? "reduce-scatter (padded)" : "reduce-scatter (grouped)";
    c10::NoGradGuard noGrad;
    if (foreign(full)) return reduceScatter(full.to(device_), dim, lengths, method).to(full.device());
    const int d = wrapDim(full.dim(), dim, what);
    checkLengths(what, lengths, size(), full.size(d));
    if (size() == 1) return full.clone(at::MemoryFormat::Contiguous);

    const at::Tensor front = full.movedim(d, 0);
    const int64_t mine = lengths[rank()];
    const std::vector<int64_t> offsets = offsetsOf(lengths);
    const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
    at::Tensor result = at::empty(withSize(front.sizes(), 0, mine), full.options());
    if (front.numel() == 0) return result.movedim(0, d).contiguous();

    if (method == CommMethod::Padded) {
      // Gloo (1.13) has no reduce_scatter: send piece k, padded to the longest, to rank k with one
      // equal-split alltoall_base, then sum the n received copies locally in rank order.
      at::Tensor send = at::zeros(withSize(front.sizes(), 0, longest * size()), full.options());
      for (int k = 0; k < size(); ++k)
        send.narrow(0, k * longest, lengths[k]).copy_(front.narrow(0, offsets[k], lengths[k]));
      at::Tensor received = at::empty_like(send);
      at::Tensor in = wire(send), out = wire(received);
      std::vector<int64_t> equalSplit;
      guarded(what, full, [&] { group_->alltoall_base(out, in, equalSplit, equalSplit)->wait(); });
      result.copy_(received.narrow(0, 0, mine));
      for (int j = 1; j < size(); ++j) result.add_(received.narrow(0, j * longest, mine));
    } else {
      // One reduce per rank of its piece to that rank.
      for (int k = 0; k < size(); ++k) {
        if (lengths[k] == 0) continue;
        // A private copy: reduce may use its buffer as scratch on the other ranks.
        std::vector<at::Tensor> piece{front.narrow(0, offsets[k], lengths[k]).clone(at::MemoryFormat::Contiguous)};
        c10d::ReduceOptions opts;
        opts.reduceOp = c10d::ReduceOp::SUM;
        opts.rootRank = k;
        guarded(what, full, [&] { group_->reduce(piece, opts)->wait(); });
        if (k == rank()) result = piece[0];
      }
    }
    return result.movedim(0, d).contiguous();
  }

  at::Tensor allToAll(const at::Tensor& local, int fromDim, const std::vector<int64_t>& fromLengths, int toDim,
                      const std::vector<int64_t>& toLengths) override {
    const char* what = "all-to-all";
    c10::NoGradGuard noGrad;
    if (foreign(local))
      return allToAll(local.to(device_), fromDim, fromLengths, toDim, toLengths).to(local.device());
    const int fd = wrapDim(local.dim(), fromDim, what);
    const int td = wrapDim(local.dim(), toDim, what);
    checkLengths(what, fromLengths, size(), sum(fromLengths));
    if (local.size(fd) != fromLengths[rank()])
      throw RuntimeError(fmt::format("{}: rank {} holds a piece of length {} along dimension {}, the plan says {}",
                                     what, rank(), local.size(fd), fd, fromLengths[rank()]));
    const std::vector<int64_t> fullSizes = withSize(local.sizes(), fd, sum(fromLengths));
    checkLengths(what, toLengths, size(), fullSizes[td]);
    if (fd == td && fromLengths == toLengths) return local;
    if (size() == 1) return local.clone(at::MemoryFormat::Contiguous);

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

    at::Tensor result = at::empty(withSize(fullSizes, td, toLengths[rank()]), local.options());
    int64_t moved = 0;
    std::vector<int64_t> sendCounts(size()), recvCounts(size());
    for (int s = 0; s < size(); ++s)
      for (int k = 0; k < size(); ++k) moved += chunk(s, k).numel;
    for (int k = 0; k < size(); ++k) {
      sendCounts[k] = chunk(rank(), k).numel;
      recvCounts[k] = chunk(k, rank()).numel;
    }
    if (moved == 0) return result;

    // One flat buffer each way, chunks in rank order (alltoall_base splits along dimension 0).
    at::Tensor send = at::empty({sum(sendCounts)}, local.options());
    at::Tensor received = at::empty({sum(recvCounts)}, local.options());
    int64_t cursor = 0;
    for (int k = 0; k < size(); ++k) {
      const Chunk c = chunk(rank(), k);
      if (c.numel)
        send.narrow(0, cursor, c.numel).view(c.sizes).copy_(local.narrow(td, c.sourceOffset, c.sizes[td]));
      cursor += c.numel;
    }
    at::Tensor in = wire(send), out = wire(received);
    guarded(what, local, [&] { group_->alltoall_base(out, in, recvCounts, sendCounts)->wait(); });
    cursor = 0;
    for (int s = 0; s < size(); ++s) {
      const Chunk c = chunk(s, rank());
      if (c.numel)
        result.narrow(fd, c.targetOffset, c.sizes[fd]).copy_(received.narrow(0, cursor, c.numel).view(c.sizes));
      cursor += c.numel;
    }
    return result;
  }

  void broadcast(at::Tensor& t, int root) override {
    const char* what = "broadcast";
    if (root < 0 || root >= size())
      throw RuntimeError(fmt::format("{}: root rank {} is not in this world of {}", what, root, size()));
    if (size() == 1 || t.numel() == 0) return;
    c10::NoGradGuard noGrad;
    at::Tensor buffer = foreign(t) ? t.to(device_) : t.is_contiguous() ? t : t.contiguous();
    std::vector<at::Tensor> tensors{wire(buffer)};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    guarded(what, t, [&] { group_->broadcast(tensors, opts)->wait(); });
    if (!buffer.is_same(t)) t.copy_(buffer);
  }

  void barrier() override {
    if (size() == 1) return;
    guarded("barrier", at::Tensor(), [&] { group_->barrier()->wait(); });
  }

  // The gradient channel's all-reduce in flight; `buffer` is `target` or its copy on the group's
  // device.
  class InFlight final : public Pending {
   public:
    InFlight(GroupCommunicator& owner, c10::intrusive_ptr<c10d::Work> work, at::Tensor buffer, at::Tensor target)
        : owner_(owner), work_(std::move(work)), buffer_(std::move(buffer)), target_(std::move(target)) {}
    ~InFlight() override {
      try {
        wait();
      } catch (const std::exception&) {
        // Already failing elsewhere (an exception unwinds past an unwaited all-reduce).
      }
    }
    void wait() override {
      if (!work_) return;
      c10::intrusive_ptr<c10d::Work> work = std::move(work_);
      owner_.guarded("gradient all-reduce", target_, [&] { work->wait(); });
      if (!buffer_.is_same(target_)) target_.copy_(buffer_);
    }

   private:
    GroupCommunicator& owner_;
    c10::intrusive_ptr<c10d::Work> work_;
    at::Tensor buffer_, target_;
  };

  // A hierarchical gradient all-reduce queued on the chain thread; `buffer` as for InFlight.
  class Queued final : public Pending {
   public:
    Queued(std::future<void> done, at::Tensor buffer, at::Tensor target)
        : done_(std::move(done)), buffer_(std::move(buffer)), target_(std::move(target)) {}
    ~Queued() override {
      try {
        wait();
      } catch (const std::exception&) {
        // Already failing elsewhere, as for InFlight.
      }
    }
    void wait() override {
      if (!done_.valid()) return;
      std::future<void> done = std::move(done_);
      done.get();  // rethrows the chain thread's RuntimeError
      if (!buffer_.is_same(target_)) target_.copy_(buffer_);
    }

   private:
    std::future<void> done_;
    at::Tensor buffer_, target_;
  };

  std::unique_ptr<Pending> allReduceAsync(at::Tensor& t) override {
    const char* what = "gradient all-reduce";
    if (!t.is_contiguous()) throw RuntimeError(fmt::format("{}: the tensor must be contiguous (a runtime bug)", what));
    if (size() == 1 || t.numel() == 0) return std::make_unique<InFlight>(*this, c10::intrusive_ptr<c10d::Work>(), t, t);
    if (!gradients_) throw std::logic_error("allReduceAsync on a communicator without a gradient channel");
    c10::NoGradGuard noGrad;
    at::Tensor buffer = foreign(t) ? t.to(device_) : t;
    if (hierarchical(buffer)) {
      ++hierarchicalCount_;
      return std::make_unique<Queued>(enqueue(buffer), buffer, t);
    }
    ++flatCount_;
    std::vector<at::Tensor> tensors{buffer};
    c10::intrusive_ptr<c10d::Work> work;
    guarded(what, t, [&] { work = gradients_->allreduce(tensors); });
    return std::make_unique<InFlight>(*this, std::move(work), buffer, t);
  }

  // Runs one c10d call on `subject` (may be undefined); its failures (timeouts, closed
  // connections, refused peers, dtypes the backend cannot handle) become a RuntimeError naming
  // the collective, the tensor, this rank and the rendezvous address.
  template <class F>
  void guarded(const char* what, const at::Tensor& subject, F&& call) {
    try {
      call();
    } catch (const hap::Error&) {
      throw;
    } catch (const std::exception& e) {
      std::string step = what;
      if (subject.defined())
        step += fmt::format(" of a {} tensor [{}]", c10::toString(subject.scalar_type()),
                            fmt::join(subject.sizes(), ", "));
      if (!member_.name.empty()) step += fmt::format(" in the group of {} (rank {} of {})", member_.name, rank(), size());
      throw RuntimeError(failureMessage(env_, step, detailOf(e)));
    }
  }

  static std::string failureMessage(const WorkerEnv& env, const std::string& what, const std::string& detail) {
    return fmt::format("{} failed on rank {} of {} (store at MASTER_ADDR:MASTER_PORT {}:{}): {}. Is every rank "
                       "started, with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE, and still running? A peer "
                       "that does not answer within HAP_TIMEOUT_S={} s fails the step",
                       what, env.rank, env.worldSize, env.masterAddr, env.masterPort, detail, env.timeout.count());
  }

 private:
  // Whether `t` must travel through a copy on the group's device (never in a world of one).
  bool foreign(const at::Tensor& t) const { return size() > 1 && t.defined() && t.device() != device_; }

  void reduceInPlace(at::Tensor& t, c10d::ReduceOp op, const char* what) {
    if (size() == 1 || t.numel() == 0) return;
    c10::NoGradGuard noGrad;
    at::Tensor buffer = foreign(t) ? t.to(device_) : t.is_contiguous() ? t : t.contiguous();
    const bool sum = op == c10d::ReduceOp::SUM;
    if (sum && hierarchical(buffer)) {
      ++hierarchicalCount_;
      hierarchicalSum(buffer, hierarchy_->program, "all-reduce (hierarchical)", t);
    } else {
      if (sum) ++flatCount_;
      std::vector<at::Tensor> tensors{buffer};
      c10d::AllreduceOptions opts;
      opts.reduceOp = op;
      guarded(what, t, [&] { group_->allreduce(tensors, opts)->wait(); });
    }
    if (!buffer.is_same(t)) t.copy_(buffer);
  }

  // Whether the plan's cost model prices the sum of `t` cheapest as hierarchical.
  bool hierarchical(const at::Tensor& t) const {
    return hierarchy_ && cost::allReduceCost(hierarchy_->cluster, static_cast<double>(t.numel()) *
                                                                     static_cast<double>(t.element_size()))
                                 .algorithm == cost::AllReduceAlgorithm::Hierarchical;
  }

  // The sum over all ranks of contiguous `buffer`, in place: with k devices per machine, the
  // flattened buffer is cut into k equal chunks (the last padded with zeros); local index i
  // gathers chunk i of its machine's devices (one all-to-all, summed in local order), sums it
  // with local index i of every other machine (one all-reduce across), and the machine
  // all-gathers the k sums. Every rank copies the same sums, so replicas stay bit-identical.
  void hierarchicalSum(const at::Tensor& buffer, const GridGroups& h, const char* what, const at::Tensor& subject) {
    const int64_t k = hierarchy_->grid.perMachine, numel = buffer.numel();
    const int64_t chunk = (numel + k - 1) / k;
    at::Tensor flat = buffer.view({-1});
    at::Tensor pieces = at::zeros({k * chunk}, buffer.options());
    pieces.narrow(0, 0, numel).copy_(flat);
    at::Tensor received = at::empty_like(pieces);
    std::vector<int64_t> equalSplit;
    guarded(what, subject, [&] { h.machine->alltoall_base(received, pieces, equalSplit, equalSplit)->wait(); });
    at::Tensor part = received.narrow(0, 0, chunk).clone();
    for (int64_t j = 1; j < k; ++j) part.add_(received.narrow(0, j * chunk, chunk));
    std::vector<at::Tensor> parts{part};
    guarded(what, subject, [&] { h.across->allreduce(parts)->wait(); });
    std::vector<std::vector<at::Tensor>> gathered(1);
    for (int64_t j = 0; j < k; ++j) gathered[0].push_back(pieces.narrow(0, j * chunk, chunk));
    guarded(what, subject, [&] { h.machine->allgather(gathered, parts)->wait(); });
    flat.copy_(pieces.narrow(0, 0, numel));
  }

  // Queues a hierarchical gradient all-reduce of `buffer` on the chain thread (started on first
  // use), which runs them one at a time in the order they were queued: the same order on every
  // rank (GradientBuckets starts buckets in order), as the phases of consecutive all-reduces
  // must not interleave.
  std::future<void> enqueue(const at::Tensor& buffer) {
    Job job{buffer, {}};
    std::future<void> done = job.done.get_future();
    {
      std::lock_guard<std::mutex> lock(chainMutex_);
      if (!chain_.joinable()) chain_ = std::thread([this] { chainLoop(); });
      jobs_.push_back(std::move(job));
    }
    chainReady_.notify_one();
    return done;
  }

  void chainLoop() {
#ifdef HAP_HAVE_CUDA
    if (device_.is_cuda()) c10::cuda::set_device(device_.index());
#endif
    c10::NoGradGuard noGrad;
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(chainMutex_);
        chainReady_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      try {
        hierarchicalSum(job.buffer, hierarchy_->gradients, "gradient all-reduce (hierarchical)", job.buffer);
        job.done.set_value();
      } catch (...) {
        job.done.set_exception(std::current_exception());
      }
    }
  }

  WorkerEnv env_;
  Membership member_;
  c10::intrusive_ptr<CommBackend> group_;      // null for a group of one
  c10::intrusive_ptr<CommBackend> gradients_;  // the gradient channel (allReduceAsync); null likewise, or
                                               // for a communicator that has none (connectReplicated)
  c10::Device device_;                         // where the groups' collectives take their tensors
  std::optional<Hierarchy> hierarchy_;         // set on a machine grid
  std::atomic<int64_t> flatCount_{0}, hierarchicalCount_{0};
  // The chain thread of hierarchical gradient all-reduces (enqueue).
  struct Job {
    at::Tensor buffer;
    std::promise<void> done;
  };
  std::mutex chainMutex_;
  std::condition_variable chainReady_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::thread chain_;
};

// Gloo's network device: GLOO_SOCKET_IFNAME (torch's variable) names an interface; otherwise the
// address of MASTER_ADDR where this machine has it (every rank of a single-machine run), else the
// address this machine's hostname resolves to.
std::shared_ptr<::gloo::transport::Device> glooDevice(const WorkerEnv& env) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  try {
    return c10d::ProcessGroupGloo::createDeviceForHostname(env.masterAddr);
  } catch (const std::exception&) {
    return c10d::ProcessGroupGloo::createDefaultDevice();
  }
}

}  // namespace

namespace {

// The device of connect's `cuda`: GPU LOCAL_RANK, made current; else the CPU.
c10::Device rankDevice(const WorkerEnv& env, bool cuda) {
#ifndef HAP_HAVE_CUDA
  if (cuda)
    throw RuntimeError(
        "this LibTorch has no CUDA, so NCCL is not available; run the workers on CPU (Gloo) or build HAP Studio "
        "against a CUDA build of LibTorch");
#endif
  c10::Device device(c10::kCPU);
  if (cuda) {
    const auto gpus = static_cast<int>(torch::cuda::device_count());
    if (env.localRank >= gpus)
      throw RuntimeError(fmt::format("rank {}: LOCAL_RANK is {}, but this machine has {} GPU(s) visible; start at most "
                                     "one worker per GPU, or check CUDA_VISIBLE_DEVICES",
                                     env.rank, env.localRank, gpus));
    device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(env.localRank));
#ifdef HAP_HAVE_CUDA
    c10::cuda::set_device(device.index());  // NCCL's communicator and the default stream's device
#endif
  }
  return device;
}

// The TCPStore rendezvous and the process groups made on it, one per prefix of the store. Every
// rank creates its groups in the same order, so each group's members meet.
class Rendezvous {
 public:
  Rendezvous(const WorkerEnv& env, bool cuda) : env_(env), cuda_(cuda) {
    c10d::TCPStoreOptions storeOptions;
    storeOptions.port = static_cast<std::uint16_t>(env.masterPort);
    storeOptions.isServer = env.rank == 0;
    storeOptions.numWorkers = static_cast<std::size_t>(env.worldSize);
    storeOptions.waitWorkers = true;
    storeOptions.timeout = env.timeout;
    store_ = c10::make_intrusive<c10d::TCPStore>(env.masterAddr, storeOptions);
  }

  // The group of the ranks that use `prefix`, this rank being `rank` of `size` (null for one).
  c10::intrusive_ptr<CommBackend> group(const std::string& prefix, int rank, int size) {
    if (size == 1) return {};
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>(prefix, store_);
#ifdef HAP_HAVE_CUDA
    if (cuda_) {
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = env_.timeout;
      return c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, rank, size, options);
    }
#endif
    auto options = c10d::ProcessGroupGloo::Options::create(env_.timeout);
    options->devices.push_back(glooDevice(env_));
    options->threads = 2;
    return c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, options);
  }

 private:
  const WorkerEnv& env_;
  bool cuda_;
  c10::intrusive_ptr<c10d::Store> store_;
};

// Runs `make` (which rendezvouses), turning c10d's failures into a RuntimeError for this rank.
template <class F>
auto rendezvous(const WorkerEnv& env, F&& make) {
  try {
    return make();
  } catch (const hap::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw RuntimeError(GroupCommunicator::failureMessage(env, "rendezvous", detailOf(e)));
  }
}

}  // namespace

std::unique_ptr<Communicator> Communicator::connect(const WorkerEnv& env, bool cuda, const cost::Cluster* cluster) {
  const c10::Device device = rankDevice(env, cuda);
  const Membership world{env.rank, env.worldSize, ""};
  if (env.worldSize == 1)
    return std::make_unique<GroupCommunicator>(env, world, c10::intrusive_ptr<CommBackend>(),
                                               c10::intrusive_ptr<CommBackend>(), device);
  std::optional<cost::MachineGrid> grid;
  if (cluster && cluster->size() == env.worldSize) grid = cost::machineGrid(*cluster);
  return rendezvous(env, [&]() -> std::unique_ptr<Communicator> {
    Rendezvous r(env, cuda);
    // The program's collectives, the gradient channel, and on a machine grid each channel's groups
    // of the hierarchical all-reduce.
    auto group = r.group("hap", env.rank, env.worldSize);
    auto gradients = r.group("hap-gradients", env.rank, env.worldSize);
    std::optional<Hierarchy> hierarchy;
    if (grid) {
      const cost::Device& me = cluster->devices[static_cast<size_t>(env.rank)];
      auto groups = [&](const std::string& channel) {
        return GridGroups{r.group(fmt::format("{}-machine-{}", channel, me.machine), me.localRank, grid->perMachine),
                          r.group(fmt::format("{}-across-{}", channel, me.localRank), me.machine, grid->machines)};
      };
      GridGroups program = groups("hap");  // first on every rank, then the gradients'
      hierarchy = Hierarchy{*cluster, *grid, std::move(program), groups("hap-gradients")};
    }
    return std::make_unique<GroupCommunicator>(env, world, std::move(group), std::move(gradients), device,
                                               std::move(hierarchy));
  });
}

Communicator::Replicated Communicator::connectReplicated(const WorkerEnv& env, bool cuda, int machines) {
  if (machines < 1 || env.worldSize % machines != 0)
    throw RuntimeError(fmt::format("rank {}: the plan is replicated on {} machines, but WORLD_SIZE {} is not a "
                                   "multiple of it; start one worker per device of every machine (hap launch does)",
                                   env.rank, machines, env.worldSize));
  const c10::Device device = rankDevice(env, cuda);
  const int k = env.worldSize / machines, machine = env.rank / k, local = env.rank % k;
  return rendezvous(env, [&] {
    Rendezvous r(env, cuda);
    Replicated out;
    // Only the program's communicator has a gradient channel (its buckets overlap backward).
    auto world = r.group("hap", env.rank, env.worldSize);
    auto mine = r.group(fmt::format("hap-replica-{}", machine), local, k);
    auto mineGradients = r.group(fmt::format("hap-replica-gradients-{}", machine), local, k);
    auto peers = r.group(fmt::format("hap-peers-{}", local), machine, machines);
    out.world = std::make_unique<GroupCommunicator>(env, Membership{env.rank, env.worldSize, ""}, std::move(world),
                                                    c10::intrusive_ptr<CommBackend>(), device);
    out.machine = std::make_unique<GroupCommunicator>(env, Membership{local, k, fmt::format("machine {}", machine)},
                                                      std::move(mine), std::move(mineGradients), device);
    out.peers = std::make_unique<GroupCommunicator>(
        env, Membership{machine, machines, fmt::format("program rank {} on every machine", local)}, std::move(peers),
        c10::intrusive_ptr<CommBackend>(), device);
    return out;
  });
}

at::Tensor localPiece(const at::Tensor& full, int dim, const std::vector<int64_t>& lengths, int rank) {
  const int d = wrapDim(full.dim(), dim, "local piece");
  checkLengths("local piece", lengths, static_cast<int>(lengths.size()), full.size(d));
  if (rank < 0 || rank >= static_cast<int>(lengths.size()))
    throw RuntimeError(fmt::format("local piece: rank {} has no length in [{}]", rank, fmt::join(lengths, ", ")));
  return full.narrow(d, offsetsOf(lengths)[static_cast<size_t>(rank)], lengths[static_cast<size_t>(rank)]);
}

}  // namespace hap::runtime
