//===- lower/plan.h - What the lowering files share (internal) ------------===//
//
// What this owns: what the lower_*.cpp files and the lowering classes
// (lower_ctx.h, body_lowerer.h, kernel_lowerer.h) share outside them: the
// kernel plan (groups with their wait/notify
// edges as AST expressions, and the tile IR of each body), the
// shared-memory header offsets and the task loop's polling constants, the
// register-tile value, the budgets of the weight prefetch and the loop
// pipelining, and the free helpers of the element conversions and the math
// builtins. Not
// included outside compiler/lower.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "target/machine.h"
#include "taskgraph/taskgraph.h"
#include "tile/ir.h"

#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace llvm {
class AllocaInst;
class Value;
} // namespace llvm

namespace etl {

/// An unsupported construct or an inconsistent AST; becomes BackendResult::error.
struct LowerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// `E[idx...]` in a waits/notifies clause; a null index is `*`.
struct EventUse {
  int event = -1;
  std::vector<const Expr *> idx;
};

struct GroupPlan {
  std::string name;
  const TaskDecl *decl = nullptr;
  std::vector<EventUse> waits, notifies;
  /// `schedule dynamic`: run from the device queue when its waits are done
  /// (lower_dynamic.cpp); never in a static queue, never spins on a wait.
  bool dynamic = false;
  /// Parallel to `waits` for dynamic groups; an empty solved_by means
  /// "enumerate every variable" (always correct, just slower).
  std::vector<EdgeInverse> wait_inverse;
  /// The body's tile IR (lower_tile_*.cpp lower it).
  const TileFunc *tile = nullptr;
};

struct KernelPlan {
  const Program *program = nullptr;
  const KernelDecl *kernel = nullptr;
  std::vector<GroupPlan> groups;
  /// Shared memory per CTA, header included, the lowering stages within:
  /// the artifact's targets' TargetInfo::smem_budget, one number for all of
  /// them (every target is lowered from this plan with the same decisions).
  unsigned smem_budget = 0;
};

/// Byte offsets in shared memory: the header (kSmemHeaderBytes, 32 bytes,
/// target/target.h, which sema also sizes `dot` against), then the scratch area.
/// kSmemPos: the task's queue position, its index in the timeline.
/// kSmemDynDecision / kSmemDynItem (lower_dynamic.cpp): thread 0's decision
/// in a dynamic loop and the popped item id (separate from kSmemGroup /
/// kSmemLinear, which the other threads may not have read yet when thread 0
/// starts a task's wait). kSmemProgress: the CTA's finished-task count,
/// copied to the control block for the watchdog (mark_progress).
/// kSmemDynTicket: thread 0's queue ticket not yet served, + 1 (0 = none).
constexpr unsigned kSmemGroup = 0, kSmemLinear = 4, kSmemAbort = 8, kSmemPos = 12,
                   kSmemDynDecision = 16, kSmemDynItem = 20, kSmemProgress = 24,
                   kSmemDynTicket = 28, kSmemScratch = kSmemHeaderBytes;
static_assert(kSmemDynTicket + 4 <= kSmemScratch, "the shared-memory header overflows");
/// The group value thread 0 broadcasts when the CTA must stop.
constexpr uint32_t kExitGroup = 0xFFFFFFFFu;
/// The task loop touches the host-mapped control block (abort flag, progress)
/// every this many tasks, or after this many nanoseconds (lower_kernel.cpp).
constexpr uint32_t kPollEveryTasks = 16;
constexpr uint64_t kPollEveryNs = 1000000;


/// What in `f` (the tile IR of task `t`'s body, with layouts) the
/// lowering has no form for with `threads` threads per CTA (a power-of-two
/// number of warps: run_backend checks valid_threads_per_cta first): the
/// op and why, or empty (lower_tile_control.cpp). Sema and the tile passes keep
/// every checked program inside it: a gap is an internal compiler error.
std::string tile_lowering_gap(const TileFunc &f, const KernelDecl &k, const TaskDecl &t,
                              unsigned threads);

/// The weight prefetch (lower/prefetch.cpp): the loads a task with waits
/// issues before them hold at most this many registers per thread, all
/// hoisted tiles together (the rest stay after the waits).
constexpr int64_t kPrefetchRegs = 32;
/// The top-level `load` ops of `f` that may run before its waits
/// (prefetch.cpp's banner has the rules), in order.
std::vector<const TOp *> tile_prefetch(const TileFunc &f, const KernelDecl &k,
                                       const std::set<int> &written);
/// The first stages of the K-loop rings (tile/pipeline.cpp's prologue at
/// the top level of `f`) a task with waits issues before them: the
/// `smem.alloc` of each ring (lowered twice: before the waits and in the
/// body), its `async.copy` ops of never-written tensors whose slice and
/// bounds name only task variables and dims (the body skips them), and an
/// `async.commit` after each stage that has one (the body commits again;
/// prefetch.cpp's banner says why the wait counts still hold), in order.
/// `stages`: the commits among them.
struct RingPrefetch {
  std::vector<const TOp *> ops;
  size_t stages = 0;
};
RingPrefetch ring_prefetch(const TileFunc &f, const KernelDecl &k, const std::set<int> &written);
/// Software pipelining of a tile IR `for` (prefetch.cpp): the loads of
/// its body (top level) of never-written tensors whose slices name only
/// task variables, dims, the loop's variable and the enclosing loops'
/// (`outer`), within kPipelineRegs registers per thread; tile_for issues
/// iteration k + 1's before iteration k's compute.
std::vector<const TOp *> loop_prefetch(const TOp &loop, const TileFunc &f, const KernelDecl &k,
                                       const std::set<int> &written,
                                       const std::set<std::string> &outer);
/// Registers per thread of the loads one loop carries into its next
/// iteration (they live beside the current iteration's).
constexpr int64_t kPipelineRegs = 16;

/// A register tile (or a uniform scalar when `shape` is empty).
struct TileVal {
  ElemType elem = ElemType::F32;
  bool is_index = false; ///< an i64 index value used as a scalar operand
  std::vector<int64_t> shape;
  std::vector<llvm::Value *> regs;
  bool scalar() const { return shape.empty(); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape)
      n *= s;
    return n;
  }
};

/// The bf16 bits (i16) of an f32 register, rounded to nearest even, and
/// back (lower/lower_convert.cpp).
llvm::Value *f32_to_bf16_bits(Builder &b, llvm::Value *v);
llvm::Value *bf16_bits_to_f32(Builder &b, llvm::Value *h);
/// Rounds an f32 register to the precision of `t` (f16, bf16, FP8); other
/// types as they are (lower_convert.cpp).
llvm::Value *round_to(Builder &b, llvm::Value *v, ElemType t);
/// The math function a tile IR map spells `name` (exp .. round, pow), or
/// none.
std::optional<MathFn> math_fn_named(const std::string &name);

} // namespace etl
