// Cluster inventory files as the app opens and saves them (the YAML of engine/cost/cluster.h and
// cluster_yaml.h): a file the user names (File ▸ Open Cluster, a dropped file, the command line),
// a bundled template (a Qt resource under :/studio/clusters), and the edited cluster written back.
//
// Contract: nothing here throws for a bad file. A failure comes back as the loader's or writer's
// message, which names the file, the line and the field ("clusters/x.yaml:7: machines[2].count:
// must be a positive integer (got '-1')") or why the file cannot be read or written.
#pragma once

#include <QString>

#include "engine/cost/cluster.h"

namespace hap::studio {

struct ClusterFile {
  cost::Cluster cluster;  // as loaded (Cluster::source: the path); empty on failure
  QString error;          // "" when it loaded
  bool ok() const { return error.isEmpty(); }
};

// Reads and parses the cluster file at `path` (cost::loadCluster).
ClusterFile openClusterFile(const QString& path);

// Reads and parses a bundled template (ClusterModel::loadTemplate: a resource, or any file).
ClusterFile openClusterTemplate(const QString& path);

// Writes `cluster` as YAML to `path` (cost::saveCluster); "" on success, else the message.
QString saveClusterFile(const cost::Cluster& cluster, const QString& path);

}  // namespace hap::studio
