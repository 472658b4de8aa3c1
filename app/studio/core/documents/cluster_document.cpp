#include "app/studio/core/documents/cluster_document.h"

#include "app/studio/core/models/cluster_model.h"
#include "engine/base/error.h"
#include "engine/cost/cluster_yaml.h"

namespace hap::studio {

ClusterFile openClusterFile(const QString& path) {
  try {
    return {cost::loadCluster(path.toStdString()), {}};
  } catch (const Error& e) {
    return {{}, QString::fromStdString(e.what())};
  }
}

ClusterFile openClusterTemplate(const QString& path) {
  try {
    return {ClusterModel::loadTemplate(path), {}};
  } catch (const Error& e) {
    return {{}, QString::fromStdString(e.what())};
  }
}

QString saveClusterFile(const cost::Cluster& cluster, const QString& path) {
  try {
    cost::saveCluster(cluster, path.toStdString());
  } catch (const Error& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace hap::studio
