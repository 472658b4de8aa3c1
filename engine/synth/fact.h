// A fact is (value, relation): the search states what each distributed value holds in the rules'
// relations (engine/rules/relation.h), and names them unqualified.
#pragma once

#include "engine/rules/relation.h"

namespace hap::synth {

using rules::addForm;
using rules::bit;
using rules::FormMask;
using rules::formatRel;
using rules::gather;
using rules::holds;
using rules::isGather;
using rules::kIdentity;
using rules::kIdentitySfb;
using rules::kMaxShardedRank;
using rules::kReduce;
using rules::Rel;
using rules::relOfBit;

}  // namespace hap::synth
