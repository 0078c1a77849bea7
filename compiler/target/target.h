//===- target/target.h - What the compiler knows about each target --------===//
//
// What this owns: the target descriptions, read from target/targets.def: the
// names `--target` accepts, each one's kind (the CPU simulator or PTX through
// LLVM's NVPTX backend), its shared-memory budget and its rule for the
// threads per CTA, plus the size of
// the shared-memory header every megakernel reserves. Sema sizes `dot`'s
// scratch against these numbers, the back end checks each kernel against
// them, and the driver validates `--target` and prints `--help` from the
// same table. No LLVM here: sema reads it without the code generators.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace etl {

enum class TargetKind { Sim, Nvptx };

struct TargetDesc {
  const char *name; ///< "sim", "sm_90", ...
  TargetKind kind;
  unsigned smem_limit; ///< dynamic shared memory per CTA in bytes (opt-in max); 0: no limit
  /// 256 threads per CTA when the largest tile has >= wide_tile elements,
  /// else 128 (0: always 128); `--threads` overrides it.
  unsigned wide_tile;
  const char *what; ///< one line for --help
};

/// Bytes at the start of every megakernel's shared memory that the lowering
/// keeps for itself (the task header, lower/plan.h); the scratch area
/// that `dot` and reductions use follows it.
constexpr unsigned kSmemHeaderBytes = 32;

/// Every target, in targets.def order.
const std::vector<TargetDesc> &all_targets();
/// The target named `name`, or null.
const TargetDesc *find_target(const std::string &name);
/// "sim, sm_80, sm_86, sm_89 or sm_90": the names for messages and --help.
std::string target_names();
/// The smallest non-zero smem_limit over every target: what a program must
/// fit, since one checked program is compiled for any set of targets.
unsigned portable_smem_limit();
/// The shared-memory budget of a compilation for `targets` (names of
/// targets.def): the smallest non-zero smem_limit among them; when none has
/// a limit (sim only), the largest of all targets, so a program checked for
/// sim still fits some GPU. Unknown names are ignored.
unsigned smem_limit_for(const std::vector<std::string> &targets);
/// Threads per CTA target `t` picks for a kernel whose largest tile has
/// `largest_tile` elements (targets.def, wide_tile).
unsigned default_threads(const TargetDesc &t, long long largest_tile);

/// Registers one thread of a CTA of `threads` threads may use on `t`: every
/// sm_* target has 64K 32-bit registers per SM and at most 255 per thread,
/// and the kernel asks for one resident CTA per SM (.minnctapersm 1), so
/// min(255, 65536 / threads rounded down to the allocation unit of 8). 0 for
/// sim, which has no register file.
unsigned register_limit(const TargetDesc &t, unsigned threads);

} // namespace etl
