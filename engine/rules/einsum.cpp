#include "engine/rules/einsum.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "engine/rules/variant_util.h"
#include "engine/rules/relation.h"

namespace hap::rules {
namespace {

// A label is a letter (its character code) or ellipsis position p, counted from the outermost
// dimension of the widest ellipsis (kEllipsis + p), so that ellipses broadcast right-aligned.
constexpr int kEllipsis = 256;

struct Term {
  std::string letters;   // the term with "..." replaced by '.'
  int ellipsisRank = 0;  // dimensions the ellipsis stands for
};

bool isLabel(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0;
}

// Parses one term for a tensor of `rank` dimensions (rank < 0: any ellipsis rank, set later).
std::optional<Term> parseTerm(std::string_view text, int rank) {
  Term t;
  int letters = 0;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, 3) == "...") {
      if (t.letters.find('.') != std::string::npos) return std::nullopt;
      t.letters += '.';
      i += 3;
    } else if (isLabel(text[i])) {
      t.letters += text[i++];
      ++letters;
    } else {
      return std::nullopt;
    }
  }
  const bool ellipsis = t.letters.find('.') != std::string::npos;
  if (rank >= 0) {
    if (letters > rank || (!ellipsis && letters != rank)) return std::nullopt;
    t.ellipsisRank = rank - letters;
  }
  return t;
}

// The labels of a term's dimensions, given the widest ellipsis.
std::vector<int> expandTerm(const Term& t, int ellipsisWidth) {
  std::vector<int> labels;
  for (char c : t.letters) {
    if (c == '.') {
      for (int p = ellipsisWidth - t.ellipsisRank; p < ellipsisWidth; ++p)
        labels.push_back(kEllipsis + p);
    } else {
      labels.push_back(c);
    }
  }
  return labels;
}

std::string labelName(int label) {
  return label >= kEllipsis ? "..." + std::to_string(label - kEllipsis)
                            : std::string(1, static_cast<char>(label));
}

}  // namespace

std::optional<std::vector<EinsumIndex>> analyzeEinsum(std::string_view equation,
                                                      const std::vector<ir::Shape>& operands,
                                                      const ir::Shape& output) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);

  std::vector<Term> terms;
  for (size_t begin = 0;;) {
    const size_t comma = std::min(lhs.find(',', begin), lhs.size());
    if (terms.size() >= operands.size()) return std::nullopt;
    const ir::Shape& shape = operands[terms.size()];
    auto term = parseTerm(std::string_view(lhs).substr(begin, comma - begin),
                          static_cast<int>(shape.size()));
    if (!term) return std::nullopt;
    terms.push_back(*term);
    if (comma == lhs.size()) break;
    begin = comma + 1;
  }
  if (terms.size() != operands.size()) return std::nullopt;
  int ellipsisWidth = 0;
  for (const Term& t : terms) ellipsisWidth = std::max(ellipsisWidth, t.ellipsisRank);

  // Per label: its extent (operands broadcast length-1 dimensions), uses and first appearance.
  std::vector<std::vector<int>> labels;
  std::map<int, int64_t> extent;
  std::map<int, int> uses;
  std::vector<int> order;
  for (size_t k = 0; k < terms.size(); ++k) {
    labels.push_back(expandTerm(terms[k], ellipsisWidth));
    for (size_t d = 0; d < labels[k].size(); ++d) {
      const int l = labels[k][d];
      const int64_t len = operands[k][d];
      auto [it, fresh] = extent.emplace(l, len);
      if (fresh) order.push_back(l);
      if (it->second != len && len != 1) {
        if (it->second != 1) return std::nullopt;
        it->second = len;
      }
      ++uses[l];
    }
  }

  std::vector<int> outLabels;
  if (arrow != std::string::npos) {
    auto term = parseTerm(std::string_view(eq).substr(arrow + 2), -1);
    if (!term) return std::nullopt;
    term->ellipsisRank = ellipsisWidth;
    outLabels = expandTerm(*term, ellipsisWidth);
  } else {
    for (int p = 0; p < ellipsisWidth; ++p) outLabels.push_back(kEllipsis + p);
    std::vector<int> once;
    for (auto [l, n] : uses)
      if (l < kEllipsis && n == 1) once.push_back(l);
    outLabels.insert(outLabels.end(), once.begin(), once.end());  // std::map: sorted
  }
  if (outLabels.size() != output.size()) return std::nullopt;
  for (size_t d = 0; d < outLabels.size(); ++d) {
    auto it = extent.find(outLabels[d]);
    if (it == extent.end() || it->second != output[d] ||
        std::count(outLabels.begin(), outLabels.end(), outLabels[d]) != 1)
      return std::nullopt;
  }

  std::vector<int> indexOrder = outLabels;
  for (int l : order)
    if (std::find(outLabels.begin(), outLabels.end(), l) == outLabels.end())
      indexOrder.push_back(l);

  std::vector<EinsumIndex> indices;
  for (int l : indexOrder) {
    EinsumIndex index;
    index.label = labelName(l);
    const int64_t len = extent.at(l);
    index.shardable = len > 1;
    auto out = std::find(outLabels.begin(), outLabels.end(), l);
    if (out != outLabels.end()) index.outputDim = static_cast<int>(out - outLabels.begin());
    int holders = 0;
    for (size_t k = 0; k < labels.size(); ++k) {
      int dim = -1;
      for (size_t d = 0; d < labels[k].size(); ++d) {
        if (labels[k][d] != l || operands[k][d] != len) continue;
        if (dim >= 0) index.shardable = false;  // a diagonal
        dim = static_cast<int>(d);
      }
      if (dim >= rules::kMaxShardedRank) index.shardable = false;
      index.operandDims.push_back(dim);
      holders += dim >= 0 ? 1 : 0;
    }
    if (index.outputDim >= rules::kMaxShardedRank) index.shardable = false;
    index.kind = index.outputDim < 0 ? EinsumIndex::Kind::Contract
                 : holders > 1       ? EinsumIndex::Kind::Batch
                                     : EinsumIndex::Kind::Free;
    indices.push_back(std::move(index));
  }
  return indices;
}

std::vector<Variant> einsumVariants(const std::vector<EinsumIndex>& indices, size_t operands,
                                    std::string (*name)(const EinsumIndex&)) {
  std::vector<Variant> variants;
  for (const EinsumIndex& index : indices) {
    if (!index.shardable) continue;
    std::vector<rules::Rel> inputs;
    for (int dim : index.operandDims)
      inputs.push_back(dim >= 0 ? rules::gather(dim) : rules::kIdentity);
    const rules::Rel out = index.outputDim >= 0 ? rules::gather(index.outputDim) : rules::kReduce;
    variants.push_back(makeVariant(name(index), std::move(inputs), {out}));
  }
  for (size_t k = 0; k < operands; ++k) {
    std::vector<rules::Rel> inputs(operands, rules::kIdentity);
    inputs[k] = rules::kReduce;
    variants.push_back(makeVariant("partial", std::move(inputs), {rules::kReduce}));
  }
  return variants;
}

}  // namespace hap::rules
