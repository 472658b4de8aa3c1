// The cluster inventory as an editable property tree (issue 17, item 5).
//
//   Cluster        name, description, profile
//   Device types   one row per type (name editable)  → FLOP/s float32/16/64, memory, ...
//   Machines       one row per machine (name editable) → host, device type, count, link
//   Network        bandwidth, latency
//   Collectives    efficiency per collective
//
// Columns: Property | Value. Values are typed in the cluster file's unit syntax ("40GiB",
// "19.5T", "10.4Gbps", "5us"; Qt::EditRole gives that form) and displayed in readable units.
//
// Invariant: the model always holds a cluster the YAML loader accepts (or the empty cluster it
// was given). Every edit is applied to a copy, written with formatClusterYaml (the typed text
// passed verbatim) and parsed back with parseCluster; when the loader rejects it, the model is
// unchanged and lastError()/editRejected() carry the loader's message without its FILE:LINE
// prefix ("machines[1].count: must be a positive integer (got '0')").
#pragma once

#include <QAbstractItemModel>
#include <QString>
#include <QStringList>

#include <vector>

#include "engine/cost/cluster.h"
#include "engine/cost/cluster_yaml.h"

namespace hap::studio {

// Totals for the panel's summary line.
struct ClusterSummary {
  int devices = 0;
  int machines = 0;
  double memoryBytes = 0;           // summed over devices
  double flops32 = 0;               // summed float32 peak FLOP/s
  double slowestLinkBandwidth = 0;  // bytes/s; 0 when no link is used (a single device)
  QString slowestLink;              // "network" or "link of p100-0"; empty when none

  // "4 devices on 2 machines · 112 GiB · 57.6 TFLOP/s fp32 · slowest link: network 1.3 GB/s"
  QString text() const;
};

// Only links that carry traffic count: a machine's link when it has several devices, the
// network when there are several machines. The first of equally slow links is named.
ClusterSummary summarizeCluster(const cost::Cluster& cluster);

class ClusterModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum Columns { PropertyColumn, ValueColumn, ColumnCount };
  enum Roles {
    KindRole = Qt::UserRole,  // Kind
    GroupRole,                // Group the row belongs to
    ItemRole,                 // index of the device type / machine the row is or belongs to; -1
    FieldRole,                // Field of a property row; -1 otherwise
    ChoicesRole,              // QStringList of allowed values (a machine's device type), or none
  };
  enum class Kind { Group, DeviceType, Machine, Property };
  enum class Group { Cluster, DeviceTypes, Machines, Network, Collectives };
  static constexpr int kGroupCount = 5;
  // clang-format off
  enum class Field {
    Name, Description, Profile,                                              // Cluster
    Flops32, Flops16, Flops64, Memory, MemoryBandwidth, OpOverhead, CollectiveCall, Source,  // a device type
    Host, DeviceType, Count, LinkBandwidth, LinkLatency,                     // a machine
    NetworkBandwidth, NetworkLatency,                                        // Network
    Efficiency,                                                  // Collectives (row = which)
  };
  // clang-format on

  explicit ClusterModel(QObject* parent = nullptr);

  // Replaces the cluster (a model reset) and marks it unmodified.
  void setCluster(const cost::Cluster& cluster);
  const cost::Cluster& cluster() const { return m_cluster; }

  // Modified = differs from the cluster last given to setCluster() or markSaved().
  bool isModified() const { return m_modified; }
  // markSaved(false): the cluster is saved nowhere (one from a template), so it counts as
  // modified until the next markSaved().
  void markSaved(bool saved = true);

  QString lastError() const { return m_lastError; }
  QStringList deviceTypeNames() const;
  ClusterSummary summary() const { return summarizeCluster(m_cluster); }

  // Structural edits; each returns false (with lastError/editRejected) when refused.
  // addDeviceType/addMachine return the new row, or -1. A new type copies the last type's
  // numbers; a new machine copies the last machine's type, count and link. On a cluster with no
  // device type, addMachine first adds one; a second machine gets a 10Gbps, 50us network when
  // the cluster had none.
  int addDeviceType();
  int addMachine();
  // Refused while machines use the type (the message names them).
  bool removeDeviceType(int row);
  bool removeMachine(int row);
  // Removes the device type or machine that `index` is or lies under.
  bool removeItem(const QModelIndex& index);
  bool canRemove(const QModelIndex& index) const;

  QModelIndex groupIndex(Group group, int column = 0) const;
  QModelIndex deviceTypeIndex(int row, int column = 0) const;
  QModelIndex machineIndex(int row, int column = 0) const;
  // The Value cell of a property row under `parent` (a group or an item).
  QModelIndex propertyIndex(const QModelIndex& parent, Field field) const;

  // Bundled cluster templates: the *.yaml resources under `dir`, sorted by name.
  static QStringList templatePaths(const QString& dir = QStringLiteral(":/studio/clusters"));
  // "a100-p100-4" for ":/studio/clusters/a100-p100-4.yaml".
  static QString templateName(const QString& path);
  // Parses a template resource (or any file). Throws cost::ClusterError.
  static cost::Cluster loadTemplate(const QString& path);

  // QAbstractItemModel
  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

 Q_SIGNALS:
  void clusterChanged();
  void modifiedChanged(bool modified);
  void editRejected(const QString& message);

 private:
  struct Node {
    Kind kind = Kind::Group;
    Group group = Group::Cluster;
    int item = -1;  // type or machine index
    Field field = Field::Name;
    int row = 0;  // the row itself (which collective for Efficiency)
  };
  Node nodeOf(const QModelIndex& index) const;
  int itemRowOfSerial(Group group, quint32 serial) const;
  QVariant displayValue(const Node& node) const;
  QString editValue(const Node& node) const;
  QString fieldPath(const Node& node) const;

  // Validates `copy` (+ raw typed text) through the loader; on success returns true and the
  // parsed cluster in `out`, otherwise sets lastError and emits editRejected.
  bool validate(const cost::Cluster& copy, const cost::RawFields& raw, cost::Cluster& out);
  bool reject(const QString& message);
  // Takes a validated cluster whose rows match the current ones.
  void commit(cost::Cluster validated);
  void emitAllDataChanged();
  void updateModified();

  cost::Cluster m_cluster;
  // A stable id per device type / machine row, so that indices under an item survive the
  // insertion and removal of its siblings.
  std::vector<quint32> m_typeSerials;
  std::vector<quint32> m_machineSerials;
  quint32 m_nextSerial = 1;
  std::string m_savedYaml;
  bool m_modified = false;
  QString m_lastError;
};

}  // namespace hap::studio
