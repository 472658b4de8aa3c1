// Samples of every registered op for the rule soundness test (tst_rule_soundness.cpp): for each
// op, generators of random calls (shapes, value domains, constant arguments), in the manner of
// PyTorch's OpInfo sample inputs. A sample names only the arguments it sets; the others take the
// schema's defaults. Every call of a generator draws new shapes: sizes that do not divide, length
// one, and (through the test's random lengths) zero-length pieces.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/ir/graph.h"

namespace hap::test {

// What values a tensor argument holds.
enum class Domain : uint8_t {
  Normal,       // standard normal
  Positive,     // in [0.5, 2)
  Probability,  // in (0.05, 0.95)
  Index,        // integers in [0, bound)
  Targets,      // class indices in [0, bound), about a quarter of them `ignore` (-100 unless set)
  Mask,         // bool, about half true
  Integer,      // integers in [-4, 5)
  Offsets,      // embedding_bag's offsets: sorted, the first 0, all in [0, bound]
  OffsetsToEnd,  // the same with the last one `bound` (include_last_offset)
  Full,         // every element `bound` (ctc_loss's input lengths)
};

struct TensorSpec {
  ir::Shape shape;
  ir::DType dtype = ir::DType::Float64;
  Domain domain = Domain::Normal;
  int64_t bound = 0;      // Index, Targets
  int64_t ignore = -100;  // Targets
  ir::ValueKind kind = ir::ValueKind::Input;  // Parameter for weights, Buffer for running statistics
  bool absent = false;  // a None in a list of optional tensors (aten::index's indices)
};

using ArgValue = std::variant<TensorSpec, std::vector<TensorSpec>, ir::Constant>;

struct OpSample {
  std::string op;        // "aten::linear"
  std::string overload;  // the schema's overload name ("", "Tensor", "dim_IntList")
  std::vector<std::pair<std::string, ArgValue>> args;  // by schema argument name
};

// Random choices for one sample.
class Rand {
 public:
  explicit Rand(uint64_t seed) : gen_(seed) {}
  int64_t range(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen_); }  // [lo, hi]
  int64_t dim(int64_t lo = 1, int64_t hi = 7) { return range(lo, hi); }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(gen_); }
  ir::Shape shape(int rank, int64_t lo = 1, int64_t hi = 7) {
    ir::Shape s;
    for (int i = 0; i < rank; ++i) s.push_back(dim(lo, hi));
    return s;
  }
  // A shape that broadcasts to `full`: trailing dimensions kept or set to 1, leading ones dropped.
  ir::Shape broadcastable(const ir::Shape& full) {
    const int drop = static_cast<int>(range(0, static_cast<int64_t>(full.size())));
    ir::Shape s(full.begin() + drop, full.end());
    for (int64_t& d : s)
      if (coin(0.3)) d = 1;
    return s;
  }
  std::mt19937_64& generator() { return gen_; }

 private:
  std::mt19937_64 gen_;
};

using SampleFn = std::function<OpSample(Rand&)>;

struct SampleEntry {
  std::string op;
  SampleFn make;
};

// Tensor argument helpers.
inline TensorSpec t(ir::Shape s, ir::DType dtype = ir::DType::Float64) { return {std::move(s), dtype}; }
inline TensorSpec positive(ir::Shape s) { return {std::move(s), ir::DType::Float64, Domain::Positive}; }
inline TensorSpec probability(ir::Shape s) { return {std::move(s), ir::DType::Float64, Domain::Probability}; }
inline TensorSpec integer(ir::Shape s, ir::DType dtype = ir::DType::Int64) { return {std::move(s), dtype, Domain::Integer}; }
inline TensorSpec mask(ir::Shape s) { return {std::move(s), ir::DType::Bool, Domain::Mask}; }
inline TensorSpec index(ir::Shape s, int64_t bound) { return {std::move(s), ir::DType::Int64, Domain::Index, bound}; }
inline TensorSpec targets(ir::Shape s, int64_t classes, int64_t ignore = -100) {
  return {std::move(s), ir::DType::Int64, Domain::Targets, classes, ignore};
}
inline TensorSpec offsets(int64_t count, int64_t indices, bool toEnd = false) {
  return {{count}, ir::DType::Int64, toEnd ? Domain::OffsetsToEnd : Domain::Offsets, indices};
}
inline TensorSpec absentTensor() {
  TensorSpec spec;
  spec.absent = true;
  return spec;
}
inline TensorSpec param(ir::Shape s) {
  TensorSpec spec{std::move(s)};
  spec.kind = ir::ValueKind::Parameter;
  return spec;
}
inline TensorSpec buffer(ir::Shape s, Domain domain = Domain::Normal) {
  TensorSpec spec{std::move(s), ir::DType::Float64, domain};
  spec.kind = ir::ValueKind::Buffer;
  return spec;
}

// Constant helpers (ir::Constant wants exact types).
inline ir::Constant i(int64_t v) { return v; }
inline ir::Constant f(double v) { return v; }
inline ir::Constant b(bool v) { return v; }
inline ir::Constant ints(std::vector<int64_t> v) { return v; }
inline ir::Constant str(std::string v) { return v; }
inline ir::Constant none() { return std::monostate{}; }

// The samples of each rule family (one file each, as the rules are).
std::vector<SampleEntry> elementwiseSamples();
std::vector<SampleEntry> randomSamples();
std::vector<SampleEntry> reductionSamples();
std::vector<SampleEntry> normalizationSamples();
std::vector<SampleEntry> softmaxSamples();
std::vector<SampleEntry> lossSamples();
std::vector<SampleEntry> embeddingSamples();
std::vector<SampleEntry> factorySamples();
std::vector<SampleEntry> shapeSamples();
std::vector<SampleEntry> matmulSamples();
std::vector<SampleEntry> convolutionSamples();
std::vector<SampleEntry> indexingSamples();
std::vector<SampleEntry> resamplingSamples();
std::vector<SampleEntry> activationSamples();
std::vector<SampleEntry> recurrentSamples();
std::vector<SampleEntry> scatterSamples();

}  // namespace hap::test
