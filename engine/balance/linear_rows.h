// A linear (or mixed-integer) program in row form, built term by term, for the balance step's
// solvers (share_lp: CLP; share_milp: CBC). Internal to engine/balance: only their .cpp files
// include it (it brings COIN-OR's headers).
#pragma once

#include <coin/CoinPackedMatrix.hpp>

#include <map>
#include <utility>
#include <vector>

namespace hap::balance {

struct LinearRows {
  std::vector<double> objective, colLower, colUpper, rowLower, rowUpper;
  std::vector<char> integer;  // per column: 1 for an integer variable (CBC; CLP ignores it)
  CoinPackedMatrix rows{false, 0, 0};  // built by finish()
  double constant = 0;  // objective terms that no variable carries
  bool recordRows = true;  // false: row() keeps nothing (a model built for its columns alone)

  // A new column; its index.
  int column(double cost, double lower, double upper, bool isInteger = false) {
    objective.push_back(cost);
    colLower.push_back(lower);
    colUpper.push_back(upper);
    integer.push_back(isInteger ? 1 : 0);
    return static_cast<int>(objective.size()) - 1;
  }
  // lower <= Σ a·x[c] <= upper; terms on the same column are summed.
  void row(const std::vector<std::pair<int, double>>& terms, double lower, double upper) {
    if (!recordRows) return;
    std::map<int, double> merged;
    for (auto [c, a] : terms) merged[c] += a;
    starts_.push_back(static_cast<CoinBigIndex>(indices_.size()));
    for (auto [c, a] : merged)
      if (a != 0) indices_.push_back(c), elements_.push_back(a);
    rowLower.push_back(lower);
    rowUpper.push_back(upper);
  }
  // The matrix of every row and column (call before handing it to a solver; once, or again after
  // more rows). Built at once: appending rows to a CoinPackedMatrix one by one copies it each time.
  void finish() {
    std::vector<CoinBigIndex> starts = starts_;
    starts.push_back(static_cast<CoinBigIndex>(indices_.size()));
    std::vector<int> lengths;
    for (size_t r = 0; r + 1 < starts.size(); ++r) lengths.push_back(static_cast<int>(starts[r + 1] - starts[r]));
    rows = CoinPackedMatrix(false, static_cast<int>(objective.size()), static_cast<int>(rowLower.size()),
                            static_cast<CoinBigIndex>(indices_.size()), elements_.data(), indices_.data(),
                            starts.data(), lengths.data());
  }

 private:
  std::vector<CoinBigIndex> starts_;
  std::vector<int> indices_;
  std::vector<double> elements_;
};

}  // namespace hap::balance
