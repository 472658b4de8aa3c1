// ClusterModel: the cluster inventory as an editable tree, validated by the YAML loader's rules;
// add/remove/rename, the modified flag, the summary and the bundled templates; cluster files
// opened and saved as the app does (cluster_document.h).
#include <QAbstractItemModelTester>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/studio/core/documents/cluster_document.h"
#include "app/studio/core/models/cluster_model.h"
#include "engine/cost/cluster.h"
#include "engine/cost/cluster_yaml.h"

using namespace hap;
using hap::studio::ClusterModel;
using Field = ClusterModel::Field;
using Group = ClusterModel::Group;

namespace {

cost::Cluster bundled(const char* file) {
  return cost::loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() +
                           "/resources/clusters/" + file);
}

// The model under QAbstractItemModelTester, holding a100-p100-4.
struct Fixture {
  ClusterModel model;
  QAbstractItemModelTester tester{&model, QAbstractItemModelTester::FailureReportingMode::QtTest};
  Fixture() { model.setCluster(bundled("a100-p100-4.yaml")); }

  QModelIndex type(int row) { return model.deviceTypeIndex(row); }
  QModelIndex machine(int row) { return model.machineIndex(row); }
  QModelIndex prop(const QModelIndex& parent, Field f) { return model.propertyIndex(parent, f); }
  QModelIndex group(Group g) { return model.groupIndex(g); }
};

}  // namespace

void initStudioResources() {
  Q_INIT_RESOURCE(studio);
}

class TestClusterModel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { initStudioResources(); }

  void structure() {
    Fixture f;
    ClusterModel& m = f.model;
    QCOMPARE(m.rowCount(), ClusterModel::kGroupCount);
    QCOMPARE(m.columnCount(), 2);
    QCOMPARE(m.headerData(0, Qt::Horizontal).toString(), "Property");
    QCOMPARE(m.headerData(1, Qt::Horizontal).toString(), "Value");
    QCOMPARE(f.group(Group::DeviceTypes).data().toString(), "Device types");
    QCOMPARE(f.group(Group::DeviceTypes).siblingAtColumn(1).data().toString(), "2 types");
    QCOMPARE(f.group(Group::Machines).siblingAtColumn(1).data().toString(),
             "2 machines, 4 devices");
    QCOMPARE(m.rowCount(f.group(Group::DeviceTypes)), 2);
    QCOMPARE(m.rowCount(f.group(Group::Machines)), 2);
    QCOMPARE(m.rowCount(f.group(Group::Network)), 2);
    QCOMPARE(m.rowCount(f.group(Group::Collectives)), 5);
    QCOMPARE(f.type(0).data().toString(), "A100-SXM4-40GB");
    QCOMPARE(m.rowCount(f.type(0)), 8);
    QCOMPARE(m.rowCount(f.machine(1)), 5);

    // Display in readable units, edit in the file's syntax.
    QModelIndex memory = f.prop(f.type(0), Field::Memory);
    QCOMPARE(memory.siblingAtColumn(0).data().toString(), "Memory");
    QCOMPARE(memory.data().toString(), "40 GiB");
    QCOMPARE(memory.data(Qt::EditRole).toString(), "40GiB");
    QVERIFY(memory.flags() & Qt::ItemIsEditable);
    QVERIFY(!(memory.siblingAtColumn(0).flags() & Qt::ItemIsEditable));
    QCOMPARE(f.prop(f.type(0), Field::Flops32).data().toString(), "19.5 TFLOP/s");
    QCOMPARE(f.prop(f.type(0), Field::Flops32).data(Qt::EditRole).toString(), "19.5T");
    QCOMPARE(f.prop(f.type(0), Field::MemoryBandwidth).data(Qt::EditRole).toString(), "1555GB/s");
    QCOMPARE(f.prop(f.type(0), Field::OpOverhead).data(Qt::EditRole).toString(), "10us");
    QModelIndex network = f.prop(f.group(Group::Network), Field::NetworkBandwidth);
    QCOMPARE(network.data().toString(), "1.3 GB/s (10.4 Gbps)");
    QCOMPARE(network.data(Qt::EditRole).toString(), "1.3GB/s");
    QCOMPARE(f.prop(f.machine(1), Field::Host).data().toString(), "10.0.1.2");
    QCOMPARE(f.prop(f.machine(1), Field::DeviceType).data().toString(), "P100-PCIE-16GB");
    QCOMPARE(f.prop(f.machine(1), Field::DeviceType).data(ClusterModel::ChoicesRole).toStringList(),
             QStringList({"A100-SXM4-40GB", "P100-PCIE-16GB"}));
    QCOMPARE(f.machine(0).siblingAtColumn(1).data().toString(), "2 × A100-SXM4-40GB");
    QVERIFY(f.machine(0).flags() & Qt::ItemIsEditable);  // rename
    QCOMPARE(f.prop(f.machine(0), Field::Count).data(Qt::ToolTipRole).toString(),
             "machines[0].count — Devices on this machine, 1 to 1024");
    QCOMPARE(f.machine(0).data(ClusterModel::KindRole).toInt(), int(ClusterModel::Kind::Machine));
    QCOMPARE(f.prop(f.machine(1), Field::Count).data(ClusterModel::ItemRole).toInt(), 1);
    QVERIFY(!m.isModified());
  }

  void acceptedEdits() {
    Fixture f;
    QSignalSpy changed(&f.model, &ClusterModel::clusterChanged);
    QSignalSpy modified(&f.model, &ClusterModel::modifiedChanged);
    QVERIFY(f.model.setData(f.prop(f.type(0), Field::Memory), "80GiB"));
    QCOMPARE(f.model.cluster().types[0].memoryBytes, 80.0 * (1 << 30));
    QCOMPARE(f.prop(f.type(0), Field::Memory).data().toString(), "80 GiB");
    QCOMPARE(changed.count(), 1);
    QCOMPARE(modified.count(), 1);
    QCOMPARE(modified.at(0).at(0).toBool(), true);
    QVERIFY(f.model.isModified());
    QVERIFY(f.model.lastError().isEmpty());

    QVERIFY(f.model.setData(f.prop(f.machine(1), Field::Count), " 4 "));
    QCOMPARE(f.model.cluster().size(), 6);  // devices are recomputed
    QCOMPARE(f.model.cluster().devices[5].machine, 1);
    QVERIFY(f.model.setData(f.prop(f.group(Group::Network), Field::NetworkBandwidth), "25Gbps"));
    QCOMPARE(f.model.cluster().network.bandwidth, 25e9 / 8);
    QVERIFY(f.model.setData(f.prop(f.type(1), Field::Flops16), ""));  // back to "as float32"
    QCOMPARE(f.model.cluster().types[1].flops16, 0.0);
    QCOMPARE(f.prop(f.type(1), Field::Flops16).data().toString(), "as float32");
    QVERIFY(f.model.setData(f.prop(f.machine(0), Field::DeviceType), "P100-PCIE-16GB"));
    QCOMPARE(f.model.cluster().machines[0].deviceType, 1);
    QVERIFY(f.model.setData(f.prop(f.group(Group::Collectives), Field::Efficiency), "0.75"));
    QCOMPARE(f.model.cluster().efficiency[0], 0.75);
    QVERIFY(f.model.setData(f.prop(f.group(Group::Cluster), Field::Name), "edited"));
    QCOMPARE(f.model.cluster().name, std::string("edited"));

    // Restoring the saved values clears the modified flag again.
    f.model.setCluster(bundled("a100-p100-4.yaml"));
    QVERIFY(!f.model.isModified());
    QVERIFY(f.model.setData(f.prop(f.type(0), Field::Memory), "80GiB"));
    QVERIFY(f.model.isModified());
    QVERIFY(f.model.setData(f.prop(f.type(0), Field::Memory), "40 GiB"));
    QVERIFY(!f.model.isModified());
    QCOMPARE(modified.count(), 4);  // true, false (setCluster), true, false
    f.model.setData(f.prop(f.type(0), Field::Memory), "80GiB");
    f.model.markSaved();
    QVERIFY(!f.model.isModified());
  }

  void rejectedEdits_data() {
    QTest::addColumn<int>("group");
    QTest::addColumn<int>("item");
    QTest::addColumn<int>("field");
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("message");
    auto row = [](const char* name, Group g, int item, Field field, const char* text,
                  const char* message) {
      QTest::newRow(name) << int(g) << item << int(field) << QString(text) << QString(message);
    };
    row("count 0", Group::Machines, 1, Field::Count, "0",
        "machines[1].count: must be a positive integer (got '0')");
    row("count text", Group::Machines, 0, Field::Count, "eight",
        "machines[0].count: must be a positive integer (got 'eight')");
    row("count too big", Group::Machines, 0, Field::Count, "5000",
        "machines[0].count: 5000 is more than HAP supports (at most 1024)");
    row("bits memory", Group::DeviceTypes, 0, Field::Memory, "40Gb",
        "device_types.A100-SXM4-40GB.memory: '40Gb' is not a byte size; write a number with an "
        "optional unit B, KB, MB, GB, TB (decimal) or KiB, MiB, GiB, TiB (binary), e.g. 16GiB");
    row("negative flops", Group::DeviceTypes, 1, Field::Flops32, "-1T",
        "device_types.P100-PCIE-16GB.flops.float32: must be positive (got '-1T')");
    row("empty flops32", Group::DeviceTypes, 1, Field::Flops32, "",
        "device_types.P100-PCIE-16GB.flops.float32: '' is not a FLOP/s value; write a number "
        "with an optional suffix K, M, G, T or P (decimal), e.g. 15.7T");
    row("latency", Group::Network, -1, Field::NetworkLatency, "-5us",
        "network.latency: must be zero or positive (got '-5us')");
    row("no network", Group::Network, -1, Field::NetworkBandwidth, "",
        "network: missing; a cluster with 2 machines needs the network between them, e.g. "
        "network: {bandwidth: 10Gbps, latency: 50us}");
    row("no link", Group::Machines, 0, Field::LinkBandwidth, "",
        "machines[0].link: missing; a machine with 2 devices needs the link between them, e.g. "
        "link: {bandwidth: 150GB/s, latency: 5us}");
    row("unknown type", Group::Machines, 1, Field::DeviceType, "H100",
        "machines[1].device_type: unknown device type 'H100'; known types: A100-SXM4-40GB, "
        "P100-PCIE-16GB (define it under device_types)");
    row("efficiency", Group::Collectives, -1, Field::Efficiency, "1.5",
        "collectives.all_gather.efficiency: must be a number in (0, 1], the fraction of the link "
        "bandwidth achieved (got '1.5')");
    row("name", Group::Cluster, -1, Field::Name, "", "name: must be a non-empty string");
  }
  void rejectedEdits() {
    QFETCH(int, group);
    QFETCH(int, item);
    QFETCH(int, field);
    QFETCH(QString, text);
    QFETCH(QString, message);
    Fixture f;
    QModelIndex parent = item < 0
                             ? f.group(Group(group))
                             : (Group(group) == Group::Machines ? f.machine(item) : f.type(item));
    QModelIndex index = f.prop(parent, Field(field));
    QVERIFY(index.isValid());
    QString before = index.data(Qt::EditRole).toString();
    std::string yamlBefore = cost::formatClusterYaml(f.model.cluster());
    QSignalSpy rejected(&f.model, &ClusterModel::editRejected);
    QSignalSpy changed(&f.model, &ClusterModel::clusterChanged);
    QVERIFY(!f.model.setData(index, text));
    QCOMPARE(f.model.lastError(), message);
    QCOMPARE(rejected.count(), 1);
    QCOMPARE(rejected.at(0).at(0).toString(), message);
    QCOMPARE(changed.count(), 0);
    QCOMPARE(index.data(Qt::EditRole).toString(), before);
    QVERIFY(cost::formatClusterYaml(f.model.cluster()) == yamlBefore);
    QVERIFY(!f.model.isModified());
  }

  void renames() {
    Fixture f;
    // Renaming a type renames it for its machines.
    QVERIFY(f.model.setData(f.type(0), "A100-80GB"));
    QCOMPARE(f.prop(f.machine(0), Field::DeviceType).data().toString(), "A100-80GB");
    QCOMPARE(f.machine(0).siblingAtColumn(1).data().toString(), "2 × A100-80GB");
    QCOMPARE(f.model.deviceTypeNames(), QStringList({"A100-80GB", "P100-PCIE-16GB"}));
    QVERIFY(!f.model.setData(f.type(0), "P100-PCIE-16GB"));
    QCOMPARE(f.model.lastError(),
             "device_types.P100-PCIE-16GB: duplicate device type; give each type once");
    QVERIFY(!f.model.setData(f.type(0), ""));
    QCOMPARE(f.model.lastError(), "device_types: type names must be plain non-empty names");
    // Machines: names stay unique; the host is kept unless it was the name.
    QVERIFY(!f.model.setData(f.machine(1), "a100-0"));
    QCOMPARE(f.model.lastError(),
             "machines[1].name: duplicate machine name 'a100-0' (also "
             "machines[0]); give every machine its own name");
    QVERIFY(f.model.setData(f.machine(1), "p100-left"));
    QCOMPARE(f.model.cluster().machines[1].host, std::string("10.0.1.2"));
  }

  void addAndRemove() {
    Fixture f;
    QSignalSpy inserted(&f.model, &QAbstractItemModel::rowsInserted);
    // Open a property of the second machine: its index must survive the first's removal.
    QPersistentModelIndex hostOfP100 = f.prop(f.machine(1), Field::Host);

    int row = f.model.addMachine();
    QCOMPARE(row, 2);
    QCOMPARE(inserted.count(), 1);
    const cost::Machine& added = f.model.cluster().machines[2];
    QCOMPARE(added.name, std::string("machine-2"));
    QCOMPARE(added.deviceType, 1);  // as the last machine
    QCOMPARE(f.model.cluster().size(), 6);
    QVERIFY(f.model.isModified());

    row = f.model.addDeviceType();
    QCOMPARE(row, 2);
    QCOMPARE(f.model.cluster().types[2].name, std::string("new-type"));
    QCOMPARE(f.model.cluster().types[2].flops32, 9.3e12);
    QCOMPARE(f.model.addDeviceType(), 3);
    QCOMPARE(f.model.cluster().types[3].name, std::string("new-type-2"));

    // A type in use cannot go; the message names its machines.
    QVERIFY(!f.model.removeDeviceType(1));
    QCOMPARE(f.model.lastError(),
             "device type 'P100-PCIE-16GB' is used by machines p100-0, machine-2; change their "
             "device type or remove them first");
    QVERIFY(!f.model.removeItem(f.prop(f.type(0), Field::Memory)));
    QCOMPARE(f.model.lastError(),
             "device type 'A100-SXM4-40GB' is used by machine a100-0; "
             "change their device type or remove them first");
    QVERIFY(f.model.removeDeviceType(2));
    QCOMPARE(f.model.cluster().types[2].name, std::string("new-type-2"));

    // Machines move to the remaining type index after a type before theirs is removed.
    QVERIFY(f.model.setData(f.prop(f.machine(2), Field::DeviceType), "new-type-2"));
    QVERIFY(f.model.setData(f.prop(f.machine(0), Field::DeviceType), "P100-PCIE-16GB"));
    QVERIFY(f.model.removeDeviceType(0));
    QCOMPARE(f.model.deviceTypeNames(), QStringList({"P100-PCIE-16GB", "new-type-2"}));
    QCOMPARE(f.model.cluster().machines[2].deviceType, 1);
    QCOMPARE(f.prop(f.machine(2), Field::DeviceType).data().toString(), "new-type-2");

    QVERIFY(f.model.removeItem(f.machine(0)));
    QCOMPARE(f.model.cluster().machines.size(), size_t(2));
    QVERIFY(hostOfP100.isValid());
    QCOMPARE(hostOfP100.data().toString(), "10.0.1.2");
    QVERIFY(f.model.removeMachine(1));
    QVERIFY(!f.model.removeMachine(0));
    QCOMPARE(f.model.lastError(), "machine 'p100-0' is the only one; a cluster needs at least one");
    QVERIFY(!f.model.canRemove(f.group(Group::Network)));
    QVERIFY(!f.model.removeItem(f.group(Group::Network)));
  }

  // From nothing: adding a machine makes a minimal valid cluster; a second one gets a network.
  void addToEmpty() {
    ClusterModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(model.groupIndex(Group::Machines)), 0);
    QCOMPARE(model.addMachine(), 0);
    QCOMPARE(model.cluster().types.size(), size_t(1));
    QCOMPARE(model.cluster().machines.size(), size_t(1));
    QVERIFY(model.isModified());
    QCOMPARE(model.addMachine(), 1);
    QCOMPARE(model.cluster().network.bandwidth, 1.25e9);
    QVERIFY(!cost::parseCluster(cost::formatClusterYaml(model.cluster()), "x").name.empty());
  }

  void summary() {
    Fixture f;
    studio::ClusterSummary s = f.model.summary();
    QCOMPARE(s.devices, 4);
    QCOMPARE(s.machines, 2);
    QCOMPARE(s.memoryBytes, 112.0 * (1 << 30));
    QCOMPARE(s.flops32, 2 * 19.5e12 + 2 * 9.3e12);
    QCOMPARE(s.slowestLink, "network");
    QCOMPARE(s.slowestLinkBandwidth, 1.3e9);
    QCOMPARE(s.text(),
             "4 devices on 2 machines · 112 GiB · 57.6 TFLOP/s fp32 · slowest link: "
             "network 1.3 GB/s");
    // A PCIe link slower than a fast network is named by its machine.
    QVERIFY(f.model.setData(f.prop(f.group(Group::Network), Field::NetworkBandwidth), "100GB/s"));
    s = f.model.summary();
    QCOMPARE(s.slowestLink, "link of p100-0");
    QCOMPARE(s.slowestLinkBandwidth, 15.75e9);
    // One device: no link carries traffic.
    s = studio::summarizeCluster(bundled("paper-testbed-8.yaml"));
    QCOMPARE(s.devices, 8);
    QCOMPARE(s.slowestLink, "network");
    cost::Cluster one = bundled("a100-p100-4.yaml");
    one.machines.resize(1);
    one.machines[0].count = 1;
    one.devices.resize(1);
    s = studio::summarizeCluster(one);
    QCOMPARE(s.text(), "1 device on 1 machine · 40 GiB · 19.5 TFLOP/s fp32 · no links used");
  }

  void templates() {
    QStringList paths = ClusterModel::templatePaths();
    QVERIFY2(paths.size() >= 7, qPrintable(paths.join(", ")));
    QVERIFY(paths.contains(":/studio/clusters/a100-p100-4.yaml"));
    QCOMPARE(ClusterModel::templateName(paths.first()), "a100-p100-4");
    for (const QString& p : paths) {
      try {
        cost::Cluster c = ClusterModel::loadTemplate(p);
        QCOMPARE(QString::fromStdString(c.name), ClusterModel::templateName(p));
      } catch (const cost::ClusterError& e) {
        QFAIL(e.what());
      }
    }
    Fixture f;
    f.model.setCluster(ClusterModel::loadTemplate(":/studio/clusters/paper-testbed-64.yaml"));
    QCOMPARE(f.model.rowCount(f.group(Group::Machines)), 8);
    QCOMPARE(f.model.summary().devices, 64);
    QVERIFY_THROWS_EXCEPTION(cost::ClusterError,
                             ClusterModel::loadTemplate(":/studio/clusters/none.yaml"));
    QVERIFY(ClusterModel::templatePaths(":/no/such/dir").isEmpty());
  }

  // Cluster files as the app opens and saves them (cluster_document.h): the loader's cluster, or
  // its message naming the file, line and field; nothing throws.
  void files() {
    const QString source = qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/";
    studio::ClusterFile file = studio::openClusterFile(source + "a100-p100-4.yaml");
    QVERIFY2(file.ok(), qPrintable(file.error));
    QCOMPARE(file.cluster.name, bundled("a100-p100-4.yaml").name);
    QCOMPARE(file.cluster.devices.size(), size_t(4));
    QCOMPARE(QString::fromStdString(file.cluster.source), source + "a100-p100-4.yaml");

    file = studio::openClusterFile(source + "no-such-cluster.yaml");
    QVERIFY(!file.ok());
    QVERIFY2(file.error.startsWith(source + "no-such-cluster.yaml: cannot open the cluster file"),
             qPrintable(file.error));

    QTemporaryDir dir;
    const QString bad = dir.filePath("bad.yaml");
    {
      QFile f(bad);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("name: bad\ndevice_types:\n  X:\n    memory: 80Gb\n");
    }
    file = studio::openClusterFile(bad);
    QVERIFY(!file.ok());
    QVERIFY2(file.error.startsWith(bad + ":"), qPrintable(file.error));  // FILE:LINE: FIELD: ...

    file = studio::openClusterTemplate(":/studio/clusters/paper-testbed-64.yaml");
    QVERIFY2(file.ok(), qPrintable(file.error));
    QCOMPARE(file.cluster.devices.size(), size_t(64));
    file = studio::openClusterTemplate(":/studio/clusters/none.yaml");
    QVERIFY(!file.ok());
    QVERIFY2(file.error.contains("cannot open the cluster template"), qPrintable(file.error));

    // Saved and opened again: the same cluster.
    const cost::Cluster original = bundled("a100-p100-4.yaml");
    const QString saved = dir.filePath("saved.yaml");
    QCOMPARE(studio::saveClusterFile(original, saved), QString());
    file = studio::openClusterFile(saved);
    QVERIFY2(file.ok(), qPrintable(file.error));
    QCOMPARE(cost::formatClusterYaml(file.cluster), cost::formatClusterYaml(original));
    const QString unwritable = dir.filePath("no/such/folder/c.yaml");
    QVERIFY(studio::saveClusterFile(original, unwritable)
                .startsWith(unwritable + ": cannot write the cluster file"));
  }
};

QTEST_MAIN(TestClusterModel)
#include "tst_cluster_model.moc"
