// hap-worker's options defined once (runtime/launch/worker_options.h): a struct becomes an argument
// list (only what differs from the defaults, in --help's order) and is read back equal, through
// the launcher's parse and through hap-worker's own command line; numbers survive exactly; the
// user's arguments are read onto a base with the options given named; bad arguments are errors
// that name them; the worker's own binding checks its files, the launcher's does not.
#include <QtTest>

#include <QFile>
#include <QTemporaryDir>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "engine/base/error.h"
#include "runtime/launch/worker_options.h"

using hap::runtime::OptimizerOptions;
using hap::runtime::WorkerOptions;
using Args = std::vector<std::string>;

namespace {

// Every option away from its default.
WorkerOptions everything(const std::string& plan, const std::string& checkpoint) {
  WorkerOptions o;
  o.planPath = plan;
  o.modelPath = "/zoo/bert tiny.pt";
  o.steps = 7;
  o.warmup = 0;
  o.seed = 18446744073709551615ull;
  o.data.kind = "tokens";
  o.data.path = "/data dir/it's \"x\".bin";
  o.data.tokenDtype = "int32";
  o.optimizer.kind = OptimizerOptions::Kind::AdamW;
  o.optimizer.lr = 3e-4;
  o.optimizer.momentum = 0;
  o.optimizer.weightDecay = 0.1 + 0.2;
  o.optimizer.clipNorm = 1.5;
  o.metricsPath = "m.jsonl";
  o.tracePath = "t.json";
  o.checkpointDir = "ck";
  o.checkpointEvery = 3;
  o.resumePath = checkpoint;
  o.exportPath = "out/trained.pt";
  o.threads = 2;
  o.cuda = true;
  o.slowdown = 2.5;
  o.bucketBytes = 1000;
  o.bucketBytesGiven = true;
  o.check = true;
  o.checkFloat32 = true;
  o.checkRtol = 1e-9;
  o.checkAtol = 0;
  o.dbPath = "/tmp/x.db";
  o.runId = 12;
  return o;
}

// `args` read by hap-worker's own command line (bindWorkerOptions, WorkerBinding::Worker), after
// the plan; throws CLI::ParseError.
WorkerOptions parseAsWorker(const std::string& plan, const Args& args) {
  CLI::App app{"test", "hap-worker"};
  WorkerOptions o;
  hap::runtime::bindWorkerOptions(app, o);
  Args reversed(args.rbegin(), args.rend());
  reversed.push_back(plan);
  app.parse(reversed);
  return o;
}

QString errorOf(const Args& args) {
  try {
    hap::runtime::parseWorkerArguments(args);
  } catch (const hap::Error& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TstLaunchWorkerOptions : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  std::string plan_, checkpoint_;

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    plan_ = tmp_.filePath("plan.json").toStdString();
    checkpoint_ = tmp_.filePath("step-4.pt").toStdString();
    for (const std::string& f : {plan_, checkpoint_}) {
      QFile file(QString::fromStdString(f));
      QVERIFY(file.open(QIODevice::WriteOnly));
    }
  }

  void defaultsPassNothing() {
    QCOMPARE(hap::runtime::workerArguments(WorkerOptions{}), Args{});
    WorkerOptions o;
    o.planPath = plan_;  // the plan is the caller's to pass
    QCOMPARE(hap::runtime::workerArguments(o), Args{});
    QVERIFY(hap::runtime::parseWorkerArguments({}) == WorkerOptions{});
  }

  void onlyWhatDiffersInHelpOrder() {
    WorkerOptions o;
    o.optimizer.lr = 0.5;
    o.steps = 3;
    o.exportPath = "a b'c";
    QCOMPARE(hap::runtime::workerArguments(o), (Args{"--steps", "3", "--lr", "0.5", "--export", "a b'c"}));
    o = {};
    o.bucketBytes = int64_t{8} << 20;
    o.checkFloat32 = true;
    QCOMPARE(hap::runtime::workerArguments(o), (Args{"--bucket-mb", "8", "--check-dtype", "float32"}));
  }

  // struct -> argv -> struct, through the launcher's parse and through hap-worker's command line.
  void roundTrip() {
    const WorkerOptions o = everything(plan_, checkpoint_);
    const Args args = hap::runtime::workerArguments(o);
    WorkerOptions back = hap::runtime::parseWorkerArguments(args);
    back.planPath = o.planPath;
    QVERIFY2(back == o, qPrintable(QString::fromStdString(fmt::format("{}", fmt::join(args, " ")))));
    QCOMPARE(hap::runtime::workerArguments(back), args);
    QVERIFY(parseAsWorker(plan_, args) == o);
    // Each option alone.
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].rfind("--", 0) != 0 || args[i] == "--db" || args[i] == "--run-id") continue;
      Args one{args[i]};
      if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) one.push_back(args[i + 1]);
      QCOMPARE(hap::runtime::workerArguments(hap::runtime::parseWorkerArguments(one)), one);
    }
  }

  // Every double the worker is given reads back bit for bit (CLI11 reads through long double).
  void numbersSurviveExactly() {
    std::mt19937_64 random(29);
    std::vector<double> values = {0.1 + 0.2,
                                  1e-300,
                                  std::numeric_limits<double>::denorm_min(),
                                  std::numeric_limits<double>::max(),
                                  std::nextafter(1.0, 2.0),
                                  123456789.123456789,
                                  2.5e-5};
    std::uniform_real_distribution<double> unit(0, 1);
    for (int i = 0; i < 4000; ++i)
      values.push_back(unit(random) * std::pow(10.0, static_cast<int>(random() % 40) - 20));
    for (int i = 0; i < 1000; ++i) {  // arbitrary bit patterns of positive finite doubles
      const uint64_t bits = random() & ~(uint64_t{1} << 63);
      double v = 0;
      std::memcpy(&v, &bits, sizeof v);
      if (std::isfinite(v)) values.push_back(v);
    }
    for (const double v : values) {
      WorkerOptions o;
      o.optimizer.lr = v;
      o.checkAtol = v;
      const WorkerOptions back = hap::runtime::parseWorkerArguments(hap::runtime::workerArguments(o));
      const std::string text = fmt::format("{:.17g} written as {}", v, hap::runtime::workerNumber(v));
      QVERIFY2(back.optimizer.lr == v && back.checkAtol == v, text.c_str());
    }
    QCOMPARE(hap::runtime::workerNumber(0.01), std::string("0.01"));
    QCOMPARE(hap::runtime::workerNumber(4), std::string("4"));
  }

  // The user's arguments (hap launch ... -- ARGS) onto a base; the options given are named.
  void argumentsOntoABase() {
    WorkerOptions base;
    base.steps = 9;
    base.optimizer.kind = OptimizerOptions::Kind::Adam;
    base.bucketBytes = 1 << 20;
    Args given;
    const WorkerOptions o =
        hap::runtime::parseWorkerArguments({"--lr=0.25", "--warmup", "0", "--resume", "/not/here.pt"}, base, &given);
    QCOMPARE(o.steps, int64_t{9});
    QCOMPARE(o.optimizer.kind, OptimizerOptions::Kind::Adam);
    QCOMPARE(o.bucketBytes, int64_t{1} << 20);
    QCOMPARE(o.optimizer.lr, 0.25);
    QCOMPARE(o.warmup, int64_t{0});
    QCOMPARE(o.resumePath, std::string("/not/here.pt"));  // the workers check it where they run
    std::sort(given.begin(), given.end());
    QCOMPARE(given, (Args{"--lr", "--resume", "--warmup"}));
  }

  void badArgumentsAreNamed() {
    QVERIFY(errorOf({"--nonsense"}).contains("--nonsense"));
    QVERIFY(errorOf({"stray"}).contains("stray"));
    QVERIFY(errorOf({"--optimizer", "lamb"}).contains("lamb"));
    QVERIFY(errorOf({"--optimizer", "lamb"}).contains("--optimizer"));
    QVERIFY(errorOf({"--lr", "fast"}).contains("--lr"));
    QVERIFY(errorOf({"--steps", "-1"}).contains("--steps"));
    QVERIFY(errorOf({"--db", "x.db"}).contains("--run-id"));
    QVERIFY(errorOf({"--help"}).contains("--help"));
    for (const char* factor : {"0.5", "0", "-2", "slow", "inf", "nan"}) {
      const QString e = errorOf({"--slowdown", factor});
      QVERIFY2(e.contains("--slowdown") && e.contains(">= 1"), qPrintable(e));
    }
    QCOMPARE(hap::runtime::parseWorkerArguments({"--slowdown", "1"}).slowdown, 1.0);
    QCOMPARE(hap::runtime::parseWorkerArguments({"--slowdown", "3"}).slowdown, 3.0);
    for (const QString& e : {errorOf({"--nonsense"}), errorOf({"--lr", "fast"})})
      QVERIFY2(e.startsWith("hap-worker arguments: "), qPrintable(e));
  }

  // hap-worker's own command line: the plan is required and must exist, so must --resume.
  void workerBindingChecksFiles() {
    QVERIFY_THROWS_EXCEPTION(CLI::ParseError, parseAsWorker(tmp_.filePath("none.json").toStdString(), {}));
    QVERIFY_THROWS_EXCEPTION(CLI::ParseError, parseAsWorker(plan_, {"--resume", "/not/here.pt"}));
    QCOMPARE(parseAsWorker(plan_, {"--resume", checkpoint_}).resumePath, checkpoint_);
    QCOMPARE(parseAsWorker(plan_, {}).planPath, plan_);
  }
};

QTEST_GUILESS_MAIN(TstLaunchWorkerOptions)
#include "tst_launch_worker_options.moc"
