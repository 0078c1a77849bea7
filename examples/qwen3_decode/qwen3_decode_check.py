"""Generate tokens with examples/qwen3_decode on sim (or a GPU), checked against PyTorch.

    /usr/bin/python3 qwen3_decode_check.py ARTIFACT [--dims tiny|0.6b|8b]
        [--layers L] [--vocab V] [--kv LEN,LEN,...] [--steps N]
        [--device sim|cuda|auto] [--race-check] [--profile FILE] [--seed N]

One loaded program generates N tokens greedily for a batch of requests:
each step is one `prog(...)` call (the whole decode step, all L layers,
lm_head and argmax, in one megakernel) with every tensor bound in place; the
host then advances the state in place (kv_len += 1, tok <- next), so the KV
caches, positions and tokens live in the bound tensors across steps. Each
request starts with a random prompt already in its cache (--kv gives the
cache lengths before the first step; ragged). The weights, the embedding,
the start tokens and the old cache contents are seeded random bf16 values.
The reference is the same model in PyTorch (CPU, f32 from those same bf16
values) generating from the same start, rounding to bf16 exactly where the
kernel does (each norm's matmul input, the bf16 product x * ln, with the
row's 1 / rms applied to the f32 matmul result; q, the new k/v cache rows,
the attention output, h1, the SiLU product, each layer's output). Checked
at every step:
the next token of every request (exactly) and the logits; after the last
step the whole K and V caches of every layer.

Tolerance (stated and derived, as in decode_layer_check.py): both sides
compute the same formula in f32 with the same bf16 rounding points; they
differ only in f32 summation order and the kernel's exp/rsqrt against
libm's (~1e-6 relative). Such a difference changes a stored bf16 value only
when it straddles a rounding boundary, and then by one bf16 ulp (at most
2^-7 of the value: 8 significant bits). A flip propagates: a matmul over K
inputs of which n flipped moves its output by about sqrt(n) * ulp(input) *
|w|, i.e. at most about one ulp of a typical input, and each later rounding
can flip again, so a stored activation (and a cache element) stays within
one ulp of itself plus about one ulp of a typical activation of the
reference: we allow |got - ref| <= 2^-6 (|ref| + rms(ref)) for the caches
(twice that estimate) with at least half the elements bit-identical. The
logits are f32 sums over H of (final normed row xf = bf16(x * lnf), scaled
by 1 / rms(x) after the sum) x (lm_head column w_v): every product is
exact, so they differ only through xf, whose elements
carry their own one-ulp flips (<= 2^-7 |xf_i|) plus what each of the L
layers passed on (about one ulp of a typical activation per layer, adding
up like a random walk: sqrt(L + 1) ulps in all). With random signs,
Sum_i d_i w_iv is then about 2^-7 sqrt(L + 1) rms(xf) |w_v| when every
element differs, so we allow |got - ref| <= 2^-6 sqrt(L + 1) rms(xf) |w_v|
per vocabulary column v (twice that; the columns' norms differ, see below).
Measured at tiny dims, 2 layers: up to about 0.7 of it.

The tokens must be equal, and for that to be a fair test every step's
reference top-1 logit must beat the top-2 by more than the two logits'
bounds together (so no legal rounding difference can swap them): the
script checks this margin on the reference and fails a case whose margin
is too thin (that seed would make the comparison meaningless; pick
another; --min-margin 0 reports it only, for runs that check something
else, such as the race check). The random lm_head has columns of different
norms (a log-normal scale per vocabulary entry), which spreads the top
logits while they still depend on every layer: a kernel that drops or
misorders work changes the tokens, or the logits by O(rms), far over the
bound (an attention scale of 0.1 instead of 1/sqrt(128) already moves the
logits by 6 to 7 times the bound).

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

DIMS = {  # H, NKV, G (NQ = NKV * G), F, L, V
    "0.6b": (1024, 8, 2, 3072, 28, 151936),   # Qwen3-0.6B
    "8b": (4096, 8, 4, 12288, 36, 151936),    # Qwen3-8B
    "tiny": (512, 2, 2, 6144, 2, 1000),       # small: 2 down blocks (FB = 3072), a ragged vocab tile
}


def make_model(dims, L, V, B, kv0, steps, gen):
    """Weights, start tokens and the paged caches (room for `steps` more tokens),
    on the generator's device (a CUDA generator: real dims in seconds)."""
    H, NKV, G, F = dims
    NQ = NKV * G
    MP = max(math.ceil((n + steps) / PS) for n in kv0) + 1
    NP = B * MP + 3  # spare pages nobody owns

    def rnd(*shape, scale=1.0, mean=0.0):
        return randn_bf16(gen, *shape, scale=scale, mean=mean)

    col = torch.exp(torch.randn(V, generator=gen, device=gen.device) * 0.25)  # log-normal column norms
    a = dict(
        embed=rnd(V, H),
        ln1=rnd(L, H, scale=0.1, mean=1.0),
        wq=rnd(L, H, NKV, G, DH, scale=H ** -0.5), wk=rnd(L, H, NKV, DH, scale=H ** -0.5),
        wv=rnd(L, H, NKV, DH, scale=H ** -0.5),
        qn=rnd(L, DH, scale=0.1, mean=1.0), kn=rnd(L, DH, scale=0.1, mean=1.0),
        kcache=rnd(L, NP * PS, NKV, DH), vcache=rnd(L, NP * PS, NKV, DH),
        wo=rnd(L, NKV, G, DH, H, scale=(NQ * DH) ** -0.5), ln2=rnd(L, H, scale=0.1, mean=1.0),
        wg=rnd(L, H, F, scale=H ** -0.5), wu=rnd(L, H, F, scale=H ** -0.5),
        wd=rnd(L, F, H, scale=F ** -0.5),
        lnf=rnd(H, scale=0.1, mean=1.0),
        lm_head=bf16(torch.randn(H, V, generator=gen, device=gen.device) * H ** -0.5 * col[None, :] * 4.0),
        tok=torch.randint(0, V, (B,), generator=gen, dtype=torch.int32, device=gen.device),
        logits=torch.zeros(B, V, device=gen.device),
        next=torch.zeros(B, dtype=torch.int32, device=gen.device),
    )
    a["page_table"] = page_table(B, MP, NP, gen)
    a["kv_len"] = torch.tensor([n + 1 for n in kv0], dtype=torch.int32,  # + this step's token
                               device=gen.device)
    a["cos_t"], a["sin_t"] = (t.to(gen.device) for t in rope_tables(MP * PS))
    return a, dict(NP=NP)


class Reference:
    """The same model in PyTorch (f32 on CPU), its own caches, one step at a time."""

    def __init__(self, a):
        self.w = {k: (v.float() if v.dtype == torch.bfloat16 else v) for k, v in a.items()
                  if k not in ("kcache", "vcache")}
        self.kc, self.vc = a["kcache"].clone(), a["vcache"].clone()
        self.pt = a["page_table"].long()

    def step(self, tok, kv_len):
        w = self.w
        L, H = w["ln1"].shape
        _, _, NKV, G, _ = w["wq"].shape
        B = tok.shape[0]

        def normed_matmul(t, g, *ws):
            # rmsnorm(t) * g @ W as the kernel orders it: the bf16 product t * g
            # is the matmul input (bf16 x bf16 products, f32 sums) and the
            # row's 1 / rms scales the f32 result (the norm's sum of squares
            # comes from the tasks that wrote t, so no norm task sits between
            # them and the matmul); also returns the scaled input, bf16(t * g) / rms
            r = torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + EPS)
            tg = bf16(t * g).float()
            return [(tg @ W.reshape(W.shape[0], -1)) * r for W in ws] + [tg * r]

        pos = (kv_len - 1).long()
        c, s = w["cos_t"][pos], w["sin_t"][pos]
        rows = cache_rows(self.pt, pos)
        x = w["embed"][tok.long()]
        for l in range(L):
            q, k, v, _ = normed_matmul(x, w["ln1"][l], w["wq"][l], w["wk"][l], w["wv"][l])
            q, k, v = q.reshape(B, NKV, G, DH), k.reshape(B, NKV, DH), v.reshape(B, NKV, DH)
            q = bf16(rope(rms(q, w["qn"][l]), c[:, None, None, :], s[:, None, None, :])).float()
            self.kc[l][rows] = bf16(rope(rms(k, w["kn"][l]), c[:, None, :], s[:, None, :]))
            self.vc[l][rows] = bf16(v)
            attn = bf16(attention(q, self.kc[l], self.vc[l], self.pt, kv_len)).float()
            h1 = bf16(x + attn.reshape(B, -1) @ w["wo"][l].reshape(-1, H)).float()
            gate, up, _ = normed_matmul(h1, w["ln2"][l], w["wg"][l], w["wu"][l])
            act = bf16(torch.nn.functional.silu(gate) * up).float()
            x = bf16(h1 + act @ w["wd"][l]).float()
        logits, xf = normed_matmul(x, w["lnf"], w["lm_head"])
        # the logit bound of the module docstring, per column: 2^-6 sqrt(L + 1) rms(xf) |w_v|
        lbound = (2.0 ** -6 * math.sqrt(L + 1) * xf.pow(2).mean().sqrt()
                  * w["lm_head"].pow(2).sum(0).sqrt())
        return logits, torch.argmax(logits, dim=1).to(torch.int32), lbound[None, :]


def margin(logits, bound):
    """The smallest top-1 minus top-2 gap over the rows, in units of the largest
    difference the logit bounds allow (theirs added: both may move)."""
    top = torch.topk(logits, 2, dim=1)
    b = bound[0][top.indices].sum(1)
    return ((top.values[:, 0] - top.values[:, 1]) / b).min().item()


def run_case(prog, args, kv0, seed):
    H, NKV, G, F, L, V = DIMS[args.dims]
    L = args.layers or L
    V = args.vocab or V
    B = len(kv0)
    gen = torch.Generator().manual_seed(seed)
    a, extra = make_model((H, NKV, G, F), L, V, B, kv0, args.steps, gen)
    ref = Reference(a)
    run = dict(a)
    if prog.is_gpu:
        run = {k: v.cuda() for k, v in run.items()}
    tag = "qwen3_decode %s L=%d V=%d B=%d kv=%s" % (args.dims, L, V, B, kv0)
    ok, t0, lines, min_margin = True, time.time(), [], float("inf")
    ref_tok, ref_kv = a["tok"].clone(), a["kv_len"].clone()
    for step in range(args.steps):
        ref_logits, ref_next, lbound = ref.step(ref_tok, ref_kv)
        min_margin = min(min_margin, margin(ref_logits, lbound))
        try:
            prog(race_check=args.race_check, profile=args.profile, eps=EPS, **extra, **run)
            if prog.is_gpu:
                prog.wait()
        except etl.errors.Error as e:  # a race, a watchdog timeout, a bad binding
            print("%s step %d: %s: %s FAIL" % (tag, step, type(e).__name__, e))
            return False
        got_next = run["next"].cpu()
        lok, line = compare("logits", run["logits"].cpu(), ref_logits, lbound)
        same = bool((got_next == ref_next).all())
        lines.append("step %d: next %s%s, %s" % (
            step, got_next.tolist(), "" if same else " (PyTorch: %s)" % ref_next.tolist(), line))
        ok = ok and lok and same
        if not same:
            break  # the sequences diverged: later steps compare different inputs
        # the state advances in place: the next step appends the token just chosen
        run["tok"].copy_(run["next"])
        run["kv_len"] += 1
        ref_tok, ref_kv = ref_next, ref_kv + 1
    if ok:
        for nm, r in (("kcache", ref.kc), ("vcache", ref.vc)):
            cok, line = compare(nm, run[nm].cpu(), r)
            ok = ok and cok
            lines.append(line)
    fair = min_margin > args.min_margin
    if not fair:
        lines.append("the reference's top-2 logits come within %.2f of what the bounds allow "
                     "(less than --min-margin %g): this seed cannot tell a wrong token from "
                     "rounding; pick another" % (min_margin, args.min_margin))
    print("%s on %s, %d steps (%.1f s, top-1 margin %.1f x the needed): %s" % (
        tag, prog.device, args.steps, time.time() - t0, min_margin,
        "OK" if ok and fair else "FAIL"))
    for line in lines:
        print("  " + line)
    return ok and fair


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("artifact")
    ap.add_argument("--dims", choices=sorted(DIMS), default="tiny")
    ap.add_argument("--layers", type=int, help="L (default: the model's; tiny: 2)")
    ap.add_argument("--vocab", type=int, help="V (default: the model's; tiny: 1000)")
    ap.add_argument("--kv", action="append",
                    help="cache lengths before the first step, one per request: LEN,LEN,... "
                         "(a case each; default 40,7)")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--device", default="sim")
    ap.add_argument("--race-check", action="store_true")
    ap.add_argument("--profile")
    ap.add_argument("--seed", type=int, default=43,
                    help="the first case's seed (default 43: at tiny dims, kv 40,7, 8 steps, the "
                         "reference's top-1 margin is 1.4 x the needed)")
    ap.add_argument("--min-margin", type=float, default=1.0,
                    help="fail a case whose reference top-1 logit beats the top-2 by less than "
                         "this many times the bounds' allowance (0: report only)")
    args = ap.parse_args()
    cases = args.kv or ["40,7"]
    prog = etl.load(args.artifact, device=args.device)
    failures = 0
    for i, case in enumerate(cases):
        kv0 = [int(t) for t in case.split(",")]
        if min(kv0) < 0:
            ap.error("--kv %r: lengths >= 0" % case)
        failures += not run_case(prog, args, kv0, args.seed + i)
    print("qwen3_decode: %d of %d cases match PyTorch" % (len(cases) - failures, len(cases)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
