#include "runtime/comm/communicator.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/cuda.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef HAP_HAVE_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <atomic>
#include <cstdlib>
#include <functional>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/cost/collective_cost.h"
#include "runtime/comm/job_chain.h"
#include "runtime/comm/liveness.h"
#include "runtime/comm/uneven_pieces.h"
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

// Gloo moves only the dtypes it can reduce (no bfloat16, bool or int16); the collectives that
// only move data carry bfloat16 as half and bool as uint8, bit for bit.
at::Tensor wire(const at::Tensor& t) {
  if (t.scalar_type() == at::kBFloat16) return t.view(at::kHalf);  // Gloo moves no int16
  if (t.scalar_type() == at::kBool) return t.view(at::kByte);
  return t;
}

// The detail of a c10d/Gloo failure: the message without LibTorch's C++ backtrace.
std::string detailOf(const std::exception& e) {
  std::string text;
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e))
    text = c10->what_without_backtrace();
  else
    text = e.what();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '.'))
    text.pop_back();
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

// The chain thread's start (JobChain): this rank's GPU made current there too, and no autograd.
std::function<void()> chainStart(c10::Device device) {
  return [device] {
#ifdef HAP_HAVE_CUDA
    if (device.is_cuda()) c10::cuda::set_device(device.index());
#endif
    (void)device;
    c10::GradMode::set_enabled(false);  // the chain's all-reduces record no autograd
  };
}

// One c10d process group (or none for a world of one) behind the Communicator interface. Every
// collective works on contiguous buffers it owns; inputs are never modified except by the
// in-place collectives (allReduce, allReduceMax, broadcast). A tensor that is not on the group's
// device (NCCL: this rank's GPU; Gloo: the CPU), e.g. a CPU count or the trace text under NCCL,
// travels through a copy there and comes back on its own device. Its parts:
// - the flat collectives (all-reduce, broadcast, barrier), each one c10d call;
// - the collectives on uneven pieces: the algorithms of uneven_pieces.h over this group's calls
//   (the PieceGroup it is, privately);
// - the hierarchical all-reduce on a machine grid, for the program's sums and, queued on a
//   JobChain, for the gradient channel's (allReduceAsync);
// - failures: every c10d call goes through guarded(), which turns its errors into RuntimeError.
class GroupCommunicator final : public Communicator, private PieceGroup {
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
        hierarchy_(std::move(hierarchy)),
        chain_(chainStart(device_)) {}

  // Every rank's sign of life (liveness.h), shared by the communicators of one rendezvous: a
  // failed collective names the ranks that did not arrive. Null: failures name none.
  void watch(std::shared_ptr<Liveness> liveness) { liveness_ = std::move(liveness); }

  // Communicator and PieceGroup alike.
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

  // The flat collectives, one c10d call each (a sum all-reduce hierarchical where the plan's cost
  // model prices it so: reduceInPlace).
  void allReduce(at::Tensor& t) override { reduceInPlace(t, c10d::ReduceOp::SUM, "all-reduce"); }
  void allReduceMax(at::Tensor& t) override {
    reduceInPlace(t, c10d::ReduceOp::MAX, "all-reduce (max)");
  }

  void broadcast(at::Tensor& t, int root) override {
    const char* what = "broadcast";
    if (root < 0 || root >= size())
      throw RuntimeError(
          fmt::format("{}: root rank {} is not in this world of {}", what, root, size()));
    if (size() == 1 || t.numel() == 0) return;
    c10::NoGradGuard noGrad;
    at::Tensor buffer = foreign(t) ? t.to(device_) : t.is_contiguous() ? t : t.contiguous();
    broadcastFrom(buffer, root, what, t);
    if (!buffer.is_same(t)) t.copy_(buffer);
  }

  void barrier() override {
    if (size() == 1) return;
    guarded("barrier", at::Tensor(), [&] { group_->barrier()->wait(); });
  }

  // The collectives on uneven pieces (uneven_pieces.h), on the group's device.
  at::Tensor allGather(const at::Tensor& local, int dim, const std::vector<int64_t>& lengths,
                       CommMethod method) override {
    c10::NoGradGuard noGrad;
    if (foreign(local))
      return allGather(local.to(device_), dim, lengths, method).to(local.device());
    return gatherPieces(*this, local, dim, lengths, method);
  }

  at::Tensor reduceScatter(const at::Tensor& full, int dim, const std::vector<int64_t>& lengths,
                           CommMethod method) override {
    c10::NoGradGuard noGrad;
    if (foreign(full))
      return reduceScatter(full.to(device_), dim, lengths, method).to(full.device());
    return scatterSums(*this, full, dim, lengths, method);
  }

  at::Tensor allToAll(const at::Tensor& local, int fromDim, const std::vector<int64_t>& fromLengths,
                      int toDim, const std::vector<int64_t>& toLengths) override {
    c10::NoGradGuard noGrad;
    if (foreign(local))
      return allToAll(local.to(device_), fromDim, fromLengths, toDim, toLengths).to(local.device());
    return exchangePieces(*this, local, fromDim, fromLengths, toDim, toLengths);
  }

  // The gradient channel (allReduceAsync): a process group of its own; a flat all-reduce is in
  // flight on it (InFlight), a hierarchical one queued on the chain (Queued).

  // The gradient channel's all-reduce in flight; `buffer` is `target` or its copy on the group's
  // device.
  class InFlight final : public Pending {
   public:
    InFlight(GroupCommunicator& owner, c10::intrusive_ptr<c10d::Work> work, at::Tensor buffer,
             at::Tensor target)
        : owner_(owner),
          work_(std::move(work)),
          buffer_(std::move(buffer)),
          target_(std::move(target)) {}
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
    if (!t.is_contiguous())
      throw RuntimeError(fmt::format("{}: the tensor must be contiguous (a runtime bug)", what));
    if (size() == 1 || t.numel() == 0)
      return std::make_unique<InFlight>(*this, c10::intrusive_ptr<c10d::Work>(), t, t);
    if (!gradients_)
      throw std::logic_error("allReduceAsync on a communicator without a gradient channel");
    c10::NoGradGuard noGrad;
    at::Tensor buffer = foreign(t) ? t.to(device_) : t;
    if (hierarchical(buffer)) {
      ++hierarchicalCount_;
      // One at a time on the chain, in the order queued (the same on every rank: GradientBuckets
      // starts buckets in order), as the phases of consecutive all-reduces must not interleave.
      std::future<void> done = chain_.post([this, buffer] {
        hierarchicalSum(buffer, hierarchy_->gradients, "gradient all-reduce (hierarchical)",
                        buffer);
      });
      return std::make_unique<Queued>(std::move(done), buffer, t);
    }
    ++flatCount_;
    std::vector<at::Tensor> tensors{buffer};
    c10::intrusive_ptr<c10d::Work> work;
    guarded(what, t, [&] { work = gradients_->allreduce(tensors); });
    return std::make_unique<InFlight>(*this, std::move(work), buffer, t);
  }

  // The message of a failure of `what` on this rank (a collective's, or the rendezvous's).
  static std::string failureMessage(const WorkerEnv& env, const std::string& what,
                                    const std::string& detail) {
    return fmt::format(
        "{} failed on rank {} of {} (store at MASTER_ADDR:MASTER_PORT {}:{}): {}. Is every rank "
        "started, with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE, and still running? A peer "
        "that does not answer within HAP_TIMEOUT_S={} s fails the step",
        what, env.rank, env.worldSize, env.masterAddr, env.masterPort, detail, env.timeout.count());
  }

 private:
  // PieceGroup's calls (uneven_pieces.h), on this group; the calls that only move data carry
  // every dtype (wire).
  void gatherInto(const std::vector<at::Tensor>& outputs, const at::Tensor& input, const char* what,
                  const at::Tensor& subject) override {
    std::vector<std::vector<at::Tensor>> wired(1);
    for (const at::Tensor& o : outputs) wired[0].push_back(wire(o));
    std::vector<at::Tensor> inputs{wire(input)};
    guarded(what, subject, [&] { group_->allgather(wired, inputs)->wait(); });
  }

  void broadcastFrom(const at::Tensor& t, int root, const char* what,
                     const at::Tensor& subject) override {
    std::vector<at::Tensor> tensors{wire(t)};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    guarded(what, subject, [&] { group_->broadcast(tensors, opts)->wait(); });
  }

  void sumInto(const at::Tensor& t, int root, const char* what,
               const at::Tensor& subject) override {
    std::vector<at::Tensor> tensors{t};
    c10d::ReduceOptions opts;
    opts.reduceOp = c10d::ReduceOp::SUM;
    opts.rootRank = root;
    guarded(what, subject, [&] { group_->reduce(tensors, opts)->wait(); });
  }

  void exchange(const at::Tensor& received, const at::Tensor& send,
                const std::vector<int64_t>& receiveCounts, const std::vector<int64_t>& sendCounts,
                const char* what, const at::Tensor& subject) override {
    at::Tensor in = wire(send), out = wire(received);
    std::vector<int64_t> outSplit = receiveCounts, inSplit = sendCounts;
    guarded(what, subject, [&] { group_->alltoall_base(out, in, outSplit, inSplit)->wait(); });
  }

  // Whether `t` must travel through a copy on the group's device (never in a world of one).
  bool foreign(const at::Tensor& t) const {
    return size() > 1 && t.defined() && t.device() != device_;
  }

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

  // The hierarchical all-reduce (set up on a machine grid by connect): chosen per tensor, run over
  // the channel's two groups.

  // Whether the plan's cost model prices the sum of `t` cheapest as hierarchical.
  bool hierarchical(const at::Tensor& t) const {
    return hierarchy_ &&
           cost::allReduceCost(hierarchy_->cluster, static_cast<double>(t.numel()) *
                                                        static_cast<double>(t.element_size()))
                   .algorithm == cost::AllReduceAlgorithm::Hierarchical;
  }

  // The sum over all ranks of contiguous `buffer`, in place: with k devices per machine, the
  // flattened buffer is cut into k equal chunks (the last padded with zeros); local index i
  // gathers chunk i of its machine's devices (one all-to-all, summed in local order), sums it
  // with local index i of every other machine (one all-reduce across), and the machine
  // all-gathers the k sums. Every rank copies the same sums, so replicas stay bit-identical.
  void hierarchicalSum(const at::Tensor& buffer, const GridGroups& h, const char* what,
                       const at::Tensor& subject) {
    const int64_t k = hierarchy_->grid.perMachine, numel = buffer.numel();
    const int64_t chunk = (numel + k - 1) / k;
    at::Tensor flat = buffer.view({-1});
    at::Tensor pieces = at::zeros({k * chunk}, buffer.options());
    pieces.narrow(0, 0, numel).copy_(flat);
    at::Tensor received = at::empty_like(pieces);
    std::vector<int64_t> equalSplit;
    guarded(what, subject,
            [&] { h.machine->alltoall_base(received, pieces, equalSplit, equalSplit)->wait(); });
    at::Tensor part = received.narrow(0, 0, chunk).clone();
    for (int64_t j = 1; j < k; ++j) part.add_(received.narrow(0, j * chunk, chunk));
    std::vector<at::Tensor> parts{part};
    guarded(what, subject, [&] { h.across->allreduce(parts)->wait(); });
    std::vector<std::vector<at::Tensor>> gathered(1);
    for (int64_t j = 0; j < k; ++j) gathered[0].push_back(pieces.narrow(0, j * chunk, chunk));
    guarded(what, subject, [&] { h.machine->allgather(gathered, parts)->wait(); });
    flat.copy_(pieces.narrow(0, 0, numel));
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
      if (!member_.name.empty())
        step += fmt::format(" in the group of {} (rank {} of {})", member_.name, rank(), size());
      std::string detail = detailOf(e);
      if (liveness_)
        if (const std::string absent = liveness_->verdict(); !absent.empty()) detail += "; " + absent;
      throw RuntimeError(failureMessage(env_, step, detail));
    }
  }

  WorkerEnv env_;
  Membership member_;
  c10::intrusive_ptr<CommBackend> group_;  // null for a group of one
  c10::intrusive_ptr<CommBackend>
      gradients_;                       // the gradient channel (allReduceAsync); null likewise, or
                                        // for a communicator that has none (connectReplicated)
  c10::Device device_;                  // where the groups' collectives take their tensors
  std::optional<Hierarchy> hierarchy_;  // set on a machine grid
  std::atomic<int64_t> flatCount_{0}, hierarchicalCount_{0};
  std::shared_ptr<Liveness> liveness_;  // watch()
  // The hierarchical gradient all-reduces, one at a time on a thread of their own (started on
  // first use). Last, so destroyed first: it runs what is queued before the groups go.
  JobChain chain_;
};

// Group setup (connect, connectReplicated): the rank's device, the TCPStore rendezvous and the
// process groups made on it.

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

// The device of connect's `cuda`: GPU LOCAL_RANK, made current; else the CPU.
c10::Device rankDevice(const WorkerEnv& env, bool cuda) {
#ifndef HAP_HAVE_CUDA
  if (cuda)
    throw RuntimeError(
        "this LibTorch has no CUDA, so NCCL is not available; run the workers on CPU (Gloo) or "
        "build HAP Studio "
        "against a CUDA build of LibTorch");
#endif
  c10::Device device(c10::kCPU);
  if (cuda) {
    const auto gpus = static_cast<int>(torch::cuda::device_count());
    if (env.localRank >= gpus)
      throw RuntimeError(fmt::format(
          "rank {}: LOCAL_RANK is {}, but this machine has {} GPU(s) visible; start at most "
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

std::unique_ptr<Communicator> Communicator::connect(const WorkerEnv& env, bool cuda,
                                                    const cost::Cluster* cluster) {
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
        return GridGroups{r.group(fmt::format("{}-machine-{}", channel, me.machine), me.localRank,
                                  grid->perMachine),
                          r.group(fmt::format("{}-across-{}", channel, me.localRank), me.machine,
                                  grid->machines)};
      };
      GridGroups program = groups("hap");  // first on every rank, then the gradients'
      hierarchy = Hierarchy{*cluster, *grid, std::move(program), groups("hap-gradients")};
    }
    auto communicator = std::make_unique<GroupCommunicator>(env, world, std::move(group), std::move(gradients),
                                                            device, std::move(hierarchy));
    communicator->watch(Liveness::start(env));
    return std::unique_ptr<Communicator>(std::move(communicator));
  });
}

Communicator::Replicated Communicator::connectReplicated(const WorkerEnv& env, bool cuda,
                                                         int machines) {
  if (machines < 1 || env.worldSize % machines != 0)
    throw RuntimeError(fmt::format(
        "rank {}: the plan is replicated on {} machines, but WORLD_SIZE {} is not a "
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
    out.world = std::make_unique<GroupCommunicator>(env, Membership{env.rank, env.worldSize, ""},
                                                    std::move(world),
                                                    c10::intrusive_ptr<CommBackend>(), device);
    out.machine = std::make_unique<GroupCommunicator>(
        env, Membership{local, k, fmt::format("machine {}", machine)}, std::move(mine),
        std::move(mineGradients), device);
    out.peers = std::make_unique<GroupCommunicator>(
        env, Membership{machine, machines, fmt::format("program rank {} on every machine", local)},
        std::move(peers), c10::intrusive_ptr<CommBackend>(), device);
    const std::shared_ptr<Liveness> liveness = Liveness::start(env);
    for (Communicator* c : {out.world.get(), out.machine.get(), out.peers.get()})
      static_cast<GroupCommunicator*>(c)->watch(liveness);
    return out;
  });
}

Communicator::Grouped Communicator::connectGroups(const WorkerEnv& env, bool cuda,
                                                  const std::vector<std::vector<int>>& groups) {
  int mine = -1, local = 0, covered = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    covered += static_cast<int>(groups[g].size());
    for (size_t j = 0; j < groups[g].size(); ++j)
      if (groups[g][j] == env.rank) {
        mine = static_cast<int>(g);
        local = static_cast<int>(j);
      }
  }
  if (mine < 0 || covered != env.worldSize)
    throw RuntimeError(fmt::format(
        "rank {}: the pipeline's stage groups cover {} ranks{}, but WORLD_SIZE is {}; start one worker per "
        "device of the plan (hap launch does)",
        env.rank, covered, mine < 0 ? " and not this one" : "", env.worldSize));
  const c10::Device device = rankDevice(env, cuda);
  const int k = static_cast<int>(groups[static_cast<size_t>(mine)].size());
  const Membership world{env.rank, env.worldSize, ""};
  const Membership member{local, k, fmt::format("stage {}", mine)};
  if (env.worldSize == 1) {
    Grouped out;
    out.world = std::make_unique<GroupCommunicator>(env, world, c10::intrusive_ptr<CommBackend>(),
                                                    c10::intrusive_ptr<CommBackend>(), device);
    out.group = std::make_unique<GroupCommunicator>(env, member, c10::intrusive_ptr<CommBackend>(),
                                                    c10::intrusive_ptr<CommBackend>(), device);
    return out;
  }
  return rendezvous(env, [&] {
    Rendezvous r(env, cuda);
    Grouped out;
    auto all = r.group("hap", env.rank, env.worldSize);
    auto stage = r.group(fmt::format("hap-stage-{}", mine), local, k);
    auto stageGradients = r.group(fmt::format("hap-stage-gradients-{}", mine), local, k);
    out.world = std::make_unique<GroupCommunicator>(env, world, std::move(all), c10::intrusive_ptr<CommBackend>(),
                                                    device);
    out.group = std::make_unique<GroupCommunicator>(env, member, std::move(stage), std::move(stageGradients), device);
    const std::shared_ptr<Liveness> liveness = Liveness::start(env);
    for (Communicator* c : {out.world.get(), out.group.get()}) static_cast<GroupCommunicator*>(c)->watch(liveness);
    return out;
  });
}

}  // namespace hap::runtime
