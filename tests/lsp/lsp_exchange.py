#!/usr/bin/env python3
"""A scripted LSP session with `etlc lsp` over pipes, as an editor has one.

Usage: lsp_exchange.py ETLC

Starts `ETLC lsp`, initializes it with this repository as the workspace
folder (so imports come from its stdlib/), then checks, each against what
the compiler itself says:

  1. diagnostics: a broken file opened gets a publishDiagnostics whose
     range and message are those of `etlc compile --emit=taskgraph
     --diagnostics-format=json` on the same file; fixing it (didChange)
     publishes an empty list;
  2. hover: over `x` in examples/mlp/mlp_bf16.etl, its symbolic shape
     `tensor<bf16>[T, D]`; over a `var` tile its type and layout;
  3. go to definition: `silu` goes into stdlib/std/math.etl, at its `fn`;
  4. completion: inside `sum(t, ` the keyword argument `axis` and the
     builtins;
  5. protocol errors: malformed JSON (ParseError), an unknown method
     (MethodNotFound), a position past the end (an empty result);
  6. shutdown and exit: the process exits 0.

Exit 0 when every check holds, 1 with the failed ones listed.
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


class Client:
    def __init__(self, etlc):
        self.p = subprocess.Popen([etlc, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        self.next_id = 1
        self.pending = []  # notifications read while waiting for a reply

    def send_raw(self, body: bytes):
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.p.stdin.flush()

    def send(self, obj):
        obj["jsonrpc"] = "2.0"
        self.send_raw(json.dumps(obj).encode())

    def read(self):
        length = None
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("etlc lsp closed its output; stderr: " +
                                   self.p.stderr.read().decode(errors="replace"))
            line = line.strip()
            if not line:
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return json.loads(self.p.stdout.read(length))

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"id": rid, "method": method, "params": params})
        while True:
            m = self.read()
            if m.get("id") == rid:
                return m
            self.pending.append(m)

    def notification(self, method):
        for i, m in enumerate(self.pending):
            if m.get("method") == method:
                return self.pending.pop(i)
        while True:
            m = self.read()
            if m.get("method") == method:
                return m
            self.pending.append(m)


def uri(path):
    return pathlib.Path(path).resolve().as_uri()


def pos(text, needle, skip=0):
    """The LSP position of the first character of `needle` (+ skip) in text."""
    i = text.index(needle) + skip
    line = text.count("\n", 0, i)
    return {"line": line, "character": i - (text.rfind("\n", 0, i) + 1)}


def main():
    etlc = sys.argv[1]
    c = Client(etlc)
    init = c.request("initialize", {"processId": os.getpid(), "rootUri": uri(ROOT),
                                    "workspaceFolders": [{"uri": uri(ROOT), "name": "etl"}],
                                    "capabilities": {}})
    caps = init["result"]["capabilities"]
    check(caps.get("hoverProvider") and caps.get("definitionProvider")
          and "completionProvider" in caps, "initialize: hover, definition, completion offered")
    c.send({"method": "initialized", "params": {}})

    # 1. Diagnostics of a broken file, as etlc reports them.
    with tempfile.TemporaryDirectory() as tmp:
        broken = pathlib.Path(tmp, "broken.etl")
        text = ("const TM = 16;\nkernel k<M: dim>(y: tensor<f32>[M]) {\n"
                "  task a[i in 0 .. cdiv(M, TM)] {\n"
                "    store(y[i * TM .. +TM], zeros<f32>[TM] + undefined_name);\n  }\n}\n")
        broken.write_text(text)
        c.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri(broken), "languageId": "etl", "version": 1, "text": text}}})
        diags = c.notification("textDocument/publishDiagnostics")["params"]
        ref = json.loads(subprocess.run(
            [etlc, "compile", str(broken), "--emit=taskgraph", "--diagnostics-format=json"],
            capture_output=True, text=True).stderr)["diagnostics"]
        check(diags["uri"] == uri(broken), "diagnostics: for the file opened")
        check(len(diags["diagnostics"]) == len(ref) == 1, "diagnostics: etlc's one error")
        d, r = diags["diagnostics"][0], ref[0]["location"]
        check(d["message"] == ref[0]["message"] == "use of undefined name 'undefined_name'",
              "diagnostics: etlc's message")
        want = {"start": {"line": r["line"] - 1, "character": r["column"] - 1},
                "end": {"line": r["end_line"] - 1, "character": r["end_column"] - 1}}
        check(d["range"] == want, f"diagnostics: range {d['range']} == etlc's {want}")
        check(d["severity"] == 1 and d["code"] == "UndefinedName", "diagnostics: an error, its kind")
        fixed = text.replace(" + undefined_name", "")
        c.send({"method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri(broken), "version": 2},
            "contentChanges": [{"text": fixed}]}})
        again = c.notification("textDocument/publishDiagnostics")["params"]
        check(again["diagnostics"] == [] and again["version"] == 2,
              "diagnostics: empty once fixed (didChange)")

    # 2.-4. Hover, definition, completion in an example that imports std.math.
    mlp = ROOT / "examples/mlp/mlp_bf16.etl"
    text = mlp.read_text()
    doc = {"uri": uri(mlp)}
    c.send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri(mlp), "languageId": "etl", "version": 1, "text": text}}})
    clean = c.notification("textDocument/publishDiagnostics")["params"]["diagnostics"]
    check([x for x in clean if x["severity"] == 1] == [], "mlp_bf16: no errors")
    h = c.request("textDocument/hover", {"textDocument": doc,
                                         "position": pos(text, "load(x[", 5)})["result"]
    value = h["contents"]["value"] if h else ""
    check("tensor<bf16>[T, D]" in value, "hover on x: tensor<bf16>[T, D] in " + repr(value))
    h = c.request("textDocument/hover", {"textDocument": doc,
                                         "position": pos(text, "var acc", 4)})["result"]
    value = h["contents"]["value"] if h else ""
    check("tile<f32>[32, 64]" in value and "layout:" in value,
          "hover on acc: tile<f32>[32, 64] and its layout in " + repr(value))
    h = c.request("textDocument/hover", {"textDocument": doc,
                                         "position": pos(text, "g += dot(load", 6)})["result"]
    check(h and "matrix product" in h["contents"]["value"], "hover on dot: builtins.def's line")
    d = c.request("textDocument/definition", {"textDocument": doc,
                                              "position": pos(text, "silu(g)", 1)})["result"]
    math = ROOT / "stdlib/std/math.etl"
    fn_line = math.read_text().split("\n").index(next(
        l for l in math.read_text().split("\n") if l.startswith("fn silu(")))
    check(d is not None and d["uri"] == uri(math) and d["range"]["start"]["line"] == fn_line,
          f"definition of silu: {d} is stdlib/std/math.etl line {fn_line + 1}")
    d = c.request("textDocument/definition", {"textDocument": doc,
                                              "position": pos(text, "] waits hready", 9)})["result"]
    check(d is not None and d["range"]["start"] == pos(text, "hready[cdiv"),
          "definition of the event hready: its declaration")
    typed = text.replace("cast<bf16>(silu(g) * u)", "cast<bf16>(sum(g, ")
    c.send({"method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri(mlp), "version": 2}, "contentChanges": [{"text": typed}]}})
    half = c.notification("textDocument/publishDiagnostics")["params"]["diagnostics"]
    check(any(x["severity"] == 1 for x in half), "half-typed text: a syntax error published")
    items = c.request("textDocument/completion", {"textDocument": doc,
                                                  "position": pos(typed, "sum(g, ", 7)})
    labels = [i["label"] for i in items["result"]["items"]]
    check("axis" in labels and "load" in labels and "dot" in labels,
          "completion in sum(g, : axis and the builtins")

    # 5. Protocol errors.
    c.send_raw(b"{this is not json")
    m = c.read()
    check(m.get("error", {}).get("code") == -32700, "malformed JSON: ParseError")
    m = c.request("no/such/method", {})
    check(m.get("error", {}).get("code") == -32601, "unknown method: MethodNotFound")
    m = c.request("textDocument/hover", {"textDocument": doc,
                                         "position": {"line": 100000, "character": 3}})
    check("error" not in m and m["result"] is None, "a position past the end: an empty result")

    # 6. Shutdown and exit.
    m = c.request("shutdown", None)
    check("error" not in m, "shutdown")
    c.send({"method": "exit"})
    try:
        code = c.p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        c.p.kill()
        code = None
    check(code == 0, f"exit: status {code}")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
