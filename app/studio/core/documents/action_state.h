// Which of the main window's commands can run, derived in one place from what is open: a model, a
// cluster, a plan shown, planning or a training run going. The window computes it whenever any of
// these changes (MainWindow::updateActions) and sets every action's enabled state from it; no
// action is enabled or disabled anywhere else. Plain data, tested without windows.
#pragma once

#include <QString>

namespace hap::studio {

// What the window has open and what runs in the background.
struct DocumentState {
  bool model = false;     // a model is open
  bool cluster = false;   // the Cluster panel holds a cluster (opened, or made from a template)
  bool plan = false;      // a plan is shown (made here or opened)
  bool planning = false;  // a plan is being made
  bool running = false;   // a training run is going (Run dock)
  bool operator==(const DocumentState&) const = default;
};

struct ActionState {
  bool reloadModel = false;      // File ▸ Reload Model
  bool exportGraph = false;      // File ▸ Export ▸ Graph as SVG/PNG/DOT
  bool plan = false;             // Plan ▸ Plan (Ctrl+R), the Plan panel's Plan button
  bool cancelPlanning = false;   // Plan ▸ Cancel Planning
  bool exportPlan = false;       // Plan File…, Chrome Trace…, Markdown Report…
  bool exportLaunch = false;     // Export Launch Scripts ▸ torchrun/Slurm/ssh (and the submenu)
  bool comparePlans = false;     // Plan ▸ Compare Plans
  bool planColouring = false;    // View ▸ Colour By's plan modes and Cost on Device
  bool startRun = false;         // Run ▸ Start Training Run (Ctrl+F5)
  bool stopRun = false;          // Run ▸ Stop Training Run (Shift+F5)
  bool tune = false;             // Run ▸ Tune…
  bool calibrate = true;         // Run ▸ Calibrate… (works on the profile store alone)
  bool operator==(const ActionState&) const = default;
};

ActionState actionState(const DocumentState& s);

// What a disabled command waits for, as its tooltip says it ("Needs a plan: plan first (Plan ▸
// Plan, Ctrl+R)"); "" when `s` has it.
enum class Needs { Model, ModelAndCluster, Plan };
QString whyDisabled(const DocumentState& s, Needs needs);

}  // namespace hap::studio
