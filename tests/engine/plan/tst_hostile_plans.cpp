// Hostile plan files (issue 32): every one is an input error naming the plan file and the field (a
// JSON pointer) or the verifier's problem, from the engine (plan::openPlan, the one way every
// program opens a plan) and from `hap simulate` and `hap-worker` run as a user runs them (exit 1:
// not 0, not 3 for an internal error, not an abort). The hostile plans are made here from a valid
// plan the planner writes for the tiny MLP of the zoo.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include <fmt/format.h>

#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/plan/open_plan.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"

using namespace hap;
using nlohmann::json;

namespace {

cost::Cluster cluster() {
  return cost::loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() +
                           "/resources/clusters/a100-p100-4.yaml");
}

// The index of the first step of `j`'s program that `pred` accepts.
size_t firstStep(const json& j, const std::function<bool(const json&)>& pred) {
  const json& program = j["program"];
  for (size_t i = 0; i < program.size(); ++i)
    if (pred(program[i])) return i;
  qFatal("the plan has no such step");
}

bool isConvert(const json& s) {
  return s["kind"] == "convert";
}
bool hasLengths(const json& s) {
  return s["kind"] == "convert" && s["to"].contains("lengths");
}

// A hostile plan: an edit of the valid plan's JSON (or of its text, `text` true) and what the
// error must say besides the plan file's name.
struct Case {
  const char* name;
  std::function<void(json&)> edit;
  std::function<std::string(const json&)> expected;  // the fragment: the field and its value
  std::function<void(std::string&)> editText = {};
};

std::function<std::string(const json&)> says(std::string fragment) {
  return [fragment](const json&) { return fragment; };
}

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({"format 1", [](json& j) { j["format"] = 1; },
               says("field '/format' is 1; expected \"hap-plan\"")});
  c.push_back({"version \"2\"", [](json& j) { j["version"] = "2"; },
               says("field '/version' is \"2\"; expected the integer 2")});
  c.push_back({"version 2.5", [](json& j) { j["version"] = 2.5; },
               says("field '/version' is 2.5; expected the integer 2")});
  c.push_back({"search 1", [](json& j) { j["search"] = 1; },
               says("field '/search' is 1; expected an object")});
  c.push_back({"missing sha256", [](json& j) { j["model"].erase("sha256"); },
               says("field '/model/sha256' is missing")});
  c.push_back({"node 10^12", [](json& j) { j["program"][3]["node"] = int64_t{1000000000000}; },
               says("field '/program/3/node' is 1000000000000; expected a node of the model's")});
  c.push_back({"node 1e12 as a float", [](json& j) { j["program"][3]["node"] = 1e12; },
               says("field '/program/3/node' is 1000000000000.0; expected a node")});
  c.push_back({"instruction bogus",
               [](json& j) { j["program"][firstStep(j, isConvert)]["instruction"] = "bogus"; },
               [](const json& j) {
                 return fmt::format(
                     "field '/program/{}/instruction' is \"bogus\"; expected an instruction",
                     firstStep(j, isConvert));
               }});
  c.push_back({"negative length",
               [](json& j) { j["program"][firstStep(j, hasLengths)]["to"]["lengths"][0] = -3; },
               [](const json& j) {
                 return fmt::format(
                     "field '/program/{}/to/lengths/0' is -3; expected a shard length",
                     firstStep(j, hasLengths));
               }});
  c.push_back({"length 1e308",
               [](json& j) { j["program"][firstStep(j, hasLengths)]["to"]["lengths"][0] = 1e308; },
               [](const json& j) {
                 return fmt::format(
                     "field '/program/{}/to/lengths/0' is 1e+308; expected a shard length",
                     firstStep(j, hasLengths));
               }});
  c.push_back({"negative ratio", [](json& j) { j["ratios"]["segments"][0]["ratios"][0] = -0.25; },
               says("field '/ratios/segments/0/ratios/0' is -0.25; expected a ratio")});
  c.push_back({"shape [-4, 16]",
               [](json& j) {
                 j["model"]["inputs"][0]["shape"] = {-4, 16};
               },
               says("field '/model/inputs/0/shape/0' is -4; expected a dimension")});
  c.push_back({"shape [2^32, 2^32]",
               [](json& j) {
                 j["model"]["inputs"][0]["shape"] = {int64_t{4294967296}, int64_t{4294967296}};
               },
               says("field '/model/inputs/0/shape' has more than 1099511627776 elements")});
  c.push_back(
      {"stage time 1e308",
       [](json& j) { j["prediction"]["stages"][0]["communication_seconds"] = 1e308; },
       says("field '/prediction/stages/0/communication_seconds' is 1e+308; expected seconds")});
  c.push_back({"step time 1e308",
               [](json& j) { j["program"][0]["times"]["forward_communication"] = 1e308; },
               says("field '/program/0/times/forward_communication' is 1e+308; expected seconds")});
  c.push_back({"non-UTF-8 string in the file",
               [](json& j) { j["cluster"]["name"] = "CLUSTER-NAME-MARK"; },
               says("not valid JSON in field '/cluster/name'"),
               [](std::string& text) {
                 text.replace(text.find("CLUSTER-NAME-MARK"), 17, "bad\xff\xfe name");
               }});
  c.push_back({"empty program",
               [](json& j) {  // consistently empty: no stage, no gradient bucket
                 j["program"] = json::array();
                 j["prediction"]["stages"] = json::array();
                 j["prediction"].erase("gradient_buckets");
               },
               says("the program is empty")});
  c.push_back({"program without the loss",
               [](json& j) {
                 // The loss is the last node: drop its step and what follows.
                 json& program = j["program"];
                 const int64_t last = j["model"]["nodes"].get<int64_t>() - 1;
                 while (!program.empty() && program.back()["node"] == last)
                   program.erase(program.size() - 1);
                 for (json& s : j["prediction"]["stages"])
                   s["end_step"] = std::min(s["end_step"].get<size_t>(), program.size());
               },
               says("the plan does not verify")});
  return c;
}

}  // namespace

class TstHostilePlans : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const std::string zoo = qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/mlp-tiny.pt";
    graph_ = import::importModel(zoo);
    plan_ = plan::makePlan(graph_, cluster(), {});
    valid_ = json::parse(plan::toJson(plan_, graph_).dump());
    const std::string path = write("valid.json", valid_.dump(1));
    // The valid plan opens, and `hap simulate` replays it.
    QCOMPARE(plan::openPlan(path).plan.steps.size(), plan_.steps.size());
    const Run r = run(HAP_CLI_PATH, {"simulate", QString::fromStdString(path)});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
  }

  void hostilePlan_data() {
    QTest::addColumn<int>("index");
    const std::vector<Case> all = cases();
    for (size_t i = 0; i < all.size(); ++i) QTest::newRow(all[i].name) << static_cast<int>(i);
  }

  // plan::openPlan (read, locate, hash, import, verify) refuses it with a PlanError naming the
  // file and the field; nothing else is thrown.
  void hostilePlan() {
    QFETCH(int, index);
    const Case c = cases()[static_cast<size_t>(index)];
    json j = valid_;
    c.edit(j);
    std::string text = j.dump(1);
    if (c.editText) c.editText(text);
    const std::string path = write(fmt::format("hostile-{}.json", index), text);
    const std::string expected = c.expected(valid_);
    QString message;
    try {
      plan::openPlan(path);
      QFAIL("the hostile plan opened");
    } catch (const plan::PlanError& e) {
      message = QString::fromUtf8(e.what());
    } catch (const std::exception& e) {
      QFAIL(qPrintable(QString("not a PlanError: ") + e.what()));
    }
    QVERIFY2(message.startsWith(QString::fromStdString(path) + ": "), qPrintable(message));
    QVERIFY2(message.contains(QString::fromStdString(expected)),
             qPrintable(message + "\nexpected: " + expected.c_str()));
  }

  void simulateRefuses_data() { hostilePlan_data(); }

  // `hap simulate` on it: exit 1 with the message on stderr.
  void simulateRefuses() {
    QFETCH(int, index);
    const QString path =
        QString::fromStdString(dir_.filePath(QString("hostile-%1.json").arg(index)).toStdString());
    QVERIFY2(QFile::exists(path), "hostilePlan writes it first");
    const Run r = run(HAP_CLI_PATH, {"simulate", path});
    QVERIFY2(r.exitCode == 1 && r.normalExit,
             qPrintable(QString("exit %1: %2").arg(r.exitCode).arg(r.err)));
    QVERIFY2(r.err.contains(path + ": "), qPrintable(r.err));
    QVERIFY2(!r.err.contains("internal error") && !r.err.contains("terminate called"),
             qPrintable(r.err));
    QVERIFY2(r.out.isEmpty(), qPrintable(r.out));  // nothing was replayed
  }

  void workerRefuses_data() { hostilePlan_data(); }

  // hap-worker on it (rank 0 of the plan's world, no peer needed: it opens the plan first): exit 1
  // naming the field.
  void workerRefuses() {
    QFETCH(int, index);
    const QString path = dir_.filePath(QString("hostile-%1.json").arg(index));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("RANK", "0");
    env.insert("LOCAL_RANK", "0");
    env.insert("WORLD_SIZE", QString::number(plan_.devices.size()));
    env.insert("MASTER_ADDR", "127.0.0.1");
    env.insert("MASTER_PORT", "1");
    env.insert("HAP_TIMEOUT_S", "5");
    const Run r = run(HAP_WORKER_PATH, {path, "--steps", "1"}, env);
    QVERIFY2(r.exitCode == 1 && r.normalExit,
             qPrintable(QString("exit %1: %2").arg(r.exitCode).arg(r.err)));
    QVERIFY2(r.err.contains(path + ": "), qPrintable(r.err));
    const std::string expected = cases()[static_cast<size_t>(index)].expected(valid_);
    QVERIFY2(r.err.contains(QString::fromStdString(expected)),
             qPrintable(r.err + "\nexpected: " + expected.c_str()));
  }

  // The plan path is a folder.
  void folder() {
    QString message;
    try {
      plan::openPlan(dir_.path().toStdString());
    } catch (const plan::PlanError& e) {
      message = QString::fromUtf8(e.what());
    } catch (const std::exception& e) {
      QFAIL(qPrintable(QString("not a PlanError: ") + e.what()));
    }
    QCOMPARE(message, dir_.path() + ": is a folder, not a plan file");
    const Run r = run(HAP_CLI_PATH, {"simulate", dir_.path()});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(message), qPrintable(r.err));
  }

  // Strings that are not UTF-8 inside a document read in memory (a stored run's plan), and a
  // cluster inventory's: named by their fields.
  void nonUtf8InMemory() {
    auto error = [](const json& j) {
      try {
        plan::planFromJson(j, "p.json");
      } catch (const plan::PlanError& e) {
        return QString::fromUtf8(e.what());
      }
      return QString();
    };
    json j = valid_;
    j["cluster"]["devices"][0]["machine"] = std::string("a\xff");
    QCOMPARE(error(j), QString("p.json: field '/cluster/devices/0/machine' is not valid UTF-8; "
                               "expected a UTF-8 string"));
    j = valid_;
    j["cluster"]["inventory"]["machines"][1]["name"] = std::string("p\xc0\xaf");  // an overlong '/'
    QCOMPARE(
        error(j),
        QString("p.json: field '/cluster/inventory/machines/1/name' is not valid UTF-8; expected a "
                "UTF-8 string"));
    j = valid_;
    j["program"][0]["node"] = "0";
    QCOMPARE(
        error(j),
        QString("p.json: field '/program/0/node' is \"0\"; expected a node of the model's %1 (an "
                "integer in [0, %2])")
            .arg(plan_.nodes)
            .arg(plan_.nodes - 1));
    QCOMPARE(error(json::array()),
             QString("p.json: not a HAP plan (expected an object with \"format\": \"hap-plan\"; "
                     "the file holds an array of 0)"));
  }

  // Writing a plan whose cluster name is not UTF-8 is an input error naming the field, not a
  // serialiser's exception.
  void writingNonUtf8() {
    plan::Plan p = plan_;
    p.cluster.name = "cluster \xff";
    const std::string path = dir_.filePath("written.json").toStdString();
    QString message;
    try {
      plan::writePlan(p, graph_, path);
    } catch (const plan::PlanError& e) {
      message = QString::fromUtf8(e.what());
    } catch (const std::exception& e) {
      QFAIL(qPrintable(QString("not a PlanError: ") + e.what()));
    }
    QVERIFY2(message.startsWith(QString::fromStdString(path) +
                                ": cannot write the plan: the plan's field "
                                "'/cluster/name' is not valid UTF-8"),
             qPrintable(message));
    QVERIFY(!QFile::exists(QString::fromStdString(path)));
  }

 private:
  struct Run {
    int exitCode = -1;
    bool normalExit = false;
    QString out, err;
  };

  static Run run(const QString& program, const QStringList& args,
                 const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(program, args);
    if (!p.waitForFinished(120'000))
      qFatal("%s %s did not finish", qPrintable(program), qPrintable(args.join(' ')));
    return {p.exitCode(), p.exitStatus() == QProcess::NormalExit,
            QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
  }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_.filePath(QString::fromStdString(name)).toStdString();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  QTemporaryDir dir_;
  ir::Graph graph_;
  plan::Plan plan_;
  json valid_;
};

QTEST_GUILESS_MAIN(TstHostilePlans)
#include "tst_hostile_plans.moc"
