// ClusterPanel offscreen: editing through the view's editors with key events, a rejected value
// shown in red with the old one kept, the device-type combo box, adding and removing through the
// actions, templates, and saving YAML that cost::loadCluster reads back.
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>

#include "app/studio/widgets/cluster_panel.h"
#include "engine/cost/cluster.h"
#include "engine/cost/cluster_yaml.h"

using namespace hap;
using hap::studio::ClusterModel;
using hap::studio::ClusterPanel;
using Field = ClusterModel::Field;
using Group = ClusterModel::Group;

namespace {

QString bundledPath(const char* file) {
  return qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/" + file;
}

// Opens the editor of `index` with F2, types `text` over its content and presses Enter.
void typeInto(QTreeView* view, const QModelIndex& index, const QString& text) {
  view->scrollTo(index);
  view->setCurrentIndex(index);
  QTest::keyClick(view, Qt::Key_F2);
  auto* edit = view->viewport()->findChild<QLineEdit*>();
  QVERIFY(edit);
  QCOMPARE(edit->text(), index.data(Qt::EditRole).toString());
  edit->selectAll();
  QTest::keyClicks(edit, text);
  QTest::keyClick(edit, Qt::Key_Return);
  QTRY_VERIFY(!view->viewport()->findChild<QLineEdit*>() ||
              !view->viewport()->findChild<QLineEdit*>()->isVisible());
}

}  // namespace

class TestClusterPanel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { QDir().mkpath("/tmp/shots"); }

  void editThroughTheView() {
    ClusterPanel panel;
    panel.resize(460, 640);
    panel.setCluster(cost::loadCluster(bundledPath("a100-p100-4.yaml").toStdString()),
                     bundledPath("a100-p100-4.yaml"));
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    ClusterModel* m = panel.model();
    QTreeView* view = panel.view();
    QSignalSpy modified(&panel, &ClusterPanel::modifiedChanged);

    // An accepted value.
    QModelIndex memory = m->propertyIndex(m->deviceTypeIndex(0), Field::Memory);
    view->expand(m->deviceTypeIndex(0));
    typeInto(view, memory, "80GiB");
    QCOMPARE(m->cluster().types[0].memoryBytes, 80.0 * (1 << 30));
    QCOMPARE(memory.data().toString(), "80 GiB");
    QVERIFY(panel.isModified());
    QCOMPARE(modified.count(), 1);
    QVERIFY(panel.message().isEmpty());

    // A rejected value: the message names the field, the old value stays.
    typeInto(view, memory, "80Gb");
    QVERIFY2(
        panel.message().startsWith("device_types.A100-SXM4-40GB.memory: '80Gb' is not a byte size"),
        qPrintable(panel.message()));
    auto* message = panel.findChild<QLabel*>();
    QVERIFY(message);
    QCOMPARE(m->cluster().types[0].memoryBytes, 80.0 * (1 << 30));
    QCOMPARE(memory.data(Qt::EditRole).toString(), "80GiB");

    QModelIndex count = m->propertyIndex(m->machineIndex(1), Field::Count);
    view->expand(m->machineIndex(1));
    typeInto(view, count, "0");
    QCOMPARE(panel.message(), "machines[1].count: must be a positive integer (got '0')");
    panel.grab().save("/tmp/shots/cluster_panel_error.png");
    typeInto(view, count, "3");
    QCOMPARE(m->cluster().size(), 5);
    QVERIFY(panel.message().isEmpty());  // a good edit clears it
    QCOMPARE(panel.findChildren<QLabel*>().last()->text(),
             "5 devices on 2 machines · 208 GiB · 66.9 TFLOP/s fp32 · slowest link: network "
             "1.3 GB/s");

    // The device type is picked from a combo box of the defined types.
    QModelIndex type = m->propertyIndex(m->machineIndex(1), Field::DeviceType);
    view->setCurrentIndex(type);
    QTest::keyClick(view, Qt::Key_F2);
    auto* combo = view->viewport()->findChild<QComboBox*>();
    QVERIFY(combo);
    QCOMPARE(combo->count(), 2);
    QCOMPARE(combo->currentText(), "P100-PCIE-16GB");
    combo->setCurrentIndex(0);
    Q_EMIT combo->activated(0);
    QTRY_COMPARE(m->cluster().machines[1].deviceType, 0);

    // Rename a type: the machines follow.
    QModelIndex typeName = m->deviceTypeIndex(1);
    typeInto(view, typeName, "P100");
    QCOMPARE(QString::fromStdString(m->cluster().types[1].name), "P100");

    view->expandAll();
    view->scrollToTop();
    panel.grab().save("/tmp/shots/cluster_panel.png");
  }

  void addRemoveSaveReload() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    ClusterPanel panel;
    panel.resize(460, 640);
    panel.setCluster(cost::loadCluster(bundledPath("a100-p100-4.yaml").toStdString()),
                     bundledPath("a100-p100-4.yaml"));
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    ClusterModel* m = panel.model();
    QSignalSpy changed(&panel, &ClusterPanel::clusterChanged);

    QVERIFY(!panel.removeAction()->isEnabled());
    panel.addMachineAction()->trigger();
    QCOMPARE(m->cluster().machines.size(), size_t(3));
    QCOMPARE(panel.view()->currentIndex(), m->machineIndex(2));
    QVERIFY(panel.view()->isExpanded(m->machineIndex(2)));
    QVERIFY(panel.removeAction()->isEnabled());
    QCOMPARE(changed.count(), 1);
    QVERIFY(panel.isModified());

    panel.addDeviceTypeAction()->trigger();
    QCOMPARE(m->cluster().types.size(), size_t(3));
    panel.removeAction()->trigger();  // the new type: unused
    QCOMPARE(m->cluster().types.size(), size_t(2));
    panel.view()->setCurrentIndex(m->deviceTypeIndex(0));
    panel.removeAction()->trigger();  // in use: refused, with a message
    QCOMPARE(m->cluster().types.size(), size_t(2));
    QVERIFY(panel.message().startsWith("device type 'A100-SXM4-40GB' is used by machine a100-0"));

    // Save to a new file and read it back with the engine's loader.
    const QString path = dir.filePath("edited.yaml");
    QSignalSpy pathChanged(&panel, &ClusterPanel::pathChanged);
    QVERIFY(panel.saveAs(path));
    QCOMPARE(panel.path(), path);
    QCOMPARE(pathChanged.count(), 1);
    QVERIFY(!panel.isModified());
    QVERIFY(panel.message().isEmpty());
    cost::Cluster reloaded = cost::loadCluster(path.toStdString());
    QCOMPARE(reloaded.machines.size(), size_t(3));
    QCOMPARE(reloaded.size(), 6);
    QCOMPARE(QString::fromStdString(reloaded.machines[2].name), "machine-2");
    QVERIFY(cost::formatClusterYaml(reloaded) == cost::formatClusterYaml(panel.cluster()));

    // Save goes to the same file.
    QVERIFY(m->setData(m->propertyIndex(m->machineIndex(2), Field::Host), "10.0.1.3"));
    QVERIFY(panel.isModified());
    panel.saveAction()->trigger();
    QVERIFY(!panel.isModified());
    QCOMPARE(cost::loadCluster(path.toStdString()).machines[2].host, std::string("10.0.1.3"));

    // A write error is reported and the cluster stays modified.
    QVERIFY(m->setData(m->propertyIndex(m->machineIndex(2), Field::Count), "4"));
    const QString bad = dir.filePath("missing/dir/x.yaml");
    QVERIFY(!panel.saveAs(bad));
    QVERIFY2(panel.message().startsWith(bad + ": cannot write the cluster file"),
             qPrintable(panel.message()));
    QVERIFY(panel.isModified());
    QCOMPARE(panel.path(), path);
  }

  void templates() {
    ClusterPanel panel;
    QVERIFY(!panel.hasCluster());
    QVERIFY(!panel.saveAction()->isEnabled());
    const QList<QAction*> actions = panel.templateActions();
    QVERIFY(actions.size() >= 7);
    QAction* testbed = nullptr;
    for (QAction* a : actions)
      if (a->text() == "paper-testbed-8") testbed = a;
    QVERIFY(testbed);
    QVERIFY(testbed->toolTip().contains("2 V100 + 6 P100"));
    testbed->trigger();
    QVERIFY(panel.hasCluster());
    QCOMPARE(panel.cluster().size(), 8);
    QVERIFY(panel.path().isEmpty());
    QVERIFY(panel.isModified());  // saved nowhere yet
    QVERIFY(panel.saveAction()->isEnabled());

    // A modified cluster is replaced only when the guard agrees.
    bool asked = false;
    panel.setDiscardGuard([&] {
      asked = true;
      return false;
    });
    QVERIFY(!panel.newFromTemplate(":/studio/clusters/a100-p100-4.yaml"));
    QVERIFY(asked);
    QCOMPARE(panel.cluster().size(), 8);
    panel.setDiscardGuard([] { return true; });
    QVERIFY(panel.newFromTemplate(":/studio/clusters/a100-p100-4.yaml"));
    QCOMPARE(panel.cluster().size(), 4);
  }
};

QTEST_MAIN(TestClusterPanel)
#include "tst_cluster_panel.moc"
