//===- lower/lower_tile.cpp - Tile operations to per-thread SIMT code -----===//
//
// What this owns: lowering of tile- and scalar-valued expressions (see the
// layout in lower/lowerer.h): masked `load`/`store` of tensor slices (with
// gather/scatter components and `mask =`; the element types' register and
// memory forms and conversions are lower/lower_convert.cpp), element-wise
// arithmetic with numpy broadcasting, math calls, cast,
// zeros, full, expand, and the storage of `let`/`var` locals. Broadcasts of
// smaller operands go through the shared scratch area. Reductions and scans
// (sum/max/min, argmax/argmin, cumsum) are dispatched from value() to
// lower/lower_reduce.cpp; comparisons and the other compute builtins (select,
// arange, transpose, dot) to lower/lower_compute.cpp. The per-register
// arithmetic here (arith, bit_op, popc_reg, wrap_int) is the tile IR
// path's too (lower/lower_tile_map.cpp).
//
//===----------------------------------------------------------------------===//
#include "lower/lowerer.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <cmath>
#include <limits>

namespace etl {

namespace {

/// numpy broadcast of two shapes (sema has checked they are compatible).
std::vector<int64_t> broadcast_shape(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  std::vector<int64_t> r(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < r.size(); ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    r[r.size() - 1 - i] = x == 1 ? y : x;
  }
  return r;
}

} // namespace

//===-- Broadcasting ----------------------------------------------------===//

TileVal Lowerer::coerce(const TileVal &v, const std::vector<int64_t> &shape, ElemType elem) {
  TileVal r;
  r.elem = elem;
  r.shape = shape;
  auto conv = [&](llvm::Value *x) { return convert_scalar(x, v, elem); };
  if (v.scalar()) {
    llvm::Value *x = conv(v.regs[0]);
    r.regs.assign(shape.empty() ? 1 : regs_for(r.numel()), x);
    return r;
  }
  if (v.numel() == r.numel() && !shape.empty()) {
    // Same shape, or one that differs only by size-1 dims (expand/squeeze):
    // the row-major order, hence the owner of each element, is unchanged.
    for (llvm::Value *x : v.regs)
      r.regs.push_back(conv(x));
    return r;
  }
  // Broadcast of a smaller operand: through shared memory.
  spill_to_scratch(v);
  size_t off = shape.size() - v.shape.size();
  for (unsigned k = 0; k < regs_for(r.numel()); ++k) {
    // A rank-0 result is uniform: every thread reads it.
    llvm::Value *alive = shape.empty() ? nullptr : elem_alive(k, r.numel());
    llvm::Type *ty = reg_type(v.elem);
    llvm::AllocaInst *tmp = entry_alloca(ty);
    b.CreateStore(llvm::Constant::getNullValue(ty), tmp);
    auto read = [&, k] {
      std::vector<llvm::Value *> c = coords(elem_index(k), shape);
      llvm::Value *lin = b.getInt64(0);
      for (size_t d = 0; d < v.shape.size(); ++d) {
        llvm::Value *cd = v.shape[d] == 1 ? b.getInt64(0) : c[d + off];
        lin = b.CreateAdd(b.CreateMul(lin, b.getInt64(v.shape[d])), cd);
      }
      b.CreateStore(scratch_load(ty, lin, scratch_bytes(v.elem)), tmp);
    };
    if (alive)
      if_then(alive, read);
    else
      read();
    r.regs.push_back(conv(b.CreateLoad(ty, tmp)));
  }
  m.barrier(b);
  return r;
}

//===-- Element-wise -----------------------------------------------------===//

/// Integer tile `/` and `%` round like index arithmetic: floor division and
/// a modulo with the divisor's sign. A zero divisor gives 0 (no trap, on any
/// target).
llvm::Value *Lowerer::int_div(llvm::Value *l, llvm::Value *r, bool mod, bool is_unsigned) {
  llvm::Value *zero = llvm::Constant::getNullValue(r->getType());
  llvm::Value *one = llvm::ConstantInt::get(r->getType(), 1);
  llvm::Value *is0 = b.CreateICmpEQ(r, zero);
  llvm::Value *d = b.CreateSelect(is0, one, r);
  if (is_unsigned) // no rounding question
    return b.CreateSelect(is0, zero, mod ? b.CreateURem(l, d) : b.CreateUDiv(l, d));
  llvm::Value *q = b.CreateSDiv(l, d), *m = b.CreateSRem(l, d);
  // The remainder is non-zero and its sign differs from the divisor's.
  llvm::Value *adjust = b.CreateAnd(
      b.CreateICmpNE(m, zero), b.CreateICmpNE(b.CreateICmpSLT(m, zero), b.CreateICmpSLT(d, zero)));
  llvm::Value *v = mod ? b.CreateSelect(adjust, b.CreateAdd(m, d), m)
                       : b.CreateSelect(adjust, b.CreateSub(q, one), q);
  return b.CreateSelect(is0, zero, v);
}

/// `& | ^ << >>` of two integer registers. A shift amount is taken modulo
/// the bit width (`x << 33` on i32 is `x << 1`; a negative amount uses its
/// low bits), the same on every target: LLVM leaves an amount >= width
/// poison and PTX clamps it, so the mask makes sim and NVPTX agree. The
/// width is the type's (8 for i8/u8, 16 for i16/u16). `>>` is arithmetic for
/// signed types and logical for unsigned ones (whose registers hold the value
/// zero-extended, so a logical shift of the register is the type's).
llvm::Value *Lowerer::bit_op(BinOp op, llvm::Value *l, llvm::Value *r, ElemType t) {
  if (op == BinOp::BitAnd)
    return b.CreateAnd(l, r);
  if (op == BinOp::BitOr)
    return b.CreateOr(l, r);
  if (op == BinOp::BitXor)
    return b.CreateXor(l, r);
  unsigned w = std::min(elem_bits(t), l->getType()->getIntegerBitWidth());
  llvm::Value *amount = b.CreateAnd(r, llvm::ConstantInt::get(r->getType(), w - 1));
  if (op == BinOp::Shl)
    return b.CreateShl(l, amount);
  return is_unsigned(t) ? b.CreateLShr(l, amount) : b.CreateAShr(l, amount);
}

/// popc of an integer register of `t`: the set bits of the type's width
/// (an i8 register holds the value sign-extended), as an i32.
llvm::Value *Lowerer::popc_reg(llvm::Value *r, ElemType t) {
  unsigned w = elem_bits(t);
  llvm::Value *x = w < 32 ? b.CreateAnd(r, b.getInt32((1u << w) - 1)) : r;
  return b.CreateSExtOrTrunc(b.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, x), i32);
}

TileVal Lowerer::arith(BinOp op, const TileVal &a, const TileVal &c,
                       const std::vector<int64_t> &shape, ElemType elem) {
  TileVal x = coerce(a, shape, elem), y = coerce(c, shape, elem);
  TileVal r;
  r.elem = elem;
  r.shape = shape;
  bool fl = is_float(elem);
  for (size_t k = 0; k < x.regs.size(); ++k) {
    llvm::Value *l = x.regs[k], *rr = y.regs[k], *v = nullptr;
    switch (op) {
    case BinOp::Add:
      v = fl ? b.CreateFAdd(l, rr) : b.CreateAdd(l, rr);
      break;
    case BinOp::Sub:
      v = fl ? b.CreateFSub(l, rr) : b.CreateSub(l, rr);
      break;
    case BinOp::Mul:
      v = fl ? b.CreateFMul(l, rr) : b.CreateMul(l, rr);
      break;
    case BinOp::Div:
      v = fl ? b.CreateFDiv(l, rr) : int_div(l, rr, /*mod=*/false, is_unsigned(elem));
      break;
    case BinOp::Mod:
      if (fl)
        throw LowerError("'%' on a float tile");
      v = int_div(l, rr, /*mod=*/true, is_unsigned(elem));
      break;
    case BinOp::BitAnd:
    case BinOp::BitOr:
    case BinOp::BitXor:
    case BinOp::Shl:
    case BinOp::Shr:
      if (fl)
        throw LowerError(std::string("'") + spelling(op) + "' on a float tile");
      v = bit_op(op, l, rr, elem);
      break;
    default:
      throw LowerError(std::string("operator '") + spelling(op) + "' is not supported on tiles");
    }
    r.regs.push_back(fl ? round_to(b, v, elem) : wrap_int(v, elem));
  }
  return r;
}

//===-- Locals -----------------------------------------------------------===//

void Lowerer::assign_local(int index, const TileVal &v) {
  if (index < 0 || size_t(index) >= locals.size())
    throw LowerError("local without a slot");
  LocalSlot &ls = locals[size_t(index)];
  const Type &t = task->locals[size_t(index)].type;
  if (!ls.set) {
    ls.set = true;
    if (t.kind == TypeKind::Index) {
      ls.shape_of.is_index = true;
      ls.shape_of.regs.resize(1);
      ls.slots.push_back(entry_alloca(i64, task->locals[size_t(index)].name.c_str()));
    } else {
      ls.shape_of.elem = t.kind == TypeKind::Unknown ? v.elem : t.elem;
      ls.shape_of.shape = t.kind == TypeKind::Tile      ? t.tile_shape
                          : t.kind == TypeKind::Unknown ? v.shape
                                                        : std::vector<int64_t>{};
      unsigned n = ls.shape_of.shape.empty() ? 1 : regs_for(ls.shape_of.numel());
      for (unsigned k = 0; k < n; ++k)
        ls.slots.push_back(
            entry_alloca(reg_type(ls.shape_of.elem), task->locals[size_t(index)].name.c_str()));
    }
  }
  if (ls.shape_of.is_index) {
    if (!v.is_index)
      throw LowerError("assigning a tile to an index local");
    b.CreateStore(v.regs[0], ls.slots[0]);
    return;
  }
  TileVal c = coerce(v, ls.shape_of.shape, ls.shape_of.elem);
  for (size_t k = 0; k < ls.slots.size(); ++k)
    b.CreateStore(c.regs[k], ls.slots[k]);
}

TileVal Lowerer::read_local(int index) {
  if (index < 0 || size_t(index) >= locals.size() || !locals[size_t(index)].set)
    throw LowerError("local read before it is assigned");
  LocalSlot &ls = locals[size_t(index)];
  TileVal r = ls.shape_of;
  r.regs.clear();
  for (llvm::AllocaInst *a : ls.slots)
    r.regs.push_back(b.CreateLoad(a->getAllocatedType(), a));
  return r;
}

//===-- Loads and stores -------------------------------------------------===//
//
// A slice component is a scalar index (the tensor dim is fixed), a range
// (one tile dim: lo + tile coordinate) or a gather index: a 1-D integer tile
// whose element r gives the tensor coordinate at tile coordinate r. Several
// gather components are zipped into one tile dim, at the position of the
// first one. Out-of-bounds coordinates (from ranges or gather values) and
// masked-off elements are neither read (they get `pad`) nor written.

namespace {
/// The pieces of a `x[components]` slice shared by load and store.
struct SliceAccess {
  ElemType elem;
  llvm::Value *base;
  std::vector<llvm::Value *> dims, strides, fixed; ///< fixed: scalar comps or range lo
  std::vector<int> tile_dim;                       ///< per tensor dim: tile dim or -1
  /// Per tensor dim: for a gather component, the tensor coordinate (i64) of
  /// each of this thread's tile registers; empty otherwise.
  std::vector<std::vector<llvm::Value *>> gathered;
  std::vector<int64_t> shape; ///< the tile shape
};

/// Whether a slice component is a gather index (sema typed it as a tile).
bool is_gather(const Expr &c) { return c.kind != ExprKind::Range && c.type.is_tile(); }
} // namespace

/// i1 per register of a mask tile (already at the slice's shape): non-zero
/// integers (and true bools, which are i1) are on.
static llvm::Value *mask_true(Lowerer &L, const TileVal &m, unsigned k) {
  llvm::Value *v = m.regs[k];
  if (v->getType()->isIntegerTy(1))
    return v;
  if (v->getType()->isFloatingPointTy())
    return L.b.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
  return L.b.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
}

static SliceAccess slice_access(Lowerer &L, const Expr &ix, const Expr &call) {
  if (ix.kind != ExprKind::Index || ix.args.empty() || ix.args[0]->kind != ExprKind::Name)
    throw LowerError("load/store expects a tensor slice x[...]");
  const Expr &tn = *ix.args[0];
  const KernelDecl &k = *L.plan.kernel;
  int ti = tn.ref_index;
  if (ti < 0 || size_t(ti) >= k.tensors.size() || k.tensors[size_t(ti)].name != tn.name) {
    ti = -1;
    for (size_t i = 0; i < k.tensors.size(); ++i)
      if (k.tensors[i].name == tn.name)
        ti = int(i);
  }
  if (ti < 0)
    throw LowerError("unknown tensor '" + tn.name + "'");
  const TensorDecl &td = k.tensors[size_t(ti)];
  if (td.type.shape.size() != ix.args.size() - 1)
    throw LowerError("slice of '" + td.name + "' has the wrong number of components");
  SliceAccess s;
  s.elem = td.type.elem;
  s.base = L.arg_slot_ptr(L.tensor_slot(ti));
  for (const ExprPtr &d : td.type.shape)
    s.dims.push_back(L.index(*d));
  size_t rank = s.dims.size();
  s.strides.assign(rank, nullptr);
  s.gathered.resize(rank);
  llvm::Value *st = L.b.getInt64(1);
  for (size_t d = rank; d-- > 0;) {
    s.strides[d] = st;
    st = L.b.CreateMul(st, s.dims[d]);
  }
  std::vector<int64_t> static_ext;
  int gather_dim = -1;
  for (size_t d = 0; d < rank; ++d) {
    const Expr &c = *ix.args[d + 1];
    if (is_gather(c)) {
      if (c.type.tile_shape.size() != 1)
        throw LowerError("a gather index of '" + td.name + "' is not a 1-D tile");
      if (gather_dim < 0) {
        gather_dim = int(static_ext.size());
        static_ext.push_back(c.type.tile_shape[0]);
      }
      s.tile_dim.push_back(gather_dim);
      s.fixed.push_back(L.b.getInt64(0));
    } else if (c.kind == ExprKind::Range) {
      s.tile_dim.push_back(int(static_ext.size()));
      s.fixed.push_back(L.index(*c.args[0]));
      std::optional<int64_t> ext;
      if (c.plus_extent)
        ext = static_int(*L.plan.program, *c.args[1]);
      static_ext.push_back(ext ? *ext : -1);
    } else {
      s.tile_dim.push_back(-1);
      s.fixed.push_back(L.index(c));
    }
  }
  if (call.type.is_tile() && call.type.tile_shape.size() == static_ext.size())
    s.shape = call.type.tile_shape;
  else if (ix.type.tile_shape.size() == static_ext.size())
    s.shape = ix.type.tile_shape;
  else
    s.shape = static_ext;
  for (int64_t e : s.shape)
    if (e <= 0)
      throw LowerError("slice of '" + td.name + "' has no static extent");
  // Gather values, re-laid out so that each thread holds the index of each
  // of its tile elements: the 1-D index tile as [n, 1, ...] broadcast to the
  // tile shape (every thread takes part: this may go through scratch).
  for (size_t d = 0; d < rank; ++d) {
    const Expr &c = *ix.args[d + 1];
    if (!is_gather(c))
      continue;
    TileVal g = L.value(c);
    g.shape.assign(s.shape.size() - size_t(gather_dim), 1);
    g.shape[0] = c.type.tile_shape[0];
    s.gathered[d] = L.coerce(g, s.shape, ElemType::I64).regs;
  }
  return s;
}

/// Address and in-bounds mask of tile element `e` (i64), held in register
/// `k` of this thread, of a slice; `lin`, when given, receives the tensor
/// element's linear index (a packed type's nibble is its low bit).
static std::pair<llvm::Value *, llvm::Value *> slice_elem(Lowerer &L, const SliceAccess &s,
                                                          llvm::Value *e, unsigned k,
                                                          llvm::Value **lin_out = nullptr) {
  std::vector<llvm::Value *> tc = L.coords(e, s.shape);
  llvm::Value *lin = L.b.getInt64(0), *mask = L.b.getTrue();
  for (size_t d = 0; d < s.dims.size(); ++d) {
    llvm::Value *c = !s.gathered[d].empty() ? s.gathered[d].at(k)
                     : s.tile_dim[d] < 0    ? s.fixed[d]
                                            : L.b.CreateAdd(s.fixed[d], tc[size_t(s.tile_dim[d])]);
    mask = L.b.CreateAnd(mask, L.b.CreateICmpULT(c, s.dims[d]));
    lin = L.b.CreateAdd(lin, L.b.CreateMul(c, s.strides[d]));
  }
  if (lin_out)
    *lin_out = lin;
  llvm::Value *off = is_packed(s.elem) ? L.b.CreateLShr(lin, 1) // two elements per byte
                                       : L.b.CreateMul(lin, L.b.getInt64(byte_size(s.elem)));
  return {L.b.CreateGEP(L.b.getInt8Ty(), s.base, off), mask};
}

/// The `mask = m` of a load/store broadcast to the slice's shape, or an
/// empty TileVal when there is none.
static TileVal slice_mask(Lowerer &L, const Expr &call, const SliceAccess &s) {
  const KwArg *km = find_kwarg(call, "mask");
  if (!km)
    return TileVal{};
  TileVal m = L.value(*km->value);
  return L.coerce(m, s.shape, m.is_index ? ElemType::I64 : m.elem);
}

TileVal Lowerer::lower_load(const Expr &call) {
  if (call.args.size() != 1)
    throw LowerError("load takes one slice");
  SliceAccess s = slice_access(*this, *call.args[0], call);
  TileVal mk = slice_mask(*this, call, s);
  TileVal r;
  r.elem = loaded_elem(s.elem); // i4 -> i8, u4 -> u8
  r.shape = s.shape;
  llvm::Type *ty = reg_type(r.elem);
  llvm::Value *pad = llvm::Constant::getNullValue(ty);
  if (const KwArg *kp = find_kwarg(call, "pad")) {
    TileVal pv = value(*kp->value);
    pad = convert_scalar(pv.regs[0], pv, r.elem);
  }
  llvm::Type *mem_ty = memory_type(s.elem);
  if (call.barrier_before) // an earlier access of this task may conflict (sema/hazards.h)
    m.barrier(b);
  unsigned nregs = s.shape.empty() ? 1 : regs_for(r.numel());
  for (unsigned k = 0; k < nregs; ++k) {
    llvm::Value *e = s.shape.empty() ? b.getInt64(0) : elem_index(k);
    llvm::Value *lin = nullptr;
    auto [p, mask] = slice_elem(*this, s, e, k, &lin);
    if (llvm::Value *alive = s.shape.empty() ? nullptr : elem_alive(k, r.numel()))
      mask = b.CreateAnd(mask, alive);
    if (!mk.regs.empty())
      mask = b.CreateAnd(mask, mask_true(*this, mk, k));
    llvm::BasicBlock *from = b.GetInsertBlock();
    auto *lb = llvm::BasicBlock::Create(ctx, "load", fn);
    auto *jb = llvm::BasicBlock::Create(ctx, "load.done", fn);
    b.CreateCondBr(mask, lb, jb);
    b.SetInsertPoint(lb);
    llvm::Value *v = from_memory(m.global_load(b, mem_ty, p), s.elem, lin);
    llvm::BasicBlock *lend = b.GetInsertBlock();
    b.CreateBr(jb);
    b.SetInsertPoint(jb);
    llvm::PHINode *phi = b.CreatePHI(ty, 2);
    phi->addIncoming(pad, from);
    phi->addIncoming(v, lend);
    r.regs.push_back(phi);
  }
  return r;
}

std::optional<Lowerer::ChunkLoad> Lowerer::chunk_load(const Expr &call, int elem_bytes) {
  if (call.kind != ExprKind::Call || call.builtin != Builtin::Load || call.args.size() != 1 ||
      !call.kwargs.empty() || call.type.tile_shape.size() != 2)
    return std::nullopt;
  const Expr &ix = *call.args[0];
  if (ix.kind != ExprKind::Index || ix.args.size() < 3 || ix.args.back()->kind != ExprKind::Range)
    return std::nullopt;
  for (size_t i = 1; i < ix.args.size(); ++i)
    if (is_gather(*ix.args[i]))
      return std::nullopt;
  SliceAccess s = slice_access(*this, ix, call);
  if (s.tile_dim.back() != 1 || s.shape.size() != 2 || int(byte_size(s.elem)) != elem_bytes)
    return std::nullopt;
  ChunkLoad c;
  c.elem = s.elem;
  c.shape = s.shape;
  c.barrier_before = call.barrier_before;
  c.at = [this, s](llvm::Value *e, unsigned n) {
    auto [p, mask] = slice_elem(*this, s, e, 0);
    llvm::Value *col = b.CreateURem(e, b.getInt64(s.shape[1]));
    llvm::Value *last = b.CreateAdd(s.fixed.back(), b.CreateAdd(col, b.getInt64(n - 1)));
    return std::make_pair(p, b.CreateAnd(mask, b.CreateICmpULT(last, s.dims.back())));
  };
  return c;
}

TileVal Lowerer::lower_store(const Expr &call) {
  const bool atomic = is_atomic_fn(call.builtin);
  const size_t nvals = call.builtin == Builtin::AtomicCas ? 2 : 1;
  if (call.args.size() != 1 + nvals)
    throw LowerError(call.name + ": wrong number of arguments");
  SliceAccess s = slice_access(*this, *call.args[0], call);
  if (is_packed(s.elem)) // sema reports it (PackedStore)
    throw LowerError("a store into a packed " + std::string(spelling(s.elem)) + " tensor");
  TileVal mk = slice_mask(*this, call, s);
  TileVal v = coerce(value(*call.args[1]), s.shape, s.elem);
  TileVal desired = nvals == 2 ? coerce(value(*call.args[2]), s.shape, s.elem) : TileVal{};
  TileVal old; // an atomic's old values (0 where masked off or outside)
  old.elem = s.elem;
  old.shape = s.shape;
  if (call.barrier_before) // an earlier access of this task may conflict (sema/hazards.h)
    m.barrier(b);
  int64_t numel = v.numel();
  for (unsigned k = 0; k < v.regs.size(); ++k) {
    // A rank-0 store is done once, by thread 0.
    llvm::Value *e = s.shape.empty() ? b.getInt64(0) : elem_index(k);
    auto [addr, mask] = slice_elem(*this, s, e, k);
    llvm::Value *p = addr; // a structured binding cannot be captured in C++17 (clang)
    llvm::Value *alive =
        s.shape.empty() ? b.CreateICmpEQ(tid, b.getInt32(0)) : elem_alive(k, numel);
    if (alive)
      mask = b.CreateAnd(mask, alive);
    if (!mk.regs.empty())
      mask = b.CreateAnd(mask, mask_true(*this, mk, k));
    llvm::Value *x = v.regs[k];
    if (atomic) {
      llvm::BasicBlock *from = b.GetInsertBlock();
      auto *ab = llvm::BasicBlock::Create(ctx, "atomic", fn);
      auto *jb = llvm::BasicBlock::Create(ctx, "atomic.done", fn);
      b.CreateCondBr(mask, ab, jb);
      b.SetInsertPoint(ab);
      llvm::Value *r =
          atomic_elem(call.builtin, s.elem, p, x, nvals == 2 ? desired.regs[k] : nullptr);
      llvm::BasicBlock *aend = b.GetInsertBlock();
      b.CreateBr(jb);
      b.SetInsertPoint(jb);
      llvm::PHINode *phi = b.CreatePHI(r->getType(), 2);
      phi->addIncoming(llvm::Constant::getNullValue(r->getType()), from);
      phi->addIncoming(r, aend);
      old.regs.push_back(phi);
      continue;
    }
    if_then(mask, [&] { m.global_store(b, to_memory(x, s.elem), p); });
  }
  if (atomic && s.shape.empty() && call.type.kind != TypeKind::Unknown)
    old.regs[0] = broadcast_from_thread0(old.regs[0], s.elem);
  return old;
}

//===-- Expressions ------------------------------------------------------===//

TileVal Lowerer::value(const Expr &e) {
  auto scalar = [&](llvm::Value *v, ElemType t) {
    TileVal r;
    r.elem = t;
    r.regs = {v};
    return r;
  };
  ElemType want = e.type.kind == TypeKind::Tile || e.type.kind == TypeKind::Scalar ? e.type.elem
                                                                                   : ElemType::F32;
  if (e.type.kind == TypeKind::Index) {
    TileVal r = scalar(index(e), ElemType::I32);
    r.is_index = true;
    return r;
  }
  switch (e.kind) {
  case ExprKind::IntLit:
    if (!is_float(want))
      return scalar(
          wrap_int(llvm::ConstantInt::get(reg_type(want), uint64_t(e.int_value), true), want),
          want);
    return scalar(llvm::ConstantFP::get(f32, double(e.int_value)), want);
  case ExprKind::FloatLit:
    if (!is_float(want))
      return scalar(llvm::ConstantInt::get(reg_type(want), uint64_t(int64_t(e.float_value)), true),
                    want);
    return scalar(llvm::ConstantFP::get(f32, e.float_value), want);
  case ExprKind::Name:
    if (e.ref == NameRef::Local)
      return read_local(e.ref_index);
    if (e.ref == NameRef::Scalar)
      return scalar_param(e);
    if (e.ref == NameRef::Builtin && e.name == "inf")
      return scalar(llvm::ConstantFP::getInfinity(f32), ElemType::F32);
    if (e.ref == NameRef::Const && plan.program->consts[size_t(e.ref_index)].is_float)
      return scalar(
          llvm::ConstantFP::get(f32, plan.program->consts[size_t(e.ref_index)].float_folded), want);
    if (e.ref == NameRef::Const || e.ref == NameRef::Dim || e.ref == NameRef::TaskIndex ||
        e.ref == NameRef::LoopVar) {
      TileVal r = scalar(index(e), ElemType::I32);
      r.is_index = true;
      return r;
    }
    throw LowerError("name '" + e.name + "' is not a value here");
  case ExprKind::Unary: {
    TileVal a = value(*e.args[0]);
    if (e.un_op == UnOp::Not && !a.is_index && a.elem == ElemType::Bool) {
      for (auto &r : a.regs)
        r = b.CreateXor(r, b.getInt32(1));
      return a;
    }
    if (e.un_op == UnOp::BitNot && !a.is_index && !is_float(a.elem)) {
      for (auto &r : a.regs)
        r = wrap_int(b.CreateNot(r), a.elem);
      return a;
    }
    if (e.un_op != UnOp::Neg)
      throw LowerError(std::string("operator '") + spelling(e.un_op) +
                       "' is not supported on this operand");
    if (a.is_index) {
      a.regs[0] = b.CreateNeg(a.regs[0]);
      return a;
    }
    for (auto &r : a.regs)
      r = is_float(a.elem) ? b.CreateFNeg(r) : wrap_int(b.CreateNeg(r), a.elem);
    return a;
  }
  case ExprKind::Binary: {
    TileVal a = value(*e.args[0]), c = value(*e.args[1]);
    std::vector<int64_t> shape = e.type.is_tile() ? e.type.tile_shape
                                 : e.type.kind == TypeKind::Scalar
                                     ? std::vector<int64_t>{}
                                     : broadcast_shape(a.shape, c.shape);
    if (e.type.kind == TypeKind::Unknown)
      want = a.is_index ? c.elem : a.elem;
    switch (e.bin_op) {
    case BinOp::Eq:
    case BinOp::Ne:
    case BinOp::Lt:
    case BinOp::Le:
    case BinOp::Gt:
    case BinOp::Ge:
    case BinOp::And:
    case BinOp::Or:
      return compare(e.bin_op, a, c, shape);
    default:
      break;
    }
    return arith(e.bin_op, a, c, shape, want);
  }
  case ExprKind::Call:
    break;
  default:
    throw LowerError(std::string("unsupported expression (") + kind_name(e.kind) + ")");
  }

  // Calls (sema resolved each callee to a builtin).
  const Builtin f = e.builtin;
  if (f == Builtin::Load)
    return lower_load(e);
  if (f == Builtin::Store || is_atomic_fn(f))
    return lower_store(e);
  auto result_shape = [&](const TileVal &fallback) {
    return e.type.is_tile()                  ? e.type.tile_shape
           : e.type.kind == TypeKind::Scalar ? std::vector<int64_t>{}
                                             : fallback.shape;
  };
  if (f == Builtin::Zeros || f == Builtin::Full) {
    ElemType t = e.type_arg ? *e.type_arg : want;
    std::vector<int64_t> shape = e.type.tile_shape;
    if (shape.empty())
      for (const ExprPtr &s : e.shape_args) {
        auto v = static_int(*plan.program, *s);
        if (!v)
          throw LowerError(e.name + " needs a static shape");
        shape.push_back(*v);
      }
    TileVal init = f == Builtin::Zeros ? scalar(llvm::Constant::getNullValue(reg_type(t)), t)
                                       : value(*e.args.at(0));
    return coerce(init, shape, t);
  }
  if (f == Builtin::Cast) {
    TileVal a = value(*e.args.at(0));
    ElemType t = e.type_arg ? *e.type_arg : want;
    return coerce(a, a.shape, t);
  }
  if (f == Builtin::Expand) {
    TileVal a = value(*e.args.at(0));
    std::vector<int64_t> shape = e.type.tile_shape;
    if (!e.type.is_tile()) {
      const KwArg *ax = find_kwarg(e, "axis");
      auto v = ax ? static_int(*plan.program, *ax->value) : std::optional<int64_t>(0);
      if (!v)
        throw LowerError("expand needs a static axis");
      int64_t axis = *v < 0 ? *v + int64_t(a.shape.size()) + 1 : *v;
      shape = a.shape;
      shape.insert(shape.begin() + axis, 1);
    }
    a.shape = shape; // same linear order: no data movement
    return a;
  }
  if ((f == Builtin::Sum || f == Builtin::Max || f == Builtin::Min) && find_kwarg(e, "axis")) {
    TileVal a = value(*e.args.at(0));
    auto axis = static_int(*plan.program, *find_kwarg(e, "axis")->value);
    if (!axis)
      throw LowerError(e.name + " needs a static axis");
    cur_line = e.range.begin.line;
    TileVal r = reduce(a, int(*axis), f);
    for (auto &x : r.regs) // a sum of u8 wraps to u8 (cast to i32 first for the full sum)
      x = wrap_int(x, r.elem);
    return r;
  }
  if (f == Builtin::Sum && e.args.size() == 1) { // full reduction: of the flattened tile
    TileVal a = value(*e.args[0]);
    if (!a.scalar())
      a.shape = {a.numel()}; // the row-major order, and so each element's owner, is unchanged
    cur_line = e.range.begin.line;
    TileVal r = reduce(a, 0, Builtin::Sum);
    for (auto &x : r.regs)
      x = wrap_int(x, r.elem);
    return r;
  }
  if ((f == Builtin::Max || f == Builtin::Min) && e.args.size() == 2) {
    TileVal a = value(*e.args[0]), c = value(*e.args[1]);
    std::vector<int64_t> shape = e.type.is_tile() ? e.type.tile_shape
                                 : e.type.kind == TypeKind::Scalar
                                     ? std::vector<int64_t>{}
                                     : broadcast_shape(a.shape, c.shape);
    if (e.type.kind == TypeKind::Unknown)
      want = a.elem;
    TileVal x = coerce(a, shape, want), y = coerce(c, shape, want);
    for (size_t k = 0; k < x.regs.size(); ++k) {
      llvm::Value *l = x.regs[k], *r = y.regs[k];
      if (is_float(want))
        x.regs[k] = b.CreateBinaryIntrinsic(
            f == Builtin::Max ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, l, r);
      else
        x.regs[k] =
            b.CreateSelect(b.CreateICmp(int_predicate(f == Builtin::Max ? llvm::CmpInst::ICMP_SGT
                                                                        : llvm::CmpInst::ICMP_SLT,
                                                      want),
                                        l, r),
                           l, r);
    }
    return x;
  }
  if (is_unary_math_fn(f) || f == Builtin::Pow)
    return math_call(e); // lower_math.cpp
  if (e.args.size() == 1 && f == Builtin::Popc) {
    TileVal a = value(*e.args[0]);
    if (a.is_index || is_float(a.elem))
      throw LowerError("popc of a non-integer");
    for (auto &r : a.regs)
      r = popc_reg(r, a.elem);
    a.elem = ElemType::I32;
    return a;
  }
  if (e.args.size() == 1 && f == Builtin::Abs) {
    TileVal a = value(*e.args[0]);
    if (!a.is_index && !is_float(a.elem)) {
      if (!is_unsigned(a.elem)) // abs(-128) of an i8 wraps to -128, as in C
        for (auto &r : a.regs)
          r = wrap_int(
              b.CreateSelect(b.CreateICmpSLT(r, llvm::Constant::getNullValue(r->getType())),
                             b.CreateNeg(r), r),
              a.elem);
      return a;
    }
    ElemType t = is_float(want) ? want : ElemType::F32;
    TileVal x = coerce(a, result_shape(a), t);
    for (auto &r : x.regs)
      r = round_to(b, b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, r), t);
    return x;
  }
  if (f == Builtin::Select && e.args.size() == 3) {
    TileVal cond = value(*e.args[0]), x = value(*e.args[1]), y = value(*e.args[2]);
    std::vector<int64_t> shape = e.type.is_tile() ? e.type.tile_shape : std::vector<int64_t>{};
    return select(cond, x, y, shape, want);
  }
  if (f == Builtin::Arange) {
    std::vector<int64_t> shape = e.type.tile_shape;
    if (shape.size() != 1)
      throw LowerError("arange needs a static 1-D shape");
    return arange(shape[0], want);
  }
  if ((f == Builtin::Cumsum || f == Builtin::Argmax || f == Builtin::Argmin) &&
      find_kwarg(e, "axis")) {
    TileVal a = value(*e.args.at(0));
    auto axis = static_int(*plan.program, *find_kwarg(e, "axis")->value);
    if (!axis)
      throw LowerError(e.name + " needs a static axis");
    cur_line = e.range.begin.line;
    if (f == Builtin::Cumsum) {
      TileVal r = cumsum(a, int(*axis));
      for (auto &x : r.regs)
        x = wrap_int(x, r.elem);
      return r;
    }
    return arg_reduce(a, int(*axis), f == Builtin::Argmax);
  }
  if (f == Builtin::Transpose)
    return transpose(value(*e.args.at(0)));
  if (f == Builtin::Reshape) { // the row-major order, and so each element's owner, is unchanged
    TileVal a = value(*e.args.at(0));
    a.shape = e.type.tile_shape;
    return a;
  }
  if (f == Builtin::Dot) {
    if (dot_wants_tf32(e)) {
      if (std::optional<TileVal> r = dot_tf32_async(e)) // both operands loads: cp.async
        return *r;
      return dot_tf32(value(*e.args.at(0)), value(*e.args.at(1)), e.range);
    }
    if (std::optional<TileVal> r = dot_chained(e)) // before its inner dot is lowered alone
      return *r;
    if (std::optional<TileVal> r = dot_async(e))
      return *r;
    if (std::optional<TileVal> r = dot_staged(e))
      return *r;
    return dot(value(*e.args.at(0)), value(*e.args.at(1)), e.range);
  }
  throw LowerError("unsupported call '" + e.name + "'");
}

} // namespace etl
