// The Run dock's logs (issue 20, item 2): the workers' output in tabs, "All" (every line, rank
// lines prefixed "[rank N]") and one per rank with that rank's own lines, each keeping its last
// 5000 lines; a last page after them (the run's checkpoints) that stays across runs. A failed rank's
// tab is marked (icon, red title "Rank N — failed", the error as its tooltip) and brought forward.
// It emits nothing beyond QTabWidget's own signals.
#pragma once

#include <QTabWidget>

#include <vector>

#include "app/studio/core/jobs/launch_job.h"

class QPlainTextEdit;

namespace hap::studio {

class RunLogs : public QTabWidget {
  Q_OBJECT
 public:
  explicit RunLogs(QWidget* parent = nullptr);

  // The page after the logs, and its tab's title (the title may change any time).
  void setLastPage(QWidget* page, const QString& title);
  void setLastPageTitle(const QString& title);
  // Empty logs: All and one tab per rank, then the last page.
  void reset(int ranks);
  // A line (or lines) into All only: the command line, what the dock says about the run.
  void appendAll(const QString& text);
  // A batch of the workers' lines, into All and their rank's tab (one append per tab per batch).
  void append(const LaunchLines& lines);
  // Marks rank `rank`'s tab failed with `message` and shows it.
  void markFailed(int rank, const QString& message);

  // rank -1: "All"; null for a rank out of range.
  QPlainTextEdit* log(int rank) const;

 private:
  std::vector<QPlainTextEdit*> m_rankLogs;
  QPlainTextEdit* m_allLog = nullptr;
  QWidget* m_lastPage = nullptr;
  QString m_lastTitle;
};

}  // namespace hap::studio
