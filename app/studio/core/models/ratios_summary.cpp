#include "app/studio/core/models/ratios_summary.h"

#include <QObject>

#include <set>
#include <string>

#include "app/studio/core/models/memory_model.h"

namespace hap::studio {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

// "1 segment", "4 segments".
QString counted(int n, const QString& one, const QString& many) {
  return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many);
}

}  // namespace

RatiosSummary ratiosSummary(const plan::Plan& p) {
  RatiosSummary s;
  s.policy = p.ratioPolicy == "lp"     ? QObject::tr("Ratios by LP")
             : p.ratioPolicy == "milp" ? QObject::tr("Whole lengths by MILP")
                                       : QObject::tr("Ratios: %1").arg(qs(p.ratioPolicy));
  s.segmentation = qs(p.segmentation);
  s.segments = static_cast<int>(p.segments.size());
  s.devices = static_cast<int>(p.devices.size());
  std::set<std::string> types;
  for (const plan::PlanDevice& d : p.devices) types.insert(d.type);
  s.deviceTypes = static_cast<int>(types.size());
  s.machines = p.replication.machines;
  for (const plan::PlanDevice& d : plan::worldDevices(p)) s.overCapacity += !MemoryModel::fits(d);
  s.lpSolves = p.lpSolves;
  s.lpSeconds = p.lpSeconds;
  s.milpSolves = p.milpSolves;
  s.milpSeconds = p.milpSeconds;
  return s;
}

QString RatiosSummary::headline() const {
  QString line = QObject::tr("<b>%1</b> · segmentation <i>%2</i> · %3 on %4 of %5")
                     .arg(policy.toHtmlEscaped(), segmentation.toHtmlEscaped(),
                          counted(segments, QObject::tr("segment"), QObject::tr("segments")),
                          counted(devices, QObject::tr("device"), QObject::tr("devices")),
                          counted(deviceTypes, QObject::tr("type"), QObject::tr("types")));
  if (machines > 1)
    line += QObject::tr(" (one machine's program, replicated on %1 machines)").arg(machines);
  if (overCapacity > 0)
    line += QStringLiteral(" · <span style=\"color:%1\"><b>%2</b></span>")
                .arg(MemoryModel::overCapacityForeground().name(),
                     overCapacity == 1
                         ? QObject::tr("1 device does not fit in memory")
                         : QObject::tr("%1 devices do not fit in memory").arg(overCapacity));
  return line;
}

QString RatiosSummary::memoryPageTitle() const {
  return overCapacity == 0   ? QObject::tr("Memory per device")
         : overCapacity == 1 ? QObject::tr("Memory per device (1 does not fit)")
                             : QObject::tr("Memory per device (%1 do not fit)").arg(overCapacity);
}

QString RatiosSummary::solves() const {
  QString text = QObject::tr("%1, %2 ms")
                     .arg(counted(lpSolves, QObject::tr("LP solve"), QObject::tr("LP solves")))
                     .arg(lpSeconds * 1e3, 0, 'f', 1);
  if (milpSolves)
    text += QObject::tr("; %1, %2 ms")
                .arg(counted(milpSolves, QObject::tr("MILP solve"), QObject::tr("MILP solves")))
                .arg(milpSeconds * 1e3, 0, 'f', 1);
  return text;
}

}  // namespace hap::studio
