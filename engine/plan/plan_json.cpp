#include "engine/plan/plan_json.h"

#include "engine/pipeline/pipeline_json.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <string_view>

#include "engine/cost/cluster_json.h"

namespace hap::plan {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

ojson formJson(const Form& f, const ir::Graph& g) {
  ojson j = {{"value", f.value}, {"name", g.value(f.value).name}, {"rel", rules::formatRel(f.rel)}};
  if (!f.lengths.empty()) j["lengths"] = f.lengths;
  return j;
}

ojson estimateJson(const Estimate& e) {
  return {{"iteration_seconds", e.iterationSeconds}, {"memory_bytes", e.memoryBytes}, {"fits", e.fits}};
}

// ---- Reading: every field typed, every number range-checked, every string UTF-8 ----------------

// Whether `s` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool validUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t more = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0)
      more = 1, cp = c & 0x1Fu;
    else if ((c & 0xF0) == 0xE0)
      more = 2, cp = c & 0x0Fu;
    else if ((c & 0xF8) == 0xF0)
      more = 3, cp = c & 0x07u;
    else
      return false;
    if (s.size() - i - 1 < more) return false;
    for (size_t k = 1; k <= more; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    if ((more == 1 && cp < 0x80) || (more == 2 && cp < 0x800) || (more == 3 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += more + 1;
  }
  return true;
}

// One reference token of a JSON pointer (RFC 6901: '~' as "~0", '/' as "~1").
std::string pointerToken(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

// A value as a message shows it: numbers, booleans and null as written, a string quoted (cut at
// 40 bytes), an array or object by its kind.
template <typename J>
std::string shown(const J& j) {
  if (j.is_string()) {
    const std::string& s = j.template get_ref<const std::string&>();
    if (!validUtf8(s)) return "a string that is not UTF-8";
    if (s.size() <= 40) return J(s).dump();
    size_t cut = 37;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    return J(s.substr(0, cut) + "...").dump();
  }
  if (j.is_array()) return fmt::format("an array of {}", j.size());
  if (j.is_object()) return "an object";
  return j.dump();
}

// The JSON pointer of the first string (or key) under `j` that is not UTF-8, if any.
template <typename J>
std::optional<std::string> firstNonUtf8(const J& j, const std::string& pointer) {
  if (j.is_string()) {
    if (!validUtf8(j.template get_ref<const std::string&>()))
      return pointer.empty() ? "/" : pointer;
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i)
      if (auto bad = firstNonUtf8(j[i], fmt::format("{}/{}", pointer, i))) return bad;
  } else if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!validUtf8(it.key())) return pointer + "/(a key that is not UTF-8)";
      if (auto bad = firstNonUtf8(it.value(), pointer + "/" + pointerToken(it.key()))) return bad;
    }
  }
  return std::nullopt;
}

// Limits a plan's numbers are checked against where they are read.
constexpr double kMaxSeconds = 1e9;                                 // a predicted time
constexpr double kMaxBytes = 1152921504606846976.0;                 // 2^60: a memory size
constexpr int64_t kMaxCount = int64_t{1} << 53;                     // search and LP counters
constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();  // node and value ids are 32-bit
constexpr int64_t kMaxRank = 64;                                    // a tensor's dimensions

// One field of the plan file: its value and its JSON pointer, read with a checked type. Every
// failure is a PlanError "ORIGIN: field 'POINTER' is VALUE; expected WHAT".
class Field {
 public:
  Field(const std::string& origin, const json& j, std::string pointer)
      : origin_(&origin), j_(&j), pointer_(std::move(pointer)) {}

  const json& raw() const { return *j_; }
  const std::string& origin() const { return *origin_; }
  const std::string& pointer() const { return pointer_; }
  std::string where() const { return fmt::format("field '{}'", pointer_.empty() ? "/" : pointer_); }
  std::string named() const { return *origin_ + ": " + where(); }

  [[noreturn]] void fail(std::string_view expected) const {
    throw PlanError(
        fmt::format("{}: {} is {}; expected {}", *origin_, where(), shown(*j_), expected));
  }
  [[noreturn]] void failWith(std::string_view message) const {
    throw PlanError(fmt::format("{}: {} {}", *origin_, where(), message));
  }

  // Object members.
  void requireObject() const {
    if (!j_->is_object()) fail("an object");
  }
  bool has(std::string_view key) const {
    requireObject();
    return j_->contains(key);
  }
  Field at(std::string_view key, std::string_view expected) const {
    requireObject();
    const auto it = j_->find(key);
    if (it == j_->end())
      throw PlanError(fmt::format("{}: field '{}/{}' is missing; expected {}", *origin_, pointer_,
                                  pointerToken(key), expected));
    return {*origin_, *it, pointer_ + "/" + pointerToken(key)};
  }
  std::optional<Field> find(std::string_view key) const {
    requireObject();
    const auto it = j_->find(key);
    if (it == j_->end()) return std::nullopt;
    return Field(*origin_, *it, pointer_ + "/" + pointerToken(key));
  }
  // Array elements.
  size_t size() const {
    if (!j_->is_array()) fail("an array");
    return j_->size();
  }
  Field operator[](size_t i) const {
    return {*origin_, (*j_)[i], fmt::format("{}/{}", pointer_, i)};
  }
  template <typename F>
  void each(F&& f) const {
    const size_t n = size();
    for (size_t i = 0; i < n; ++i) f((*this)[i], i);
  }

  // Scalars.
  std::string string() const {
    if (!j_->is_string()) fail("a string");
    const std::string& s = j_->get_ref<const std::string&>();
    if (!validUtf8(s)) failWith("is not valid UTF-8; expected a UTF-8 string");
    return s;
  }
  bool boolean() const {
    if (!j_->is_boolean()) fail("true or false");
    return j_->get<bool>();
  }
  // An integer in [lo, hi] (JSON integers, or a float with an integral value: 2.5 is refused).
  int64_t integer(int64_t lo, int64_t hi, std::string_view what) const {
    const std::string expected = fmt::format("{} (an integer in [{}, {}])", what, lo, hi);
    int64_t v = 0;
    if (j_->is_number_unsigned()) {
      const uint64_t u = j_->get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fail(expected);
      v = static_cast<int64_t>(u);
    } else if (j_->is_number_integer()) {
      v = j_->get<int64_t>();
    } else if (j_->is_number_float()) {
      const double d = j_->get<double>();
      if (!std::isfinite(d) || std::trunc(d) != d || std::abs(d) >= 9.2e18) fail(expected);
      v = static_cast<int64_t>(d);
    } else {
      fail(expected);
    }
    if (v < lo || v > hi) fail(expected);
    return v;
  }
  int index(int64_t lo, int64_t hi, std::string_view what) const {
    return static_cast<int>(integer(lo, hi, what));
  }
  // A finite number in [lo, hi].
  double number(double lo, double hi, std::string_view what) const {
    if (!j_->is_number()) fail(fmt::format("{} (a number in [{:g}, {:g}])", what, lo, hi));
    const double d = j_->get<double>();
    if (!(std::isfinite(d) && d >= lo && d <= hi))
      fail(fmt::format("{} (a number in [{:g}, {:g}])", what, lo, hi));
    return d;
  }
  double seconds() const { return number(0, kMaxSeconds, "seconds"); }
  double bytes() const { return number(0, kMaxBytes, "bytes"); }

  template <typename T, typename F>
  std::vector<T> list(F&& read) const {
    std::vector<T> out;
    out.reserve(size());
    each([&](const Field& f, size_t) { out.push_back(read(f)); });
    return out;
  }
  std::vector<double> secondsList() const {
    return list<double>([](const Field& f) { return f.seconds(); });
  }
  std::vector<double> bytesList() const {
    return list<double>([](const Field& f) { return f.bytes(); });
  }

 private:
  const std::string* origin_;
  const json* j_;
  std::string pointer_;
};

// Every string under `f` is UTF-8 (checked before `f` is handed on whole, as the inventory is).
void checkUtf8(const Field& f) {
  if (const std::optional<std::string> bad = firstNonUtf8(f.raw(), f.pointer()))
    throw PlanError(fmt::format("{}: field '{}' is not valid UTF-8; expected a UTF-8 string",
                                f.origin(), *bad));
}

// The forms a plan's values hold.
Form formFrom(const Field& j) {
  Form f;
  f.value = j.at("value", "a value id").index(0, kMaxIndex - 1, "a value id");
  const Field rel = j.at("rel", "a relation (I, R, I* or G(d))");
  try {
    f.rel = parseRel(rel.string(), "");
  } catch (const PlanError&) {
    rel.fail("a relation (I, R, I* or G(d))");
  }
  if (const std::optional<Field> lengths = j.find("lengths"))
    f.lengths = lengths->list<int64_t>(
        [](const Field& l) { return l.integer(0, kMaxPlanInputElements, "a shard length"); });
  return f;
}

Estimate estimateFrom(const Field& j) {
  Estimate e;
  e.iterationSeconds = j.at("iteration_seconds", "seconds").seconds();
  e.memoryBytes = j.at("memory_bytes", "bytes per rank").bytesList();
  e.fits = j.at("fits", "true or false").boolean();
  return e;
}

const std::set<std::string>& instructions() {
  static const std::set<std::string> known{
      "load",       "load-shard",        "replicate-parameter", "replicate-parameter-sfb",
      "all-gather", "reduce-scatter",    "all-reduce",          "all-to-all",
      "slice",      "replica-to-partial"};
  return known;
}

std::string instructionList() {
  std::string out;
  for (const std::string& i : instructions()) out += (out.empty() ? "" : ", ") + i;
  return out;
}

PlanInput inputFrom(const Field& j) {
  PlanInput in;
  in.name = j.at("name", "the input's name").string();
  const Field dtype = j.at("dtype", "a dtype (float32, int64, ...)");
  const std::optional<ir::DType> t = ir::parseDType(dtype.string());
  if (!t) dtype.fail("a dtype (float32, int64, ...)");
  in.dtype = *t;
  const Field shape = j.at("shape", "the input's dimensions");
  if (shape.size() > static_cast<size_t>(kMaxRank))
    shape.fail(fmt::format("at most {} dimensions", kMaxRank));
  int64_t elements = 1;
  shape.each([&](const Field& d, size_t) {
    const int64_t n = d.integer(0, kMaxPlanInputElements, "a dimension");
    in.shape.push_back(n);
    if (n != 0 && elements > kMaxPlanInputElements / n)
      shape.failWith(
          fmt::format("has more than {} elements (2^40); expected a shape HAP can import",
                      kMaxPlanInputElements));
    elements *= n;
  });
  if (const std::optional<Field> low = j.find("low"))
    in.low = low->integer(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                          "an integer");
  if (const std::optional<Field> high = j.find("high"))
    in.high = high->integer(std::numeric_limits<int64_t>::min(),
                            std::numeric_limits<int64_t>::max(), "an integer");
  if (in.low && in.high && *in.low >= *in.high)
    j.at("high", "").fail(fmt::format("an integer above low ({})", *in.low));
  return in;
}

PlanStep stepFrom(const Field& j, const Plan& p) {
  PlanStep s;
  const int64_t nodes = p.nodes;
  s.node = j.at("node", "a node index")
               .index(0, nodes - 1, fmt::format("a node of the model's {}", nodes));
  const Field kind = j.at("kind", "\"compute\" or \"convert\"");
  const std::string k = kind.string();
  if (k == "compute") {
    s.kind = PlanStep::Kind::Compute;
    s.variant = j.at("variant", "a rule variant's name").string();
    if (const std::optional<Field> sfb = j.find("sfb")) s.sfb = sfb->boolean();
    s.inputs = j.at("inputs", "the input forms").list<Form>(formFrom);
    s.outputs = j.at("outputs", "the output forms").list<Form>(formFrom);
  } else if (k == "convert") {
    s.kind = PlanStep::Kind::Convert;
    const Field instruction = j.at("instruction", "an instruction");
    s.instruction = instruction.string();
    if (!instructions().count(s.instruction))
      instruction.fail("an instruction: " + instructionList());
    if (const std::optional<Field> method = j.find("method")) {
      s.method = method->string();
      if (s.method != "" && s.method != "padded" && s.method != "grouped")
        method->fail("\"padded\" or \"grouped\"");
    }
    s.from = formFrom(j.at("from", "a form"));
    s.to = formFrom(j.at("to", "a form"));
  } else {
    kind.fail("\"compute\" or \"convert\"");
  }
  s.segment = j.at("segment", "a segment index")
                  .index(0, static_cast<int64_t>(p.segments.size()) - 1,
                         fmt::format("one of the plan's {} segments", p.segments.size()));
  s.forwardSeconds = j.at("forward_seconds", "seconds").seconds();
  s.backwardSeconds = j.at("backward_seconds", "seconds").seconds();
  const Field t = j.at("times", "the step's times");
  s.forwardCommunication = t.at("forward_communication", "seconds").seconds();
  s.backwardCommunication = t.at("backward_communication", "seconds").seconds();
  s.forwardSync = t.at("forward_sync", "true or false").boolean();
  s.backwardSync = t.at("backward_sync", "true or false").boolean();
  const size_t devices = p.devices.size();
  auto byGroup = [&](const char* key) {
    const Field by = t.at(key, "seconds per device group");
    if (by.size() > devices)
      by.fail(fmt::format("at most one time per device group ({} devices)", devices));
    return by.secondsList();
  };
  s.forwardByGroup = byGroup("forward_by_group");
  s.backwardByGroup = byGroup("backward_by_group");
  if (const std::optional<Field> gradient = t.find("gradient"))
    s.gradientSeconds = gradient->seconds();
  return s;
}

Plan readPlanFields(const Field& doc) {
  Plan p;
  const Field model = doc.at("model", "an object");
  p.modelPath = model.at("path", "the model file's path").string();
  p.modelSha256 = model.at("sha256", "the model file's SHA-256").string();
  p.inputs = model.at("inputs", "the model's inputs").list<PlanInput>(inputFrom);
  p.parameters =
      model.at("parameters", "a parameter count").integer(0, kMaxCount, "a parameter count");
  p.nodes = model.at("nodes", "a node count").index(1, kMaxIndex, "a node count");

  const Field cluster = doc.at("cluster", "an object");
  const Field inventory = cluster.at("inventory", "the cluster inventory");
  try {
    checkUtf8(inventory);
    p.cluster = cost::clusterFromJson(inventory.raw(), inventory.named());
  } catch (const cost::ClusterError& e) {
    throw PlanError(e.what());
  }
  p.cluster.source = cluster.at("source", "the inventory's file").string();
  const Field devices = cluster.at("devices", "the plan's devices");
  const size_t deviceCount = devices.size();
  if (deviceCount == 0) devices.fail("at least one device");
  devices.each([&](const Field& d, size_t) {
    PlanDevice device;
    if (const std::optional<Field> m =
            d.find("memory_breakdown"))  // absent in plans written before it
      device.memory = {m->at("parameters", "bytes").bytes(), m->at("gradients", "bytes").bytes(),
                       m->at("optimizer", "bytes").bytes(), m->at("activations", "bytes").bytes(),
                       m->at("other", "bytes").bytes()};
    const int64_t last = static_cast<int64_t>(deviceCount) - 1;
    device.rank = d.at("rank", "a rank")
                      .index(0, last, fmt::format("a rank of the plan's {} devices", deviceCount));
    device.machine = d.at("machine", "a machine's name").string();
    device.host = d.at("host", "a host").string();
    device.type = d.at("type", "a device type").string();
    device.capacityBytes = d.at("capacity_bytes", "bytes").bytes();
    device.memoryBytes = d.at("memory_bytes", "bytes").bytes();
    device.computeSeconds = d.at("compute_seconds", "seconds").seconds();
    device.group =
        d.at("group", "a device group").index(0, last, "a device group (at most one per device)");
    p.devices.push_back(std::move(device));
  });

  if (const std::optional<Field> strategy = doc.find("strategy")) p.strategy = strategy->string();
  const Field ratios = doc.at("ratios", "an object");
  p.ratioPolicy = ratios.at("policy", "a ratio policy").string();
  p.segmentation = ratios.at("segmentation", "a segmentation").string();
  const Field segments = ratios.at("segments", "the segments");
  if (segments.size() == 0) segments.fail("at least one segment");
  segments.each([&](const Field& s, size_t) {
    Segment seg;
    seg.name = s.at("name", "a segment's name").string();
    seg.ratios = s.at("ratios", "one ratio per device").list<double>([](const Field& r) {
      return r.number(0, 1, "a ratio");
    });
    p.segments.push_back(std::move(seg));
  });
  const int64_t lastSegment = static_cast<int64_t>(p.segments.size()) - 1;
  p.importedNodeSegment =
      ratios.at("imported_node_segment", "a segment per imported node")
          .list<int>([&](const Field& s) {
            return s.index(0, lastSegment,
                           fmt::format("one of the plan's {} segments", p.segments.size()));
          });

  const Field program = doc.at("program", "the program's steps");
  program.each([&](const Field& s, size_t) { p.steps.push_back(stepFrom(s, p)); });

  if (const std::optional<Field> j = doc.find("replication")) {
    Replication& rep = p.replication;
    rep.machines = j->at("machines", "a machine count")
                       .index(2, 1 << 20,
                              "a machine count (a replicated plan runs on 2 or more machines; "
                              "leave the field out otherwise)");
    rep.inputDims = j->at("input_dims", "a dimension per input").list<int>([](const Field& d) {
      return d.index(-1, kMaxRank - 1, "a dimension, or -1");
    });
    const int64_t lastNode = static_cast<int64_t>(p.nodes) - 1;
    j->at("random_cuts", "the random ops' cuts").each([&](const Field& c, size_t) {
      rep.randomCuts.push_back(
          {c.at("node", "a node index")
               .index(0, lastNode, fmt::format("a node of the model's {}", p.nodes)),
           c.at("dim", "a dimension").index(-1, kMaxRank - 1, "a dimension, or -1")});
    });
    rep.lossWeight = j->at("loss_weight", "a weight").number(0, 1, "a weight");
    rep.lossTargets = j->at("loss_targets", "an input's name").string();
    rep.ignoreIndex = j->at("ignore_index", "an integer")
                          .integer(std::numeric_limits<int64_t>::min(),
                                   std::numeric_limits<int64_t>::max(), "an integer");
    rep.allReduceSeconds = j->at("all_reduce_seconds", "seconds").seconds();
  }

  const Field prediction = doc.at("prediction", "an object");
  p.estimate = estimateFrom(prediction);
  const int64_t steps = static_cast<int64_t>(p.steps.size());
  prediction.at("stages", "the predicted stages").each([&](const Field& s, size_t) {
    Stage stage;
    const Field pass = s.at("pass", "\"forward\" or \"backward\"");
    const std::string name = pass.string();
    if (name != "forward" && name != "backward") pass.fail("\"forward\" or \"backward\"");
    stage.backward = name == "backward";
    const std::string range = fmt::format("a step of the program's {}", steps);
    stage.firstStep = s.at("first_step", "a step").index(0, steps, range);
    stage.endStep =
        s.at("end_step", "a step").index(stage.firstStep, steps, range + ", from first_step on");
    stage.communicationSeconds = s.at("communication_seconds", "seconds").seconds();
    stage.groupComputation =
        s.at("group_computation_seconds", "seconds per device group").secondsList();
    stage.computationSeconds = s.at("computation_seconds", "seconds").seconds();
    p.stages.push_back(std::move(stage));
  });
  if (const std::optional<Field> b = prediction.find("gradient_bucket_bytes"))
    p.gradientBucketBytes = b->number(0, 1099511627776.0, "bytes (at most 2^40)");
  if (const std::optional<Field> buckets = prediction.find("gradient_buckets")) {
    buckets->each([&](const Field& b, size_t) {
      Plan::GradientBucket bucket;
      b.at("steps", "replicate-parameter steps").each([&](const Field& step, size_t) {
        const int i = step.index(0, steps - 1, fmt::format("a step of the program's {}", steps));
        if (p.steps[static_cast<size_t>(i)].instruction != "replicate-parameter")
          step.fail(
              fmt::format("a replicate-parameter step of the program (step {} is not one)", i));
        bucket.steps.push_back(i);
      });
      bucket.seconds = b.at("seconds", "seconds").seconds();
      p.gradientBuckets.push_back(std::move(bucket));
    });
    p.exposedGradientSeconds = prediction.at("exposed_gradient_seconds", "seconds").seconds();
  }

  if (const std::optional<Field> baselines = doc.find("baselines")) {
    baselines->requireObject();
    for (const auto& item : baselines->raw().items()) {
      const Field b = baselines->at(item.key(), "");
      if (!validUtf8(item.key())) b.failWith("has a name that is not UTF-8");
      Plan::Baseline baseline{item.key(), estimateFrom(b), true, ""};
      if (const std::optional<Field> a = b.find("applicable")) baseline.applicable = a->boolean();
      if (const std::optional<Field> n = b.find("note")) baseline.note = n->string();
      p.baselines.push_back(std::move(baseline));
    }
  }
  if (const std::optional<Field> s = doc.find("search")) {
    s->requireObject();
    auto count = [&](const char* key) {
      const std::optional<Field> f = s->find(key);
      return f ? f->integer(0, kMaxCount, "a count") : int64_t{0};
    };
    if (const std::optional<Field> f = s->find("proven_optimal")) p.provenOptimal = f->boolean();
    p.expanded = count("expanded");
    p.generated = count("generated");
    p.stored = count("stored");
    if (const std::optional<Field> f = s->find("seconds")) p.searchSeconds = f->seconds();
    if (const std::optional<Field> f = s->find("not_optimal")) p.notOptimal = f->string();
  }
  if (const std::optional<Field> b = doc.find("balance")) {
    b->requireObject();
    if (const std::optional<Field> history = b->find("history"))
      history->each([&](const Field& h, size_t) {
        Plan::HistoryEntry e;
        e.step = h.at("step", "a step's name").string();
        e.seconds = h.at("iteration_seconds", "seconds").seconds();
        e.fits = h.at("fits", "true or false").boolean();
        if (const std::optional<Field> n = h.find("note")) e.note = n->string();
        p.history.push_back(std::move(e));
      });
    auto solves = [&](const char* key) {
      const std::optional<Field> f = b->find(key);
      return f ? f->index(0, kMaxIndex, "a count") : 0;
    };
    auto seconds = [&](const char* key) {
      const std::optional<Field> f = b->find(key);
      return f ? f->seconds() : 0.0;
    };
    p.lpSolves = solves("lp_solves");
    p.lpSeconds = seconds("lp_seconds");
    p.milpSolves = solves("milp_solves");
    p.milpSeconds = seconds("milp_seconds");
    if (const std::optional<Field> n = b->find("note")) p.balanceNote = n->string();
  }
  if (const std::optional<Field> choice = doc.find("choice")) p.choice = choice->string();
  if (const std::optional<Field> unsharded = doc.find("unsharded"))
    unsharded->each([&](const Field& u, size_t) {
      p.unsharded.push_back({u.at("node", "a node index, or -1")
                                 .index(-1, static_cast<int64_t>(p.nodes) - 1,
                                        fmt::format("a node of the model's {}, or -1", p.nodes)),
                             u.at("message", "a message").string()});
    });
  if (const std::optional<Field> share = doc.find("unsharded_flops_share"))
    p.unshardedFlopsShare = share->number(0, 1, "a share of FLOPs");
  return p;
}

// Parses `text`, naming the field the parser was in when the text is not valid JSON.
json parsePlanText(const std::string& text, const std::string& origin) {
  struct Frame {
    bool array = false;
    bool keyed = false;
    std::string key;
    size_t index = 0;
  };
  std::vector<Frame> frames;
  auto done = [&] {
    if (frames.empty()) return;
    if (frames.back().array)
      ++frames.back().index;
    else
      frames.back().keyed = false;
  };
  const json::parser_callback_t track = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        frames.push_back({});
        break;
      case json::parse_event_t::array_start:
        frames.push_back({true});
        break;
      case json::parse_event_t::key:
        if (!frames.empty() && parsed.is_string())
          frames.back().key = parsed.get<std::string>(), frames.back().keyed = true;
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        done();
        break;
      case json::parse_event_t::value:
        done();
        break;
    }
    return true;
  };
  try {
    return json::parse(text, track);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    std::string pointer;
    for (const Frame& f : frames) {
      if (f.array)
        pointer += fmt::format("/{}", f.index);
      else if (f.keyed)
        pointer += "/" + pointerToken(f.key);
    }
    // nlohmann's text without its tag and its "last read" (the raw bytes, maybe not UTF-8).
    std::string what = e.what();
    if (const size_t tag = what.find("] ");
        what.rfind("[json.exception", 0) == 0 && tag != std::string::npos)
      what.erase(0, tag + 2);
    if (const size_t last = what.find("; last read"); last != std::string::npos) what.erase(last);
    if (!validUtf8(what)) {
      const auto* parse = dynamic_cast<const json::parse_error*>(&e);
      what = parse ? fmt::format("byte {}", parse->byte) : std::string("a value out of range");
    }
    throw PlanError(fmt::format(
        "{}: not valid JSON{} ({})", origin,
        pointer.empty() ? std::string() : fmt::format(" in field '{}'", pointer), what));
  }
}

}  // namespace

rules::Rel parseRel(const std::string& text, const std::string& where) {
  if (text == "I") return rules::kIdentity;
  if (text == "R") return rules::kReduce;
  if (text == "I*") return rules::kIdentitySfb;
  int d = -1;
  if (text.size() > 3 && text.rfind("G(", 0) == 0 && text.back() == ')') {
    try {
      d = std::stoi(text.substr(2, text.size() - 3));
    } catch (const std::exception&) {
      d = -1;
    }
  }
  if (d < 0 || d > rules::kMaxShardedRank)
    throw PlanError(fmt::format("{}: '{}' is not a relation (I, R, I* or G(d))", where, text));
  return rules::gather(d);
}

ojson toJson(const Plan& p, const ir::Graph& imported) {
  const ir::Graph g = planGraph(imported, p);
  ojson doc;
  doc["format"] = "hap-plan";
  doc["version"] = kPlanVersion;
  ojson inputs = ojson::array();
  for (const PlanInput& in : p.inputs) {
    ojson entry = {{"name", in.name}, {"dtype", ir::dtypeName(in.dtype)}, {"shape", in.shape}};
    if (in.low) entry["low"] = *in.low;
    if (in.high) entry["high"] = *in.high;
    inputs.push_back(std::move(entry));
  }
  doc["model"] = {{"path", p.modelPath}, {"sha256", p.modelSha256}, {"inputs", inputs},
                  {"parameters", p.parameters}, {"nodes", p.nodes}};
  ojson devices = ojson::array();
  for (const PlanDevice& d : p.devices)
    devices.push_back({{"rank", d.rank}, {"machine", d.machine}, {"host", d.host}, {"type", d.type},
                       {"capacity_bytes", d.capacityBytes}, {"memory_bytes", d.memoryBytes},
                       {"memory_breakdown",
                        {{"parameters", d.memory.parameters}, {"gradients", d.memory.gradients},
                         {"optimizer", d.memory.optimizer}, {"activations", d.memory.activations},
                         {"other", d.memory.other}}},
                       {"compute_seconds", d.computeSeconds}, {"group", d.group}});
  doc["cluster"] = {{"name", p.cluster.name}, {"source", p.cluster.source},
                    {"inventory", cost::clusterToJson(p.cluster)}, {"devices", devices}};
  ojson segments = ojson::array();
  for (size_t i = 0; i < p.segments.size(); ++i)
    segments.push_back({{"id", i}, {"name", p.segments[i].name}, {"ratios", p.segments[i].ratios}});
  doc["strategy"] = p.strategy;
  doc["ratios"] = {{"policy", p.ratioPolicy}, {"segmentation", p.segmentation}, {"segments", segments},
                   {"imported_node_segment", p.importedNodeSegment}};
  ojson steps = ojson::array();
  for (const PlanStep& s : p.steps) {
    ojson j;
    if (s.kind == PlanStep::Kind::Compute) {
      j = {{"kind", "compute"}, {"node", s.node}, {"op", g.node(s.node).op}, {"variant", s.variant}};
      if (s.sfb) j["sfb"] = true;
      j["inputs"] = ojson::array();
      for (const Form& f : s.inputs) j["inputs"].push_back(formJson(f, g));
      j["outputs"] = ojson::array();
      for (const Form& f : s.outputs) j["outputs"].push_back(formJson(f, g));
    } else {
      j = {{"kind", "convert"}, {"node", s.node}, {"instruction", s.instruction}};
      if (!s.method.empty()) j["method"] = s.method;
      j["from"] = formJson(s.from, g);
      j["to"] = formJson(s.to, g);
    }
    j["segment"] = s.segment;
    j["forward_seconds"] = s.forwardSeconds;
    j["backward_seconds"] = s.backwardSeconds;
    j["times"] = {{"forward_communication", s.forwardCommunication}, {"backward_communication", s.backwardCommunication},
                  {"forward_sync", s.forwardSync}, {"backward_sync", s.backwardSync},
                  {"forward_by_group", s.forwardByGroup}, {"backward_by_group", s.backwardByGroup}};
    if (s.gradientSeconds > 0) j["times"]["gradient"] = s.gradientSeconds;
    steps.push_back(std::move(j));
  }
  doc["program"] = std::move(steps);
  ojson stages = ojson::array();
  for (const Stage& s : p.stages)
    stages.push_back({{"pass", s.backward ? "backward" : "forward"}, {"first_step", s.firstStep}, {"end_step", s.endStep},
                      {"communication_seconds", s.communicationSeconds},
                      {"group_computation_seconds", s.groupComputation},
                      {"computation_seconds", s.computationSeconds}});
  if (p.replication.replicated()) {
    const Replication& r = p.replication;
    ojson cuts = ojson::array();
    for (const Replication::RandomCut& c : r.randomCuts) cuts.push_back({{"node", c.node}, {"dim", c.dim}});
    doc["replication"] = {{"machines", r.machines},        {"input_dims", r.inputDims},
                          {"random_cuts", cuts},            {"loss_weight", r.lossWeight},
                          {"loss_targets", r.lossTargets}, {"ignore_index", r.ignoreIndex},
                          {"all_reduce_seconds", r.allReduceSeconds}};
  }
  doc["prediction"] = estimateJson(p.estimate);
  doc["prediction"]["stages"] = std::move(stages);
  if (!p.gradientBuckets.empty()) {
    ojson buckets = ojson::array();
    for (const Plan::GradientBucket& b : p.gradientBuckets) buckets.push_back({{"steps", b.steps}, {"seconds", b.seconds}});
    doc["prediction"]["gradient_buckets"] = std::move(buckets);
    doc["prediction"]["exposed_gradient_seconds"] = p.exposedGradientSeconds;
  }
  doc["prediction"]["gradient_bucket_bytes"] = p.gradientBucketBytes;
  doc["baselines"] = ojson::object();
  for (const Plan::Baseline& b : p.baselines) {
    doc["baselines"][b.name] = estimateJson(b.estimate);
    doc["baselines"][b.name]["applicable"] = b.applicable;
    doc["baselines"][b.name]["note"] = b.note;
  }
  doc["search"] = {{"proven_optimal", p.provenOptimal}, {"expanded", p.expanded}, {"generated", p.generated}, {"stored", p.stored},
                   {"seconds", p.searchSeconds}};
  if (!p.notOptimal.empty()) doc["search"]["not_optimal"] = p.notOptimal;
  ojson history = ojson::array();
  for (const Plan::HistoryEntry& h : p.history) {
    history.push_back({{"step", h.step}, {"iteration_seconds", h.seconds}, {"fits", h.fits}});
    if (!h.note.empty()) history.back()["note"] = h.note;
  }
  doc["balance"] = {{"history", history}, {"lp_solves", p.lpSolves}, {"lp_seconds", p.lpSeconds}};
  if (p.milpSolves) {
    doc["balance"]["milp_solves"] = p.milpSolves;
    doc["balance"]["milp_seconds"] = p.milpSeconds;
  }
  if (!p.balanceNote.empty()) doc["balance"]["note"] = p.balanceNote;
  if (!p.choice.empty()) doc["choice"] = p.choice;
  ojson unsharded = ojson::array();
  for (const Plan::Replicated& u : p.unsharded)
    unsharded.push_back({{"node", u.node}, {"where", u.node != ir::kNone ? g.describe(u.node) : ""}, {"message", u.message}});
  doc["unsharded"] = std::move(unsharded);
  doc["unsharded_flops_share"] = p.unshardedFlopsShare;
  if (const std::optional<std::string> bad = firstNonUtf8(doc, ""))
    throw PlanError(fmt::format("the plan's field '{}' is not valid UTF-8: the names a plan records (the model's path and "
                                "inputs, the cluster's machines, hosts and devices) must be UTF-8",
                                *bad));
  return doc;
}

Plan planFromJson(const json& doc, const std::string& origin) {
  if (!doc.is_object() || !doc.contains("format"))
    throw PlanError(fmt::format(
        "{}: not a HAP plan (expected an object with \"format\": \"hap-plan\"; the file holds {})",
        origin, doc.is_object() ? "an object without 'format'" : shown(doc)));
  const Field root(origin, doc, "");
  const json& format = doc["format"];
  if (format != "hap-plan")
    throw PlanError(fmt::format("{}: not a HAP plan (field '/format' is {}; expected \"hap-plan\")",
                                origin, shown(format)));
  pipeline::refusePipeline(doc, origin);  // version 3: pipeline stages (pipeline/pipeline_json.h)
  const Field version = root.at("version", fmt::format("the integer {}", kPlanVersion));
  if (!version.raw().is_number_integer() || version.raw() != kPlanVersion)
    version.fail(fmt::format("the integer {} (this HAP reads plan version {}; re-plan older plans)",
                             kPlanVersion, kPlanVersion));
  try {
    return readPlanFields(root);
  } catch (const json::exception& e) {  // a gap in the checks above: still an input error
    throw PlanError(fmt::format("{}: unexpected content ({})", origin, e.what()));
  }
}

void writePlan(const Plan& plan, const ir::Graph& g, const std::string& path) {
  std::string text;
  try {
    text = toJson(plan, g).dump(1) + "\n";
  } catch (const PlanError& e) {
    throw PlanError(fmt::format("{}: cannot write the plan: {}", path, e.what()));
  }
  std::ofstream out(path);
  out << text;
  if (!out.good())
    throw PlanError(fmt::format("{}: cannot write the plan (check the folder exists)", path));
}

Plan readPlan(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw PlanError(fmt::format("{}: is a folder, not a plan file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw PlanError(fmt::format("{}: cannot open the plan file ({})", path, std::strerror(errno)));
  std::string text;
  try {
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::exception& e) {
    throw PlanError(fmt::format("{}: cannot read the plan file ({})", path, e.what()));
  }
  if (in.bad()) throw PlanError(fmt::format("{}: cannot read the plan file", path));
  return planFromJson(parsePlanText(text, path), path);
}

}  // namespace hap::plan
