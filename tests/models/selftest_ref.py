"""Writes what ref_selftest.c checks against its C twins (etl_ref.py's
banner): seeded values at low and high flat indices, and bf16 rounding.

    /usr/bin/python3 tests/models/selftest_ref.py OUTDIR
"""
import sys

try:
    import torch
    import etl_ref
except ImportError as e:  # the test skips, saying why
    print("skipped: python3-torch / python3-numpy not installed (%s)" % e)
    sys.exit(77)

out = etl_ref.main_dir(sys.argv, "usage: selftest_ref.py OUTDIR\n")
etl_ref.save(out, "seeded_lo", etl_ref.seeded(12345, [4, 250], 1.0))
etl_ref.save(out, "seeded_hi", etl_ref.seeded(7, [1000], 1.0 / 64, start=(1 << 28) - 500))
# bf16 rounding of values between representable ones, ties included
x = torch.linspace(-3.0, 3.0, 1001) * 1.00390625
etl_ref.save(out, "bf16_in", x)
etl_ref.save(out, "bf16_out", etl_ref.bf16(x))
print("selftest_ref: wrote", out)
