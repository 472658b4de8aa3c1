// The profile store (db/store.h): round trips of every record kind, profile versions, the default
// location, migrations from every earlier schema version, and the one-line errors for files that
// are not a usable store.
#include <QtTest>

#include <QRegularExpression>
#include <QTemporaryDir>
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "db/schema.h"
#include "db/store.h"

using hap::db::RunRecord;
using hap::db::RunStatus;
using hap::db::StageRecord;
using hap::db::StepRecord;
using hap::db::Store;
using hap::db::StoreError;
namespace cost = hap::cost;
namespace fs = std::filesystem;

namespace {

cost::Profile sampleProfile(const std::string& note) {
  cost::Profile p;
  p.name = "lab-cpu";
  p.host = "bench-host";
  p.createdAt = "2026-11-26T07:01:02Z";
  p.note = note;
  p.gradientExposure = 0.375;
  for (int d = 0; d < 2; ++d) {
    cost::DeviceProfile dev;
    dev.deviceType = d == 0 ? "cpu-full" : "cpu-quarter";
    dev.description = "cpu: Intel Xeon @ 2.2GHz, 1 thread";
    dev.threads = d + 1;
    dev.memoryBandwidth = 1.25e10 / (d + 1);
    dev.computeScale = 1.0 + 0.125 * d;
    dev.collectiveSlowdown = 1.5 + d;
    dev.baseMemoryBytes = 3e8 + d;
    dev.memoryScale = 1.25 + d;
    for (auto [family, dtype] : {std::pair{cost::OpFamily::MatMul, hap::ir::DType::Float32},
                                 std::pair{cost::OpFamily::Softmax, hap::ir::DType::BFloat16}}) {
      cost::OpThroughput op;
      op.family = family;
      op.dtype = dtype;
      for (int k = 0; k < 3; ++k) op.samples.push_back({1e6 * std::pow(10.0, k) + d, 1e-5 * (k + 1) + 1e-7 * d});
      dev.ops.push_back(op);
    }
    p.devices.push_back(dev);
  }
  auto fit = [](cost::Collective c, std::string algorithm, cost::LinkClass k, double latency, double bandwidth,
                double residual) {
    cost::CollectiveFit f;
    f.collective = c;
    f.algorithm = std::move(algorithm);
    f.linkClass = k;
    f.link.latency = latency;
    f.link.bandwidth = bandwidth;
    f.ranks = 3;
    f.samples = 9;
    f.relativeResidual = residual;
    return f;
  };
  p.collectives = {fit(cost::Collective::AllReduce, "ring", cost::LinkClass::Intra, 2.5e-5, 3.1e9, 0.031),
                   fit(cost::Collective::AllGather, "grouped", cost::LinkClass::Inter, 1e-4, 1.1e9, 0.1 / 3),
                   fit(cost::Collective::AllToAll, "", cost::LinkClass::Intra, 0, 7e8, std::nan(""))};
  return p;
}

void compareProfiles(const cost::Profile& a, const cost::Profile& b) {
  QCOMPARE(a.name, b.name);
  QCOMPARE(a.host, b.host);
  QCOMPARE(a.createdAt, b.createdAt);
  QCOMPARE(a.note, b.note);
  QCOMPARE(a.gradientExposure, b.gradientExposure);
  QCOMPARE(a.devices.size(), b.devices.size());
  for (size_t d = 0; d < a.devices.size(); ++d) {
    const cost::DeviceProfile &x = a.devices[d], &y = b.devices[d];
    QCOMPARE(x.deviceType, y.deviceType);
    QCOMPARE(x.description, y.description);
    QCOMPARE(x.threads, y.threads);
    QCOMPARE(x.memoryBandwidth, y.memoryBandwidth);
    QCOMPARE(x.computeScale, y.computeScale);
    QCOMPARE(x.collectiveSlowdown, y.collectiveSlowdown);
    QCOMPARE(x.baseMemoryBytes, y.baseMemoryBytes);
    QCOMPARE(x.memoryScale, y.memoryScale);
    QCOMPARE(x.ops.size(), y.ops.size());
    for (size_t k = 0; k < x.ops.size(); ++k) {
      QVERIFY(x.ops[k].family == y.ops[k].family);
      QVERIFY(x.ops[k].dtype == y.ops[k].dtype);
      QCOMPARE(x.ops[k].samples.size(), y.ops[k].samples.size());
      for (size_t i = 0; i < x.ops[k].samples.size(); ++i) {
        QVERIFY(x.ops[k].samples[i].work == y.ops[k].samples[i].work);  // exact: REAL keeps a double
        QVERIFY(x.ops[k].samples[i].seconds == y.ops[k].samples[i].seconds);
      }
    }
  }
  QCOMPARE(a.collectives.size(), b.collectives.size());
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    const cost::CollectiveFit &x = a.collectives[i], &y = b.collectives[i];
    QVERIFY(x.collective == y.collective);
    QCOMPARE(x.algorithm, y.algorithm);
    QVERIFY(x.linkClass == y.linkClass);
    QCOMPARE(x.link.latency, y.link.latency);
    QCOMPARE(x.link.bandwidth, y.link.bandwidth);
    QCOMPARE(x.ranks, y.ranks);
    QCOMPARE(x.samples, y.samples);
    if (std::isnan(x.relativeResidual))
      QVERIFY(std::isnan(y.relativeResidual));
    else
      QCOMPARE(x.relativeResidual, y.relativeResidual);
  }
}

StepRecord stepRecord(int rank, int64_t step) {
  StepRecord s;
  s.rank = rank;
  s.step = step;
  s.warmup = step == 1;
  s.seconds = 0.1 * (rank + 1) + 0.001 * static_cast<double>(step);
  s.computeSeconds = 0.07 * (rank + 1);
  s.communicationSeconds = 0.02 + 0.001 * rank;
  s.loss = 2.0 / static_cast<double>(step);
  s.peakMemoryBytes = 1.5e8 + 1e6 * rank;
  s.cpuSeconds = 0.09 * (rank + 1);
  return s;
}

// A pid that belonged to a process of this host and no longer does.
pid_t deadPid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Opening `path` throws a one-line StoreError naming the file; returns its message.
QString expectStoreError(const std::string& path, Store::Mode mode = Store::Mode::ReadWrite) {
  try {
    Store s(path, mode);
  } catch (const StoreError& e) {
    const QString message = QString::fromStdString(e.what());
    if (!message.contains(QString::fromStdString(path)) || message.contains('\n'))
      return "BAD MESSAGE: " + message;
    return message;
  } catch (const std::exception& e) {
    return QString("NOT A StoreError: ") + e.what();
  }
  return "NO ERROR";
}

// The rows a store at schema version k holds, written with that version's SQL, and their check
// after the store was migrated to Store::kSchemaVersion. Add a case with every new migration.
void fillVersion(SQLite::Database&, int version) {
  switch (version) {
    case 0:
      return;  // version 0 is an empty SQLite file: no tables, no rows
    default:
      QFAIL(qPrintable(QString("write the rows of schema version %1 in fillVersion").arg(version)));
  }
}
void checkVersion(Store&, int version) {
  switch (version) {
    case 0:
      return;
    default:
      QFAIL(qPrintable(QString("check the rows of schema version %1 in checkVersion").arg(version)));
  }
}

}  // namespace

class TstStore : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string file(const char* name) const { return (dir_.path() + "/" + name).toStdString(); }

 private Q_SLOTS:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void createsSchema() {
    const std::string path = file("sub/folder/new.db");
    { Store s(path); QCOMPARE(s.path(), path); }
    QVERIFY(fs::exists(path));
    SQLite::Database db(path);
    QCOMPARE(db.execAndGet("PRAGMA application_id").getInt(), hap::db::schema::kApplicationId);
    QCOMPARE(db.execAndGet("PRAGMA user_version").getInt(), Store::kSchemaVersion);
    QCOMPARE(db.execAndGet("PRAGMA journal_mode").getString(), std::string("wal"));
    for (const char* table : {"profile", "device_profile", "op_throughput", "op_sample", "collective_fit", "cluster",
                              "plan", "run", "step", "stage"})
      QVERIFY2(db.tableExists(table), table);
    // Reopening an existing store changes nothing.
    Store again(path, Store::Mode::ReadOnly);
    QVERIFY(again.runs().empty());
  }

  void profileRoundTripAndVersions() {
    Store s(file("profiles.db"));
    const cost::Profile first = sampleProfile("hap profile --quick");
    cost::Profile second = sampleProfile("hap calibrate: 12 runs, 6 plans");
    second.devices[1].computeScale = 1.75;
    QCOMPARE(s.saveProfile(first), 1);
    QCOMPARE(s.saveProfile(second), 2);

    const std::optional<cost::Profile> latest = s.loadProfile("lab-cpu");
    QVERIFY(latest);
    QCOMPARE(latest->version, 2);
    compareProfiles(*latest, second);
    const std::optional<cost::Profile> v1 = s.loadProfile("lab-cpu", 1);
    QVERIFY(v1);
    QCOMPARE(v1->version, 1);
    compareProfiles(*v1, first);
    QVERIFY(!s.loadProfile("lab-cpu", 3));
    QVERIFY(!s.loadProfile("other"));

    const std::vector<hap::db::ProfileInfo> all = s.profiles();
    QCOMPARE(all.size(), size_t{2});
    QCOMPARE(all[0].version, 2);  // newest first
    QCOMPARE(all[1].version, 1);
    QCOMPARE(all[0].name, std::string("lab-cpu"));
    QCOMPARE(all[0].note, second.note);
    QCOMPARE(all[0].devices, 2);
    QCOMPARE(all[0].collectives, 3);

    // An invalid profile is refused before anything is written.
    cost::Profile bad = sampleProfile("unsorted");
    std::swap(bad.devices[0].ops[0].samples[0], bad.devices[0].ops[0].samples[1]);
    QVERIFY_THROWS_EXCEPTION(StoreError, s.saveProfile(bad));
    QCOMPARE(s.profiles().size(), size_t{2});
  }

  void clusterAndPlanDedupe() {
    Store s(file("plans.db"));
    const std::string yaml = "name: lab\nmachines: []\n";
    const int64_t c = s.saveCluster("lab", yaml);
    QCOMPARE(s.saveCluster("lab", yaml), c);
    const int64_t other = s.saveCluster("lab", yaml + "# changed\n");
    QVERIFY(other != c);
    const std::optional<hap::db::ClusterRecord> rec = s.cluster(c);
    QVERIFY(rec);
    QCOMPARE(rec->name, std::string("lab"));
    QCOMPARE(rec->yaml, yaml);
    QCOMPARE(rec->sha256.size(), size_t{64});
    QVERIFY(!s.cluster(9999));

    hap::db::PlanRecord p;
    p.modelSha256 = std::string(64, 'a');
    p.modelPath = "/zoo/bert-tiny.pt";
    p.strategy = "hap";
    p.clusterId = c;
    p.predictedSeconds = 0.0123456789;
    p.predictedMemoryBytes = {1.5e8, 2.25e8, 3e8};
    p.predictedComputeSeconds = {0.01, 0.02, 1.0 / 3};
    p.json = R"({"format": "hap-plan", "version": 2})";
    const int64_t id = s.savePlan(p);
    QCOMPARE(s.savePlan(p), id);
    hap::db::PlanRecord changed = p;
    changed.json = R"({"format": "hap-plan", "version": 2, "x": 1})";
    QVERIFY(s.savePlan(changed) != id);
    const std::optional<hap::db::PlanRecord> back = s.plan(id);
    QVERIFY(back);
    QCOMPARE(back->id, id);
    QCOMPARE(back->sha256.size(), size_t{64});
    QCOMPARE(back->modelSha256, p.modelSha256);
    QCOMPARE(back->modelPath, p.modelPath);
    QCOMPARE(back->strategy, p.strategy);
    QCOMPARE(back->clusterId, c);
    QCOMPARE(back->predictedSeconds, p.predictedSeconds);
    QCOMPARE(back->predictedMemoryBytes, p.predictedMemoryBytes);
    QCOMPARE(back->predictedComputeSeconds, p.predictedComputeSeconds);
    QCOMPARE(back->json, p.json);
    QVERIFY(!s.plan(9999));

    hap::db::PlanRecord orphan = p;
    orphan.json = "{}";
    orphan.clusterId = 9999;
    QVERIFY_THROWS_EXCEPTION(StoreError, s.savePlan(orphan));
  }

  void runRoundTrip() {
    Store s(file("runs.db"));
    hap::db::PlanRecord p;
    p.modelPath = "m.pt";
    p.strategy = "dp-ev";
    p.json = "{\"plan\": 1}";
    const int64_t plan = s.savePlan(p);

    RunRecord r;
    r.planId = plan;
    r.label = "bench-hetero HAP round 2";
    r.settingsJson = R"({"steps": 3, "warmup": 1})";
    r.ranks = 2;
    r.cpuShares = {1, 0.25};
    r.host = "somewhere-else";
    r.pid = 4242;
    r.startedAt = "2026-11-26T07:01:02Z";
    const int64_t id = s.beginRun(r);
    std::optional<RunRecord> back = s.run(id);
    QVERIFY(back);
    QCOMPARE(back->id, id);
    QCOMPARE(back->planId, plan);
    QCOMPARE(back->label, r.label);
    QCOMPARE(back->settingsJson, r.settingsJson);
    QCOMPARE(back->ranks, 2);
    QCOMPARE(back->cpuShares, r.cpuShares);
    QCOMPARE(back->host, r.host);
    QCOMPARE(back->pid, int64_t{4242});
    QCOMPARE(back->startedAt, r.startedAt);
    QVERIFY(back->endedAt.empty());
    QVERIFY(back->status == RunStatus::Running);

    // Steps come back by step, then rank, whatever order they were recorded in.
    s.recordSteps(id, {stepRecord(1, 2), stepRecord(0, 2)});
    s.recordSteps(id, {stepRecord(1, 1), stepRecord(0, 1)});
    StepRecord nanLoss = stepRecord(0, 3);
    nanLoss.loss = std::nan("");
    s.recordSteps(id, {stepRecord(1, 3), nanLoss});
    const std::vector<StepRecord> steps = s.steps(id);
    QCOMPARE(steps.size(), size_t{6});
    for (size_t i = 0; i < steps.size(); ++i) {
      const StepRecord want = stepRecord(static_cast<int>(i % 2), static_cast<int64_t>(i / 2 + 1));
      QCOMPARE(steps[i].rank, want.rank);
      QCOMPARE(steps[i].step, want.step);
      QCOMPARE(steps[i].warmup, want.warmup);
      QCOMPARE(steps[i].seconds, want.seconds);
      QCOMPARE(steps[i].computeSeconds, want.computeSeconds);
      QCOMPARE(steps[i].communicationSeconds, want.communicationSeconds);
      QCOMPARE(steps[i].peakMemoryBytes, want.peakMemoryBytes);
      QCOMPARE(steps[i].cpuSeconds, want.cpuSeconds);
      if (i == 4)
        QVERIFY(std::isnan(steps[i].loss));
      else
        QCOMPARE(steps[i].loss, want.loss);
    }
    // Only what came since: rank 0 after step 1, rank 1 after step 3 (nothing), a rank past the
    // vector's end from its first step; by rank, then step.
    {
      const std::vector<StepRecord> fresh = s.steps(id, {1, 3}, 2);
      QCOMPARE(fresh.size(), size_t{2});
      QCOMPARE(fresh[0].rank, 0);
      QCOMPARE(fresh[0].step, int64_t{2});
      QCOMPARE(fresh[0].seconds, stepRecord(0, 2).seconds);
      QCOMPARE(fresh[1].step, int64_t{3});
      const std::vector<StepRecord> all = s.steps(id, {}, 2);
      QCOMPARE(all.size(), size_t{6});
      QCOMPARE(all[3].rank, 1);
      QCOMPARE(all[3].step, int64_t{1});
      QCOMPARE(s.steps(id, {3, 3}, 2).size(), size_t{0});
    }
    // A step is recorded once; a second write of it fails whole (nothing of it lands).
    QVERIFY_THROWS_EXCEPTION(StoreError, s.recordSteps(id, {stepRecord(0, 4), stepRecord(0, 1)}));
    QCOMPARE(s.steps(id).size(), size_t{6});
    QVERIFY_THROWS_EXCEPTION(StoreError, s.recordSteps(id + 100, {stepRecord(0, 1)}));

    s.recordStages(id, {{1, 0, 0.5, 0.25}, {0, 1, 0.125, 0.0625}, {0, 0, 1, 2}});
    const std::vector<StageRecord> stages = s.stages(id);
    QCOMPARE(stages.size(), size_t{3});
    QCOMPARE(stages[0].rank, 0);
    QCOMPARE(stages[0].stage, 0);
    QCOMPARE(stages[0].communicationSeconds, 2.0);
    QCOMPARE(stages[1].stage, 1);
    QCOMPARE(stages[1].computeSeconds, 0.125);
    QCOMPARE(stages[2].rank, 1);
    QCOMPARE(stages[2].communicationSeconds, 0.25);

    s.finishRun(id, RunStatus::Failed, "rank 1: exit code 1: out of memory");
    back = s.run(id);
    QVERIFY(back->status == RunStatus::Failed);
    QCOMPARE(back->exitReason, std::string("rank 1: exit code 1: out of memory"));
    QVERIFY(QRegularExpression("^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ$")
                .match(QString::fromStdString(back->endedAt))
                .hasMatch());
    QVERIFY_THROWS_EXCEPTION(StoreError, s.finishRun(id + 100, RunStatus::Stopped));

    // The defaults: this process on this host, started now; runs() newest first.
    RunRecord plain;
    plain.ranks = 1;
    const int64_t second = s.beginRun(plain);
    const std::optional<RunRecord> mine = s.run(second);
    QCOMPARE(mine->pid, static_cast<int64_t>(getpid()));
    QVERIFY(!mine->host.empty());
    QVERIFY(QRegularExpression("^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ$")
                .match(QString::fromStdString(mine->startedAt))
                .hasMatch());
    QCOMPARE(mine->planId, int64_t{0});
    QVERIFY(mine->cpuShares.empty());
    const std::vector<RunRecord> all = s.runs();
    QCOMPARE(all.size(), size_t{2});
    QCOMPARE(all[0].id, second);
    QCOMPARE(all[1].id, id);
    QVERIFY(s.steps(second).empty());

    RunRecord orphan;
    orphan.planId = 9999;
    QVERIFY_THROWS_EXCEPTION(StoreError, s.beginRun(orphan));
  }

  void runStatusNames() {
    for (RunStatus st : {RunStatus::Running, RunStatus::Succeeded, RunStatus::Failed, RunStatus::Stopped,
                         RunStatus::Aborted})
      QVERIFY(hap::db::parseRunStatus(hap::db::runStatusName(st)) == st);
    QCOMPARE(hap::db::runStatusName(RunStatus::Aborted), std::string_view("aborted"));
    QVERIFY(!hap::db::parseRunStatus("done"));
  }

  void recoverAbandonedRuns() {
    const std::string path = file("recover.db");
    Store s(path);
    RunRecord dead;
    dead.ranks = 1;
    dead.pid = deadPid();
    RunRecord alive = dead;
    alive.pid = getpid();
    RunRecord elsewhere = dead;
    elsewhere.host = "another-host.invalid";
    const int64_t deadRun = s.beginRun(dead), aliveRun = s.beginRun(alive), otherRun = s.beginRun(elsewhere);
    QCOMPARE(s.recoverAbandonedRuns(), 1);
    const std::optional<RunRecord> r = s.run(deadRun);
    QVERIFY(r->status == RunStatus::Aborted);
    QVERIFY(!r->endedAt.empty());
    QCOMPARE(r->exitReason,
             "the recording process (pid " + std::to_string(dead.pid) + ") ended without finishing the run");
    QVERIFY(s.run(aliveRun)->status == RunStatus::Running);
    QVERIFY(s.run(otherRun)->status == RunStatus::Running);
    QCOMPARE(s.recoverAbandonedRuns(), 0);
    // Opening read-write recovers too.
    const int64_t again = s.beginRun(dead);
    Store reopened(path);
    QVERIFY(reopened.run(again)->status == RunStatus::Aborted);
  }

  void defaultPath() {
    const QByteArray db = qgetenv("HAP_DB"), xdg = qgetenv("XDG_DATA_HOME"), home = qgetenv("HOME");
    qputenv("HAP_DB", "/tmp/x/my.db");
    QCOMPARE(hap::db::defaultPath(), std::string("/tmp/x/my.db"));
    qputenv("HAP_DB", "");
    qputenv("XDG_DATA_HOME", "/data/xdg");
    QCOMPARE(hap::db::defaultPath(), std::string("/data/xdg/hap/profiles.db"));
    qunsetenv("HAP_DB");
    QCOMPARE(hap::db::defaultPath(), std::string("/data/xdg/hap/profiles.db"));
    qunsetenv("XDG_DATA_HOME");
    qputenv("HOME", "/home/someone");
    QCOMPARE(hap::db::defaultPath(), std::string("/home/someone/.local/share/hap/profiles.db"));
    qputenv("XDG_DATA_HOME", "relative/ignored");  // XDG: a relative path is invalid
    QCOMPARE(hap::db::defaultPath(), std::string("/home/someone/.local/share/hap/profiles.db"));
    auto restore = [](const char* name, const QByteArray& value) {
      if (value.isNull())
        qunsetenv(name);
      else
        qputenv(name, value);
    };
    restore("HAP_DB", db);
    restore("XDG_DATA_HOME", xdg);
    restore("HOME", home);
  }

  // For every schema version k below the current one, a store at k with its rows opens migrated
  // to the current version with its rows kept.
  void migratesEveryEarlierVersion() {
    const auto scripts = hap::db::schema::migrations();
    QCOMPARE(static_cast<int>(scripts.size()), Store::kSchemaVersion);
    for (int k = 0; k < Store::kSchemaVersion; ++k) {
      // Version 0 comes as a zero-byte file and as an empty SQLite database.
      for (const bool zeroBytes : {true, false}) {
        if (k > 0 && zeroBytes) continue;
        const std::string path = file(qPrintable(QString("v%1-%2.db").arg(k).arg(zeroBytes ? "zero" : "sql")));
        if (zeroBytes) {
          writeFile(path, "");
        } else {
          SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
          db.exec("CREATE TABLE scratch (x); DROP TABLE scratch;");
          for (int v = 0; v < k; ++v) db.exec(scripts[static_cast<size_t>(v)]);
          QCOMPARE(db.execAndGet("PRAGMA user_version").getInt(), k);
          fillVersion(db, k);
        }
        {
          Store s(path);
          checkVersion(s, k);
          s.saveProfile(sampleProfile("after migration"));  // usable at the current version
          QCOMPARE(s.loadProfile("lab-cpu")->version, 1);
        }
        SQLite::Database db(path);
        QCOMPARE(db.execAndGet("PRAGMA user_version").getInt(), Store::kSchemaVersion);
        QCOMPARE(db.execAndGet("PRAGMA application_id").getInt(), hap::db::schema::kApplicationId);
      }
    }
  }

  void errors_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("text file") << "text" << "not a SQLite database";
    QTest::newRow("random bytes") << "random" << "not a SQLite database";
    QTest::newRow("truncated store") << "truncated" << "corrupt";
    QTest::newRow("another application") << "foreign" << "another application";
    QTest::newRow("another application's id") << "foreign-id" << "another application";
    QTest::newRow("newer schema") << "newer" << "written by a newer hap (schema 2, this one reads up to 1); upgrade hap or use another --db";
    // user_version is a signed field of the header: a negative one is damage (found by fuzz_store_open).
    QTest::newRow("negative schema version") << "negative" << "corrupt (schema version -5)";
    QTest::newRow("a folder") << "folder" << "is a folder";
    QTest::newRow("missing, read-only") << "missing" << "no profile store there";
  }

  void errors() {
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    const std::string path = file(qPrintable("bad-" + kind + ".db"));
    Store::Mode mode = Store::Mode::ReadWrite;
    if (kind == "text") {
      writeFile(path, "name: lab\nmachines:\n  - {name: a, count: 2}\n");
    } else if (kind == "random") {
      std::mt19937 rng(19);
      std::string bytes(8192, '\0');
      for (char& c : bytes) c = static_cast<char>(rng());
      writeFile(path, bytes);
    } else if (kind == "truncated") {
      {
        Store s(path);
        const int64_t run = s.beginRun(RunRecord{});
        for (int64_t step = 1; step <= 400; ++step) s.recordSteps(run, {stepRecord(0, step), stepRecord(1, step)});
      }  // the last connection checkpoints the WAL into the file
      QVERIFY(!fs::exists(path + "-wal") || fs::file_size(path + "-wal") == 0);
      const auto size = fs::file_size(path);
      QVERIFY(size > 16 * 4096);
      fs::resize_file(path, size / 2);
    } else if (kind == "foreign" || kind == "foreign-id") {
      SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
      db.exec("CREATE TABLE foo (x INTEGER); INSERT INTO foo VALUES (1);");
      if (kind == "foreign-id") db.exec("PRAGMA application_id = 1234");
    } else if (kind == "newer") {
      { Store s(path); }
      SQLite::Database db(path, SQLite::OPEN_READWRITE);
      db.exec(("PRAGMA user_version = " + std::to_string(Store::kSchemaVersion + 1)).c_str());
    } else if (kind == "negative") {
      { Store s(path); }
      SQLite::Database db(path, SQLite::OPEN_READWRITE);
      db.exec("PRAGMA user_version = -5");
    } else if (kind == "folder") {
      fs::create_directories(path);
    } else if (kind == "missing") {
      mode = Store::Mode::ReadOnly;
    }
    const auto before = fs::exists(path) && !fs::is_directory(path) ? fs::file_size(path) : 0;
    const QString message = expectStoreError(path, mode);
    qInfo("%s", qPrintable(message));
    QVERIFY2(message.contains(expected), qPrintable(message));
    // Failing the same way every time: the failed open changed nothing.
    QCOMPARE(expectStoreError(path, mode), message);
    if (kind != "missing" && kind != "folder") QCOMPARE(fs::file_size(path), before);
    if (kind == "missing") QVERIFY(!fs::exists(path));
  }

  // A store file its user may not write: the error says so, and read-only use still works. The
  // mode binds every user but root, who writes whatever it says; so as root (how CI runs) the
  // read-write open is tried by a child process that has given up root for nobody (65534), to
  // whom the mode applies. The check runs everywhere: a child that cannot drop root fails it.
  void readOnlyFile() {
    const bool root = geteuid() == 0;
    const std::string folder = file("readonly");
    fs::create_directories(folder);
    const std::string path = folder + "/readonly.db";
    { Store s(path); s.saveCluster("lab", "name: lab\n"); }
    fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    if (root) {
      // nobody may reach the folder and write in it (SQLite's journal), but not the file.
      fs::permissions(dir_.path().toStdString(), fs::perms::others_exec, fs::perm_options::add);
      fs::permissions(folder, fs::perms::all);
    }
    const QString message = root ? storeErrorAsNobody(path) : expectStoreError(path);
    qInfo("%s%s", root ? "as nobody: " : "", qPrintable(message));
    QVERIFY2(message.contains("the file is read-only"), qPrintable(message));
    // Read-only use still works.
    Store reader(path, Store::Mode::ReadOnly);
    QVERIFY(reader.cluster(1));
    QVERIFY_THROWS_EXCEPTION(StoreError, reader.saveCluster("x", "y"));
    fs::permissions(path, fs::perms::owner_write, fs::perm_options::add);
  }

 private:
  // expectStoreError(path) in a child process running as nobody (uid and gid 65534).
  static QString storeErrorAsNobody(const std::string& path) {
    int out[2];
    if (::pipe(out) != 0) return "NO PIPE";
    const pid_t child = ::fork();
    if (child < 0) return "NO FORK";
    if (child == 0) {
      ::close(out[0]);
      std::string message;
      if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0 || ::geteuid() == 0)
        message = std::string("CANNOT DROP ROOT: ") + std::strerror(errno);
      else
        message = expectStoreError(path).toStdString();
      const char* p = message.data();
      for (size_t left = message.size(); left > 0;) {
        const ssize_t n = ::write(out[1], p, left);
        if (n <= 0) break;
        p += n;
        left -= static_cast<size_t>(n);
      }
      ::_exit(0);
    }
    ::close(out[1]);
    QByteArray text;
    char buffer[4096];
    for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      text.append(buffer, static_cast<qsizetype>(n));
    }
    ::close(out[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) text += " (THE CHILD FAILED)";
    return QString::fromUtf8(text);
  }
};

QTEST_GUILESS_MAIN(TstStore)
#include "tst_store.moc"
