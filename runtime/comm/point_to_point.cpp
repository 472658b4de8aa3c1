#include "runtime/comm/point_to_point.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef HAP_HAVE_CUDA
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <cstdlib>
#include <deque>

#include "engine/base/error.h"
#include "runtime/core/runtime_error.h"

namespace hap::runtime {
namespace {

#if TORCH_VERSION_MAJOR >= 2
using CommBackend = c10d::Backend;
#else
using CommBackend = c10d::ProcessGroup;
#endif

// Gloo moves no bfloat16 or bool: they travel as half and uint8, bit for bit (as communicator.cpp).
at::Tensor wire(const at::Tensor& t) {
  if (t.scalar_type() == at::kBFloat16) return t.view(at::kHalf);
  if (t.scalar_type() == at::kBool) return t.view(at::kByte);
  return t;
}

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

std::shared_ptr<::gloo::transport::Device> glooDevice(const WorkerEnv& env) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  try {
    return c10d::ProcessGroupGloo::createDeviceForHostname(env.masterAddr);
  } catch (const std::exception&) {
    return c10d::ProcessGroupGloo::createDefaultDevice();
  }
}

class GroupPointToPoint final : public PointToPoint {
 public:
  GroupPointToPoint(WorkerEnv env, c10::Device device, c10::intrusive_ptr<CommBackend> forward,
                    c10::intrusive_ptr<CommBackend> backward)
      : env_(std::move(env)),
        device_(device),
        forward_(std::move(forward)),
        backward_(std::move(backward)) {}
  ~GroupPointToPoint() override {
    try {
      flush();
    } catch (const std::exception&) {
    }
  }

  void send(const at::Tensor& t, int peer, int tag, Channel channel,
            const std::string& what) override {
    c10::NoGradGuard noGrad;
    at::Tensor buffer = t.detach().to(device_).contiguous();
    std::vector<at::Tensor> tensors{wire(buffer)};
    Pending p{buffer, {}, peer, what};
    guarded("sending", what, peer, [&] { p.work = group(channel).send(tensors, peer, tag); });
    pending_.push_back(std::move(p));
    // Completed sends are let go as they are found, so that the list stays short.
    while (!pending_.empty() && pending_.front().work->isCompleted()) {
      Pending done = std::move(pending_.front());
      pending_.pop_front();
      guarded("sending", done.what, done.peer, [&] { done.work->wait(env_.timeout); });
    }
  }

  at::Tensor receive(const std::vector<int64_t>& shape, at::ScalarType dtype, int peer, int tag,
                     Channel channel, const std::string& what) override {
    c10::NoGradGuard noGrad;
    at::Tensor buffer = at::empty(shape, at::TensorOptions().dtype(dtype).device(device_));
    std::vector<at::Tensor> tensors{wire(buffer)};
    guarded("receiving", what, peer,
            [&] { group(channel).recv(tensors, peer, tag)->wait(env_.timeout); });
    return buffer;
  }

  void flush() override {
    while (!pending_.empty()) {
      Pending p = std::move(pending_.front());
      pending_.pop_front();
      guarded("sending", p.what, p.peer, [&] { p.work->wait(env_.timeout); });
    }
  }

 private:
  struct Pending {
    at::Tensor buffer;  // kept until the send completes
    c10::intrusive_ptr<c10d::Work> work;
    int peer = 0;
    std::string what;
  };

  CommBackend& group(Channel c) { return c == Channel::Forward ? *forward_ : *backward_; }

  template <class F>
  void guarded(const char* verb, const std::string& what, int peer, F&& call) {
    try {
      call();
    } catch (const hap::Error&) {
      throw;
    } catch (const std::exception& e) {
      throw RuntimeError(fmt::format(
          "rank {}: {} {} {} rank {} failed (store at MASTER_ADDR:MASTER_PORT {}:{}): {}. Is rank "
          "{} still "
          "running? A peer that does not answer within HAP_TIMEOUT_S={} s fails the step",
          env_.rank, verb, what, verb[0] == 's' ? "to" : "from", peer, env_.masterAddr,
          env_.masterPort, detailOf(e), peer, env_.timeout.count()));
    }
  }

  WorkerEnv env_;
  c10::Device device_;
  c10::intrusive_ptr<CommBackend> forward_, backward_;
  std::deque<Pending> pending_;
};

}  // namespace

std::unique_ptr<PointToPoint> PointToPoint::connect(const WorkerEnv& env, c10::Device device) {
  try {
    c10d::TCPStoreOptions storeOptions;
    storeOptions.port = static_cast<std::uint16_t>(env.masterPort);
    storeOptions.isServer = false;
    storeOptions.waitWorkers = false;
    storeOptions.timeout = env.timeout;
    c10::intrusive_ptr<c10d::Store> store =
        c10::make_intrusive<c10d::TCPStore>(env.masterAddr, storeOptions);
    auto make = [&](const std::string& prefix) -> c10::intrusive_ptr<CommBackend> {
      auto prefixed = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
#ifdef HAP_HAVE_CUDA
      if (device.is_cuda()) {
        auto options = c10d::ProcessGroupNCCL::Options::create();
        options->timeout = env.timeout;
        return c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, env.rank, env.worldSize,
                                                           options);
      }
#endif
      auto options = c10d::ProcessGroupGloo::Options::create(env.timeout);
      options->devices.push_back(glooDevice(env));
      options->threads = 1;
      return c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, env.rank, env.worldSize,
                                                         options);
    };
    auto forward = make("hap-p2p-forward");
    auto backward = make("hap-p2p-backward");
    return std::make_unique<GroupPointToPoint>(env, device, std::move(forward),
                                               std::move(backward));
  } catch (const hap::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw RuntimeError(
        fmt::format("rank {}: joining the pipeline's point-to-point channels failed (store at "
                    "MASTER_ADDR:MASTER_PORT {}:{}): "
                    "{}. Is every rank started, with the same MASTER_ADDR, MASTER_PORT and "
                    "WORLD_SIZE? A peer that does not "
                    "answer within HAP_TIMEOUT_S={} s fails the start",
                    env.rank, env.masterAddr, env.masterPort, detailOf(e), env.timeout.count()));
  }
}

}  // namespace hap::runtime
