// cost/timing and cost/ptx_loops: the replay on synthetic task lists whose
// times are computed by hand (the same cases as tests/scripts/
// test_perf_model.py had for the Python replay), and the PTX reading of a
// hand-written loop: its classes per step, mma FLOPs, ring, trips, and the
// code outside the loop.
#include "cost/ptx_loops.h"
#include "cost/timing.h"

#include <doctest/doctest.h>

#include <cmath>

namespace etl {
namespace {

ReplayTask task(double dur, std::vector<int64_t> waits = {}, std::vector<int64_t> notifies = {},
                bool dynamic = false) {
  ReplayTask t;
  t.dur = dur;
  t.waits = std::move(waits);
  t.notifies = std::move(notifies);
  t.dynamic = dynamic;
  return t;
}

void check_spans(const std::vector<std::pair<double, double>> &got,
                 const std::vector<std::pair<double, double>> &want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].first == doctest::Approx(want[i].first).epsilon(1e-12));
    CHECK(got[i].second == doctest::Approx(want[i].second).epsilon(1e-12));
  }
}

TEST_CASE("replay: static queues dealt round-robin and an event's wake latency") {
  // CTA 0 runs A then C, CTA 1 runs B then D. C waits on e (element 0),
  // notified by A (ends 2) and B (ends 1): seen at 2 + 0.5.
  std::vector<ReplayTask> ts = {task(2, {}, {0}), task(1, {}, {0}), task(3, {0}), task(1)};
  std::vector<std::pair<double, double>> spans;
  auto span = replay(ts, 2, 0, 0, 0.5, spans);
  REQUIRE(span);
  CHECK(*span == 5.5);
  check_spans(spans, {{0, 2}, {0, 1}, {2.5, 5.5}, {1, 2}});
}

TEST_CASE("replay: a waiting CTA runs dynamic items, and CAS pops serialise") {
  // P (CTA 0) notifies e (0); three dynamic items wait on e and notify f
  // (1); Q (CTA 1) waits on f. Pops take 0.1 and hold the head 0.3:
  //   X1 popped by CTA 0 at 1.0: head until 1.3, runs 1.1 .. 2.1
  //   X2 popped by CTA 1 (Q waits) at 1.0, head free at 1.3: 1.4 .. 2.4
  //   X3 popped by CTA 0 at 2.1: 2.2 .. 3.2;  Q runs once f is done: 3.2 .. 4.2
  std::vector<ReplayTask> ts = {task(1, {}, {0}), task(1, {0}, {1}, true), task(1, {0}, {1}, true),
                                task(1, {0}, {1}, true), task(1, {1})};
  std::vector<std::pair<double, double>> spans;
  auto span = replay(ts, 2, 0.1, 0.3, 0, spans);
  REQUIRE(span);
  CHECK(*span == doctest::Approx(4.2));
  check_spans(spans, {{0, 1}, {1.1, 2.1}, {1.4, 2.4}, {2.2, 3.2}, {3.2, 4.2}});
}

TEST_CASE("replay: an expander pushes its items; a wait nothing notifies is refused") {
  // the expander waits on e (P ends 1, seen 1.01), is popped at 1.01 + 0.05
  // and runs 0.1; its two items are popped at 1.16 + 0.05 by both CTAs at
  // once (ticket: no serial cost); M waits for both.
  std::vector<ReplayTask> ts = {task(1, {}, {0}), task(0.1, {0}, {}, true), task(1, {}, {1}, true),
                                task(1, {}, {1}, true), task(1, {1})};
  ts[1].pushes = {2, 3};
  std::vector<std::pair<double, double>> spans;
  REQUIRE(replay(ts, 2, 0.05, 0, 0.01, spans));
  check_spans(spans, {{0, 1}, {1.06, 1.16}, {1.21, 2.21}, {1.21, 2.21}, {2.22, 3.22}});
  // one CTA: its first task waits on what its second notifies
  std::vector<ReplayTask> stuck = {task(1, {5}), task(1, {}, {5})};
  CHECK_FALSE(replay(stuck, 1, 0, 0, 0, spans));
}

TEST_CASE("ptx_loops: one loop's interior step by class, its mma, ring and trips") {
  const char *ptx = R"(
.version 7.8
.target sm_90
.visible .entry k(
	.param .u64 k_param_0
)
.maxntid 256, 1, 1
{
	.reg .b32 %r<10>;
	ld.param.u64 %rd1, [k_param_0];
	mov.u32 %r1, 0;
$L__loop:
	cp.async.cg.shared.global [%r2], [%rd2], 16;
	cp.async.commit_group;
	cp.async.wait_group 1;
	bar.sync 0;
	mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
		{%f1,%f2,%f3,%f4}, {%r3,%r4,%r5,%r6}, {%r7,%r8}, {%f1,%f2,%f3,%f4};
	add.s64 %rd2, %rd2, 64;
	add.s32 %r1, %r1, 1;
	setp.lt.u32 %p1, %r1, 8;
	@%p1 bra $L__loop;
	st.global.v4.f32 [%rd3], {%f1,%f2,%f3,%f4};
	ret;
}
)";
  PtxAnalysis a = analyse_ptx(ptx, {"g"});
  CHECK(a.threads == 256);
  REQUIRE(a.loops.size() == 1);
  const PtxLoop &l = a.loops[0];
  CHECK(l.group == "g");
  CHECK(l.depth == 0);
  CHECK(l.label == "$L__loop");
  REQUIRE(l.trips);
  CHECK(*l.trips == 8);
  auto cls = [](const PtxTally &t, PtxClass c) { return t.cls[size_t(c)]; };
  // kloop_stats' rule: the prefix cp.async.c takes the copy and
  // commit_group both as gmem; wait_group and bar.sync are bar
  CHECK(cls(l.step, PtxClass::Gmem) == 2);
  CHECK(cls(l.step, PtxClass::Bar) == 2);
  CHECK(cls(l.step, PtxClass::Mma) == 1);
  CHECK(cls(l.step, PtxClass::I64) == 1);
  CHECK(cls(l.step, PtxClass::Pred) == 1);
  CHECK(cls(l.step, PtxClass::Other) == 2); // add.s32 and the guarded branch
  CHECK(l.step.total() == 9);
  CHECK(l.step.mma_flops == 2 * 16 * 8 * 16);
  CHECK(l.step.gbytes == 16);
  CHECK(l.step.ring_depth() == 3); // wait_group 1: one ahead, one waited, one filling
  CHECK(l.static_count == 9);
  const PtxTally &r = a.regions.at("g");
  CHECK(cls(r, PtxClass::Args) == 1);
  CHECK(cls(r, PtxClass::Gmem) == 1);
  CHECK(cls(r, PtxClass::Other) == 2); // mov and ret
  CHECK(r.gbytes == 16);               // st.global.v4.f32
}

} // namespace
} // namespace etl
