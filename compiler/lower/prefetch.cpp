//===- lower/prefetch.cpp - Loads issued before a task's waits ------------===//
//
// What this owns: the weight prefetch of the Event Tensor paper, inferred.
// A task that waits on events may issue, BEFORE its waits, the loads that do
// not depend on them, so a decode task streams its weight tile while the
// activations it waits for are still being produced. A load qualifies when
//   (a) its tensor is written by no task of the kernel (no store, no atomic:
//       written_tensors) -- a kernel input or weight, or a buffer only the
//       runtime fills (`= zeros`) -- so no task's store can race with it;
//   (b) every index, slice bound and keyword argument (pad) is a function of
//       the task's domain variables, constants, dims and scalar parameters:
//       no loop variable, no local, no element read of tensor data;
//   (c) it is a top-level statement of the body: `let`/`var x = load(W[..])`,
//       possibly under `cast<T>(..)` and `expand(.., axis = a)` (AST path),
//       or a top-level `load` op of the tile IR without mask or gather (tile
//       path; the cast and the rest of the statement stay after the waits);
//       statements between hoisted ones may be anything;
//   (d) the task has waits, is not `schedule dynamic`, the kernel has no
//       dynamic groups (a static task's wait there runs dynamic items, and
//       the hoisted registers would live across them: decode_layer's o_sum
//       tile spilled 16 bytes on sm_90 that way), and no hazard barrier
//       precedes the load (sema/hazards.h);
//   (e) the hoisted tiles together hold at most kPrefetchRegs registers per
//       thread (their elements per thread: ceil(numel / T) on the AST path,
//       the layout's register count on the tile path), in program order
//       until the budget is spent, so the registers live across the wait do
//       not push the body into spills.
// lower_kernel.cpp emits the chosen statements (or ops) right after the
// domain decode and before the waits, and the body skips them.
//
// Loops (tile IR path only, loop_prefetch): in a `for`, the top-level loads
// of never-written tensors whose slices name only task variables, dims and
// the loop variables in scope are software-pipelined: tile_for
// (lower_tile_control.cpp) issues iteration lo's before the loop (if it
// runs) and, at the top of iteration k, those of k + step (if it runs)
// before k's compute, carried into the next iteration in phis; at most
// kPipelineRegs registers per thread of them per loop (two copies live);
// not the operands of tensor-core dots, which are staged in shared memory.
// Both are off with ETL_PREFETCH=0.
//
//===----------------------------------------------------------------------===//
#include "lower/lowerer.h"

#include "ast/builtins.h"
#include "tile/passes.h"

namespace etl {

namespace {

/// A uniform value fixed before the waits: literals, constants, dims,
/// domain variables, scalar parameters, `inf`, and arithmetic, cdiv, min
/// and max of those.
bool fixed_before_waits(const Expr &e) {
  switch (e.kind) {
  case ExprKind::IntLit:
  case ExprKind::FloatLit:
    return true;
  case ExprKind::Name:
    return e.ref == NameRef::Const || e.ref == NameRef::Dim || e.ref == NameRef::TaskIndex ||
           e.ref == NameRef::Scalar || e.ref == NameRef::Builtin;
  case ExprKind::Unary:
  case ExprKind::Binary:
    break;
  case ExprKind::Call:
    if (e.type.is_tile() || !e.kwargs.empty() ||
        (e.builtin != Builtin::Cdiv && e.builtin != Builtin::Min && e.builtin != Builtin::Max))
      return false;
    break;
  default:
    return false;
  }
  if (e.reads_data)
    return false;
  for (const ExprPtr &a : e.args)
    if (!a || !fixed_before_waits(*a))
      return false;
  return true;
}

/// `load(T[...], pad = ..)` of a never-written tensor whose slice is fixed
/// before the waits; the load call, or null.
const Expr *hoistable_load(const Expr &e, const std::set<int> &written) {
  if (e.kind != ExprKind::Call)
    return nullptr;
  if (e.builtin == Builtin::Cast || e.builtin == Builtin::Expand) {
    for (const KwArg &k : e.kwargs)
      if (!k.value || !fixed_before_waits(*k.value))
        return nullptr;
    return e.args.size() == 1 && e.args[0] ? hoistable_load(*e.args[0], written) : nullptr;
  }
  if (e.builtin != Builtin::Load || e.args.size() != 1 || !e.args[0] || e.barrier_before)
    return nullptr;
  for (const KwArg &k : e.kwargs)
    if (k.name != "pad" || !k.value || !fixed_before_waits(*k.value))
      return nullptr;
  const Expr &slice = *e.args[0];
  int t = slice_tensor(slice);
  if (t < 0 || written.count(t) || written.count(-1))
    return nullptr;
  for (size_t i = 1; i < slice.args.size(); ++i) {
    const Expr &c = *slice.args[i];
    if (c.kind == ExprKind::Range) {
      for (const ExprPtr &x : c.args)
        if (x && !fixed_before_waits(*x))
          return nullptr;
    } else if (!fixed_before_waits(c)) {
      return nullptr;
    }
  }
  return &e;
}

int64_t numel_of(const Type &t) {
  int64_t n = 1;
  for (int64_t d : t.tile_shape)
    n *= d;
  return n;
}

} // namespace

std::vector<const Stmt *> ast_prefetch(const TaskDecl &t, const std::set<int> &written,
                                       unsigned threads) {
  std::vector<const Stmt *> out;
  int64_t regs = 0;
  for (const StmtPtr &s : t.body) {
    if ((s->kind != StmtKind::Let && s->kind != StmtKind::Var) || !s->value)
      continue;
    const Expr *ld = hoistable_load(*s->value, written);
    if (!ld || !ld->type.is_tile())
      continue;
    int64_t r = (numel_of(ld->type) + threads - 1) / threads;
    if (regs + r > kPrefetchRegs)
      break;
    regs += r;
    out.push_back(s.get());
  }
  return out;
}

namespace {

/// A top-level `load` op of a never-written tensor, without mask, gather or
/// hazard barrier, whose slice names only symbols in `known`; its registers
/// per thread, or 0 when it does not qualify.
int64_t hoistable_op(const TOp &op, const TileFunc &f, const std::set<int> &written,
                     const std::set<std::string> &known) {
  if (op.kind != TileOpKind::Load || op.tensor < 0 || written.count(op.tensor) ||
      written.count(-1) || op.mask >= 0 || !op.operands.empty() || op.barrier_before ||
      op.results.size() != 1)
    return 0;
  for (const SlicePart &p : op.parts) {
    if (p.kind == SlicePart::Gather || !p.at)
      return 0;
    for (const std::string &n : p.at->symbols())
      if (!known.count(n))
        return 0;
  }
  const TValue &v = f.values[size_t(op.results[0])];
  if (!v.is_tile() || v.layout < 0 || size_t(v.layout) >= f.layouts.size())
    return 0;
  return int64_t(f.layouts[size_t(v.layout)].num_regs());
}

/// The loads of `body` hoistable_op accepts, in order, until `budget`
/// registers per thread are spent.
std::vector<const TOp *> hoistable_ops(const std::vector<TOp> &body, const TileFunc &f,
                                       const std::set<int> &written,
                                       const std::set<std::string> &known, int64_t budget) {
  std::vector<const TOp *> out;
  int64_t regs = 0;
  for (const TOp &op : body) {
    int64_t r = hoistable_op(op, f, written, known);
    if (!r)
      continue;
    if (regs + r > budget)
      break;
    regs += r;
    out.push_back(&op);
  }
  return out;
}

} // namespace

std::vector<const TOp *> tile_prefetch(const TileFunc &f, const KernelDecl &k,
                                       const std::set<int> &written) {
  std::set<std::string> known(f.vars.begin(), f.vars.end());
  for (const DimDecl &d : k.dims)
    known.insert(d.name);
  return hoistable_ops(f.body, f, written, known, kPrefetchRegs);
}

std::vector<const TOp *> loop_prefetch(const TOp &loop, const TileFunc &f, const KernelDecl &k,
                                       const std::set<int> &written,
                                       const std::set<std::string> &outer) {
  std::set<std::string> known(f.vars.begin(), f.vars.end());
  for (const DimDecl &d : k.dims)
    known.insert(d.name);
  known.insert(outer.begin(), outer.end());
  known.insert(loop.var);
  std::vector<const TOp *> ops = hoistable_ops(loop.body, f, written, known, kPipelineRegs);
  // Operands of tensor-core dots (through a transpose too) go to shared
  // memory where they are used: a copy one iteration ahead would hold
  // registers that the accumulators need (FlashAttention-2's loop).
  std::set<int> mma_ops;
  for (const TOp &op : loop.body)
    if (mma_dot(f, op))
      mma_ops.insert(op.operands.begin(), op.operands.end());
  for (const TOp &op : loop.body)
    if (op.kind == TileOpKind::Transpose && mma_ops.count(op.results[0]))
      mma_ops.insert(op.operands[0]);
  std::vector<const TOp *> keep;
  for (const TOp *op : ops)
    if (!mma_ops.count(op->results.empty() ? -1 : op->results[0]))
      keep.push_back(op);
  return keep;
}

} // namespace etl
