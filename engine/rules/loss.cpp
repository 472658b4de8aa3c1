// (rule family in progress)
#include "engine/rules/families.h"

namespace hap::rules {

std::span<const RuleEntry> lossRules() { return {}; }

}  // namespace hap::rules
