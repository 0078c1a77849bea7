"""Tests of etl.torch_op (python/etl/_torch_op.py): a program as one
torch.library custom op, on the sim device with CPU tensors.

    test_torch_op.py            the op: results against torch references
                                (rowsum, moe, in an nn.Module, in place),
                                shape inference under FakeTensorMode and
                                make_fx (one opaque node), bad arguments
    test_torch_op.py compile    torch.compile of a module calling the op
                                (and torch.library.opcheck where torch has it)

Run by ctest (`python_torch_op`, `python_torch_compile`) with Debian's
/usr/bin/python3, PYTHONPATH=python and ETL_BUILD_DIR=<build>. Exits 77
(skipped) with the reason when torch is not installed, and in `compile`
mode when this torch has no torch.compile (Debian 12's is 1.13; it came in
2.0) or cannot compile here.
"""
import os
import sys
import unittest

try:
    import numpy as np
    import torch
except ImportError as e:
    print("SKIP: %s for %s (apt-get install python3-numpy python3-torch)" % (e, sys.executable))
    sys.exit(77)

import etl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_etl import artifact, moe_ref  # noqa: E402  (the shared helpers)

COMPILE = sys.argv[1:] == ["compile"]


def sim(name):
    return etl.load(artifact(name), device="sim")


def moe_inputs(t=6, h=32, e=4, seed=3):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(t, h, generator=g) - 0.5, torch.rand(h, e, generator=g) - 0.5,
            (torch.rand(e, h, h, generator=g) - 0.5) / 4)


class Op(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rowsum = etl.torch_op(sim("rowsum"))
        cls.moe = etl.torch_op(sim("moe"))

    def test_schema(self):
        # read tensors in, written tensors out; K is the extent of no tensor's axis
        self.assertEqual(str(self.rowsum._schema).split("::")[1], "rowsum(Tensor x) -> Tensor")
        self.assertRegex(str(self.moe._schema),
                         r"^etl::moe\w*\(Tensor x, Tensor wr, Tensor w, int K\) -> Tensor$")
        norm = etl.torch_op(sim("rmsnorm_rope"), inplace=("kcache", "vcache"))
        self.assertRegex(str(norm._schema), r"^etl::rmsnorm_rope\w*\(Tensor x, Tensor wn, "
                         r"Tensor wq, Tensor wk, Tensor wv, Tensor cos_t, Tensor sin_t, "
                         r"Tensor pos, Tensor page_table, Tensor\(a!\) kcache, "
                         r"Tensor\(b!\) vcache, float eps, int NP, int MP\) -> Tensor$")

    def test_rowsum(self):
        x = torch.rand(300, 1000)
        y = self.rowsum(x)
        self.assertEqual((y.shape, y.dtype), ((300,), torch.float32))
        torch.testing.assert_close(y, x.sum(1), rtol=1e-4, atol=1e-3)
        # a new shape: no recompilation, the dims come from x
        x = torch.rand(7, 64)
        torch.testing.assert_close(self.rowsum(x), x.sum(1), rtol=1e-4, atol=1e-4)

    def test_reads_noncontiguous_and_grad_requiring_inputs(self):
        x = torch.rand(64, 20).t()  # (20, 64), not contiguous: read through a copy
        self.assertFalse(x.is_contiguous())
        torch.testing.assert_close(self.rowsum(x), x.sum(1), rtol=1e-4, atol=1e-4)
        w = torch.rand(5, 64, requires_grad=True)  # read only: fine
        torch.testing.assert_close(self.rowsum(w).detach(), w.detach().sum(1), rtol=1e-4,
                                   atol=1e-4)

    def test_moe_dim_argument(self):
        x, wr, w = moe_inputs()
        out = self.moe(x, wr, w, K=2)
        self.assertEqual(out.shape, x.shape)
        np.testing.assert_allclose(out.numpy(), moe_ref(x.numpy(), wr.numpy(), w.numpy(), 2),
                                   rtol=1e-3, atol=1e-3)
        out1 = self.moe(x, wr, w, 1)
        np.testing.assert_allclose(out1.numpy(), moe_ref(x.numpy(), wr.numpy(), w.numpy(), 1),
                                   rtol=1e-3, atol=1e-3)

    def test_in_an_nn_module(self):
        rowsum = self.rowsum

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(16, 64)

            def forward(self, x):
                return torch.relu(rowsum(self.proj(x))) + 1

        torch.manual_seed(0)
        net, x = Net(), torch.rand(12, 16)
        with torch.no_grad():
            ref = torch.relu(net.proj(x).sum(1)) + 1
        torch.testing.assert_close(net(x), ref, rtol=1e-4, atol=1e-4)

    def test_inplace(self):
        op = etl.torch_op(sim("rowsum"), name="rowsum_into", inplace="y")
        self.assertEqual(str(op._schema), "etl::rowsum_into(Tensor x, Tensor(a!) y) -> ()")
        x, y = torch.rand(9, 128), torch.zeros(9)
        self.assertIsNone(op(x, y))
        torch.testing.assert_close(y, x.sum(1), rtol=1e-4, atol=1e-4)
        # torch's rule: a leaf that requires grad is not written in place
        with self.assertRaises(etl.ReadOnlyError):
            op(x, torch.zeros(9, requires_grad=True))


class ShapeInference(unittest.TestCase):
    """The fake kernel: output shapes from the artifact's symbols, nothing run."""

    @classmethod
    def setUpClass(cls):
        cls.rowsum_prog = sim("rowsum")
        cls.rowsum = etl.torch_op(cls.rowsum_prog)
        cls.moe = etl.torch_op(sim("moe"))
        cls.norm = etl.torch_op(sim("rmsnorm_rope"))

    def test_fake_tensors(self):
        from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
        with FakeTensorMode():
            y = self.rowsum(torch.empty(1 << 20, 4096))  # 16 GiB: never allocated
            out = self.moe(torch.empty(5, 64), torch.empty(64, 8), torch.empty(8, 64, 64), 3)
            # rmsnorm_rope: q_out [B, 2, D2], kcache [NP * 16, 2, D2], vcache [NP * 16, 2 * D2]
            q, k, v = self.norm(torch.empty(3, 32), torch.empty(32), torch.empty(32, 2, 16),
                                torch.empty(32, 2, 16), torch.empty(32, 32),
                                torch.empty(40, 16), torch.empty(40, 16),
                                torch.empty(3, dtype=torch.int32),
                                torch.empty(6, dtype=torch.int32), 1e-6, 5, 2)
        self.assertIsInstance(y, FakeTensor)
        self.assertEqual((y.shape, y.dtype), ((1 << 20,), torch.float32))
        self.assertEqual(out.shape, (5, 64))
        self.assertEqual([q.shape, k.shape, v.shape], [(3, 2, 16), (80, 2, 16), (80, 32)])

    def test_make_fx_sees_one_opaque_op(self):
        from torch.fx.experimental.proxy_tensor import make_fx
        g = make_fx(lambda x: self.rowsum(x * 2) + 1, tracing_mode="fake")(torch.rand(4, 8))
        calls = [n.target for n in g.graph.nodes if n.op == "call_function"]
        self.assertEqual(calls.count(self.rowsum), 1, calls)
        self.assertEqual(len(calls), 3, calls)  # mul, the op, add: nothing of ETL inside
        x = torch.rand(6, 32)
        torch.testing.assert_close(g(x), (x * 2).sum(1) + 1, rtol=1e-4, atol=1e-4)

    def test_fake_checks_arguments_too(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode(), self.assertRaisesRegex(etl.DTypeError, "torch.float32"):
            self.rowsum(torch.empty(4, 8, dtype=torch.float64))


class Misuse(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.prog = sim("rowsum")
        cls.rowsum = etl.torch_op(cls.prog, name="rowsum_misuse")
        cls.moe = etl.torch_op(sim("moe"), name="moe_misuse")

    def test_torch_op_arguments(self):
        with self.assertRaisesRegex(TypeError, "prog must be an etl.Program"):
            etl.torch_op(artifact("rowsum"))
        with self.assertRaisesRegex(etl.NotFoundError, "'x' is not a tensor the program writes"):
            etl.torch_op(self.prog, inplace=("x",))
        with self.assertRaisesRegex(etl.InvalidValueError, "an identifier is expected"):
            etl.torch_op(self.prog, name="row sum")
        with self.assertRaisesRegex(etl.InvalidValueError, "etl::rowsum_misuse exists already"):
            etl.torch_op(self.prog, name="rowsum_misuse")
        closed = sim("rowsum")
        closed.close()
        with self.assertRaisesRegex(etl.InvalidHandleError, "closed"):
            etl.torch_op(closed)

    def test_call_arguments(self):
        with self.assertRaisesRegex(etl.DTypeError,
                                    r"tensor 'x' must be torch.float32 \(the program's f32\), "
                                    "not torch.float64"):
            self.rowsum(torch.rand(4, 8, dtype=torch.float64))
        with self.assertRaisesRegex(etl.BindingError, "'x' has 1 dimensions"):
            self.rowsum(torch.rand(8))
        x, wr, w = moe_inputs()
        with self.assertRaisesRegex(etl.BindingError,
                                    "dim H is 32 in tensor 'x' but 16 in tensor 'wr'"):
            self.moe(x, wr[:16], w, 2)
        with self.assertRaisesRegex(etl.InvalidValueError, "dim K = 0"):
            self.moe(x, wr, w, 0)
        with self.assertRaisesRegex(RuntimeError, "missing value for argument 'K'"):
            self.moe(x, wr, w)  # torch's own schema check
        # the runtime's checks arrive as the etl class: rowsum's `where N % 4 == 0`
        with self.assertRaisesRegex(etl.BindingError, "N % 4 == 0"):
            self.rowsum(torch.rand(3, 10))

    def test_closed_program(self):
        prog = sim("rowsum")
        op = etl.torch_op(prog, name="rowsum_closed")
        prog.close()
        with self.assertRaisesRegex(etl.InvalidHandleError, "its program was closed"):
            op(torch.rand(4, 8))


class Compile(unittest.TestCase):
    """torch.compile of a module around the op (run in `compile` mode)."""

    def test_compiled_module(self):
        rowsum = etl.torch_op(sim("rowsum"), name="rowsum_compiled")

        class Net(torch.nn.Module):
            def forward(self, x):
                return rowsum(torch.sin(x)) * 2

        net = torch.compile(Net(), fullgraph=True)  # one graph: the op does not break it
        for shape in ((8, 64), (13, 128)):
            x = torch.rand(*shape)
            torch.testing.assert_close(net(x), torch.sin(x).sum(1) * 2, rtol=1e-4, atol=1e-4)

    def test_opcheck(self):
        if not hasattr(torch.library, "opcheck"):
            self.skipTest("torch %s has no torch.library.opcheck" % torch.__version__)
        moe = etl.torch_op(sim("moe"), name="moe_opcheck")
        torch.library.opcheck(moe, (*moe_inputs(), 2))


def compile_unavailable():
    """Why torch.compile cannot run here, or None."""
    if not hasattr(torch, "compile"):
        return "torch %s has no torch.compile (it came in 2.0; Debian 12 ships 1.13)" % \
            torch.__version__
    try:
        torch.compile(lambda x: x + 1)(torch.ones(2))
    except Exception as e:  # e.g. no C compiler for inductor's CPU code
        return "torch.compile does not run here: %s: %s" % (type(e).__name__, e)
    return None


if __name__ == "__main__":
    if COMPILE:
        why = compile_unavailable()
        if why:
            print("SKIP: " + why)
            sys.exit(77)
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(Compile)
    else:
        suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromTestCase(c)
                                   for c in (Op, ShapeInference, Misuse))
    sys.exit(0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1)
