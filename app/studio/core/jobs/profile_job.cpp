#include "app/studio/core/jobs/profile_job.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QTimer>

#include <algorithm>

#include "runtime/launch/local_launch.h"

namespace hap::studio {
namespace {

bool isExecutable(const QString& path) {
  const QFileInfo info(path);
  return info.isFile() && info.isExecutable();
}

}  // namespace

ProfileJob::ProfileJob(QObject* parent) : QObject(parent) {
  m_killTimer = new QTimer(this);
  m_killTimer->setSingleShot(true);
  connect(m_killTimer, &QTimer::timeout, this, [this] {
    if (m_process) m_process->kill();
  });
}

ProfileJob::~ProfileJob() {
  if (m_process) {
    m_process->disconnect(this);
    m_process->kill();
    m_process->waitForFinished(5000);
    delete m_process;
    m_process = nullptr;
  }
}

QString ProfileJob::locateHap(QString* error) {
  const QString env = qEnvironmentVariable("HAP_CLI");
  if (!env.isEmpty()) {
    if (isExecutable(env)) return QFileInfo(env).absoluteFilePath();
    if (error) *error = QObject::tr("$HAP_CLI names %1, which is not an executable file: set it to the hap CLI").arg(env);
    return QString();
  }
  const QString dir = QCoreApplication::applicationDirPath();
  const std::string found = runtime::findProgram("hap", "cli", QCoreApplication::applicationFilePath().toStdString());
  if (!found.empty()) return QString::fromStdString(found);
  if (error)
    *error = QObject::tr("The hap command line tool was not found (not in %1/../cli, %1, nor on PATH): install it "
                         "beside hap-studio or on PATH, or set $HAP_CLI")
                 .arg(QDir::cleanPath(dir));
  return QString();
}

QStringList ProfileJob::arguments(const ProfileOptions& o) {
  QStringList args{QStringLiteral("profile")};
  if (!o.name.trimmed().isEmpty()) args << QStringLiteral("--name") << o.name.trimmed();
  if (!o.deviceType.trimmed().isEmpty()) args << QStringLiteral("--device-type") << o.deviceType.trimmed();
  args << QStringLiteral("--ranks") << QString::number(o.ranks);
  if (o.quick) args << QStringLiteral("--quick");
  if (!o.storePath.isEmpty()) args << QStringLiteral("--db") << o.storePath;
  return args;
}

void ProfileJob::fail(const QString& message) { Q_EMIT finished(false, message); }

bool ProfileJob::start(const ProfileOptions& options) {
  if (m_process) {
    fail(tr("A profile run is going: wait for it or cancel it first"));
    return false;
  }
  QString error;
  const QString hap = locateHap(&error);
  if (hap.isEmpty()) {
    fail(error);
    return false;
  }
  m_pending.clear();
  m_lastLine.clear();
  m_lastError.clear();
  m_savedName.clear();
  m_savedVersion = 0;
  m_cancelled = false;
  m_pid = 0;

  m_process = new QProcess(this);
  m_process->setProcessChannelMode(QProcess::MergedChannels);
  connect(m_process, &QProcess::readyReadStandardOutput, this, [this] { readLines(false); });
  connect(m_process, &QProcess::finished, this, &ProfileJob::onFinished);
  connect(m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart || !m_process) return;  // the others end in finished()
    const QString why = tr("Could not start %1: %2").arg(m_process->program(), m_process->errorString());
    m_process->deleteLater();
    m_process = nullptr;
    fail(why);
  });
  const QStringList args = arguments(options);
  m_process->start(hap, args);
  if (!m_process) return false;  // failed to start (errorOccurred ran)
  m_pid = m_process->processId();
  Q_EMIT started(hap + QLatin1Char(' ') + args.join(QLatin1Char(' ')));
  return true;
}

void ProfileJob::cancel(int graceMs) {
  if (!m_process) return;
  m_cancelled = true;
  m_process->terminate();
  m_killTimer->start(std::max(0, graceMs));
}

void ProfileJob::readLines(bool flush) {
  if (!m_process) return;
  m_pending += m_process->readAllStandardOutput();
  if (flush && !m_pending.isEmpty() && !m_pending.endsWith('\n')) m_pending += '\n';
  static const QRegularExpression saved(QStringLiteral("^profile (.+) v(\\d+) saved to "));
  static const QRegularExpression errorLine(QStringLiteral("error|failed|cannot|could not|not found|terminate"),
                                            QRegularExpression::CaseInsensitiveOption);
  int newline;
  while ((newline = int(m_pending.indexOf('\n'))) >= 0) {
    QString line = QString::fromUtf8(m_pending.left(newline)).trimmed();
    m_pending.remove(0, newline + 1);
    if (line.isEmpty()) continue;
    m_lastLine = line;
    if (errorLine.match(line).hasMatch()) m_lastError = line;
    const QRegularExpressionMatch m = saved.match(line);
    if (m.hasMatch()) {
      m_savedName = m.captured(1);
      m_savedVersion = m.captured(2).toInt();
    }
    Q_EMIT progress(line);
  }
}

void ProfileJob::onFinished(int exitCode, QProcess::ExitStatus status) {
  readLines(true);
  m_killTimer->stop();
  QProcess* p = m_process;
  m_process = nullptr;
  p->deleteLater();
  if (m_cancelled) {
    fail(tr("Cancelled"));
    return;
  }
  if (status == QProcess::NormalExit && exitCode == 0) {
    Q_EMIT finished(true, m_savedName.isEmpty() ? tr("Profile saved")
                                                : tr("Profile %1 v%2 saved").arg(m_savedName).arg(m_savedVersion));
    return;
  }
  QString why = !m_lastError.isEmpty() ? m_lastError : m_lastLine;
  const QString how = status == QProcess::CrashExit ? tr("hap profile crashed")
                                                    : tr("hap profile exited with code %1").arg(exitCode);
  fail(why.isEmpty() ? how : why);
}

}  // namespace hap::studio
