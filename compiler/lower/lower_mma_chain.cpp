//===- lower/lower_mma_chain.cpp - Chained tensor-core dots ---------------===//
//
// What this owns: Lowerer::dot_chained, a tensor-core `dot` whose A operand
// is an elementwise function of another tensor-core dot in the same
// expression (attention's P V with P = f(Q K^T)):
//
//   dot(cast<bf16>(f(dot(a1, b1))), b2)     b1 may be transpose(x)
//
// where f is built of + - * /, unary -, casts, unary math (exp, ...) and
// two-argument max/min, whose tile-typed nodes all have the inner dot's
// [M, N1] shape, and whose other leaves are scalars (literals, constants,
// scalar parameters and locals). The inner dot's accumulators never leave
// the registers:
//
//   1. a1 (unless mma_hoist_begin staged it), b1 and b2 go to their
//      swizzled areas as in dot_staged (cp.async for loads, else from
//      registers), then one barrier;
//   2. warp w owns the m16 row blocks w, w + W, ... whole (FlashAttention-2's
//      row ownership). For its row block it accumulates S = a1 b1 over all
//      N1 columns in the m16n8 accumulator layout (ldmatrix + mma as
//      mma_accumulate), applies f to each accumulator register in place
//      (an elementwise f needs no other element), rounds to 16 bits, and
//      packs the pairs into A fragments: the accumulator fragment of n8
//      tile j holds (row g, cols 8j + 2t, 8j + 2t + 1) in registers 0, 1 and
//      (row g + 8, same cols) in 2, 3 (g = lane >> 2, t = lane & 3); the A
//      fragment of k16 slice kk holds (g, 16kk + 2t ..) in register 0,
//      (g + 8, 16kk + 2t ..) in 1, (g, 16kk + 8 + 2t ..) in 2 and (g + 8,
//      16kk + 8 + 2t ..) in 3 (PTX ISA, mma.m16n8k16 fragments; layout.h's
//      MmaOperand::A and ::Acc), so A register 0 of slice kk is the pair
//      (c0, c1) of n8 tile 2kk, register 1 its (c2, c3), registers 2 and 3
//      the same of tile 2kk + 1: no shuffle, no shared memory;
//   3. the second dot runs from those registers: per n-unit of b2 and per
//      k16 slice, ldmatrix of b2's fragments and the mmas; the result
//      fragments go back to the register layout as dot_mma's do
//      (mma_store_frags, mma_read_result).
//
// The scalar leaves are evaluated before the warp loop (no op inside it
// meets the CTA at a barrier). Shared memory: 2 (M K1 + K1 N1 + N1 N2)
// bytes of operands (no M N1 of P) and the f32 result, 4 M
// mma_result_stride(N2). A dot of any other form returns none (the caller
// takes dot_async, dot_staged or dot).
//
//===----------------------------------------------------------------------===//
#include "lower/lowerer.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <map>

namespace etl {

namespace {

/// A scalar expression evaluated without meeting the CTA: literals, names
/// and arithmetic of them.
bool simple_scalar(const Expr &e) {
  if (e.type.is_tile())
    return false;
  switch (e.kind) {
  case ExprKind::IntLit:
  case ExprKind::FloatLit:
  case ExprKind::Name:
    return true;
  case ExprKind::Unary:
  case ExprKind::Binary:
    for (const ExprPtr &x : e.args)
      if (!simple_scalar(*x))
        return false;
    return true;
  default:
    return false;
  }
}

bool is_arith(BinOp op) {
  return op == BinOp::Add || op == BinOp::Sub || op == BinOp::Mul || op == BinOp::Div;
}

/// Is `e` an elementwise float function of exactly one dot (`inner`, set
/// here) whose tile nodes all have `shape`? Scalar leaves go to `scalars`.
bool elementwise_of_dot(const Expr &e, const std::vector<int64_t> &shape, const Expr *&inner,
                        std::vector<const Expr *> &scalars) {
  if (!e.type.is_tile()) {
    if (!simple_scalar(e))
      return false;
    scalars.push_back(&e);
    return true;
  }
  if (e.type.tile_shape != shape || (e.type.elem != ElemType::F32 && e.type.elem != ElemType::F16 &&
                                     e.type.elem != ElemType::BF16))
    return false;
  if (dot_form(e).a) {
    if (inner)
      return false; // one accumulator feeds the operand
    inner = &e;
    return e.type.elem == ElemType::F32;
  }
  auto all = [&] {
    for (const ExprPtr &x : e.args)
      if (!elementwise_of_dot(*x, shape, inner, scalars))
        return false;
    return true;
  };
  switch (e.kind) {
  case ExprKind::Unary:
    return e.un_op == UnOp::Neg && all();
  case ExprKind::Binary:
    return is_arith(e.bin_op) && all();
  case ExprKind::Call:
    if (!e.kwargs.empty())
      return false;
    if (e.builtin == Builtin::Cast || is_unary_math_fn(e.builtin))
      return e.args.size() == 1 && all();
    if (e.builtin == Builtin::Max || e.builtin == Builtin::Min)
      return e.args.size() == 2 && all();
    return false;
  default:
    return false;
  }
}

} // namespace

llvm::Value *Lowerer::chain_eval(const Expr &e, const Expr *inner, llvm::Value *acc,
                                 const std::map<const Expr *, llvm::Value *> &scalars) {
  if (&e == inner)
    return acc;
  if (auto it = scalars.find(&e); it != scalars.end())
    return it->second;
  const ElemType want = e.type.elem;
  auto arg = [&](size_t i) {
    return round_to(b, chain_eval(*e.args[i], inner, acc, scalars), want);
  };
  switch (e.kind) {
  case ExprKind::Unary:
    return b.CreateFNeg(arg(0));
  case ExprKind::Binary: {
    llvm::Value *l = arg(0), *r = arg(1), *v = nullptr;
    switch (e.bin_op) {
    case BinOp::Add:
      v = b.CreateFAdd(l, r);
      break;
    case BinOp::Sub:
      v = b.CreateFSub(l, r);
      break;
    case BinOp::Mul:
      v = b.CreateFMul(l, r);
      break;
    default:
      v = b.CreateFDiv(l, r);
      break;
    }
    return round_to(b, v, want);
  }
  default:
    break;
  }
  if (e.builtin == Builtin::Cast)
    return arg(0);
  if (e.builtin == Builtin::Max || e.builtin == Builtin::Min)
    return b.CreateBinaryIntrinsic(e.builtin == Builtin::Max ? llvm::Intrinsic::maxnum
                                                             : llvm::Intrinsic::minnum,
                                   arg(0), arg(1));
  llvm::Value *x = chain_eval(*e.args[0], inner, acc, scalars); // math in f32, rounded once
  return round_to(b, math_reg(math_fn(e.builtin), x, nullptr), want);
}

std::optional<TileVal> Lowerer::dot_chained(const Expr &call) {
  const DotForm outer = dot_form(call);
  if (!outer.a || outer.a->type.tile_shape.size() != 2)
    return std::nullopt;
  const Expr &fa = *outer.a;
  const Expr *inner_e = nullptr;
  std::vector<const Expr *> scalar_leaves;
  if (fa.kind != ExprKind::Call || fa.builtin != Builtin::Cast ||
      !elementwise_of_dot(fa, fa.type.tile_shape, inner_e, scalar_leaves) || !inner_e)
    return std::nullopt;
  const DotForm inner = dot_form(*inner_e);
  auto logical = [](const Expr &x, bool nk) {
    TileVal v;
    v.elem = x.type.elem, v.shape = x.type.tile_shape;
    if (nk)
      std::swap(v.shape[0], v.shape[1]);
    return v;
  };
  TileVal a1 = logical(*inner.a, false), c1 = logical(*inner.b, inner.b_nk);
  TileVal a2 = logical(fa, false), c2 = logical(*outer.b, outer.b_nk);
  if (a1.shape[1] != c1.shape[0] || a2.shape[1] != c2.shape[0] || mma_eligible(a1, c1) != "ok" ||
      mma_eligible(a2, c2) != "ok" || a2.shape[1] % 16 != 0)
    return std::nullopt;
  MmaTile t1 = mma_tile(a1, c1), t2 = mma_tile(a2, c2);
  t1.b_nk = inner.b_nk, t2.b_nk = outer.b_nk;
  const int64_t M = t1.M, K1 = t1.K, N1 = t1.N, N2 = t2.N;
  auto hoisted = inner.a->kind == ExprKind::Name && inner.a->ref == NameRef::Local
                     ? mma_hoisted.find(inner.a->ref_index)
                     : mma_hoisted.end();
  const bool a_hoisted = hoisted != mma_hoisted.end();
  const int64_t a_bytes = a_hoisted ? 0 : 2 * M * K1, b1_off = a_bytes,
                b2_off = b1_off + 2 * K1 * N1, c_base = b2_off + 2 * N1 * N2;
  const int64_t total = c_base + 4 * M * mma_result_stride(N2);
  if (total > int64_t(plan.smem_budget) - int64_t(kSmemScratch) - scratch_floor)
    return std::nullopt;
  // 1. The operands: loads by cp.async, other tiles from registers.
  auto is_load = [](const Expr &x) {
    return x.kind == ExprKind::Call && x.builtin == Builtin::Load && x.kwargs.empty();
  };
  struct Operand {
    std::optional<ChunkLoad> chunk;
    TileVal regs;
  };
  auto operand = [&](const Expr &x, const std::vector<int64_t> &rows) {
    Operand o;
    if (is_load(x))
      o.chunk = chunk_load(x);
    if (!o.chunk)
      o.regs = value(x);
    const ElemType el = o.chunk ? o.chunk->elem : o.regs.elem;
    if (el != x.type.elem || (o.chunk ? o.chunk->shape : o.regs.shape) != rows)
      throw LowerError("dot: an operand's lowered type differs from its checked type");
    return o;
  };
  std::optional<Operand> oa1;
  if (!a_hoisted)
    oa1 = operand(*inner.a, inner.a->type.tile_shape);
  Operand ob1 = operand(*inner.b, inner.b->type.tile_shape);
  Operand ob2 = operand(*outer.b, outer.b->type.tile_shape);
  std::map<const Expr *, llvm::Value *> scalars;
  for (const Expr *x : scalar_leaves)
    scalars[x] = coerce(value(*x), {}, ElemType::F32).regs[0];
  llvm::Value *a1_base = b.getInt64(a_hoisted ? hoisted->second - scratch_floor : 0);
  llvm::Value *b1_base = b.getInt64(b1_off), *b2_base = b.getInt64(b2_off);
  note_scratch(total / 4);
  bool barrier_first = false, async = false;
  for (const Operand *o : {oa1 ? &*oa1 : nullptr, &ob1, &ob2})
    if (o && o->chunk) {
      barrier_first = barrier_first || o->chunk->barrier_before; // sema/hazards.h
      async = true;
    }
  if (barrier_first)
    m.barrier(b);
  auto stage = [&](const Operand &o, int64_t cols, llvm::Value *base, bool bf16) {
    if (o.chunk)
      stage_chunks(*o.chunk, cols, base);
    else
      mma_stage_regs(o.regs, cols, base, bf16);
  };
  if (oa1)
    stage(*oa1, K1, a1_base, t1.bf16);
  stage(ob1, t1.b_nk ? K1 : N1, b1_base, t1.bf16);
  stage(ob2, t2.b_nk ? N1 : N2, b2_base, t2.bf16);
  if (async) {
    m.async_commit(b);
    m.async_wait(b, 0);
  }
  m.barrier(b);
  // 2. and 3. Each warp's row blocks, one at a time (a warp-uniform loop).
  const unsigned line1 = inner_e->range.begin.line, line2 = call.range.begin.line;
  const int64_t W = T / 32;
  llvm::Value *warp = b.CreateUDiv(b.CreateZExt(tid, i64), b.getInt64(32));
  llvm::Value *lane = b.CreateURem(b.CreateZExt(tid, i64), b.getInt64(32));
  for_range(warp, b.getInt64(M / 16), b.getInt64(W), [&](llvm::Value *rb) {
    // S: the accumulators of n8 tiles 0 .. N1 / 8 - 1 (4 registers each).
    std::vector<llvm::AllocaInst *> s;
    for (int64_t nu = 0; nu < t1.n_units; ++nu) {
      std::vector<llvm::AllocaInst *> acc = mma_zero_frags(t1);
      llvm::Value *u = b.CreateAdd(b.CreateMul(rb, b.getInt64(t1.n_units)), b.getInt64(nu));
      mma_accumulate(t1, acc, u, a1_base, b1_base, line1);
      s.insert(s.end(), acc.begin(), acc.end());
    }
    // P = f(S), 16 bits each, packed in pairs as A fragments.
    std::vector<llvm::Value *> bits;
    for (llvm::AllocaInst *x : s) {
      llvm::Value *p = chain_eval(fa, inner_e, b.CreateLoad(f32, x), scalars);
      bits.push_back(
          b.CreateZExt(t2.bf16 ? f32_to_bf16_bits(b, p)
                               : b.CreateBitCast(b.CreateFPTrunc(p, b.getHalfTy()), b.getInt16Ty()),
                       i32));
    }
    auto pair = [&](size_t i) { return b.CreateOr(bits[i], b.CreateShl(bits[i + 1], 16)); };
    std::vector<std::vector<llvm::Value *>> fa_regs;
    for (int64_t kk = 0; kk < N1 / 16; ++kk) {
      const size_t j0 = size_t(8 * kk), j1 = j0 + 4; // n8 tiles 2kk and 2kk + 1
      fa_regs.push_back({pair(j0), pair(j0 + 2), pair(j1), pair(j1 + 2)});
    }
    // O: per n-unit of b2, the k16 slices from those registers.
    for (int64_t nu = 0; nu < t2.n_units; ++nu) {
      std::vector<llvm::AllocaInst *> acc = mma_zero_frags(t2);
      llvm::Value *n0 = b.getInt64(nu * t2.nb);
      for (int64_t kk = 0; kk < N1 / 16; ++kk) {
        std::vector<llvm::Value *> fb =
            mma_load_b(t2, b2_base, b.getInt64(16 * kk), n0, lane, line2);
        for (unsigned j = 0; j < t2.n8; ++j) {
          std::vector<llvm::Value *> cc;
          for (unsigned i = 0; i < 4; ++i)
            cc.push_back(b.CreateLoad(f32, acc[4 * j + i]));
          std::vector<llvm::Value *> d = m.mma_m16n8k16(b, t2.bf16, fa_regs[size_t(kk)],
                                                        {fb[2 * j], fb[2 * j + 1]}, cc, line2);
          for (unsigned i = 0; i < 4; ++i)
            b.CreateStore(d[i], acc[4 * j + i]);
        }
      }
      mma_store_frags(t2, acc, b.CreateAdd(b.CreateMul(rb, b.getInt64(t2.n_units)), b.getInt64(nu)),
                      c_base);
    }
  });
  return mma_read_result(t2, c_base);
}

} // namespace etl
