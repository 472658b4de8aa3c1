// The find bar (Ctrl+F), as in a browser or Qt Creator: a line edit, "Regex" and "Match case",
// "n of m", Previous/Next. Enter / F3 go to the next match, Shift+Enter / Shift+F3 to the
// previous one (both wrap around), Esc hides the bar. Typing updates the count; a match is
// activated (matchActivated) only on Enter, F3 or the buttons, so typing never moves the view.
#pragma once

#include <QWidget>
#include <memory>

#include "app/studio/core/graph/graph_search.h"

class QAction;
class QCheckBox;
class QLabel;
class QLineEdit;
class QToolButton;

namespace hap::studio {

class FindBar : public QWidget {
  Q_OBJECT

 public:
  explicit FindBar(QWidget* parent = nullptr);

  // Replaces the graph searched (nullptr: nothing to find) and re-runs the current text.
  void setGraph(std::shared_ptr<const ir::Graph> graph);
  // Shows the bar, focuses the text and selects it (what Ctrl+F does).
  void focusAndSelectAll();

  const GraphSearch& search() const { return m_search; }
  QLineEdit* lineEdit() const { return m_edit; }
  // F3 and Shift+F3, window-wide while the bar is visible; add them to the Edit menu to have them
  // everywhere (they open the bar when it is hidden).
  QAction* findNextAction() const { return m_nextAction; }
  QAction* findPreviousAction() const { return m_previousAction; }

 public Q_SLOTS:
  void findNext();
  void findPrevious();

 Q_SIGNALS:
  void matchActivated(hap::studio::Selection selection);
  // Esc or the close button: the main window gives the focus back to the graph.
  void closed();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  void rerun();
  void step(bool forward);
  void updateStatus();

  GraphSearch m_search;
  QLineEdit* m_edit = nullptr;
  QCheckBox* m_regex = nullptr;
  QCheckBox* m_matchCase = nullptr;
  QLabel* m_status = nullptr;
  QToolButton* m_previous = nullptr;
  QToolButton* m_next = nullptr;
  QAction* m_nextAction = nullptr;
  QAction* m_previousAction = nullptr;
};

}  // namespace hap::studio
