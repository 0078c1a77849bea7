#!/usr/bin/env python3
"""gpu_bench.py — ETL's tensor-core programs on a CUDA GPU next to PyTorch.

    python3 scripts/gpu_bench.py [BUILD_DIR] [--reps N] [--quick] [--no-model]

Needs a CUDA device and a PyTorch with CUDA (exits 77 saying why when either
is missing). Loads the artifacts BUILD_DIR/examples/{gemm,gemm_tf32,mlp_bf16,
prefill_attention,decode_layer,qwen3_decode}.etlb (default build/) on "cuda" through the
Python package and runs each at the sizes below on torch's stream, next to
what PyTorch does for the same function: torch.mm (cuBLAS) for the GEMMs,
F.silu and three torch.mm for the MLP, scaled_dot_product_attention
(FlashAttention) plus torch.mm for prefill attention with o_proj, and for
one Qwen3 decode layer step (Qwen3-8B and 0.6B dims, paged KV cache) the
same step as about 30 PyTorch ops, run eagerly and replayed as a CUDA graph
(its GB/s: the weights and the KV rows read once, over ETL's time), and
the whole Qwen3 decode step (examples/qwen3_decode: embedding, every layer,
final norm, lm_head over the 151,936-token vocabulary, argmax) at Qwen3-0.6B
and -8B dims, batch 1, 4, 16, 64 (--quick: 1, 16), KV 1024, seeded random
weights made on the GPU, against the same step as PyTorch ops eager and as a
CUDA graph: tokens/s and % of HBM bandwidth (weights once and KV rows over
ETL's time), its logits against PyTorch's and the share of next tokens they
agree on.
--sim runs it all on the simulator against torch on the CPU at small sizes,
which checks this script (its times mean nothing).

Timing: per run, a CUDA event before the launch and one after it on the same
stream; the median of --reps runs after 3 warm-ups (ETL's runtime finishes a
run before it launches the next, so runs are timed one by one, and torch's
the same way for a like comparison). Both include the host's launch work
(ETL's: the run's state reset by a copy on the stream, then the launch);
the 128^3 GEMM row shows that fixed cost per run, and on a GPU the 128^3
GEMM is also captured into a CUDA graph (ETL's run inside
torch.cuda.graph, next to torch.mm's) and replayed: the replay's time, and
its error after the inputs changed (a replay must read them then). The inputs are fresh random data
(never zeros); every output is poisoned with NaN before the checked run.

Model: beside each ETL time, what scripts/perf_model.py (the latency-aware
timing model, docs/PERF_MODEL.md) predicts for that row on this GPU (its
gpus.def row; an H200's when the device is not there or on --sim, where the
model still runs: it needs no GPU), and model / ETL; nan where the model
does not describe the program or with --no-model. The model compiles each
program and reads its PTX and cubin (seconds per program, up to a minute for
the whole-step rows at B 64: ~800,000 tasks replayed); --sim skips the
cubin (SASS ratio 1), as its times mean nothing there.

Checks (not timing): each ETL output against a float32 reference computed by
PyTorch on the GPU (TF32 off) from the same inputs, as ||out - ref|| / ||ref||;
a row fails above its bound (bf16 inputs with f32 accumulation 1e-4, tf32
5e-3, bf16 outputs 2e-2) and the script then exits 1. It prints a table:
ETL ms and TFLOP/s, torch ms and TFLOP/s, ETL / torch time, and the error.
"""
import argparse
import math
import os
import statistics
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "python"))


def skip(why):
    print("gpu_bench: skipped: " + why)
    sys.exit(77)


try:
    import torch
    import torch.nn.functional as F
except ImportError:
    skip("PyTorch is not installed")

DEV = "cuda"  # "cpu" with --sim: the artifacts on sim, small sizes (checks this script)


def timed(fn, reps, after=None):
    """Median milliseconds of fn() over reps runs after 3 warm-ups, each
    between two CUDA events on the current stream; after() (an ETL run's
    wait, which raises its error) once the second event has completed."""
    times = []
    if DEV == "cpu":
        for i in range(1 + reps):
            t0 = time.perf_counter()
            fn()
            if after:
                after()
            if i:
                times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)
    for i in range(3 + reps):
        t0 = torch.cuda.Event(enable_timing=True)
        t1 = torch.cuda.Event(enable_timing=True)
        t0.record()
        fn()
        t1.record()
        t1.synchronize()
        if after:
            after()
        if i >= 3:
            times.append(t0.elapsed_time(t1))
    return statistics.median(times)


def timed_etl(prog, reps, **args):
    """timed() of one ETL run, queued on torch's stream and waited for after
    the second event. The arguments are bound once before, so the timed
    region holds etlRunAsync alone: its argument and counter uploads and the
    launch, which a bound program repeats on every run."""
    prog(**args)
    prog.wait()
    return timed(lambda: prog.run(), reps, prog.wait)


def rel_err(out, ref):
    out = out.double()
    ref = ref.double()
    if not torch.isfinite(out).all():
        return math.inf
    return (torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref)).item()


def run_etl(prog, **args):
    """One ETL run, finished (wait raises the run's error)."""
    prog(**args)
    prog.wait()


def gemm_case(prog, m, n, k, tf32, reps):
    dt = torch.float32 if tf32 else torch.bfloat16
    a = torch.randn(m, k, device=DEV).to(dt)
    b = torch.randn(k, n, device=DEV).to(dt)
    c = torch.full((m, n), math.nan, device=DEV)
    run_etl(prog, a=a, b=b, c=c)
    torch.backends.cuda.matmul.allow_tf32 = False
    ref = a.float() @ b.float()
    err = rel_err(c, ref)
    etl_ms = timed_etl(prog, reps, a=a, b=b, c=c)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch_ms = timed(lambda: torch.mm(a, b), reps)
    torch.backends.cuda.matmul.allow_tf32 = False
    return etl_ms, torch_ms, 2.0 * m * n * k, err


def graph_case(prog, n, reps):
    """The n^3 bf16 GEMM as a CUDA graph: ETL's run and torch.mm captured
    after a warm-up, the replays timed; then new inputs and a replay, whose
    output is checked against them."""
    bf = torch.bfloat16
    a = torch.randn(n, n, device=DEV).to(bf)
    b = torch.randn(n, n, device=DEV).to(bf)
    c = torch.full((n, n), math.nan, device=DEV)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        prog(a=a, b=b, c=c)  # the warm-up: plans and uploads this binding
        torch.mm(a, b)
    torch.cuda.current_stream().wait_stream(side)
    g, gt = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        prog(a=a, b=b, c=c)  # recorded, not run
    with torch.cuda.graph(gt):
        torch.mm(a, b)
    etl_ms, torch_ms = timed(g.replay, reps), timed(gt.replay, reps)
    a.copy_(torch.randn(n, n, device=DEV).to(bf))
    c.fill_(math.nan)
    g.replay()
    torch.cuda.synchronize()
    prog.wait()  # the warm-up's outcome
    return etl_ms, torch_ms, rel_err(c, a.float() @ b.float())


def mlp_case(prog, t, d, f, reps):
    bf = torch.bfloat16
    s = 1.0 / math.sqrt(d)
    x = torch.randn(t, d, device=DEV).to(bf)
    wg = (torch.randn(d, f, device=DEV) * s).to(bf)
    wu = (torch.randn(d, f, device=DEV) * s).to(bf)
    wd = (torch.randn(f, d, device=DEV) / math.sqrt(f)).to(bf)
    out = torch.full((t, d), math.nan, device=DEV)
    run_etl(prog, x=x, wg=wg, wu=wu, wd=wd, out=out)
    xf = x.float()
    h = (F.silu(xf @ wg.float()) * (xf @ wu.float())).to(bf)  # the program's h is bf16
    ref = h.float() @ wd.float()
    err = rel_err(out, ref)
    etl_ms = timed_etl(prog, reps, x=x, wg=wg, wu=wu, wd=wd, out=out)

    def torch_mlp():
        return torch.mm(F.silu(torch.mm(x, wg)) * torch.mm(x, wu), wd)

    torch_ms = timed(torch_mlp, reps)
    return etl_ms, torch_ms, 2.0 * t * d * f * 3, err


def prefill_case(prog, s, nkv, g, hid, reps, d=128):
    bf = torch.bfloat16
    q = torch.randn(s, nkv, g, d, device=DEV).to(bf)
    k = torch.randn(s, nkv, d, device=DEV).to(bf)
    v = torch.randn(s, nkv, d, device=DEV).to(bf)
    wo = (torch.randn(nkv, g, d, hid, device=DEV) / math.sqrt(nkv * g * d)).to(bf)
    out = torch.full((s, nkv, g, d), math.nan, device=DEV).to(bf)
    y = torch.full((s, hid), math.nan, device=DEV).to(bf)
    args = dict(q=q, k=k, v=v, out=out, wo=wo, y=y)
    run_etl(prog, **args)

    def heads(dtype):
        # [S, NKV, G, D] -> [1, NKV * G, S, D], contiguous; head g * G + r reads KV
        # head g (laid out and expanded outside the timed region: torch is timed
        # on its attention and GEMM alone)
        qh = q.to(dtype).reshape(s, nkv * g, d).transpose(0, 1).contiguous()[None]
        kh = k.to(dtype).transpose(0, 1).repeat_interleave(g, dim=0).contiguous()[None]
        vh = v.to(dtype).transpose(0, 1).repeat_interleave(g, dim=0).contiguous()[None]
        return qh, kh, vh, wo.to(dtype).reshape(nkv * g * d, hid)

    def torch_prefill(qh, kh, vh, w):
        o = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True)
        o = o[0].transpose(0, 1).reshape(s, nkv * g * d)
        return o, torch.mm(o, w)

    # the reference: the softmax written out in float32, one head at a time
    qh, kh, vh, w = heads(torch.float32)
    causal = torch.ones(s, s, dtype=torch.bool, device=DEV).tril()
    o_ref = torch.empty(nkv * g, s, d, device=DEV)
    for h in range(nkv * g):
        sc = (qh[0, h] @ kh[0, h].T) / math.sqrt(d)
        o_ref[h] = torch.softmax(sc.masked_fill(~causal, -math.inf), dim=1) @ vh[0, h]
    o_ref = o_ref.transpose(0, 1).reshape(s, nkv * g * d)
    y_ref = o_ref @ w
    err = max(rel_err(out.reshape(s, -1), o_ref), rel_err(y, y_ref))
    etl_ms = timed_etl(prog, reps, **args)
    bf_heads = heads(bf)
    torch_ms = (timed(lambda: torch_prefill(*bf_heads), reps)
                if hasattr(F, "scaled_dot_product_attention") else math.nan)
    nh = nkv * g
    flops = 4.0 * nh * d * s * (s + 1) / 2 + 2.0 * s * nh * d * hid  # causal QK^T, PV; o_proj
    return etl_ms, torch_ms, flops, err


def torch_ops():
    """(mm, einsum) for the PyTorch baselines. On the GPU the bf16 products
    are cuBLAS's: f32 accumulation, one rounding to bf16. A CPU's bf16
    kernels differ by CPU (Debian's torch 1.13 accumulates in bf16 without
    AVX-512 BF16: 4e-2 against the f32 reference at 0.6B dims), so on --sim
    the same products are taken in f32 and rounded once, and the torch err
    check holds on every CPU."""
    if DEV == "cuda":
        return torch.matmul, torch.einsum
    bf = torch.bfloat16

    def mm(p, q):
        return (p.float() @ q.float()).to(bf)

    def einsum(eq, p, q):
        return torch.einsum(eq, p.float(), q.float()).to(bf)
    return mm, einsum


def layer_context(kv_len, page_table, cos_t, sin_t, nkv, g, eps):
    """What every layer of one decode step shares: the cache rows this
    step's token lands on, the gather of each request's cached positions,
    the mask past each request's length, RoPE's cos and sin at the position."""
    import qwen3_ref
    PS = qwen3_ref.PS
    B = kv_len.shape[0]
    pos = (kv_len - 1).long()
    L = int(kv_len.max())
    p = torch.arange(L, device=kv_len.device)
    pt = page_table.long()
    return {"B": B, "NKV": nkv, "G": g, "eps": eps,
            "rows": pt[torch.arange(B, device=kv_len.device), pos // PS] * PS + pos % PS,
            "gather": pt[:, p // PS] * PS + p % PS,  # [B, L]
            "masked": p[None, :] >= kv_len[:, None],  # keys past each request's length
            "c": cos_t[pos][:, None, :], "s": sin_t[pos][:, None, :]}


def torch_rms(t, wt, eps):
    t = t.float()
    return (t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * wt.float()).to(torch.bfloat16)


def torch_layer(x, w, kc, vc, ctx):
    """One Qwen3 decode layer as PyTorch ops in bf16 (about 30 kernels):
    x [B, H]; w the layer's weights (decode_layer's names and shapes); the
    layer's caches kc, vc written in place at this step's rows."""
    import qwen3_ref
    DH, DH2 = qwen3_ref.DH, qwen3_ref.DH2
    bf = torch.bfloat16
    mm, einsum = torch_ops()
    B, NKV, G, eps, c, sn = ctx["B"], ctx["NKV"], ctx["G"], ctx["eps"], ctx["c"], ctx["s"]
    H = x.shape[1]

    def rope(t):
        t = t.float()
        lo, hi = t[..., :DH2], t[..., DH2:]
        return torch.cat([lo * c - hi * sn, hi * c + lo * sn], dim=-1).to(bf)

    xn = torch_rms(x, w["ln1"], eps)
    q = rope(torch_rms(mm(xn, w["wq"].reshape(H, -1)).reshape(B, NKV * G, DH), w["qn"], eps))
    k = rope(torch_rms(mm(xn, w["wk"].reshape(H, -1)).reshape(B, NKV, DH), w["kn"], eps))
    kc[ctx["rows"]] = k
    vc[ctx["rows"]] = mm(xn, w["wv"].reshape(H, -1)).reshape(B, NKV, DH)
    K = kc[ctx["gather"]].repeat_interleave(G, dim=2)  # [B, L, NQ, DH]
    V = vc[ctx["gather"]].repeat_interleave(G, dim=2)
    sc = einsum("bhd,blhd->bhl", q, K).float() / math.sqrt(DH)
    pr = torch.softmax(sc.masked_fill(ctx["masked"][:, None, :], -math.inf), dim=-1).to(bf)
    attn = einsum("bhl,blhd->bhd", pr, V).reshape(B, -1)
    h1 = x + mm(attn, w["wo"].reshape(-1, H))
    h2 = torch_rms(h1, w["ln2"], eps)
    wd = w["wd"]
    return h1 + mm(F.silu(mm(h2, w["wg"].reshape(H, -1))) * mm(h2, w["wu"].reshape(H, -1)),
                   wd.reshape(wd.shape[0], -1))


def graph_of(fn, reps):
    """Milliseconds of fn replayed as a CUDA graph (captured after two
    warm-up runs on a side stream); nan off the GPU."""
    if DEV != "cuda":
        return math.nan
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return timed(graph.replay, reps)


def decode_case(prog, dims_name, kv_lens, reps):
    """One Qwen3 decode layer step (examples/decode_layer) against the same
    step written as PyTorch ops in bf16 (about 30 kernels), eager and
    replayed as a CUDA graph. The error is against decode_layer_check.py's
    float32 reference (that script is the layer's correctness test)."""
    sys.path.insert(0, os.path.join(here, "..", "examples", "decode_layer"))
    import decode_layer_check as dl  # (it puts examples/common, qwen3_ref, on sys.path)
    import qwen3_ref

    H, NKV, G, FF = dl.DIMS[dims_name]
    DH = qwen3_ref.DH
    a, extra = dl.make_case(dl.DIMS[dims_name], kv_lens, torch.Generator().manual_seed(3))
    ref_out = dl.reference(a)[0]
    a = {k: v.to(DEV) for k, v in a.items()}
    a["out"].fill_(math.nan)
    run_etl(prog, eps=dl.EPS, **extra, **a)
    err = rel_err(a["out"].cpu(), ref_out)
    etl_ms = timed_etl(prog, reps, eps=dl.EPS, **extra, **a)

    kc, vc = a["kcache"].clone(), a["vcache"].clone()
    ctx = layer_context(a["kv_len"], a["page_table"], a["cos_t"], a["sin_t"], NKV, G, dl.EPS)
    lw = {k: a[k] for k in ("ln1", "wq", "wk", "wv", "qn", "kn", "wo", "ln2", "wg", "wu", "wd")}

    def step():
        return torch_layer(a["x"], lw, kc, vc, ctx)

    kc0, vc0 = kc.clone(), vc.clone()
    torch_err = rel_err(step().cpu(), ref_out)  # the baseline computes the same step
    kc.copy_(kc0)
    vc.copy_(vc0)
    eager_ms = timed(step, reps)
    graph_ms = graph_of(step, reps)
    wbytes = 2 * (H * (NKV * G + 2 * NKV) * DH + NKV * G * DH * H + 3 * H * FF)
    kvbytes = 2 * 2 * sum(kv_lens) * NKV * DH
    return etl_ms, eager_ms, graph_ms, (wbytes + kvbytes) / 1e9, err, torch_err


def step_case(prog, dims_name, B, kv, reps, layers=None, vocab=None):
    """The whole Qwen3 decode step (examples/qwen3_decode: embedding, L
    layers, final norm, lm_head, argmax) for B requests at KV length kv,
    seeded random weights made on the device (qwen3_decode_check.make_model),
    against the same step as PyTorch ops in bf16 (torch_layer per layer,
    then the norm, lm_head and argmax), eager and replayed as a CUDA graph.
    The error: ETL's logits against PyTorch's (both bf16 pipelines; that
    script checks the step against a float32 model), and the share of next
    tokens they agree on. Returns (etl ms, eager ms, graph ms, GB moved
    (weights once, KV rows read), logits rel err, tokens agreeing)."""
    sys.path.insert(0, os.path.join(here, "..", "examples", "qwen3_decode"))
    import qwen3_decode_check as qd  # (it puts examples/common on sys.path)
    import qwen3_ref

    H, NKV, G, FF, L, V = qd.DIMS[dims_name]
    L, V = layers or L, vocab or V
    gen = torch.Generator(device=DEV).manual_seed(5)
    a, extra = qd.make_model((H, NKV, G, FF), L, V, B, [kv - 1] * B, 1, gen)
    run_etl(prog, eps=qwen3_ref.EPS, **extra, **a)
    etl_logits, etl_next = a["logits"].clone(), a["next"].clone()
    etl_ms = timed_etl(prog, reps, eps=qwen3_ref.EPS, **extra, **a)

    kc, vc = a["kcache"].clone(), a["vcache"].clone()
    ctx = layer_context(a["kv_len"], a["page_table"], a["cos_t"], a["sin_t"], NKV, G, qwen3_ref.EPS)
    names = ("ln1", "wq", "wk", "wv", "qn", "kn", "wo", "ln2", "wg", "wu", "wd")
    lws = [{k: a[k][l] for k in names} for l in range(L)]
    mm, _ = torch_ops()

    def step():
        x = a["embed"][a["tok"].long()]
        for l in range(L):
            x = torch_layer(x, lws[l], kc[l], vc[l], ctx)
        logits = mm(torch_rms(x, a["lnf"], qwen3_ref.EPS), a["lm_head"]).float()
        return logits, torch.argmax(logits, dim=1)

    kc0, vc0 = kc.clone(), vc.clone()
    ref_logits, ref_next = step()
    err = rel_err(etl_logits, ref_logits)
    agree = (etl_next.long() == ref_next).float().mean().item()
    kc.copy_(kc0)
    vc.copy_(vc0)
    eager_ms = timed(step, reps)
    graph_ms = graph_of(step, reps)
    wbytes = 2 * (L * (H * (NKV * G + 2 * NKV) * qwen3_ref.DH + NKV * G * qwen3_ref.DH * H
                       + 3 * H * FF) + H * V) + 2 * B * H  # lm_head once, B embedding rows
    kvbytes = 2 * 2 * L * B * kv * NKV * qwen3_ref.DH
    return etl_ms, eager_ms, graph_ms, (wbytes + kvbytes) / 1e9, err, agree


def dl_dims(name):
    """(H, NKV, G, F) of decode_layer_check's dims `name` ("8b", "0.6b")."""
    sys.path.insert(0, os.path.join(here, "..", "examples", "decode_layer"))
    import decode_layer_check as dl
    return dl.DIMS[name]


def qd_dims(name):
    """(H, NKV, G, F, L, V) of qwen3_decode_check's dims `name` ("0.6b", "8b", "tiny")."""
    sys.path.insert(0, os.path.join(here, "..", "examples", "qwen3_decode"))
    import qwen3_decode_check as qd
    return qd.DIMS[name]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default=os.path.join(here, "..", "build"))
    ap.add_argument("--reps", type=int, default=20, help="timed runs per row (median)")
    ap.add_argument("--quick", action="store_true", help="the 4096 rows only")
    ap.add_argument("--no-model", action="store_true",
                    help="skip the timing model's column (seconds of CPU per row on a lent GPU)")
    ap.add_argument("--sim", action="store_true",
                    help="run on sim against torch on the CPU at small sizes (checks the script)")
    opts = ap.parse_args()
    global DEV
    if opts.sim:
        DEV = "cpu"
    elif not torch.cuda.is_available():
        skip("no CUDA device (torch.cuda.is_available() is False)")
    os.environ.setdefault("ETL_BUILD_DIR", opts.build)
    import etl  # after ETL_BUILD_DIR: the package finds the build's runtime through it

    torch.manual_seed(0)
    ex = os.path.join(opts.build, "examples")

    def load(name):
        return etl.load(os.path.join(ex, name + ".etlb"), device="sim" if opts.sim else "cuda")

    dev = "sim (torch on the CPU)" if opts.sim else torch.cuda.get_device_name()
    print("gpu_bench on %s (torch %s), median of %d runs" % (dev, torch.__version__, opts.reps))
    sys.path.insert(0, here)
    import def_facts
    import perf_model
    model_gpu = None if opts.sim else perf_model.gpu_of(dev)
    if model_gpu not in [r["id"] for r in def_facts.gpus() if r["key"] in
                         [t["key"] for t in def_facts.timings()]]:
        model_gpu = "h200"  # no ETL_GPU_TIMING row for this device: an H200's model
    etlc = os.path.join(opts.build, "compiler", "etlc")
    print("model: scripts/perf_model.py on %s%s" % (model_gpu, " (off: --no-model)" if opts.no_model else ""))

    def model(program, **binding):
        """The model's ms for this row, or nan (saying why) where it has no answer."""
        if opts.no_model:
            return math.nan
        try:
            return perf_model.model_ms(program, binding, model_gpu, etlc, sass=not opts.sim)
        except (KeyError, RuntimeError, ValueError) as e:
            print("model: %s %s: no prediction (%s)" % (program, binding, e))
            return math.nan
    rows = []
    gemm = load("gemm")
    big = 64 if opts.sim else 4096  # the large sizes, scaled down on sim
    sizes = [big] if opts.quick or opts.sim else [128, 1024, 2048, 4096, 8192]
    for n in sizes:
        rows.append(("gemm bf16", "%d^3" % n, 1e-4) + gemm_case(gemm, n, n, n, False, opts.reps) +
                    (model("gemm", M=n, N=n, K=n),))
    odd = (100, 70, 40) if opts.sim else (4000, 3000, 1000)
    if not opts.quick:
        rows.append(("gemm bf16", "%dx%dx%d" % odd, 1e-4) +
                    gemm_case(gemm, *odd, False, opts.reps) +
                    (model("gemm", M=odd[0], N=odd[1], K=odd[2]),))
    rows.append(("gemm tf32", "%d^3" % big, 5e-3) +
                gemm_case(load("gemm_tf32"), big, big, big, True, opts.reps) +
                (model("gemm_tf32", M=big, N=big, K=big),))
    t, f = (40, 96) if opts.sim else (4096, 12288)
    rows.append(("mlp bf16", "T%d D%d F%d" % (t, big, f), 2e-2) +
                mlp_case(load("mlp_bf16"), t, big, f, opts.reps) + (model("mlp_bf16", T=t, D=big, F=f),))
    pa = load("prefill_attention")
    shapes = [(4096, 8, 4, 4096)] if opts.quick else [(1024, 8, 4, 4096), (4096, 8, 4, 4096),
                                                       (4096, 8, 1, 1024)]
    if opts.sim:
        shapes = [(150, 2, 2, 64)]
    for s, nkv, g, hid in shapes:
        rows.append(("prefill+o_proj", "S%d NKV%d G%d HID%d" % (s, nkv, g, hid), 2e-2) +
                    prefill_case(pa, s, nkv, g, hid, opts.reps) +
                    (model("prefill_attention", S=s, NKV=nkv, G=g, HID=hid),))

    dec = []
    dl_art = load("decode_layer")
    for dims_name, kv_lens in ([("0.6b", [64])] if opts.sim else
                               [("8b", [1024]), ("8b", [1024] * 16), ("0.6b", [512] * 4)]):
        H, NKV, G, FF = dl_dims(dims_name)
        mp = -(-max(kv_lens) // 16) + 1  # decode_layer_check.make_case's pages per request
        dec.append(("decode layer", "%s B=%d kv %d" % (dims_name, len(kv_lens), kv_lens[0]),
                    2e-2) + decode_case(dl_art, dims_name, kv_lens, opts.reps) +
                   (model("decode_layer", B=len(kv_lens), H=H, NKV=NKV, G=G, F=FF,
                          NP=len(kv_lens) * mp + 3, MP=mp, kv_len=max(kv_lens)),))

    steps = []
    qd_art = load("qwen3_decode")
    hbm = def_facts.gpu(model_gpu)["hbm_gb_per_s"]
    for dims_name, b, kv in ([("tiny", 2, 24)] if opts.sim else
                             [(d, b, 1024) for d in ("0.6b", "8b") for b in
                              ((1, 16) if opts.quick else (1, 4, 16, 64))]):
        H, NKV, G, FF, L, V = qd_dims(dims_name)
        if opts.sim:
            L, V = 2, 1000
        mp = -(-kv // 16) + 1  # qwen3_decode_check.make_model's pages per request (one step)
        steps.append(("qwen3 step", "%s B=%d kv %d" % (dims_name, b, kv), 5e-2) +
                     step_case(qd_art, dims_name, b, kv, opts.reps, L, V) +
                     (model("qwen3_decode", B=b, H=H, NKV=NKV, G=G, F=FF, L=L, V=V, MP=mp,
                            NP=b * mp + 3, kv_len=kv),))

    print("%-15s %-20s %9s %9s %9s %9s %8s %10s %9s %7s" %
          ("program", "shape", "ETL ms", "TFLOP/s", "torch ms", "TFLOP/s", "ETL/torch", "rel err",
           "model ms", "mod/ETL"))
    bad = 0
    for name, shape, bound, etl_ms, torch_ms, flops, err, model_ms in rows:
        ok = err <= bound
        bad += not ok
        print("%-15s %-20s %9.3f %9.1f %9.3f %9.1f %8.2fx %10.2e %9.3f %6.2fx%s" %
              (name, shape, etl_ms, flops / etl_ms * 1e-9, torch_ms, flops / torch_ms * 1e-9,
               etl_ms / torch_ms, err, model_ms, model_ms / etl_ms,
               "" if ok else "  FAIL (bound %.0e)" % bound))
    print()
    print("%-15s %-20s %9s %9s %9s %9s %9s %10s %10s %9s %7s" %
          ("program", "shape", "ETL ms", "GB/s", "eager ms", "graph ms", "ETL/graph", "rel err",
           "torch err", "model ms", "mod/ETL"))
    for name, shape, bound, etl_ms, eager_ms, graph_ms, gb, err, terr, model_ms in dec:
        ok = err <= bound and terr <= bound
        bad += not ok
        print("%-15s %-20s %9.3f %9.0f %9.3f %9.3f %8.2fx %10.2e %10.2e %9.3f %6.2fx%s" %
              (name, shape, etl_ms, gb / etl_ms * 1e3, eager_ms, graph_ms, etl_ms / graph_ms,
               err, terr, model_ms, model_ms / etl_ms, "" if ok else "  FAIL (bound %.0e)" % bound))
    print()
    print("%-11s %-16s %8s %8s %6s %8s %8s %9s %9s %6s %8s %7s" %
          ("whole step", "shape", "ETL ms", "tok/s", "% HBM", "eager ms", "graph ms", "ETL/graph",
           "logit err", "same", "model ms", "mod/ETL"))
    for name, shape, bound, etl_ms, eager_ms, graph_ms, gb, err, agree, model_ms in steps:
        ok = err <= bound
        bad += not ok
        b = int(shape.split("B=")[1].split()[0])
        print("%-11s %-16s %8.3f %8.0f %5.1f%% %8.3f %8.3f %8.2fx %9.2e %5.0f%% %8.3f %6.2fx%s" %
              (name, shape, etl_ms, b / etl_ms * 1e3, 100 * gb / etl_ms * 1e3 / hbm, eager_ms,
               graph_ms, etl_ms / graph_ms, err, 100 * agree, model_ms, model_ms / etl_ms,
               "" if ok else "  FAIL (bound %.0e)" % bound))
    if DEV == "cuda":
        n = 128
        etl_ms, torch_ms, err = graph_case(gemm, n, opts.reps)
        ok = err <= 1e-4
        bad += not ok
        print()
        print("%-15s %-20s %9s %9s %9s %10s" %
              ("graph replay", "shape", "ETL ms", "torch ms", "ETL/torch", "rel err"))
        print("%-15s %-20s %9.3f %9.3f %8.2fx %10.2e%s" %
              ("gemm bf16", "%d^3" % n, etl_ms, torch_ms, etl_ms / torch_ms, err,
               "" if ok else "  FAIL (bound 1e-04)"))
    if bad:
        print("gpu_bench: %d row(s) over their error bound" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
