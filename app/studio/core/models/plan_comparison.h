// Two plans side by side (issue 18, item 8): their totals, the imported nodes whose rule variant
// changed and the segments whose ratios moved. Plain data, computed once per pair of plans.
//
// Variants are compared only when both plans are of the same graph (as many imported nodes, with
// the same ops); ratios only between segments of the same name when both plans have as many
// devices. Otherwise `note` says what was left out and only the totals compare.
#pragma once

#include <string>
#include <vector>

#include "app/studio/core/documents/plan_document.h"

namespace hap::studio {

struct PlanComparison {
  struct Totals {
    double iterationSeconds = 0;  // Plan::estimate
    double maxMemoryBytes = 0;    // the most any rank uses
    bool fits = true;
  };
  Totals a, b;
  // a.iterationSeconds / b.iterationSeconds: above 1 when B is faster (B's speedup over A).
  double speedup = 0;

  // An imported node computed under another variant in B than in A.
  struct NodeChange {
    ir::NodeId node = ir::kNone;  // imported node id (both plans)
    std::string op;               // without its namespace: "linear"
    std::string scope;            // "" = top level
    std::string variantA, variantB;
    // The node's steps (its computation and the conversions preparing its inputs), slowest
    // device, forward + backward, in each plan.
    double secondsA = 0, secondsB = 0;
  };
  // A segment present in both plans whose share moved on some device by more than kRatioTolerance.
  struct SegmentChange {
    std::string name;
    std::vector<double> ratiosA, ratiosB;  // per rank
    std::vector<double> shifts;            // ratiosB - ratiosA, per rank
    int rank = 0;                          // the rank of the largest absolute shift (the first of equals)
    double largestShift = 0;               // shifts[rank] (signed)
  };
  static constexpr double kRatioTolerance = 1e-6;

  bool sameGraph = false;    // variants were compared
  bool sameDevices = false;  // ratios were compared (as many devices in both plans)
  std::vector<NodeChange> nodes;         // in imported node order
  std::vector<SegmentChange> segments;   // in A's segment order
  std::string note;  // why something was not compared ("" when everything was)

  bool identical() const { return nodes.empty() && segments.empty(); }
  std::vector<ir::NodeId> changedNodes() const;
};

PlanComparison compare(const PlanDocument& a, const PlanDocument& b);

}  // namespace hap::studio
