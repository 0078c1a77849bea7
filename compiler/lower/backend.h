//===- lower/backend.h - From a checked kernel to target code -------------===//
//
// What this owns: the one entry point of the back end. Given a checked
// program, the kernel and its task graph, it lowers the whole kernel into ONE
// persistent megakernel `etl_main(uint64_t *args)` (see runtime/abi/etl_abi.h)
// for every requested target (target/targets.def) and hands back the LLVM IR
// and the code:
//   Nvptx targets ("sm_80", "sm_90", ...): PTX text (LLVM NVPTX backend);
//   "sim": an x86-64 ELF shared object whose machine operations call the
//          runtime's simulator through `__etl_sim_ops`.
// Every target shares the same lowering (lower/*.cpp); only the machine
// (target/machine.h, implemented in target/) differs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "diag/diag.h"
#include "target/target.h"
#include "taskgraph/taskgraph.h"
#include "tile/ir.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace etl {

class Machine;

/// Replaces the machine of each target (a decorator around it); tests only.
using MachineWrapper = std::function<std::unique_ptr<Machine>(std::unique_ptr<Machine>)>;

struct BackendOptions {
  unsigned threads_per_cta = 128;
  int opt_level = 2;
  /// Multiply-add contraction on NVPTX (target/machine.h, MachineOptions).
  bool fmad = true;
  /// The facts of the artifact's targets (target/target.h): the lowering
  /// stages within their smem_budget. Null: those of run_backend's
  /// `targets`. The driver passes the whole `--target` list's, so that
  /// `--emit=ptx` (which lowers the GPU targets only) shows the code the
  /// artifact carries.
  const TargetInfo *target = nullptr;
  /// The kernel's tile IR, ready for lowering (driver's lowering_tiles:
  /// layouts assigned, pipelined, shared memory planned); every task body
  /// is lowered from it (lower/lower_tile_*.cpp). Required.
  const TileModule *tiles = nullptr;
  /// A test seam, no command-line option: when set, every target's machine
  /// is passed through it before lowering (tests/unit/e2e/async_wait_test.cpp
  /// drops sim's cp.async waits to prove that the sim catches a missing one).
  MachineWrapper wrap_machine = nullptr;
};

struct TargetOutput {
  std::string target;
  std::string llvm_ir; ///< the optimised module, textual
  std::string code;    ///< PTX text for "sm_*", ELF .so bytes for "sim"
};

/// An optimisation remark of the lowering (DiagId::DotFmaPath's arguments),
/// reported once per source range whatever the number of targets.
struct BackendRemark {
  SourceRange range;
  std::vector<std::string> args;
  DiagId id = DiagId::DotFmaPath;
};

struct BackendResult {
  bool ok = false;
  std::string error;
  /// The error is a limit of the target the program exceeds (shared
  /// memory), not a compiler bug; every other error is an internal error.
  bool resource_limit = false;
  unsigned threads_per_cta = 0;
  unsigned smem_bytes = 0; ///< dynamic shared memory the kernel needs per CTA
  std::vector<TargetOutput> outputs;
  std::vector<BackendRemark> remarks;
  /// Per task group: how many loads it issues before its waits (the weight
  /// prefetch, lower/prefetch.cpp); ETL_TILE_DEBUG=1 prints them.
  std::vector<std::pair<std::string, size_t>> prefetched;
  /// Per task group: its K-loop rings' first stages issued before its
  /// waits (lower/prefetch.cpp, ring_prefetch); ETL_TILE_DEBUG=1 prints them.
  std::vector<std::pair<std::string, size_t>> ring_prefetched;
  /// Per task group: loads its loops issue one iteration ahead (the same).
  std::vector<std::pair<std::string, size_t>> pipelined;
  /// The tensor maps of the TMA rings (TileModule::tma_maps): the artifact
  /// lists them, the runtime encodes them (ArgLayout::tma_map's slots).
  std::vector<TmaMap> tma_maps;
};

/// The most elements of any tile value in `k`'s task bodies (sema's types).
long long largest_tile(const KernelDecl &k);
/// Threads per CTA when `--threads` is not given: the most any of `targets`
/// picks for `k` (target/targets.def, wide_tile), so that one artifact has one
/// thread count; 128 when no target is known.
unsigned pick_threads(const KernelDecl &k, const std::vector<std::string> &targets);

/// Threads per CTA the lowering takes: a power-of-two number of warps (tile
/// layouts split over them), 32 .. 1024.
inline bool valid_threads_per_cta(unsigned t) {
  return t >= 32 && t <= 1024 && (t & (t - 1)) == 0;
}

/// Lowers `k` (checked, annotated by sema) with the groups and edges of `g`.
BackendResult run_backend(const Program &p, const KernelDecl &k, const TaskGraph &g,
                          const std::vector<std::string> &targets, const BackendOptions &opts);

} // namespace etl
