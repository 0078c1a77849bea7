"""The pieces of a Qwen3 decode step in PyTorch (CPU, f32) that the checks of
examples/decode_layer and examples/qwen3_decode share: the bf16 rounding, the
seeded random tensors, the RMS norm, RoPE and its tables, the paged KV cache
(page table, the rows a position lands on, attention over a request's cache)
and the elementwise comparison with the bound both checks' docstrings derive.
Each check keeps its own model (what it rounds where, in the kernel's order).
"""
import math

import torch

PS, DH, DH2 = 16, 128, 64  # tokens per cache page, head dim, RoPE pairs: must match the .etl files
ROPE_THETA = 1000000.0  # Qwen3
EPS = 1e-6


def bf16(t):
    return t.to(torch.bfloat16)


def randn_bf16(gen, *shape, scale=1.0, mean=0.0):
    """A seeded normal tensor, rounded to bf16, on the generator's device."""
    return bf16(torch.randn(*shape, generator=gen, device=gen.device) * scale + mean)


def rms(t, w):
    """rmsnorm(t) * w along the last axis, in f32."""
    return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + EPS) * w


def rope(t, c, s):
    """rotate_half RoPE: t [..., DH]; c, s broadcast to [..., DH2]."""
    lo, hi = t[..., :DH2], t[..., DH2:]
    return torch.cat([lo * c - hi * s, hi * c + lo * s], dim=-1)


def rope_tables(positions):
    """cos_t, sin_t [positions, DH2] (f32) for the model's rope_theta."""
    inv = ROPE_THETA ** (-torch.arange(DH2, dtype=torch.float64) * 2.0 / DH)
    ang = torch.arange(positions, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float().contiguous(), torch.sin(ang).float().contiguous()


def page_table(B, MP, NP, gen):
    """[B, MP] int32: pages dealt from a shuffled pool of NP, MP per request."""
    perm = torch.randperm(NP, generator=gen, device=gen.device)[: B * MP].to(torch.int32)
    return perm.reshape(B, MP).contiguous()


def cache_rows(pt, pos):
    """The cache row of position pos[b] of each request b (pt: a long page table)."""
    return pt[torch.arange(pos.shape[0]), pos // PS] * PS + pos % PS


def attention(q, kc, vc, pt, kv_len):
    """softmax(q k^T / sqrt(DH)) v per request b over its first kv_len[b]
    cache tokens (GQA: q [B, NKV, G, DH] reads KV head g); [B, NKV, G, DH]."""
    out = torch.empty(q.shape)
    for b in range(q.shape[0]):
        p = torch.arange(int(kv_len[b]))
        r = pt[b, p // PS] * PS + p % PS
        K, V = kc[r].float(), vc[r].float()  # [len, NKV, DH]
        sc = torch.einsum("grd,lgd->grl", q[b], K) / math.sqrt(DH)
        out[b] = torch.einsum("grl,lgd->grd", torch.softmax(sc, dim=-1), V)
    return out


def compare(name, got, ref, bound=None):
    """(ok, line). Without `bound`, the bf16 bound the checks' docstrings
    derive, |got - ref| <= 2^-6 (|ref| + rms(ref)), with at least half the
    elements bit-identical; with one (the logits'), that bound alone."""
    g, r = got.float(), ref.float()
    err = (g - r).abs()
    given = bound is not None
    if not given:
        bound = 2.0 ** -6 * (r.pow(2).mean().sqrt() + r.abs())
    worst = (err / bound).max().item()
    ok = worst <= 1.0 and bool(torch.isfinite(g).all())
    line = "%s: max |err| %.3g (%.2f of bound)" % (name, err.max().item(), worst)
    if not given:
        same = (got.view(torch.int16) == ref.view(torch.int16)).float().mean().item()
        ok = ok and same >= 0.5
        line += ", %.1f%% bit-identical" % (100 * same)
    return ok, line
