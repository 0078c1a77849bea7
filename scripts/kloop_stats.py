#!/usr/bin/env python3
"""PTX instructions per K-loop step, by class, for every task body of a program.

    scripts/kloop_stats.py [--etlc build/compiler/etlc] [--target sm_90]
                           [-D NAME=VALUE ...] [--ptxas] [--groups G,..] [--all-loops] PROGRAM.etl ...

Compiles each program with `etlc compile --emit=ptx` and reads the kernel's
control-flow graph: blocks, dominators, natural loops (a back edge's target
dominates its source). A task group's code is what its entry block dominates:
the entry is the target of the task loop's dispatch, `setp.eq.s32 %p, %r, G;
@%p bra L` on the group number G (the order of `--emit=taskgraph`); a group
lowered as its own `.func etl.task.NAME` is that function. For every loop of
a group whose body has multiply-adds and touches global memory (a K loop, or
a loop around one; --all-loops: every loop that touches global memory) it
prints the PTX instructions of one interior iteration: of the paths from the
loop's header to a latch that avoid the element-wise fallback (blocks that
load narrow elements one by one, which only an edge chunk runs), one that
issues the most global loads and copies (a step copies its whole tile) and, of
those, the fewest instructions (the interior path where an edge path copies
too); an inner loop counts its own interior path times its trip count where
the PTX shows it (a latch comparing a counter stepped by a constant with a
constant bound: trips = bound / step, the average over the CTA's threads, off
by one for a rotated loop; `?` when unknown, counted once). `static` is every
instruction of the loop once, both arms of each branch. PTX, not SASS: a
64-bit integer op is about two SASS instructions, cvta.to.global often none.

Classes (each instruction in the first that matches):
  args   loads from the argument block (pointers, dims, scalars re-read)
  gmem   ld.global / ldg / cp.async copies / TMA copies / st.global / atomics on tensors
  bar    bar.sync, barrier, cp.async.wait_group / commit_group, mbarrier.*
  mma    mma, wgmma, fma, ldmatrix
  i64    64-bit integer arithmetic: add/sub/mul/mad/shl/shr/and/or/... .s64/.u64/.b64,
         mul.wide / mad.wide, cvt to a 64-bit integer
  pred   setp, selp, and instructions guarded by a predicate (not branches)
  smem   ld/st.shared
  other  everything else (32-bit arithmetic, moves, branches, conversions)

With --ptxas it also assembles the PTX with `ptxas -v` for sm_80 and sm_90
(each compiled for its own target) and prints registers and spill bytes.
No dependencies beyond Python 3; etlc must be built.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLASSES = ("args", "gmem", "bar", "mma", "i64", "pred", "smem", "other")

LABEL = re.compile(r"^(\$?[A-Za-z_.$][\w$.]*):\s*$")
BRANCH = re.compile(r"^(@!?%p\w+\s+)?bra(\.uni)?\s+(\S+?);")
FUNC = re.compile(r"^\.(visible\s+)?(\.entry|\.func)\s+(?:\([^)]*\)\s*)?([\w.$]+)")
INT64_OPS = {"add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "min", "max", "neg",
             "div", "rem", "not", "abs"}


def sh(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit("kloop_stats: %s failed:\n%s" % (" ".join(cmd), p.stdout))
    return p.stdout


def compile_ptx(etlc, src, target, defines, out):
    cmd = [etlc, "compile", src, "--target", target, "--emit=ptx", "-o", out]
    for d in defines:
        cmd += ["-D", d]
    sh(cmd)
    with open(out) as f:
        return f.read()


def group_names(etlc, src, defines):
    cmd = [etlc, "compile", src, "--emit=taskgraph"]
    for d in defines:
        cmd += ["-D", d]
    names = []
    for line in sh(cmd).splitlines():
        m = re.match(r"^\s*group\s+(\w+)", line)
        if m:
            names.append(m.group(1))
    return names


class Func:
    def __init__(self, name):
        self.name = name
        self.blocks = []  # [label, [instructions]]


def parse_funcs(ptx):
    """Every .entry/.func body as blocks of instruction strings."""
    funcs, cur, depth, pending, carry = [], None, 0, None, ""
    for raw in ptx.splitlines():
        line = raw.split("//")[0].strip()
        if not line:
            continue
        m = FUNC.match(line)
        if m and cur is None:
            pending = Func(m.group(3))
            continue
        if pending is not None and cur is None:
            if line.startswith("{"):
                cur, depth, pending = pending, 1, None
                cur.blocks.append(["<entry>", []])
            continue
        if cur is None:
            continue
        if line == "{":  # an inline-asm scope inside the body
            depth += 1
            continue
        if line == "}":
            depth -= 1
            if depth == 0:
                funcs.append(cur)
                cur = None
            continue
        m = LABEL.match(line)
        if m:
            cur.blocks.append([m.group(1), []])
            continue
        if line.startswith(".reg") or line.startswith(".local") or line.startswith(".shared") \
                or line.startswith(".pragma") or line.startswith(".loc"):
            continue
        carry += (" " if carry else "") + line  # an instruction may span lines (mma)
        if not carry.endswith(";"):
            continue
        for ins in filter(None, (s.strip() for s in carry.split(";"))):
            cur.blocks[-1][1].append(ins + ";")
            if BRANCH.match(ins + ";") or ins.startswith("ret") or ins.startswith("exit"):
                cur.blocks.append([None, []])  # an unnamed fall-through block
        carry = ""
    for f in funcs:
        f.blocks = [b for i, b in enumerate(f.blocks) if b[1] or b[0] is not None]
    return funcs


def cfg(blocks):
    index = {b[0]: i for i, b in enumerate(blocks) if b[0]}
    succ = []
    for i, (_, ins) in enumerate(blocks):
        s = []
        last = ins[-1] if ins else ""
        m = BRANCH.match(last)
        if m:
            s.append(index[m.group(3)])
            if m.group(1):  # conditional: falls through too
                s.append(i + 1)
        elif not (last.startswith("ret") or last.startswith("exit")):
            s.append(i + 1)
        succ.append([x for x in s if x < len(blocks)])
    return succ


def dominators(succ):
    n = len(succ)
    pred = [[] for _ in range(n)]
    for i, ss in enumerate(succ):
        for s in ss:
            pred[s].append(i)
    # reverse postorder from block 0
    order, seen, stack = [], {0}, [(0, iter(succ[0]))]
    while stack:
        node, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            order.append(node)
            stack.pop()
        elif nxt not in seen:
            seen.add(nxt)
            stack.append((nxt, iter(succ[nxt])))
    rpo = list(reversed(order))
    pos = {b: i for i, b in enumerate(rpo)}
    idom = {0: 0}

    def meet(a, b):
        while a != b:
            while pos[a] > pos[b]:
                a = idom[a]
            while pos[b] > pos[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            ps = [p for p in pred[b] if p in idom]
            if not ps:
                continue
            d = ps[0]
            for p in ps[1:]:
                d = meet(d, p)
            if idom.get(b) != d:
                idom[b] = d
                changed = True
    return idom, pred


def dominates(idom, a, b):
    while True:
        if a == b:
            return True
        if b == 0 or b not in idom:
            return False
        b = idom[b]


def natural_loops(succ, idom, pred):
    loops = {}
    for u, ss in enumerate(succ):
        for h in ss:
            if u in idom and dominates(idom, h, u):
                body = loops.setdefault(h, {"header": h, "latches": [], "blocks": {h}})
                body["latches"].append(u)
                stack = [u]
                while stack:
                    x = stack.pop()
                    if x not in body["blocks"]:
                        body["blocks"].add(x)
                        stack.extend(pred[x])
    ls = sorted(loops.values(), key=lambda l: len(l["blocks"]))
    for l in ls:  # the parent: the smallest loop that holds this one
        l["parent"] = next((o for o in ls if o is not l and l["header"] in o["blocks"]
                            and len(o["blocks"]) > len(l["blocks"])), None)
        l["children"] = []
    for l in ls:
        if l["parent"]:
            l["parent"]["children"].append(l)
    return ls


def classify(ins, args_regs):
    body = re.sub(r"^@!?%p\w+\s+", "", ins)
    op = body.split()[0] if body.split() else ""
    parts = op.split(".")
    if op.startswith("ld.") and ("global" in parts or "param" in parts or len(parts) <= 3):
        m = re.search(r"\[(%rd\d+)", body)
        if "param" in parts or (m and m.group(1) in args_regs):
            return "args"
    if (op.startswith("ld.global") or op.startswith("st.global") or op.startswith("cp.async.c")
            or op.startswith("cp.async.bulk.tensor") or op.startswith("atom.global")
            or op.startswith("red.global")):
        return "gmem"
    if (op.startswith("bar") or op.startswith("cp.async.wait") or op.startswith("cp.async.commit")
            or op.startswith("mbarrier.")):
        return "bar"
    if parts[0] in ("mma", "wgmma", "fma", "ldmatrix"):
        return "mma"
    if parts[0] in INT64_OPS and any(t in parts for t in ("s64", "u64", "b64")) and "f64" not in parts:
        return "i64"
    if op.startswith("mul.wide") or op.startswith("mad.wide"):
        return "i64"
    if parts[0] == "cvt" and len(parts) > 1 and parts[-2] in ("u64", "s64"):
        return "i64"
    if parts[0] in ("setp", "selp") or (ins.startswith("@") and parts[0] != "bra"):
        return "pred"
    if op.startswith("ld.shared") or op.startswith("st.shared"):
        return "smem"
    return "other"


def args_registers(func):
    """Registers that hold the argument block's address (the kernel's or the
    task function's first parameter, and its moves and cvta)."""
    regs = set()
    for _, ins in func.blocks:
        for i in ins:
            m = re.match(r"ld\.param\.u64\s+(%rd\d+),\s*\[\w*param_0\]", i)
            if m:
                regs.add(m.group(1))
            m = re.match(r"(?:mov\.u64|mov\.b64|cvta\.to\.global\.u64)\s+(%rd\d+),\s*(%rd\d+)", i)
            if m and m.group(2) in regs:
                regs.add(m.group(1))
    return regs


MMA_SHAPE = re.compile(r"^mma\.sync\.aligned\.m(\d+)n(\d+)k(\d+)\.")
GBYTES = re.compile(r"^(ld|st|cp\.async\.c[ag])\.(?:\w+\.)*?(?:global)(?:\.\w+)*?(?:\.v(\d))?\.[a-z]+(\d+)\s")
CP_SIZE = re.compile(r"^cp\.async\.c[ag]\.shared(?:::cta)?\.global\S*\s+\[[^]]*\],\s*\[[^]]*\],\s*(\d+)")
FP_OPS = {"add", "sub", "mul", "fma", "mad", "max", "min", "ex2", "lg2", "rcp", "rsqrt", "sqrt",
          "div", "neg", "abs", "tanh", "sin", "cos"}
FP_TYPES = {"f32", "f16", "bf16", "f16x2", "bf16x2", "f64"}
WAIT_GROUP = re.compile(r"^cp\.async\.wait_group\s+(\d+)")


def tally(ins, args_regs):
    """One instruction's class (CLASSES), plus details a timing model needs,
    under keys that start with `_` (never a class): `_mma` mma.sync count and
    `_mma_flops` its FLOPs per warp (2 M N K), `_tf32` when it multiplies
    tf32; `_gbytes` global bytes per thread (loads, stores, cp.async copies);
    `_ldg` plain global loads of tensor data (not through the ring); `_fp`
    floating-point arithmetic outside mma;
    `_wait` cp.async.wait_group N counted as N + 1 (max over the path is
    what matters: see ring_depth)."""
    cls = classify(ins, args_regs)
    c = collections.Counter({cls: 1})
    body = re.sub(r"^@!?%p\w+\s+", "", ins)
    m = MMA_SHAPE.match(body)
    if m:
        c["_mma"] += 1
        c["_mma_flops"] += 2 * int(m.group(1)) * int(m.group(2)) * int(m.group(3))
        if ".tf32" in body:
            c["_tf32"] += 1
    m = CP_SIZE.match(body)
    if m:
        c["_gbytes"] += int(m.group(1))
    elif cls == "gmem":
        g = GBYTES.match(body)
        if g:
            c["_gbytes"] += int(g.group(2) or 1) * int(g.group(3)) // 8
        if body.startswith("ld.") and "acquire" not in body and "volatile" not in body:
            c["_ldg"] += 1
    parts = body.split()[0].split(".") if body.split() else [""]
    if parts[0] in FP_OPS and any(t in FP_TYPES for t in parts[1:]):
        c["_fp"] += 1
    m = WAIT_GROUP.match(body)
    if m:
        c["_wait%d" % int(m.group(1))] += 1
    return c


def class_total(c):
    """Instructions of a tally (its CLASSES, not the `_` details)."""
    return sum(v for k, v in c.items() if not k.startswith("_"))


def ring_depth(c):
    """Stages of a step's cp.async ring from its wait_group: `wait_group N`
    leaves N groups in flight, so N + 2 stages (the one waited for, N ahead,
    the one being filled); 1 when the step loads global memory and waits
    for it itself; 0 when nothing streams per step."""
    waits = [int(k[5:]) for k in c if k.startswith("_wait")]
    if waits:
        return max(waits) + 2
    return 1 if c.get("_gbytes", 0) else 0


SCHEDULER = re.compile(r"^(@!?%p\w+\s+)?(ld\.volatile|ld\.acquire|atom\.|fence|membar|nanosleep|red\.release)")
NARROW_LD = re.compile(r"ld\.global(\.nc)?\.(u8|s8|b8|u16|s16|b16)\s")


def trip_count(loop, blocks):
    """Constant trips of a counted loop: its latch compares a register
    stepped by a constant against a constant bound."""
    for lt in loop["latches"]:
        ins = blocks[lt][1]
        for i in reversed(ins):
            m = re.match(r"setp\.\w+\.[us](?:32|64)\s+%p\w+,\s*(%r\w+),\s*(\d+);", i)
            if not m:
                continue
            reg, bound = m.group(1), int(m.group(2))
            for b in loop["blocks"]:
                for j in blocks[b][1]:
                    s = re.match(r"add\.[su](?:32|64)\s+" + re.escape(reg) + r",\s*%r\w+,\s*(\d+);", j)
                    if s and int(s.group(1)) > 0:
                        return max(1.0, bound / int(s.group(1)))
    return None


def loop_counts(loop, blocks, args_regs):
    c = collections.Counter()
    edge = 0
    unknown = False
    inner = set()
    for ch in loop["children"]:
        inner |= ch["blocks"]
        t = trip_count(ch, blocks)
        cc, ce, cu = loop_counts(ch, blocks, args_regs)
        unknown = unknown or cu or t is None
        t = t or 1.0
        for k, v in cc.items():
            c[k] += v * t
        edge += ce * t
    for b in loop["blocks"] - inner:
        ins = blocks[b][1]
        narrow = any(NARROW_LD.match(re.sub(r"^@!?%p\w+\s+", "", i)) for i in ins)
        for i in ins:
            c[classify(i, args_regs)] += 1
            if narrow:
                edge += 1
    return c, edge, unknown


def is_narrow(ins):
    return any(NARROW_LD.match(re.sub(r"^@!?%p\w+\s+", "", i)) for i in ins)


def has_narrow(loop, blocks):
    return any(is_narrow(blocks[b][1]) for b in loop["blocks"])


def hot_counts(loop, blocks, args_regs, succ):
    """The instructions of one interior iteration: of the paths from the
    header to a latch (inner loops as one node worth their own interior
    count times their trips) that avoid the element-wise fallback (blocks
    that load narrow elements one by one), one that issues the most global
    loads and copies (a step copies its whole tile), then the most mma (a
    dot's tiles dealt unevenly over the warps branch on the warp: the
    busiest warp's path), and of those, the fewest instructions (the
    interior path where an edge path copies too)."""
    owner = {}
    for ch in loop["children"]:
        for b in ch["blocks"]:
            owner[b] = ch
    node_w, node_ok = {}, {}

    def node(b):
        return ("L", owner[b]["header"]) if b in owner else ("B", b)

    for b in loop["blocks"]:
        n = node(b)
        if n in node_w:
            continue
        if b in owner:
            ch = owner[b]
            cc, cu = hot_counts(ch, blocks, args_regs, succ)
            t = trip_count(ch, blocks)
            node_w[n] = (collections.Counter({k: v * (t or 1.0) for k, v in cc.items()}), cu or not t)
            node_ok[n] = True
        else:
            node_w[n] = (sum((tally(i, args_regs) for i in blocks[b][1]), collections.Counter()),
                         False)
            node_ok[n] = not is_narrow(blocks[b][1])
    edges = collections.defaultdict(set)
    for b in loop["blocks"]:
        for s2 in succ[b]:
            if s2 in loop["blocks"] and s2 != loop["header"] and node(s2) != node(b):
                edges[node(b)].add(node(s2))
    latches = {node(l) for l in loop["latches"]}
    best = {}

    def key(c):
        return (c.get("gmem", 0), c.get("mma", 0), -class_total(c))

    def visit(n, onpath):
        if n in best:
            return best[n]
        if not node_ok[n] or n in onpath:
            return None
        onpath.add(n)
        w, u = node_w[n]
        tails = [t for t in (visit(m, onpath) for m in edges[n]) if t is not None]
        onpath.discard(n)
        r = None
        if tails:
            t = max(tails, key=lambda x: key(x[0]))
            r = (w + t[0], u or t[1])
        if n in latches and (r is None or key(w) > key(r[0])):
            r = (w, u)
        best[n] = r
        return r

    r = visit(node(loop["header"]), set())
    return r if r is not None else (collections.Counter(), True)


def group_entries(func, succ, names):
    """Group name -> entry block of the task loop's dispatch."""
    blocks = func.blocks
    index = {b[0]: i for i, b in enumerate(blocks) if b[0]}
    per_reg = collections.defaultdict(dict)
    for i, (_, ins) in enumerate(blocks):
        for k, x in enumerate(ins):
            m = re.match(r"setp\.eq\.s32\s+(%p\w+),\s*(%r\d+),\s*(\d+);", x)
            if not m:
                continue
            for y in ins[k + 1:]:
                bm = BRANCH.match(y)
                if bm and bm.group(1) and m.group(1) in bm.group(1):
                    tgt = index[bm.group(3)] if "!" not in bm.group(1) else i + 1
                    per_reg[m.group(2)][int(m.group(3))] = tgt
                    break
    # The dispatch: the register compared with the most group numbers (a
    # one-group kernel has none).
    cases = max(per_reg.values(), key=len, default={})
    if len(names) < 2 or len(cases) < 2:
        return {}
    return {names[g] if g < len(names) else "group%d" % g: blk for g, blk in cases.items()}


def analyse(ptx, names, all_loops=False, regions=None):
    """The K loops (every loop touching global memory with all_loops) of
    each group: rows of group, depth, label, counts (one interior step's
    tally), static, unknown, trips. With a dict `regions`, also each group's
    code outside its loops: regions[group] = the tally of the blocks its
    entry dominates and no loop of the group holds (every instruction once,
    both arms of each branch: an upper bound of one pass)."""
    rows = []
    for func in parse_funcs(ptx):
        blocks = func.blocks
        succ = cfg(blocks)
        idom, pred = dominators(succ)
        loops = natural_loops(succ, idom, pred)
        args_regs = args_registers(func)
        if func.name.startswith("etl.task."):
            owners = {func.name[len("etl.task."):]: 0}
        else:
            owners = group_entries(func, succ, names)
            if not owners and len(names) == 1:  # no dispatch: the one group is everything
                owners = {names[0]: 0}

        def owner(h):
            for g, e in owners.items():
                if dominates(idom, e, h):
                    return g
            return None

        in_rows = set()  # blocks of the loops reported (their steps count them)
        for l in loops:
            g = owner(l["header"])
            if g is None:
                continue
            if any(SCHEDULER.match(i) for b in l["blocks"] for i in blocks[b][1]):
                continue  # the task loop or a wait: a K loop never pops, waits or fences
            touches = any(classify(i, args_regs) == "gmem" and "acquire" not in i
                          and "volatile" not in i and not i.startswith("atom")
                          for b in l["blocks"] for i in blocks[b][1])
            if not touches:
                continue
            static, edge, _ = loop_counts(l, blocks, args_regs)
            c, unknown = hot_counts(l, blocks, args_regs, succ)
            if not c.get("mma") and not all_loops:  # a copy or wait loop, not a K loop
                continue
            depth, p = 0, l["parent"]
            while p is not None and owner(p["header"]) == g and \
                    not any(SCHEDULER.match(i) for b in p["blocks"] for i in blocks[b][1]):
                depth, p = depth + 1, p["parent"]  # (the task loop around a one-group kernel: not)
            in_rows |= l["blocks"]
            rows.append({"group": g, "depth": depth, "label": blocks[l["header"]][0] or "?",
                         "counts": c, "static": sum(static.values()), "unknown": unknown,
                         "trips": trip_count(l, blocks)})
        if regions is not None:
            for b, (_, ins) in enumerate(blocks):
                g = owner(b) if b in idom else None
                if g is not None and b not in in_rows:
                    r = regions.setdefault(g, collections.Counter())
                    for i in ins:
                        r.update(tally(i, args_regs))
    return rows


def ptxas_stats(ptxas, ptx_path, arch):
    out = sh([ptxas, "-arch=" + arch, "-v", ptx_path, "-o", os.devnull])
    regs = re.findall(r"Used (\d+) registers", out)
    st = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", out)
    return (max(map(int, regs)) if regs else None,
            max((int(a) + int(b) for a, b in st), default=0))


def fmt_row(name, r):
    c = r["counts"]
    tot = class_total(c)
    loop = "  " * r["depth"] + r["label"]
    cells = ["%5.0f" % c.get(k, 0) for k in CLASSES]
    return "%-28s %-16s %6.0f%s %s %6.0f" % (name, loop, tot, "?" if r["unknown"] else " ",
                                            " ".join(cells), r["static"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("programs", nargs="+")
    ap.add_argument("--etlc", default=os.path.join(ROOT, "build", "compiler", "etlc"))
    ap.add_argument("--target", default="sm_90")
    ap.add_argument("-D", dest="defines", action="append", default=[])
    ap.add_argument("--ptxas", action="store_true", help="also ptxas -v registers/spills, sm_80 and sm_90")
    ap.add_argument("--all-loops", action="store_true",
                    help="every loop that touches global memory, not only those with multiply-adds")
    ap.add_argument("--groups", default="",
                    help="comma-separated groups to print (default: all); exit 1 if one has no K loop")
    args = ap.parse_args()
    want = set(filter(None, args.groups.split(",")))
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    print("%-28s %-16s %7s %s %5s" % ("program:group", "loop", "total", " ".join("%5s" % k for k in CLASSES),
                                       "static"))
    found = set()
    with tempfile.TemporaryDirectory() as tmp:
        for src in args.programs:
            base = os.path.splitext(os.path.basename(src))[0]
            names = group_names(args.etlc, src, args.defines)
            ptx = compile_ptx(args.etlc, src, args.target, args.defines, os.path.join(tmp, base + ".ptx"))
            rows = analyse(ptx, names, args.all_loops)
            for r in rows:
                if not want or r["group"] in want:
                    print(fmt_row(base + ":" + r["group"], r))
            found |= {r["group"] for r in rows}
            if args.ptxas and os.path.exists(ptxas):
                res = []
                for arch in ("sm_80", "sm_90"):
                    p = os.path.join(tmp, "%s.%s.ptx" % (base, arch))
                    compile_ptx(args.etlc, src, arch, args.defines, p)
                    regs, spill = ptxas_stats(ptxas, p, arch)
                    res.append("%s %s regs %s spill bytes" % (arch, regs, spill))
                print("%-28s ptxas: %s" % (base, "; ".join(res)))
    missing = sorted(want - found)
    if missing:  # a named group without a K loop: the analysis lost it
        print("kloop_stats: no K loop found in %s" % ", ".join(missing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
