"""Run examples/decode_layer on sim (or a GPU) and check it against PyTorch.

    /usr/bin/python3 decode_layer_check.py ARTIFACT [--dims 0.6b|8b|tiny]
        [--case B:LEN,LEN,...]... [--device sim|cuda|auto] [--race-check]
        [--profile FILE] [--seed N]

Each case is a batch with one KV length per request (ragged; the length
counts the token this step appends). The weights, the inputs and the old
cache contents are seeded random bf16 values; the reference is PyTorch
(CPU) computing the layer in f32 from those same bf16 values, rounding to
bf16 exactly where the kernel does: the matmul inputs (x * ln1 and h1 * ln2,
whose products with the bf16 weights sum in f32, the row's RMS scale applied
after), q, the new k/v cache rows, the attention output, h1, silu(g) * u and
out. Checked: `out`, and the whole K and
V caches (so a row written to the wrong page, or not written, shows).

Tolerance (stated and justified): both sides compute the same formula in
f32 with the same bf16 rounding points; they differ only in f32 summation
order and the kernel's exp/rsqrt vs libm's (~1e-6 relative). Such a
difference changes a stored bf16 value only when it straddles a rounding
boundary, and then by one bf16 ulp (at most 2^-7 |value|: 8 significant
bits). Those one-ulp flips propagate: a matmul over K inputs of which n
flipped moves its output by about sqrt(n) * ulp(input) * |w| with
|w| ~ K^-1/2, i.e. at most about one ulp of a typical input; each later
rounding can flip again. So an element of `out` (and of the caches) may
differ from the reference by one ulp of itself plus about one ulp of a
typical activation: we allow |got - ref| <= 2^-6 (|ref| + rms(ref)), twice
that estimate, and require at least half the elements bit-identical (the
measured worst case is printed: about 0.4 of the bound, 75-100% identical).
A real bug (a cache row on a wrong page, a chunk run before its k/v, a wrong
head) moves values by O(rms(ref)), over 50 times the bound.

Exit status 0 when every case passes, 1 otherwise, 77 (skipped) without
numpy/torch.
"""
import argparse
import math
import os
import sys
import time

try:
    import numpy as np  # noqa: F401 (etl's tensors)
    import torch
except ImportError as e:
    print("SKIP: %s for %s (apt-get install python3-numpy python3-torch)" % (e, sys.executable))
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import etl  # noqa: E402
from qwen3_ref import (DH, EPS, PS, attention, bf16, cache_rows, compare, page_table,  # noqa: E402
                       randn_bf16, rms, rope, rope_tables)

DIMS = {  # H, NKV, G (NQ = NKV * G), F
    "0.6b": (1024, 8, 2, 3072),   # Qwen3-0.6B
    "8b": (4096, 8, 4, 12288),    # Qwen3-8B
    "tiny": (256, 2, 2, 6144),    # small, with two down column blocks (FB = 3072)
}


def make_case(dims, kv_lens, gen):
    H, NKV, G, F = dims
    B = len(kv_lens)
    NQ = NKV * G
    MP = max(math.ceil(n / PS) for n in kv_lens) + 1
    NP = B * MP + 3  # spare pages nobody owns

    def rnd(*shape, scale=1.0, mean=0.0):
        return randn_bf16(gen, *shape, scale=scale, mean=mean)

    a = dict(
        x=rnd(B, H), ln1=rnd(H, scale=0.1, mean=1.0),
        wq=rnd(H, NKV, G, DH, scale=H ** -0.5), wk=rnd(H, NKV, DH, scale=H ** -0.5),
        wv=rnd(H, NKV, DH, scale=H ** -0.5),
        qn=rnd(DH, scale=0.1, mean=1.0), kn=rnd(DH, scale=0.1, mean=1.0),
        kcache=rnd(NP * PS, NKV, DH), vcache=rnd(NP * PS, NKV, DH),
        wo=rnd(NKV, G, DH, H, scale=(NQ * DH) ** -0.5), ln2=rnd(H, scale=0.1, mean=1.0),
        wg=rnd(H, F, scale=H ** -0.5), wu=rnd(H, F, scale=H ** -0.5),
        wd=rnd(F, H, scale=F ** -0.5), out=torch.zeros(B, H, dtype=torch.bfloat16),
    )
    a["page_table"] = page_table(B, MP, NP, gen)
    a["kv_len"] = torch.tensor(kv_lens, dtype=torch.int32)
    a["cos_t"], a["sin_t"] = rope_tables(MP * PS)
    return a, dict(NP=NP)


def reference(a):
    """out, kcache, vcache after the step, computed by PyTorch in f32."""
    f = {k: (v.float() if v.dtype == torch.bfloat16 else v) for k, v in a.items()}
    x = f["x"]
    B, H = x.shape
    _, NKV, G, _ = f["wq"].shape

    def normed_matmul(t, w, *ws):
        # rmsnorm(t) * w @ W, as the kernel orders it: the bf16 product t * w
        # is the matmul input (bf16 x bf16 products, f32 sums), the row's
        # 1 / rms scales the f32 result
        r = torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + EPS)
        tw = bf16(t * w).float()
        return [(tw @ W.reshape(W.shape[0], -1)) * r for W in ws]

    q, k, v = normed_matmul(x, f["ln1"], f["wq"], f["wk"], f["wv"])
    q, k, v = q.reshape(B, NKV, G, DH), k.reshape(B, NKV, DH), v.reshape(B, NKV, DH)
    pos = (a["kv_len"] - 1).long()
    c, s = f["cos_t"][pos], f["sin_t"][pos]  # [B, DH2]
    q = bf16(rope(rms(q, f["qn"]), c[:, None, None, :], s[:, None, None, :])).float()
    k = bf16(rope(rms(k, f["kn"]), c[:, None, :], s[:, None, :]))
    v = bf16(v)
    kc, vc = a["kcache"].clone(), a["vcache"].clone()
    pt = a["page_table"].long()
    rows = cache_rows(pt, pos)
    kc[rows], vc[rows] = k, v
    attn = bf16(attention(q, kc, vc, pt, a["kv_len"])).float()
    h1 = bf16(x + attn.reshape(B, -1) @ f["wo"].reshape(-1, H)).float()
    gate, up = normed_matmul(h1, f["ln2"], f["wg"], f["wu"])
    act = bf16(torch.nn.functional.silu(gate) * up).float()
    out = bf16(h1 + act @ f["wd"])
    return out, kc, vc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("artifact")
    ap.add_argument("--dims", choices=sorted(DIMS), default="0.6b")
    ap.add_argument("--case", action="append",
                    help="B:LEN,LEN,... (default: 1:208 and 3:1,128,45)")
    ap.add_argument("--device", default="sim")
    ap.add_argument("--race-check", action="store_true")
    ap.add_argument("--profile")
    ap.add_argument("--seed", type=int, default=12)
    args = ap.parse_args()
    cases = args.case or ["1:208", "3:1,128,45"]
    prog = etl.load(args.artifact, device=args.device)
    failures = 0
    for i, case in enumerate(cases):
        n, lens = case.split(":")
        kv_lens = [int(t) for t in lens.split(",")]
        if len(kv_lens) != int(n) or min(kv_lens) < 1:
            ap.error("case %r: B lengths, each >= 1" % case)
        gen = torch.Generator().manual_seed(args.seed + i)
        a, extra = make_case(DIMS[args.dims], kv_lens, gen)
        ref_out, ref_k, ref_v = reference(a)
        t0 = time.time()
        run = dict(a)
        if args.device != "sim" and prog.is_gpu:
            run = {k: v.cuda() for k, v in run.items()}
        try:
            prog.run(race_check=args.race_check, profile=args.profile, eps=EPS, **extra, **run)
            if prog.is_gpu:
                prog.wait()
        except etl.errors.Error as e:  # a race, a watchdog timeout, a bad binding
            failures += 1
            print("decode_layer %s B=%d kv_len=%s: %s: %s FAIL" % (
                args.dims, len(kv_lens), kv_lens, type(e).__name__, e))
            continue
        if prog.is_gpu:
            run = {k: v.cpu() for k, v in run.items()}
        secs = time.time() - t0
        oks = [compare(nm, run[nm], r) for nm, r in
               (("out", ref_out), ("kcache", ref_k), ("vcache", ref_v))]
        ok = all(o for o, _ in oks)
        failures += not ok
        print("decode_layer %s B=%d kv_len=%s on %s (%.1f s): %s %s" % (
            args.dims, len(kv_lens), kv_lens, prog.device if hasattr(prog, "device") else
            args.device, secs, "; ".join(line for _, line in oks), "OK" if ok else "FAIL"))
    print("decode_layer: %d of %d cases match PyTorch" % (len(cases) - failures, len(cases)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
