// (rule family in progress)
#include "engine/rules/families.h"

namespace hap::rules {

std::span<const RuleEntry> convolutionRules() { return {}; }

}  // namespace hap::rules
