//===- lower/lower_mma_operands.cpp - Where a tensor-core dot's operands come from ===//
//
// What this owns: Lowerer::dot_staged, the tensor-core `dot` whose operands
// are a mix of register tiles and loads, and `dot(a, transpose(b))`.
// lower_mma.cpp's dot_mma stages both operands from registers (every
// thread's elements as 16-bit stores) and dot_async both from global by
// cp.async when both are loads; here each operand takes its own way:
//
//   - an operand written as a load that cp.async can stage (chunk_load: a
//     2-D slice of a 16-bit tensor, no mask, pad or gather) is copied global
//     -> shared in 16-byte chunks into its swizzled area (stage_chunks), so
//     it never occupies registers;
//   - any other operand is evaluated to registers and staged from them
//     (mma_stage_regs);
//   - `dot(a, transpose(b))` with b [N, K]: b is PTX's col-major B operand
//     as it is. It is staged untransposed, [N, K] rows with the XOR swizzle
//     of an A operand (cols = K), and its fragments load with plain
//     ldmatrix (MmaTile::b_nk, mma_load_b), not .trans: the transpose's
//     re-layout through scratch (4-byte words written row-major and read
//     with a stride of K words: a K-way bank conflict per read) is gone,
//     and the products and their k order are the same, so the results are
//     bit for bit those of the re-laid-out form.
//
//   - an a that is a local the enclosing `for` loop does not assign (q in
//     attention: `let q = load(..)` before the loop over the KV tiles) is
//     staged once before the loop (mma_hoist_begin), at the bottom of the
//     scratch area; every op inside the loop then takes its scratch above
//     it (scratch_floor, added by scratch_ptr and note_scratch), so the
//     loop's dots read it by ldmatrix where it lies, and its registers are
//     free inside the loop unless something else reads them. A group whose
//     hoisted operands push its shared memory past the budget
//     (KernelPlan::smem_budget) is lowered again without hoisting
//     (lower_group).
//
// A dot with neither a load operand, a transposed b nor a hoisted a is dot_mma's (or
// dot_async's, both loads); one that does not qualify for mma
// (mma_eligible, judged from the checked types before anything is emitted)
// returns none and takes Lowerer::dot with its remark.
//
//===----------------------------------------------------------------------===//
#include "lower/lowerer.h"

#include "ast/walk.h"

namespace etl {

namespace {

bool is_plain_load(const Expr &x) {
  return x.kind == ExprKind::Call && x.builtin == Builtin::Load && x.kwargs.empty();
}

bool is_tile2(const Expr &x) { return x.type.is_tile() && x.type.tile_shape.size() == 2; }

} // namespace

DotForm dot_form(const Expr &e) {
  DotForm f;
  if (e.kind != ExprKind::Call || e.builtin != Builtin::Dot || e.args.size() != 2 ||
      !e.kwargs.empty())
    return f;
  f.a = e.args[0].get(), f.b = e.args[1].get();
  f.b_nk =
      f.b->kind == ExprKind::Call && f.b->builtin == Builtin::Transpose && f.b->args.size() == 1;
  if (f.b_nk)
    f.b = f.b->args[0].get();
  if (!is_tile2(*f.a) || !is_tile2(*f.b))
    f.a = nullptr;
  return f;
}

namespace {

/// a and the logical B [K, N] of `f` as shapes and types (no registers).
std::pair<TileVal, TileVal> dot_types(const DotForm &f) {
  TileVal a, c;
  a.elem = f.a->type.elem, a.shape = f.a->type.tile_shape;
  c.elem = f.b->type.elem, c.shape = f.b->type.tile_shape;
  if (f.b_nk)
    std::swap(c.shape[0], c.shape[1]);
  return {a, c};
}

} // namespace

std::optional<TileVal> Lowerer::dot_staged(const Expr &call) {
  const DotForm f = dot_form(call);
  if (!f.a)
    return std::nullopt;
  const bool a_load = is_plain_load(*f.a), b_load = is_plain_load(*f.b);
  auto hoisted = f.a->kind == ExprKind::Name && f.a->ref == NameRef::Local
                     ? mma_hoisted.find(f.a->ref_index)
                     : mma_hoisted.end();
  const bool a_hoisted = hoisted != mma_hoisted.end();
  if (!f.b_nk && !a_load && !b_load && !a_hoisted)
    return std::nullopt;
  auto [a, c] = dot_types(f);
  if (a.shape[1] != c.shape[0] || mma_eligible(a, c) != "ok")
    return std::nullopt;
  MmaTile t = mma_tile(a, c);
  t.b_nk = f.b_nk;
  const int64_t M = t.M, K = t.K, N = t.N;
  const std::vector<int64_t> b_rows = f.b_nk ? std::vector<int64_t>{N, K} : c.shape;
  // Each operand: hoisted (a only), a chunk load (staged by cp.async) or
  // registers.
  std::optional<ChunkLoad> la, lb;
  TileVal ra, rb;
  if (a_load)
    la = chunk_load(*f.a);
  if (!la && !a_hoisted)
    ra = value(*f.a);
  if (b_load)
    lb = chunk_load(*f.b);
  if (!lb)
    rb = value(*f.b);
  if ((!a_hoisted &&
       ((la ? la->elem : ra.elem) != a.elem || (la ? la->shape : ra.shape) != a.shape)) ||
      (lb ? lb->elem : rb.elem) != c.elem || (lb ? lb->shape : rb.shape) != b_rows)
    throw LowerError("dot: an operand's lowered type differs from its checked type");
  // The operand areas: a (unless hoisted: where mma_hoist_begin put it,
  // below the floor), b ([K, N] or [N, K] rows), then the f32 result.
  const int64_t a_bytes = a_hoisted ? 0 : 2 * M * K, c_base = a_bytes + 2 * K * N;
  llvm::Value *a_base = b.getInt64(a_hoisted ? hoisted->second - scratch_floor : 0);
  llvm::Value *b_base = b.getInt64(a_bytes);
  note_scratch((c_base + 4 * M * mma_result_stride(N)) / 4);
  if ((la && la->barrier_before) || (lb && lb->barrier_before)) // sema/hazards.h
    m.barrier(b);
  const bool bf16 = t.bf16;
  if (la)
    stage_chunks(*la, K, a_base);
  else if (!a_hoisted)
    mma_stage_regs(ra, K, a_base, bf16);
  if (lb)
    stage_chunks(*lb, f.b_nk ? K : N, b_base);
  else
    mma_stage_regs(rb, f.b_nk ? K : N, b_base, bf16);
  if (la || lb) {
    m.async_commit(b);
    m.async_wait(b, 0);
  }
  m.barrier(b);
  const unsigned line = call.range.begin.line;
  mma_for_units(t, 0, [&](unsigned, llvm::Value *u) {
    std::vector<llvm::AllocaInst *> acc = mma_zero_frags(t);
    mma_accumulate(t, acc, u, a_base, b_base, line);
    mma_store_frags(t, acc, u, c_base);
  });
  return mma_read_result(t, c_base);
}

int64_t Lowerer::mma_hoist_begin(const Stmt &s) {
  const int64_t floor = scratch_floor;
  if (mma_hoist_off)
    return floor;
  // Locals the loop assigns (let/var inside it, assignments) vary.
  std::set<int> assigned;
  std::vector<std::pair<int, const Expr *>> cands; // local, its dot
  walk_body(
      s.body,
      [&](const Stmt &st) {
        if (st.kind == StmtKind::Let || st.kind == StmtKind::Var || st.kind == StmtKind::Assign)
          assigned.insert(st.local_index);
      },
      [&](const Expr &e) {
        const DotForm f = dot_form(e);
        if (f.a && f.a->kind == ExprKind::Name && f.a->ref == NameRef::Local)
          cands.push_back({f.a->ref_index, &e});
      });
  int64_t rel = 0;
  std::vector<std::pair<int, int64_t>> staged;
  for (const auto &[local, e] : cands) {
    if (assigned.count(local) || mma_hoisted.count(local) || size_t(local) >= locals.size() ||
        !locals[size_t(local)].set)
      continue;
    bool dup = false;
    for (const auto &st : staged)
      dup = dup || st.first == local;
    auto [a, c] = dot_types(dot_form(*e));
    if (dup || a.shape[1] != c.shape[0] || mma_eligible(a, c) != "ok")
      continue;
    TileVal v = read_local(local);
    if (v.elem != a.elem || v.shape != a.shape)
      continue;
    if (staged.empty())
      m.barrier(b); // the scratch below is free (no op of the CTA still reads it)
    mma_stage_regs(v, a.shape[1], b.getInt64(rel), a.elem == ElemType::BF16);
    staged.push_back({local, floor + rel});
    rel += 2 * a.numel();
  }
  if (staged.empty())
    return floor;
  m.barrier(b);
  for (const auto &[local, off] : staged)
    mma_hoisted[local] = off;
  scratch_floor = floor + rel;
  note_scratch(0);
  mma_hoist_used = true;
  return floor;
}

void Lowerer::mma_hoist_end(int64_t floor) {
  for (auto it = mma_hoisted.begin(); it != mma_hoisted.end();)
    it = it->second >= floor ? mma_hoisted.erase(it) : std::next(it);
  scratch_floor = floor;
}

} // namespace etl
