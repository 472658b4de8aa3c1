#include "engine/plan/trace_export.h"

#include <fmt/format.h>

namespace hap::plan {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int kComputationTid = 1, kCommunicationTid = 2, kBucketsTid = 3;

int pidOf(int rank) { return rank + 1; }

ojson metadata(const char* name, int pid, int tid, ojson args) {
  ojson e = {{"name", name}, {"ph", "M"}, {"pid", pid}};
  if (tid > 0) e["tid"] = tid;
  e["args"] = std::move(args);
  return e;
}

double micros(double seconds) { return seconds * 1e6; }

}  // namespace

ojson traceJson(const Plan& p, const Timeline& t, const std::string& source) {
  ojson events = ojson::array();
  for (const PlanDevice& d : p.devices) {
    const int pid = pidOf(d.rank);
    events.push_back(metadata("process_name", pid, 0, {{"name", fmt::format("rank {}: {} on {}", d.rank, d.type, d.machine)}}));
    events.push_back(metadata("process_sort_index", pid, 0, {{"sort_index", d.rank}}));
    events.push_back(metadata("thread_name", pid, kComputationTid, {{"name", "computation"}}));
    events.push_back(metadata("thread_sort_index", pid, kComputationTid, {{"sort_index", kComputationTid}}));
    events.push_back(metadata("thread_name", pid, kCommunicationTid, {{"name", "communication"}}));
    events.push_back(metadata("thread_sort_index", pid, kCommunicationTid, {{"sort_index", kCommunicationTid}}));
    if (t.buckets.empty()) continue;
    events.push_back(metadata("thread_name", pid, kBucketsTid, {{"name", "gradient buckets"}}));
    events.push_back(metadata("thread_sort_index", pid, kBucketsTid, {{"sort_index", kBucketsTid}}));
  }
  // Every rank all-reduces every bucket, beside its stages.
  for (const BucketRun& b : t.buckets)
    for (const PlanDevice& d : p.devices)
      events.push_back({{"name", fmt::format("gradient bucket {}", b.bucket)},
                        {"cat", "backward"},
                        {"ph", "X"},
                        {"pid", pidOf(d.rank)},
                        {"tid", kBucketsTid},
                        {"ts", micros(b.start)},
                        {"dur", micros(b.end - b.start)},
                        {"args", {{"ready_ms", b.ready * 1e3},
                                  {"parameters", p.gradientBuckets[static_cast<size_t>(b.bucket)].steps.size()}}}});
  for (const DeviceTimeline& d : t.devices)
    for (const Event& e : d.events) {
      ojson args = ojson::object();
      if (e.step >= 0) {
        const PlanStep& s = p.steps[static_cast<size_t>(e.step)];
        args["step"] = e.step;
        args["stage"] = e.stage;
        args["segment"] = p.segments[static_cast<size_t>(s.segment)].name;
        if (s.kind == PlanStep::Kind::Compute) args["variant"] = s.variant;
        else if (!s.method.empty()) args["method"] = s.method;
      } else {
        args["stage"] = e.stage;
      }
      events.push_back({{"name", e.label},
                        {"cat", e.backward ? "backward" : "forward"},
                        {"ph", "X"},
                        {"pid", pidOf(d.rank)},
                        {"tid", e.kind == EventKind::Communication ? kCommunicationTid : kComputationTid},
                        {"ts", micros(e.start)},
                        {"dur", micros(e.duration)},
                        {"args", std::move(args)}});
    }
  ojson doc;
  doc["traceEvents"] = std::move(events);
  doc["displayTimeUnit"] = "ms";
  doc["otherData"] = {{"source", source}, {"model", p.modelPath}, {"cluster", p.cluster.name},
                      {"iteration_seconds", t.totalSeconds}};
  return doc;
}

}  // namespace hap::plan
