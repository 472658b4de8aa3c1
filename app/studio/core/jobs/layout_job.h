// Runs layoutGraph off the GUI thread (../shared/DESIGN.md §2: results come back as queued signals,
// cancellation through a std::atomic<bool>).
//
// Every request gets a new generation number and raises the cancel flag of the one before; only
// the result of the latest generation is delivered, older ones are dropped, so the receiver sees
// results in request order and never a stale one. All layout jobs of the process run on one
// worker thread (Graphviz keeps global state and is not safe to run concurrently), so a request
// waits at most for the phase the previous, cancelled job is in. Nothing here blocks the caller.
#pragma once

#include <QObject>

#include <atomic>
#include <memory>

#include "app/studio/core/graph/graph_layout.h"
#include "app/studio/core/graph/scope_tree.h"
#include "engine/ir/graph.h"

namespace hap::studio {

class LayoutJob : public QObject {
  Q_OBJECT

 public:
  explicit LayoutJob(QObject* parent = nullptr);
  // Raises the running job's cancel flag and returns at once; the job finishes on its own.
  ~LayoutJob() override;

  // Starts laying out what `state` makes visible and returns the request's generation.
  quint64 request(std::shared_ptr<const ir::Graph> graph, std::shared_ptr<const ScopeTree> tree,
                  CollapseState state, LayoutOptions options = {});
  // Drops the outstanding request, if any (busy() turns false).
  void cancel();

  bool busy() const { return m_busy; }
  quint64 generation() const { return m_generation; }  // of the latest request; 0 before any

 Q_SIGNALS:
  // Delivered on the thread that owns the job, for the latest request only.
  void layoutReady(std::shared_ptr<const hap::studio::Layout> layout, quint64 generation);
  void failed(QString message, quint64 generation);
  void busyChanged(bool busy);

 private:
  void setBusy(bool busy);

  quint64 m_generation = 0;
  bool m_busy = false;
  std::shared_ptr<std::atomic<bool>> m_cancel;  // the latest request's flag
};

}  // namespace hap::studio
