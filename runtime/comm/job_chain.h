// A thread that runs jobs one at a time, in the order they were posted (the communicator's chain
// of hierarchical gradient all-reduces: their phases must not interleave, and every rank runs them
// in the same order). Plain C++.
//
// Contract: the thread starts on the first post() and runs `onStart` first; each job's exception
// goes into its future, and the chain goes on with the next. Destroying the chain runs the jobs
// still queued, then joins the thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace hap::runtime {

class JobChain {
 public:
  explicit JobChain(std::function<void()> onStart = {});
  ~JobChain();
  JobChain(const JobChain&) = delete;
  JobChain& operator=(const JobChain&) = delete;

  // Queues `job`; the future is ready once it has run (holding its exception, if it threw).
  std::future<void> post(std::function<void()> job);

 private:
  struct Job {
    std::function<void()> run;
    std::promise<void> done;
  };
  void loop();

  std::function<void()> onStart_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hap::runtime
