"""Writes .npy inputs (and numpy references where the example has one) for
running an example with etlrun: tests/etlrun/run_example.sh calls
`make_inputs.py EXAMPLE DIR` and gets back, on stdout, the etlrun options:
--dim for dims no tensor shape implies, --in for every tensor, --scalar for
each scalar parameter, --check for each output with a reference. Examples without a numpy reference here get
none (run_example.sh then checks that two runs with different worker counts
agree). Small shapes: this runs in CI.
"""
import os
import sys

import numpy as np

ex, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)
tensors, refs, dims, scalars = {}, {}, {}, {}


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def silu(v):
    return v / (1 + np.exp(-v))


if ex == "rowsum":
    x = f32(20, 152)
    tensors = dict(x=x, y=np.zeros(20, np.float32))
    refs = dict(y=x.sum(axis=1))
elif ex == "softmax":
    x = f32(3, 200)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    tensors = dict(x=x, y=np.zeros_like(x))
    refs = dict(y=e / e.sum(axis=1, keepdims=True))
elif ex == "mlp":
    x, wg, wu, wd = f32(8, 32), f32(32, 48, scale=0.2), f32(32, 48, scale=0.2), f32(48, 32, scale=0.2)
    tensors = dict(x=x, wg=wg, wu=wu, wd=wd, out=np.zeros((8, 32), np.float32))
    refs = dict(out=(silu(x @ wg) * (x @ wu)) @ wd)
elif ex == "gemv":
    w32, x = f32(40, 296, scale=0.1), f32(296)
    w16 = w32.astype(np.float16)
    tensors = dict(w16=w16, w32=w32, x=x, y16=np.zeros(40, np.float32),
                   y32=np.zeros(40, np.float32))
    refs = dict(y16=w16.astype(np.float32) @ x, y32=w32 @ x)
elif ex == "gemv_atomic":
    # small integers: the atomic sums are exact in any order, so the two
    # runs (1 and 3 workers) agree bit for bit
    w32 = rng.integers(-3, 4, (40, 300)).astype(np.float32)
    x = rng.integers(-2, 3, 300).astype(np.float32)
    w16 = w32.astype(np.float16)
    tensors = dict(w16=w16, w32=w32, x=x, y16=np.zeros(40, np.float32),
                   y32=np.zeros(40, np.float32))
    refs = dict(y16=w32 @ x, y32=w32 @ x)
elif ex == "moe":
    t, h, e, k = 20, 64, 4, 2
    x, wr, w = f32(t, h), f32(h, e), f32(e, h, h, scale=0.125)
    logits = x @ wr
    ref = np.zeros((t, h))
    for i in range(t):
        pick = sorted(range(e), key=lambda j: (-logits[i, j], j))[:k]
        p = np.exp(logits[i, pick] - logits[i, pick[0]])
        for j, ej in enumerate(pick):
            ref[i] += p[j] / p.sum() * (x[i].astype(np.float64) @ w[ej])
    tensors = dict(x=x, wr=wr, w=w, out=np.zeros((t, h), np.float32))
    refs = dict(out=ref)
    dims = dict(K=k)
elif ex == "decode_attention":
    b, nh, np_, mp, ps, dh = 2, 2, 6, 3, 16, 32
    tensors = dict(q=f32(b, nh, dh), kcache=f32(np_ * ps, nh, dh), vcache=f32(np_ * ps, nh, dh),
                   page_table=rng.integers(0, np_, (b, mp)).astype(np.int32),
                   kv_len=np.array([37, 48], np.int32), out=np.zeros((b, nh, dh), np.float32))
    dims = dict(NP=np_)
elif ex == "rmsnorm_rope":
    b, d2, p, np_, mp, ps = 3, 16, 40, 10, 3, 16
    tensors = dict(x=f32(b, 2 * d2), wn=f32(2 * d2), wq=f32(2 * d2, 2, d2, scale=0.2),
                   wk=f32(2 * d2, 2, d2, scale=0.2), wv=f32(2 * d2, 2 * d2, scale=0.2),
                   cos_t=f32(p, d2), sin_t=f32(p, d2),
                   pos=np.array([0, 17, 39], np.int32),
                   page_table=rng.permutation(np_)[:b * mp].astype(np.int32),
                   q_out=np.zeros((b, 2, d2), np.float32),
                   kcache=np.zeros((np_ * ps, 2, d2), np.float32),
                   vcache=np.zeros((np_ * ps, 2 * d2), np.float32))
    dims = dict(D2=d2, MP=mp, NP=np_)
    # eps large enough to change q_out measurably, so a lost --scalar shows
    eps = 0.5
    scalars = dict(eps=eps)
    t = tensors
    x64 = t["x"].astype(np.float64)
    xn = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + eps) * t["wn"]
    # rotate_half pairs: dims (j, j + d2), i.e. q[:, 0, j] and q[:, 1, j]
    q = (xn @ t["wq"].reshape(2 * d2, 2 * d2)).reshape(b, 2, d2)
    c, s = t["cos_t"][t["pos"]], t["sin_t"][t["pos"]]
    refs = dict(q_out=np.stack([q[:, 0] * c - q[:, 1] * s, q[:, 0] * s + q[:, 1] * c], axis=1))
elif ex == "gemm":
    m, n, k = 40, 24, 56

    def bf16(x):  # bf16 bits (round to nearest even), saved as raw |V2 values
        u = x.view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)

    def widen(u):
        return (u.astype(np.uint32) << 16).view(np.float32)

    a, b = bf16(f32(m, k)), bf16(f32(k, n))
    tensors = dict(a=a.view("V2"), b=b.view("V2"), c=np.zeros((m, n), np.float32))
    refs = dict(c=widen(a).astype(np.float64) @ widen(b))
else:
    sys.exit("make_inputs.py: no inputs for example '%s'" % ex)

args = ["--dim %s=%d" % kv for kv in dims.items()]
args += ["--scalar %s=%r" % kv for kv in scalars.items()]
for name, a in tensors.items():
    path = os.path.join(out, name + ".npy")
    np.save(path, a)
    args.append("--in %s=%s" % (name, path))
for name, a in refs.items():
    path = os.path.join(out, name + ".ref.npy")
    np.save(path, a.astype(np.float32))
    args.append("--check %s=%s" % (name, path))
print(" ".join(args))
