//===- lower/lower_mma_pipeline.cpp - K loops of several tensor-core dots -===//
//
// What this owns: the general pipelined K loop (Lowerer::lower_pipelined_dots),
// tried when lower_mma.cpp's lower_pipelined_for (a body of exactly
// `acc += dot(load(..), load(..))`) does not take the loop. It takes a `for`
// without `step` whose body is a sequence of `let`/`var`/assignments to
// locals and `acc_i += dot(A_i, B_i)` of f16/bf16 tiles on tensor cores,
// or of f32 tiles when every dot says `precision = tf32` (lower_mma_tf32.cpp:
// its layout, by an operand's A or B role, m16n8k8, raw ring operands and
// register operands rounded by cvt.rna at the fragment loads or staging):
//
//   - ring operands: an operand that is a raw load `load(t[..])` (no mask,
//     pad or gather; Lowerer::chunk_load), or a `let` bound to one and used
//     only as dot operands, whose indices read only the loop variable and
//     values the body does not assign, is copied by cp.async into one ring
//     of S stages shared by all of them (stage_chunks: 16-byte chunks, the
//     element-by-element copy with 0 outside the tensor at ragged edges); a
//     stage holds every ring operand of one iteration side by side;
//   - register operands: any other operand (`xa = cast<bf16>(xt * ..)`) is
//     evaluated where its dot stands, in the iteration's order, and written
//     to its own swizzled area after the ring (mma_stage_regs), once per
//     distinct local (two dots of one `xa` stage it once);
//   - the other statements (lets, `ss += sum(..)`) run as written; their
//     scratch use is moved past the ring and the register operands
//     (Lowerer::scratch_floor) so that it never touches a stage in flight;
//   - each accumulator's fragments stay in registers across the loop
//     (mma_zero_frags before, mma_accumulate per iteration, mma_store_frags
//     + mma_read_result once after it, then `acc += result`, so acc keeps
//     its value when the loop runs no iteration).
//
// Iteration k (n = k - lo): wait_group S - 2 (its own group is in); barrier
// (every thread's copies visible; every warp done with iteration k - 1's
// ldmatrix, so that iteration's ring slot and the register-operand areas may
// be rewritten); issue iteration k + S - 1 into slot (n + S - 1) % S and
// commit (an empty group past hi keeps the count uniform); the statements;
// the register operands to shared memory and, when there are any, a second
// barrier; ldmatrix + mma of every dot from slot n % S. The prologue issues
// iterations lo .. lo + S - 2 as lower_pipelined_for does.
//
// Shared memory: S * (ring operands' bytes) + register operands' bytes + a
// reserve for the other statements' scratch (8 bytes per element of their
// largest tile) must fit the budget (KernelPlan::smem_budget) with S = 3,
// else S = 2; the result areas (one accumulator at a time) overlap the
// drained ring.
// Whatever keeps a loop with f16/bf16 (or all-tf32) dots off this path is
// said in a remark (DiagId::MmaLoopNotPipelined).
//
//===----------------------------------------------------------------------===//
#include "lower/lowerer.h"

#include "ast/walk.h"

#include <functional>
#include <map>
#include <set>

namespace etl {

namespace {

bool is_dot_accumulate(const Stmt &st) {
  return st.kind == StmtKind::Assign && st.compound && st.assign_op == BinOp::Add && st.value &&
         st.value->kind == ExprKind::Call && st.value->builtin == Builtin::Dot &&
         st.value->args.size() == 2 &&
         (st.value->kwargs.empty() ||
          (st.value->kwargs.size() == 1 && dot_wants_tf32(*st.value))); // tf32: f32 operands
}

bool is_local(const Expr &e) { return e.kind == ExprKind::Name && e.ref == NameRef::Local; }

int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string tile_str(const Type &t) {
  std::string s = std::string(spelling(t.elem)) + "[";
  for (size_t i = 0; i < t.tile_shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(t.tile_shape[i]);
  return s + "]";
}

} // namespace

bool Lowerer::lower_pipelined_dots(const Stmt &s) {
  // Which statements hold dots at all: a loop without any is not ours, and
  // keeps no remark.
  bool any_dot = false, all_16bit = true, all_tf32 = true;
  for (const StmtPtr &st : s.body) {
    auto find = [&](const Expr &e) {
      walk_expr(&e, [&](const Expr &x) {
        if (x.kind == ExprKind::Call && x.builtin == Builtin::Dot) {
          any_dot = true;
          all_tf32 = all_tf32 && dot_wants_tf32(x);
          for (const ExprPtr &a : x.args) {
            if (a->type.elem != ElemType::F16 && a->type.elem != ElemType::BF16)
              all_16bit = false;
            if (a->type.elem != ElemType::F32)
              all_tf32 = false;
          }
        }
      });
    };
    for (const Expr *e : {st->value.get(), st->lo.get(), st->hi.get(), st->step.get()})
      if (e)
        find(*e);
  }
  // Exact f32 dots (or a mix): the FMA path says its own. tf32 dots (all
  // of them) take the same ring with lower_mma_tf32.cpp's layout, rounding
  // and m16n8k8.
  if (!any_dot || !(all_16bit || all_tf32))
    return false;
  const bool tf32 = all_tf32;
  auto refuse = [&](const std::string &why) {
    remarks.push_back({s.range, {s.name, why}, DiagId::MmaLoopNotPipelined});
    return false;
  };
  if (s.step)
    return refuse("the loop has a step");
  // The body's shape: lets, vars, assignments and dot accumulations only.
  std::set<int> assigned; // locals the body binds or assigns
  std::map<int, int> uses, operand_uses;
  for (const StmtPtr &st : s.body) {
    if (hoisted_stmts.count(st.get()))
      return refuse("a statement of its body runs before the task's waits");
    if (st->kind != StmtKind::Let && st->kind != StmtKind::Var && st->kind != StmtKind::Assign)
      return refuse("its body holds a statement other than let, var and assignment");
    assigned.insert(st->local_index);
    bool acc = is_dot_accumulate(*st);
    std::string bad;
    walk_expr(st->value.get(), [&](const Expr &x) {
      if (is_local(x))
        ++uses[x.ref_index];
      if (x.kind == ExprKind::Call && (x.builtin == Builtin::Store || is_atomic_fn(x.builtin)))
        bad = "its body writes a tensor";
      else if (x.kind == ExprKind::Call && x.builtin == Builtin::Dot &&
               (!acc || &x != st->value.get()))
        bad = "a dot that is not `acc += dot(a, b)` (a whole statement)";
    });
    if (!bad.empty())
      return refuse(bad);
    if (acc)
      for (const ExprPtr &a : st->value->args) {
        if (is_local(*a))
          ++operand_uses[a->ref_index];
        if (a->kind == ExprKind::Call && a->builtin == Builtin::Transpose)
          return refuse(tf32 ? "a dot of a transposed operand (each tf32 dot runs on its own)"
                             : "a dot of a transposed operand (staged untransposed one dot at a "
                               "time instead, lower_mma_operands.cpp)");
      }
  }
  // Accumulators: assigned only by their dots, read nowhere else in the body.
  std::set<int> accs;
  for (const StmtPtr &st : s.body)
    if (is_dot_accumulate(*st))
      accs.insert(st->local_index);
  for (const StmtPtr &st : s.body)
    if (!is_dot_accumulate(*st) && accs.count(st->local_index))
      return refuse("an accumulator is also assigned by another statement");
  for (int a : accs)
    if (uses.count(a))
      return refuse("the body reads an accumulator between its dots");
  // The loop variable, for chunk_load's index expressions (their IR in this
  // analysis is dead, as in lower_pipelined_for).
  llvm::Value *lo = index(*s.lo), *hi = index(*s.hi);
  llvm::AllocaInst *slot = entry_alloca(i64, s.name.c_str());
  loop_vars[s.local_index] = slot;
  loop_by_name[s.name].push_back(slot);
  b.CreateStore(lo, slot);
  auto undo = [&](const std::string &why) {
    loop_by_name[s.name].pop_back();
    loop_vars.erase(s.local_index);
    return refuse(why);
  };
  // A load the ring can hold: chunk-shaped, indices invariant but for the
  // loop variable.
  auto ring_load = [&](const Expr &x) {
    if (x.kind != ExprKind::Call || x.builtin != Builtin::Load || x.args.size() != 1 ||
        !x.kwargs.empty() || x.barrier_before || x.type.tile_shape.size() != 2)
      return false;
    bool invariant = true;
    walk_expr(&x, [&](const Expr &y) {
      if (is_local(y) && assigned.count(y.ref_index))
        invariant = false;
    });
    return invariant && chunk_load(x, tf32 ? 4 : 2).has_value();
  };
  // Ring lets: `let a = load(..)` used only as dot operands.
  std::map<int, const Stmt *> ring_lets;
  for (const StmtPtr &st : s.body)
    if (st->kind == StmtKind::Let && uses[st->local_index] == operand_uses[st->local_index] &&
        ring_load(*st->value))
      ring_lets[st->local_index] = st.get();
  struct Operand {
    const Expr *expr; ///< the load (ring) or the expression (registers)
    bool ring;
    int64_t rows, cols, off; ///< off: bytes into the stage / the register area
    TileVal val;             ///< registers: this iteration's value
    bool b_role = false;     ///< tf32: staged as a B operand (its own layout)
  };
  struct DotUse {
    const Stmt *st;
    size_t a, c;
    MmaTile t;
  };
  std::vector<Operand> ops;
  std::map<std::string, size_t> op_of;
  std::vector<DotUse> dots;
  int64_t ring_bytes = 0, reg_bytes = 0, result_bytes = 0;
  auto operand = [&](const Expr &x, bool b_role) {
    std::string key = "e" + std::to_string(reinterpret_cast<uintptr_t>(&x));
    const Expr *e = &x;
    bool ring = false;
    if (is_local(x) && ring_lets.count(x.ref_index)) {
      key = "l" + std::to_string(x.ref_index);
      e = ring_lets[x.ref_index]->value.get();
      ring = true;
    } else if (is_local(x) && x.ref_index >= 0 &&
               task->locals[size_t(x.ref_index)].type.tile_shape.size() == 2) {
      key = "l" + std::to_string(x.ref_index); // a let: one value per iteration
      for (const StmtPtr &st : s.body)
        if (st->kind != StmtKind::Let && st->local_index == x.ref_index)
          key = "e" + std::to_string(reinterpret_cast<uintptr_t>(&x));
    } else {
      ring = ring_load(x);
    }
    if (tf32 && b_role) // A and B areas differ in tf32's layout
      key += "b";
    if (auto it = op_of.find(key); it != op_of.end())
      return it->second;
    Operand o{e, ring, x.type.tile_shape[0], x.type.tile_shape[1], 0, {}};
    o.b_role = b_role;
    int64_t &area = ring ? ring_bytes : reg_bytes;
    o.off = area;
    area += tf32 ? tf32_area_bytes(o.rows, o.cols, b_role) : 2 * o.rows * o.cols;
    ops.push_back(o);
    op_of[key] = ops.size() - 1;
    return ops.size() - 1;
  };
  std::map<int, std::pair<int64_t, int64_t>> acc_shape; // M, N
  for (const StmtPtr &st : s.body) {
    if (!is_dot_accumulate(*st))
      continue;
    const Expr &d = *st->value;
    TileVal a, c;
    a.elem = d.args[0]->type.elem, a.shape = d.args[0]->type.tile_shape;
    c.elem = d.args[1]->type.elem, c.shape = d.args[1]->type.tile_shape;
    std::string why = a.shape.size() == 2 && c.shape.size() == 2 && a.shape[1] == c.shape[0]
                          ? (tf32 ? tf32_eligible(a, c) : mma_eligible(a, c))
                          : "a dot that is not [M, K] x [K, N]";
    if (why != "ok")
      return undo("the dot of " + tile_str(d.args[0]->type) + " and " + tile_str(d.args[1]->type) +
                  " is not a tensor-core dot (" + why + ")");
    const MmaTile t = mma_tile(a, c);
    auto [it, fresh] = acc_shape.emplace(st->local_index, std::make_pair(t.M, t.N));
    if (!fresh && it->second != std::make_pair(t.M, t.N))
      return undo("two dots of different shapes add to one accumulator");
    size_t ia = operand(*d.args[0], false);
    size_t ic = operand(*d.args[1], true);
    dots.push_back({st.get(), ia, ic, t});
    result_bytes = std::max(result_bytes, 4 * t.M * mma_result_stride(t.N));
  }
  bool any_ring = false;
  for (const Operand &o : ops)
    any_ring |= o.ring;
  if (!any_ring)
    return undo("no dot operand is a load of a slice the loop does not write, affine in '" +
                s.name + "' (nothing to stage ahead)");
  // Registers: every accumulator's fragment sets live across the loop.
  const int64_t W = std::max<int64_t>(T / 32, 1);
  std::map<int, int64_t> sets_of;
  int64_t acc_regs = 0;
  for (const DotUse &u : dots)
    if (!sets_of.count(u.st->local_index)) {
      int64_t sets = (u.t.units + W - 1) / W;
      sets_of[u.st->local_index] = sets;
      acc_regs += sets * 4 * int64_t(u.t.n8);
    }
  if (acc_regs > kMmaLoopAccRegs)
    return undo("its accumulators would need " + std::to_string(acc_regs) +
                " registers per thread, more than " + std::to_string(kMmaLoopAccRegs));
  // Shared memory: the ring, the register operands, the other statements.
  int64_t widest = 0;
  for (const StmtPtr &st : s.body)
    if (!is_dot_accumulate(*st) && !ring_lets.count(st->local_index))
      walk_expr(st->value.get(),
                [&](const Expr &x) { widest = std::max(widest, numel(x.type.tile_shape)); });
  for (const Operand &o : ops)
    if (!o.ring)
      walk_expr(o.expr,
                [&](const Expr &x) { widest = std::max(widest, numel(x.type.tile_shape)); });
  const int64_t reserve = 8 * widest;
  const int64_t budget = int64_t(plan.smem_budget) - int64_t(kSmemScratch) - scratch_floor;
  auto need = [&](int64_t n) { return n * ring_bytes + reg_bytes + reserve; };
  const int64_t S = need(3) <= budget ? 3 : need(2) <= budget ? 2 : 0;
  if (S == 0 || result_bytes > budget)
    return undo("its ring of two stages needs " + std::to_string(need(2)) +
                " bytes of shared memory, more than the " + std::to_string(budget) + " available");
  const int64_t reg_base = S * ring_bytes, other_base = reg_base + reg_bytes;
  note_scratch(std::max(other_base, result_bytes) / 4);

  // An opaque 0 (Machine::opaque_zero) added to the offsets that would
  // otherwise be constant but for the thread index: LLVM would hoist them
  // out of the persistent loop, live across every task of the megakernel.
  auto opaque_zero = [&] { return m.opaque_zero(b, b.getInt64Ty()); };
  // So is the thread index itself, for the loop's whole lowering: what is
  // computed from it stays in this task.
  llvm::Value *const saved_tid = tid;
  tid = b.CreateAdd(tid, b.CreateTrunc(opaque_zero(), tid->getType()));
  auto issue = [&](llvm::Value *iv, llvm::Value *buf) {
    b.CreateStore(iv, slot);
    llvm::Value *base = b.CreateMul(buf, b.getInt64(ring_bytes));
    for (const Operand &o : ops)
      if (o.ring) {
        std::optional<ChunkLoad> l = chunk_load(*o.expr, tf32 ? 4 : 2);
        stage_chunks(*l, o.cols, b.CreateAdd(base, b.getInt64(o.off)),
                     tf32 ? tf32_place(o.cols, o.b_role) : nullptr);
      }
  };
  ring_prologue(lo, hi, S, issue,
                [&](int64_t p) { return b.CreateAdd(opaque_zero(), b.getInt64(p)); });
  std::map<int, std::vector<std::vector<llvm::AllocaInst *>>> frags;
  for (const DotUse &u : dots)
    if (!frags.count(u.st->local_index))
      for (int64_t i = 0; i < sets_of[u.st->local_index]; ++i)
        frags[u.st->local_index].push_back(mma_zero_frags(u.t));
  for_range(lo, hi, b.getInt64(1), [&](llvm::Value *iv) {
    llvm::Value *buf = ring_advance(iv, lo, hi, S, slot, issue);
    // The statements in order, their scratch past the ring; a register
    // operand is evaluated where its dot stands.
    const int64_t saved_floor = scratch_floor;
    scratch_floor = saved_floor + other_base;
    std::set<size_t> done;
    for (const StmtPtr &st : s.body) {
      if (ring_lets.count(st->local_index) && st->kind == StmtKind::Let)
        continue;
      if (!is_dot_accumulate(*st)) {
        lower_stmt(*st);
        continue;
      }
      for (const DotUse &u : dots)
        if (u.st == st.get())
          for (size_t i : {u.a, u.c})
            if (!ops[i].ring && done.insert(i).second)
              ops[i].val = value(*ops[i].expr);
    }
    scratch_floor = saved_floor;
    bool any_reg = false;
    llvm::Value *regs_at = b.CreateAdd(opaque_zero(), b.getInt64(reg_base));
    for (Operand &o : ops)
      if (!o.ring) {
        if (tf32)
          tf32_stage_regs(o.val, o.cols, o.b_role, b.CreateAdd(regs_at, b.getInt64(o.off)));
        else
          mma_stage_regs(o.val, o.cols, b.CreateAdd(regs_at, b.getInt64(o.off)),
                         o.val.elem == ElemType::BF16);
        any_reg = true;
      }
    if (any_reg)
      m.barrier(b);
    llvm::Value *stage = b.CreateMul(buf, b.getInt64(ring_bytes));
    auto base_of = [&](const Operand &o) -> llvm::Value * {
      return b.CreateAdd(o.ring ? stage : regs_at, b.getInt64(o.off));
    };
    for (const DotUse &u : dots) {
      auto &f = frags[u.st->local_index];
      llvm::Value *ab = base_of(ops[u.a]), *cb = base_of(ops[u.c]);
      const MmaWarpTile wt = mma_warp_tile(u.t, int64_t(f.size()));
      if (tf32) // ring and register areas alike rounded at the fragment loads
        tf32_accumulate_sets(u.t, wt, f, ab, cb, u.st->value->range.begin.line);
      else
        mma_accumulate_sets(u.t, wt, f, ab, cb, u.st->value->range.begin.line);
    }
  });
  m.async_wait(b, 0); // the groups left are empty
  // Once, after the loop (none when it ran no iteration): each accumulator's
  // fragments through the result area (over the drained ring) to the
  // register layout, then acc += the sum.
  if_then(b.CreateICmpSLT(lo, hi), [&] {
    std::set<int> stored;
    for (const DotUse &u : dots) {
      if (!stored.insert(u.st->local_index).second)
        continue;
      auto &f = frags[u.st->local_index];
      m.barrier(b);
      mma_sets_for_units(
          u.t, mma_warp_tile(u.t, int64_t(f.size())), int64_t(f.size()),
          [&](unsigned i, llvm::Value *unit) { mma_store_frags(u.t, f[i], unit, 0); });
      TileVal cur = read_local(u.st->local_index);
      assign_local(u.st->local_index,
                   arith(BinOp::Add, cur, mma_read_result(u.t, 0), cur.shape, cur.elem));
    }
  });
  tid = saved_tid;
  loop_by_name[s.name].pop_back();
  return true;
}

} // namespace etl
