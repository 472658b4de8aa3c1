// Inferred shapes checked against LibTorch (issue 33, item 3) on every model we plan in CI: the
// corpus's CI subset (resources/corpus/export.py --subset ci, imported with its --input
// arguments) and every zoo model at its tiny preset. Each model runs once on CPU with its declared
// inputs (import::checkShapes: the importer's inference against a real run, every node's every
// output, shape and dtype); any mismatch fails the row with the check's own messages. A model that
// does not import at all is skipped here, saying why (tst_corpus fails it).
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include "engine/base/error.h"
#include "engine/import/input_spec.h"
#include "engine/import/shape_check.h"

using namespace hap;

class TstCorpusShapes : public QObject {
  Q_OBJECT

 private:
  static void check(const QString& path, const QStringList& inputs) {
    import::ImportOptions options;
    for (const QString& in : inputs) options.inputOverrides.push_back(import::parseInputArg(in.toStdString()));
    import::ShapeCheckResult r;
    try {
      r = import::checkShapes(path.toStdString(), options);
    } catch (const hap::Error& e) {
      // A model that does not import has no inferred shapes to check: tst_corpus (and the corpus
      // table) fail it for that; this test is about the shapes of the models that do.
      QSKIP(qPrintable(path + " does not import, so has no inferred shapes: " + e.what()));
    }
    QString problems;
    for (const import::ShapeMismatch& m : r.mismatches) problems += "\n  " + QString::fromStdString(m.message());
    QVERIFY2(r.ok(), qPrintable(QString("%1: %2 mismatches:%3").arg(path).arg(r.mismatches.size()).arg(problems)));
    QVERIFY2(r.values > 0, qPrintable(path + ": no value compared"));
  }

 private Q_SLOTS:
  void corpus_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QStringList>("inputs");
    QFile file(QStringLiteral(HAP_CORPUS_DIR) + "/corpus.json");
    QVERIFY2(file.open(QIODevice::ReadOnly), "run the corpus fixture (export_corpus_ci) first");
    const QJsonArray models = QJsonDocument::fromJson(file.readAll()).object()["models"].toArray();
    QVERIFY2(!models.isEmpty(), qPrintable(file.fileName() + " lists no model: re-run export_corpus_ci"));
    for (const QJsonValue& v : models) {
      const QJsonObject m = v.toObject();
      QStringList inputs;
      for (const QJsonValue& in : m["inputs"].toArray()) inputs << in.toString();
      QTest::newRow(qPrintable(m["name"].toString()))
          << QStringLiteral(HAP_CORPUS_DIR) + "/" + m["file"].toString() << inputs;
    }
  }
  void corpus() {
    QFETCH(QString, path);
    QFETCH(QStringList, inputs);
    check(path, inputs);
  }

  void zoo_data() {
    QTest::addColumn<QString>("path");
    const QDir zoo(qEnvironmentVariable("HAP_ZOO_DIR"));
    const QStringList files = zoo.entryList({"*-tiny.pt"}, QDir::Files, QDir::Name);
    QVERIFY2(!files.isEmpty(), qPrintable(zoo.path() + " has no tiny model: run the zoo fixture (export_zoo_tiny)"));
    for (const QString& f : files) QTest::newRow(qPrintable(f)) << zoo.filePath(f);
  }
  void zoo() {
    QFETCH(QString, path);
    check(path, {});
  }
};

QTEST_GUILESS_MAIN(TstCorpusShapes)
#include "tst_corpus_shapes.moc"
