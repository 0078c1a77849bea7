"""PyTorch reference of examples/moe_layer (Qwen3-30B-A3B's MoE block).

    /usr/bin/python3 tests/models/moe_layer_ref.py OUTDIR T H E F K [SEED]

Inputs and weights are etl_ref.seeded tensors (bf16-exact), generated here
and by examples/moe_layer/moe_layer_host.c from the same seeds, so the 1.2 GB
of full-size expert weights are never written: only the experts the routing
picks are generated, on both sides. Writes OUTDIR/dims.npy (T H E F K SEED),
topk_ids.npy ([T, K] i32, best first) and out.npy ([T, H] f32, bf16 values).

The layer, as transformers' Qwen3MoeSparseMoeBlock computes it
(norm_topk_prob=True), in f32 on CPU, rounded to bf16 where the ETL program
stores bf16 (the SwiGLU activation and the output):
    logits = x @ wr                       x [T, H], wr [H, E]
    p = softmax(logits, f32); top-K of p (stable sort: ties to the lower index)
    w_k = p_k / sum_k p_k
    act = bf16(silu(x_e @ wg[e]) * (x_e @ wu[e]))       per expert e
    out = bf16(sum_k w_k * (act @ wd[e_k]))
Scales: x = ints/16, wr = ints/2^14 (router logits ~1: a soft routing, and
every logit exact in f32 whatever the summation order, so ETL and PyTorch
pick the same experts), wg, wu = ints/2^12 and wd = ints/2^11 (~1/sqrt(fan-in)).
"""
import sys

try:
    import torch
    import etl_ref
except ImportError as e:
    print("skipped: python3-torch / python3-numpy not installed (%s)" % e)
    sys.exit(77)

USAGE = "usage: moe_layer_ref.py OUTDIR T H E F K [SEED]\n"
out_dir = etl_ref.main_dir(sys.argv, USAGE)
if len(sys.argv) not in (7, 8):
    sys.stderr.write(USAGE)
    sys.exit(2)
T, H, E, F, K = (int(v) for v in sys.argv[2:7])
seed = int(sys.argv[7]) if len(sys.argv) == 8 else 1
# one stream per tensor, as in moe_layer_host.c
S_X, S_WR, S_WG, S_WU, S_WD = (seed * 8 + i for i in range(1, 6))

x = etl_ref.seeded(S_X, [T, H], 1.0 / 16)
wr = etl_ref.seeded(S_WR, [H, E], 1.0 / 2**14)
logits = x @ wr
p = torch.softmax(logits, dim=1, dtype=torch.float32)
_, order = torch.sort(logits, dim=1, descending=True, stable=True)
ids = order[:, :K]
topk_p = p.gather(1, ids)
w = topk_p / topk_p.sum(dim=1, keepdim=True)

out = torch.zeros(T, H, dtype=torch.float32)
for e in sorted(set(ids.flatten().tolist())):
    tok, k = (ids == e).nonzero(as_tuple=True)
    wg = etl_ref.seeded(S_WG, [H, F], 1.0 / 2**12, start=e * H * F)
    wu = etl_ref.seeded(S_WU, [H, F], 1.0 / 2**12, start=e * H * F)
    wd = etl_ref.seeded(S_WD, [F, H], 1.0 / 2**11, start=e * F * H)
    xe = x[tok]
    act = etl_ref.bf16(torch.nn.functional.silu(xe @ wg) * (xe @ wu))
    out.index_add_(0, tok, w[tok, k].unsqueeze(1) * (act @ wd))

etl_ref.save(out_dir, "dims", torch.tensor([T, H, E, F, K, seed]))
etl_ref.save(out_dir, "topk_ids", ids)
etl_ref.save(out_dir, "out", etl_ref.bf16(out))
print("moe_layer_ref: T=%d H=%d E=%d F=%d K=%d seed=%d, %d experts used -> %s"
      % (T, H, E, F, K, seed, len(set(ids.flatten().tolist())), out_dir))
