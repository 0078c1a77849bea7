//===- cost/timing.h - The latency-aware timing model of a megakernel ------===//
//
// What this owns: `etlc compile --emit=time` and the ranking of `etlc tune`.
// From the cost of each group (cost/cost.h, at a binding), the code etlc
// generated for it (cost/ptx_loops.h: one K step's PTX by class, its ring,
// the rest of the task) and the GPU's stated latencies and issue rates
// (cost/gpus.def, ETL_GPU_TIMING), it times one task of every group and
// replays the task queues and events over the GPU's SMs, one persistent CTA
// each, as the runtime deals them. docs/PERF_MODEL.md states every rule and
// constant; scripts/perf_model.py prints its rows through this.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "cost/cost.h"
#include "cost/ptx_loops.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace etl {

/// A GPU's timing constants (gpus.def ETL_GPU_TIMING), null when none.
struct GpuTiming {
  const char *id;
  double l2_ns, dram_ns, atomic_ns, fence_ns, wake_ns;
  unsigned sched_per_sm, issue_per_clk;
  double issue_eff_2w, mma_sync_eff, sm_max_gb_per_s;
  double launch_us, cas_pop_us; ///< fitted (gpus.def)
  const char *source;
};
const GpuTiming *find_gpu_timing(const std::string &gpu_id);

struct TimingOptions {
  bool cas_queue = false;  ///< the head/tail/CAS queue of older code (else the ticket)
  double sass_ratio = 1.0; ///< static SASS / expanded PTX (1: not read)
  std::string sass_note = "SASS taken as expanded PTX (ratio 1)";
};

/// One group's line of the report.
struct GroupTime {
  std::string name; ///< NAME, or NAME.expand for a data range's expanders
  int64_t tasks = 0;
  double task_s = 0;         ///< its first task's time
  double first = 0, last = 0; ///< when its first task started, its last ended
  double steps = 0;          ///< K steps per task (mean)
  double step_s = 0;         ///< one step
  int ring = 0;
  double ptx_step = 0;       ///< PTX per warp per step
  std::string source;        ///< "code", or "cost" (no code found)
};

struct TimeReport {
  double seconds = 0; ///< the run, launch included
  double launch_s = 0;
  std::string gpu, queue, sass_note;
  double bytes = 0, sol_s = 0;
  std::vector<GroupTime> groups;
};

/// The model's time of one run of the kernel at `env` (every dim bound;
/// integer tensors read by ranges bound to one value) on `gpu`. `ptx` is the
/// code of one GPU target. nullopt with `error` when it cannot tell.
std::optional<TimeReport> model_time(const KernelCost &kc, const TaskGraph &g,
                                     const PtxAnalysis &ptx,
                                     const std::map<std::string, int64_t> &env,
                                     const GpuSpec &gpu, const TimingOptions &opts,
                                     std::string &error);

/// `--emit=time`: the per-group table and the total (or one JSON object).
std::string print_time(const TimeReport &r, const std::map<std::string, int64_t> &env, bool json);

/// The replay alone (exposed for tests): tasks in the runtime's order, each
/// with its duration, the event elements it waits on and notifies, whether
/// it is a device-queue item and the items it pushes (a data range's
/// expander). Returns the makespan; spans[i] = (start, end).
struct ReplayTask {
  double dur = 0;
  bool dynamic = false;
  std::vector<int64_t> waits, notifies;
  std::vector<int> pushes;
};
std::optional<double> replay(const std::vector<ReplayTask> &tasks, int n_ctas, double pop_s,
                             double pop_serial_s, double wake_s,
                             std::vector<std::pair<double, double>> &spans);

} // namespace etl
