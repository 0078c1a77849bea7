#!/usr/bin/env python3
"""Regenerate tests/fuzz/seeds/artifact/*.bin after an artifact format change.

Each seed is the artifact `etlc compile NAME.etl --target sim` writes for an
example, a runtime test program or a golden program (found by NAME), rewritten
with its code section emptied (see README.md here and runtime/abi/etl_abi.h).

    tests/fuzz/seeds/regenerate.py [build/compiler/etlc]
"""
import os
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HEADER = "<4sIQIIQ"  # etl_artifact_header (32 bytes)
ENTRY = "<I12sQQ"  # etl_section_entry (32 bytes)
META, CODE = 1, 2


def fnv1a(data):
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def source_of(name):
    for d in (f"examples/{name}/{name}.etl", f"tests/unit/runtime/programs/{name}.etl",
              f"tests/golden/{name}.etl"):
        if os.path.exists(os.path.join(ROOT, d)):
            return d  # relative: the artifact records the path it was given
    sys.exit(f"regenerate.py: no source program for seed '{name}'")


def seed(etlc, name):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "a.etlb")
        subprocess.run([etlc, "compile", source_of(name), "--target", "sim", "-o", out],
                       check=True, cwd=ROOT)
        art = open(out, "rb").read()
    magic, version, _, sections, _, _ = struct.unpack_from(HEADER, art, 0)
    meta = None
    for i in range(sections):
        kind, _, off, size = struct.unpack_from(ENTRY, art, 32 + 32 * i)
        if kind == META:
            meta = art[off:off + size]
    meta_off = 32 + 2 * 32
    body = (struct.pack(ENTRY, META, b"", meta_off, len(meta)) +
            struct.pack(ENTRY, CODE, b"sim", meta_off + len(meta), 0) + meta)
    return struct.pack(HEADER, magic, version, 32 + len(body), 2, fnv1a(body), 0) + body


def main():
    etlc = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(ROOT, "build", "compiler", "etlc"))
    folder = os.path.join(ROOT, "tests", "fuzz", "seeds", "artifact")
    for f in sorted(os.listdir(folder)):
        if f.endswith(".bin"):
            blob = seed(etlc, f[:-4])
            open(os.path.join(folder, f), "wb").write(blob)
            print(f"{f}: {len(blob)} bytes")


if __name__ == "__main__":
    main()
