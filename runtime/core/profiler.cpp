#include "runtime/core/profiler.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#ifdef HAP_HAVE_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

#include <algorithm>
#include <chrono>
#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "engine/cost/collective_cost.h"
#include "engine/cost/collective_fit.h"
#include "engine/ir/graph.h"
#include "engine/ir/op_cost.h"
#include "runtime/core/runtime_error.h"

namespace hap::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using cost::OpFamily;
using ir::DType;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

void synchronize(const c10::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs `op` once to warm up (allocations, lazy initialisation, caches), then once timed: the
// seconds of one call (at least 1 ns), from which a caller sizes its batches.
double warmUpAndTimeOnce(const std::function<void()>& op, const c10::Device& device) {
  synchronize(device);
  op();
  synchronize(device);
  const Clock::time_point start = Clock::now();
  op();
  synchronize(device);
  return std::max(secondsSince(start), 1e-9);
}

// Median seconds per call of `op` over `repeats` timed batches, after one warm-up call. A batch
// runs the op often enough to last about `batchSeconds` (once for slow ops).
double timeCall(const std::function<void()>& op, int repeats, const c10::Device& device,
                double batchSeconds = 2e-3) {
  const double once = warmUpAndTimeOnce(op, device);
  const int inner = std::clamp(static_cast<int>(batchSeconds / once), 1, 10000);
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    synchronize(device);
    const Clock::time_point start = Clock::now();
    for (int k = 0; k < inner; ++k) op();
    synchronize(device);
    times.push_back(secondsSince(start) / inner);
  }
  return median(std::move(times));
}

// Mean seconds per call of `op` run back to back for at least `seconds` of wall clock, after one
// warm-up call. Under a CPU-time quota this is the throttled rate: the loop spans many periods,
// stopped ones included. The clock is read about every millisecond of calls at full speed.
double loopMean(const std::function<void()>& op, double seconds, const c10::Device& device) {
  const double once = warmUpAndTimeOnce(op, device);
  const int64_t batch = std::clamp<int64_t>(static_cast<int64_t>(1e-3 / once), 1, 10000);
  int64_t calls = 0;
  double elapsed = 0;
  const Clock::time_point start = Clock::now();
  do {
    for (int64_t k = 0; k < batch; ++k) op();
    synchronize(device);
    calls += batch;
    elapsed = secondsSince(start);
  } while (elapsed < seconds);
  return elapsed / static_cast<double>(calls);
}

at::ScalarType scalarType(DType t) {
  switch (t) {
    case DType::Float32: return at::kFloat;
    case DType::Float64: return at::kDouble;
    case DType::Float16: return at::kHalf;
    case DType::BFloat16: return at::kBFloat16;
    case DType::Int64: return at::kLong;
    default: break;
  }
  throw RuntimeError(fmt::format("profiler: no benchmark dtype {}", ir::dtypeName(t)));
}

// One benchmarked call priced by the planner's own op costs: a one-node graph over fresh inputs.
class PricedCall {
 public:
  ir::ValueId input(ir::Shape shape, DType dtype) {
    return graph_.addValue(ir::ValueKind::Input, fmt::format("x{}", graph_.values.size()), std::move(shape), dtype);
  }
  static ir::Arg tensor(std::string name, ir::ValueId v) {
    ir::Arg a;
    a.name = std::move(name);
    a.type = "Tensor";
    a.kind = ir::Arg::Kind::Tensor;
    a.values = {v};
    return a;
  }
  static ir::Arg constant(std::string name, ir::Constant c) {
    ir::Arg a;
    a.name = std::move(name);
    a.kind = ir::Arg::Kind::Constant;
    a.constant = std::move(c);
    return a;
  }
  // The forward work of `op` on `args` with one output of `shape`: FLOPs for the flop-bound
  // families, bytes read + written for the others. A formula that does not apply is a bug here.
  double work(OpFamily family, std::string op, std::vector<ir::Arg> args, ir::Shape output, DType dtype) {
    ir::Node n;
    n.op = std::move(op);
    n.args = std::move(args);
    n.outputs.push_back(
        graph_.addValue(ir::ValueKind::Activation, fmt::format("y{}", graph_.values.size()), std::move(output), dtype));
    const ir::NodeId id = graph_.addNode(std::move(n));
    bool known = false;
    const ir::NodeCost c = ir::nodeCost(graph_, graph_.node(id), &known);
    if (!known) throw std::logic_error("profiler: op_cost has no formula for " + graph_.node(id).op);
    return cost::flopBound(family) ? c.flops
                                   : static_cast<double>(c.bytesRead) + static_cast<double>(c.bytesWritten);
  }

 private:
  ir::Graph graph_;
};

// One measurement: a call and its work.
struct Measured {
  double work = 0, seconds = 0;
};

struct Bench {
  const c10::Device device;
  const int repeats;
  const double meanOverSeconds = 0;  // ComputeBenchmarkOptions::meanOverSeconds

  double time(const std::function<void()>& op) const {
    return meanOverSeconds > 0 ? loopMean(op, meanOverSeconds, device) : timeCall(op, repeats, device);
  }

  at::TensorOptions options(DType t) const { return at::TensorOptions().dtype(scalarType(t)).device(device); }

  // size: the family's size parameter (see sizesOf).
  Measured run(OpFamily family, DType t, int64_t size) const {
    PricedCall priced;
    const at::TensorOptions o = options(t);
    switch (family) {
      case OpFamily::MatMul: {  // mm of n×n
        const at::Tensor a = at::randn({size, size}, o), b = at::randn({size, size}, o);
        const double work = priced.work(family, "aten::mm",
                                        {PricedCall::tensor("self", priced.input({size, size}, t)),
                                         PricedCall::tensor("mat2", priced.input({size, size}, t))},
                                        {size, size}, t);
        return {work, time([&] { at::mm(a, b); })};
      }
      case OpFamily::Convolution: {  // 3×3 conv2d, 32 → 32 channels, batch 4, size×size images
        const int64_t batch = 4, channels = 32;
        const at::Tensor x = at::randn({batch, channels, size, size}, o);
        const at::Tensor w = at::randn({channels, channels, 3, 3}, o);
        const at::Tensor b = at::randn({channels}, o);
        const std::vector<int64_t> one{1, 1};
        const double work = priced.work(
            family, "aten::conv2d",
            {PricedCall::tensor("input", priced.input({batch, channels, size, size}, t)),
             PricedCall::tensor("weight", priced.input({channels, channels, 3, 3}, t)),
             PricedCall::tensor("bias", priced.input({channels}, t)),
             PricedCall::constant("stride", std::vector<int64_t>{1, 1}),
             PricedCall::constant("padding", std::vector<int64_t>{1, 1}),
             PricedCall::constant("dilation", std::vector<int64_t>{1, 1}), PricedCall::constant("groups", int64_t{1})},
            {batch, channels, size, size}, t);
        return {work, time([&] { at::conv2d(x, w, b, one, one); })};
      }
      case OpFamily::Elementwise: {  // the mean of add (cheap) and gelu (a transcendental) on `size` elements
        const at::Tensor x = at::randn({size}, o), y = at::randn({size}, o);
        const double add = priced.work(family, "aten::add",
                                       {PricedCall::tensor("self", priced.input({size}, t)),
                                        PricedCall::tensor("other", priced.input({size}, t)),
                                        PricedCall::constant("alpha", int64_t{1})},
                                       {size}, t);
        const double gelu = priced.work(family, "aten::gelu",
                                        {PricedCall::tensor("self", priced.input({size}, t)),
                                         PricedCall::constant("approximate", std::string("none"))},
                                        {size}, t);
        const double addSeconds = time([&] { at::add(x, y); });
        const double geluSeconds = time([&] { at::gelu(x); });
        return {(add + gelu) / 2, (addSeconds + geluSeconds) / 2};
      }
      case OpFamily::Reduction: {  // sum over the last dimension of [size, 512]
        const at::Tensor x = at::randn({size, 512}, o);
        const double work = priced.work(family, "aten::sum",
                                        {PricedCall::tensor("self", priced.input({size, 512}, t)),
                                         PricedCall::constant("dim", std::vector<int64_t>{-1}),
                                         PricedCall::constant("keepdim", false), PricedCall::constant("dtype", {})},
                                        {size}, t);
        const std::vector<int64_t> last{-1};
        return {work, time([&] { at::sum(x, at::IntArrayRef(last)); })};
      }
      case OpFamily::Normalization: {  // layer_norm over the last 512 of [size, 512], affine
        const at::Tensor x = at::randn({size, 512}, o), w = at::randn({512}, o), b = at::randn({512}, o);
        const double work = priced.work(family, "aten::layer_norm",
                                        {PricedCall::tensor("input", priced.input({size, 512}, t)),
                                         PricedCall::constant("normalized_shape", std::vector<int64_t>{512}),
                                         PricedCall::tensor("weight", priced.input({512}, t)),
                                         PricedCall::tensor("bias", priced.input({512}, t)),
                                         PricedCall::constant("eps", 1e-5)},
                                        {size, 512}, t);
        return {work, time([&] { at::layer_norm(x, {512}, w, b, 1e-5); })};
      }
      case OpFamily::Softmax: {  // softmax over the last dimension of [size, 512]
        const at::Tensor x = at::randn({size, 512}, o);
        const double work = priced.work(family, "aten::softmax",
                                        {PricedCall::tensor("self", priced.input({size, 512}, t)),
                                         PricedCall::constant("dim", int64_t{-1}), PricedCall::constant("dtype", {})},
                                        {size, 512}, t);
        return {work, time([&] { at::softmax(x, -1); })};
      }
      case OpFamily::Embedding: {  // `size` random rows of 256 from a table of 16384
        const int64_t rows = 16384, width = 256;
        const at::Tensor table = at::randn({rows, width}, o);
        const at::Tensor ids = at::randint(rows, {size}, options(DType::Int64));
        const double work = priced.work(family, "aten::embedding",
                                        {PricedCall::tensor("weight", priced.input({rows, width}, t)),
                                         PricedCall::tensor("indices", priced.input({size}, DType::Int64)),
                                         PricedCall::constant("padding_idx", int64_t{-1})},
                                        {size, width}, t);
        return {work, time([&] { at::embedding(table, ids); })};
      }
      case OpFamily::DataMovement: {  // the mean of contiguous() of a transposed [size, 512] and clone()
        const at::Tensor x = at::randn({size, 512}, o);
        const at::Tensor transposed = x.t();
        const double contiguous = priced.work(family, "aten::contiguous",
                                              {PricedCall::tensor("self", priced.input({512, size}, t))},
                                              {512, size}, t);
        const double clone = priced.work(family, "aten::clone",
                                         {PricedCall::tensor("self", priced.input({size, 512}, t)),
                                          PricedCall::constant("memory_format", {})},
                                         {size, 512}, t);
        const double contiguousSeconds = time([&] { transposed.contiguous(); });
        const double cloneSeconds = time([&] { x.clone(); });
        return {(contiguous + clone) / 2, (contiguousSeconds + cloneSeconds) / 2};
      }
    }
    throw std::logic_error("profiler: unknown op family");
  }
};

// The size parameter of each family's benchmark, smallest first: matmul n (n×n), convolution
// image side, elementwise elements, reduction/normalization/softmax/data-movement rows of 512,
// embedding rows gathered. Quick: 3 sizes; full: 5; a GPU gets larger ones.
std::vector<int64_t> sizesOf(OpFamily family, bool quick, bool gpu) {
  switch (family) {
    case OpFamily::MatMul:
      if (gpu) return quick ? std::vector<int64_t>{256, 1024, 4096} : std::vector<int64_t>{256, 512, 1024, 2048, 4096, 8192};
      return quick ? std::vector<int64_t>{32, 128, 384} : std::vector<int64_t>{32, 64, 128, 256, 512, 1024};
    case OpFamily::Convolution:
      if (gpu) return quick ? std::vector<int64_t>{16, 64, 256} : std::vector<int64_t>{16, 32, 64, 128, 256};
      return quick ? std::vector<int64_t>{4, 12, 32} : std::vector<int64_t>{4, 8, 16, 32, 64};
    case OpFamily::Elementwise:
      if (gpu) return quick ? std::vector<int64_t>{1024, 1 << 20, 1 << 24} : std::vector<int64_t>{1024, 1 << 16, 1 << 20, 1 << 24, 1 << 26};
      return quick ? std::vector<int64_t>{1024, 1 << 15, 1 << 20} : std::vector<int64_t>{1024, 1 << 14, 1 << 18, 1 << 21, 1 << 23};
    case OpFamily::Embedding:
      if (gpu) return quick ? std::vector<int64_t>{64, 4096, 65536} : std::vector<int64_t>{64, 1024, 16384, 65536, 262144};
      return quick ? std::vector<int64_t>{16, 256, 4096} : std::vector<int64_t>{16, 128, 1024, 4096, 16384};
    case OpFamily::Reduction:
    case OpFamily::Normalization:
    case OpFamily::Softmax:
    case OpFamily::DataMovement:
      if (gpu) return quick ? std::vector<int64_t>{4, 1024, 32768} : std::vector<int64_t>{4, 256, 4096, 32768, 131072};
      return quick ? std::vector<int64_t>{4, 128, 2048} : std::vector<int64_t>{4, 64, 512, 2048, 8192};
  }
  return {};
}

std::string rate(double perSecond, bool flops) {
  const char* unit = flops ? "FLOP/s" : "B/s";
  if (perSecond >= 1e12) return fmt::format("{:.1f} T{}", perSecond / 1e12, unit);
  if (perSecond >= 1e9) return fmt::format("{:.1f} G{}", perSecond / 1e9, unit);
  return fmt::format("{:.1f} M{}", perSecond / 1e6, unit);
}

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(" \t"));
        return name;
      }
    }
  return "unknown CPU";
}

// at::set_num_threads reaches OpenMP and MKL but not an OpenBLAS built with its own thread pool
// (Debian's libopenblas0-pthread), which then runs every matmul on all cores. Set it too where
// it is loaded.
void setBlasThreads(int threads) {
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(threads);
}

}  // namespace

cost::DeviceProfile benchmarkCompute(const ComputeBenchmarkOptions& options) {
  if (options.threads < 1)
    throw RuntimeError(fmt::format("--threads {}: must be 1 or more", options.threads));
  c10::Device device(c10::kCPU);
  cost::DeviceProfile profile;
  profile.threads = options.threads;
  at::set_num_threads(options.threads);
  setBlasThreads(options.threads);
  std::vector<DType> dtypes{DType::Float32, DType::Float64};
  if (options.cuda) {
#ifdef HAP_HAVE_CUDA
    if (!torch::cuda::is_available())
      throw RuntimeError("--cuda: LibTorch sees no GPU on this machine; run without --cuda to profile the CPU");
    device = c10::Device(c10::kCUDA, 0);
    profile.description = fmt::format("cuda: {}", at::cuda::getDeviceProperties(0)->name);
    dtypes.push_back(DType::Float16);
    dtypes.push_back(DType::BFloat16);
#else
    throw RuntimeError("--cuda: this build of HAP has no CUDA (LibTorch without CUDA); run without --cuda");
#endif
  } else {
    profile.description =
        fmt::format("cpu: {}, {} thread{}", cpuModel(), options.threads, options.threads == 1 ? "" : "s");
  }
  const bool gpu = device.is_cuda();
  if (options.meanOverSeconds < 0)
    throw RuntimeError(fmt::format("profiler: mean-over time {} s must not be negative", options.meanOverSeconds));
  const Bench bench{device, options.quick ? 3 : 7, options.meanOverSeconds};
  auto say = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };

  for (int f = 0; f < cost::kOpFamilyCount; ++f) {
    const auto family = static_cast<OpFamily>(f);
    for (DType t : dtypes) {
      cost::OpThroughput ops;
      ops.family = family;
      ops.dtype = t;
      for (int64_t size : sizesOf(family, options.quick, gpu)) {
        const Measured m = bench.run(family, t, size);
        // Timer resolution can make a tiny op read 0 s; the store needs positive times.
        const double seconds = std::max(m.seconds, 1e-9);
        if (!ops.samples.empty() && !(m.work > ops.samples.back().work))
          throw std::logic_error("profiler: benchmark sizes must grow");
        ops.samples.push_back({m.work, seconds});
      }
      const cost::OpSample& largest = ops.samples.back();
      say(fmt::format("{} {}: {} sizes, {} at the largest", cost::opFamilyName(family), ir::dtypeName(t),
                      ops.samples.size(), rate(largest.work / largest.seconds, cost::flopBound(family))));
      profile.ops.push_back(std::move(ops));
    }
  }

  // Memory bandwidth: a copy of a buffer far larger than any cache reads and writes its bytes
  // once each. Into a buffer allocated once: the pages of a fresh clone would be faulted in on
  // every call, which measures the kernel, not the memory.
  const int64_t elements = gpu ? (int64_t{1} << 28) : options.quick ? (int64_t{1} << 24) : (int64_t{1} << 26);
  const at::Tensor big = at::ones({elements}, at::TensorOptions().dtype(at::kFloat).device(device));
  at::Tensor copy = at::empty_like(big);
  const double seconds = options.meanOverSeconds > 0 ? bench.time([&] { copy.copy_(big); })
                                                     : timeCall([&] { copy.copy_(big); }, options.quick ? 3 : 5, device);
  profile.memoryBandwidth = 2.0 * static_cast<double>(big.nbytes()) / seconds;
  say(fmt::format("memory bandwidth: {} (copy of {} MiB)", rate(profile.memoryBandwidth, false),
                  big.nbytes() >> 20));
  return profile;
}

double deviceMemoryBytes(bool cuda) {
  if (cuda) {
#ifdef HAP_HAVE_CUDA
    return static_cast<double>(at::cuda::getDeviceProperties(0)->totalGlobalMem);
#else
    throw RuntimeError("--cuda: this build of HAP has no CUDA (LibTorch without CUDA); run without --cuda");
#endif
  }
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("MemTotal:", 0) == 0) return std::strtod(line.c_str() + 9, nullptr) * 1024;  // "… kB"
  throw RuntimeError("/proc/meminfo: no MemTotal line; cannot tell this machine's memory");
}

namespace {

// The buffers and call of one collective at one size; `bytes` is the full tensor's (collective_fit.h).
struct CollectiveCall {
  double bytes = 0;
  std::function<void()> prepare;  // untimed: restores the inputs
  std::function<void()> run;
};

struct Kind {
  cost::Collective collective;
  std::string algorithm;
};

CollectiveCall makeCall(Communicator& comm, const Kind& kind, int64_t targetBytes) {
  const int n = comm.size();
  const at::TensorOptions o = at::TensorOptions().dtype(at::kFloat).device(comm.device());
  const int64_t elements = std::max<int64_t>(n, (targetBytes / 4 / n) * n);  // a multiple of n
  const std::vector<int64_t> even(static_cast<size_t>(n), elements / n);
  const CommMethod method = kind.algorithm == "grouped" ? CommMethod::Grouped : CommMethod::Padded;
  CollectiveCall call;
  call.bytes = 4.0 * static_cast<double>(elements);
  switch (kind.collective) {
    case cost::Collective::AllReduce: {
      auto t = std::make_shared<at::Tensor>(at::ones({elements}, o));
      call.prepare = [t] { t->fill_(1); };
      call.run = [&comm, t] { comm.allReduce(*t); };
      break;
    }
    case cost::Collective::Broadcast: {
      auto t = std::make_shared<at::Tensor>(at::ones({elements}, o));
      call.prepare = [] {};
      call.run = [&comm, t] { comm.broadcast(*t, 0); };
      break;
    }
    case cost::Collective::AllGather: {
      const at::Tensor local = at::ones({elements / n}, o);
      call.prepare = [] {};
      call.run = [&comm, local, even, method] { comm.allGather(local, 0, even, method); };
      break;
    }
    case cost::Collective::ReduceScatter: {
      const at::Tensor full = at::ones({elements}, o);
      call.prepare = [] {};
      call.run = [&comm, full, even, method] { comm.reduceScatter(full, 0, even, method); };
      break;
    }
    case cost::Collective::AllToAll: {
      // [rows, cols], both multiples of n: cut by rows, re-cut by columns.
      const int64_t cols = 16 * n;
      const int64_t rows = std::max<int64_t>(n, (elements / cols / n) * n);
      const at::Tensor local = at::ones({rows / n, cols}, o);
      const std::vector<int64_t> fromLengths(static_cast<size_t>(n), rows / n), toLengths(static_cast<size_t>(n), cols / n);
      call.bytes = 4.0 * static_cast<double>(rows * cols);
      call.prepare = [] {};
      call.run = [&comm, local, fromLengths, toLengths] { comm.allToAll(local, 0, fromLengths, 1, toLengths); };
      break;
    }
  }
  return call;
}

std::string bytesText(double b) {
  if (b >= 1 << 20) return fmt::format("{:g} MiB", b / (1 << 20));
  return fmt::format("{:g} KiB", b / 1024);
}

}  // namespace

std::vector<cost::CollectiveFit> benchmarkCollectives(Communicator& comm, const CollectiveBenchmarkOptions& options) {
  const int n = comm.size();
  if (n < 2) throw RuntimeError("collective benchmarks need 2 or more ranks (hap profile --ranks 2 or more)");
  const std::vector<Kind> kinds{
      {cost::Collective::AllReduce, "ring"},        {cost::Collective::AllGather, "padded"},
      {cost::Collective::AllGather, "grouped"},     {cost::Collective::ReduceScatter, "padded"},
      {cost::Collective::ReduceScatter, "grouped"}, {cost::Collective::AllToAll, ""},
      {cost::Collective::Broadcast, ""},
  };
  // Quick: 4 KiB … 4 MiB; full: 4 KiB … 256 MiB (a large model's gradient buckets and layers).
  const int64_t largest = options.quick ? (int64_t{4} << 20) : (int64_t{256} << 20);
  const c10::Device device = comm.device();
  std::vector<cost::CollectiveFit> fits;
  for (const Kind& kind : kinds) {
    std::vector<cost::CollectiveSample> samples;
    for (int64_t target = 4096; target <= largest; target *= 4) {
      CollectiveCall call = makeCall(comm, kind, target);
      // Many repeats of the fast sizes, whose times a busy machine disturbs most, few of the slow
      // ones; every rank computes the same count.
      const int repeats = target >= (int64_t{64} << 20) ? 3 : target >= (int64_t{16} << 20) ? 5 : target >= (int64_t{1} << 20) ? (options.quick ? 7 : 11)
                                                                                         : (options.quick ? 15 : 21);
      call.prepare();
      call.run();  // warm-up (connections, buffers)
      synchronize(device);
      std::vector<double> v;
      for (int r = 0; r < repeats; ++r) {
        call.prepare();
        synchronize(device);
        comm.barrier();
        const Clock::time_point start = Clock::now();
        call.run();
        synchronize(device);
        v.push_back(secondsSince(start));
      }
      at::Tensor times = at::tensor(v, at::TensorOptions().dtype(at::kDouble));
      comm.allReduceMax(times);  // each repeat lasts until its slowest rank is done
      std::copy_n(times.data_ptr<double>(), repeats, v.begin());
      samples.push_back({kind.collective, kind.algorithm, n, call.bytes, std::max(median(std::move(v)), 1e-9)});
    }
    if (comm.rank() != 0) continue;
    cost::CollectiveFit fit = cost::fitCollective(samples, cost::LinkClass::Intra);
    if (options.progress) {
      const std::string name = kind.algorithm.empty()
                                   ? std::string(cost::collectiveName(kind.collective))
                                   : fmt::format("{} {}", cost::collectiveName(kind.collective), kind.algorithm);
      options.progress(fmt::format("{}: {} sizes {} … {}, latency {:.1f} us, bandwidth {}, residual {:.1f}%", name,
                                   samples.size(), bytesText(samples.front().bytes), bytesText(samples.back().bytes),
                                   fit.link.latency * 1e6,
                                   std::isfinite(fit.link.bandwidth) ? rate(fit.link.bandwidth, false) : "unbounded",
                                   100 * fit.relativeResidual));
    }
    fits.push_back(std::move(fit));
  }
  return fits;
}

std::string collectiveFitsToJson(const std::vector<cost::CollectiveFit>& fits) {
  nlohmann::json list = nlohmann::json::array();
  for (const cost::CollectiveFit& f : fits) {
    list.push_back({{"collective", cost::collectiveName(f.collective)},
                    {"algorithm", f.algorithm},
                    {"link_class", cost::linkClassName(f.linkClass)},
                    {"latency", f.link.latency},
                    {"bandwidth", std::isfinite(f.link.bandwidth) ? nlohmann::json(f.link.bandwidth) : nlohmann::json()},
                    {"ranks", f.ranks},
                    {"samples", f.samples},
                    {"relative_residual", f.relativeResidual}});
  }
  return nlohmann::json{{"format", "hap-collective-fits"}, {"version", 1}, {"fits", list}}.dump(2);
}

std::vector<cost::CollectiveFit> collectiveFitsFromJson(const std::string& text, const std::string& origin) {
  try {
    const nlohmann::json doc = nlohmann::json::parse(text);
    if (doc.value("format", "") != "hap-collective-fits" || doc.value("version", 0) != 1)
      throw Error(fmt::format("{}: not a hap-collective-fits document of version 1", origin));
    std::vector<cost::CollectiveFit> fits;
    for (const nlohmann::json& j : doc.at("fits")) {
      cost::CollectiveFit f;
      const std::string collective = j.at("collective").get<std::string>();
      bool found = false;
      for (int c = 0; c < cost::kCollectiveCount; ++c)
        if (cost::collectiveName(static_cast<cost::Collective>(c)) == collective) {
          f.collective = static_cast<cost::Collective>(c);
          found = true;
        }
      const std::optional<cost::LinkClass> link = cost::parseLinkClass(j.at("link_class").get<std::string>());
      if (!found || !link) throw Error(fmt::format("{}: unknown collective or link class in {}", origin, j.dump()));
      f.algorithm = j.at("algorithm").get<std::string>();
      f.linkClass = *link;
      f.link.latency = j.at("latency").get<double>();
      f.link.bandwidth = j.at("bandwidth").is_null() ? std::numeric_limits<double>::infinity()
                                                      : j.at("bandwidth").get<double>();
      f.ranks = j.at("ranks").get<int>();
      f.samples = j.at("samples").get<int>();
      f.relativeResidual = j.at("relative_residual").get<double>();
      fits.push_back(std::move(f));
    }
    return fits;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: malformed collective fits: {}", origin, e.what()));
  }
}

std::string deviceProfileToJson(const cost::DeviceProfile& d) {
  nlohmann::json ops = nlohmann::json::array();
  for (const cost::OpThroughput& o : d.ops) {
    nlohmann::json samples = nlohmann::json::array();
    for (const cost::OpSample& x : o.samples) samples.push_back({x.work, x.seconds});
    ops.push_back({{"family", cost::opFamilyName(o.family)}, {"dtype", ir::dtypeName(o.dtype)}, {"samples", samples}});
  }
  return nlohmann::json{{"format", "hap-device-profile"},
                        {"version", 1},
                        {"device_type", d.deviceType},
                        {"description", d.description},
                        {"threads", d.threads},
                        {"memory_bandwidth", d.memoryBandwidth},
                        {"compute_scale", d.computeScale},
                        {"collective_slowdown", d.collectiveSlowdown},
                        {"base_memory_bytes", d.baseMemoryBytes},
                        {"memory_scale", d.memoryScale},
                        {"ops", ops}}
      .dump(1);
}

cost::DeviceProfile deviceProfileFromJson(const std::string& text, const std::string& origin) {
  try {
    const nlohmann::json doc = nlohmann::json::parse(text);
    if (doc.value("format", "") != "hap-device-profile" || doc.value("version", 0) != 1)
      throw Error(fmt::format("{}: not a hap-device-profile document of version 1", origin));
    cost::DeviceProfile d;
    d.deviceType = doc.at("device_type").get<std::string>();
    d.description = doc.at("description").get<std::string>();
    d.threads = doc.at("threads").get<int>();
    d.memoryBandwidth = doc.at("memory_bandwidth").get<double>();
    d.computeScale = doc.at("compute_scale").get<double>();
    d.collectiveSlowdown = doc.at("collective_slowdown").get<double>();
    d.baseMemoryBytes = doc.at("base_memory_bytes").get<double>();
    d.memoryScale = doc.at("memory_scale").get<double>();
    for (const nlohmann::json& j : doc.at("ops")) {
      const std::optional<OpFamily> family = cost::parseOpFamily(j.at("family").get<std::string>());
      const std::optional<DType> dtype = ir::parseDType(j.at("dtype").get<std::string>());
      if (!family || !dtype) throw Error(fmt::format("{}: unknown op family or dtype in {}", origin, j.dump()));
      cost::OpThroughput o;
      o.family = *family;
      o.dtype = *dtype;
      for (const nlohmann::json& x : j.at("samples")) o.samples.push_back({x.at(0).get<double>(), x.at(1).get<double>()});
      d.ops.push_back(std::move(o));
    }
    return d;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: malformed device profile: {}", origin, e.what()));
  }
}

}  // namespace hap::runtime
