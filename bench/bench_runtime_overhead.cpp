// Benchmark (a) of the runtime (issue 5): the interpreter's overhead. One rank executes a plan
// (hap-worker's executor: every node through the JIT operator registry, autograd on) against
// plain LibTorch: the same TorchScript module's forward + backward, same batch, same threads.
// The two are interleaved iteration by iteration so machine noise hits both alike; the figure is
// the ratio of the medians (target ≤ 1.05).
//
// Usage: bench_runtime_overhead PLAN.json [--model FILE] [--iterations N] [--warmup N] [--cuda] [--no-fusion]
// (scripts/bench-runtime.sh makes the plans and runs it on the zoo's models; scripts/gpu-check.sh
// runs it with --cuda, where each timing ends with a device synchronisation.)
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/cuda.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "engine/base/error.h"
#include "engine/import/model_tensors.h"
#include "engine/plan/open_plan.h"
#include "engine/plan/plan_json.h"
#include "runtime/comm/communicator.h"
#include "runtime/data/data.h"
#include "runtime/core/executor.h"
#include "runtime/core/heap_policy.h"
#include "runtime/core/module_device.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  hap::runtime::retainFreedHeapMemory();  // as hap-worker does, for both sides of the comparison
  CLI::App app{"Interpreter overhead: 1-rank plan execution vs plain LibTorch forward+backward", "bench_runtime_overhead"};
  std::string planPath, modelPath;
  int iterations = 30, warmup = 5;
  bool cuda = false, noFusion = false;
  app.add_option("plan", planPath, "A plan for one device")->required()->check(CLI::ExistingFile);
  app.add_option("--model", modelPath, "Model file (default: the plan's, or the file of that name beside the plan)");
  app.add_option("--iterations", iterations, "Timed iterations of each")->capture_default_str();
  app.add_option("--warmup", warmup, "Untimed iterations first")->capture_default_str();
  app.add_flag("--cuda", cuda, "Run both on GPU 0 (a CUDA build of LibTorch)");
  app.add_flag("--no-fusion", noFusion,
               "Run the plain module's graph as written: no profiling executor, no fused kernels (on a GPU "
               "TorchScript fuses element-wise chains, which the op-by-op executor does not)");
  CLI11_PARSE(app, argc, argv);
  try {
    using namespace hap;
    plan::Plan read = plan::readPlan(planPath);
    if (read.devices.size() != 1) throw Error(fmt::format("{}: a plan for one device is needed", planPath));
    // Opened as hap-worker opens it: the model located, its hash checked, imported, verified.
    import::ModelTensors tensors;
    plan::OpenPlanOptions openOptions;
    openOptions.modelPath = modelPath;
    openOptions.tensors = &tensors;
    const plan::OpenedPlan opened = plan::openPlan(std::move(read), planPath, openOptions);
    const plan::Plan& plan = opened.plan;
    const ir::Graph& planned = opened.planned;
    modelPath = opened.modelPath;
    std::unique_ptr<runtime::Communicator> comm = runtime::Communicator::connect(runtime::WorkerEnv{}, cuda);
    const c10::Device device = comm->device();
    runtime::ExecutorOptions options;
    options.device = device;
    runtime::Executor exec(plan, planned, tensors, *comm, options);
    std::unique_ptr<runtime::BatchSource> source = runtime::makeBatchSource({}, exec.inputPieces());
    std::vector<at::Tensor> batch = source->batch(0);
    for (at::Tensor& t : batch) t = t.to(device);  // both read the batch where they compute

    if (noFusion) torch::jit::setGraphExecutorOptimize(false);
    torch::jit::Module module = runtime::loadModuleOn(modelPath, device);
    for (const auto& p : module.named_parameters(true)) p.value.set_requires_grad(true);
    std::vector<c10::IValue> inputs(batch.begin(), batch.end());
    // Kernels run asynchronously on a GPU: a timing ends when they have finished.
    auto settle = [&] {
      if (cuda) torch::cuda::synchronize();
    };

    using Clock = std::chrono::steady_clock;
    std::vector<double> hap, plain;
    for (int i = 0; i < warmup + iterations; ++i) {
      at::manual_seed(i);
      settle();
      auto t0 = Clock::now();
      at::Tensor loss = exec.forward(batch);
      exec.backward(loss);
      settle();
      auto t1 = Clock::now();
      for (runtime::LocalParameter& p : exec.parameters()) p.value.mutable_grad() = at::Tensor();
      at::manual_seed(i);
      settle();
      auto t2 = Clock::now();
      at::Tensor ref = module.forward(inputs).toTensor();
      ref.backward();
      settle();
      auto t3 = Clock::now();
      for (const auto& p : module.parameters()) p.mutable_grad() = at::Tensor();
      if (i >= warmup) {
        hap.push_back(std::chrono::duration<double>(t1 - t0).count());
        plain.push_back(std::chrono::duration<double>(t3 - t2).count());
      }
    }
    const double h = median(hap), p = median(plain);
    std::string where = cuda ? "GPU 0" : fmt::format("{} threads", at::get_num_threads());
    if (noFusion) where += ", plain module unfused";
    std::cout << fmt::format("{}: {} nodes, {}; median forward+backward: hap-worker executor {:.3f} ms, "
                             "plain LibTorch {:.3f} ms; overhead {:.3f}x (target <= 1.05)\n",
                             modelPath, planned.nodes.size(), where, h * 1e3, p * 1e3, h / p);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_runtime_overhead: error: " << e.what() << "\n";
    return 1;
  }
}
