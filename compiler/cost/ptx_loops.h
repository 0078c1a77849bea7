//===- cost/ptx_loops.h - Instructions per loop step, read from the PTX ----===//
//
// What this owns: the timing model's reading of the code etlc generated
// (cost/timing.h). From one PTX module it builds each function's control-flow
// graph (blocks, dominators, natural loops), finds each task group's code
// (what the task loop's dispatch entry for the group dominates; a group
// lowered as `.func etl.task.NAME` is that function) and counts, per loop
// that touches global memory, the PTX instructions of one interior
// iteration by class, with the details a timing model needs (mma.sync FLOPs,
// global bytes, the cp.async ring's depth), and per group the code outside
// those loops. The same analysis as scripts/kloop_stats.py (its docstring
// states the rules); tests/unit/cost/ptx_loops_test.cpp and
// tests/scripts/test_perf_model.py keep the two the same.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace etl {

/// The instruction classes, in kloop_stats.py's order (CLASSES there).
enum class PtxClass { Args, Gmem, Bar, Mma, I64, Pred, Smem, Other };
constexpr int kPtxClasses = 8;
const char *ptx_class_name(PtxClass c);

/// A tally of instructions: per class, and the details (kloop_stats' `_`
/// keys): mma.sync count and FLOPs per warp, tf32 mma.sync, global bytes per
/// thread, plain global loads of tensor data, floating-point arithmetic, and
/// the largest `cp.async.wait_group N` seen (-1: none).
struct PtxTally {
  std::array<double, kPtxClasses> cls{};
  double mma = 0, mma_flops = 0, tf32 = 0, gbytes = 0, ldg = 0, fp = 0;
  int wait = -1;

  double total() const;
  void add(const PtxTally &o);
  PtxTally scaled(double t) const;
  /// Stages of the step's cp.async ring: wait_group N + 2; 1 when it loads
  /// global memory and waits for it itself; 0 when nothing streams.
  int ring_depth() const;
};

/// One loop of a group (kloop_stats' row).
struct PtxLoop {
  std::string group, label;
  int depth = 0;              ///< loops of the same group around it
  PtxTally step;              ///< one interior iteration
  double static_count = 0;    ///< every instruction once, inner loops times their trips
  bool unknown = false;       ///< an inner loop of unknown trips counted once
  std::optional<double> trips; ///< a constant trip count the PTX shows
};

struct PtxAnalysis {
  std::vector<PtxLoop> loops;            ///< loops touching global memory
  std::map<std::string, PtxTally> regions; ///< per group: code outside those loops
  unsigned threads = 128;                ///< the kernel's .maxntid
};

/// Analyses `ptx` whose task groups are `groups` (in the order of the task
/// graph: the dispatch compares the group's number).
PtxAnalysis analyse_ptx(const std::string &ptx, const std::vector<std::string> &groups);

/// Every instruction of `ptx` once, weighted by the SASS each class becomes
/// (a 64-bit integer op 2, the rest 1): the denominator of the SASS ratio
/// (static SASS of the cubin / this).
double expanded_ptx(const std::string &ptx);

} // namespace etl
