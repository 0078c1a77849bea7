//===- lower/lower_index.cpp - Index expressions to i64 -------------------===//
//
// What this owns: lowering of index-typed expressions (TypeKind::Index) to
// i64 values: literals, consts (sema's folded value), dims (read from the
// argument block), task indices, loop variables and index locals, + - * and
// floor-based / and %, cdiv, min, max; and reading the argument block at the
// slots taskgraph/taskgraph.h's ArgLayout assigns (after the fixed slots of
// runtime/abi/etl_abi.h).
//
//===----------------------------------------------------------------------===//
#include "lower/lower_ctx.h"

namespace etl {

unsigned LowerCtx::dim_slot(int i) const { return arg_layout(*plan.kernel).dim(unsigned(i)); }
unsigned LowerCtx::tensor_slot(int i) const { return arg_layout(*plan.kernel).tensor(unsigned(i)); }
unsigned LowerCtx::event_slot(int i) const { return arg_layout(*plan.kernel).event(unsigned(i)); }
unsigned LowerCtx::scalar_slot(int i) const { return arg_layout(*plan.kernel).scalar(unsigned(i)); }

TileVal LowerCtx::scalar_param(const Expr &e) {
  const auto &scalars = plan.kernel->scalars;
  if (e.ref_index < 0 || size_t(e.ref_index) >= scalars.size() ||
      scalars[size_t(e.ref_index)].name != e.name)
    throw LowerError("unknown scalar parameter '" + e.name + "'");
  return scalar_param(e.ref_index);
}

TileVal LowerCtx::scalar_param(int index) {
  const auto &scalars = plan.kernel->scalars;
  const std::string &name = scalars.at(size_t(index)).name;
  TileVal r;
  r.elem = scalars[size_t(index)].elem;
  llvm::Value *bits = arg_slot_i64(scalar_slot(index));
  llvm::Value *v = nullptr;
  switch (r.elem) {
  case ElemType::F32:
    v = b.CreateBitCast(b.CreateTrunc(bits, i32), f32);
    break;
  case ElemType::F16:
    v = b.CreateFPExt(b.CreateBitCast(b.CreateTrunc(bits, b.getInt16Ty()), b.getHalfTy()), f32);
    break;
  case ElemType::BF16: // the top 16 bits of an f32
    v = b.CreateBitCast(b.CreateShl(b.CreateAnd(b.CreateTrunc(bits, i32), b.getInt32(0xFFFF)), 16),
                        f32);
    break;
  case ElemType::I32:
    v = b.CreateTrunc(bits, i32);
    break;
  case ElemType::I64:
    v = bits;
    break;
  case ElemType::I8:
  case ElemType::U8:
  case ElemType::I16:
  case ElemType::U16:
  case ElemType::U32: // the value's low bits, extended into the i32 register
    v = wrap_int(b.CreateTrunc(bits, i32), r.elem);
    break;
  case ElemType::Bool:
  case ElemType::I4:
  case ElemType::U4:
  case ElemType::F8E4M3: // sema refuses FP8 scalars (ScalarParamFp8)
  case ElemType::F8E5M2:
    throw LowerError("scalar parameter '" + name + "' is " + spelling(r.elem));
  }
  r.regs = {v};
  return r;
}

// `!invariant.load` (the host writes the argument block before the launch
// and the kernel only reads it) only while a cp.async ring's copies are
// lowered (invariant_args, lower_tile_mma.cpp): LLVM then hoists the
// tensor's pointer and extents out of the K loop instead of reloading them
// every step. Everywhere else the loads stay in place: hoisted out of every
// loop, their longer live ranges spilled prefill_attention (56 bytes on
// sm_80 at 255 registers); a reload there is an L1 hit.
llvm::Value *LowerCtx::arg_slot_i64(unsigned slot) { return arg_load(i64, slot); }
llvm::Value *LowerCtx::arg_slot_ptr(unsigned slot) { return arg_load(ptr, slot); }
llvm::Value *LowerCtx::arg_load(llvm::Type *ty, unsigned slot) {
  if (args_in_place) {
    return b.CreateLoad(ty, b.CreateGEP(i64, args, b.getInt64(slot)));
  }
  if (invariant_args && !ring_args_fill)
    if (auto it = ring_args.find({slot, ty}); it != ring_args.end())
      return it->second;
  llvm::LoadInst *ld = b.CreateLoad(ty, b.CreateGEP(i64, args, b.getInt64(slot)));
  if (invariant_args)
    ld->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(ctx, {}));
  if (ring_args_fill)
    ring_args[{slot, ty}] = ld;
  return ld;
}

llvm::Value *LowerCtx::floordiv(llvm::Value *a, llvm::Value *d) {
  // q = a / d rounded toward -inf: truncating quotient, minus one when the
  // remainder is non-zero and its sign differs from the divisor's.
  llvm::Value *q = b.CreateSDiv(a, d);
  llvm::Value *r = b.CreateSRem(a, d);
  llvm::Value *fix = b.CreateAnd(
      b.CreateICmpNE(r, b.getInt64(0)),
      b.CreateICmpNE(b.CreateICmpSLT(r, b.getInt64(0)), b.CreateICmpSLT(d, b.getInt64(0))));
  return b.CreateSub(q, b.CreateZExt(fix, i64));
}

llvm::Value *LowerCtx::floormod(llvm::Value *a, llvm::Value *d) {
  llvm::Value *r = b.CreateSRem(a, d);
  llvm::Value *fix = b.CreateAnd(
      b.CreateICmpNE(r, b.getInt64(0)),
      b.CreateICmpNE(b.CreateICmpSLT(r, b.getInt64(0)), b.CreateICmpSLT(d, b.getInt64(0))));
  return b.CreateSelect(fix, b.CreateAdd(r, d), r);
}

llvm::Value *LowerCtx::cdiv(llvm::Value *a, llvm::Value *d) {
  return floordiv(b.CreateSub(b.CreateAdd(a, d), b.getInt64(1)), d);
}

static const ConstDecl *find_const(const Program &p, const Expr &e) {
  if (e.ref_index >= 0 && size_t(e.ref_index) < p.consts.size() &&
      p.consts[size_t(e.ref_index)].name == e.name)
    return &p.consts[size_t(e.ref_index)];
  for (const ConstDecl &c : p.consts)
    if (c.name == e.name)
      return &c;
  return nullptr;
}

llvm::Value *LowerCtx::index(const Expr &e) {
  switch (e.kind) {
  case ExprKind::IntLit:
    return b.getInt64(uint64_t(e.int_value));
  case ExprKind::Name:
    switch (e.ref) {
    case NameRef::Const: {
      const ConstDecl *c = find_const(*plan.program, e);
      if (!c)
        throw LowerError("unknown const '" + e.name + "'");
      return b.getInt64(uint64_t(c->folded));
    }
    case NameRef::Dim: {
      int i = e.ref_index;
      const auto &dims = plan.kernel->dims;
      if (i < 0 || size_t(i) >= dims.size() || dims[size_t(i)].name != e.name) {
        i = -1;
        for (size_t d = 0; d < dims.size(); ++d)
          if (dims[d].name == e.name)
            i = int(d);
      }
      if (i < 0)
        throw LowerError("unknown dim '" + e.name + "'");
      return arg_slot_i64(dim_slot(i));
    }
    case NameRef::TaskIndex: {
      int i = e.ref_index;
      if (task &&
          (i < 0 || size_t(i) >= task->domain.size() || task->domain[size_t(i)].name != e.name)) {
        i = -1;
        for (size_t d = 0; d < task->domain.size(); ++d)
          if (task->domain[d].name == e.name)
            i = int(d);
      }
      if (i < 0 || size_t(i) >= task_vars.size() || !task_vars[size_t(i)])
        throw LowerError("task index '" + e.name + "' used before it is defined");
      return task_vars[size_t(i)];
    }
    default:
      throw LowerError("name '" + e.name + "' is not an index value");
    }
  case ExprKind::Unary:
    if (e.un_op == UnOp::Neg)
      return b.CreateNeg(index(*e.args[0]));
    if (e.un_op == UnOp::BitNot && e.sym && e.sym->as_constant()) // folded by sema
      return b.getInt64(uint64_t(*e.sym->as_constant()));
    break;
  case ExprKind::Binary: {
    if (e.sym) // a bit operator of constants, folded by sema
      if (auto c = e.sym->as_constant(); c && is_bit_op(e.bin_op))
        return b.getInt64(uint64_t(*c));
    llvm::Value *l = index(*e.args[0]), *r = index(*e.args[1]);
    switch (e.bin_op) {
    case BinOp::Add:
      return b.CreateAdd(l, r);
    case BinOp::Sub:
      return b.CreateSub(l, r);
    case BinOp::Mul:
      return b.CreateMul(l, r);
    case BinOp::Div:
      return floordiv(l, r);
    case BinOp::Mod:
      return floormod(l, r);
    default:
      break;
    }
    break;
  }
  case ExprKind::Call:
    if (e.args.size() == 2 && e.kwargs.empty()) {
      llvm::Value *l = index(*e.args[0]), *r = index(*e.args[1]);
      if (e.builtin == Builtin::Cdiv)
        return cdiv(l, r);
      if (e.builtin == Builtin::Min)
        return b.CreateSelect(b.CreateICmpSLT(l, r), l, r);
      if (e.builtin == Builtin::Max)
        return b.CreateSelect(b.CreateICmpSGT(l, r), l, r);
    }
    break;
  case ExprKind::Index:
    if (e.reads_data)
      return element_read(e);
    break;
  default:
    break;
  }
  throw LowerError(std::string("unsupported index expression (") + kind_name(e.kind) +
                   (e.name.empty() ? "" : " '" + e.name + "'") + ")");
}

llvm::Value *LowerCtx::element_read(const Expr &e) {
  // t[i, j]: one i32 or i64 element, row-major, through the machine's checked load.
  const Expr &base = *e.args[0];
  int ti = base.ref_index;
  if (base.kind != ExprKind::Name || base.ref != NameRef::Tensor || ti < 0 ||
      size_t(ti) >= plan.kernel->tensors.size())
    throw LowerError("element read of something that is not a tensor");
  const TensorDecl &t = plan.kernel->tensors[size_t(ti)];
  if (t.type.shape.size() + 1 != e.args.size())
    throw LowerError("element read of '" + t.name + "' with the wrong rank");
  llvm::Value *off = b.getInt64(0);
  for (size_t d = 0; d < t.type.shape.size(); ++d)
    off = b.CreateAdd(b.CreateMul(off, index(*t.type.shape[d])), index(*e.args[d + 1]));
  if (e.barrier_before) // an earlier store of this task may conflict (sema/hazards.h)
    m.barrier(b);
  if (t.type.elem == ElemType::I64)
    return m.global_load(b, i64, b.CreateGEP(i64, arg_slot_ptr(tensor_slot(ti)), off));
  llvm::Value *p = b.CreateGEP(i32, arg_slot_ptr(tensor_slot(ti)), off);
  return b.CreateSExt(m.global_load(b, i32, p), i64);
}

} // namespace etl
