//===- driver/pipeline.h - The compiler pipeline, stage by stage ----------===//
//
// What this owns: running the stages in order. One readable function,
// compile(), calls each stage, stops early where --emit asks for a dump, and
// times every stage for --time-passes:
//
//   read -> parse (-D) -> import -> inline -> sema -> taskgraph -> schedule
//        -> tile (build, layouts, pipeline, shared memory; once) -> registers
//        -> backend (per target) -> artifact
//
// The tile stage is one sequence (tile_passes in pipeline.cpp) whose IR the
// spill warning reads, --emit=tile prints and the back end lowers.
//
// Tests drive the same functions in-process (tests/unit/golden).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "diag/diag.h"
#include "diag/render.h"
#include "frontend/modules.h"
#include "inline/inline.h"
#include "lower/backend.h"
#include "target/target.h"
#include "taskgraph/taskgraph.h"
#include "tile/ir.h"

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace etl {

/// What `--emit` can dump; each stops the pipeline after its stage.
#define ETL_EMIT_KINDS(X)                                                                          \
  X(ast, "the syntax tree after parsing")                                                          \
  X(inline, "the syntax tree after imports and with every fn call expanded")                       \
  X(tunables, "the tunable consts: value, default, candidates, constraints, combinations allowed")  \
  X(taskgraph, "task groups and their schedule, event tensors, edges and wait counts")             \
  X(dot, "the task graph as Graphviz")                                                             \
  X(cost, "FLOPs, minimum DRAM bytes and speed-of-light time per task group (--bind, --gpu)")      \
  X(tile, "the tile IR of every task before and after layout assignment, with remarks")            \
  X(llvm, "LLVM IR of the megakernel, per target")                                                 \
  X(ptx, "PTX text for the sm_* targets")

struct CompileOptions {
  std::string input;
  std::string output; ///< artifact path
  std::vector<std::string> targets = {"sm_90", "sim"};
  std::string emit; ///< empty: write the artifact
  bool time_passes = false;
  /// `--threads N`; 0: chosen per target (lower/backend.h, pick_threads).
  unsigned threads_per_cta = 0;
  /// `--fmad=false`: no multiply-add contraction on NVPTX (sim never fuses).
  bool fmad = true;
  /// `-I DIR`: searched for imported modules before the stdlib directory.
  std::vector<std::string> import_dirs;
  /// --emit=cost: `M=4096,N=4096` (every dim, or none), the GPU of
  /// cost/gpus.def, and "text" or "json".
  std::string bind;
  std::string gpu = "h100-sxm";
  std::string format = "text";
  /// -Werror: warnings are errors; -w: no warnings.
  bool werror = false, no_warnings = false;
  /// `-D NAME=VALUE`: overrides of top-level consts (driver/defines.h).
  std::vector<std::string> defines;
  /// `--variant 'B<=1:TK=64'`: an artifact of several variants
  /// (driver/variants.h).
  std::vector<std::string> variants;
  /// The program's text when the input is `-` (read from stdin by the
  /// caller); diagnostics name it `<stdin>`.
  std::optional<std::string> stdin_text;
  /// `--diagnostics-format` and `--color` (already resolved from auto).
  DiagFormat diag_format = DiagFormat::Text;
  bool color = false;
  /// `-MD`: after a successful compile, write a Makefile dependency file
  /// naming `output` as the target and the input and every imported module
  /// as prerequisites; to `dep_file`, or `<output>.d` when it is empty.
  bool write_deps = false;
  std::string dep_file;
  /// `--events=barrier`: every event edge becomes a whole-group barrier
  /// (inline/barrier.h), the baseline fine-grained events are compared with.
  bool barrier_events = false;
  /// Tests only (lower/backend.h, BackendOptions::wrap_machine): a decorator
  /// around every target's machine.
  MachineWrapper wrap_machine = nullptr;
};

/// A compilation in progress: the source, its diagnostics and what each
/// stage produced so far.
struct Compilation {
  SourceManager sm;
  Diag diag{sm};
  FileId file = 0;
  std::unique_ptr<Program> program;
  TaskGraph graph;
  /// Where `import a.b;` looks for a/b.etl: these, then stdlib_dir.
  std::vector<std::string> import_dirs;
  std::string stdlib_dir = default_stdlib_dir();
  InlineSites inline_sites; ///< filled by the inline stage
  /// `-D NAME=VALUE`, applied right after parsing.
  std::vector<std::string> defines;
  /// The values of the variant being compiled (after `defines`), and
  /// "--variant 'SPEC':" for their diagnostics.
  std::vector<std::string> variant_defines;
  std::string variant_origin;
  /// `--events=barrier`: rewrite the waits into group barriers before sema.
  bool barrier_events = false;
  /// The facts of the compilation's targets (target/target.h): sema, the
  /// tile IR's allocator, the spill warning and the lowering read them.
  /// compile() sets the `--target` list's; a Compilation a test drives
  /// in process checks against every target (the strictest).
  TargetInfo target = every_target_info();
};

/// Front half: parse, check, build and schedule the task graph of the
/// program's (single) kernel. Returns false once any stage reported errors.
/// `stop_after` may be "ast" to stop after parsing (before imports), or
/// "inline" after the fn calls are expanded.
bool compile_front(Compilation &c, const std::string &stop_after = "");

/// What `etlc compile --emit=taskgraph` checks (the editor's "check"), for
/// the language server: the front stages on c.file, then the tile stage
/// with its warnings and errors (padding reaching a reduction, shared
/// memory over budget, register spills) at the thread count compile would
/// pick for `targets` (c.target should be target_info(targets)). `tiles`:
/// the tile IR after layout assignment, when the front stages passed and it
/// verified. Returns false once anything reported an error.
bool check_source(Compilation &c, const std::vector<std::string> &targets,
                  std::optional<TileModule> &tiles);

/// Runs `f` on the compiler's thread, whose large stack every stage's
/// recursion over a deeply nested program needs (the language server runs
/// its own walks of the tree there too).
void run_on_compiler_stack(const std::function<void()> &f);

/// `etlc --version`: "etlc 0.1.0 (artifact format N, LLVM 19)", N the
/// ETL_ARTIFACT_VERSION of runtime/abi/etl_abi.h that the artifact writer uses.
std::string version_text();
/// `--target`'s help, listing every target of target/targets.def.
std::string target_help();
/// `--gpu`'s help, listing every GPU of cost/gpus.def.
std::string gpu_help();
/// Exit codes of `etlc` (listed in `etlc --help`).
enum ExitCode : int {
  kExitOk = 0,
  kExitProgramError = 1, ///< the program has errors (diagnostics say which)
  kExitUsage = 2,        ///< bad command line, unreadable input, unwritable output
  /// A compiler bug: a stage failed on a program that passed the checks
  /// before it (e.g. the back end could not lower a checked kernel).
  kExitInternalError = 3,
};

/// The whole pipeline as `etlc compile` runs it. Dumps go to `out`,
/// diagnostics and errors to `err` (all through Diag, rendered once in
/// opts.diag_format). Returns the process exit code (ExitCode).
int compile(const CompileOptions &opts, std::ostream &out, std::ostream &err);

/// A Makefile rule `target: deps...` (paths escaped for make; one
/// prerequisite per line), then an empty rule per dep but the first, so
/// that make does not fail once an imported module is deleted (clang -MP).
std::string depfile_text(const std::string &target, const std::vector<std::string> &deps);

/// The tile stage on a compiled front half: the IR before and after layout
/// assignment (`--emit=tile`'s text); remarks go to c.diag. Returns false
/// with `error` set when the verifier rejects the IR (a compiler bug).
bool emit_tile(Compilation &c, unsigned threads, std::string &text, std::string &error);

/// The tile IR run_backend lowers (BackendOptions::tiles) for `c` (after
/// compile_front) at `threads` threads per CTA, by the tile stage compile()
/// runs: built, layouts assigned, pipelined and shared memory planned
/// against c.target; nullopt, with the verifier's complaint in `error`,
/// when it does not verify (a compiler bug). `remarks`: the pipeline pass's
/// MmaLoopNotPipelined go to c.diag.
std::optional<TileModule> lowering_tiles(Compilation &c, unsigned threads, std::string &error,
                                        bool remarks = false);

} // namespace etl
