// hap-studio's command line, run as a process: MODEL --input ... opens a model without
// hap/inputs.json as `hap plan --input` would; bad arguments exit 2 with the CLI's message.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

namespace {
QString fixture(const char* name) { return qEnvironmentVariable("HAP_FIXTURE_DIR") + "/" + name; }
QString zoo(const char* name) { return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + name; }
QString source(const char* name) { return qEnvironmentVariable("HAP_SOURCE_DIR") + "/" + name; }

struct Run {
  int exitCode = -1;
  QString out, err;
};

Run studio(const QStringList& args) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  env.insert("XDG_CONFIG_HOME", QDir::temp().filePath("hap-studio-cli-test-config"));  // not the user's
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(HAP_STUDIO_PATH), args);
  if (!p.waitForFinished(60000)) p.kill();
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}
}  // namespace

class TstStudioCli : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;

 private Q_SLOTS:
  void modelAndClusterOpenToAPicture() {
    const QString png = m_dir.filePath("bert.png");
    const Run r = studio({zoo("bert-tiny.pt"), "--cluster", source("resources/clusters/a100-p100-4.yaml"),
                          "--screenshot", png});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QImage image(png);
    QVERIFY(!image.isNull() && image.width() > 400);
  }

  void inputsOnTheCommandLine() {
    const QString png = m_dir.filePath("no_spec.png");
    const Run r = studio({fixture("no_spec.pt"), "--input", "x=4x8:float32", "--input", "y=4:int64:0..4",
                          "--screenshot", png});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY(QFile::exists(png));
  }

  // A file that does not open: the picture shows why, and the exit status says so.
  void aFailedFileExitsOne() {
    const QString png = m_dir.filePath("bad.png");
    const Run r = studio({fixture("control_flow.pt"), "--screenshot", png});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("control_flow.pt") && r.err.contains(".py:"), qPrintable(r.err));
    QVERIFY(QFile::exists(png));
  }

  void badInputIsTheCliMessage() {
    const Run r = studio({fixture("no_spec.pt"), "--input", "x=4xz"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("--input 'x=4xz'") && r.err.contains("dimension"), qPrintable(r.err));
  }

  void help() {
    const Run r = studio({"--help"});
    QCOMPARE(r.exitCode, 0);
    for (const char* option : {"--cluster", "--plan", "--input", "--screenshot"})
      QVERIFY2(r.out.contains(option), option);
  }
};

QTEST_MAIN(TstStudioCli)
#include "tst_studio_cli.moc"
