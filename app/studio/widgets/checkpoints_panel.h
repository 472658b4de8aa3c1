// The Run dock's checkpoints page (issue 20, item 5): the shown run's checkpoint folder as a table
// (CheckpointsModel: step, size, written, status), a line that says where the folder is and how
// many it holds (or why there are none), Resume From, Export Model… and Open Folder, and a line
// under them with what Resume From or Export did. It runs nothing itself but Open Folder (the file
// manager): the Run dock (LaunchView) resumes and exports.
//
// Contract:
// - list(dir) lists `dir`, keeping the selected checkpoint when the same folder is listed again,
//   else selecting the newest.
// - Resume From and Export Model… are off while the dock is busy, and for a checkpoint whose header
//   cannot be read; Export also without a plan (setState says which holds).
// - Emits resumeRequested(row) (Resume From, or a double click on a row), exportRequested(row)
//   (Export Model…; the dock asks where), and titleChanged(title) with "Checkpoints" or
//   "Checkpoints (N)" whenever the list or the state is shown anew, for the tab that holds the page.
#pragma once

#include <QWidget>

class QLabel;
class QPushButton;
class QTableView;

namespace hap::studio {

class CheckpointsModel;

class CheckpointsPanel : public QWidget {
  Q_OBJECT
 public:
  // How the result line is coloured.
  enum class Tone { Plain, Succeeded, Failed };

  // Shows `model` (not owned).
  explicit CheckpointsPanel(CheckpointsModel* model, QWidget* parent = nullptr);

  void list(const QString& dir);
  // `busy`: a run, export or start is going; `havePlan`: the dock has a plan to export with.
  void setState(bool busy, bool havePlan);
  int currentRow() const;
  QString title() const;

  // The result line: its text (and tooltip, when `asToolTip`: a long path is cut); its colour.
  void setResult(const QString& text, bool asToolTip = false);
  void setResultTone(Tone tone);

  QTableView* table() const { return m_table; }
  QPushButton* resumeButton() const { return m_resume; }
  QPushButton* exportButton() const { return m_export; }
  QPushButton* openFolderButton() const { return m_openFolder; }
  QLabel* message() const { return m_message; }

 Q_SIGNALS:
  void resumeRequested(int row);
  void exportRequested(int row);
  void titleChanged(const QString& title);

 private:
  void refresh();

  CheckpointsModel* m_model;
  bool m_busy = false;
  bool m_havePlan = false;
  QTableView* m_table = nullptr;
  QPushButton* m_resume = nullptr;
  QPushButton* m_export = nullptr;
  QPushButton* m_openFolder = nullptr;
  QLabel* m_message = nullptr;
  QLabel* m_result = nullptr;
};

}  // namespace hap::studio
