//===- target/target.h - What the compiler knows about each target --------===//
//
// What this owns: the target descriptions, read from target/targets.def: the
// names `--target` accepts, each one's kind (the CPU simulator or PTX through
// LLVM's NVPTX backend), compute capability, shared-memory budget, register
// file and rule for the threads per CTA, plus the size of the shared-memory
// header every megakernel reserves; and TargetInfo, those facts folded over
// the targets of one compilation, which the driver builds once and hands to
// sema, the tile IR's allocator and the lowering. The driver validates
// `--target` and prints `--help` from the same table. No LLVM here: sema
// reads it without the code generators.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace etl {

enum class TargetKind { Sim, Nvptx };

struct TargetDesc {
  const char *name; ///< "sim", "sm_90", "sm_90a", ...
  TargetKind kind;
  unsigned sm;         ///< compute capability x 10 (90 for sm_90 and sm_90a); 0: sim
  unsigned ptx;        ///< PTX ISA version x 10 of its code (78: `.version 7.8`); 0: sim
  unsigned smem_limit; ///< dynamic shared memory per CTA in bytes (opt-in max); 0: no limit
  unsigned regs_per_sm, regs_per_thread; ///< 32-bit registers; 0: sim (no register file)
  /// 256 threads per CTA when the largest tile has >= wide_tile elements,
  /// else 128 (0: always 128); `--threads` overrides it.
  unsigned wide_tile;
  const char *what; ///< one line for --help
};

/// Bytes at the start of every megakernel's shared memory that the lowering
/// keeps for itself (the task header, lower/plan.h); the scratch area
/// that `dot` and reductions use follows it.
constexpr unsigned kSmemHeaderBytes = 32;

/// The target may use wgmma.mma_async (PTX's architecture-specific
/// `sm_90a`: a name ending in `a` at compute capability 9.0; targets.def).
bool target_has_wgmma(const TargetDesc &t);

/// Every target, in targets.def order.
const std::vector<TargetDesc> &all_targets();
/// The target named `name`, or null.
const TargetDesc *find_target(const std::string &name);
/// "sim, sm_80, sm_86, sm_89, sm_90 or sm_90a": the names for messages and --help.
std::string target_names();
/// The facts of one compilation's targets together: one artifact carries a
/// kernel per target of its `--target` list (`--target sm_90,sim`), and
/// run_backend lowers each of them with a KernelLowerer of its own, all from
/// one plan with the same decisions (the tile IR path, staging, rings),
/// and the artifact holds one shared-memory size for all of them (the
/// metadata's smem_bytes; sim models the GPUs). So the budget is one number
/// for the whole list, never a target's own.
struct TargetInfo {
  /// The known targets of the list, in its order (unknown names ignored).
  std::vector<const TargetDesc *> targets;
  /// Dynamic shared memory per CTA, header included, that every target of
  /// the list allows: the smallest non-zero smem_limit among them; when none
  /// has a limit (sim only), the largest of targets.def, so that a program
  /// checked for sim still fits some GPU. Sema bounds scratch by it, the
  /// tile IR's allocator reports a body over it, and the lowering stages
  /// within it.
  unsigned smem_budget = 0;
  /// Some target of the list loads tiles by TMA (has_tma): the pipeline
  /// pass marks the plain rings TMA can fill (tile/pipeline.cpp), and each
  /// machine without TMA lowers them as cp.async rings still. False for
  /// every_target_info (no list named an sm_NNa target).
  bool tma = false;
  /// Every GPU target of the list has wgmma (target_has_wgmma: sm_90a), and
  /// there is one: tensor-core dots that fit take wgmma's accumulator layout
  /// and 1024-byte aligned rings (tile/mma.cpp, tile/smem.cpp), and every
  /// target of the list lowers them with wgmma.mma_async, sim included (it
  /// models the GPUs of its artifact: `--target sm_90a,sim`).
  bool wgmma = false;
  /// The registers one thread may use at `threads` per CTA on the tightest
  /// GPU target of the list (register_limit), with that target's name in
  /// `which`; 0 when the list has no GPU target.
  unsigned register_limit(unsigned threads, std::string *which = nullptr) const;
};

/// Does `t` load tiles by the Tensor Memory Accelerator (cp.async.bulk.tensor
/// with mbarriers)? The architecture-specific Hopper target (sm_90a) only:
/// sm_80..sm_90 keep their cp.async rings.
bool has_tma(const TargetDesc &t);

/// The TargetInfo of `targets` (names of targets.def).
TargetInfo target_info(const std::vector<std::string> &targets);
/// The TargetInfo of every target of targets.def: the strictest facts, what
/// an in-process Compilation checks against when no `--target` list set
/// them (driver/pipeline.h; compile() always sets its list's).
TargetInfo every_target_info();

/// Threads per CTA target `t` picks for a kernel whose largest tile has
/// `largest_tile` elements (targets.def, wide_tile).
unsigned default_threads(const TargetDesc &t, long long largest_tile);

/// Registers one thread of a CTA of `threads` threads may use on `t`: the
/// kernel asks for one resident CTA per SM (.minnctapersm 1), so
/// min(regs_per_thread, regs_per_sm / threads rounded down to the
/// allocation unit of 8) (targets.def: 255 and 64K on every sm_*). 0 for
/// sim, which has no register file.
unsigned register_limit(const TargetDesc &t, unsigned threads);

} // namespace etl
