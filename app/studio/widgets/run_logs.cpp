#include "app/studio/widgets/run_logs.h"

#include <QPlainTextEdit>
#include <QStyle>
#include <QTabBar>

#include "app/studio/widgets/fixed_font.h"

namespace hap::studio {
namespace {

constexpr int kLogBlocks = 5000;  // lines kept per log tab

}  // namespace

RunLogs::RunLogs(QWidget* parent) : QTabWidget(parent) {
  setObjectName(QStringLiteral("runLogs"));
  setDocumentMode(true);
  setUsesScrollButtons(true);
}

void RunLogs::setLastPage(QWidget* page, const QString& title) {
  m_lastPage = page;
  setLastPageTitle(title);
}

void RunLogs::setLastPageTitle(const QString& title) {
  m_lastTitle = title;
  const int tab = m_lastPage ? indexOf(m_lastPage) : -1;
  if (tab >= 0) setTabText(tab, title);
}

void RunLogs::reset(int ranks) {
  // Logs: All, then one tab per rank.
  clear();
  for (QPlainTextEdit* l : m_rankLogs) delete l;
  m_rankLogs.clear();
  delete m_allLog;
  const auto makeLog = [this](const QString& name) {
    auto* log = new QPlainTextEdit(this);
    log->setObjectName(name);
    log->setReadOnly(true);
    log->setLineWrapMode(QPlainTextEdit::WidgetWidth);  // an error line reads whole
    log->setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
    log->setMaximumBlockCount(kLogBlocks);
    log->setFont(fixedFont());
    log->setFrameShape(QFrame::NoFrame);
    return log;
  };
  m_allLog = makeLog(QStringLiteral("log.all"));
  addTab(m_allLog, tr("All"));
  for (int r = 0; r < ranks; ++r) {
    QPlainTextEdit* log = makeLog(QStringLiteral("log.rank%1").arg(r));
    m_rankLogs.push_back(log);
    addTab(log, tr("Rank %1").arg(r));
  }
  if (m_lastPage) addTab(m_lastPage, m_lastTitle);
}

void RunLogs::appendAll(const QString& text) {
  if (m_allLog) m_allLog->appendPlainText(text);
}

void RunLogs::append(const LaunchLines& lines) {
  // One append per tab per batch: a chatty run costs a few layouts, not one per line.
  QStringList all;
  std::vector<QStringList> perRank(m_rankLogs.size());
  all.reserve(lines.size());
  for (const LaunchLine& l : lines) {
    if (l.rank < 0) {
      all << l.text;
      continue;
    }
    all << QStringLiteral("[rank %1] %2").arg(l.rank).arg(l.text);
    if (static_cast<size_t>(l.rank) < perRank.size()) perRank[static_cast<size_t>(l.rank)] << l.text;
  }
  if (!all.isEmpty()) m_allLog->appendPlainText(all.join(QLatin1Char('\n')));
  for (size_t r = 0; r < perRank.size(); ++r)
    if (!perRank[r].isEmpty()) m_rankLogs[r]->appendPlainText(perRank[r].join(QLatin1Char('\n')));
}

void RunLogs::markFailed(int rank, const QString& message) {
  const int tab = rank + 1;  // after All
  if (tab > 0 && tab < count()) {
    setTabText(tab, tr("Rank %1 — failed").arg(rank));
    setTabIcon(tab, style()->standardIcon(QStyle::SP_MessageBoxCritical));
    tabBar()->setTabTextColor(tab, QColor(0xb0, 0x1c, 0x1c));
    setTabToolTip(tab, message);
    setCurrentIndex(tab);
  }
}

QPlainTextEdit* RunLogs::log(int rank) const {
  if (rank < 0) return m_allLog;
  return static_cast<size_t>(rank) < m_rankLogs.size() ? m_rankLogs[static_cast<size_t>(rank)] : nullptr;
}

}  // namespace hap::studio
