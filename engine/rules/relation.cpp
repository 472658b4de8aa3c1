#include "engine/rules/relation.h"

namespace hap::rules {

std::string formatRel(Rel r) {
  switch (r) {
    case kIdentity: return "I";
    case kReduce: return "R";
    case kIdentitySfb: return "I*";
    default: return "G(" + std::to_string(r) + ")";
  }
}

}  // namespace hap::rules
