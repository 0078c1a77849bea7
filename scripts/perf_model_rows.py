"""perf_model_rows.py: the rows scripts/perf_model.py predicts, and its fitted constants.

No per-group input is written here: etlc's model (`--emit=time`,
compiler/cost/timing.cpp) reads every group's steps, PTX per step, ring,
bytes and task counts from the code it compiles (docs/PERF_MODEL.md,
section 2).

ROWS: the measured H200 rows (README "Benchmarks"; stop 25's note: its final
table and its TK sweep, measured side by side in one call), CUDA events,
median of 15 runs, launch included. They were measured on the code of
30c4d87 (before the AST lowering's removal, with the head/tail/CAS queue);
the model predicts them from today's code, so each error mixes the model's
error with what changed in the code since (docs/PERF_MODEL.md, section 5).
Each says whether it was fitted (its measurement set a constant of FIT) or
predicted.

STEP_ROWS: the whole Qwen3 decode step (examples/qwen3_decode: embedding,
L layers, final norm, lm_head, argmax) at Qwen3-0.6B and -8B dims, batch 1,
4, 16, 64, KV 1024: predictions, not measured.
"""

# The fitted constants (launch_us, cas_pop_us) are in compiler/cost/gpus.def's
# ETL_GPU_TIMING rows, each from the one measurement named there: gemm bf16
# 128^3 (the launch) and the Qwen3-8B decode layer at B 16 (the CAS queue).

# The programs gpu_bench.py runs (perf_model.model_ms): their source.
PROGRAMS = {"gemm": "examples/gemm/gemm.etl",
            "gemm_tf32": "examples/gemm/gemm_tf32.etl",
            "mlp_bf16": "examples/mlp/mlp_bf16.etl",
            "prefill_attention": "examples/prefill_attention/prefill_attention.etl",
            "decode_layer": "examples/decode_layer/decode_layer.etl",
            "qwen3_decode": "examples/qwen3_decode/qwen3_decode.etl"}

_8B = {"H": 4096, "NKV": 8, "G": 4, "F": 12288}
_06B = {"H": 1024, "NKV": 8, "G": 2, "F": 3072}
_QWEN3 = {"0.6B": dict(_06B, L=28, V=151936), "8B": dict(_8B, L=36, V=151936)}  # qwen3_decode_check.DIMS


def cdiv(a, b):
    return -(-a // b)


def _dec(dims, b, kv, tk, ms, role):
    # MP as decode_layer_check.make_case sizes it (pages per request, + 1)
    mp = cdiv(kv, 16) + 1
    return {"src": PROGRAMS["decode_layer"],
            "binding": dict(dims, B=b, kv_len=kv, MP=mp, NP=b * mp + 3, _tensors=("kv_len",)),
            "defines": () if tk == 64 else ("TK=%d" % tk,), "measured_ms": ms, "role": role,
            "what": "decode layer %s, B %d, KV %d, TK %d" % ("8B" if dims is _8B else "0.6B", b, kv, tk)}


ROWS = {
    "gemm_bf16_128": {"src": PROGRAMS["gemm"], "what": "gemm bf16 128^3",
                      "binding": {"M": 128, "N": 128, "K": 128}, "measured_ms": 0.029, "role": "fit"},
    "gemm_bf16_4096": {"src": PROGRAMS["gemm"], "what": "gemm bf16 4096^3",
                       "binding": {"M": 4096, "N": 4096, "K": 4096}, "measured_ms": 0.824,
                       "role": "pred"},
    "gemm_bf16_8192": {"src": PROGRAMS["gemm"], "what": "gemm bf16 8192^3",
                       "binding": {"M": 8192, "N": 8192, "K": 8192}, "measured_ms": 6.46,
                       "role": "pred"},
    "gemm_tf32_4096": {"src": PROGRAMS["gemm_tf32"], "what": "gemm tf32 4096^3",
                       "binding": {"M": 4096, "N": 4096, "K": 4096}, "measured_ms": 2.74,
                       "role": "pred"},
    "mlp_bf16_4096": {"src": PROGRAMS["mlp_bf16"], "what": "mlp bf16 T4096 D4096 F12288",
                      "binding": {"T": 4096, "D": 4096, "F": 12288}, "measured_ms": 28.5,
                      "role": "pred"},
    "prefill_g4": {"src": PROGRAMS["prefill_attention"], "what": "prefill+o_proj S4096 32 heads HID4096",
                   "binding": {"S": 4096, "NKV": 8, "G": 4, "HID": 4096}, "measured_ms": 2.60,
                   "role": "pred"},
    "prefill_g1": {"src": PROGRAMS["prefill_attention"], "what": "prefill+o_proj S4096 8 heads HID1024",
                   "binding": {"S": 4096, "NKV": 8, "G": 1, "HID": 1024}, "measured_ms": 0.68,
                   "role": "pred"},
    "decode_8b_b1": _dec(_8B, 1, 1024, 64, 0.749, "pred"),
    "decode_8b_b1_tk32": _dec(_8B, 1, 1024, 32, 0.90, "pred"),
    "decode_8b_b1_tk16": _dec(_8B, 1, 1024, 16, 1.36, "pred"),
    "decode_8b_b16": _dec(_8B, 16, 1024, 64, 3.69, "fit"),
    "decode_8b_b16_tk32": _dec(_8B, 16, 1024, 32, 3.91, "pred"),
    "decode_8b_b16_tk16": _dec(_8B, 16, 1024, 16, 4.31, "pred"),
    "decode_06b_b4": _dec(_06B, 4, 512, 64, 0.554, "pred"),
}


def step_binding(model, b, kv=1024):
    """qwen3_decode's binding at Qwen3 `model` dims ("0.6B", "8B"), batch b,
    every request's KV length kv (this step's token included): MP pages per
    request as qwen3_decode_check.make_model sizes them for one step."""
    mp = cdiv(kv, 16) + 1
    return dict(_QWEN3[model], B=b, kv_len=kv, MP=mp, NP=b * mp + 3, _tensors=("kv_len",))


STEP_ROWS = {
    "step_%s_b%d" % (m.replace(".", "").lower(), b): {
        "src": PROGRAMS["qwen3_decode"], "binding": step_binding(m, b),
        "what": "Qwen3-%s step, B %d, KV 1024" % (m, b)}
    for m in ("0.6B", "8B") for b in (1, 4, 16, 64)}
