//===- tile/mma.cpp - Which dots run on tensor cores, and their staging ---===//
//
// mma_dot_layout and mma_staging (tile/passes.h): the facts the layout pass
// (tile/assign.cpp), the shared-memory allocator (tile/smem.cpp) and the
// lowering (lower/lower_tile_mma.cpp) share about a tensor-core `dot`:
//
//   - which: f16 x f16 or bf16 x bf16 of [M, K] x [K, N] at the default
//     precision with M % 16 == K % 16 == N % 8 == 0 (mma.sync.m16n8k16
//     tiles the shape) and K <= 256 (its k16 steps are unrolled); or f32 x
//     f32 with `precision = tf32`, the same rules with K % 8 == 0 and
//     K <= 128 (mma.sync.m16n8k8 .tf32: 16 k8 steps at most); the layouts
//     cover the shape padded to powers of two (tile/layout.h), and the
//     lowering issues mma and fragment loads for the real m16 row blocks,
//     n8 tiles and k steps only (lower/lower_tile_mma.cpp);
//   - fma_dot: the dots the FMA layout and lower/lower_tile_dot.cpp take:
//     f32 ones; f16/bf16 and tf32 ones off the mma shape, of one row (GEMV)
//     or with more k steps than one dot unrolls (K > 256, tf32 K > 128), each
//     with a DotFmaPath remark saying which; their registers hold f32
//     values, so the products are exact and the sums those of the f32 dot
//     (a tf32 one's operands are not rounded);
//   - its result: mma_layout(Acc, [M, N], warps, col_warps): warps own row
//     blocks, and split the columns too where the rows run out (M / 16 <
//     warps) or, in a K loop's `acc + dot`, where a warp tile loads fewer
//     fragments per k16 (mma_dot_col_warps);
//   - a in registers when its layout is mma_layout(A, [M, K], warps) (the
//     accumulator layout of [M, K] is that map: a cast of an accumulator),
//     else staged [M, K] row-major, swizzled, at byte 0 of the op's buffer;
//   - b staged [K, N] (ldmatrix.trans), or [N, K] when it is a transpose
//     (plain ldmatrix: the k-contiguous rows of its operand), after a
//     (from registers, or by cp.async when it is a load: the lowering's
//     mma_direct_b);
//   - tf32: a and b keep 32 bits an element, rows of 16-byte chunks of 4
//     floats XOR-swizzled (lower/lower_tile_mma.cpp's tile_tf32_ptr), A's
//     k8 fragments by ldmatrix.x4 (8 x 4 f32 is 8 x 8 b16), a transposed
//     b's by plain ldmatrix, a [K, N] b's by 32-bit loads (.trans would
//     swap b16 halves). a never comes from registers (the accumulator map
//     is not the tf32 A fragment's).
//
//===----------------------------------------------------------------------===//
#include "tile/passes.h"

namespace etl {

namespace {

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
  const bool tf32 = op.attr == "tf32";
  if (op.kind != TileOpKind::Dot || (!op.attr.empty() && !tf32) || op.operands.size() != 2 ||
      op.results.size() != 1)
    return false;
  const TValue &a = f.values[size_t(op.operands[0])], &b = f.values[size_t(op.operands[1])];
  if (a.elem != b.elem || a.shape.size() != 2 || b.shape.size() != 2 || a.shape[1] != b.shape[0])
    return false;
  if (tf32 ? a.elem != ElemType::F32 : a.elem != ElemType::F16 && a.elem != ElemType::BF16)
    return false;
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1], ks = mma_k_step(op);
  return M > 0 && N > 0 && K > 0 && M % 16 == 0 && K % ks == 0 && N % 8 == 0 && K / ks <= 16;
}

bool fma_dot(const TileFunc &f, const TOp &op, std::string *why) {
  const bool tf32 = op.attr == "tf32";
  if (op.kind != TileOpKind::Dot || (!op.attr.empty() && !tf32) || op.operands.size() != 2 ||
      op.results.size() != 1)
    return false;
  const TValue &a = f.values[size_t(op.operands[0])], &b = f.values[size_t(op.operands[1])];
  auto fp = [](ElemType e) {
    return e == ElemType::F32 || e == ElemType::F16 || e == ElemType::BF16;
  };
  if (!fp(a.elem) || !fp(b.elem) || a.shape.empty() || a.shape.size() > 2 ||
      b.shape.size() != 2 || a.shape.back() != b.shape[0])
    return false;
  if (tf32 && (a.elem != ElemType::F32 || b.elem != ElemType::F32))
    return false;
  if (!tf32 && (a.elem != b.elem || a.elem == ElemType::F32)) // no tensor-core dot: no remark
    return true;
  const int64_t ks = mma_k_step(op);
  std::string r;
  if (a.shape.size() == 1)
    r = "a one-row (GEMV) dot keeps the memory-bound path";
  else if (const int64_t M = a.shape[0], K = b.shape[0], N = b.shape[1]; M % 16 || N % 8 || K % ks)
    r = "its shape [" + std::to_string(M) + ", " + std::to_string(K) + "] x [" +
        std::to_string(K) + ", " + std::to_string(N) + "] is not a multiple of the " +
        (tf32 ? "tf32 mma shape (M % 16, K % 8, N % 8)" : "mma shape (M % 16, K % 16, N % 8)");
  else if (K / ks > 16)
    r = "its K = " + std::to_string(K) + " is more than the " + std::to_string(16 * ks) +
        " one dot unrolls (16 k" + std::to_string(ks) + " steps); split K with a loop";
  else
    return false; // tensor cores (mma_dot), or none of the tile IR's dots
  if (why)
    *why = r;
  return true;
}

int64_t mma_k_step(const TOp &op) { return op.attr == "tf32" ? 8 : 16; }

namespace {

void uses_of(const std::vector<TOp> &body, int v, std::vector<const TOp *> &out) {
  for (const TOp &op : body) {
    for (int o : op.operands)
      if (o == v)
        out.push_back(&op);
    uses_of(op.body, v, out);
  }
}

bool is_block_arg(const std::vector<TOp> &body, int v) {
  for (const TOp &op : body) {
    for (int a : op.block_args)
      if (a == v)
        return true;
    if (is_block_arg(op.body, v))
      return true;
  }
  return false;
}

/// `acc + dot(..)` with acc a loop's iter_arg: a K loop's accumulation.
bool k_loop_accumulation(const TileFunc &f, const TOp &op) {
  std::vector<const TOp *> uses;
  uses_of(f.body, op.results[0], uses);
  if (uses.size() != 1 || uses[0]->kind != TileOpKind::Binary || uses[0]->attr != "add")
    return false;
  for (int o : uses[0]->operands)
    if (o != op.results[0] && is_block_arg(f.body, o))
      return true;
  return false;
}

/// Does `v` reach a dot's a operand through elementwise ops (a chained
/// dot's P = cast(f(S)))? Such an S keeps row blocks per warp, so that P is
/// in the A layout (registers, FlashAttention-2's row ownership).
bool feeds_dot_a(const TileFunc &f, int v, int depth = 0) {
  if (depth > 16)
    return false;
  std::vector<const TOp *> us;
  uses_of(f.body, v, us);
  for (const TOp *u : us) {
    if (u->kind == TileOpKind::Dot && u->operands[0] == v)
      return true;
    if (op_family(u->kind) == OpFamily::Elementwise || u->kind == TileOpKind::Convert)
      for (int r : u->results)
        if (feeds_dot_a(f, r, depth + 1))
          return true;
  }
  return false;
}

} // namespace

namespace {

/// Rows of `cols` 16-bit elements that a swizzled descriptor names: 32, 64
/// or a multiple of 128 bytes (wgmma_staging_layout).
bool wgmma_row(int64_t cols) { return (2 * cols) % 128 == 0 || 2 * cols == 64 || 2 * cols == 32; }

/// wgmma's accumulator fits the dot's shape on `warps`: warpgroups of 4
/// warps, warp w of the CTA owning rows 16w .. 16w + 15 (M = 16 warps: 64
/// rows per warpgroup, all N columns, as m64nNk16 gives them), N a power of
/// two <= 256 (the layout's n8 tiles all real).
std::string wgmma_shape_gap(const TileFunc &f, const TOp &op, unsigned warps) {
  if (!mma_dot(f, op) || op.attr == "tf32")
    return "not an f16/bf16 tensor-core dot";
  const TValue &a = f.values[size_t(op.operands[0])], &r = f.values[size_t(op.results[0])];
  const int64_t M = r.shape[0], N = r.shape[1], K = a.shape[1];
  if (warps % 4 || M != 16 * int64_t(warps))
    return "M = " + std::to_string(M) + " is not 16 rows for each of the CTA's " +
           std::to_string(warps) + " warps (64 per warpgroup of 4; --threads " +
           std::to_string(M / 16 * 32) + " would fit)";
  if (N < 8 || N > 256 || (N & (N - 1)))
    return "N = " + std::to_string(N) + " is not a power of two in [8, 256]";
  if (!wgmma_row(K))
    return "K = " + std::to_string(K) + " rows are not 32, 64 or a multiple of 128 bytes";
  return "";
}

} // namespace

std::string wgmma_gap(const TileFunc &f, const TOp &op) {
  if (!f.wgmma)
    return "a target of the compilation has no wgmma";
  const MmaStaging st = mma_staging(f, op);
  if (!st.ok)
    return "not a tensor-core dot in the accumulator layout";
  const Layout &lr = f.layouts[size_t(f.values[size_t(op.results[0])].layout)];
  const unsigned warps = lr.num_warps();
  if (std::string g = wgmma_shape_gap(f, op, warps); !g.empty())
    return g;
  const TValue &r = f.values[size_t(op.results[0])];
  if (lr != mma_layout(MmaOperand::Acc, r.shape, warps, 1))
    return "its accumulator layout splits the columns over warps";
  if (!st.a_view || !st.b_view)
    return "an operand is not a ring slot (staged by the dot itself)";
  const TValue &b = f.values[size_t(op.operands[1])];
  const int64_t K = b.shape[0], N = b.shape[1];
  if (!wgmma_row(st.b_nk ? K : N))
    return "b's rows are not 32, 64 or a multiple of 128 bytes";
  return "";
}

unsigned mma_dot_col_warps(const TileFunc &f, const TOp &op, unsigned warps) {
  const TValue &r = f.values[size_t(op.results[0])];
  if (f.wgmma && wgmma_shape_gap(f, op, warps).empty())
    return 1; // wgmma's accumulator: warps own row blocks, all N columns
  const unsigned rb = ceil_log2(uint64_t(r.shape[0] / 16)), cb = ceil_log2(uint64_t(r.shape[1] / 8)),
                 wb = ceil_log2(std::max(1u, warps));
  if (feeds_dot_a(f, op.results[0]))
    return 1; // warps past the row blocks are replicas
  unsigned lo = wb > rb ? std::min(wb - rb, cb) : 0u, best = lo;
  if (!k_loop_accumulation(f, op))
    return 1u << lo;
  // Per thread, the accumulators of real elements: warps split the shape
  // padded to powers of two, and a row block or n8 tile past the real edge
  // costs registers only where a warp bit puts it there (register bits
  // past it are skipped, lower/lower_tile_mma.cpp): a warp split of a
  // padded dim can double the live set (80 columns: 2 x 64). The same for
  // every split of a power-of-two shape.
  auto live = [&](unsigned c) {
    const unsigned rw = std::min(wb - c, rb);
    return std::min<int64_t>(int64_t(16) << (rb - rw), r.shape[0]) *
           std::min<int64_t>(int64_t(8) << (cb - c), r.shape[1]);
  };
  // Per warp and k16: an ldmatrix.x4 per m16 row block (A) and one per n16
  // column unit (B; .x2 for a last n8): the split with the fewest wins,
  // rows first on a tie (the unit-per-warp order of a single dot).
  auto loads = [&](unsigned c) {
    const int64_t rows = r.shape[0] >> (wb - c), cols = r.shape[1] >> c;
    return std::max<int64_t>(1, rows / 16) + std::max<int64_t>(1, cols / 16);
  };
  for (unsigned c = lo; c <= std::min(wb, cb); ++c)
    if (live(c) < live(best) || (live(c) == live(best) && loads(c) < loads(best)))
      best = c;
  return 1u << best;
}

std::optional<Layout> mma_dot_layout(const TileFunc &f, const TOp &op, unsigned warps) {
  if (!mma_dot(f, op))
    return std::nullopt;
  const TValue &r = f.values[size_t(op.results[0])];
  return mma_layout(MmaOperand::Acc, r.shape, warps, mma_dot_col_warps(f, op, warps));
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
  const unsigned cw = mma_col_warps(lr);
  s.ok = lr == mma_layout(MmaOperand::Acc, r.shape, lr.num_warps(), cw);
  s.tf32 = op.attr == "tf32";
  s.a_regs = !s.tf32 &&
             f.layouts[size_t(a.layout)] == mma_layout(MmaOperand::A, a.shape, lr.num_warps(), cw);
  const TOp *d = defining_op(f.body, op.operands[1]);
  s.b_nk = d && d->kind == TileOpKind::Transpose;
  if (s.b_nk)
    d = defining_op(f.body, d->operands[0]);
  const TOp *da = defining_op(f.body, op.operands[0]);
  s.a_view = da && da->kind == TileOpKind::SmemView;
  s.b_view = d && d->kind == TileOpKind::SmemView;
  const int64_t eb = s.tf32 ? 4 : 2; // f32 operands stay 32-bit in shared memory
  s.b_base = s.a_regs || s.a_view ? 0 : line_bytes(eb * a.numel());
  s.bytes = s.b_base + (s.b_view ? 0 : line_bytes(eb * b.numel()));
  return s;
}

} // namespace etl
