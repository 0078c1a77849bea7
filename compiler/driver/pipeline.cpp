//===- driver/pipeline.cpp - The compiler pipeline ------------------------===//
//
// What this owns: compile() and compile_front(), the one place that knows
// the order of the stages. Each stage is a free function from its folder;
// this file only sequences them, stops at the requested dump and times them.
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"

#include "artifact/artifact.h"
#include "ast/walk.h"
#include "cost/cost.h"
#include "driver/defines.h"
#include "driver/metadata.h"
#include "driver/time.h"
#include "driver/tunables.h"
#include "driver/variants.h"
#include "frontend/parser.h"
#include "inline/barrier.h"
#include "lower/backend.h"
#include "lower/registers.h"
#include "schedule/schedule.h"
#include "sema/check.h"
#include "target/target.h"
#include "tile/passes.h"

#include "etl_abi.h"

#include <llvm/Config/llvm-config.h>

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/thread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>

namespace etl {
namespace {

/// The stack every compilation runs on. The parser bounds the depth of what
/// it builds (frontend/parser.cpp), and the stages after it recurse at most
/// that deep, a few frames a level; this size covers that with a wide margin
/// in every build, ASan's -O0 frames included, whatever stack the caller has
/// (clang runs its work on a thread of known size for the same reason). The
/// memory is reserved, not touched: a shallow program uses a few pages.
constexpr unsigned kCompilerStackBytes = 256u << 20;

/// One thread with that stack, started at the first compilation and kept
/// for the process: a thread per compilation paid for fresh zeroed stack
/// pages every time (14 % of a fuzzer's time). Compilations from several
/// threads take turns on it. Never destroyed (it waits for work when the
/// process exits).
class CompilerThread {
public:
  static CompilerThread &get() {
    static CompilerThread *t = new CompilerThread; // NOLINT: lives as long as the process
    return *t;
  }
  static bool on_it() { return on_it_; }

  void run(const std::function<void()> &job) {
    std::lock_guard<std::mutex> turn(turn_);
    std::unique_lock<std::mutex> lock(mu_);
    job_ = &job;
    done_ = false;
    cv_.notify_all();
    cv_.wait(lock, [&] { return done_; });
  }

private:
  CompilerThread() : worker_(std::optional<unsigned>(kCompilerStackBytes), [this] { loop(); }) {
    worker_.detach();
  }
  void loop() {
    on_it_ = true;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return job_ != nullptr; });
      (*job_)();
      job_ = nullptr;
      done_ = true;
      cv_.notify_all();
    }
  }

  static thread_local bool on_it_;
  std::mutex turn_; ///< one compilation at a time
  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void()> *job_ = nullptr;
  bool done_ = false;
  llvm::thread worker_;
};
thread_local bool CompilerThread::on_it_ = false;

/// f() on the compiler's thread (or directly when already on it);
/// exceptions reach the caller.
template <class F> auto on_compiler_stack(F &&f) -> decltype(f()) {
  if (CompilerThread::on_it())
    return f();
  std::optional<decltype(f())> result;
  std::exception_ptr error;
  CompilerThread::get().run([&] {
    try {
      result.emplace(f());
    } catch (...) {
      error = std::current_exception();
    }
  });
  if (error)
    std::rethrow_exception(error);
  return std::move(*result);
}

/// Times the stages for --time-passes.
class PassTimer {
public:
  template <class F> auto run(const char *name, F &&f) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = f();
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    times_.emplace_back(name, ms);
    return r;
  }
  void print(std::ostream &os) const {
    double total = 0;
    os << "===-- etlc stage times --===\n";
    for (const auto &[name, ms] : times_) {
      os << "  " << std::left << std::setw(14) << name << std::right << std::fixed
         << std::setprecision(2) << std::setw(10) << ms << " ms\n";
      total += ms;
    }
    os << "  " << std::left << std::setw(14) << "total" << std::right << std::setw(10) << total
       << " ms\n";
  }

private:
  std::vector<std::pair<std::string, double>> times_;
};

bool is_gpu_target(const std::string &t) {
  const TargetDesc *d = find_target(t);
  return d && d->kind == TargetKind::Nvptx;
}

bool front_stages(Compilation &c, const std::string &stop_after, PassTimer &timer) {
  c.program = timer.run("parse", [&] { return parse_program(c.file, c.sm, c.diag); });
  if (!c.diag.has_errors() && !c.defines.empty())
    apply_defines(*c.program, c.defines, c.diag);
  if (!c.diag.has_errors() && !c.variant_defines.empty())
    apply_defines(*c.program, c.variant_defines, c.diag, c.variant_origin);
  if (c.diag.has_errors() || stop_after == "ast")
    return !c.diag.has_errors();
  std::vector<std::string> search_path = c.import_dirs;
  search_path.push_back(c.stdlib_dir);
  if (!timer.run("import", [&] { return load_imports(*c.program, c.sm, c.diag, search_path); }))
    return false;
  if (!timer.run("inline", [&] { return inline_fns(*c.program, c.sm, c.diag, c.inline_sites); }))
    return false;
  if (c.barrier_events)
    timer.run("barrier", [&] { return make_barrier_events(*c.program); });
  if (stop_after == "inline")
    return true;
  if (!timer.run("sema", [&] { return check_program(*c.program, c.diag, c.target); }))
    return false;
  if (c.program->kernels.size() != 1) {
    SourceRange r;
    r.begin = c.sm.loc(c.file, 0);
    r.end = r.begin;
    if (c.program->kernels.empty())
      c.diag.error(DiagId::NoKernel, r);
    else
      c.diag.error(DiagId::MultipleKernels, c.program->kernels[1].name_range,
                   {c.program->kernels[1].name});
    return false;
  }
  c.graph = timer.run("taskgraph", [&] { return build_task_graph(c.program->kernels[0], c.diag); });
  if (c.diag.has_errors())
    return false;
  return timer.run("schedule", [&] { return schedule_task_graph(c.graph, c.diag); });
}

/// The front stages, then the call-chain notes of diagnostics in inlined fns.
bool front(Compilation &c, const std::string &stop_after, PassTimer &timer) {
  bool ok = front_stages(c, stop_after, timer);
  c.inline_sites.add_notes(c.diag);
  return ok;
}

/// tile/sums.cpp's loop sums, unless ETL_TILE_SUMS=0, then tile/pipeline.cpp's
/// rings, unless ETL_TILE_RING=0, TMA rings as ETL_TILE_TMA says (seams for tests
/// that compare a pipelined loop with its plain form); a MmaLoopNotPipelined
/// remark to `remarks` (when given) for each K loop left as it was.
void pipeline(TileModule &m, const TargetInfo &target, Diag *remarks = nullptr) {
  const char *sums = std::getenv("ETL_TILE_SUMS");
  if (!(sums && std::string(sums) == "0"))
    hoist_loop_sums(m);
  const char *env = std::getenv("ETL_TILE_RING");
  if (env && std::string(env) == "0")
    return;
  // ETL_TILE_TMA=1: TMA rings for any target list (the sim runs them);
  // =0: none, sm_90a's code keeps its cp.async rings.
  TargetInfo t = target;
  if (const char *tma = std::getenv("ETL_TILE_TMA"))
    t.tma = std::string(tma) == "1";
  for (const LoopNotPipelined &l : pipeline_loops(m, t))
    if (remarks)
      remarks->remark(DiagId::MmaLoopNotPipelined, l.loc, {l.var, l.why});
}

/// What one run of the tile stage reports besides the IR.
struct TileReport {
  /// --emit=tile: the IR as built and as lowered, in `text`; the layout
  /// pass's remarks (NarrowAccess) go to c.diag, not only the pipeline's.
  bool dump = false;
  /// The pipeline pass's MmaLoopNotPipelined to c.diag.
  bool pipeline_remarks = false;
  /// The PadNotIdentity warnings to c.diag (once per compile).
  bool pad_check = false;
  std::string text;
  /// The verifier's first complaint and the step after which it came (a
  /// compiler bug: the program passed every check).
  std::string error;
};

/// The tile stage, the one sequence --emit=tile and the back end share:
/// build, assign layouts, pipeline, plan shared memory, the IR verified
/// after each step but the last, each step timed for --time-passes
/// (tile-build, tile-layout, tile-pipeline, tile-smem). nullopt, with
/// r.error, when the IR does not verify.
std::optional<TileModule> tile_passes(Compilation &c, unsigned threads, PassTimer &timer,
                                      TileReport &r) {
  const KernelDecl &k = c.program->kernels[0];
  TileModule m =
      timer.run("tile-build", [&] { return build_tile_ir(k, c.graph, *c.program, threads); });
  auto verified = [&](const char *after) {
    std::vector<std::string> errs = verify_tile(m);
    if (!errs.empty())
      r.error = std::string(after) + ": " + errs[0];
    return errs.empty();
  };
  if (!verified("as built"))
    return std::nullopt;
  if (r.dump)
    r.text = "// ---- tile IR as built ----\n" + print_tile(m);
  Diag quiet(c.sm); // the lowering's compile reports no layout remarks
  if (r.pad_check)
    timer.run("pad-check", [&] { // reductions that read a load's padding
      analyse_memory(m, k, c.graph, r.dump ? c.diag : quiet);
      warn_pad_reductions(m, c.diag);
      return 0;
    });
  for (TileFunc &f : m.funcs)
    f.wgmma = c.target.wgmma;
  timer.run("tile-layout", [&] {
    assign_layouts(m, k, c.graph, r.dump ? c.diag : quiet);
    return 0;
  });
  if (!verified("after layout assignment"))
    return std::nullopt;
  timer.run("tile-pipeline", [&] {
    pipeline(m, c.target, r.pipeline_remarks ? &c.diag : nullptr);
    return 0;
  });
  if (!verified("after pipelining"))
    return std::nullopt;
  timer.run("tile-smem", [&] {
    plan_shared(m, c.target);
    return 0;
  });
  if (r.dump)
    r.text += "\n// ---- after layout assignment ----\n" + print_tile(m);
  return m;
}

/// A SmemOverBudget error at the largest buffer of each body whose
/// shared-memory plan (tile/smem.cpp) exceeds the targets' budget; false if
/// there is one. (--emit=tile prints such a plan and says so instead.)
bool smem_within_budget(const TileModule &m, Diag &diag) {
  bool ok = true;
  for (const TileFunc &f : m.funcs) {
    if (!smem_over_budget(f) || f.smem.empty())
      continue;
    auto smaller = [](const SmemBuffer &x, const SmemBuffer &y) { return x.bytes < y.bytes; };
    const SmemBuffer &b = *std::max_element(f.smem.begin(), f.smem.end(), smaller);
    diag.error(DiagId::SmemOverBudget, b.loc,
               {f.name, std::to_string(f.smem_bytes), std::to_string(f.smem_budget),
                b.what.substr(0, b.what.find(' ')), std::to_string(b.bytes)});
    ok = false;
  }
  return ok;
}

/// The tile stage as every compile runs it: tile_passes, then a
/// SmemOverBudget error per body over the budget (`fits` false; not for a
/// dump, which prints the plan) and, when it fits, the spill warnings.
std::optional<TileModule> tile_stage(Compilation &c, unsigned threads, PassTimer &timer,
                                     TileReport &tile, bool &fits) {
  std::optional<TileModule> tiles = tile_passes(c, threads, timer, tile);
  fits = !tiles || tile.dump || smem_within_budget(*tiles, c.diag);
  if (tiles && fits)
    timer.run("registers", [&] {
      warn_register_spills(c.program->kernels[0], threads, c.target, c.diag, *tiles);
      return true;
    });
  return tiles;
}

} // namespace

bool check_source(Compilation &c, const std::vector<std::string> &targets,
                  std::optional<TileModule> &tiles) {
  return on_compiler_stack([&] {
    PassTimer timer;
    if (!front(c, "", timer) || c.diag.has_errors())
      return false;
    TileReport r;
    r.pad_check = true;
    bool fits = true;
    tiles = tile_stage(c, pick_threads(c.program->kernels[0], targets), timer, r, fits);
    return tiles && fits && !c.diag.has_errors();
  });
}

std::optional<TileModule> lowering_tiles(Compilation &c, unsigned threads, std::string &error,
                                        bool remarks) {
  PassTimer timer;
  TileReport r;
  r.pipeline_remarks = remarks;
  std::optional<TileModule> m = tile_passes(c, threads, timer, r);
  error = r.error;
  return m;
}

bool emit_tile(Compilation &c, unsigned threads, std::string &text, std::string &error) {
  return on_compiler_stack([&] {
    PassTimer timer;
    TileReport r;
    r.dump = r.pipeline_remarks = true;
    bool ok = tile_passes(c, threads, timer, r).has_value();
    text = r.text;
    error = r.error.empty() ? "" : "tile IR " + r.error;
    return ok;
  });
}

void run_on_compiler_stack(const std::function<void()> &f) {
  on_compiler_stack([&] {
    f();
    return true;
  });
}

bool compile_front(Compilation &c, const std::string &stop_after) {
  return on_compiler_stack([&] {
    PassTimer timer;
    return front(c, stop_after, timer);
  });
}

std::string version_text() {
  return "etlc " ETL_VERSION " (artifact format " + std::to_string(ETL_ARTIFACT_VERSION) +
         ", LLVM " + std::to_string(LLVM_VERSION_MAJOR) + ")";
}

std::string target_help() {
  std::string r = "Comma-separated targets:";
  for (const TargetDesc &t : all_targets())
    r += std::string(" ") + t.name + " (" + t.what + "),";
  r.back() = '.';
  return r + " Default: sm_90,sim";
}

std::string gpu_help() {
  std::string r = "--emit=cost: the GPU whose peaks give the speed of light:";
  for (const GpuSpec &g : known_gpus())
    r += std::string(" ") + g.id + ",";
  r.back() = '.';
  return r + " Their numbers and sources: compiler/cost/gpus.def";
}

namespace {

int compile_program(const CompileOptions &opts, Compilation &c, PassTimer &timer,
                    std::ostream &out, std::string *bytes, ArtifactMeta *meta_out);
int compile_variants(const CompileOptions &opts, Compilation &c, PassTimer &timer);

/// compile() up to rendering: every error goes to c.diag.
int compile_into(const CompileOptions &opts, Compilation &c, PassTimer &timer, std::ostream &out) {
  const SourceRange none;
  // `--emit=KIND -o FILE`: the dump goes to FILE (written atomically), one
  // target's worth: several would be concatenated into one file.
  if (!opts.emit.empty() && !opts.output.empty()) {
    if (opts.emit == "llvm" || opts.emit == "ptx") {
      std::vector<std::string> ts;
      for (const std::string &t : opts.targets)
        if (opts.emit == "llvm" || is_gpu_target(t))
          ts.push_back(t);
      if (ts.size() > 1) {
        std::string list;
        for (size_t i = 0; i < ts.size(); ++i)
          list += (i ? ", " : "") + ts[i];
        c.diag.error(DiagId::EmitSeveralTargets, none,
                     {opts.emit, opts.output, std::to_string(ts.size()), list});
        return kExitUsage;
      }
    }
    CompileOptions to_stream = opts;
    to_stream.output.clear();
    std::ostringstream dump;
    int code = compile_into(to_stream, c, timer, dump);
    if (code != kExitOk)
      return code;
    std::string io_err;
    if (!write_file_atomically(opts.output, dump.str(), io_err)) {
      c.diag.error(DiagId::CannotWriteFile, none, {opts.output, io_err});
      return kExitUsage;
    }
    return kExitOk;
  }
  for (const std::string &t : opts.targets)
    if (!find_target(t)) {
      c.diag.error(DiagId::UnknownTarget, none, {t, target_names()});
      return kExitUsage;
    }
  if ((opts.emit == "ptx" || opts.emit == "time") &&
      !std::any_of(opts.targets.begin(), opts.targets.end(), is_gpu_target)) {
    c.diag.error(DiagId::EmitPtxNeedsGpu, none);
    return kExitUsage;
  }
  if (opts.emit.empty() && opts.output.empty()) {
    c.diag.error(DiagId::NoOutputFile, none);
    return kExitUsage;
  }
  if (!opts.variants.empty())
    return compile_variants(opts, c, timer);
  std::string bytes;
  int code = compile_program(opts, c, timer, out, &bytes, nullptr);
  if (code != kExitOk || !opts.emit.empty())
    return code;
  std::string io_err;
  if (!write_file_atomically(opts.output, bytes, io_err)) {
    c.diag.error(DiagId::CannotWriteFile, none, {opts.output, io_err});
    return kExitUsage;
  }
  return kExitOk;
}

/// One compilation of the program, from reading the source: the --emit
/// dump to `out`, or the artifact's bytes to `bytes` (and its metadata to
/// `meta` when not null).
int compile_program(const CompileOptions &opts, Compilation &c, PassTimer &timer,
                    std::ostream &out, std::string *bytes, ArtifactMeta *meta_out) {
  const SourceRange none;
  std::string io_err;
  if (opts.stdin_text) {
    c.file = c.sm.add("<stdin>", *opts.stdin_text);
  } else if (!c.sm.load(opts.input, c.file, io_err)) {
    c.diag.error(DiagId::CannotReadFile, none, {opts.input, io_err});
    return kExitUsage;
  }

  bool ast_dump = opts.emit == "ast" || opts.emit == "inline";
  // -Werror: a warning is an error too, though the stage that reported it
  // went on.
  bool ok = front(c, ast_dump ? opts.emit : "", timer) && !c.diag.has_errors();
  const std::vector<Diagnostic> &ds = c.diag.diagnostics();
  const int fail =
      std::any_of(ds.begin(), ds.end(), [](const Diagnostic &d) {
            return is_define_error(d.id) || is_variant_usage_error(d.id);
          })
          ? kExitUsage
          : kExitProgramError;
  if (ast_dump && c.program) {
    out << print_ast(*c.program, c.sm);
    return ok ? kExitOk : fail;
  }
  if (!ok)
    return fail;
  if (opts.emit == "tunables") {
    out << print_tunables(*c.program, c.sm);
    return kExitOk;
  }
  // One thread count for every target of the artifact (from all of them,
  // so --emit=ptx and --emit=tile show the kernel the artifact would carry).
  const KernelDecl &k = c.program->kernels[0];
  unsigned threads = opts.threads_per_cta ? opts.threads_per_cta : pick_threads(k, opts.targets);
  // The tile IR, built once: the spill warning reads it, --emit=tile
  // prints it, the back end lowers it.
  TileReport tile;
  tile.dump = opts.emit == "tile";
  tile.pad_check = true;
  tile.pipeline_remarks = opts.emit.empty() || opts.emit == "tile" || opts.emit == "llvm" ||
                          opts.emit == "ptx";
  bool fits = true;
  std::optional<TileModule> tiles = tile_stage(c, threads, timer, tile, fits);
  if (!fits)
    return kExitProgramError;
  if (c.diag.has_errors()) // -Werror
    return fail;
  if (opts.emit == "taskgraph") {
    out << print_task_graph(c.graph);
    return kExitOk;
  }
  if (opts.emit == "dot") {
    out << print_dot(c.graph);
    return kExitOk;
  }
  if (opts.emit == "cost")
    return emit_cost(opts, *c.program, out, c.diag, c.graph);
  if (!tiles) {
    // The program passed every check, so a verifier failure is a compiler bug.
    c.diag.error(DiagId::InternalCompilerError, none, {"tile IR " + tile.error});
    c.diag.note(DiagId::NoteReportBug, none);
    return kExitInternalError;
  }
  if (opts.emit == "tile") {
    out << tile.text;
    return kExitOk;
  }

  std::vector<std::string> targets = opts.targets;
  if (opts.emit == "ptx" || opts.emit == "time") {
    targets.erase(std::remove_if(targets.begin(), targets.end(),
                                 [](const std::string &t) { return !is_gpu_target(t); }),
                  targets.end());
    if (opts.emit == "time") // the model reads the first GPU target's code
      targets.resize(1);
  }
  BackendOptions bopts;
  bopts.threads_per_cta = threads;
  bopts.fmad = opts.fmad;
  bopts.wrap_machine = opts.wrap_machine;
  bopts.target = &c.target; // the whole --target list's, also under --emit=ptx
  bopts.tiles = &*tiles;
  BackendResult be =
      timer.run("backend", [&] { return run_backend(*c.program, k, c.graph, targets, bopts); });
  if (std::getenv("ETL_TILE_DEBUG") && be.ok) // every body: its tile IR, or an error above
    for (const auto &[grp, n] : be.prefetched)
      std::cerr << "lowering " << grp << ": tile IR\n";
  if (std::getenv("ETL_TILE_DEBUG"))
    for (const auto &[grp, n] : be.prefetched)
      if (n)
        std::cerr << "prefetch " << grp << ": " << n << " load(s) before the waits\n";
  if (std::getenv("ETL_TILE_DEBUG"))
    for (const auto &[grp, n] : be.ring_prefetched)
      if (n)
        std::cerr << "ring-prefetch " << grp << ": " << n << " ring stage(s) before the waits\n";
  if (std::getenv("ETL_TILE_DEBUG"))
    for (const auto &[grp, n] : be.pipelined)
      if (n)
        std::cerr << "pipeline " << grp << ": " << n << " load(s) one iteration ahead\n";
  if (std::getenv("ETL_TILE_DEBUG") && be.ok) // sm_90a: each tensor-core dot's instruction
    for (const TileFunc &f : tiles->funcs) {
      std::function<void(const std::vector<TOp> &)> dots = [&](const std::vector<TOp> &body) {
        for (const TOp &op : body) {
          if (f.wgmma && mma_dot(f, op)) {
            const std::string gap = wgmma_gap(f, op);
            const TValue &r = f.values[size_t(op.results[0])];
            std::cerr << "wgmma " << f.name << " line " << op.loc.begin.line << ": "
                      << (gap.empty() ? "wgmma.mma_async m64n" + std::to_string(r.shape[1]) + "k16"
                                      : "mma.sync: " + gap)
                      << "\n";
          }
          dots(op.body);
        }
      };
      dots(f.body);
    }
  for (const BackendRemark &r : be.remarks)
    c.diag.remark(r.id, r.range, r.args);
  if (!be.ok && be.resource_limit) {
    c.diag.error(DiagId::ResourceLimit, none, {be.error});
    return kExitProgramError;
  }
  if (!be.ok) {
    // The program passed every check, so this is a bug of the compiler.
    c.diag.error(DiagId::InternalCompilerError, none, {"code generation failed: " + be.error});
    c.diag.note(DiagId::NoteReportBug, none);
    return kExitInternalError;
  }
  if (opts.emit == "time")
    return emit_time(opts, *c.program, c.graph, be.outputs[0].code, out, c.diag);
  if (opts.emit == "llvm" || opts.emit == "ptx") {
    for (const TargetOutput &o : be.outputs) {
      if (be.outputs.size() > 1)
        out << (opts.emit == "llvm" ? "; " : "// ") << "===-- target " << o.target << " --===\n";
      out << (opts.emit == "llvm" ? o.llvm_ir : o.code);
    }
    return kExitOk;
  }

  *bytes = timer.run("artifact", [&] {
    ArtifactMeta meta = build_metadata(*c.program, k, c.graph, be, c.sm);
    std::vector<std::pair<std::string, std::string>> code;
    for (const TargetOutput &o : be.outputs)
      code.emplace_back(o.target, o.code);
    std::string r = serialize_artifact(meta, code);
    if (meta_out)
      *meta_out = std::move(meta);
    return r;
  });
  return kExitOk;
}

/// `--variant SPEC...`: the program compiled once per variant with its
/// values (driver/variants.h), the variants' artifacts in one.
int compile_variants(const CompileOptions &opts, Compilation &c, PassTimer &timer) {
  const SourceRange none;
  if (!opts.emit.empty()) {
    c.diag.error(DiagId::VariantWithEmit, none, {opts.emit});
    return kExitUsage;
  }
  std::vector<ArtifactVariant> built;
  ArtifactMeta first;
  for (const std::string &text : opts.variants) {
    VariantSpec v;
    std::string why;
    if (!parse_variant(text, v, why)) {
      c.diag.error(DiagId::VariantSyntax, none, {text, why});
      return kExitUsage;
    }
    c.variant_defines = v.defines;
    c.variant_origin = "--variant '" + text + "':";
    c.program.reset();
    c.graph = TaskGraph();
    c.inline_sites = InlineSites();
    ArtifactVariant a;
    ArtifactMeta meta;
    std::ostringstream ignored;
    int code = compile_program(opts, c, timer, ignored, &a.artifact, &meta);
    if (code != kExitOk)
      return code;
    if (!check_variant_dims(v, c.program->kernels[0], c.diag))
      return kExitUsage;
    if (built.empty())
      first = meta;
    else if (std::string d = interface_mismatch(first, meta); !d.empty()) {
      c.diag.error(DiagId::VariantInterface, none, {text, d, opts.variants[0]});
      return kExitProgramError;
    }
    a.label = text;
    a.ranges = v.ranges;
    built.push_back(std::move(a));
  }
  std::string io_err;
  if (!write_file_atomically(opts.output, serialize_variants(built), io_err)) {
    c.diag.error(DiagId::CannotWriteFile, none, {opts.output, io_err});
    return kExitUsage;
  }
  return kExitOk;
}

/// Make's escapes for a path in a rule: `$` doubled, spaces, `#` and `:`
/// behind a backslash.
std::string make_escape(const std::string &path) {
  std::string r;
  for (char ch : path) {
    if (ch == '$')
      r += '$';
    else if (ch == ' ' || ch == '#' || ch == ':')
      r += '\\';
    r += ch;
  }
  return r;
}

/// -MD: the input and every module the compilation read.
int write_dep_file(const CompileOptions &opts, Compilation &c) {
  const SourceRange none;
  std::vector<std::string> deps;
  for (FileId f = 0; f < c.sm.file_count(); ++f) {
    const std::string &p = c.sm.path(f);
    if (!(opts.stdin_text && f == c.file) && std::find(deps.begin(), deps.end(), p) == deps.end())
      deps.push_back(p);
  }
  std::string path = opts.dep_file.empty() ? opts.output + ".d" : opts.dep_file;
  std::string io_err;
  if (!write_file_atomically(path, depfile_text(opts.output, deps), io_err)) {
    c.diag.error(DiagId::CannotWriteFile, none, {path, io_err});
    return kExitUsage;
  }
  return kExitOk;
}

} // namespace

std::string depfile_text(const std::string &target, const std::vector<std::string> &deps) {
  std::string r = make_escape(target) + ":";
  for (const std::string &d : deps)
    r += " \\\n  " + make_escape(d);
  r += "\n";
  for (size_t i = 1; i < deps.size(); ++i)
    r += "\n" + make_escape(deps[i]) + ":\n";
  return r;
}

int compile(const CompileOptions &opts, std::ostream &out, std::ostream &err) {
  Compilation c;
  c.import_dirs = opts.import_dirs;
  c.defines = opts.defines;
  c.barrier_events = opts.barrier_events;
  c.target = target_info(opts.targets);
  c.diag.set_warning_mode(opts.no_warnings ? Diag::WarningMode::Ignore
                          : opts.werror    ? Diag::WarningMode::AsError
                                           : Diag::WarningMode::Report);
  PassTimer timer;
  int code = kExitOk;
  try {
    code = on_compiler_stack([&] { return compile_into(opts, c, timer, out); });
    if (code == kExitOk && opts.write_deps) {
      if (opts.output.empty()) {
        c.diag.error(DiagId::BadCommandLine, SourceRange(), {"-MD and -MF need -o FILE"});
        code = kExitUsage;
      } else {
        code = write_dep_file(opts, c);
      }
    }
  } catch (const std::exception &e) {
    // No stage throws on a bad program; an exception escaping one is a bug.
    c.diag.error(DiagId::InternalCompilerError, SourceRange(), {e.what()});
    c.diag.note(DiagId::NoteReportBug, SourceRange());
    code = kExitInternalError;
  }
  err << render_diagnostics(c.diag, opts.diag_format, opts.color, ETL_VERSION);
  if (opts.time_passes)
    timer.print(err);
  return code;
}

} // namespace etl
