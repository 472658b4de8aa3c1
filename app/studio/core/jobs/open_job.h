// Opens models and plans off the GUI thread (importing BERT-Base takes about a second, a large model
// much longer), reporting progress and honouring cancellation. One job at a time: starting a new
// one cancels the running one, whose result is then dropped.
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <memory>

#include "app/studio/core/documents/model_document.h"

namespace hap::studio {

class OpenJob : public QObject {
  Q_OBJECT
 public:
  explicit OpenJob(QObject* parent = nullptr);
  ~OpenJob() override;  // cancels and waits for a running job

  // Imports `path` with the given input overrides (--input, or the inputs dialog).
  void openModel(const QString& path, const std::vector<import::InputSpec>& inputOverrides = {});
  // Opens and verifies a plan against `modelPath` ("" = the plan's own model path).
  void openPlan(const QString& planPath, const QString& modelPath);
  // Stops the running job; it ends with failed(Cancelled, ...).
  void cancel();
  bool busy() const { return m_running > 0; }

 Q_SIGNALS:
  void started(const QString& path);
  void progress(int done, int total);
  void modelOpened(std::shared_ptr<const hap::studio::ModelDocument> model);
  void planOpened(std::shared_ptr<const hap::studio::PlanDocument> plan,
                  std::shared_ptr<const hap::studio::ModelDocument> model);
  void failed(const QString& path, const hap::studio::OpenError& error);
  void busyChanged(bool busy);

 private:
  template <class Work, class Deliver>
  void run(const QString& path, Work work, Deliver deliver);

  std::shared_ptr<std::atomic<bool>> m_cancel;  // the running job's flag
  quint64 m_generation = 0;                     // results of older generations are dropped
  int m_running = 0;                            // jobs started and not yet delivered
};

}  // namespace hap::studio

Q_DECLARE_METATYPE(std::shared_ptr<const hap::studio::ModelDocument>)
Q_DECLARE_METATYPE(std::shared_ptr<const hap::studio::PlanDocument>)
Q_DECLARE_METATYPE(hap::studio::OpenError)
