#include "runtime/comm/job_chain.h"

#include <exception>
#include <utility>

namespace hap::runtime {

JobChain::JobChain(std::function<void()> onStart) : onStart_(std::move(onStart)) {}

JobChain::~JobChain() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  if (thread_.joinable()) thread_.join();  // runs the queued jobs first
}

std::future<void> JobChain::post(std::function<void()> job) {
  Job queued{std::move(job), {}};
  std::future<void> done = queued.done.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    jobs_.push_back(std::move(queued));
  }
  ready_.notify_one();
  return done;
}

void JobChain::loop() {
  if (onStart_) onStart_();
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    try {
      job.run();
      job.done.set_value();
    } catch (...) {
      job.done.set_exception(std::current_exception());
    }
  }
}

}  // namespace hap::runtime
