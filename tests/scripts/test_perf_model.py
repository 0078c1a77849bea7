#!/usr/bin/env python3
"""scripts/perf_model.py on synthetic graphs whose times are computed by hand
(no GPU, no timing of real runs): the replay's list scheduling, event edges
with their wake latency, the dynamic queue's serial pops, one task's duration
from its body, and the task graph read from `etlc --emit=taskgraph`
(ETL_ETLC: the etlc to run; that case skips, saying why, without it)."""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import perf_model as P  # noqa: E402


def static(name, dur, waits=(), notifies=()):
    return {"name": name, "dur": dur, "waits": list(waits), "notifies": list(notifies)}


class Replay(unittest.TestCase):
    def test_static_queues_and_an_event(self):
        # dealt round-robin: CTA 0 runs A then C, CTA 1 runs B then D. C waits
        # on e, notified by A (ends 2) and B (ends 1): seen at 2 + 0.5.
        tasks = [static("A", 2.0, notifies=[("e", 0)]), static("B", 1.0, notifies=[("e", 0)]),
                 static("C", 3.0, waits=[("e", 0)]), static("D", 1.0)]
        span, spans = P.replay(tasks, 2, pop_s=0.0, pop_serial_s=0.0, wake_s=0.5)
        self.assertEqual(spans, [(0.0, 2.0), (0.0, 1.0), (2.5, 5.5), (1.0, 2.0)])
        self.assertEqual(span, 5.5)

    def test_a_waiting_cta_runs_dynamic_items_and_pops_serialise(self):
        # P (CTA 0) notifies e; three dynamic items wait on e and notify f; Q
        # (CTA 1) waits on f. Pops take 0.1 and hold the head 0.3 (cas):
        #   X1 popped by CTA 0 at 1.0: head until 1.3, runs 1.1 .. 2.1
        #   X2 popped by CTA 1 (Q waits) at 1.0, head free at 1.3: 1.4 .. 2.4
        #   X3 popped by CTA 0 at 2.1: 2.2 .. 3.2;  Q runs once f is done: 3.2 .. 4.2
        dyn = {"dur": 1.0, "dynamic": True, "waits": [("e", 0)], "notifies": [("f", 0)]}
        tasks = [static("P", 1.0, notifies=[("e", 0)]), dict(dyn, name="X1"), dict(dyn, name="X2"),
                 dict(dyn, name="X3"), static("Q", 1.0, waits=[("f", 0)])]
        span, spans = P.replay(tasks, 2, pop_s=0.1, pop_serial_s=0.3, wake_s=0.0)
        got = [tuple(round(x, 9) for x in s) for s in spans]
        self.assertEqual(got, [(0.0, 1.0), (1.1, 2.1), (1.4, 2.4), (2.2, 3.2), (3.2, 4.2)])
        self.assertAlmostEqual(span, 4.2)

    def test_an_expander_pushes_its_items(self):
        # the expander waits on e (P ends 1, seen 1.01), is popped at 1.01 +
        # 0.05 and runs 0.1; its two items are popped at 1.16 + 0.05 by both
        # CTAs at once (no serial cost: ticket); M waits for both.
        tasks = [static("P", 1.0, notifies=[("e", 0)]),
                 {"name": "x", "dur": 0.1, "dynamic": True, "waits": [("e", 0)], "notifies": [],
                  "pushes": [2, 3]},
                 {"name": "c", "dur": 1.0, "dynamic": True, "waits": [], "notifies": [("f", 0)]},
                 {"name": "c", "dur": 1.0, "dynamic": True, "waits": [], "notifies": [("f", 0)]},
                 static("M", 1.0, waits=[("f", 0)])]
        span, spans = P.replay(tasks, 2, pop_s=0.05, pop_serial_s=0.0, wake_s=0.01)
        got = [tuple(round(x, 9) for x in s) for s in spans]
        self.assertEqual(got, [(0.0, 1.0), (1.06, 1.16), (1.21, 2.21), (1.21, 2.21), (2.22, 3.22)])

    def test_a_wait_nothing_can_satisfy_is_an_error(self):
        tasks = [static("P", 1.0, notifies=[("e", 0)]),
                 {"name": "X", "dur": 1.0, "dynamic": True, "waits": [("g", 0)], "notifies": [("g", 0)]},
                 static("Q", 1.0, waits=[("g", 0)])]
        with self.assertRaisesRegex(RuntimeError, "left tasks unrun"):
            P.replay(tasks, 2, 0.0, 0.0, 0.0)


class TaskTime(unittest.TestCase):
    CONSTS = {"sms": 10, "clock": 1e9, "bw": 1e12, "sm_bw": 1e11, "l2": 100e-9, "dram": 400e-9,
              "atomic": 50e-9, "fence": 50e-9, "sched": 4, "ipc": 1, "eff2w": 0.5,
              "ptxas_keep": 1.0}

    def test_one_task_by_hand(self):
        m = P.Model("h200", consts=self.CONSTS)
        body = {"threads": 256, "steps": "K / 16", "ptx_step": {"other": 80, "i64": 10},
                "bytes_step": 1000, "ring": 3, "dep_step": 1, "trips_task": 1, "waits": 1,
                "notifies": 1}
        s, parts = m.task_s(body, {"K": 64}, active=10)
        # 8 warps: 2 a scheduler, efficiency 0.5 * 2 / 2; SASS 80 + 2 * 10 = 100
        # issue 100 * 2 / 0.5 cycles = 400 ns, + one L2 trip = 500 ns
        # mem 1000 B / (1e12 / 10 B/s) = 10 ns; ring: 400 ns / 2 = 200 ns
        self.assertAlmostEqual(parts["issue"], 500e-9)
        self.assertAlmostEqual(parts["mem"], 10e-9)
        self.assertAlmostEqual(parts["lat"], 200e-9)
        self.assertEqual(parts["steps"], 4)
        # fixed: fetch 100 + trip 100 + first fill 400 + wait 100 + fence and atomic 100
        self.assertAlmostEqual(parts["fixed"], 800e-9)
        self.assertAlmostEqual(s, 800e-9 + 4 * 500e-9)

    def test_few_streaming_sms_get_more_bandwidth_up_to_their_cap(self):
        m = P.Model("h200", consts=dict(self.CONSTS, sm_bw=3e11))
        body = {"threads": 128, "steps": 1, "ptx_step": {}, "bytes_step": 3e5, "ring": 3}
        self.assertAlmostEqual(m.task_s(body, {}, active=10)[1]["mem"], 3e5 / 1e11)
        self.assertAlmostEqual(m.task_s(body, {}, active=2)[1]["mem"], 3e5 / 3e11)


TASKGRAPH = """kernel k<M, N>
event E[cdiv(M, 16)]
  notified by partial as E[i]
  awaited by  final as E[i]
event A[2, N / 4]
group partial[i in 0 .. cdiv(M, 16), j in 0 .. cdiv(N, 128)]
  notifies    E[i]
  notifies    A[*, j]
  schedule:   static (default)
group final[i in 0 .. cdiv(M, 16)]
  waits       E[i]
  schedule:   static (default)
order: partial final
"""


BODY = {"threads": 128, "steps": 1, "ptx_step": {"other": 10}, "bytes_step": 512, "ring": 3}


class GraphFromTaskgraph(unittest.TestCase):
    def test_domains_and_edges_at_a_binding(self):
        g = P.Graph(TASKGRAPH, {"M": 40, "N": 256})
        self.assertEqual([x.name for x in g.ordered], ["partial", "final"])
        self.assertEqual(len(g.tasks["partial"]), 3 * 2)
        self.assertEqual(g.tasks["final"], [{"i": 0}, {"i": 1}, {"i": 2}])
        self.assertEqual(g.elements("A", ["*", "j"], {"i": 0, "j": 1}), [("A", 0, 1), ("A", 1, 1)])
        self.assertEqual(g.elements("E", ["i"], {"i": 2, "j": 0}), [("E", 2)])

    def test_predict_on_the_synthetic_graph(self):
        # every task 1 us; 2 SMs: partial's 6 tasks then final's 3, dealt
        # round-robin: CTA 0 gets partial 0, 2, 4 and final 0, 2; CTA 1
        # partial 1, 3, 5 and final 1. E[0] is done when partial (0, 1)
        # ends (1 us), E[1] at 2 us, E[2] at 3 us; final 0 starts at 3 us
        # (its CTA's queue), final 2 at 4 us, final 1 at 3 us (E[1] seen at 2 us)
        m = P.Model("h200", consts={"sms": 2, "wake": 0.0, "launch": 0.0})
        m.task_s = lambda body, env, active: (1e-6, {})
        s, per = P.predict(None, {"M": 40, "N": 256}, {"partial": {}, "final": {}}, m,
                           text=TASKGRAPH)
        self.assertAlmostEqual(s, 5e-6)
        self.assertAlmostEqual(per["final"]["first"], 3e-6)

    def test_a_real_program(self):
        etlc = os.environ.get("ETL_ETLC")
        if not etlc or not os.path.exists(etlc):
            self.skipTest("ETL_ETLC (the built etlc) not set")
        text = subprocess.run([etlc, "compile", os.path.join(ROOT, "examples/rowsum/rowsum.etl"),
                               "--emit=taskgraph"], stdout=subprocess.PIPE, check=True,
                              text=True).stdout
        g = P.Graph(text, {"M": 40, "N": 300})
        self.assertEqual(len(g.tasks["partial"]), 3 * 3)
        self.assertEqual(len(g.tasks["final"]), 3)
        # each E[i] receives cdiv(N, 128) notifications (the dump's wait count)
        m = P.Model("h200", consts={"launch": 0.0})
        tasks = P.build_tasks(g, m, {"partial": BODY, "final": BODY})
        notes = {}
        for t in tasks:
            for e in t["notifies"]:
                notes[e] = notes.get(e, 0) + 1
        self.assertEqual(notes, {("E", 0): 3, ("E", 1): 3, ("E", 2): 3})
        self.assertEqual([t["waits"] for t in tasks if t["name"] == "final"],
                         [[("E", 0)], [("E", 1)], [("E", 2)]])


LAYERED = """kernel k<L, N>
event x[L + 1]
event y[L]
group first[i in 0 .. 1]
  notifies    x[0]
  schedule:   static (default)
group a[l in 0 .. L, j in 0 .. N]
  waits       x[l]
  notifies    y[l]
  schedule:   static (default)
  layers:     block 0, layer l
group b[l in 0 .. L]
  waits       y[l]
  notifies    x[l + 1]
  schedule:   static (default)
  layers:     block 0, layer l
group last[i in 0 .. 1]
  waits       x[L]
  schedule:   static (default)
order: first a b last
layer block 0: a b (static tasks dealt layer by layer: for each value of the first task index, each group in this order)
"""


class LayeredBlocks(unittest.TestCase):
    def test_dealt_layer_by_layer_as_the_runtime_does(self):
        # plan_queue.c: for each l, each group of the block in order, its
        # tasks of layer l; groups outside the block whole, in order
        g = P.Graph(LAYERED, {"L": 3, "N": 2})
        got = [(grp.name, [tuple(v.values()) for v in tv]) for grp, tv in P.deal_order(g)]
        self.assertEqual(got, [("first", [(0,)]),
                               ("a", [(0, 0), (0, 1)]), ("b", [(0,)]),
                               ("a", [(1, 0), (1, 1)]), ("b", [(1,)]),
                               ("a", [(2, 0), (2, 1)]), ("b", [(2,)]),
                               ("last", [(0,)])])

    def test_the_replay_deals_a_layered_block_round_robin_in_that_order(self):
        # 3 CTAs, every task 1 us, no wake latency: first (CTA 0) 0..1;
        # layer 0: a0 a1 on CTAs 1, 2 at 1..2, b0 on CTA 0 at 2..3; layer 1:
        # a on CTAs 1, 2 at 3..4, b1 on CTA 0 at 4..5; layer 2: 5..6, 6..7;
        # last (CTA 1) at 7..8. Dealt group by group instead (a's six tasks
        # first) b0 would sit behind a's tasks of later layers.
        m = P.Model("h200", consts={"sms": 3, "wake": 0.0, "launch": 0.0})
        m.task_s = lambda body, env, active: (1e-6, {})
        bodies = {n: {} for n in ("first", "a", "b", "last")}
        s, per = P.predict(None, {"L": 3, "N": 2}, bodies, m, text=LAYERED)
        self.assertAlmostEqual(s, 8e-6)
        self.assertAlmostEqual(per["b"]["first"], 2e-6)
        self.assertAlmostEqual(per["last"]["first"], 7e-6)


class TallyFromPtx(unittest.TestCase):
    def test_an_instruction_s_details(self):
        import kloop_stats as K
        t = K.tally("cp.async.cg.shared.global [%r1], [%rd2], 16;", set())
        self.assertEqual((t["gmem"], t["_gbytes"]), (1, 16))
        t = K.tally("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1}, {%r1}, {%r2}, {%f2};",
                    set())
        self.assertEqual((t["mma"], t["_mma"], t["_mma_flops"]), (1, 1, 4096))
        t = K.tally("ld.global.nc.v4.u32 {%r1, %r2, %r3, %r4}, [%rd5];", set())
        self.assertEqual((t["_gbytes"], t["_ldg"]), (16, 1))
        t = K.tally("fma.rn.f32 %f1, %f2, %f3, %f4;", set())
        self.assertEqual(t["_fp"], 1)
        self.assertEqual(K.ring_depth(K.tally("cp.async.wait_group 1;", set())), 3)
        self.assertEqual(K.ring_depth(t), 0)
        self.assertEqual(K.class_total(K.tally("cp.async.wait_group 1;", set())), 1)


class InputsFromTheCode(unittest.TestCase):
    def test_gemm_s_body_read_from_its_ptx_and_cost(self):
        # examples/gemm: 128 x 128 tiles, BK = 32: a [128, 32] x [32, 128]
        # bf16 dot per K step over 8 warps, a 3-stage cp.async ring; K 256
        # is 8 steps; 4 tiles at M = N = 256
        etlc = os.environ.get("ETL_ETLC")
        if not etlc or not os.path.exists(etlc):
            self.skipTest("ETL_ETLC (the built etlc) not set")
        import perf_model_code as C
        prog = C.program(os.path.join(ROOT, "examples/gemm/gemm.etl"), etlc, sass=False)
        self.assertEqual(prog.threads, 256)
        body = prog.bodies({"M": 256, "N": 256, "K": 256}, "h200")["tile"]
        self.assertAlmostEqual(body["steps"], 8)
        self.assertEqual(body["ring"], 3)
        self.assertEqual(body["mma_step"] * 8 * body["flops_per_mma"], 2 * 128 * 128 * 32)
        self.assertEqual(body["bytes_step"], (128 * 32 + 32 * 128) * 2)
        self.assertGreater(sum(body["ptx_step"].values()), body["mma_step"])
        s, per, info = P.predict_code(os.path.join(ROOT, "examples/gemm/gemm.etl"),
                                      {"M": 256, "N": 256, "K": 256}, etlc=etlc, sass=False)
        self.assertEqual(per["tile"]["tasks"], 4)
        self.assertGreater(s, 8 * 560e-9 / 2)  # at least the ring's latency bound per step

    def test_a_dot_dealt_unevenly_over_the_warps_is_still_a_k_loop(self):
        # [16, 64] x [64, 96] per K step: 12 n8 tiles over 8 warps, so the
        # step branches on the warp (2 tiles or 1); the K loop's interior
        # path is the busiest warp's (8 mma), not the path without mma
        # (qwen3_decode's gate_up and lm read as no K loop before)
        etlc = os.environ.get("ETL_ETLC")
        if not etlc or not os.path.exists(etlc):
            self.skipTest("ETL_ETLC (the built etlc) not set")
        import tempfile
        import perf_model_code as C
        src = """
kernel uneven<H: dim, F: dim>(a: tensor<bf16>[16, H], w: tensor<bf16>[H, F], y: tensor<f32>[16, F])
  where H % 64 == 0 {
  task g[j in 0 .. cdiv(F, 96)] {
    var acc = zeros<f32>[16, 96];
    for k in 0 .. H / 64 {
      acc += dot(load(a[0 .. +16, k * 64 .. +64]), load(w[k * 64 .. +64, j * 96 .. +96]));
    }
    store(y[0 .. +16, j * 96 .. +96], acc);
  }
}
"""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "uneven.etl")
            with open(path, "w") as f:
                f.write(src)
            prog = C.Program(path, etlc, sass=False)
            k = prog.kloop("g")
            self.assertIsNotNone(k)
            self.assertEqual(k["counts"]["_mma"], 2 * 64 // 16)  # 2 n8 tiles x 4 k16 steps
            body = prog.bodies({"H": 1024, "F": 192}, "h200")["g"]
        self.assertEqual(body["ring"], 3)
        self.assertEqual(body["bytes_step"], (16 * 64 + 64 * 96) * 2)

    def test_a_layered_program_s_groups_are_layered(self):
        etlc = os.environ.get("ETL_ETLC")
        if not etlc or not os.path.exists(etlc):
            self.skipTest("ETL_ETLC (the built etlc) not set")
        text = subprocess.run([etlc, "compile", os.path.join(ROOT, "examples/qwen3_decode/qwen3_decode.etl"),
                               "--emit=taskgraph"], stdout=subprocess.PIPE, check=True,
                              text=True).stdout
        g = P.Graph(text, {"L": 2, "B": 1, "H": 256, "NKV": 2, "G": 2, "F": 3072, "V": 300, "NP": 8,
                           "MP": 4, "kv_len": 8, "_tensors": ("kv_len",)})
        seq = [(grp.name, tv[0].get("l")) for grp, tv in P.deal_order(g)]
        self.assertEqual(seq[0], ("embed_rows", None))
        self.assertEqual(seq[1], ("qpart", 0))
        layer0 = seq.index(("down_sum", 0))
        self.assertEqual(seq[layer0 + 1], ("qpart", 1))


if __name__ == "__main__":
    unittest.main()
