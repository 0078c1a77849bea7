"""PyTorch reference of examples/prefill_attention (causal GQA attention
and the output projection).

    /usr/bin/python3 tests/models/prefill_attention_ref.py OUTDIR S NKV G D HID [SEED]

q [S, NKV, G, D], k and v [S, NKV, D] and wo [NKV, G, D, HID] are
etl_ref.seeded tensors (bf16-exact), generated here and by
examples/prefill_attention/prefill_attention_host.c from the same seeds:
q, k = ints/2^6 (scores q.k/sqrt(D) with an rms near 1.3: a softmax neither
flat nor one-hot), v = ints/2^7, wo = ints/2^9. The reference is
    out = bf16(scaled_dot_product_attention(q_h, k_g, v_g, is_causal=True))
per query head h = g * G + r (KV head g), in f32 on CPU: torch's
F.scaled_dot_product_attention (torch >= 2.0; 1.13's private
F._scaled_dot_product_attention otherwise), checked here against the
softmax(q k^T / sqrt(D) + causal mask) v written out in f64 (the check fails
the script if they differ by more than 1e-5); then
    y = bf16(out.reshape(S, NKV * G * D) @ wo.reshape(NKV * G * D, HID)).
Writes OUTDIR/dims.npy (S NKV G D HID SEED), out.npy ([S, NKV, G, D]) and
y.npy ([S, HID]), f32 holding bf16 values.
"""
import math
import sys

try:
    import torch
    import etl_ref
except ImportError as e:
    print("skipped: python3-torch / python3-numpy not installed (%s)" % e)
    sys.exit(77)

USAGE = "usage: prefill_attention_ref.py OUTDIR S NKV G D HID [SEED]\n"
out_dir = etl_ref.main_dir(sys.argv, USAGE)
if len(sys.argv) not in (7, 8):
    sys.stderr.write(USAGE)
    sys.exit(2)
S, NKV, G, D, HID = (int(v) for v in sys.argv[2:7])
seed = int(sys.argv[7]) if len(sys.argv) == 8 else 1
# one stream per tensor, as in prefill_attention_host.c
S_Q, S_K, S_V, S_WO = (seed * 8 + i for i in range(1, 5))

q = etl_ref.seeded(S_Q, [S, NKV, G, D], 1.0 / 64)
k = etl_ref.seeded(S_K, [S, NKV, D], 1.0 / 64)
v = etl_ref.seeded(S_V, [S, NKV, D], 1.0 / 128)
wo = etl_ref.seeded(S_WO, [NKV, G, D, HID], 1.0 / 512)

# [1, heads, S, D], KV heads repeated for their G query heads (h = g * G + r)
qh = q.reshape(S, NKV * G, D).permute(1, 0, 2).unsqueeze(0)
kh = k.permute(1, 0, 2).repeat_interleave(G, dim=0).unsqueeze(0)
vh = v.permute(1, 0, 2).repeat_interleave(G, dim=0).unsqueeze(0)
F = torch.nn.functional
if hasattr(F, "scaled_dot_product_attention"):
    o = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True)
else:
    o = F._scaled_dot_product_attention(qh, kh, vh, None, 0.0, False, True)[0]

# the same in f64, written out: a wrong reading of is_causal fails here
s = qh.double() @ kh.double().transpose(-1, -2) / math.sqrt(D)
s = s.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
o64 = torch.softmax(s, dim=-1) @ vh.double()
err = (o.double() - o64).abs().max().item() if S else 0.0
if not err <= 1e-5:
    sys.stderr.write("prefill_attention_ref: torch's attention differs from the f64 formula by %g\n" % err)
    sys.exit(1)

out = etl_ref.bf16(o.squeeze(0).permute(1, 0, 2).reshape(S, NKV, G, D))
y = etl_ref.bf16(out.reshape(S, NKV * G * D) @ wo.reshape(NKV * G * D, HID))
etl_ref.save(out_dir, "dims", torch.tensor([S, NKV, G, D, HID, seed]))
etl_ref.save(out_dir, "out", out)
etl_ref.save(out_dir, "y", y)
print("prefill_attention_ref: S=%d NKV=%d G=%d D=%d HID=%d seed=%d (torch vs f64 %.2g) -> %s"
      % (S, NKV, G, D, HID, seed, err, out_dir))
