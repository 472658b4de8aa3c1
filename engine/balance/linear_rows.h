// A linear (or mixed-integer) program in row form, built term by term, for the balance step's
// solvers (share_lp: CLP; share_milp: CBC). Internal to engine/balance: only their .cpp files
// include it (it brings COIN-OR's headers).
#pragma once

#include <coin/CoinPackedMatrix.hpp>
#include <coin/CoinPackedVector.hpp>

#include <map>
#include <utility>
#include <vector>

namespace hap::balance {

struct LinearRows {
  std::vector<double> objective, colLower, colUpper, rowLower, rowUpper;
  std::vector<char> integer;  // per column: 1 for an integer variable (CBC; CLP ignores it)
  CoinPackedMatrix rows{false, 0, 0};
  double constant = 0;  // objective terms that no variable carries

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
    std::map<int, double> merged;
    for (auto [c, a] : terms) merged[c] += a;
    CoinPackedVector v;
    for (auto [c, a] : merged)
      if (a != 0) v.insert(c, a);
    if (rows.getNumCols() < static_cast<int>(objective.size()))
      rows.setDimensions(rows.getNumRows(), static_cast<int>(objective.size()));
    rows.appendRow(v);
    rowLower.push_back(lower);
    rowUpper.push_back(upper);
  }
  // The matrix sized to every row and column (call before handing it to a solver).
  void finish() { rows.setDimensions(static_cast<int>(rowLower.size()), static_cast<int>(objective.size())); }
};

}  // namespace hap::balance
