// The profile store's models (core/profile_store_models.h) over a store filled through db::Store:
// every model's rows and cells, runs newest first, steps per rank, and a missing file or a text
// file as the store giving an error value instead of an exception.
#include <QAbstractItemModelTester>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "app/studio/core/models/profile_store_models.h"
#include "app/studio/core/display/units.h"
#include "tests/studio/profile_store_fixture.h"
#include "tests/studio/view_helpers.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::bytes;
using hap::studio::testing::cell;

class TestProfileStoreModels : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    m_path = m_dir.filePath(QStringLiteral("profiles.db"));
    m_fixture = testing::fillStore(m_path);
  }

  void profilesNewestFirst() {
    StoreReader reader(m_path);
    QVERIFY2(reader.ok(), qPrintable(reader.error()));
    ProfilesModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.load(reader);
    QVERIFY(m.error().isEmpty());
    QCOMPARE(m.rowCount(), 3);
    QCOMPARE(m.columnCount(), int(ProfilesModel::ColumnCount));
    QCOMPARE(cell(m, 0, ProfilesModel::NameColumn).toString(), QStringLiteral("lab-cpu"));
    QCOMPARE(cell(m, 0, ProfilesModel::VersionColumn).toInt(), 2);
    QCOMPARE(cell(m, 0, ProfilesModel::HostColumn).toString(), QStringLiteral("bench-host"));
    QCOMPARE(cell(m, 0, ProfilesModel::CreatedColumn).toString(), QStringLiteral("2026-11-21 07:00:00"));
    QCOMPARE(cell(m, 0, ProfilesModel::NoteColumn).toString(), QStringLiteral("hap calibrate: 2 runs, 1 plan"));
    QCOMPARE(cell(m, 0, ProfilesModel::DevicesColumn).toInt(), 2);
    QCOMPARE(cell(m, 0, ProfilesModel::CollectivesColumn).toInt(), 2);
    QCOMPARE(cell(m, 1, ProfilesModel::VersionColumn).toInt(), 1);
    QCOMPARE(cell(m, 1, ProfilesModel::NoteColumn).toString(), QStringLiteral("hap profile --quick"));
    QCOMPARE(cell(m, 2, ProfilesModel::NameColumn).toString(), QStringLiteral("old-gpu"));
    QCOMPARE(cell(m, 2, ProfilesModel::DevicesColumn).toInt(), 1);
    QCOMPARE(cell(m, 2, ProfilesModel::CollectivesColumn).toInt(), 0);
    QCOMPARE(m.info(0)->name, std::string("lab-cpu"));
    QVERIFY(!m.info(3));
  }

  void deviceProfiles() {
    StoreReader reader(m_path);
    DeviceProfilesModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(m.rowCount(), 0);
    m.setProfile(reader.loadProfile(QStringLiteral("lab-cpu"), 1));
    QVERIFY(reader.error().isEmpty());
    QCOMPARE(m.rowCount(), 2);
    using C = DeviceProfilesModel::Column;
    QCOMPARE(cell(m, 0, C::NameColumn).toString(), QStringLiteral("cpu-full"));
    QCOMPARE(cell(m, 0, C::ThreadsColumn).toInt(), 1);
    QCOMPARE(cell(m, 0, C::BandwidthColumn).toString(), bytes(1.25e10) + QStringLiteral("/s"));
    QCOMPARE(cell(m, 0, C::ComputeScaleColumn).toString(), QStringLiteral("1×"));
    QCOMPARE(cell(m, 0, C::RuntimeMemoryColumn).toString(), QStringLiteral("—"));  // not calibrated
    QCOMPARE(cell(m, 0, C::DescriptionColumn).toString(), QStringLiteral("cpu: Intel Xeon @ 2.2GHz, 1 thread"));
    QCOMPARE(cell(m, 0, C::RateColumn), QVariant());  // device rows leave the op columns empty
    QCOMPARE(cell(m, 1, C::NameColumn).toString(), QStringLiteral("cpu-quarter"));
    QCOMPARE(cell(m, 1, C::ThreadsColumn).toInt(), 4);
    QCOMPARE(cell(m, 1, C::ComputeScaleColumn).toString(), QStringLiteral("1.25×"));
    QCOMPARE(cell(m, 1, C::CollectiveSlowdownColumn).toString(), QStringLiteral("2.5×"));
    QCOMPARE(cell(m, 1, C::RuntimeMemoryColumn).toString(), bytes(3 * 1024.0 * 1024 * 1024) + QStringLiteral(" + 1.5 × model"));

    // Op rows under each device: family · dtype, sizes, range, rate at the largest size.
    const QModelIndex full = m.index(0, 0);
    QCOMPARE(m.rowCount(full), 2);
    QCOMPARE(m.rowCount(m.index(1, 0)), 1);
    QCOMPARE(m.parent(m.index(1, 0, full)), full);
    auto op = [&](int row, int column, int role = Qt::DisplayRole) { return m.index(row, column, full).data(role); };
    QCOMPARE(op(0, C::NameColumn).toString(), QStringLiteral("matmul · float32"));
    QCOMPARE(op(0, C::SamplesColumn).toInt(), 3);
    QCOMPARE(op(0, C::SizesColumn).toString(), QStringLiteral("1 MFLOP – 100 MFLOP"));
    QCOMPARE(op(0, C::RateColumn).toString(), QStringLiteral("250 GFLOP/s"));
    QCOMPARE(op(0, C::RateColumn, DeviceProfilesModel::ValueRole).toDouble(), 1e8 / 4e-4);
    QCOMPARE(op(0, C::ThreadsColumn), QVariant());
    QCOMPARE(op(1, C::NameColumn).toString(), QStringLiteral("softmax · bfloat16"));
    QCOMPARE(op(1, C::SamplesColumn).toInt(), 2);
    QCOMPARE(op(1, C::SizesColumn).toString(), bytes(4096) + QStringLiteral(" – ") + bytes(4194304));
    QCOMPARE(op(1, C::RateColumn).toString(), bytes(4194304 / 1e-3) + QStringLiteral("/s"));

    m.setProfile(std::nullopt, QStringLiteral("gone"));
    QCOMPARE(m.rowCount(), 0);
    QCOMPARE(m.error(), QStringLiteral("gone"));
  }

  void collectiveFits() {
    StoreReader reader(m_path);
    CollectiveFitsModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setProfile(reader.loadProfile(QStringLiteral("lab-cpu"), 0));
    QCOMPARE(m.rowCount(), 2);
    using C = CollectiveFitsModel::Column;
    QCOMPARE(cell(m, 0, C::CollectiveColumn).toString(), QStringLiteral("all_reduce"));
    QCOMPARE(cell(m, 0, C::AlgorithmColumn).toString(), QStringLiteral("ring"));
    QCOMPARE(cell(m, 0, C::LinkColumn).toString(), QStringLiteral("intra"));
    QCOMPARE(cell(m, 0, C::LatencyColumn).toString(), formatDuration(2.5e-5));
    QCOMPARE(cell(m, 0, C::LatencyColumn).toString(), QStringLiteral("25 µs"));
    QCOMPARE(cell(m, 0, C::BandwidthColumn).toString(), bytes(3.1e9) + QStringLiteral("/s"));
    QCOMPARE(cell(m, 0, C::RanksColumn).toInt(), 3);
    QCOMPARE(cell(m, 0, C::SamplesColumn).toInt(), 9);
    QCOMPARE(cell(m, 0, C::ResidualColumn).toString(), QStringLiteral("3.1%"));
    QCOMPARE(cell(m, 1, C::CollectiveColumn).toString(), QStringLiteral("all_gather"));
    QCOMPARE(cell(m, 1, C::LinkColumn).toString(), QStringLiteral("inter"));
    QCOMPARE(cell(m, 1, C::ResidualColumn).toString(), QStringLiteral("—"));  // not measured
    QCOMPARE(cell(m, 1, C::ResidualColumn, CollectiveFitsModel::ValueRole), QVariant());
    m.setProfile(std::nullopt);
    QCOMPARE(m.rowCount(), 0);
  }

  void runsNewestFirst() {
    StoreReader reader(m_path);
    RunsModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.load(reader);
    QVERIFY(m.error().isEmpty());
    QCOMPARE(m.rowCount(), 2);
    using C = RunsModel::Column;
    // Run 2 started later: first.
    QCOMPARE(m.runId(0), m_fixture.secondRun);
    QCOMPARE(m.runId(1), m_fixture.firstRun);
    QCOMPARE(m.rowOf(m_fixture.firstRun), 1);
    QCOMPARE(cell(m, 0, C::StatusColumn).toString(), QStringLiteral("failed"));
    QCOMPARE(cell(m, 0, C::StatusColumn, Qt::ToolTipRole).toString(), QStringLiteral("rank 2: exit code 1: bad data file"));
    QCOMPARE(cell(m, 0, C::LabelColumn).toString(), QStringLiteral("second"));
    QCOMPARE(cell(m, 0, C::StrategyColumn).toString(), QStringLiteral("—"));  // no plan
    QCOMPARE(cell(m, 0, C::PredictedColumn).toString(), QStringLiteral("—"));
    QCOMPARE(cell(m, 0, C::StepsColumn).toLongLong(), 2);
    QCOMPARE(cell(m, 0, C::RanksColumn).toInt(), 3);
    QCOMPARE(cell(m, 0, C::FinalLossColumn).toString(), QStringLiteral("1"));

    QCOMPARE(cell(m, 1, C::IdColumn).toLongLong(), m_fixture.firstRun);
    QCOMPARE(cell(m, 1, C::StatusColumn).toString(), QStringLiteral("succeeded"));
    QCOMPARE(cell(m, 1, C::StartedColumn).toString(), QStringLiteral("2026-11-21 10:00:00"));
    QCOMPARE(cell(m, 1, C::RanksColumn).toInt(), 2);
    QCOMPARE(cell(m, 1, C::StrategyColumn).toString(), QStringLiteral("hap"));
    QCOMPARE(cell(m, 1, C::ModelColumn).toString(), QStringLiteral("bert-tiny.pt"));
    QCOMPARE(cell(m, 1, C::StepsColumn).toLongLong(), 4);
    // Rank 0's mean over steps 2-4 (step 1 is warm-up): 10 ms + 3 ms.
    QCOMPARE(cell(m, 1, C::MeanStepColumn).toString(), QStringLiteral("13.000 ms"));
    QVERIFY(std::abs(cell(m, 1, C::MeanStepColumn, RunsModel::ValueRole).toDouble() - 0.013) < 1e-12);
    QCOMPARE(cell(m, 1, C::PredictedColumn).toString(), QStringLiteral("12.500 ms"));
    QCOMPARE(cell(m, 1, C::FinalLossColumn).toString(), QStringLiteral("1"));
    QCOMPARE(cell(m, 1, C::FinalLossColumn, RunsModel::ValueRole).toDouble(), testing::fixtureLoss(4));
  }

  void stepsPerRank() {
    StoreReader reader(m_path);
    StepsModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(m.columnCount(), 0);
    m.load(reader, m_fixture.firstRun);
    QVERIFY(m.error().isEmpty());
    QCOMPARE(m.ranks(), 2);
    QCOMPARE(m.rowCount(), 4);
    QCOMPARE(m.columnCount(), 3 + 2 * 4);
    QCOMPARE(m.headerData(StepsModel::column(1, StepsModel::StepTimeField), Qt::Horizontal).toString(), QStringLiteral("r1 step"));
    QCOMPARE(m.headerData(StepsModel::column(0, StepsModel::PeakMemoryField), Qt::Horizontal).toString(),
             QStringLiteral("r0 peak mem"));
    QCOMPARE(cell(m, 0, StepsModel::StepColumn).toLongLong(), 1);
    QCOMPARE(cell(m, 0, StepsModel::WarmupColumn).toString(), QStringLiteral("warm-up"));
    QCOMPARE(cell(m, 1, StepsModel::WarmupColumn).toString(), QString());
    for (int row = 0; row < 4; ++row) {
      const int step = row + 1;
      QCOMPARE(cell(m, row, StepsModel::LossColumn, StepsModel::ValueRole).toDouble(), testing::fixtureLoss(step));
      for (int rank = 0; rank < 2; ++rank) {
        const double t = testing::fixtureStepSeconds(rank, step);
        QCOMPARE(cell(m, row, StepsModel::column(rank, StepsModel::StepTimeField)).toString(), formatDuration(t));
        QCOMPARE(cell(m, row, StepsModel::column(rank, StepsModel::StepTimeField), StepsModel::ValueRole).toDouble(), t);
        QCOMPARE(cell(m, row, StepsModel::column(rank, StepsModel::ComputeField)).toString(), formatDuration(0.6 * t));
        QCOMPARE(cell(m, row, StepsModel::column(rank, StepsModel::CommunicationField)).toString(), formatDuration(0.3 * t));
        QCOMPARE(cell(m, row, StepsModel::column(rank, StepsModel::PeakMemoryField)).toString(), bytes(1e8 + rank * 1e7));
      }
    }
    QCOMPARE(cell(m, 3, StepsModel::LossColumn).toString(), QStringLiteral("1"));
    QCOMPARE(cell(m, 0, StepsModel::column(1, StepsModel::StepTimeField)).toString(), QStringLiteral("21 ms"));

    // Run 2: rank 2 has no record at step 2.
    m.load(reader, m_fixture.secondRun);
    QCOMPARE(m.ranks(), 3);
    QCOMPARE(m.rowCount(), 2);
    QVERIFY(m.record(1, 1));
    QVERIFY(!m.record(1, 2));
    QCOMPARE(cell(m, 1, StepsModel::column(2, StepsModel::StepTimeField)).toString(), QStringLiteral("—"));
    m.clear();
    QCOMPARE(m.rowCount(), 0);
    QCOMPARE(m.columnCount(), 0);
  }

  void missingFileIsAnErrorValue() {
    const QString path = m_dir.filePath(QStringLiteral("nowhere/profiles.db"));
    StoreReader reader(path);
    QVERIFY(!reader.ok());
    QVERIFY(reader.missing());
    QCOMPARE(reader.error(), QStringLiteral("No profile store at %1: run `hap profile` or `hap launch --db %1`").arg(path));
    ProfilesModel profiles;
    profiles.load(reader);
    QCOMPARE(profiles.rowCount(), 0);
    QCOMPARE(profiles.error(), reader.error());
    RunsModel runs;
    runs.load(reader);
    QCOMPARE(runs.rowCount(), 0);
    QCOMPARE(runs.error(), reader.error());
    StepsModel steps;
    steps.load(reader, 1);
    QCOMPARE(steps.rowCount(), 0);
    QVERIFY(!steps.error().isEmpty());
    QVERIFY(!reader.loadProfile(QStringLiteral("lab-cpu"), 0));
    // Read-only: nothing was created.
    QVERIFY(!QFile::exists(path));
  }

  void textFileIsAnErrorValue() {
    const QString path = m_dir.filePath(QStringLiteral("notes.txt"));
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("these are my notes, not a database\n");
    }
    StoreReader reader(path);
    QVERIFY(!reader.ok());
    QVERIFY(!reader.missing());
    QVERIFY2(reader.error().contains(path), qPrintable(reader.error()));
    QVERIFY(!reader.error().contains(QLatin1Char('\n')));
    ProfilesModel profiles;
    profiles.load(reader);
    QCOMPARE(profiles.rowCount(), 0);
    QCOMPARE(profiles.error(), reader.error());
    RunsModel runs;
    runs.load(reader);
    QCOMPARE(runs.error(), reader.error());
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("these are my notes, not a database\n"));  // left as it was
  }

  void formatting() {
    QCOMPARE(formatFlops(2.5e11, true), QStringLiteral("250 GFLOP/s"));
    QCOMPARE(formatFlops(1.5e6), QStringLiteral("1.5 MFLOP"));
    QCOMPARE(formatFlops(12), QStringLiteral("12 FLOP"));
    QCOMPARE(formatStoreTime("2026-11-26T07:01:02Z"), QStringLiteral("2026-11-26 07:01:02"));
  }

 private:
  QTemporaryDir m_dir;
  QString m_path;
  testing::StoreFixture m_fixture;
};

QTEST_GUILESS_MAIN(TestProfileStoreModels)
#include "tst_profile_store_models.moc"
