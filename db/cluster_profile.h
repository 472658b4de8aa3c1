// Resolving a cluster inventory's `profile:` against the profile store: what every front end
// (hap plan, hap compare, the app) does between loading an inventory and planning on it.
#pragma once

#include <string>

#include "engine/cost/cluster.h"

namespace hap::db {

// When `cluster.profile` names a profile ("NAME" for its latest version, "NAME@N" for version N),
// loads it from the store at `storePath` and sets cluster.measured; cluster.profile becomes
// "NAME@N" with the version used, so that a plan records exactly which figures priced it.
// Does nothing for a cluster without `profile:`. Throws StoreError naming the cluster file, the
// profile and the store when the store cannot be opened or does not hold that profile (the
// message lists the profiles it does hold and says how to make one).
void attachProfile(cost::Cluster& cluster, const std::string& storePath);

}  // namespace hap::db
