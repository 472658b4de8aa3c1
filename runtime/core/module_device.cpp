#include "runtime/core/module_device.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/script.h>

namespace hap::runtime {
namespace {

// Device constants of `block` and its nested blocks: prim::Constant nodes whose value is a
// Device (stored as its string, as torch::jit::insertConstant writes it).
void retarget(torch::jit::Block* block, const std::string& device) {
  for (torch::jit::Node* n : block->nodes()) {
    for (torch::jit::Block* inner : n->blocks()) retarget(inner, device);
    if (n->kind() == c10::prim::Constant && n->outputs().size() == 1 &&
        n->output()->type()->kind() == c10::TypeKind::DeviceObjType)
      n->s_(c10::attr::value, device);
  }
}

}  // namespace

torch::jit::Module loadModuleOn(const std::string& path, c10::Device device) {
  torch::jit::Module module = torch::jit::load(path, device);
  if (device.is_cpu()) return module;
  const std::string name = device.str();
  for (const torch::jit::Module& m : module.modules())
    for (const torch::jit::Method& method : m.get_methods()) retarget(method.graph()->block(), name);
  return module;
}

}  // namespace hap::runtime
