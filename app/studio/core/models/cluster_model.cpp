#include "app/studio/core/models/cluster_model.h"

#include <QColor>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFont>
#include <QRegularExpression>

#include <algorithm>
#include <array>
#include <span>

#include "engine/cost/units.h"

namespace hap::studio {
namespace {

using Field = ClusterModel::Field;
using Group = ClusterModel::Group;
using Kind = ClusterModel::Kind;

constexpr std::array kClusterFields{Field::Name, Field::Description, Field::Profile};
constexpr std::array kTypeFields{Field::Flops32, Field::Flops16,         Field::Flops64,
                                 Field::Memory,  Field::MemoryBandwidth, Field::OpOverhead,
                                 Field::CollectiveCall, Field::Source};
constexpr std::array kMachineFields{Field::Host, Field::DeviceType, Field::Count,
                                    Field::LinkBandwidth, Field::LinkLatency};
constexpr std::array kNetworkFields{Field::NetworkBandwidth, Field::NetworkLatency};

// Messages name this origin; it is stripped before the user sees them.
const std::string kOrigin = "<cluster edit>";

// "1 device", "4 devices".
QString count(int n, const char* one, const char* many) {
  return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? ClusterModel::tr(one)
                                                   : ClusterModel::tr(many));
}

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

QString readable(double v, cost::Unit unit) {
  return qs(cost::formatQuantity(v, unit));
}

QString groupLabel(Group g) {
  switch (g) {
    case Group::Cluster:
      return ClusterModel::tr("Cluster");
    case Group::DeviceTypes:
      return ClusterModel::tr("Device types");
    case Group::Machines:
      return ClusterModel::tr("Machines");
    case Group::Network:
      return ClusterModel::tr("Network");
    case Group::Collectives:
      return ClusterModel::tr("Collectives");
  }
  return {};
}

QString fieldLabel(Field f) {
  switch (f) {
    case Field::Name:
      return ClusterModel::tr("Name");
    case Field::Description:
      return ClusterModel::tr("Description");
    case Field::Profile:
      return ClusterModel::tr("Profile");
    case Field::Flops32:
      return ClusterModel::tr("FLOP/s float32");
    case Field::Flops16:
      return ClusterModel::tr("FLOP/s float16");
    case Field::Flops64:
      return ClusterModel::tr("FLOP/s float64");
    case Field::Memory:
      return ClusterModel::tr("Memory");
    case Field::MemoryBandwidth:
      return ClusterModel::tr("Memory bandwidth");
    case Field::OpOverhead:
      return ClusterModel::tr("Op overhead");
    case Field::CollectiveCall:
      return ClusterModel::tr("Collective call");
    case Field::Source:
      return ClusterModel::tr("Source");
    case Field::Host:
      return ClusterModel::tr("Host");
    case Field::DeviceType:
      return ClusterModel::tr("Device type");
    case Field::Count:
      return ClusterModel::tr("Count");
    case Field::LinkBandwidth:
      return ClusterModel::tr("Link bandwidth");
    case Field::LinkLatency:
      return ClusterModel::tr("Link latency");
    case Field::NetworkBandwidth:
      return ClusterModel::tr("Bandwidth");
    case Field::NetworkLatency:
      return ClusterModel::tr("Latency");
    case Field::Efficiency:
      return {};
  }
  return {};
}

// What to type, for tooltips.
QString fieldHint(Field f) {
  switch (f) {
    case Field::Flops32:
      return ClusterModel::tr("Peak FLOP/s for float32, e.g. 19.5T");
    case Field::Flops16:
      return ClusterModel::tr("Peak FLOP/s for float16/bfloat16, e.g. 312T; empty: as float32");
    case Field::Flops64:
      return ClusterModel::tr("Peak FLOP/s for float64, e.g. 9.7T; empty: as float32");
    case Field::Memory:
      return ClusterModel::tr("Device memory, e.g. 40GiB");
    case Field::MemoryBandwidth:
    case Field::LinkBandwidth:
    case Field::NetworkBandwidth:
      return ClusterModel::tr("Bandwidth per direction, e.g. 900GB/s or 10.4Gbps");
    case Field::OpOverhead:
      return ClusterModel::tr("Per-op launch overhead, e.g. 10us");
    case Field::CollectiveCall:
      return ClusterModel::tr("The device's own fixed cost of one collective call (runtime dispatch, copies, "
                              "handshake) beyond the links' latency, e.g. 400us on an emulated CPU rank; empty: 0");
    case Field::LinkLatency:
    case Field::NetworkLatency:
      return ClusterModel::tr("Per-message latency, e.g. 5us");
    case Field::Count:
      return ClusterModel::tr("Devices on this machine, 1 to 1024");
    case Field::Host:
      return ClusterModel::tr("Address the launcher connects to; empty: the machine's name");
    case Field::DeviceType:
      return ClusterModel::tr("One of the device types");
    case Field::Efficiency:
      return ClusterModel::tr("Fraction of the link bandwidth achieved, in (0, 1]; empty: 1");
    default:
      return {};
  }
}

// The loader's message without "ORIGIN:LINE: ".
QString stripOrigin(const std::string& message) {
  QString m = qs(message);
  static const QRegularExpression prefix("^" + QRegularExpression::escape(qs(kOrigin)) +
                                         "(:\\d+)?: ");
  return m.remove(prefix);
}

std::string uniqueName(const std::string& base, auto taken) {
  if (!taken(base)) return base;
  for (int i = 2;; ++i)
    if (std::string n = base + "-" + std::to_string(i); !taken(n)) return n;
}

// A placeholder device type for an empty cluster, from docs/cost-model.md's example.
cost::DeviceType defaultDeviceType() {
  cost::DeviceType t;
  t.name = "gpu";
  t.flops32 = 15.7e12;
  t.memoryBytes = 16.0 * (1 << 30);
  t.memoryBandwidth = 900e9;
  t.opOverheadSeconds = 10e-6;
  return t;
}

}  // namespace

// ---- summary ---------------------------------------------------------------------------------

ClusterSummary summarizeCluster(const cost::Cluster& c) {
  ClusterSummary s;
  s.devices = c.size();
  s.machines = static_cast<int>(c.machines.size());
  for (const cost::Device& d : c.devices) {
    if (d.type < 0 || d.type >= static_cast<int>(c.types.size())) continue;
    s.memoryBytes += c.types[d.type].memoryBytes;
    s.flops32 += c.types[d.type].flops32;
  }
  auto consider = [&](double bandwidth, const QString& name) {
    if (s.slowestLink.isEmpty() || bandwidth < s.slowestLinkBandwidth)
      s.slowestLinkBandwidth = bandwidth, s.slowestLink = name;
  };
  for (const cost::Machine& m : c.machines)
    if (m.count > 1) consider(m.link.bandwidth, ClusterModel::tr("link of %1").arg(qs(m.name)));
  if (c.machines.size() > 1) consider(c.network.bandwidth, ClusterModel::tr("network"));
  return s;
}

QString ClusterSummary::text() const {
  QString out = count(devices, "device", "devices") + ClusterModel::tr(" on ") +
                count(machines, "machine", "machines") + " · " +
                readable(memoryBytes, cost::Unit::Bytes) + " · " +
                readable(flops32, cost::Unit::Flops) + " fp32 · ";
  if (slowestLink.isEmpty()) return out + ClusterModel::tr("no links used");
  return out + ClusterModel::tr("slowest link: %1 %2")
                   .arg(slowestLink, readable(slowestLinkBandwidth, cost::Unit::Bandwidth));
}

// ---- model -----------------------------------------------------------------------------------

ClusterModel::ClusterModel(QObject* parent) : QAbstractItemModel(parent) {
  m_savedYaml = cost::formatClusterYaml(m_cluster);
}

void ClusterModel::setCluster(const cost::Cluster& cluster) {
  beginResetModel();
  m_cluster = cluster;
  m_typeSerials.clear();
  m_machineSerials.clear();
  for (size_t i = 0; i < cluster.types.size(); ++i) m_typeSerials.push_back(m_nextSerial++);
  for (size_t i = 0; i < cluster.machines.size(); ++i) m_machineSerials.push_back(m_nextSerial++);
  m_savedYaml = cost::formatClusterYaml(m_cluster);
  m_lastError.clear();
  endResetModel();
  updateModified();
  Q_EMIT clusterChanged();
}

void ClusterModel::markSaved(bool saved) {
  m_savedYaml = saved ? cost::formatClusterYaml(m_cluster) : std::string();
  updateModified();
}

void ClusterModel::updateModified() {
  bool modified = cost::formatClusterYaml(m_cluster) != m_savedYaml;
  if (modified == m_modified) return;
  m_modified = modified;
  Q_EMIT modifiedChanged(modified);
}

QStringList ClusterModel::deviceTypeNames() const {
  QStringList names;
  for (const cost::DeviceType& t : m_cluster.types) names << qs(t.name);
  return names;
}

// ---- tree structure ------------------------------------------------------------------------
// internalId of an index identifies its parent: 0 the root, g+1 group g, (serial << 8) | (g+1)
// the device type or machine with that serial in group g.

int ClusterModel::itemRowOfSerial(Group group, quint32 serial) const {
  const std::vector<quint32>& serials =
      group == Group::DeviceTypes ? m_typeSerials : m_machineSerials;
  auto it = std::find(serials.begin(), serials.end(), serial);
  return it == serials.end() ? -1 : static_cast<int>(it - serials.begin());
}

ClusterModel::Node ClusterModel::nodeOf(const QModelIndex& index) const {
  Node n;
  n.row = index.row();
  quintptr id = index.internalId();
  if (id == 0) {
    n.kind = Kind::Group;
    n.group = static_cast<Group>(index.row());
    return n;
  }
  n.group = static_cast<Group>((id & 0xff) - 1);
  quint32 serial = static_cast<quint32>(id >> 8);
  if (serial != 0) {
    n.kind = Kind::Property;
    n.item = itemRowOfSerial(n.group, serial);
    n.field =
        n.group == Group::DeviceTypes ? kTypeFields[index.row()] : kMachineFields[index.row()];
    return n;
  }
  switch (n.group) {
    case Group::DeviceTypes:
      n.kind = Kind::DeviceType;
      n.item = index.row();
      break;
    case Group::Machines:
      n.kind = Kind::Machine;
      n.item = index.row();
      break;
    case Group::Cluster:
      n.kind = Kind::Property;
      n.field = kClusterFields[index.row()];
      break;
    case Group::Network:
      n.kind = Kind::Property;
      n.field = kNetworkFields[index.row()];
      break;
    case Group::Collectives:
      n.kind = Kind::Property;
      n.field = Field::Efficiency;
      break;
  }
  return n;
}

QModelIndex ClusterModel::index(int row, int column, const QModelIndex& parent) const {
  if (!hasIndex(row, column, parent)) return {};
  if (!parent.isValid()) return createIndex(row, column, quintptr(0));
  Node p = nodeOf(parent);
  quintptr groupId = static_cast<quintptr>(p.group) + 1;
  if (p.kind == Kind::Group) return createIndex(row, column, groupId);
  const std::vector<quint32>& serials =
      p.kind == Kind::DeviceType ? m_typeSerials : m_machineSerials;
  return createIndex(row, column, (quintptr(serials[p.item]) << 8) | groupId);
}

QModelIndex ClusterModel::parent(const QModelIndex& child) const {
  if (!child.isValid()) return {};
  quintptr id = child.internalId();
  if (id == 0) return {};
  auto group = static_cast<Group>((id & 0xff) - 1);
  quint32 serial = static_cast<quint32>(id >> 8);
  if (serial == 0) return createIndex(static_cast<int>(group), 0, quintptr(0));
  int row = itemRowOfSerial(group, serial);
  if (row < 0) return {};
  return createIndex(row, 0, quintptr(static_cast<int>(group) + 1));
}

int ClusterModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return kGroupCount;
  if (parent.column() != 0) return 0;
  Node n = nodeOf(parent);
  switch (n.kind) {
    case Kind::Group:
      switch (n.group) {
        case Group::Cluster:
          return static_cast<int>(kClusterFields.size());
        case Group::DeviceTypes:
          return static_cast<int>(m_cluster.types.size());
        case Group::Machines:
          return static_cast<int>(m_cluster.machines.size());
        case Group::Network:
          return static_cast<int>(kNetworkFields.size());
        case Group::Collectives:
          return cost::kCollectiveCount;
      }
      return 0;
    case Kind::DeviceType:
      return static_cast<int>(kTypeFields.size());
    case Kind::Machine:
      return static_cast<int>(kMachineFields.size());
    case Kind::Property:
      return 0;
  }
  return 0;
}

int ClusterModel::columnCount(const QModelIndex&) const {
  return ColumnCount;
}

QModelIndex ClusterModel::groupIndex(Group group, int column) const {
  return index(static_cast<int>(group), column);
}

QModelIndex ClusterModel::deviceTypeIndex(int row, int column) const {
  return index(row, column, groupIndex(Group::DeviceTypes));
}

QModelIndex ClusterModel::machineIndex(int row, int column) const {
  return index(row, column, groupIndex(Group::Machines));
}

QModelIndex ClusterModel::propertyIndex(const QModelIndex& parent, Field field) const {
  for (int r = 0; r < rowCount(parent); ++r) {
    QModelIndex i = index(r, ValueColumn, parent);
    Node n = nodeOf(i);
    if (n.kind == Kind::Property && n.field == field) return i;
  }
  return {};
}

// ---- data ------------------------------------------------------------------------------------

QString ClusterModel::fieldPath(const Node& n) const {
  auto typePath = [&](const char* key) {
    return "device_types." + m_cluster.types[n.item].name + "." + key;
  };
  auto machinePath = [&](const char* key) {
    return "machines[" + std::to_string(n.item) + "]." + key;
  };
  switch (n.field) {
    case Field::Name:
      return "name";
    case Field::Description:
      return "description";
    case Field::Profile:
      return "profile";
    case Field::Flops32:
      return qs(typePath("flops.float32"));
    case Field::Flops16:
      return qs(typePath("flops.float16"));
    case Field::Flops64:
      return qs(typePath("flops.float64"));
    case Field::Memory:
      return qs(typePath("memory"));
    case Field::MemoryBandwidth:
      return qs(typePath("memory_bandwidth"));
    case Field::OpOverhead:
      return qs(typePath("op_overhead"));
    case Field::CollectiveCall:
      return qs(typePath("collective_call"));
    case Field::Source:
      return qs(typePath("source"));
    case Field::Host:
      return qs(machinePath("host"));
    case Field::DeviceType:
      return qs(machinePath("device_type"));
    case Field::Count:
      return qs(machinePath("count"));
    case Field::LinkBandwidth:
      return qs(machinePath("link.bandwidth"));
    case Field::LinkLatency:
      return qs(machinePath("link.latency"));
    case Field::NetworkBandwidth:
      return "network.bandwidth";
    case Field::NetworkLatency:
      return "network.latency";
    case Field::Efficiency:
      return qs("collectives." + std::string(cost::collectiveName(cost::Collective(n.row))) +
                ".efficiency");
  }
  return {};
}

QString ClusterModel::editValue(const Node& n) const {
  using cost::Unit;
  auto q = [](double v, Unit u) { return qs(cost::formatYamlQuantity(v, u)); };
  auto optional = [&](double v, Unit u) { return v == 0 ? QString() : q(v, u); };
  const cost::DeviceType* t =
      n.group == Group::DeviceTypes && n.item >= 0 ? &m_cluster.types[n.item] : nullptr;
  const cost::Machine* m =
      n.group == Group::Machines && n.item >= 0 ? &m_cluster.machines[n.item] : nullptr;
  bool machineLinkSet = m && (m->link.bandwidth != 0 || m->link.latency != 0);
  bool networkSet = m_cluster.network.bandwidth != 0 || m_cluster.network.latency != 0;
  switch (n.field) {
    case Field::Name:
      return qs(m_cluster.name);
    case Field::Description:
      return qs(m_cluster.description);
    case Field::Profile:
      return qs(m_cluster.profile);
    case Field::Flops32:
      return q(t->flops32, Unit::Flops);
    case Field::Flops16:
      return optional(t->flops16, Unit::Flops);
    case Field::Flops64:
      return optional(t->flops64, Unit::Flops);
    case Field::Memory:
      return q(t->memoryBytes, Unit::Bytes);
    case Field::MemoryBandwidth:
      return q(t->memoryBandwidth, Unit::Bandwidth);
    case Field::OpOverhead:
      return optional(t->opOverheadSeconds, Unit::Seconds);
    case Field::CollectiveCall:
      return optional(t->collectiveCallSeconds, Unit::Seconds);
    case Field::Source:
      return qs(t->source);
    case Field::Host:
      return qs(m->host);
    case Field::DeviceType:
      return m->deviceType >= 0 && m->deviceType < static_cast<int>(m_cluster.types.size())
                 ? qs(m_cluster.types[m->deviceType].name)
                 : QString();
    case Field::Count:
      return QString::number(m->count);
    case Field::LinkBandwidth:
      return machineLinkSet ? q(m->link.bandwidth, Unit::Bandwidth) : QString();
    case Field::LinkLatency:
      return machineLinkSet ? q(m->link.latency, Unit::Seconds) : QString();
    case Field::NetworkBandwidth:
      return networkSet ? q(m_cluster.network.bandwidth, Unit::Bandwidth) : QString();
    case Field::NetworkLatency:
      return networkSet ? q(m_cluster.network.latency, Unit::Seconds) : QString();
    case Field::Efficiency:
      return QString::number(m_cluster.efficiency[n.row], 'g', 17);
  }
  return {};
}

QVariant ClusterModel::displayValue(const Node& n) const {
  using cost::Unit;
  const cost::Cluster& c = m_cluster;
  switch (n.kind) {
    case Kind::Group:
      switch (n.group) {
        case Group::Cluster:
          return qs(c.name);
        case Group::DeviceTypes:
          return count(static_cast<int>(c.types.size()), "type", "types");
        case Group::Machines:
          return count(static_cast<int>(c.machines.size()), "machine", "machines") + ", " +
                 count(c.size(), "device", "devices");
        case Group::Network:
          if (c.network.bandwidth == 0 && c.network.latency == 0) return tr("none (one machine)");
          return readable(c.network.bandwidth, Unit::Bandwidth) + ", " +
                 readable(c.network.latency, Unit::Seconds);
        case Group::Collectives: {
          bool calibrated = std::any_of(c.efficiency.begin(), c.efficiency.end(),
                                        [](double e) { return e != 1; });
          return calibrated ? tr("calibrated efficiencies") : tr("full link bandwidth");
        }
      }
      return {};
    case Kind::DeviceType: {
      const cost::DeviceType& t = c.types[n.item];
      return readable(t.flops32, Unit::Flops) + ", " + readable(t.memoryBytes, Unit::Bytes);
    }
    case Kind::Machine: {
      const cost::Machine& m = c.machines[n.item];
      QString type = m.deviceType >= 0 && m.deviceType < static_cast<int>(c.types.size())
                         ? qs(c.types[m.deviceType].name)
                         : QString();
      return QStringLiteral("%1 × %2").arg(m.count).arg(type);
    }
    case Kind::Property:
      break;
  }
  const cost::DeviceType* t = n.group == Group::DeviceTypes ? &c.types[n.item] : nullptr;
  const cost::Machine* m = n.group == Group::Machines ? &c.machines[n.item] : nullptr;
  auto link = [](const cost::Link& l, bool bandwidth, const QString& unset) -> QString {
    if (l.bandwidth == 0 && l.latency == 0) return unset;
    return bandwidth ? readable(l.bandwidth, Unit::Bandwidth) : readable(l.latency, Unit::Seconds);
  };
  switch (n.field) {
    case Field::Flops32:
      return readable(t->flops32, Unit::Flops);
    case Field::Flops16:
      return t->flops16 == 0 ? tr("as float32") : readable(t->flops16, Unit::Flops);
    case Field::Flops64:
      return t->flops64 == 0 ? tr("as float32") : readable(t->flops64, Unit::Flops);
    case Field::Memory:
      return readable(t->memoryBytes, Unit::Bytes);
    case Field::MemoryBandwidth:
      return readable(t->memoryBandwidth, Unit::Bandwidth);
    case Field::OpOverhead:
      return readable(t->opOverheadSeconds, Unit::Seconds);
    case Field::CollectiveCall:
      return readable(t->collectiveCallSeconds, Unit::Seconds);
    case Field::LinkBandwidth:
      return link(m->link, true, tr("none (one device)"));
    case Field::LinkLatency:
      return link(m->link, false, tr("none (one device)"));
    case Field::NetworkBandwidth: {
      QString bytes = link(c.network, true, tr("none (one machine)"));
      if (c.network.bandwidth == 0) return bytes;
      // Networks are quoted in bits: add the bit rate.
      return bytes + QStringLiteral(" (%1 Gbps)").arg(c.network.bandwidth * 8 / 1e9, 0, 'g', 4);
    }
    case Field::NetworkLatency:
      return link(c.network, false, tr("none (one machine)"));
    case Field::Efficiency:
      return QString::number(c.efficiency[n.row], 'g', 4);
    default: {
      QString text = editValue(n);
      return text.isEmpty() ? tr("none") : text;
    }
  }
}

QVariant ClusterModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.model() != this) return {};
  Node n = nodeOf(index);
  if (n.kind != Kind::Group && n.group != Group::Cluster && n.group != Group::Network &&
      n.group != Group::Collectives && n.item < 0)
    return {};
  bool value = index.column() == ValueColumn;
  switch (role) {
    case Qt::DisplayRole:
      if (!value) {
        switch (n.kind) {
          case Kind::Group:
            return groupLabel(n.group);
          case Kind::DeviceType:
            return qs(m_cluster.types[n.item].name);
          case Kind::Machine:
            return qs(m_cluster.machines[n.item].name);
          case Kind::Property:
            if (n.field == Field::Efficiency)
              return qs(std::string(cost::collectiveName(cost::Collective(n.row))));
            return fieldLabel(n.field);
        }
        return {};
      }
      return displayValue(n);
    case Qt::EditRole:
      if (!value && n.kind == Kind::DeviceType) return qs(m_cluster.types[n.item].name);
      if (!value && n.kind == Kind::Machine) return qs(m_cluster.machines[n.item].name);
      if (value && n.kind == Kind::Property) return editValue(n);
      return {};
    case Qt::ToolTipRole:
      if (n.kind == Kind::Property) {
        QString hint = fieldHint(n.field);
        return hint.isEmpty() ? fieldPath(n) : fieldPath(n) + " — " + hint;
      }
      if (n.kind == Kind::Machine && value)
        return tr("%1 devices, host %2")
            .arg(m_cluster.machines[n.item].count)
            .arg(qs(m_cluster.machines[n.item].host));
      if (n.kind == Kind::DeviceType && !value && !m_cluster.types[n.item].source.empty())
        return qs(m_cluster.types[n.item].source);
      return {};
    case Qt::FontRole:
      if (n.kind == Kind::Group && !value) {
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    case Qt::ForegroundRole:
      // Defaults and summaries are secondary text.
      if (value && (n.kind != Kind::Property || editValue(n).isEmpty())) return QColor(Qt::gray);
      return {};
    case KindRole:
      return static_cast<int>(n.kind);
    case GroupRole:
      return static_cast<int>(n.group);
    case ItemRole:
      return n.item;
    case FieldRole:
      return n.kind == Kind::Property ? static_cast<int>(n.field) : -1;
    case ChoicesRole:
      if (n.kind == Kind::Property && n.field == Field::DeviceType) return deviceTypeNames();
      return {};
    default:
      return {};
  }
}

QVariant ClusterModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case PropertyColumn:
      return tr("Property");
    case ValueColumn:
      return tr("Value");
    default:
      return {};
  }
}

Qt::ItemFlags ClusterModel::flags(const QModelIndex& index) const {
  if (!index.isValid() || index.model() != this) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  Node n = nodeOf(index);
  bool value = index.column() == ValueColumn;
  if ((!value && (n.kind == Kind::DeviceType || n.kind == Kind::Machine)) ||
      (value && n.kind == Kind::Property))
    f |= Qt::ItemIsEditable;
  return f;
}

// ---- editing ---------------------------------------------------------------------------------

bool ClusterModel::reject(const QString& message) {
  m_lastError = message;
  Q_EMIT editRejected(message);
  return false;
}

bool ClusterModel::validate(const cost::Cluster& copy, const cost::RawFields& raw,
                            cost::Cluster& out) {
  try {
    out = cost::parseCluster(cost::formatClusterYaml(copy, raw), kOrigin);
  } catch (const cost::ClusterError& e) {
    return reject(stripOrigin(e.what()));
  }
  out.source = m_cluster.source;
  m_lastError.clear();
  return true;
}

void ClusterModel::commit(cost::Cluster validated) {
  m_cluster = std::move(validated);
  emitAllDataChanged();
  updateModified();
  Q_EMIT clusterChanged();
}

void ClusterModel::emitAllDataChanged() {
  // Every parent's children: a rename or a count changes summaries and other rows.
  std::vector<QModelIndex> parents{QModelIndex()};
  for (size_t i = 0; i < parents.size(); ++i) {
    int rows = rowCount(parents[i]);
    if (rows == 0) continue;
    Q_EMIT dataChanged(index(0, 0, parents[i]), index(rows - 1, ColumnCount - 1, parents[i]));
    for (int r = 0; r < rows; ++r)
      if (QModelIndex child = index(r, 0, parents[i]); rowCount(child) > 0)
        parents.push_back(child);
  }
}

bool ClusterModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || !(flags(index) & Qt::ItemIsEditable)) return false;
  Node n = nodeOf(index);
  QString text = value.toString().trimmed();
  std::string s = text.toStdString();
  cost::Cluster copy = m_cluster;
  cost::RawFields raw;
  std::string path = fieldPath(n).toStdString();

  if (n.kind == Kind::DeviceType) {
    copy.types[n.item].name = s;  // machines refer to types by index: they follow
  } else if (n.kind == Kind::Machine) {
    cost::Machine& m = copy.machines[n.item];
    if (m.host == m.name) m.host = s;  // a host that defaulted to the name follows it
    m.name = s;
  } else {
    cost::DeviceType* t = n.group == Group::DeviceTypes ? &copy.types[n.item] : nullptr;
    cost::Machine* m = n.group == Group::Machines ? &copy.machines[n.item] : nullptr;
    // Optional numbers: empty text restores the default; anything else goes to the loader as
    // typed.
    auto optionalNumber = [&](double& field, double unset) {
      if (text.isEmpty())
        field = unset;
      else
        raw[path] = s;
    };
    switch (n.field) {
      case Field::Name:
        copy.name = s;
        break;
      case Field::Description:
        copy.description = s;
        break;
      case Field::Profile:
        copy.profile = s;
        break;
      case Field::Source:
        t->source = s;
        break;
      case Field::Host:
        m->host = text.isEmpty() ? m->name : s;
        break;
      case Field::Flops16:
        optionalNumber(t->flops16, 0);
        break;
      case Field::Flops64:
        optionalNumber(t->flops64, 0);
        break;
      case Field::OpOverhead:
        optionalNumber(t->opOverheadSeconds, 0);
        break;
      case Field::CollectiveCall:
        optionalNumber(t->collectiveCallSeconds, 0);
        break;
      case Field::Efficiency:
        optionalNumber(copy.efficiency[n.row], 1);
        break;
      case Field::LinkBandwidth:
      case Field::LinkLatency:
        if (text.isEmpty())
          m->link = {};  // no link; the loader insists on one for several devices
        else
          raw[path] = s;
        break;
      case Field::NetworkBandwidth:
      case Field::NetworkLatency:
        if (text.isEmpty())
          copy.network = {};
        else
          raw[path] = s;
        break;
      default:  // required numbers, count, device type
        raw[path] = s;
        break;
    }
  }
  cost::Cluster validated;
  if (!validate(copy, raw, validated)) return false;
  commit(std::move(validated));
  return true;
}

int ClusterModel::addDeviceType() {
  cost::Cluster copy = m_cluster;
  cost::DeviceType t = copy.types.empty() ? defaultDeviceType() : copy.types.back();
  t.name = uniqueName(copy.types.empty() ? "gpu" : "new-type", [&](const std::string& n) {
    return std::any_of(copy.types.begin(), copy.types.end(),
                       [&](const cost::DeviceType& x) { return x.name == n; });
  });
  t.source.clear();
  copy.types.push_back(t);
  bool fresh = m_cluster.types.empty() && m_cluster.machines.empty();
  if (fresh) {
    // An empty cluster: a valid one needs a machine and a name as well.
    if (copy.name.empty()) copy.name = "new-cluster";
    copy.machines.push_back({"machine-0", "machine-0", 0, 1, {}});
  }
  cost::Cluster validated;
  if (!validate(copy, {}, validated)) return -1;
  if (fresh) {
    setCluster(validated);
    markSaved(false);  // a new cluster is unsaved
    return 0;
  }
  int row = static_cast<int>(m_cluster.types.size());
  beginInsertRows(groupIndex(Group::DeviceTypes), row, row);
  m_cluster = std::move(validated);
  m_typeSerials.push_back(m_nextSerial++);
  endInsertRows();
  commit(m_cluster);
  return row;
}

int ClusterModel::addMachine() {
  if (m_cluster.types.empty()) {
    if (addDeviceType() < 0) return -1;
    if (!m_cluster.machines.empty()) return static_cast<int>(m_cluster.machines.size()) - 1;
  }
  cost::Cluster copy = m_cluster;
  cost::Machine m = copy.machines.empty() ? cost::Machine{"", "", 0, 1, {}} : copy.machines.back();
  m.name = uniqueName("machine-" + std::to_string(copy.machines.size()), [&](const std::string& n) {
    return std::any_of(copy.machines.begin(), copy.machines.end(),
                       [&](const cost::Machine& x) { return x.name == n; });
  });
  m.host = m.name;
  copy.machines.push_back(m);
  if (copy.machines.size() == 2 && copy.network.bandwidth == 0 && copy.network.latency == 0)
    copy.network = {1.25e9, 50e-6};  // 10Gbps, 50us: docs/cost-model.md's example
  cost::Cluster validated;
  if (!validate(copy, {}, validated)) return -1;
  int row = static_cast<int>(m_cluster.machines.size());
  beginInsertRows(groupIndex(Group::Machines), row, row);
  m_cluster = std::move(validated);
  m_machineSerials.push_back(m_nextSerial++);
  endInsertRows();
  commit(m_cluster);
  return row;
}

bool ClusterModel::removeDeviceType(int row) {
  if (row < 0 || row >= static_cast<int>(m_cluster.types.size()))
    return reject(tr("no device type %1").arg(row));
  QStringList users;
  for (const cost::Machine& m : m_cluster.machines)
    if (m.deviceType == row) users << qs(m.name);
  const QString name = qs(m_cluster.types[row].name);
  if (!users.isEmpty())
    return reject(tr("device type '%1' is used by %2 %3; change their device type or remove "
                     "them first")
                      .arg(name, users.size() == 1 ? tr("machine") : tr("machines"),
                           users.join(QStringLiteral(", "))));
  if (m_cluster.types.size() == 1)
    return reject(tr("device type '%1' is the only one; a cluster needs at least one").arg(name));
  cost::Cluster copy = m_cluster;
  copy.types.erase(copy.types.begin() + row);
  for (cost::Machine& m : copy.machines)
    if (m.deviceType > row) --m.deviceType;
  cost::Cluster validated;
  if (!validate(copy, {}, validated)) return false;
  beginRemoveRows(groupIndex(Group::DeviceTypes), row, row);
  m_cluster = std::move(validated);
  m_typeSerials.erase(m_typeSerials.begin() + row);
  endRemoveRows();
  commit(m_cluster);
  return true;
}

bool ClusterModel::removeMachine(int row) {
  if (row < 0 || row >= static_cast<int>(m_cluster.machines.size()))
    return reject(tr("no machine %1").arg(row));
  if (m_cluster.machines.size() == 1)
    return reject(tr("machine '%1' is the only one; a cluster needs at least one")
                      .arg(qs(m_cluster.machines[row].name)));
  cost::Cluster copy = m_cluster;
  copy.machines.erase(copy.machines.begin() + row);
  cost::Cluster validated;
  if (!validate(copy, {}, validated)) return false;
  beginRemoveRows(groupIndex(Group::Machines), row, row);
  m_cluster = std::move(validated);
  m_machineSerials.erase(m_machineSerials.begin() + row);
  endRemoveRows();
  commit(m_cluster);
  return true;
}

bool ClusterModel::canRemove(const QModelIndex& index) const {
  if (!index.isValid()) return false;
  Node n = nodeOf(index);
  return (n.group == Group::DeviceTypes || n.group == Group::Machines) && n.item >= 0;
}

bool ClusterModel::removeItem(const QModelIndex& index) {
  if (!canRemove(index)) return reject(tr("select a device type or a machine to remove"));
  Node n = nodeOf(index);
  return n.group == Group::DeviceTypes ? removeDeviceType(n.item) : removeMachine(n.item);
}

// ---- templates -------------------------------------------------------------------------------

QStringList ClusterModel::templatePaths(const QString& dir) {
  QStringList paths;
  const QStringList files =
      QDir(dir).entryList({QStringLiteral("*.yaml")}, QDir::Files, QDir::Name);
  for (const QString& f : files) paths << dir + "/" + f;
  return paths;
}

QString ClusterModel::templateName(const QString& path) {
  return QFileInfo(path).completeBaseName();
}

cost::Cluster ClusterModel::loadTemplate(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly))
    throw cost::ClusterError(
        (path + ": cannot open the cluster template: " + file.errorString()).toStdString());
  QByteArray text = file.readAll();
  return cost::parseCluster(std::string_view(text.constData(), text.size()), path.toStdString());
}

}  // namespace hap::studio
