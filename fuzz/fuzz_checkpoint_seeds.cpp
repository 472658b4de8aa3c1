// Writes seeds of the checkpoint target (fuzz/corpus/fuzz_checkpoint_header/) in the current
// format, sealed with their checksums as saveCheckpoint writes them (runtime/train/checkpoint.cpp):
// an Adam checkpoint and an SGD one, each as the whole file (first byte 0) and as its data.pkl
// (first byte 1). Usage: fuzz_checkpoint_seeds OUT_DIR (scripts/fuzz.sh --seeds runs it)
#include <ATen/core/ivalue.h>
#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/train/checkpoint_format.h"

namespace {

void write(const std::string& path, char first, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.put(first);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
}

void seed(const std::string& dir, const std::string& name, const std::string& optimizer) {
  using c10::impl::GenericDict;
  GenericDict parameters(c10::StringType::get(), c10::TensorType::get());
  GenericDict states(c10::StringType::get(), c10::AnyType::get());
  for (const auto& [key, shape] : {std::pair<std::string, std::vector<int64_t>>{"fc1.weight", {2, 3}},
                                   {"fc1.bias", {2}}}) {
    parameters.insert(key, at::full(shape, 0.25, at::kFloat));
    GenericDict entry(c10::StringType::get(), c10::TensorType::get());
    entry.insert("step", at::scalar_tensor(3, at::kLong));
    if (optimizer == "sgd") {
      entry.insert("momentum_buffer", at::ones(shape, at::kFloat));
    } else {
      entry.insert("exp_avg", at::ones(shape, at::kFloat));
      entry.insert("exp_avg_sq", at::full(shape, 0.5, at::kFloat));
    }
    states.insert(key, entry);
  }
  GenericDict buffers(c10::StringType::get(), c10::TensorType::get());
  buffers.insert("bn.running_mean", at::zeros({2}, at::kFloat));
  GenericDict root(c10::StringType::get(), c10::AnyType::get());
  root.insert("format", std::string(hap::runtime::checkpoint_format::kFormat));
  root.insert("version", hap::runtime::checkpoint_format::kVersion);
  root.insert("iteration", int64_t{3});
  root.insert("optimizer", optimizer);
  root.insert("optimizer_steps", int64_t{3});
  root.insert("parameters", parameters);
  root.insert("optimizer_state", states);
  root.insert("buffers", buffers);
  c10::IValue sealed(root);
  hap::runtime::checkpoint_format::seal(sealed);
  const std::vector<char> bytes = torch::jit::pickle_save(sealed);
  write(dir + "/" + name + ".pt", '\0', bytes.data(), bytes.size());
  // The same file's data.pkl, for the target's wrapped mode.
  const std::string path = dir + "/" + name + ".tmp.pt";
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  {
    caffe2::serialize::PyTorchStreamReader reader(path);
    auto record = reader.getRecord("data.pkl");
    write(dir + "/" + name + ".pkl", '\1', std::get<0>(record).get(), std::get<1>(record));
  }
  std::remove(path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_checkpoint_seeds OUT_DIR\n");
    return 2;
  }
  seed(argv[1], "hap-v3-adam", "adam");
  seed(argv[1], "hap-v3-sgd", "sgd");
  std::printf("fuzz_checkpoint_seeds: 4 seeds in %s\n", argv[1]);
  return 0;
}
