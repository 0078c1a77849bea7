//===- tests/unit/target/fast_path_ptx_test.cpp - The task loop's fast path -===//
//
// What this pins, on the PTX etlc emits (read with ptx_cfg.h):
//
// Each function is checked: the kernel and the `.func` of every task body
// LLVM did not inline.
//
//   host memory  the control block (abort flag, progress words) is
//                host-mapped: a PCIe round trip, and the GPU serves such
//                reads one after another (an H100 took about 1 us per CTA
//                when each read it once before its first task). An access
//                to it is a memory access whose address comes from
//                args[ETL_SLOT_ABORT]. Every read must be behind the poll
//                test (every path back to it crosses a branch on the task
//                count or %globaltimer: lower_kernel.cpp, poll_control and
//                spin_abort_flag), in the task loop and in spin-waits (loops
//                that back off with `nanosleep`) alike, and none may run once
//                per launch; a store (posted, nothing waits for it) may also
//                be outside every loop (the progress word at the end). The
//                persistent loop must have a cycle that touches none. Atomics
//                that raise the flag are exempt: they are the error path of a
//                failed task.
//   prefetch     the next static-queue entry (a load from args[ETL_SLOT_QUEUE]
//                inside the loop) is loaded before the task runs and read only
//                after a bar.sync, so its latency hides behind the task.
//   codegen      fused multiply-add by default (`fma.rn.f32`, `mul.f32` without
//                `.rn`), none with --fmad=false; threads per CTA chosen from the
//                largest tile (.maxntid), `--threads` overriding it;
//                `.minnctapersm 1`; dynamic (extern) shared memory.
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"
#include "etl_abi.h"
#include "ptx_cfg.h"
#include "ptx_programs.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace etl;
using namespace etl::ptxcheck;

namespace {

std::string write_program(const std::string &name, const std::string &text) {
  fs::path p = fs::temp_directory_path() / ("etl-fastpath-" + std::to_string(getpid()) + name);
  std::ofstream(p) << text;
  return p.string();
}

struct FastPath {
  const Kernel &k;

  bool memory_access(const Insn &i) const {
    return (starts_with(i.op, "ld.") || starts_with(i.op, "st.") || starts_with(i.op, "atom.") ||
            starts_with(i.op, "red.")) &&
           !has(i.op, ".param") && !has(i.op, ".shared");
  }
  bool from_slot(const Insn &i, long slot) const {
    size_t a = starts_with(i.op, "st.") || starts_with(i.op, "red.") ? 0 : 1;
    if (a >= i.operands.size())
      return false;
    std::string r = Kernel::address_reg(i.operands[a]);
    return !r.empty() && !k.is_args_pointer(r) && k.slots_of(r).count(slot);
  }
  bool host_access(const Insn &i) const { return memory_access(i) && from_slot(i, ETL_SLOT_ABORT); }
  /// Does `reg`'s value derive from an instruction with `pred`?
  bool derives(const std::string &reg, const std::function<bool(const Insn &)> &pred) const {
    std::set<std::string> seen;
    std::vector<std::string> work{reg};
    while (!work.empty()) {
      std::string r = work.back();
      work.pop_back();
      if (!seen.insert(r).second)
        continue;
      auto d = k.defs.find(r);
      if (d == k.defs.end())
        continue;
      for (int di : d->second) {
        const Insn &x = k.insns[size_t(di)];
        if (pred(x))
          return true;
        for (const std::string &u : k.uses(x))
          work.push_back(u);
      }
    }
    return false;
  }
  /// A conditional branch on the poll test: the clock or the task count.
  bool poll_branch(const Insn &i) const {
    if (!starts_with(i.op, "bra") || i.guard.empty())
      return false;
    return derives(i.guard, [](const Insn &x) {
      return has(x.text, "%globaltimer") ||
             (starts_with(x.op, "setp.") && x.operands.size() == 3 &&
              (x.operands[2] == "16" || x.operands[2] == "15" || x.operands[2] == "17"));
    });
  }
  /// The smallest natural loop holding block `b`, or null.
  const std::set<int> *innermost(const std::vector<std::set<int>> &loops, int b) const {
    const std::set<int> *best = nullptr;
    for (const std::set<int> &l : loops)
      if (l.count(b) && (!best || l.size() < best->size()))
        best = &l;
    return best;
  }
  /// Block `b` is in a wait: its innermost loop backs off with `nanosleep`
  /// itself (not only in a loop nested inside it).
  bool waiting(const std::vector<std::set<int>> &loops, int b) const {
    const std::set<int> *l = innermost(loops, b);
    if (!l)
      return false;
    for (int x : *l)
      for (int i : k.blocks[size_t(x)].insns)
        if (starts_with(k.insns[size_t(i)].op, "nanosleep") && innermost(loops, x) == l)
          return true;
    return false;
  }
  /// Loop `l` has a cycle from its header back to it, through a bar.sync,
  /// that enters no block of `avoid`.
  bool cycle_avoiding(const std::set<int> &l, const std::set<int> &avoid) const {
    int header = -1;
    for (int b : l)
      for (int p : k.blocks[size_t(b)].preds)
        if (!l.count(p))
          header = b;
    if (header < 0 || avoid.count(header))
      return false;
    // Depth-first over (block, barrier seen) states.
    std::set<std::pair<int, bool>> seen;
    std::vector<std::pair<int, bool>> work{{header, false}};
    while (!work.empty()) {
      auto [b, bar] = work.back();
      work.pop_back();
      for (int i : k.blocks[size_t(b)].insns)
        bar |= starts_with(k.insns[size_t(i)].op, "bar.sync");
      for (int s : k.blocks[size_t(b)].succs) {
        if (!l.count(s) || avoid.count(s))
          continue;
        if (s == header && bar)
          return true;
        if (s != header && seen.insert({s, bar}).second)
          work.push_back({s, bar});
      }
    }
    return false;
  }
};

struct Findings {
  int polled = 0, once = 0, spinning = 0, prefetches = 0;
  bool host_free_cycle = false;
  std::vector<std::string> errors;
};

Findings check_fast_path(const Kernel &k) {
  FastPath fp{k};
  Findings f;
  auto where = [](const Insn &i) { return "line " + std::to_string(i.line) + ": " + i.text; };
  std::vector<std::set<int>> loops = k.loops();
  std::set<int> host_blocks;
  std::set<const std::set<int> *> task_loops; // loops that poll
  for (size_t n = 0; n < k.insns.size(); ++n) {
    const Insn &i = k.insns[n];
    if (fp.memory_access(i) && fp.from_slot(i, ETL_SLOT_QUEUE) && fp.innermost(loops, i.block) &&
        starts_with(i.op, "ld.")) {
      // The prefetch: its value is read after the task's barrier.
      f.prefetches++;
      std::set<std::string> copies;
      for (const std::string &d : Kernel::dests(i))
        copies.insert(d);
      for (bool grew = true; grew;) { // registers the value is moved into
        grew = false;
        for (const Insn &x : k.insns)
          if (starts_with(x.op, "mov.") && x.operands.size() == 2 && copies.count(x.operands[1]))
            grew |= copies.insert(x.operands[0]).second;
      }
      auto use = [&](const Insn &x) {
        if (starts_with(x.op, "mov.") && x.operands.size() == 2 && copies.count(x.operands[1]))
          return false;
        for (const std::string &u : k.uses(x))
          if (copies.count(u))
            return true;
        return false;
      };
      auto barrier = [](const Insn &x) { return starts_with(x.op, "bar.sync"); };
      std::string why;
      if (!k.every_path_forward(int(n), barrier, use, why))
        f.errors.push_back("the queue entry loaded at " + where(i) + " is used at " + why +
                           " before a bar.sync: the load is not a prefetch");
    }
    if (!fp.host_access(i))
      continue;
    host_blocks.insert(i.block);
    if (starts_with(i.op, "atom.") || starts_with(i.op, "red."))
      continue; // raising the abort flag: the error path
    bool read = starts_with(i.op, "ld.");
    if (!fp.innermost(loops, i.block) && !read) {
      f.once++;
      continue;
    }
    std::string why;
    auto poll = [&](const Insn &x) { return fp.poll_branch(x); };
    bool spin = fp.innermost(loops, i.block) && fp.waiting(loops, i.block);
    if (k.every_path_back(
            int(n), poll, [](const Insn &) { return false; }, why)) {
      f.polled++;
      if (spin)
        f.spinning++;
      else
        task_loops.insert(fp.innermost(loops, i.block));
    } else {
      f.errors.push_back(std::string("host-mapped ") + (read ? "read" : "access") +
                         (spin                           ? " in a spin-wait"
                          : fp.innermost(loops, i.block) ? " on the task fast path"
                                                         : " once per launch") +
                         " at " + where(i) + " (a path back reaches " + why +
                         " without the poll test)");
    }
  }
  // Each loop that polls has a cycle through a bar.sync (a task) and no
  // host access: the fast path.
  f.host_free_cycle = !task_loops.empty();
  for (const std::set<int> *l : task_loops)
    f.host_free_cycle &= fp.cycle_avoiding(*l, host_blocks);
  return f;
}

std::string maxntid(const std::string &ptx) {
  size_t at = ptx.find(".maxntid ");
  return at == std::string::npos ? "" : ptx.substr(at + 9, ptx.find(',', at) - at - 9);
}

/// A hand-written etl_main for the checker's own tests: the header, the
/// argument block's pointer in %rd2, then `body`, then `ret`.
std::string synthetic_kernel(const std::string &body) {
  return R"(.version 7.8
.target sm_90
.address_size 64
.visible .entry etl_main(
	.param .u64 etl_main_param_0
)
{
	ld.param.u64 	%rd1, [etl_main_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
)" + body +
         "\tret;\n}\n";
}

} // namespace

TEST_CASE("fast path: a host access in the task loop without the poll test is found") {
  // The task loop reads the abort flag (args[3]) every iteration: no poll.
  Kernel k = parse_kernel(synthetic_kernel(R"($L__BB0_1:
	ld.global.u64 	%rd3, [%rd2+24];
	ld.volatile.u32 	%r1, [%rd3];
	bar.sync 	0;
	setp.eq.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_1;
)"));
  Findings f = check_fast_path(k);
  CHECK(f.errors.size() == 1);
  CHECK(f.polled == 0);
  CHECK(!f.host_free_cycle);
}

TEST_CASE("fast path: a host read once per launch or on every spin is found") {
  // Thread 0 reads its progress word (args[3] + 64) before the task loop,
  // and a spin-wait reads the abort flag (args[3]) on every turn.
  Kernel k = parse_kernel(synthetic_kernel(R"(	ld.global.u64 	%rd3, [%rd2+24];
	ld.volatile.u32 	%r1, [%rd3+64];
$L__BB0_1:
	ld.global.u64 	%rd4, [%rd2+24];
	ld.volatile.u32 	%r2, [%rd4];
	nanosleep.u32 	64;
	setp.eq.s32 	%p1, %r2, 0;
	@%p1 bra 	$L__BB0_1;
	st.volatile.u32 	[%rd3+64], %r1;
)"));
  Findings f = check_fast_path(k);
  REQUIRE(f.errors.size() == 2);
  CHECK(f.errors[0].find("host-mapped read once per launch") != std::string::npos);
  CHECK(f.errors[1].find("host-mapped read in a spin-wait") != std::string::npos);
  CHECK(f.once == 1); // the store at the end is allowed
  CHECK(f.spinning == 0);
}

TEST_CASE("fast path: no program touches host-mapped memory on a task's fast path") {
  std::vector<fs::path> list = programs();
  REQUIRE(list.size() >= 6);
  for (const fs::path &src : list)
    for (std::string target : {"sm_90", "sm_80"}) {
      CAPTURE(src.filename().string());
      CAPTURE(target);
      // the kernel and every task body LLVM left a `.func`: the rules hold
      // in each; the persistent loop and its prefetch are the kernel's
      Findings f;
      for (const Kernel &k : parse_functions(program_ptx(src.string(), target))) {
        Findings g = check_fast_path(k);
        for (const std::string &e : g.errors)
          FAIL_CHECK(k.name << ": " << e);
        f.polled += g.polled;
        f.once += g.once;
        f.spinning += g.spinning;
        if (k.entry) {
          f.prefetches = g.prefetches;
          f.host_free_cycle = g.host_free_cycle;
        }
      }
      CHECK(f.host_free_cycle);
      CHECK(f.polled >= 2); // the abort flag read and the progress store
      CHECK(f.once >= 1);   // the progress store at the end
      CHECK(f.prefetches >= 2);
      // a program with events reads the abort flag in its spin-waits, behind
      // the clock test
      std::ifstream in(src);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find("\n  event ") != std::string::npos)
        CHECK(f.spinning >= 1);
    }
}

TEST_CASE("codegen: multiply-add contraction is on by default and off with --fmad=false") {
  std::string src = (fs::path(ETL_SOURCE_DIR) / "examples/rmsnorm_rope/rmsnorm_rope.etl").string();
  for (std::string target : {"sm_90", "sm_80"}) {
    CAPTURE(target);
    std::string fused = compile_ptx(src, target);
    CHECK(has(fused, "fma.rn.f32"));
    CHECK(!has(fused, "mul.rn.f32"));
    std::string exact = compile_ptx(src, target, 0, /*fmad=*/false);
    CHECK(!has(exact, "fma.rn.f32"));
    CHECK(has(exact, "mul.rn.f32"));
  }
}

TEST_CASE("codegen: threads per CTA from the largest tile, --threads overrides") {
  auto program = [](int cols) {
    return "kernel k<M: dim>(x: tensor<f32>[M, " + std::to_string(cols) +
           "], y: tensor<f32>[M]) {\n  task t[i in 0 .. cdiv(M, 16)] {\n    let a = load(x[i * 16 "
           ".. +16, 0 .. +" +
           std::to_string(cols) + "]);\n    store(y[i * 16 .. +16], sum(a, axis = 1));\n  }\n}\n";
  };
  std::string small = write_program("small.etl", program(64));  // 1024 elements
  std::string large = write_program("large.etl", program(128)); // 2048 elements
  for (std::string target : {"sm_90", "sm_80", "sm_86"}) {
    CAPTURE(target);
    std::string ptx = compile_ptx(small, target);
    CHECK(maxntid(ptx) == "128");
    CHECK(has(ptx, ".minnctapersm 1"));
    // Dynamic shared memory: one extern array, no static one.
    CHECK(has(ptx, ".extern .shared .align 16 .b8 __etl_smem[];"));
    CHECK(ptx.find("__etl_smem[") == ptx.find("__etl_smem[]"));
    CHECK(maxntid(compile_ptx(large, target)) == "256");
    CHECK(maxntid(compile_ptx(large, target, 64)) == "64");
    CHECK(maxntid(compile_ptx(small, target, 512)) == "512");
  }
  fs::remove(small);
  fs::remove(large);
}
