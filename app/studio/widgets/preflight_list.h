// The Run dock's preflight check list (issue 20, item 1), above Start: one line that sums the last
// preflight up ("All 9 checks passed  ▸", its icon the worst status) beside Check, and under it a
// row per check (icon, then "Title  message", wrapped and selectable) that the line opens and
// closes. It runs nothing: the Run dock (LaunchView) runs the PreflightJob and shows its checks.
//
// Contract:
// - showChecks(checks, open): the list of `checks`, open or closed; with no checks the line says
//   "Not checked yet" and cannot open. An open list scrolls its first failed check into view.
// - showChecking(): the line says "Checking…" until the next showChecks.
// - Emits checkRequested() when Check is clicked (enabled by setCanCheck).
#pragma once

#include <QFrame>

#include <vector>

#include "app/studio/core/jobs/preflight_job.h"

class QPushButton;
class QScrollArea;
class QToolButton;

namespace hap::studio {

class PreflightList : public QFrame {
  Q_OBJECT
 public:
  explicit PreflightList(QWidget* parent = nullptr);

  void showChecks(const std::vector<runtime::PreflightCheck>& checks, bool open);
  void showChecking();
  // Check: enabled when `enabled`; its tooltip says what it checks (with a plan) or that it needs one.
  void setCanCheck(bool enabled, bool havePlan);

  QToolButton* summary() const { return m_toggle; }  // checked: the list is open
  QScrollArea* list() const { return m_list; }
  QPushButton* checkButton() const { return m_check; }

 Q_SIGNALS:
  void checkRequested();

 private:
  void setOpen(bool open);

  QToolButton* m_toggle = nullptr;
  QPushButton* m_check = nullptr;
  QScrollArea* m_list = nullptr;
  std::vector<runtime::PreflightCheck> m_checks;  // the ones shown
};

}  // namespace hap::studio
