#!/usr/bin/env python3
"""Regenerate tests/fuzz/seeds/artifact/*.bin after an artifact format change.

Each seed is the artifact `etlc compile NAME.etl --target sim` writes for an
example, a runtime test program or a golden program (found by NAME), rewritten
with its code section emptied (see README.md here and runtime/abi/etl_abi.h).
A seed named in VARIANTS is an artifact of several variants (--variant): its
variant table, then each variant's artifact with its code section emptied.

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
META, CODE, VARIANTS, VARIANT = 1, 2, 3, 4
# seed name -> (program, --variant specs)
VARIANTS = {"variants_rowsum": ("rowsum", ["M<=8,N<=256:TM=8", "N>=512:TN=64", "*:"])}


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


def sections(kinds_payloads):
    """An artifact of these (kind, target, payload) sections."""
    off = 32 + 32 * len(kinds_payloads)
    table, data = b"", b""
    for kind, target, payload in kinds_payloads:
        table += struct.pack(ENTRY, kind, target, off + len(data), len(payload))
        data += payload
    body = table + data
    return struct.pack(HEADER, b"ETLB", VERSION[0], 32 + len(body), len(kinds_payloads),
                       fnv1a(body), 0) + body


VERSION = [0]


def emptied(art):
    """`art` (a single-variant artifact) with its code section emptied."""
    magic, version, _, n, _, _ = struct.unpack_from(HEADER, art, 0)
    VERSION[0] = version
    for i in range(n):
        kind, _, off, size = struct.unpack_from(ENTRY, art, 32 + 32 * i)
        if kind == META:
            meta = art[off:off + size]
    return sections([(META, b"", meta), (CODE, b"sim", b"")])


def seed(etlc, name):
    prog, specs = VARIANTS.get(name, (name, []))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "a.etlb")
        args = [etlc, "compile", source_of(prog), "--target", "sim", "-o", out]
        for v in specs:
            args += ["--variant", v]
        subprocess.run(args, check=True, cwd=ROOT)
        art = open(out, "rb").read()
    if not specs:
        return emptied(art)
    _, version, _, n, _, _ = struct.unpack_from(HEADER, art, 0)
    VERSION[0] = version
    out = []
    for i in range(n):
        kind, _, off, size = struct.unpack_from(ENTRY, art, 32 + 32 * i)
        payload = art[off:off + size]
        out.append((kind, b"", emptied(payload) if kind == VARIANT else payload))
    return sections(out)


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
