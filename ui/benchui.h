// `kvscope --bench-ui`: drags every control of every model preset end to end (TP to its
// maximum included) in the real window, offscreen, and prints per-control p99, model switches
// on their own line, and last "update p50 X ms p99 Y ms" over slider steps only.
#pragma once

#include "ui/startup.h"

namespace kvscope::ui {

/// Runs the sweep; `--steps N` (when given on the command line) stops after N slider steps,
/// `--model ID` sweeps that model only.
int runBenchSweep(const StartupOptions& o);

} // namespace kvscope::ui
