#!/usr/bin/env python3
"""etl.tune: `etlc tune` from Python on a small GEMM with a tunable K slice
and tile height: every candidate ranked by the timing model (modelled, no
GPU), fastest first, the pick never slower than the default, the record
(program hash, target, GPU, binding) kept where asked, a binding per bucket,
-D pins, and a bad binding raising CompileError with etlc's message.
PYTHONPATH=python and ETL_BUILD_DIR=<build> (etlc and the runtime)."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import etl  # noqa: E402

SRC = """const BM = 64 in [32, 64];
const BK = 32 in [16, 32, 64];

kernel g<M: dim, N: dim, K: dim>(a: tensor<bf16>[M, K], b: tensor<bf16>[K, N],
                                 c: tensor<f32>[M, N]) {
  task tile[i in 0 .. cdiv(M, BM), j in 0 .. cdiv(N, 64)] {
    var acc = zeros<f32>[BM, 64];
    for k in 0 .. cdiv(K, BK) {
      acc += dot(load(a[i * BM .. +BM, k * BK .. +BK]), load(b[k * BK .. +BK, j * 64 .. +64]));
    }
    store(c[i * BM .. +BM, j * 64 .. +64], acc);
  }
}
"""


class Tune(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.src = os.path.join(self.tmp.name, "g.etl")
        with open(self.src, "w") as f:
            f.write(SRC)

    def tearDown(self):
        self.tmp.cleanup()

    def test_ranked_by_the_model_and_recorded(self):
        path = os.path.join(self.tmp.name, "rec.json")
        rec = etl.tune(self.src, bind=[{"M": 1024, "N": 1024, "K": 4096}, "M=64,N=64,K=4096"],
                       record=path)
        self.assertTrue(os.path.exists(path))
        self.assertEqual((rec["how"], rec["gpu"], rec["target"]), ("modelled", "h200", "sm_90"))
        self.assertEqual(len(rec["program_sha256"]), 64)
        self.assertEqual(len(rec["bindings"]), 2)
        self.assertEqual(rec["bindings"][0]["binding"], {"M": 1024, "N": 1024, "K": 4096})
        for b, pick in zip(rec["bindings"], rec["picks"]):
            cands = b["candidates"]
            self.assertEqual(len(cands), 6)
            times = [c["seconds"] for c in cands if "seconds" in c]
            self.assertEqual(times, sorted(times))
            default = [c for c in cands if c["default"]]
            self.assertEqual(len(default), 1)
            self.assertEqual(default[0]["candidate"], {"BM": "64", "BK": "32"})
            self.assertLessEqual(times[0], default[0]["seconds"])
            self.assertEqual(pick, cands[0]["candidate"])

    def test_pins_and_errors(self):
        rec = etl.tune(self.src, bind={"M": 256, "N": 256, "K": 256}, defines=["BK=64"])
        self.assertEqual({c["candidate"]["BK"] for c in rec["bindings"][0]["candidates"]}, {"64"})
        with self.assertRaises(etl.CompileError) as e:
            etl.tune(self.src, bind={"M": 256, "N": 256})
        self.assertIn("--bind gives no value for dim 'K'", str(e.exception))


if __name__ == "__main__":
    unittest.main()
