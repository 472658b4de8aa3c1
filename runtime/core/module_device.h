// A TorchScript module made to run on another device than it was traced on. Tracing bakes the
// tracing device into factory calls (`torch.arange(n, device=torch.device("cpu"))`), so a traced
// module loaded onto a GPU still makes those tensors on the CPU and fails at the first mixed op.
// The runtime takes a training program as device-agnostic (the executor gives every device
// argument its own device, executor.h); this is the same reading for the module run whole (the
// exactness check's single-device program, benchmark (a)'s plain LibTorch).
#pragma once

#include <c10/core/Device.h>

#include <string>

namespace torch::jit {
struct Module;
}

namespace hap::runtime {

// Loads the TorchScript file at `path` with its tensors on `device` and, off the CPU, makes every
// device constant in the graphs of its methods (and its submodules') name `device`. Call before
// the first run (the interpreter compiles a graph on first use). A factory whose device argument
// is None keeps LibTorch's default (the CPU): tracing records explicit devices. Throws whatever
// torch::jit::load throws for an unreadable file.
torch::jit::Module loadModuleOn(const std::string& path, c10::Device device);

}  // namespace hap::runtime
