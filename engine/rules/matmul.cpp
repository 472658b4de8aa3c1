// (rule family in progress)
#include "engine/rules/families.h"

namespace hap::rules {

std::span<const RuleEntry> matmulRules() { return {}; }

}  // namespace hap::rules
