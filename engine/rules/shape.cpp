// (rule family in progress)
#include "engine/rules/families.h"

namespace hap::rules {

std::span<const RuleEntry> shapeRules() { return {}; }

}  // namespace hap::rules
