//===- tile/mma.cpp - Which dots run on tensor cores, and their staging ---===//
//
// mma_dot_layout and mma_staging (tile/passes.h): the facts the layout pass
// (tile/assign.cpp), the shared-memory allocator (tile/smem.cpp) and the
// lowering (lower/lower_tile_mma.cpp) share about a tensor-core `dot`:
//
//   - which: f16 x f16 or bf16 x bf16 of [M, K] x [K, N] at the default
//     precision, M, N, K powers of two with M % 16 == K % 16 == N % 8 == 0
//     and K <= 256 (its k16 steps are unrolled)
//     (mma.sync.m16n8k16 tiles the shape without padding); any other dot
//     keeps the FMA layout (and the AST path, lower/lower_tile_control.cpp);
//   - its result: mma_layout(Acc, [M, N], warps), warps own row blocks;
//   - a in registers when its layout is mma_layout(A, [M, K], warps) (the
//     accumulator layout of [M, K] is that map: a cast of an accumulator),
//     else staged [M, K] row-major, swizzled, at byte 0 of the op's buffer;
//   - b staged [K, N] (ldmatrix.trans), or [N, K] when it is a transpose
//     (plain ldmatrix: the k-contiguous rows of its operand), after a
//     (from registers, or by cp.async when it is a load: the lowering's
//     mma_direct_b).
//
//===----------------------------------------------------------------------===//
#include "tile/passes.h"

namespace etl {

namespace {

bool pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

int64_t line_bytes(int64_t n) { return (n + 127) / 128 * 128; }

} // namespace

const TOp *defining_op(const std::vector<TOp> &body, int v) {
  for (const TOp &op : body) {
    for (int r : op.results)
      if (r == v)
        return &op;
    if (const TOp *d = defining_op(op.body, v))
      return d;
  }
  return nullptr;
}

bool mma_dot(const TileFunc &f, const TOp &op) {
  if (op.kind != TileOpKind::Dot || !op.attr.empty() || op.operands.size() != 2 ||
      op.results.size() != 1)
    return false;
  const TValue &a = f.values[size_t(op.operands[0])], &b = f.values[size_t(op.operands[1])];
  if (a.elem != b.elem || (a.elem != ElemType::F16 && a.elem != ElemType::BF16) ||
      a.shape.size() != 2 || b.shape.size() != 2 || a.shape[1] != b.shape[0])
    return false;
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  return pow2(M) && pow2(K) && pow2(N) && M % 16 == 0 && K % 16 == 0 && N % 8 == 0 && K <= 256;
}

std::optional<Layout> mma_dot_layout(const TileFunc &f, const TOp &op, unsigned warps) {
  if (!mma_dot(f, op))
    return std::nullopt;
  const TValue &r = f.values[size_t(op.results[0])];
  return mma_layout(MmaOperand::Acc, r.shape, warps);
}

MmaStaging mma_staging(const TileFunc &f, const TOp &op) {
  MmaStaging s;
  if (!mma_dot(f, op))
    return s;
  const TValue &a = f.values[size_t(op.operands[0])], &b = f.values[size_t(op.operands[1])];
  const TValue &r = f.values[size_t(op.results[0])];
  if (a.layout < 0 || b.layout < 0 || r.layout < 0)
    return s;
  const Layout &lr = f.layouts[size_t(r.layout)];
  s.ok = lr == mma_layout(MmaOperand::Acc, r.shape, lr.num_warps());
  s.a_regs = f.layouts[size_t(a.layout)] == mma_layout(MmaOperand::A, a.shape, lr.num_warps());
  const TOp *d = defining_op(f.body, op.operands[1]);
  s.b_nk = d && d->kind == TileOpKind::Transpose;
  s.b_base = s.a_regs ? 0 : line_bytes(2 * a.numel());
  s.bytes = s.b_base + line_bytes(2 * b.numel());
  return s;
}

} // namespace etl
