// Runs `hap profile` (the CLI's benchmarks of this machine, saved into a profile store) as a child
// process for the Profiles view (issue 20, item 4): each line it prints is reported as progress, the
// end as finished(ok, message). One run at a time. The child never outlives the job: cancel()
// terminates it (SIGTERM, then SIGKILL after a grace period) and the destructor kills it; its
// benchmark ranks die with it (the launcher gives them PR_SET_PDEATHSIG).
#pragma once

#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>

class QTimer;

namespace hap::studio {

struct ProfileOptions {
  QString name;                      // "" = the CLI's default (this host's name)
  QString deviceType = QStringLiteral("cpu");
  int ranks = 2;                     // 1: no collective benchmarks
  bool quick = false;
  QString storePath;                 // "" = the CLI's default store
};

class ProfileJob : public QObject {
  Q_OBJECT
 public:
  explicit ProfileJob(QObject* parent = nullptr);
  ~ProfileJob() override;  // kills a running child and waits for it

  // The `hap` executable: $HAP_CLI when set, else the one of this build (<app dir>/../cli/hap),
  // else one beside this executable, else one on PATH. "" when none is found, with `error` saying so.
  static QString locateHap(QString* error = nullptr);
  // The arguments given to `hap` for `options` (from "profile" on).
  static QStringList arguments(const ProfileOptions& options);

  // Starts a run; false (and finished(false, why) emitted) when `hap` is not found, it cannot be
  // started, or a run is going.
  bool start(const ProfileOptions& options);
  // Stops the running child: SIGTERM, then SIGKILL after `graceMs`. It ends with finished(false,
  // "Cancelled"). Nothing when idle.
  void cancel(int graceMs = 2000);
  bool busy() const { return m_process != nullptr; }
  // The running child (nullptr when idle), for tests that check it is gone.
  const QProcess* process() const { return m_process; }
  qint64 processId() const { return m_pid; }  // the last child's, 0 before any

  // After a successful run: the profile saved, as the CLI said ("profile NAME vN saved to PATH").
  QString savedName() const { return m_savedName; }
  int savedVersion() const { return m_savedVersion; }

 Q_SIGNALS:
  void started(const QString& commandLine);
  void progress(const QString& line);
  // ok: exit code 0. Otherwise `message` is the child's last error line (else its last line, else
  // how it ended), or "Cancelled".
  void finished(bool ok, const QString& message);

 private:
  void readLines(bool flush);
  void onFinished(int exitCode, QProcess::ExitStatus status);
  void fail(const QString& message);

  QProcess* m_process = nullptr;
  QTimer* m_killTimer = nullptr;
  QByteArray m_pending;
  QString m_lastLine, m_lastError;
  QString m_savedName;
  int m_savedVersion = 0;
  qint64 m_pid = 0;
  bool m_cancelled = false;
};

}  // namespace hap::studio
