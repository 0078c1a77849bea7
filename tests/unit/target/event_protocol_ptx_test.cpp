//===- tests/unit/target/event_protocol_ptx_test.cpp - The PTX event protocol//
//
// What this pins: the memory ordering of notify and wait in the PTX etlc
// emits, so that a refactor of target/nvptx.cpp or lower/ cannot weaken it
// without a failing test. Every example and every runtime test program is
// compiled for sm_90 (as `etlc compile --emit=ptx --target sm_90` does) and
// its kernel and every task body LLVM left a `.func` (checked as a kernel of
// its own, its thread-id parameter as %tid.x) read with ptx_cfg.h. An event counter access is a
// memory access whose address is computed from args[ETL_SLOT_EVENTS]. The rules:
//
//   wait    every load of an event counter is `ld.acquire.gpu`; the program
//           has a spin loop (a natural loop with `nanosleep`) that re-reads a
//           counter; after every such load, each path meets a `bar.sync`
//           before a store to global memory (the task body's) or a counter
//           update, so the other threads of the CTA see what thread 0
//           acquired.
//   notify  every counter update is an `atom` with release semantics at GPU
//           scope (`.release.gpu` or `.acq_rel.gpu`); each path back from a
//           notify meets `fence.acq_rel.gpu` before a `bar.sync` or the
//           entry; each path back from that fence meets a `bar.sync` (which
//           publishes every thread's stores of the task) before the entry or
//           a store to global memory by the CTA's threads, and crosses a
//           branch taken only by thread 0 (`%tid.x == 0`) on the way.
//
// A counter update that adds anything but -1 is not a notify but a data-
// dependent range's expander settling its tokens (it has written nothing to
// publish): it must still be a release atom, and is exempt from the rest.
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"
#include "etl_abi.h"
#include "ptx_cfg.h"
#include "ptx_programs.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace fs = std::filesystem;
using namespace etl;
using namespace etl::ptxcheck;

namespace {

/// What the rules need to know about the kernel's instructions.
struct Protocol {
  const Kernel &k;

  bool memory_access(const Insn &i) const {
    return (starts_with(i.op, "ld.") || starts_with(i.op, "st.") || starts_with(i.op, "atom.") ||
            starts_with(i.op, "red.")) &&
           i.op.find(".param") == std::string::npos && i.op.find(".shared") == std::string::npos;
  }
  std::string address(const Insn &i) const {
    size_t a = starts_with(i.op, "st.") || starts_with(i.op, "red.") ? 0 : 1;
    return a < i.operands.size() ? Kernel::address_reg(i.operands[a]) : "";
  }
  bool from_slot(const Insn &i, long slot) const {
    std::string r = address(i);
    return !r.empty() && !k.is_args_pointer(r) && k.slots_of(r).count(slot);
  }
  bool counter_load(const Insn &i) const {
    return memory_access(i) && starts_with(i.op, "ld.") && from_slot(i, ETL_SLOT_EVENTS);
  }
  bool counter_update(const Insn &i) const {
    return memory_access(i) && (starts_with(i.op, "atom.") || starts_with(i.op, "red.")) &&
           from_slot(i, ETL_SLOT_EVENTS);
  }
  /// A notify adds -1; the expander of a data-dependent range adds n - 1
  /// tokens (lower_dynamic.cpp, "Settle"): bookkeeping that publishes nothing.
  bool adds_minus_one(const Insn &i) const {
    if (i.operands.size() != 3)
      return false;
    const std::string &v = i.operands[2];
    if (v == "-1" || v == "4294967295")
      return true;
    auto d = k.defs.find(v);
    if (d == k.defs.end())
      return false;
    for (int di : d->second) {
      const Insn &m = k.insns[size_t(di)];
      if (!starts_with(m.op, "mov.") || m.operands.size() != 2 ||
          (m.operands[1] != "-1" && m.operands[1] != "4294967295"))
        return false;
    }
    return true;
  }
  static bool acquire_load(const Insn &i) {
    return starts_with(i.op, "ld.acquire.gpu.") || starts_with(i.op, "ld.acquire.sys.");
  }
  static bool release_atom(const Insn &i) {
    bool sem =
        i.op.find(".release.") != std::string::npos || i.op.find(".acq_rel.") != std::string::npos;
    bool scope = i.op.find(".gpu.") != std::string::npos || i.op.find(".sys.") != std::string::npos;
    return sem && scope;
  }
  static bool fence(const Insn &i) {
    return i.op == "fence.acq_rel.gpu" || i.op == "fence.sc.gpu" || i.op == "fence.acq_rel.sys" ||
           i.op == "fence.sc.sys";
  }
  static bool barrier(const Insn &i) {
    return starts_with(i.op, "bar.sync") || starts_with(i.op, "barrier.sync");
  }
  /// A store to global memory by the task's threads: not the timeline's or
  /// the control block's (thread 0 writes those, after the barrier).
  bool task_store(const Insn &i) const {
    return memory_access(i) && starts_with(i.op, "st.") && !from_slot(i, ETL_SLOT_TIMELINE) &&
           !from_slot(i, ETL_SLOT_ABORT);
  }
  /// `@%p bra` where %p is `%tid.x == 0` or `!= 0`: the successor block that
  /// only thread 0 reaches, or -1.
  int thread0_successor(int block) const {
    const Block &b = k.blocks[size_t(block)];
    if (b.insns.empty())
      return -1;
    const Insn &br = k.insns[size_t(b.insns.back())];
    if (!starts_with(br.op, "bra") || br.guard.empty() || b.succs.size() != 2)
      return -1;
    auto d = k.defs.find(br.guard);
    if (d == k.defs.end() || d->second.size() != 1)
      return -1;
    const Insn &setp = k.insns[size_t(d->second[0])];
    bool eq = starts_with(setp.op, "setp.eq."), ne = starts_with(setp.op, "setp.ne.");
    if ((!eq && !ne) || setp.operands.size() != 3 || setp.operands[2] != "0")
      return -1;
    if (!k.is_tid(setp.operands[1]))
      return -1;
    // taken when the guard holds: thread 0 takes it iff (eq xor negated)
    bool taken_by_0 = eq != br.negated;
    return taken_by_0 ? b.succs[0] : b.succs[1];
  }
  /// Every path back from `fence_at` to a `bar.sync` crosses a thread-0-only edge.
  bool only_thread0(int fence_at, std::string &why) const {
    std::set<std::pair<int, bool>> seen;
    std::vector<std::pair<int, bool>> work{{k.insns[size_t(fence_at)].block, false}};
    while (!work.empty()) {
      auto [b, guarded] = work.back();
      work.pop_back();
      const Block &blk = k.blocks[size_t(b)];
      bool hit_barrier = false;
      // the fence's own block: only what precedes the fence
      for (int idx : blk.insns) {
        if (b == k.insns[size_t(fence_at)].block && idx >= fence_at)
          break;
        if (barrier(k.insns[size_t(idx)]))
          hit_barrier = true;
      }
      if (hit_barrier) {
        if (!guarded) {
          why = "a path from the bar.sync in block " + blk.label + " reaches the fence unguarded";
          return false;
        }
        continue;
      }
      if (b == 0) {
        why = "the entry reaches the fence with no bar.sync";
        return false;
      }
      for (int p : blk.preds) {
        bool g = guarded || thread0_successor(p) == b;
        if (seen.insert({p, g}).second)
          work.push_back({p, g});
      }
    }
    return true;
  }
};

struct Findings {
  int counter_loads = 0, spin_loops = 0, notifies = 0;
  std::vector<std::string> errors;
};

Findings check_protocol(const Kernel &k) {
  Protocol p{k};
  Findings f;
  auto where = [](const Insn &i) { return "line " + std::to_string(i.line) + ": " + i.text; };
  for (size_t n = 0; n < k.insns.size(); ++n) {
    const Insn &i = k.insns[n];
    std::string why;
    if (p.counter_load(i)) {
      f.counter_loads++;
      if (!Protocol::acquire_load(i))
        f.errors.push_back("a counter load is not ld.acquire.gpu: " + where(i));
      auto fail = [&](const Insn &x) { return p.task_store(x) || p.counter_update(x); };
      if (Protocol::acquire_load(i) && !k.every_path_forward(int(n), Protocol::barrier, fail, why))
        f.errors.push_back("after the wait's " + where(i) + " a path reaches " + why +
                           " with no bar.sync");
    }
    if (p.counter_update(i)) {
      if (!Protocol::release_atom(i))
        f.errors.push_back("a counter update is not a release atom at GPU scope: " + where(i));
      if (!p.adds_minus_one(i))
        continue; // an expander's settle
      f.notifies++;
      if (!k.every_path_back(int(n), Protocol::fence, Protocol::barrier, why)) {
        f.errors.push_back("no fence.acq_rel.gpu before the notify " + where(i) + ": back to " +
                           why);
        continue;
      }
    }
    if (Protocol::fence(i)) {
      auto fail = [&](const Insn &x) { return p.task_store(x) || p.counter_load(x); };
      if (!k.every_path_back(int(n), Protocol::barrier, fail, why))
        f.errors.push_back("no bar.sync publishes the task's stores before the fence at " +
                           where(i) + ": back to " + why);
      else if (!p.only_thread0(int(n), why))
        f.errors.push_back("the fence at " + where(i) + " is not thread 0's: " + why);
    }
  }
  for (const std::set<int> &loop : k.loops()) {
    bool sleeps = false, rereads = false;
    for (int b : loop)
      for (int idx : k.blocks[size_t(b)].insns) {
        const Insn &i = k.insns[size_t(idx)];
        sleeps |= starts_with(i.op, "nanosleep");
        rereads |= p.counter_load(i);
      }
    f.spin_loops += sleeps && rereads;
  }
  return f;
}

} // namespace

TEST_CASE("PTX reader: blocks, edges, slots and loops of a small kernel") {
  const char *ptx = R"(.version 7.8
.target sm_90
.address_size 64
.visible .entry etl_main(
	.param .u64 etl_main_param_0
)
{
	.reg .b32 %r<9>;
	ld.param.u64 	%rd1, [etl_main_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %tid.x;
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_3;
	ld.global.u64 	%rd3, [%rd2];
$L__BB0_2:
	ld.acquire.gpu.global.u32 %r2, [%rd3];
	nanosleep.u32 64;
	setp.ne.s32 	%p2, %r2, 0;
	@%p2 bra 	$L__BB0_2;
$L__BB0_3:
	bar.sync 	0;
	ld.global.u64 	%rd4, [%rd2+56];
	st.v2.u32 	[%rd4], {%r1, %r2};
	ret;
}
)";
  Kernel k = parse_kernel(ptx);
  CHECK(k.name == "etl_main");
  REQUIRE(k.blocks.size() == 4);
  CHECK(k.blocks[0].succs == std::vector<int>{3, 1});
  CHECK(k.blocks[2].succs == std::vector<int>{2, 3});
  CHECK(k.slots_of("%rd3") == std::set<long>{0});
  CHECK(k.slots_of("%rd4") == std::set<long>{7});
  CHECK(k.is_args_pointer("%rd2"));
  REQUIRE(k.loops().size() == 1);
  CHECK(k.loops()[0] == std::set<int>{2});
  Findings f = check_protocol(k);
  CHECK(f.counter_loads == 1);
  CHECK(f.spin_loops == 1);
  CHECK(f.errors.empty());
  Protocol p{k};
  CHECK(p.thread0_successor(0) == 1);
}

TEST_CASE("PTX reader: a task body left a .func is a function of its own, its tid a parameter") {
  // A declaration (no body) is skipped; the task function's thread id is its
  // parameter 2, and its thread-0 branch guards the wait like %tid.x does.
  const char *ptx = R"(.version 7.8
.target sm_90
.address_size 64
.func etl_$_task_$_t
(
	.param .b64 etl_$_task_$_t_param_0,
	.param .b32 etl_$_task_$_t_param_1,
	.param .b32 etl_$_task_$_t_param_2
)
;
.visible .entry etl_main(
	.param .u64 etl_main_param_0
)
{
	ld.param.u64 	%rd1, [etl_main_param_0];
	ret;
}
.func etl_$_task_$_t(
	.param .b64 etl_$_task_$_t_param_0,
	.param .b32 etl_$_task_$_t_param_1,
	.param .b32 etl_$_task_$_t_param_2
)
{
	ld.param.u64 	%rd1, [etl_$_task_$_t_param_0];
	ld.param.u32 	%r1, [etl_$_task_$_t_param_2];
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB1_2;
	ld.u64 	%rd3, [%rd1];
$L__BB1_1:
	ld.acquire.gpu.u32 %r2, [%rd3];
	nanosleep.u32 64;
	setp.ne.s32 	%p2, %r2, 0;
	@%p2 bra 	$L__BB1_1;
$L__BB1_2:
	bar.sync 	0;
	ret;
}
)";
  std::vector<Kernel> fns = parse_functions(ptx);
  REQUIRE(fns.size() == 2);
  CHECK(fns[0].name == "etl_main");
  CHECK(fns[0].entry);
  const Kernel &t = fns[1];
  CHECK(t.name == "etl_$_task_$_t");
  CHECK(!t.entry);
  CHECK(t.is_tid("%r1"));
  CHECK(!t.is_tid("%r2"));
  CHECK(t.slots_of("%rd3") == std::set<long>{0});
  Protocol p{t};
  CHECK(p.thread0_successor(0) == 1);
  Findings f = check_protocol(t);
  CHECK(f.counter_loads == 1);
  CHECK(f.spin_loops == 1);
  CHECK(f.errors.empty());
  CHECK(parse_kernel(ptx).name == "etl_main");
}

TEST_CASE("every program's PTX keeps the release/acquire event protocol") {
  std::vector<fs::path> list = programs();
  REQUIRE(list.size() >= 6);
  for (const fs::path &src : list) {
    CAPTURE(src.filename().string());
    // the kernel and every task body LLVM left a `.func` (its own entry)
    Findings f;
    for (const Kernel &k : parse_functions(program_ptx(src.string(), "sm_90"))) {
      Findings g = check_protocol(k);
      f.counter_loads += g.counter_loads;
      f.spin_loops += g.spin_loops;
      f.notifies += g.notifies;
      for (const std::string &e : g.errors)
        f.errors.push_back(k.name + ": " + e);
    }
    std::string all;
    for (const std::string &e : f.errors)
      all += e + "\n";
    INFO(all);
    CHECK(f.errors.empty());
    // a program without events (examples/gemv_atomic: atomics, no join;
    // examples/gemm and the tensor-core test program: independent tasks)
    // has no protocol of its own to check
    std::ifstream in(src);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("\n  event ") == std::string::npos)
      continue;
    // nor does one whose only waiting tasks are dynamic (pushed when ready,
    // no spin: programs/queue_batch.etl)
    bool static_wait = false;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      static_wait = static_wait || (line.find(" waits ") != std::string::npos &&
                                    line.find("task ") != std::string::npos &&
                                    line.find("schedule dynamic") == std::string::npos);
    if (!static_wait)
      continue;
    // every other program has waits and notifies: the rules above had something to check
    CHECK(f.counter_loads > 0);
    CHECK(f.spin_loops > 0);
    CHECK(f.notifies > 0);
  }
}
