#include "runtime/core/counter_dropout.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/custom_operator.h>

#include <algorithm>
#include <mutex>

#include "engine/rules/families.h"
#include "runtime/core/counter_rng.h"

namespace hap::runtime {
namespace {

// keep · scale in the input's dtype, on its device (the factor every dropout form multiplies by).
at::Tensor scaledKeep(const at::Tensor& keep, const at::Tensor& input, double p) {
  const double scale = p >= 1 ? 0 : 1 / (1 - p);
  return keep.to(input.device()).to(input.scalar_type()).mul_(scale);
}

bool training(const c10::IValue& train) {
  return train.isNone() || train.toBool();
}

// The JIT operators of the reference: counterDropout on the whole input.
void dropoutOp(torch::jit::Stack& stack) {
  const bool train = torch::jit::pop(stack).toBool();
  const double p = torch::jit::pop(stack).toDouble();
  const at::Tensor input = torch::jit::pop(stack).toTensor();
  torch::jit::push(stack, counterDropout(input, p, train, input.sizes().vec(),
                                         std::vector<int64_t>(input.sizes().size(), 0), false)[0]);
}

void dropoutInPlaceOp(torch::jit::Stack& stack) {
  const bool train = torch::jit::pop(stack).toBool();
  const double p = torch::jit::pop(stack).toDouble();
  at::Tensor self = torch::jit::pop(stack).toTensor();
  if (train && p != 0) {
    const std::vector<int64_t> full = self.sizes().vec();
    const at::Tensor keep =
        dropoutKeepMask(drawDropoutKey(), p, full, std::vector<int64_t>(full.size(), 0), full);
    self.mul_(scaledKeep(keep, self, p));
  }
  torch::jit::push(stack, self);
}

void nativeDropoutOp(torch::jit::Stack& stack) {
  const bool train = training(torch::jit::pop(stack));
  const double p = torch::jit::pop(stack).toDouble();
  const at::Tensor input = torch::jit::pop(stack).toTensor();
  std::vector<at::Tensor> out = counterDropout(input, p, train, input.sizes().vec(),
                                               std::vector<int64_t>(input.sizes().size(), 0), true);
  torch::jit::push(stack, out[0], out[1]);
}

torch::jit::RegisterOperators registerCounterDropout({
    torch::jit::Operator("hap::dropout(Tensor input, float p, bool train) -> Tensor",
                         torch::jit::Operation(dropoutOp), c10::AliasAnalysisKind::FROM_SCHEMA),
    torch::jit::Operator("hap::dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)",
                         torch::jit::Operation(dropoutInPlaceOp),
                         c10::AliasAnalysisKind::FROM_SCHEMA),
    torch::jit::Operator(
        "hap::native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)",
        torch::jit::Operation(nativeDropoutOp), c10::AliasAnalysisKind::FROM_SCHEMA),
});

// Every dropout node of `block` (and of the blocks inside its nodes) replaced by the counter
// operator with the same inputs.
void rewriteBlock(torch::jit::Block* block) {
  std::vector<torch::jit::Node*> found;
  for (torch::jit::Node* node : block->nodes()) {
    for (torch::jit::Block* inner : node->blocks()) rewriteBlock(inner);
    if (!counterDropoutOp(node->kind().toQualString()).empty()) found.push_back(node);
  }
  for (torch::jit::Node* node : found) {
    const c10::Symbol op =
        c10::Symbol::fromQualString(counterDropoutOp(node->kind().toQualString()));
    torch::jit::Node* counter =
        node->owningGraph()->create(op, node->inputs(), node->outputs().size());
    counter->insertBefore(node);
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      counter->output(i)->setType(node->output(i)->type());
      node->output(i)->replaceAllUsesWith(counter->output(i));
    }
    node->destroy();
  }
}

}  // namespace

uint64_t drawDropoutKey() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get<at::CPUGeneratorImpl>()->random64();
}

at::Tensor dropoutKeepMask(uint64_t key, double p, const std::vector<int64_t>& full,
                           const std::vector<int64_t>& start, const std::vector<int64_t>& length) {
  at::Tensor keep = at::empty(length, at::TensorOptions().dtype(at::kBool));
  if (keep.numel() == 0) return keep;
  auto* out = reinterpret_cast<uint8_t*>(keep.data_ptr<bool>());
  const uint64_t threshold = keepThreshold(1 - p);
  const int64_t width = length.empty() ? 1 : std::max<int64_t>(length.back(), 1);
  // Rows of at least 32 Ki elements per task: smaller ones cost more to hand out than to draw.
  at::parallel_for(0, boxRows(length), std::max<int64_t>(1, (int64_t{1} << 15) / width),
                   [&](int64_t begin, int64_t end) {
                     keepMaskRows(key, threshold, full, start, length, begin, end, out);
                   });
  return keep;
}

std::vector<at::Tensor> counterDropout(const at::Tensor& input, double p, bool train,
                                       const std::vector<int64_t>& full,
                                       const std::vector<int64_t>& start, bool mask) {
  if (!train || p == 0) {
    std::vector<at::Tensor> out = {input.clone()};
    if (mask) out.push_back(at::ones_like(input, at::TensorOptions().dtype(at::kBool)));
    return out;
  }
  const at::Tensor keep = dropoutKeepMask(drawDropoutKey(), p, full, start, input.sizes().vec());
  std::vector<at::Tensor> out = {input * scaledKeep(keep, input, p)};
  if (mask) out.push_back(keep.to(input.device()));
  return out;
}

void useCounterDropout(torch::jit::Module& module) {
  for (const torch::jit::Module& m : module.modules())
    for (const torch::jit::Method& method : m.get_methods()) {
      const std::shared_ptr<torch::jit::Graph> graph = method.graph();
      // A scripted module's calls of functions (F.dropout) are inlined first, so that their
      // dropout nodes are the method's own.
      const bool calls = std::any_of(
          graph->nodes().begin(), graph->nodes().end(),
          [](const torch::jit::Node* n) { return n->kind() == c10::prim::CallFunction; });
      if (calls) torch::jit::Inline(*graph);
      rewriteBlock(graph->block());
    }
}

std::string counterDropoutOp(std::string_view atenOp) {
  if (rules::randomExecution(atenOp) != rules::Execution::DropoutMask) return "";
  return "hap::" + std::string(atenOp.substr(atenOp.find("::") + 2));
}

}  // namespace hap::runtime
