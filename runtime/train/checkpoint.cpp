#include "runtime/train/checkpoint.h"

#include <c10/core/GradMode.h>
#include <ATen/ATen.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/script.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "runtime/comm/communicator.h"
#include "runtime/core/runtime_error.h"
#include "runtime/train/checkpoint_format.h"

namespace hap::runtime {
namespace {

namespace fs = std::filesystem;

using checkpoint_format::kFormat;
using checkpoint_format::kVersion;
constexpr const char* kStep = "step";

// The device of the ranks' collectives: the parameters' (NCCL wants GPU tensors, Gloo CPU ones).
at::Device commDevice(const std::vector<LocalParameter>& params) {
  return params.empty() ? at::Device(at::kCPU) : params.front().value.device();
}

void checkParameters(const std::vector<LocalParameter>& params, const Optimizer* optimizer, int rank, int size) {
  if (optimizer && &optimizer->parameters() != &params)
    throw std::logic_error("checkpoint: the optimizer was built over another parameter list");
  for (const LocalParameter& p : params) checkLocalParameter(p, rank, size);
}

// Writes `bytes` to `path` atomically: into a temporary file in the same folder, flushed to disk
// (fsync), renamed over `path`, and the folder flushed, so that a crash, a full disk or a failing
// write leaves either the previous file or the complete new one. RuntimeError with the system's
// reason (e.g. "No space left on device") when any of it fails; the temporary file is removed.
void writeAtomically(const std::string& path, std::string_view bytes) {
  const fs::path target(path);
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const fs::path temp = folder / fmt::format(".{}.tmp-{}", target.filename().string(), ::getpid());
  // errno is read first, before anything can change it.
  const auto failure = [](const char* what, const fs::path& file) {
    const int error = errno;
    return RuntimeError(fmt::format("{} '{}': {}", what, file.string(), std::strerror(error)));
  };
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) throw failure("cannot create", temp);
  try {
    for (size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (n == 0) errno = EIO;  // a regular file never takes no byte of a write
        throw failure("cannot write", temp);
      }
      done += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0) throw failure("cannot flush to disk", temp);
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) throw failure("cannot write", temp);
    if (::rename(temp.c_str(), target.c_str()) != 0) throw failure("cannot rename the temporary file to", target);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  // The rename is durable once the folder is flushed too (file systems that cannot flush a folder
  // say EINVAL: nothing more to do there).
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) throw failure("wrote the file, but cannot open its folder to flush it", folder);
  if (::fsync(dir) != 0 && errno != EINVAL && errno != ENOTSUP) {
    const RuntimeError error = failure("wrote the file, but cannot flush its folder to disk", folder);
    ::close(dir);
    throw error;
  }
  ::close(dir);
}

// Rank 0 tells every rank whether its part (`error` empty: it succeeded) went well; every rank
// throws RuntimeError when it did not, so no rank waits for a file that never comes.
void shareOutcome(Communicator& comm, at::Device device, const std::string& error, const std::string& what) {
  at::Tensor failed = at::full({1}, error.empty() ? 0 : 1, at::TensorOptions().dtype(at::kInt).device(device));
  comm.broadcast(failed, 0);
  if (failed.item<int>() == 0) return;
  if (comm.rank() == 0) throw RuntimeError(error);
  throw RuntimeError(fmt::format("rank 0 could not {}; see rank 0's error", what));
}

std::string describe(const std::exception& e) {
  std::string text = e.what();
  // c10::Error appends a C++ backtrace after the first line; the first line is the message.
  if (auto newline = text.find('\n'); newline != std::string::npos) text.resize(newline);
  return text;
}

// ---- reading ----

c10::IValue lookup(const c10::impl::GenericDict& dict, const std::string& key) {
  auto it = dict.find(c10::IValue(key));
  return it == dict.end() ? c10::IValue() : it->value();
}

class CheckpointFile {
 public:
  // Reads the whole file and verifies it (checkpoint_format::verify: version, header and every
  // tensor against its checksum) before anything is taken from it.
  explicit CheckpointFile(std::string path) : path_(std::move(path)) {
    const c10::IValue root = checkpoint_format::readRoot(path_, /*withData=*/true);
    checkpoint_format::verify(root, path_, /*withData=*/true);
    root_ = root.toGenericDict();
  }

  const std::string& path() const { return path_; }

  int64_t integer(const std::string& key) const {
    c10::IValue v = lookup(root_, key);
    if (!v.isInt()) throw malformed(key, "an integer");
    return v.toInt();
  }
  std::string string(const std::string& key) const {
    c10::IValue v = lookup(root_, key);
    if (!v.isString()) throw malformed(key, "a string");
    return v.toStringRef();
  }
  c10::impl::GenericDict dict(const std::string& key) const {
    c10::IValue v = lookup(root_, key);
    if (!v.isGenericDict()) throw malformed(key, "a dict");
    return v.toGenericDict();
  }

  RuntimeError malformed(const std::string& key, const std::string& expected) const {
    return RuntimeError(fmt::format("checkpoint '{}': entry \"{}\" is missing or not {}; the file is damaged or "
                                    "was not written by HAP",
                                    path_, key, expected));
  }

 private:
  std::string path_;
  c10::impl::GenericDict root_{c10::StringType::get(), c10::AnyType::get()};
};

// A full tensor from `dict` under `key`, checked against the parameter's full shape.
at::Tensor fullTensor(const CheckpointFile& file, const c10::impl::GenericDict& dict, const std::string& key,
                      const LocalParameter& p, const std::string& what) {
  c10::IValue v = lookup(dict, key);
  if (v.isNone())
    throw RuntimeError(fmt::format("checkpoint '{}' has no {} for parameter '{}'; it was written for another model",
                                   file.path(), what, p.name));
  if (!v.isTensor())
    throw RuntimeError(fmt::format("checkpoint '{}': the {} of parameter '{}' is not a tensor", file.path(), what,
                                   p.name));
  at::Tensor t = v.toTensor();
  if (t.sizes().vec() != p.fullShape)
    throw RuntimeError(fmt::format("checkpoint '{}': the {} of parameter '{}' has shape {}, but the model's "
                                   "parameter has shape {}; it was written for another model",
                                   file.path(), what, p.name, ir::formatShape(t.sizes().vec()),
                                   ir::formatShape(p.fullShape)));
  return t;
}

}  // namespace

void saveCheckpoint(Communicator& comm, const std::string& path, const std::vector<LocalParameter>& params,
                    const Optimizer& optimizer, int64_t iteration, const std::vector<LocalBuffer>& buffers) {
  const int rank = comm.rank();
  checkParameters(params, &optimizer, rank, comm.size());
  checkParameters(buffers, nullptr, rank, comm.size());
  if (iteration < 0 || iteration != optimizer.steps())
    throw std::logic_error(fmt::format("saveCheckpoint: iteration {} is not the optimizer's step count {}", iteration,
                                       optimizer.steps()));
  const at::Device device = commDevice(params);
  c10::NoGradGuard noGrad;

  // A sharded parameter's step is the largest over ranks: a piece that got no gradient (an empty
  // one) lags, and its state is empty anyway.
  std::vector<int64_t> localSteps(std::max<size_t>(1, params.size()), 0);  // never an empty collective
  for (size_t i = 0; i < params.size(); ++i) localSteps[i] = optimizer.parameterSteps(i);
  at::Tensor steps = at::tensor(localSteps, at::TensorOptions().dtype(at::kLong)).to(device);
  comm.allReduceMax(steps);
  steps = steps.cpu();

  c10::impl::GenericDict parameters(c10::StringType::get(), c10::TensorType::get());
  c10::impl::GenericDict states(c10::StringType::get(),
                                c10::DictType::create(c10::StringType::get(), c10::TensorType::get()));
  for (size_t i = 0; i < params.size(); ++i) {
    const LocalParameter& p = params[i];
    at::Tensor full = gatherFull(comm, p, p.value);
    if (rank != 0 && p.replicated()) continue;  // nothing to gather; rank 0 has the same state
    ParameterState state = optimizer.state(i);
    c10::impl::GenericDict entry(c10::StringType::get(), c10::TensorType::get());
    entry.insert(kStep, at::scalar_tensor(steps[static_cast<int64_t>(i)].item<int64_t>(), at::kLong));
    for (const auto& [name, piece] : state.tensors) {
      at::Tensor t = gatherFull(comm, p, piece);
      if (rank == 0) entry.insert(name, t.cpu().contiguous());
    }
    if (rank != 0) continue;
    parameters.insert(p.name, full.cpu().contiguous());
    states.insert(p.name, entry);
  }
  c10::impl::GenericDict bufferValues(c10::StringType::get(), c10::TensorType::get());
  for (const LocalBuffer& b : buffers) {
    at::Tensor full = gatherFull(comm, b, b.value);
    if (rank == 0) bufferValues.insert(b.name, full.cpu().contiguous());
  }

  std::string error;
  if (rank == 0) {
    c10::impl::GenericDict root(c10::StringType::get(), c10::AnyType::get());
    root.insert("format", std::string(kFormat));
    root.insert("version", kVersion);
    root.insert("iteration", iteration);
    root.insert("optimizer", std::string(optimizerKindName(optimizer.options().kind)));
    root.insert("optimizer_steps", optimizer.steps());
    root.insert("parameters", parameters);
    root.insert("optimizer_state", states);
    root.insert("buffers", bufferValues);
    try {
      c10::IValue sealed(root);
      checkpoint_format::seal(sealed);
      const std::vector<char> bytes = torch::jit::pickle_save(sealed);
      writeAtomically(path, std::string_view(bytes.data(), bytes.size()));
    } catch (const std::exception& e) {
      error = fmt::format("cannot write checkpoint '{}': {}; check that its folder exists, is writable and has "
                          "room (the previous checkpoints are as they were)",
                          path, describe(e));
    }
  }
  shareOutcome(comm, device, error, fmt::format("write checkpoint '{}'", path));
}

int64_t loadCheckpoint(const std::string& path, std::vector<LocalParameter>& params, Optimizer& optimizer,
                       int rank, std::vector<LocalBuffer>* buffers) {
  // The world: a cut parameter's lengths say how many ranks there are; where every parameter is
  // replicated (a data-parallel program) nothing does, and any rank is one of them.
  int size = rank + 1;
  for (const LocalParameter& p : params)
    if (!p.replicated()) size = static_cast<int>(p.lengths.size());
  checkParameters(params, &optimizer, rank, size);

  const CheckpointFile file(path);
  const std::string kind = file.string("optimizer");
  const std::string_view ours = optimizerKindName(optimizer.options().kind);
  if (kind != ours)
    throw RuntimeError(fmt::format("checkpoint '{}' was written with optimizer {}, but this run uses {}; resume "
                                   "with the optimizer it was written with",
                                   path, kind, ours));
  // The header's counts, checked against each other (the checksums vouch for the bytes, not for
  // a file written by something else): HAP writes both as the number of steps taken.
  const int64_t iteration = file.integer("iteration");
  const int64_t optimizerSteps = file.integer("optimizer_steps");
  if (iteration < 0)
    throw RuntimeError(fmt::format("checkpoint '{}': entry \"iteration\" is {}; it counts the steps taken, so it "
                                   "is 0 or more: the file was not written by HAP",
                                   path, iteration));
  if (optimizerSteps != iteration)
    throw RuntimeError(fmt::format("checkpoint '{}': entry \"iteration\" is {}, but \"optimizer_steps\" is {}; HAP "
                                   "writes both as the number of steps taken, so the file was edited or not "
                                   "written by HAP",
                                   path, iteration, optimizerSteps));
  const c10::impl::GenericDict parameters = file.dict("parameters");
  const c10::impl::GenericDict states = file.dict("optimizer_state");
  const std::vector<std::string> names = optimizer.stateNames();

  // Everything is read and checked before anything changes, so a bad file leaves the run as it was.
  std::vector<at::Tensor> values(params.size());
  std::vector<ParameterState> restored(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const LocalParameter& p = params[i];
    values[i] = fullTensor(file, parameters, p.name, p, "value");
    c10::IValue entry = lookup(states, p.name);
    if (!entry.isGenericDict())
      throw RuntimeError(fmt::format("checkpoint '{}' has no optimizer state for parameter '{}'; it was written "
                                     "for another model",
                                     path, p.name));
    const c10::impl::GenericDict state = entry.toGenericDict();
    c10::IValue step = lookup(state, kStep);
    if (!step.isTensor() || step.toTensor().numel() != 1)
      throw RuntimeError(fmt::format("checkpoint '{}': the optimizer state of parameter '{}' has no step count",
                                     path, p.name));
    ParameterState& s = restored[i];
    s.step = step.toTensor().item<int64_t>();
    if (s.step < 0 || s.step > optimizerSteps)
      throw RuntimeError(fmt::format("checkpoint '{}': the optimizer state of parameter '{}' counts {} steps, but "
                                     "the checkpoint was written after {}; the file was edited or not written by HAP",
                                     path, p.name, s.step, optimizerSteps));
    for (const std::string& name : names) {
      // SGD run without momentum resumed with momentum: the buffers start afresh.
      if (lookup(state, name).isNone() && optimizer.options().kind == OptimizerOptions::Kind::Sgd) {
        s = ParameterState{};
        break;
      }
      s.tensors[name] = pieceOf(p, fullTensor(file, state, name, p, "optimizer state '" + name + "'"), rank);
    }
  }

  std::vector<at::Tensor> bufferValues;
  if (buffers) {
    const c10::impl::GenericDict stored = file.dict("buffers");
    for (const LocalBuffer& b : *buffers) bufferValues.push_back(fullTensor(file, stored, b.name, b, "buffer value"));
  }

  c10::NoGradGuard noGrad;
  for (size_t i = 0; i < bufferValues.size(); ++i)
    (*buffers)[i].value.copy_(pieceOf((*buffers)[i], bufferValues[i], rank));
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].value.detach().copy_(pieceOf(params[i], values[i], rank));
    optimizer.setState(i, restored[i]);
  }
  optimizer.setSteps(optimizerSteps);
  return iteration;
}

void exportModel(Communicator& comm, const std::string& modelPath, const std::string& outPath,
                 const std::vector<LocalParameter>& params, const std::vector<LocalBuffer>& buffers) {
  const int rank = comm.rank();
  checkParameters(params, nullptr, rank, comm.size());
  checkParameters(buffers, nullptr, rank, comm.size());
  c10::NoGradGuard noGrad;

  std::string error;
  std::optional<torch::jit::Module> model;
  std::unordered_map<std::string, at::Tensor> slots;  // qualified name -> the model's tensor
  if (rank == 0) {
    try {
      model = torch::jit::load(modelPath);
      for (const auto& named : model->named_parameters(/*recurse=*/true)) slots.emplace(named.name, named.value);
      for (const auto& named : model->named_buffers(/*recurse=*/true)) slots.emplace(named.name, named.value);
    } catch (const std::exception& e) {
      error = fmt::format("cannot read model '{}': {}; pass the TorchScript file the run was planned from",
                          modelPath, describe(e));
    }
  }
  std::vector<const LocalParameter*> all;
  for (const LocalParameter& p : params) all.push_back(&p);
  for (const LocalBuffer& b : buffers) all.push_back(&b);
  for (const LocalParameter* tensor : all) {
    const LocalParameter& p = *tensor;
    at::Tensor full = gatherFull(comm, p, p.value);  // every rank takes part, even after an error
    if (rank != 0 || !error.empty()) continue;
    auto it = slots.find(p.name);
    if (it == slots.end()) {
      error = fmt::format("model '{}' has no parameter or buffer '{}'; pass the TorchScript file the run was "
                          "planned from",
                          modelPath, p.name);
    } else if (it->second.sizes() != full.sizes()) {
      error = fmt::format("model '{}' holds parameter '{}' with shape {}, but the trained one has shape {}; pass "
                          "the TorchScript file the run was planned from",
                          modelPath, p.name, ir::formatShape(it->second.sizes().vec()),
                          ir::formatShape(full.sizes().vec()));
    } else {
      it->second.copy_(full);
    }
  }
  if (rank == 0 && error.empty()) {
    try {
      std::ostringstream out;
      model->save(out);
      writeAtomically(outPath, out.view());
    } catch (const std::exception& e) {
      error = fmt::format("cannot write model '{}': {}; check that its folder exists and is writable", outPath,
                          describe(e));
    }
  }
  shareOutcome(comm, commDevice(params), error, fmt::format("export the model to '{}'", outPath));
}

}  // namespace hap::runtime
