"""Tests of the Python package etl (python/etl) on the sim device.

Runs rowsum, softmax and moe through etl with numpy (and torch CPU tensors
when python3-torch is installed, torch CUDA tensors when it sees a GPU)
against references, and checks that
misuse raises the documented exception classes with nothing run. Run by
ctest (`python_etl`) as `/usr/bin/python3 tests/python/test_etl.py` with
PYTHONPATH=python and ETL_BUILD_DIR=<build>; exits 77 (skipped) with the
reason when numpy is missing.
"""
import ctypes
import gc
import os
import sys
import tempfile
import unittest
import weakref

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed for %s (apt-get install python3-numpy)" % sys.executable)
    sys.exit(77)
try:
    import torch
except ImportError:
    torch = None

import etl

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("ETL_BUILD_DIR", os.path.join(ROOT, "build"))


def artifact(name):
    return os.path.join(BUILD, "examples", name + ".etlb")


def softmax_ref(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def moe_ref(x, wr, w, k):
    logits = x @ wr
    out = np.zeros_like(x, dtype=np.float64)
    for t in range(x.shape[0]):
        order = sorted(range(wr.shape[1]), key=lambda e: (-logits[t, e], e))[:k]
        v = logits[t, order].astype(np.float64)
        p = np.exp(v - v[0]) / np.exp(v - v[0]).sum()
        for j, e in enumerate(order):
            out[t] += p[j] * (x[t].astype(np.float64) @ w[e])
    return out.astype(np.float32)


class _FakeCudaDLPack:
    """An object whose __dlpack__ says its memory is on a CUDA device."""

    class DLManaged(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                    ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                    ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                    ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64),
                    ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]

    def __init__(self, shape):
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.m = self.DLManaged(0x10000, 2, 0, len(shape), 2, 32, 1, self.shape, None, 0,
                                None, None)

    def __dlpack__(self, stream=None):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.m), b"dltensor", None)


class Examples(unittest.TestCase):
    def test_rowsum_numpy(self):
        prog = etl.load(artifact("rowsum"), device="sim")
        rng = np.random.default_rng(1)
        for m, n in ((16, 128), (37, 300)):
            x = rng.standard_normal((m, n), dtype=np.float32)
            y = np.zeros(m, np.float32)
            prog(x=x, y=y)
            np.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-4, atol=1e-4)

    def test_softmax_numpy(self):
        prog = etl.load(artifact("softmax"), device="sim")
        x = np.random.default_rng(2).standard_normal((5, 332), dtype=np.float32)
        y = np.zeros_like(x)
        prog(x=x, y=y)
        np.testing.assert_allclose(y, softmax_ref(x), rtol=1e-4, atol=1e-6)

    def test_moe_numpy_explicit_dim(self):
        prog = etl.load(artifact("moe"), device="sim")
        rng = np.random.default_rng(3)
        t, h, e, k = 20, 64, 4, 2
        x = rng.standard_normal((t, h), dtype=np.float32)
        wr = rng.standard_normal((h, e), dtype=np.float32)
        w = (rng.standard_normal((e, h, h)) / 8).astype(np.float32)
        out = np.zeros((t, h), np.float32)
        prog(x=x, wr=wr, w=w, out=out, K=k)  # K appears in no tensor's shape
        np.testing.assert_allclose(out, moe_ref(x, wr, w, k), rtol=1e-3, atol=1e-3)

    @unittest.skipIf(torch is None, "python3-torch is not installed")
    def test_rowsum_and_softmax_torch_cpu(self):
        x = torch.randn(19, 200)
        y = torch.zeros(19)
        etl.load(artifact("rowsum"), device="sim")(x=x, y=y)
        torch.testing.assert_close(y, x.sum(dim=1), rtol=1e-4, atol=1e-4)
        ys = torch.zeros_like(x)
        etl.load(artifact("softmax"), device="sim")(x=x, y=ys)
        torch.testing.assert_close(ys, torch.softmax(x, dim=1), rtol=1e-4, atol=1e-6)

    def test_rowsum_and_softmax_torch_cuda(self):
        if torch is None or not torch.cuda.is_available():
            why = ("python3-torch is not installed" if torch is None else
                   "torch %s sees no CUDA device (CPU-only build or no GPU)" % torch.__version__)
            print("SKIP torch CUDA test: %s" % why)
            self.skipTest(why)
        x = torch.randn(37, 300, device="cuda")
        y = torch.zeros(37, device="cuda")
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):  # runs on torch's current stream
            prog = etl.load(artifact("rowsum"), device="cuda")
            side.wait_stream(torch.cuda.default_stream())
            prog(x=x, y=y)
            ref = x.sum(dim=1)  # queued after the kernel on the same stream
        side.synchronize()
        prog.wait()
        torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)
        ys = torch.zeros_like(x)
        soft = etl.load(artifact("softmax"), device="cuda")
        soft(x=x, y=ys)
        soft.wait()
        torch.testing.assert_close(ys, torch.softmax(x, dim=1), rtol=1e-4, atol=1e-6)
        torch.ones(1, device="cuda").add_(1)  # torch's context still works after etl's calls

    def test_dlpack_object(self):
        class Wrapped:  # not numpy, not torch: only __dlpack__
            def __init__(self, a):
                self.a = a

            def __dlpack__(self, stream=None):
                return self.a.__dlpack__()

        x = np.arange(12 * 132, dtype=np.float32).reshape(12, 132) / 1000
        y = np.zeros(12, np.float32)
        etl.load(artifact("rowsum"), device="sim")(x=Wrapped(x), y=Wrapped(y))
        np.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-5)

    def test_compile_run_trace_profile(self):
        with tempfile.TemporaryDirectory() as d:
            prog = etl.compile(os.path.join(ROOT, "examples", "rowsum", "rowsum.etl"),
                               targets=["sim"], device="sim")
            x = np.ones((16, 256), np.float32)
            y = np.zeros(16, np.float32)
            prog.run(x=x, y=y, trace=os.path.join(d, "t.json"), profile=os.path.join(d, "p.json"))
            np.testing.assert_allclose(y, 256)
            self.assertTrue(os.path.getsize(os.path.join(d, "t.json")) > 0)
            self.assertTrue(os.path.getsize(os.path.join(d, "p.json")) > 0)

    def test_variants(self):
        src = os.path.join(ROOT, "examples", "rowsum", "rowsum.etl")
        prog = etl.compile(src, targets=["sim"], device="sim", variants=["M<=8:TM=8", "*:"])
        self.assertEqual(prog.variants, ("M<=8:TM=8", "*:"))
        self.assertIsNone(prog.variant)
        for m, label in ((4, "M<=8:TM=8"), (40, "*:"), (8, "M<=8:TM=8")):
            x = np.ones((m, 256), np.float32)
            y = np.zeros(m, np.float32)
            prog(x=x, y=y)
            self.assertEqual(prog.variant, label)
            np.testing.assert_allclose(y, 256)
        plain = etl.load(artifact("rowsum"), device="sim")
        self.assertEqual((plain.variants, plain.variant), (("",), None))
        plain(x=np.ones((3, 8), np.float32), y=np.zeros(3, np.float32))
        self.assertEqual(plain.variant, "")

    def test_params(self):
        prog = etl.load(artifact("rowsum"), device="sim")
        self.assertEqual(prog.params, (etl.Param("x", "f32", 2, ("M", "N"), "tensor", False),
                                       etl.Param("y", "f32", 1, ("M",), "tensor", True)))
        self.assertEqual(prog.dims, ("M", "N"))
        self.assertEqual(prog.constraints, ("N % 4 == 0",))
        moe = etl.load(artifact("moe"), device="sim")
        self.assertEqual(moe.dims, ("T", "H", "E", "K"))
        self.assertEqual([p.dims for p in moe.params],
                         [("T", "H"), ("H", "E"), ("E", "H", "H"), ("T", "H")])
        self.assertEqual(moe.constraints, ("E <= TE", "K <= E", "H % 4 == 0"))
        da = etl.load(artifact("decode_attention"), device="sim")
        self.assertEqual(dict((p.name, p.dims) for p in da.params)["kcache"],
                         ("NP * 16", "NH", "32"))
        self.assertIn("rowsum", repr(prog))


class Misuse(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.prog = etl.load(artifact("rowsum"), device="sim")

    def setUp(self):
        self.x = np.ones((4, 8), np.float32)
        self.y = np.full(4, 7, np.float32)

    def assertNotRun(self):
        np.testing.assert_array_equal(self.y, 7)

    def test_wrong_dtype(self):
        with self.assertRaisesRegex(etl.DTypeError, "tensor 'x' is f32, the numpy array holds i32"):
            self.prog(x=self.x.astype(np.int32), y=self.y)
        with self.assertRaisesRegex(etl.DTypeError, "float64 is not an ETL element type"):
            self.prog(x=self.x.astype(np.float64), y=self.y)
        self.assertNotRun()

    def test_non_contiguous(self):
        with self.assertRaisesRegex(etl.LayoutError, "'x'.*not C-contiguous"):
            self.prog(x=np.ones((4, 16), np.float32)[:, ::2], y=self.y)
        self.assertNotRun()

    def test_wrong_device(self):
        with self.assertRaisesRegex(etl.DeviceMismatchError, "CUDA memory.*runs on sim"):
            self.prog(x=_FakeCudaDLPack((4, 8)), y=self.y)
        cai = type("Cai", (), {"__cuda_array_interface__": {
            "shape": (4, 8), "typestr": "<f4", "data": (0x10000, False), "version": 3}})()
        with self.assertRaisesRegex(etl.DeviceMismatchError, "CUDA memory.*runs on sim"):
            self.prog(x=cai, y=self.y)
        with self.assertRaisesRegex(etl.InvalidValueError, "no CUDA streams"):
            self.prog.run(x=self.x, y=self.y, stream=5)
        self.assertNotRun()
        self.prog.wait()  # sim runs are never in flight
        self.assertTrue(self.prog.query())

    def test_wrong_rank_and_shape(self):
        with self.assertRaisesRegex(etl.BindingError, "has rank 1"):
            self.prog(x=self.x, y=np.zeros((4, 1), np.float32))
        with self.assertRaisesRegex(etl.BindingError, r"'y' is bound with shape \[5\].*\[4\]"):
            self.prog(x=self.x, y=np.zeros(5, np.float32))
        self.assertNotRun()

    def test_where_fact(self):
        moe = etl.load(artifact("moe"), device="sim")
        x, out = np.ones((4, 32), np.float32), np.zeros((4, 32), np.float32)
        args = dict(x=x, wr=np.ones((32, 17), np.float32), w=np.ones((17, 32, 32), np.float32),
                    out=out, K=2)
        with self.assertRaisesRegex(etl.BindingError, "constraint 'E <= TE' violated"):
            moe(**args)
        args.update(wr=np.ones((32, 2), np.float32), w=np.ones((2, 32, 32), np.float32), K=3)
        with self.assertRaisesRegex(etl.BindingError, "constraint 'K <= E' violated"):
            moe(**args)
        # the fact, every bound dim's value and where the fact is written
        with self.assertRaisesRegex(etl.BindingError,
                                    r"^constraint 'N % 4 == 0' violated with M=4, N=1 "
                                    r"\(declared at .*rowsum\.etl:\d+:\d+\)$"):
            self.prog(x=np.ones((4, 1), np.float32), y=self.y)
        self.assertNotRun()

    def test_names_and_unbound(self):
        with self.assertRaisesRegex(etl.NotFoundError, "no tensor or dim 'z'"):
            self.prog(x=self.x, y=self.y, z=self.y)
        fresh = etl.load(artifact("rowsum"), device="sim")
        # Messages speak Python: what to pass to prog(...), not the C call to make
        with self.assertRaisesRegex(etl.UnboundError,
                                    r"^tensor 'y' is not bound: pass it, prog\(y=array\)$"):
            fresh(x=self.x)
        moe = etl.load(artifact("moe"), device="sim")
        with self.assertRaisesRegex(etl.UnboundError, r"^dimension 'K' is not bound: pass "
                                    r"prog\(K=\.\.\.\) or a tensor whose shape names it$"):
            moe(x=np.ones((4, 32), np.float32), wr=np.ones((32, 2), np.float32),
                w=np.ones((2, 32, 32), np.float32), out=np.zeros((4, 32), np.float32))
        with self.assertRaisesRegex(etl.InvalidValueError, "not a tensor"):
            self.prog(x=[[1.0]], y=self.y)
        self.assertNotRun()

    def test_bound_tensor_kept_alive_after_del(self):
        # A later call that leaves out a tensor reuses the earlier binding: the
        # program holds that array, so `del` + gc.collect() cannot free it under
        # the runtime (it used to write into freed memory: a bogus DivergenceError).
        prog = etl.load(artifact("rowsum"), device="sim")
        x, y = np.ones((64, 256), np.float32), np.zeros(64, np.float32)
        prog(x=x, y=y)
        np.testing.assert_array_equal(y, 256)
        kept = weakref.ref(y)
        del y
        gc.collect()
        self.assertIsNotNone(kept(), "a bound array must stay alive while the program may use it")
        x2 = np.full((64, 256), 2, np.float32)
        prog(x=x2)  # y left out: the run writes the kept array, not freed memory
        np.testing.assert_array_equal(kept(), 512)
        prog.run()  # nothing passed: replays the last binding
        np.testing.assert_array_equal(kept(), 512)
        y2 = np.zeros(64, np.float32)
        prog(x=x, y=y2)  # rebinding y releases the earlier array
        gc.collect()
        self.assertIsNone(kept(), "a rebound tensor's earlier array must be released")
        np.testing.assert_array_equal(y2, 256)
        x_kept, y2_kept = weakref.ref(x2), weakref.ref(y2)
        del x2, y2
        prog(x=x)  # x rebound (x2 released), y2 still bound and alive
        gc.collect()
        self.assertIsNone(x_kept())
        self.assertIsNotNone(y2_kept())
        prog.close()  # close releases every binding
        gc.collect()
        self.assertIsNone(y2_kept())

    def test_read_only_memory(self):
        # The artifact says which tensors the kernel writes (rowsum writes y,
        # only reads x): read-only memory binds to x, never to y.
        prog = etl.load(artifact("rowsum"), device="sim")
        self.assertEqual([(p.name, p.written) for p in prog.params], [("x", False), ("y", True)])
        data = np.ones((4, 8), np.float32).tobytes()
        x = np.frombuffer(data, np.float32).reshape(4, 8)  # over immutable bytes
        self.assertFalse(x.flags.writeable)
        y = np.zeros(4, np.float32)
        prog(x=x, y=y)  # reading from read-only memory is fine
        np.testing.assert_array_equal(y, 8)
        frozen = np.frombuffer(np.full(4, 7, np.float32).tobytes(), np.float32)
        with self.assertRaisesRegex(etl.ReadOnlyError,
                                    "tensor 'y': the program writes it in place, but the numpy "
                                    "array is read-only"):
            prog(x=np.ones((4, 8), np.float32), y=frozen)
        self.assertTrue(issubclass(etl.ReadOnlyError, etl.BindingError))
        np.testing.assert_array_equal(frozen, 7)  # nothing ran
        self.assertEqual(data, np.ones((4, 8), np.float32).tobytes())
        cai = type("Cai", (), {"__cuda_array_interface__": {
            "shape": (4,), "typestr": "<f4", "data": (0x10000, True), "version": 3}})()
        with self.assertRaisesRegex(etl.ReadOnlyError, "readonly flag"):
            prog(x=np.ones((4, 8), np.float32), y=cai)

    @unittest.skipIf(torch is None, "python3-torch is not installed")
    def test_requires_grad(self):
        prog = etl.load(artifact("rowsum"), device="sim")
        w = torch.ones(4, 8, requires_grad=True)  # a leaf autograd tracks
        y = torch.zeros(4)
        prog(x=w, y=y)  # read only: fine
        self.assertTrue(torch.equal(y, torch.full((4,), 8.0)))
        out = torch.zeros(4, requires_grad=True)
        with self.assertRaisesRegex(etl.ReadOnlyError, "tensor 'y'.*requires_grad.*detach"):
            prog(x=w, y=out)
        tracked = torch.zeros(4, requires_grad=True) * 1  # not a leaf, still tracked
        with self.assertRaisesRegex(etl.ReadOnlyError, "requires_grad"):
            prog(x=w, y=tracked)
        self.assertTrue(torch.equal(out.detach(), torch.zeros(4)))
        prog(x=w, y=out.detach())  # the documented way to write into it anyway
        self.assertTrue(torch.equal(out.detach(), torch.full((4,), 8.0)))

    def test_bad_files_and_devices(self):
        with self.assertRaisesRegex(etl.NotFoundError, "cannot open"):
            etl.load("/nonexistent/p.etlb", device="sim")
        with tempfile.NamedTemporaryFile(suffix=".etlb") as f:
            f.write(b"not an artifact at all" * 10)
            f.flush()
            with self.assertRaises(etl.InvalidArtifactError):
                etl.load(f.name, device="sim")
        with self.assertRaisesRegex(etl.NotFoundError, "unknown device 'tpu'"):
            etl.load(artifact("rowsum"), device="tpu")
        with tempfile.NamedTemporaryFile("w", suffix=".etl") as f:
            f.write("kernel k<M: dim>(x: tensor<f32>[M]) { oops }\n")
            f.flush()
            with self.assertRaisesRegex(etl.CompileError, r"\^"):
                etl.compile(f.name, targets=["sim"])

    def test_environment(self):
        os.environ["ETL_SIM_WORKERS"] = "lots"
        try:
            with self.assertRaisesRegex(etl.InvalidValueError, "ETL_SIM_WORKERS='lots'"):
                etl.load(artifact("rowsum"), device="sim")
        finally:
            del os.environ["ETL_SIM_WORKERS"]
        os.environ["ETL_DEVICE"] = "sim"
        os.environ["ETL_SIM_WORKERS"] = "3"
        try:
            self.assertEqual(etl.load(artifact("rowsum"), device="auto").device,
                             "sim (3 workers)")
        finally:
            del os.environ["ETL_DEVICE"], os.environ["ETL_SIM_WORKERS"]


SCALARS_ETL = """
kernel scal<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N], h: tensor<f16>[N], hy: tensor<f16>[N],
                    k: tensor<i64>[N], ky: tensor<i64>[N], z: tensor<f32>[N],
                    scale: f32, half: f16, bscale: bf16, big: i64, n: i32) where N % 16 == 0 {
  task t[i in 0 .. N / 16] {
    let pos = arange<i32>[16] + i * 16;
    store(y[i * 16 .. +16], load(x[i * 16 .. +16]) * scale, mask = pos < n);
    store(hy[i * 16 .. +16], load(h[i * 16 .. +16]) + half);
    store(ky[i * 16 .. +16], load(k[i * 16 .. +16]) + big);
    store(z[i * 16 .. +16], load(x[i * 16 .. +16]) * cast<f32>(bscale));
  }
}
"""


class Scalars(unittest.TestCase):
    """Scalar parameters (`eps: f32`): Param.kind 'scalar', bound by name as numbers."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        src = os.path.join(cls.tmp.name, "scal.etl")
        with open(src, "w") as f:
            f.write(SCALARS_ETL)
        cls.prog = etl.compile(src, targets=["sim"], device="sim")

    @classmethod
    def tearDownClass(cls):
        cls.prog.close()
        cls.tmp.cleanup()

    def setUp(self):
        n = 48
        self.a = dict(x=np.arange(n, dtype=np.float32), y=np.full(n, -1, np.float32),
                      h=np.full(n, 1.0, np.float16), hy=np.zeros(n, np.float16),
                      k=np.arange(n, dtype=np.int64), ky=np.zeros(n, np.int64),
                      z=np.zeros(n, np.float32))
        self.s = dict(scale=2.5, half=0.5, bscale=-2, big=1 << 40, n=37)

    def test_params_and_repr(self):
        scalars = [p for p in self.prog.params if p.kind == "scalar"]
        self.assertEqual(scalars, [etl.Param("scale", "f32", 0, (), "scalar"),
                                   etl.Param("half", "f16", 0, (), "scalar"),
                                   etl.Param("bscale", "bf16", 0, (), "scalar"),
                                   etl.Param("big", "i64", 0, (), "scalar"),
                                   etl.Param("n", "i32", 0, (), "scalar")])
        self.assertEqual(len([p for p in self.prog.params if p.kind == "tensor"]), 7)
        self.assertIn("scale: f32", repr(self.prog))
        norm = etl.load(artifact("rmsnorm_rope"), device="sim")
        self.assertEqual(norm.params[-1], etl.Param("eps", "f32", 0, (), "scalar"))

    def test_every_dtype(self):
        a = self.a
        # numpy scalars, a 0-d array and plain numbers all bind
        self.prog(**a, scale=np.float32(2.5), half=np.array(0.5), bscale=-2.0,
                  big=np.int64(1 << 40), n=37)
        x = a["x"]
        np.testing.assert_array_equal(a["y"], np.where(np.arange(48) < 37, x * 2.5, -1))
        np.testing.assert_array_equal(a["hy"], np.full(48, 1.5, np.float16))
        np.testing.assert_array_equal(a["ky"], np.arange(48) + (1 << 40))
        np.testing.assert_array_equal(a["z"], x * -2)
        # bound again: the new values are used
        self.prog(**a, scale=1.0, half=-1.0, bscale=0.5, big=-3, n=48)
        np.testing.assert_array_equal(a["y"], x)
        np.testing.assert_array_equal(a["hy"], np.zeros(48, np.float16))
        np.testing.assert_array_equal(a["ky"], np.arange(48) - 3)
        np.testing.assert_array_equal(a["z"], x * 0.5)

    def test_rounding_f16_bf16(self):
        # 1 + 2^-11 is halfway between two f16 values: to even (1.0); bf16 keeps 8 bits
        self.prog(**self.a, **dict(self.s, half=1 + 2 ** -11, bscale=1 + 2 ** -8 + 2 ** -12))
        np.testing.assert_array_equal(self.a["hy"], np.full(48, 2.0, np.float16))
        np.testing.assert_array_equal(self.a["z"], self.a["x"] * (1 + 2 ** -7))

    @unittest.skipIf(torch is None, "python3-torch is not installed")
    def test_torch_scalar(self):
        self.prog(**self.a, **dict(self.s, scale=torch.tensor(3.0), n=torch.tensor(48)))
        np.testing.assert_array_equal(self.a["y"], self.a["x"] * 3)

    def test_misuse(self):
        a, s = self.a, self.s
        with self.assertRaisesRegex(etl.DTypeError, "scalar 'n' is i32; got the non-integer 1.5"):
            self.prog(**a, **dict(s, n=1.5))
        with self.assertRaisesRegex(etl.DTypeError, "scalar 'scale' is f32; got 'x'"):
            self.prog(**a, **dict(s, scale="x"))
        with self.assertRaisesRegex(etl.DTypeError, "scalar 'big' is i64; got True"):
            self.prog(**a, **dict(s, big=True))
        with self.assertRaisesRegex(etl.InvalidValueError, "'n' = 2147483648 does not fit in i32"):
            self.prog(**a, **dict(s, n=2 ** 31))
        with self.assertRaisesRegex(etl.InvalidValueError, "'half' = 1000000.0 overflows f16"):
            self.prog(**a, **dict(s, half=1e6))
        with self.assertRaisesRegex(etl.DTypeError, "expected a number"):
            self.prog(**a, **dict(s, scale=np.ones(2, np.float32)))
        with self.assertRaisesRegex(etl.NotFoundError, "no tensor, scalar or dim 'eps'.*scalars: "):
            self.prog(**a, **s, eps=1.0)
        np.testing.assert_array_equal(a["y"], -1)  # nothing ran
        fresh = etl.compile(os.path.join(self.tmp.name, "scal.etl"), targets=["sim"], device="sim")
        with self.assertRaisesRegex(etl.UnboundError, "scalar 'big' \\(i64\\) is not bound"):
            fresh(**a, **dict((k, v) for k, v in s.items() if k != "big"))
        np.testing.assert_array_equal(a["y"], -1)


NARROW_ETL = """
kernel narrow<N: dim>(a: tensor<u8>[N], b: tensor<i8>[N], h: tensor<u16>[N], w: tensor<u32>[N],
                      ya: tensor<u8>[N], yb: tensor<i8>[N], yh: tensor<u16>[N],
                      yw: tensor<u32>[N], add: u8) where N % 16 == 0 {
  task t[i in 0 .. N / 16] {
    store(ya[i * 16 .. +16], load(a[i * 16 .. +16]) + add);
    store(yb[i * 16 .. +16], load(b[i * 16 .. +16]) >> 1);
    store(yh[i * 16 .. +16], load(h[i * 16 .. +16]) * 3);
    store(yw[i * 16 .. +16], load(w[i * 16 .. +16]) >> 4);
  }
}
"""


class NarrowTypes(unittest.TestCase):
    """numpy int8/uint8/uint16/uint32 arrays and a u8 scalar bind to i8/u8/u16/u32."""

    def test_numpy_narrow_dtypes(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "narrow.etl")
            with open(src, "w") as f:
                f.write(NARROW_ETL)
            prog = etl.compile(src, targets=["sim"], device="sim")
        self.assertIn(etl.Param("add", "u8", 0, (), "scalar"), prog.params)
        n = 32
        a = np.arange(n, dtype=np.uint8) * 9
        b = (np.arange(n) * 37 - 500).astype(np.int8)
        h = (np.arange(n) * 4099).astype(np.uint16)
        w = (np.arange(n, dtype=np.uint64) * 2654435761 % 2 ** 32).astype(np.uint32)
        ya, yb = np.zeros(n, np.uint8), np.zeros(n, np.int8)
        yh, yw = np.zeros(n, np.uint16), np.zeros(n, np.uint32)
        prog(a=a, b=b, h=h, w=w, ya=ya, yb=yb, yh=yh, yw=yw, add=200)
        np.testing.assert_array_equal(ya, (a.astype(np.int64) + 200) % 256)  # wraps
        np.testing.assert_array_equal(yb, b >> 1)  # arithmetic
        np.testing.assert_array_equal(yh, (h.astype(np.int64) * 3) % 65536)
        np.testing.assert_array_equal(yw, w >> 4)  # logical
        with self.assertRaisesRegex(etl.InvalidValueError, "'add' = 256 does not fit in u8"):
            prog(a=a, b=b, h=h, w=w, ya=ya, yb=yb, yh=yh, yw=yw, add=256)
        with self.assertRaisesRegex(etl.DTypeError, "tensor 'a'"):
            prog(a=a.astype(np.int8), b=b, h=h, w=w, ya=ya, yb=yb, yh=yh, yw=yw, add=1)
        prog.close()


if __name__ == "__main__":
    print("etl from %s, runtime %s, numpy %s, torch %s" %
          (os.path.dirname(etl.__file__), etl._lib.path, np.__version__,
           torch.__version__ if torch else "absent (its tests skip)"))
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed, %d skipped" %
          (result.testsRun - failed - len(result.skipped), failed, len(result.skipped)))
    sys.exit(1 if failed else 0)
