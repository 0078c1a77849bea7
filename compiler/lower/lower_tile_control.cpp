//===- lower/lower_tile_control.cpp - The tile IR path: dispatch, Scalar, Control, Event -===//
//
// What this owns: the dispatch of a task body's tile IR (tile/ir.h, after
// layout assignment) op by op, the check that every op has a lowering
// (tile_lowering_gap: what it finds is an internal compiler error, since
// sema and the tile passes keep checked programs inside it), and the ops of
// the Scalar, Control and Event families.
//
//   Scalar   `index` from its Sym (dims, task and loop variables), `const`
//            (a number: an integer type's digits, wrapped to a narrow
//            type, or a float; or `$name`: a scalar parameter's argument
//            slot);
//   Control  `for` with iter_args as phis, `yield`, `if` as a branch of the
//            whole CTA (its condition is uniform) whose results are phis
//            of the yielded and the initial values;
//   Event    `ev.wait` / `ev.notify` are the group's event protocol, which
//            lower_kernel.cpp emits around the body (waits open it,
//            notifies close it, as in the IR), so here they emit nothing.
//
// Registers: value v of layout L holds L.num_regs() registers; register r
// of the thread with lane l and warp w is element L.apply(r, l, w). Scalars
// (and index values) are one uniform register. The families of the other
// files: Memory (lower_tile_memory.cpp), Elementwise, Shape and Layout
// (lower_tile_map.cpp), Reduction (lower_tile_reduce.cpp), Contraction
// (lower_tile_dot.cpp).
//
//===----------------------------------------------------------------------===//
#include "lower/body_lowerer.h"

#include "ast/walk.h"
#include "tile/layout.h"
#include "tile/passes.h"

#include <llvm/IR/Constants.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

namespace etl {

namespace {

bool one_of(const std::string &s, std::initializer_list<const char *> names) {
  for (const char *n : names)
    if (s == n)
      return true;
  return false;
}

struct GapCheck {
  const TileFunc &f;
  const TaskDecl &t;
  std::set<std::string> known;
  std::string why;
  unsigned warps = 1;

  bool sym_ok(const std::optional<Sym> &s) {
    if (!s)
      return false;
    for (const std::string &n : s->symbols())
      if (!known.count(n))
        return false;
    return true;
  }
  void fail(const std::string &w) {
    if (why.empty())
      why = w;
  }
  /// Can every basis of `l` be split into "along axis" and "not along it"?
  bool separable(const Layout &l, unsigned axis) {
    uint32_t field = ((1u << l.lg[axis]) - 1u) << l.field_offset(axis);
    for (const std::vector<uint32_t> *bs : {&l.reg, &l.lane, &l.warp})
      for (uint32_t x : *bs)
        if ((x & field) && (x & ~field))
          return false;
    return true;
  }
  void ops(const std::vector<TOp> &body) {
    for (const TOp &op : body)
      one(op);
  }
  void one(const TOp &op) {
    switch (op.kind) {
    case TileOpKind::Index:
      if (!sym_ok(op.sym))
        fail("index " + op.attr);
      return;
    case TileOpKind::Const:
    case TileOpKind::Select:
    case TileOpKind::Cast:
    case TileOpKind::Splat:
    case TileOpKind::Expand:
    case TileOpKind::Broadcast:
    case TileOpKind::Convert:
    case TileOpKind::Yield:
    case TileOpKind::Wait:
    case TileOpKind::Notify:
    case TileOpKind::SmemAlloc:
    case TileOpKind::AsyncCommit:
    case TileOpKind::AsyncWait:
    case TileOpKind::Barrier:
    case TileOpKind::SmemView:
    case TileOpKind::WgmmaFence:
    case TileOpKind::WgmmaCommit:
    case TileOpKind::WgmmaWait:
    case TileOpKind::Transpose: // a renaming (tile/verify.cpp checks the layouts)
      return;
    case TileOpKind::AsyncCopy:
      for (const SlicePart &p : op.parts)
        if (!sym_ok(p.at))
          return fail("a data-dependent slice");
      if (!sym_ok(op.lo) || !sym_ok(op.hi) || !sym_ok(op.sym))
        fail("async.copy with these bounds");
      return;
    case TileOpKind::Reshape: { // a renaming, or through scratch (lower_tile_map.cpp)
      const TValue &a = f.values[size_t(op.operands[0])], &r = f.values[size_t(op.results[0])];
      if (!r.is_tile() && a.numel() != 1)
        fail("reshape");
      else if (r.is_tile() && a.is_tile() && (a.layout < 0 || r.layout < 0))
        fail("reshape without layouts");
      return;
    }
    case TileOpKind::Arange:
      if (f.values[size_t(op.results[0])].shape.size() != 1)
        fail("arange");
      return;
    case TileOpKind::Unary:
      if (!one_of(op.attr, {"neg", "not", "bnot", "exp", "log", "sqrt", "rsqrt", "abs", "sin",
                            "cos", "tanh", "erf", "floor", "ceil", "round", "popc"}))
        fail("map." + op.attr);
      return;
    case TileOpKind::Binary:
      if (!one_of(op.attr, {"add", "sub", "mul", "div", "mod", "max", "min", "band", "bor", "bxor",
                            "shl", "shr", "pow"}))
        fail("map." + op.attr);
      return;
    case TileOpKind::Compare:
      if (!one_of(op.attr, {"eq", "ne", "lt", "le", "gt", "ge", "and", "or"}))
        fail("map." + op.attr);
      return;
    case TileOpKind::Load:
    case TileOpKind::Store:
    case TileOpKind::Atomic: {
      if (op.tensor < 0)
        return fail("memory without a tensor");
      for (const SlicePart &p : op.parts) {
        if (p.kind != SlicePart::Gather) {
          if (!sym_ok(p.at))
            return fail("a data-dependent slice");
          continue;
        }
        const TValue &g = f.values[size_t(p.gather)];
        if (!g.is_tile() || g.shape.size() != 1 || g.layout < 0 ||
            (g.elem != ElemType::I32 && g.elem != ElemType::I64))
          return fail("a gather of this index");
      }
      if (op.kind == TileOpKind::Load && !op.attr.empty()) // binds an element read
        known.insert(op.attr);
      bool number = true;
      tile_number(op.pad, &number);
      if (!number)
        return fail("pad " + op.pad);
      return;
    }
    case TileOpKind::Reduce: {
      if (!one_of(op.attr, {"sum", "max", "min"}))
        return fail("reduce " + op.attr);
      const TValue &a = f.values[size_t(op.operands[0])];
      if (!a.is_tile() || a.layout < 0)
        return fail("reduce of this operand");
      const Layout &l = f.layouts[size_t(a.layout)];
      if (op.axis < 0 || unsigned(op.axis) >= l.rank() || !separable(l, unsigned(op.axis)))
        return fail("reduce over a mixed layout");
      return;
    }
    case TileOpKind::ArgReduce:
    case TileOpKind::Scan: {
      const TValue &a = f.values[size_t(op.operands[0])];
      // Every register type (narrow integers wrap, unsigned ones compare
      // unsigned, an i64 shuffles in two halves: lower_tile_reduce.cpp).
      if (!a.is_tile() || a.layout < 0)
        return fail(std::string(op_spelling(op.kind)) + " of this operand");
      const Layout &l = f.layouts[size_t(a.layout)];
      if (op.axis < 0 || unsigned(op.axis) >= l.rank())
        return fail(op_spelling(op.kind));
      if (op.kind == TileOpKind::ArgReduce ? !separable(l, unsigned(op.axis))
                                           : !axis_bits_of(l, unsigned(op.axis)))
        return fail(std::string(op_spelling(op.kind)) + " over a mixed layout");
      return;
    }
    case TileOpKind::Dot: { // the exact FMA dot, or a tensor-core one (tile/mma.cpp)
      const TValue &a = f.values[size_t(op.operands[0])], &c = f.values[size_t(op.operands[1])];
      if (mma_dot(f, op)) {
        if (!mma_staging(f, op).ok)
          return fail("dot of " + std::string(spelling(a.elem)) + " tiles without the mma layout");
        return;
      }
      if (!op.attr.empty() && op.attr != "tf32")
        return fail("dot precision=" + op.attr);
      if (!fma_dot(f, op)) // sema admits no other dot
        return fail("dot of " + std::string(spelling(a.elem)) + " and " +
                    std::string(spelling(c.elem)) + " tiles");
      if (a.layout < 0 || c.layout < 0 || f.values[size_t(op.results[0])].layout < 0)
        return fail("dot without layouts");
      return;
    }
    case TileOpKind::For: {
      if (!sym_ok(op.lo) || !sym_ok(op.hi) || op.step <= 0)
        return fail("for with these bounds");
      std::set<std::string> outer = known; // the body's element reads stay in it
      known.insert(op.var);
      ops(op.body);
      known = std::move(outer);
      return;
    }
    case TileOpKind::If: { // a uniform condition (sema): a branch of the whole CTA
      if (op.operands.empty() || f.values[size_t(op.operands[0])].is_tile())
        return fail("if on a tile");
      std::set<std::string> outer = known;
      ops(op.body);
      known = std::move(outer);
      return;
    }
    default:
      return fail(op_spelling(op.kind));
    }
  }
};

} // namespace

std::string tile_lowering_gap(const TileFunc &f, const KernelDecl &k, const TaskDecl &t,
                              unsigned threads) {
  if (!f.untiled.empty())
    return f.untiled;
  if (!f.assigned)
    return "a body without layouts";
  // Every element type has its registers (lower_ctx.h): narrow integers wrap
  // (arith, wrap_int), unsigned ones shift, divide and compare unsigned,
  // FP8 rounds after each op, and loads move narrow and packed elements in
  // words (lower_tile_memory.cpp); scans, arg-reductions, gathers and dots
  // check their own operand types below.
  // threads: a power-of-two number of warps, which run_backend checked
  // first (valid_threads_per_cta).
  GapCheck c{f, t, {}, {}, tile_warps(threads)};
  for (const TaskIndexDecl &d : t.domain)
    c.known.insert(d.name);
  for (const DimDecl &d : k.dims)
    c.known.insert(d.name);
  c.ops(f.body);
  return c.why;
}

//===-- The body -------------------------------------------------------===//

void BodyLowerer::tile_begin(const TileFunc &f) {
  tf = &f;
  tregs.assign(f.values.size(), {});
  tile_loop_vars.clear();
  tile_data_syms.clear();
  tcoord_cache.clear();
  tile_users.clear();
  tile_fused.clear();
  std::function<void(const std::vector<TOp> &)> uses = [&](const std::vector<TOp> &ops) {
    for (const TOp &op : ops) {
      for (int v : op.operands)
        tile_users[v].push_back(&op);
      uses(op.body);
    }
  };
  uses(f.body);
  tile_direct.clear();
  tile_rings.clear();
  tile_row_major_rings.clear();
  tile_tma_rings.clear();
  tile_cp_async_copies = 0;
  tile_views.clear();
  std::function<void(const std::vector<TOp> &)> direct = [&](const std::vector<TOp> &ops) {
    for (const TOp &op : ops) {
      if (mma_dot(f, op))
        mma_direct_b(op);
      direct(op.body);
    }
  };
  direct(f.body);
  // Every layout's per-thread coordinate, here where it dominates the body.
  for (const Layout &l : f.layouts)
    thread_dims(l);
}

void BodyLowerer::lower_tile_body(const TileFunc &f) {
  // A body runs on the thread index plus an opaque 0
  // (Machine::opaque_zero): its per-thread offsets (a ring's and the
  // fragments' shared-memory offsets, each layout's coordinates), constant
  // but for it, would otherwise be hoisted out of the megakernel's task loop
  // once the body is inlined there, and live across every task (with many
  // static groups, as qwen3_decode's, past 255 registers). tile_begin
  // computes the coordinates from it where they dominate the body. The
  // event protocol after the body (its thread-0 notify) keeps the plain
  // index.
  llvm::Value *const plain_tid = tid;
  if (tf != &f) { // else emit_prefetch began it before the waits (its coordinates are cached)
    tid = b.CreateAdd(tid, b.CreateTrunc(m.opaque_zero(b, b.getInt64Ty()), tid->getType()));
    tile_begin(f);
    for (auto &[v, regs] : tile_preloaded) // read back after a wait (prefetch_reload)
      tregs[size_t(v)] = std::move(regs);
    tile_preloaded.clear();
  }
  tile_ops(f.body);
  if (tid != plain_tid) {
    tid = plain_tid;
    tcoord_cache.clear();
  }
  tf = nullptr;
}

void BodyLowerer::tile_ops(const std::vector<TOp> &ops) {
  for (const TOp &op : ops)
    // Issued before the waits (prefetch.cpp), done by a dot (lower_tile_mma.cpp).
    if (!hoisted_ops.count(&op) && !tile_fused.count(&op) &&
        !(tile_direct.count(&op) && !hoisted_ops.count(&op)))
      tile_op(op);
}

TileVal BodyLowerer::tval(int v) const {
  const TValue &tv = tf->values[size_t(v)];
  TileVal r;
  r.elem = tv.elem;
  r.is_index = tv.index;
  r.shape = tv.shape;
  r.regs = tregs[size_t(v)];
  if (r.regs.empty())
    throw LowerError("tile IR value %" + std::to_string(v) + " used before it is defined");
  return r;
}

const Layout &BodyLowerer::layout_of(int v) const {
  const TValue &tv = tf->values[size_t(v)];
  if (tv.layout < 0 || size_t(tv.layout) >= tf->layouts.size())
    throw LowerError("tile IR value %" + std::to_string(v) + " has no layout");
  return tf->layouts[size_t(tv.layout)];
}

llvm::Value *BodyLowerer::sym_value(const Sym &s) {
  Sym::EmitOps ops;
  ops.constant = [&](int64_t c) -> void * { return b.getInt64(uint64_t(c)); };
  ops.symbol = [&](const std::string &n) -> void * {
    auto it = tile_loop_vars.find(n);
    if (it != tile_loop_vars.end())
      return it->second;
    auto rd = tile_data_syms.find(n);
    if (rd != tile_data_syms.end())
      return rd->second;
    for (size_t d = 0; d < task->domain.size(); ++d)
      if (task->domain[d].name == n)
        return task_vars[d];
    const KernelDecl &k = *plan.kernel;
    for (size_t i = 0; i < k.dims.size(); ++i)
      if (k.dims[i].name == n)
        return arg_slot_i64(dim_slot(int(i)));
    throw LowerError("tile IR index names an unknown symbol '" + n + "'");
  };
  ops.binary = [&](const char *op, void *l, void *r) -> void * {
    auto *x = static_cast<llvm::Value *>(l), *y = static_cast<llvm::Value *>(r);
    std::string o = op;
    if (o == "add")
      return b.CreateAdd(x, y);
    if (o == "mul")
      return b.CreateMul(x, y);
    if (o == "floordiv")
      return floordiv(x, y);
    if (o == "mod")
      return floormod(x, y);
    if (o == "cdiv")
      return cdiv(x, y);
    if (o == "min")
      return b.CreateSelect(b.CreateICmpSLT(x, y), x, y);
    return b.CreateSelect(b.CreateICmpSGT(x, y), x, y);
  };
  void *v = s.emit(ops);
  if (!v)
    throw LowerError("tile IR index overflows");
  return static_cast<llvm::Value *>(v);
}

void BodyLowerer::tile_op(const TOp &op) {
  if (tf->smem_planned && op_family(op.kind) != OpFamily::Async &&
      (op.smem >= 0 || op_family(op.kind) == OpFamily::Layout ||
       op_family(op.kind) == OpFamily::Reduction || op_family(op.kind) == OpFamily::Contraction)) {
    // A staging op runs at its buffer's offset (tile/smem.cpp); note_scratch
    // checks that the lowering stages what the plan sized, and only then.
    tile_buf = op.smem >= 0 ? &tf->smem.at(size_t(op.smem)) : nullptr;
    tile_buf_used = false;
    scratch_floor = tile_buf ? tile_buf->offset : 0;
    tile_staging = true;
    tile_op_at(op);
    tile_staging = false;
    scratch_floor = 0;
    if (tile_buf && !tile_buf_used)
      throw LowerError("tile IR " + tile_buf->what + ": planned shared memory left unused");
    tile_buf = nullptr;
    return;
  }
  tile_op_at(op);
}

void BodyLowerer::tile_op_at(const TOp &op) {
  switch (op_family(op.kind)) {
  case OpFamily::Memory:
    return op.kind == TileOpKind::Load    ? tile_load(op)
           : op.kind == TileOpKind::Store ? tile_store(op)
                                          : tile_atomic(op);
  case OpFamily::Elementwise:
    return tile_elementwise(op);
  case OpFamily::Shape:
    return tile_shape_op(op);
  case OpFamily::Layout:
    return tile_convert(op);
  case OpFamily::Reduction:
    return tile_reduce(op);
  case OpFamily::Contraction:
    return tile_dot(op);
  case OpFamily::Event: // the group's protocol, around the body (lower_kernel.cpp)
    break;
  case OpFamily::Async:
    return tile_async(op);
  case OpFamily::Control:
    if (op.kind == TileOpKind::For)
      tile_for(op);
    if (op.kind == TileOpKind::If)
      tile_if(op);
    return; // a yield is read by its loop or branch
  case OpFamily::Scalar: {
    const TValue &rv = tf->values[size_t(op.results[0])];
    if (op.kind == TileOpKind::Index) {
      tregs[size_t(op.results[0])] = {sym_value(*op.sym)};
      return;
    }
    if (!op.attr.empty() && op.attr[0] == '$') { // a scalar parameter
      const auto &sc = plan.kernel->scalars;
      for (size_t i = 0; i < sc.size(); ++i)
        if ("$" + sc[i].name == op.attr) {
          tregs[size_t(op.results[0])] = scalar_param(int(i)).regs;
          return;
        }
      throw LowerError("tile IR names an unknown scalar parameter " + op.attr);
    }
    double v = tile_number(op.attr);
    if (is_float(rv.elem) && !rv.index) {
      tregs[size_t(op.results[0])] = {fconst(v)};
      return;
    }
    // An integer: its digits (every bit of an i64), or a float's value
    // truncated (a ConstantInt of the literal), wrapped to a
    // narrow type's width.
    char *end = nullptr;
    long long iv = std::strtoll(op.attr.c_str(), &end, 10);
    int64_t n = end && !*end && !op.attr.empty() ? int64_t(iv) : int64_t(v);
    llvm::Type *ty = rv.index ? i64 : reg_type(rv.elem);
    llvm::Value *c = llvm::ConstantInt::get(ty, uint64_t(n), /*signed=*/true);
    tregs[size_t(op.results[0])] = {rv.index ? c : wrap_int(c, rv.elem)};
    return;
  }
  }
}

std::vector<std::vector<llvm::Value *>>
BodyLowerer::tile_loads_at(const TOp &loop, const std::vector<const TOp *> &loads, llvm::Value *at,
                       llvm::Value *when) {
  llvm::Value *outer = tile_loop_vars.count(loop.var) ? tile_loop_vars[loop.var] : nullptr;
  tile_loop_vars[loop.var] = at;
  llvm::BasicBlock *from = b.GetInsertBlock();
  auto *then = llvm::BasicBlock::Create(ctx, "tpipe.load", fn);
  auto *join = llvm::BasicBlock::Create(ctx, "tpipe.join", fn);
  b.CreateCondBr(when, then, join);
  b.SetInsertPoint(then);
  std::vector<std::vector<llvm::Value *>> got;
  {
    CoordScope scope(*this); // a branch, as in if_then
    for (const TOp *l : loads) {
      tile_load(*l);
      got.push_back(tregs[size_t(l->results[0])]);
    }
  }
  llvm::BasicBlock *end = b.GetInsertBlock();
  b.CreateBr(join);
  b.SetInsertPoint(join);
  // `when` false: the loop does not run that iteration; zeros never read.
  for (std::vector<llvm::Value *> &regs : got)
    for (llvm::Value *&r : regs) {
      llvm::PHINode *phi = b.CreatePHI(r->getType(), 2);
      phi->addIncoming(llvm::Constant::getNullValue(r->getType()), from);
      phi->addIncoming(r, end);
      r = phi;
    }
  if (outer)
    tile_loop_vars[loop.var] = outer;
  else
    tile_loop_vars.erase(loop.var);
  return got;
}

void BodyLowerer::tile_for(const TOp &op) {
  llvm::Value *lo = sym_value(*op.lo), *hi = sym_value(*op.hi);
  // Software pipelining (prefetch.cpp, loop_prefetch): the loads of
  // iteration lo before the loop; in iteration k those of k + step before
  // k's compute, carried in phis.
  std::vector<const TOp *> pipe;
  if (prefetch_on()) {
    std::set<std::string> outer;
    for (const auto &[name, v] : tile_loop_vars)
      outer.insert(name);
    pipe = loop_prefetch(op, *tf, *plan.kernel, written, outer);
    pipelined_loads += pipe.size();
  }
  std::vector<std::vector<llvm::Value *>> first;
  if (!pipe.empty())
    first = tile_loads_at(op, pipe, lo, b.CreateICmpSLT(lo, hi));
  // A pipelined loop's copies: what they read of the argument block, once here.
  const std::map<std::pair<unsigned, llvm::Type *>, llvm::Value *> outer_args = ring_args;
  const bool bound = tile_loop_vars.count(op.var) != 0;
  llvm::Value *outer_var = bound ? tile_loop_vars[op.var] : nullptr;
  std::vector<RingBump> bumps; // the copies' pointers bumped per step (phis below)
  for (const TOp &x : op.body)
    if (x.kind == TileOpKind::AsyncCopy) {
      tile_loop_vars[op.var] = lo; // (the slice's value is dead: only its loads count)
      const TValue &buf = tf->values.at(size_t(x.operands.at(0)));
      std::vector<llvm::Value *> stride;
      invariant_args = ring_args_fill = true;
      tile_inside(x, std::vector<int64_t>(buf.shape.begin() + 1, buf.shape.end()), stride);
      sym_value(*x.hi);
      if (std::optional<RingBump> bump = ring_copy_bump(x, op, lo))
        bumps.push_back(*bump);
      invariant_args = ring_args_fill = false;
      if (bound)
        tile_loop_vars[op.var] = outer_var;
      else
        tile_loop_vars.erase(op.var);
    }
  llvm::BasicBlock *pre = b.GetInsertBlock();
  auto *head = llvm::BasicBlock::Create(ctx, "tfor.head", fn);
  auto *body = llvm::BasicBlock::Create(ctx, "tfor.body", fn);
  auto *done = llvm::BasicBlock::Create(ctx, "tfor.end", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode *iv = b.CreatePHI(i64, 2, op.var);
  iv->addIncoming(lo, pre);
  std::vector<std::vector<llvm::PHINode *>> pipe_phis;
  for (size_t j = 0; j < pipe.size(); ++j) {
    std::vector<llvm::PHINode *> ps;
    for (llvm::Value *r : first[j]) {
      llvm::PHINode *p = b.CreatePHI(r->getType(), 2);
      p->addIncoming(r, pre);
      ps.push_back(p);
    }
    pipe_phis.push_back(std::move(ps));
  }
  // A pipelined loop (tile/pipeline.cpp): its rings' slot as a counter.
  llvm::PHINode *slot = nullptr, *phase = nullptr; // (phase: TMA rings, lower_tma.cpp)
  int64_t stages = 0;
  bool tma = false;
  for (const TOp &x : op.body)
    if (x.kind == TileOpKind::SmemView) {
      if (!stages)
        stages = tf->values.at(size_t(x.operands.at(0))).shape.at(0);
      tma = tma || tile_tma_rings.count(x.operands[0]);
    }
  if (stages) {
    slot = b.CreatePHI(i32, 2, op.var + ".slot");
    slot->addIncoming(b.getInt32(0), pre);
  }
  for (RingBump &bump : bumps) {
    bump.ptr = b.CreatePHI(bump.from->getType(), 2);
    bump.ptr->addIncoming(bump.from, pre);
    tile_copy_ptrs[bump.copy] = bump;
  }
  if (tma) {
    phase = b.CreatePHI(i32, 2, op.var + ".phase");
    phase->addIncoming(b.getInt32(0), pre);
  }
  std::vector<std::vector<llvm::PHINode *>> phis;
  for (size_t j = 0; j < op.block_args.size(); ++j) {
    std::vector<llvm::PHINode *> ps;
    for (llvm::Value *init : tregs[size_t(op.operands[j])]) {
      llvm::PHINode *p = b.CreatePHI(init->getType(), 2);
      p->addIncoming(init, pre);
      ps.push_back(p);
    }
    if (ps.empty())
      throw LowerError("tile IR loop-carried value without registers");
    tregs[size_t(op.block_args[j])].assign(ps.begin(), ps.end());
    phis.push_back(std::move(ps));
  }
  b.CreateCondBr(b.CreateICmpSLT(iv, hi), body, done);
  b.SetInsertPoint(body);
  std::vector<std::vector<llvm::Value *>> next;
  if (!pipe.empty()) {
    llvm::Value *nx = b.CreateAdd(iv, b.getInt64(uint64_t(op.step)));
    next = tile_loads_at(op, pipe, nx, b.CreateICmpSLT(nx, hi));
    for (size_t j = 0; j < pipe.size(); ++j) {
      tregs[size_t(pipe[j]->results[0])].assign(pipe_phis[j].begin(), pipe_phis[j].end());
      hoisted_ops.insert(pipe[j]);
    }
  }
  llvm::Value *outer = tile_loop_vars.count(op.var) ? tile_loop_vars[op.var] : nullptr;
  tile_loop_vars[op.var] = iv;
  if (slot) {
    const Sym var = Sym::symbol(op.var);
    tile_ring_counters[op.var] = {slot, stages, ring_slot(op, var, stages).str(),
                                  ring_slot(op, var + Sym((stages - 1) * op.step), stages).str(),
                                  phase};
  }
  std::map<std::string, llvm::Value *> outer_reads = tile_data_syms;
  {
    CoordScope scope(*this); // the body's dominate nothing after the loop
    tile_ops(op.body);
  }
  tile_data_syms = std::move(outer_reads);
  if (outer)
    tile_loop_vars[op.var] = outer;
  else
    tile_loop_vars.erase(op.var);
  tile_ring_counters.erase(op.var);
  ring_args = outer_args;
  const TOp &y = op.body.back();
  if (y.kind != TileOpKind::Yield || y.operands.size() != phis.size())
    throw LowerError("tile IR loop without its yield");
  llvm::BasicBlock *latch = b.GetInsertBlock();
  for (size_t j = 0; j < phis.size(); ++j) {
    const std::vector<llvm::Value *> &next = tregs[size_t(y.operands[j])];
    if (next.size() != phis[j].size())
      throw LowerError("tile IR yield with another register count than its iter_arg");
    for (size_t k = 0; k < next.size(); ++k)
      phis[j][k]->addIncoming(next[k], latch);
  }
  for (size_t j = 0; j < pipe.size(); ++j)
    for (size_t k = 0; k < pipe_phis[j].size(); ++k)
      pipe_phis[j][k]->addIncoming(next[j][k], latch);
  iv->addIncoming(b.CreateAdd(iv, b.getInt64(uint64_t(op.step))), latch);
  for (const RingBump &bump : bumps) {
    bump.ptr->addIncoming(b.CreateGEP(b.getInt8Ty(), bump.ptr, bump.by), latch);
    tile_copy_ptrs.erase(bump.copy);
  }
  if (slot) {
    llvm::Value *n = b.CreateAdd(slot, b.getInt32(1));
    llvm::Value *wrap = b.CreateICmpEQ(n, b.getInt32(uint32_t(stages)));
    slot->addIncoming(b.CreateSelect(wrap, b.getInt32(0), n), latch);
    if (phase)
      phase->addIncoming(b.CreateSelect(wrap, b.CreateXor(phase, b.getInt32(1)), phase), latch);
  }
  b.CreateBr(head);
  b.SetInsertPoint(done);
  for (size_t j = 0; j < phis.size(); ++j)
    tregs[size_t(op.results[j])].assign(phis[j].begin(), phis[j].end());
}

void BodyLowerer::tile_if(const TOp &op) {
  // Sema admits only uniform conditions (scalars of indices, dims, consts,
  // scalar parameters; a tile is refused): every thread of the CTA takes
  // the same branch, so the barriers inside the body are met by all.
  llvm::Value *c = tregs[size_t(op.operands.at(0))].at(0);
  llvm::Value *taken = c->getType()->isIntegerTy(1)
                           ? c
                           : b.CreateICmpNE(c, llvm::Constant::getNullValue(c->getType()));
  llvm::BasicBlock *pre = b.GetInsertBlock();
  auto *then_bb = llvm::BasicBlock::Create(ctx, "tif.then", fn);
  auto *done = llvm::BasicBlock::Create(ctx, "tif.end", fn);
  b.CreateCondBr(taken, then_bb, done);
  b.SetInsertPoint(then_bb);
  std::map<std::string, llvm::Value *> outer_reads = tile_data_syms;
  tile_ops(op.body);
  tile_data_syms = std::move(outer_reads);
  const TOp &y = op.body.back();
  if (y.kind != TileOpKind::Yield || y.operands.size() != op.results.size() ||
      op.operands.size() != op.results.size() + 1)
    throw LowerError("tile IR if without its yield");
  llvm::BasicBlock *end = b.GetInsertBlock();
  b.CreateBr(done);
  b.SetInsertPoint(done);
  for (size_t j = 0; j < op.results.size(); ++j) {
    const std::vector<llvm::Value *> &init = tregs[size_t(op.operands[j + 1])];
    const std::vector<llvm::Value *> &got = tregs[size_t(y.operands[j])];
    if (init.empty() || init.size() != got.size())
      throw LowerError("tile IR if: a yielded value and its initial one differ in registers");
    std::vector<llvm::Value *> regs;
    for (size_t k = 0; k < init.size(); ++k) {
      llvm::PHINode *phi = b.CreatePHI(init[k]->getType(), 2);
      phi->addIncoming(init[k], pre);
      phi->addIncoming(got[k], end);
      regs.push_back(phi);
    }
    tregs[size_t(op.results[j])] = regs;
  }
}

//===-- Layouts: which element each register holds ------------------------===//

const std::vector<llvm::Value *> &BodyLowerer::thread_dims(const Layout &l) {
  auto it = tcoord_cache.find(&l);
  if (it != tcoord_cache.end())
    return it->second;
  llvm::Value *lane = b.CreateAnd(tid, b.getInt32(31));
  llvm::Value *warp = b.CreateLShr(tid, b.getInt32(kLaneBits));
  llvm::Value *c = b.getInt32(0);
  auto add_bits = [&](llvm::Value *hw, const std::vector<uint32_t> &bases) {
    for (size_t k = 0; k < bases.size(); ++k)
      if (bases[k]) {
        llvm::Value *bit = b.CreateAnd(b.CreateLShr(hw, b.getInt32(uint32_t(k))), b.getInt32(1));
        c = b.CreateXor(c, b.CreateMul(bit, b.getInt32(bases[k])));
      }
  };
  add_bits(lane, l.lane);
  add_bits(warp, l.warp);
  std::vector<llvm::Value *> dims;
  for (unsigned d = 0; d < l.rank(); ++d) {
    llvm::Value *f = b.CreateAnd(b.CreateLShr(c, b.getInt32(l.field_offset(d))),
                                 b.getInt32((1u << l.lg[d]) - 1u));
    dims.push_back(b.CreateZExt(f, i64));
  }
  return tcoord_cache[&l] = dims;
}

std::vector<int64_t> BodyLowerer::reg_offsets(const Layout &l, uint32_t r) const {
  uint32_t rc = l.apply(r, 0, 0), hw = 0;
  for (const std::vector<uint32_t> *bs : {&l.lane, &l.warp})
    for (uint32_t x : *bs)
      hw |= x;
  std::vector<int64_t> out;
  for (unsigned d = 0; d < l.rank(); ++d) {
    uint32_t mask = (1u << l.lg[d]) - 1u, off = l.field_offset(d);
    uint32_t rd = (rc >> off) & mask, td = (hw >> off) & mask;
    if (rd & td)
      return {};
    out.push_back(int64_t(rd));
  }
  return out;
}

std::vector<llvm::Value *> BodyLowerer::reg_coords(const Layout &l, uint32_t r) {
  const std::vector<llvm::Value *> &t = thread_dims(l);
  uint32_t rc = l.apply(r, 0, 0), hw = 0;
  for (const std::vector<uint32_t> *bs : {&l.lane, &l.warp})
    for (uint32_t x : *bs)
      hw |= x;
  std::vector<llvm::Value *> out;
  for (unsigned d = 0; d < l.rank(); ++d) {
    uint32_t mask = (1u << l.lg[d]) - 1u, off = l.field_offset(d);
    uint32_t rd = (rc >> off) & mask, td = (hw >> off) & mask;
    // Disjoint bits: XOR is an add, which folds into addresses.
    out.push_back(rd == 0          ? t[d]
                  : (rd & td) == 0 ? b.CreateAdd(t[d], b.getInt64(rd))
                                   : b.CreateXor(t[d], b.getInt64(rd)));
  }
  return out;
}

llvm::Value *BodyLowerer::reg_alive(const Layout &l, uint32_t r) {
  llvm::Value *alive = nullptr;
  std::vector<llvm::Value *> c;
  for (unsigned d = 0; d < l.rank(); ++d) {
    if ((int64_t(1) << l.lg[d]) == l.shape[d])
      continue;
    if (c.empty())
      c = reg_coords(l, r);
    llvm::Value *in = b.CreateICmpULT(c[d], b.getInt64(uint64_t(l.shape[d])));
    alive = alive ? b.CreateAnd(alive, in) : in;
  }
  return alive;
}

llvm::Value *BodyLowerer::replica_writer(const Layout &l) {
  uint32_t mask = 0;
  for (size_t k = 0; k < l.lane.size(); ++k)
    if (!l.lane[k])
      mask |= 1u << k;
  for (size_t k = 0; k < l.warp.size(); ++k)
    if (!l.warp[k])
      mask |= 1u << (k + kLaneBits);
  if (!mask)
    return nullptr;
  return b.CreateICmpEQ(b.CreateAnd(tid, b.getInt32(mask)), b.getInt32(0));
}

bool BodyLowerer::reg_replica(const Layout &l, uint32_t r) {
  for (size_t k = 0; k < l.reg.size(); ++k)
    if ((r >> k & 1u) && !l.reg[k])
      return true;
  return false;
}

} // namespace etl
