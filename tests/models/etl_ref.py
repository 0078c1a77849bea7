"""PyTorch reference checks for ETL programs: the Python half.

A reference script (tests/models/<name>_ref.py) imports this module, builds
its inputs and weights with `seeded`, computes the layer with PyTorch (CPU)
and writes what the ETL host needs with `save` as `.npy` files into one
directory. The host (C, examples/common/ref_check.h) reads them with
`ex_npy_load` and compares ETL's sim output with `ex_check_close`.

Weights too large to write (a 30B model's experts) are not written: both
sides generate them from the same seed with `seeded` / `ex_seeded`, a
counter-based hash of (seed, flat index), so any slice can be generated
alone and the two sides agree bit for bit. The values are integers in
[-128, 127] times `scale` (a power of two): exact in bf16 (8 significant
bits), so the ETL side's bf16 tensors hold exactly what PyTorch computes
with, and products of two such values are exact in f32.

Run with Debian's /usr/bin/python3 (python3-torch, python3-numpy).
"""
import os
import sys

import numpy as np
import torch

M32 = 0xFFFFFFFF


def seeded_ints(seed, start, count):
    """Integers in [-128, 127] for flat indices start .. start+count-1 of the
    stream `seed` (< 2**31). Same function as ex_seeded_int in ref_check.h;
    every product below stays under 2**63 (no int64 overflow)."""
    x = torch.arange(start, start + count, dtype=torch.int64) & M32
    x = x ^ ((seed * 0x3C6EF35F) & M32)
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & M32
    x = x ^ (x >> 15)
    x = (x * 0x68E31DA5) & M32
    x = x ^ (x >> 16)
    return (x >> 24) - 128


def seeded(seed, shape, scale, start=0):
    """A float32 tensor of `shape` whose element at flat index f is
    seeded_ints(seed, start + f) * scale (bf16-exact when scale is a power of
    two)."""
    n = 1
    for d in shape:
        n *= d
    return (seeded_ints(seed, start, n).to(torch.float32) * scale).reshape(shape)


def bf16(t):
    """Rounds to bf16 (nearest even, as ETL's stores do) and back to f32."""
    return t.to(torch.bfloat16).to(torch.float32)


def save(outdir, name, t):
    """Writes OUTDIR/NAME.npy: float tensors as <f4, integer ones as <i4."""
    a = t.detach().cpu()
    a = a.to(torch.int32) if not a.is_floating_point() else a.to(torch.float32)
    np.save(os.path.join(outdir, name + ".npy"), a.numpy())


def main_dir(argv, usage):
    """The output directory (created) from `argv[1]`; exits with `usage`."""
    if len(argv) < 2:
        sys.stderr.write(usage)
        sys.exit(2)
    os.makedirs(argv[1], exist_ok=True)
    return argv[1]
