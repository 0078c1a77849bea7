#!/usr/bin/env python3
"""gpu_wgmma_probe.py — one wgmma tile on a Hopper GPU, bit for bit against sim.

    python3 scripts/gpu_wgmma_probe.py [BUILD_DIR]

The GPU check of the sim's wgmma model (runtime/src/sim_wgmma.h): compiles
examples/gemm/gemm.etl with `etlc compile --target sm_90a,sim` (one
artifact: the sm_90a kernel, whose K loop is wgmma.mma_async m64n128k16 on
128B/64B-swizzled shared-memory descriptors, and the sim kernel, which
lowers the same way and models wgmma), then runs one 128 x 128 tile (one
task, two warpgroups, K = 64: two K-loop steps of two k16 wgmmas each) on
"cuda" and on "sim" with the same seeded random bf16 inputs, and compares
C bit for bit. A second binding, K = 256 (8 steps), checks the accumulation
across the loop. Random (not exactly summable) data: bit equality means the
hardware adds each wgmma's 16 products into the accumulator as the sim does
(products exact, f32 sums in k order); if it differs only in the last bits,
the hardware's order (unspecified by PTX) is not the sim's and the script
prints the largest difference in ulps and exits 1 (compare with exactly
summable integers: `--exact`, which must always be bit-exact: a mismatch
there is a wrong descriptor or swizzle).

Needs a device of compute capability 9.0 (H100/H200) and PyTorch with CUDA;
exits 77 saying why otherwise. Runs in well under a minute (the sim tile is
the slow part). Exit 0: bit-exact.
"""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..")
sys.path.insert(0, os.path.join(root, "python"))


def skip(why):
    print("gpu_wgmma_probe: skipped: " + why)
    sys.exit(77)


try:
    import torch
except ImportError:
    skip("PyTorch is not installed")
if not torch.cuda.is_available():
    skip("PyTorch sees no CUDA device")
if torch.cuda.get_device_capability() != (9, 0):
    skip("the device is not compute capability 9.0 (sm_90a code runs only there)")

import etl  # noqa: E402


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    exact = "--exact" in sys.argv
    build = args[0] if args else os.path.join(root, "build")
    etlc = os.path.join(build, "compiler", "etlc")
    out = os.path.join(tempfile.mkdtemp(prefix="wgmma-probe-"), "gemm_sm90a.etlb")
    subprocess.run([etlc, "compile", "-I", os.path.join(root, "stdlib"), "--target", "sm_90a,sim",
                    os.path.join(root, "examples", "gemm", "gemm.etl"), "-o", out], check=True)
    gpu = etl.load(out, device="cuda")
    sim = etl.load(out, device="sim")
    bad = 0
    for k in (64, 256):
        g = torch.Generator().manual_seed(k)
        if exact:
            a = torch.randint(-3, 4, (128, k), generator=g).to(torch.bfloat16)
            b = torch.randint(-3, 4, (k, 128), generator=g).to(torch.bfloat16)
        else:
            a = torch.randn(128, k, generator=g).to(torch.bfloat16)
            b = torch.randn(k, 128, generator=g).to(torch.bfloat16)
        c_sim = torch.full((128, 128), float("nan"))
        sim(a=a, b=b, c=c_sim)
        sim.wait()
        a_d, b_d = a.cuda(), b.cuda()
        c_gpu = torch.full((128, 128), float("nan"), device="cuda")
        gpu(a=a_d, b=b_d, c=c_gpu)
        gpu.wait()
        c_gpu = c_gpu.cpu()
        same = torch.equal(c_gpu.view(torch.int32), c_sim.view(torch.int32))
        ulps = (c_gpu.view(torch.int32).long() - c_sim.view(torch.int32).long()).abs().max().item()
        ref = a.float() @ b.float()
        err = ((c_gpu.double() - ref.double()).norm() / ref.double().norm()).item()
        print(f"K {k:4d}: GPU vs sim {'bit-exact' if same else 'DIFFER'} (max {ulps} ulp), "
              f"GPU vs torch f32 {err:.2e}")
        bad += not same
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
