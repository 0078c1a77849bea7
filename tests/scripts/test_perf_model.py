"""scripts/perf_model.py, now a client of etlc's timing model (`etlc compile
--emit=time`, compiler/cost/timing.cpp; its replay and PTX reading are unit
tested in tests/unit/cost/timing_test.cpp and tests/unit/driver/
time_test.cpp): a row's prediction is etlc's, and kloop_stats.py (the PTX
reading kept for people, bench.sh and reports) agrees with etlc's reading,
instruction for instruction, on the K step of every group of gemm and
decode_layer. No GPU, no timing of real runs (ETL_ETLC: the etlc to run;
those cases skip, saying why, without it)."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import perf_model as P  # noqa: E402


def etlc_or_skip(case):
    etlc = os.environ.get("ETL_ETLC")
    if not etlc or not os.path.exists(etlc):
        case.skipTest("ETL_ETLC (the built etlc) not set")
    return etlc


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


class TheModelIsEtlcs(unittest.TestCase):
    def test_gemm_s_row_is_etlc_s_time(self):
        # examples/gemm: 128 x 128 tiles, BK = 32: K 256 is 8 steps of a
        # 3-stage ring; 4 tiles at M = N = 256
        etlc = etlc_or_skip(self)
        src = os.path.join(ROOT, "examples/gemm/gemm.etl")
        b = {"M": 256, "N": 256, "K": 256}
        s, per, info = P.predict_code(src, b, etlc=etlc, sass=False)
        self.assertEqual(per["tile"]["tasks"], 4)
        self.assertEqual(info["bodies"]["tile"]["steps"], 8)
        self.assertGreater(s, 8 * 560e-9 / 2)  # at least the ring's latency bound per step
        d = P.etlc_time(src, b, etlc=etlc, sass=False)
        self.assertEqual(s, d["seconds"])
        self.assertIn("ratio 1", info["ratio_note"])

    def test_kloop_stats_reads_the_ptx_as_etlc_does(self):
        # the K step's PTX per warp of every group: kloop_stats' analysis
        # (its outermost loop with the most mma.sync FLOPs) against etlc's
        etlc = etlc_or_skip(self)
        import kloop_stats as K
        cases = [("examples/gemm/gemm.etl", {"M": 512, "N": 512, "K": 512}),
                 ("examples/decode_layer/decode_layer.etl",
                  {"H": 1024, "NKV": 8, "G": 2, "F": 3072, "B": 4, "kv_len": 512, "MP": 33,
                   "NP": 135})]
        for src, b in cases:
            src = os.path.join(ROOT, src)
            names = K.group_names(etlc, src, [])
            with tempfile.TemporaryDirectory() as tmp:
                ptx = K.compile_ptx(etlc, src, "sm_90", [], os.path.join(tmp, "k.ptx"))
            rows = [r for r in K.analyse(ptx, names, all_loops=True) if r["depth"] == 0]
            d = P.etlc_time(src, b, etlc=etlc, sass=False)
            checked = 0
            for g in d["groups"]:
                if g["name"].endswith(".expand"):
                    continue
                ks = [r for r in rows if r["group"] == g["name"] and r["counts"].get("_mma", 0)]
                k = max(ks, key=lambda r: (r["counts"]["_mma_flops"], r["static"]), default=None)
                want = K.class_total(k["counts"]) if k else 0
                self.assertEqual(g["ptx_step"], want, "%s:%s" % (src, g["name"]))
                checked += k is not None
            self.assertGreater(checked, 0)

    def test_a_dot_dealt_unevenly_over_the_warps_is_still_a_k_loop(self):
        # [16, 64] x [64, 96] per K step: 12 n8 tiles over 8 warps, so the
        # step branches on the warp (2 tiles or 1); the K loop's interior
        # path is the busiest warp's (8 mma), not the path without mma
        # (qwen3_decode's gate_up and lm read as no K loop before)
        etlc = etlc_or_skip(self)
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
            d = P.etlc_time(path, {"H": 1024, "F": 192}, etlc=etlc, sass=False)
        g = next(g for g in d["groups"] if g["name"] == "g")
        # a K loop was found (steps: the task's FLOPs over the busiest warp's
        # mma per step times the warps, 16 * 48 / 64)
        self.assertEqual(g["steps"], 12)
        self.assertGreater(g["ptx_step"], 0)
        self.assertEqual(g["ring"], 3)


if __name__ == "__main__":
    unittest.main()
