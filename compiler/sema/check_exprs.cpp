//===- sema/check_exprs.cpp - Expressions -----------------------------------===//
//
// What this owns: index expressions and their Syms, names, unary and binary
// operators, comparisons and logic, type unification and numeric promotion.
//
//===----------------------------------------------------------------------===//
#include "sema/checker.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

namespace etl::sema {

/// Checks an integer index expression; returns its Sym, or nullopt after
/// reporting an error (or if an operand already had one).
std::optional<Sym> Checker::check_index(Expr &e, IndexCtx ctx) {
  Type t = check_expr(e, ctx);
  if (t.kind == TypeKind::Unknown)
    return std::nullopt;
  if (t.kind != TypeKind::Index || !e.sym) {
    if (!report_scalar_index(e))
      diag_.error(DiagId::ExpectedIndex, e.range, {describe(t)});
    e.type = Type();
    return std::nullopt;
  }
  return e.sym;
}

/// Records `t` as the type of `e`; a tile with more than kMaxTileElems
/// elements is reported here, at the expression that makes it.
Type Checker::set(Expr &e, Type t) {
  if (t.kind == TypeKind::Tile) {
    int64_t n = 1;
    bool overflow = false;
    for (int64_t d : t.tile_shape)
      overflow = overflow || __builtin_mul_overflow(n, d, &n);
    if (overflow || n > kMaxTileElems) {
      diag_.error(DiagId::TileTooLarge, e.range,
                  {shape_str(t.tile_shape), overflow ? "more than 2^63" : std::to_string(n),
                   std::to_string(kMaxTileElems)});
      t = Type();
    }
  }
  e.type = t;
  return t;
}

Type Checker::check_expr(Expr &e, IndexCtx ctx) {
  switch (e.kind) {
  case ExprKind::IntLit:
    e.sym = Sym(e.int_value);
    return set(e, index_type());
  case ExprKind::FloatLit:
    return set(e, scalar_type(ElemType::F32));
  case ExprKind::Name:
    return check_name(e, ctx);
  case ExprKind::Unary:
    return check_unary(e, ctx);
  case ExprKind::Binary:
    return check_binary(e, ctx);
  case ExprKind::Call:
    return check_call(e, ctx);
  case ExprKind::Index:
    if (ctx == IndexCtx::Domain)
      return check_element_read(e, ctx);
    if (ctx != IndexCtx::Body) {
      diag_.error(DiagId::ExpectedIndex, e.range, {"a tensor slice"});
      return set(e, Type());
    }
    // In a body, `t[i, j]` outside load/store (no range component) reads
    // one element: `pos < kv_len[b]`, `x[offset[e] + m * TM .. +TM]`.
    if (!std::exchange(slice_arg_, false) && !has_range_component(e))
      return check_element_read(e, ctx);
    return check_slice(e);
  case ExprKind::Range: // the grammar allows ranges only inside slices
    internal_error("range outside a slice");
  }
  return set(e, Type());
}

Type Checker::check_name(Expr &e, IndexCtx ctx) {
  const Binding *b = lookup(e.name);
  if (!b) {
    if (e.name == "inf") {
      e.ref = NameRef::Builtin;
      return set(e, scalar_type(ElemType::F32));
    }
    undefined(e.name, e.range, visible_names(), DiagId::UndefinedName);
    return set(e, Type());
  }
  e.ref = b->ref;
  e.ref_index = b->index;
  auto only_dims = [&]() {
    const char *where = ctx == IndexCtx::Const   ? "a constant"
                        : ctx == IndexCtx::Range ? "a task range"
                                                 : "a shape";
    diag_.error(DiagId::ShapeUsesNonDim, e.range, {e.name, where});
    return set(e, Type());
  };
  switch (b->ref) {
  case NameRef::Const:
    if (prog_.consts[b->index].is_float) // a scalar, like the literal it names
      return set(e, scalar_type(ElemType::F32));
    e.sym = Sym(prog_.consts[b->index].folded);
    return set(e, index_type());
  case NameRef::Dim:
    if (ctx == IndexCtx::Const)
      return only_dims();
    e.sym = Sym::symbol(e.name);
    return set(e, index_type());
  case NameRef::TaskIndex:
  case NameRef::LoopVar:
    if (ctx == IndexCtx::Shape || ctx == IndexCtx::Const || ctx == IndexCtx::Range)
      return only_dims();
    e.sym = Sym::symbol(e.name);
    return set(e, index_type());
  case NameRef::Tensor: {
    Type t;
    t.kind = TypeKind::Tensor;
    t.elem = kernel_->tensors[b->index].type.elem;
    t.tensor_shape = kernel_->tensors[b->index].shape;
    return set(e, t);
  }
  case NameRef::Scalar:
    if (ctx != IndexCtx::Body)
      return scalar_param_misuse(e, ctx);
    return set(e, scalar_type(kernel_->scalars[b->index].elem));
  case NameRef::Local: {
    const LocalVar &lv = task_->locals[b->index];
    if (lv.type.kind == TypeKind::Index) {
      e.sym = lv.sym;
      e.reads_data = lv.reads_data;
    }
    return set(e, lv.type);
  }
  case NameRef::Unresolved: // an event used as a value
    diag_.error(DiagId::ExpectedIndex, e.range, {"an event"});
    return set(e, Type());
  case NameRef::Builtin:
    break;
  }
  return set(e, Type());
}

Type Checker::scalar_param_misuse(Expr &e, IndexCtx ctx) {
  if (ctx == IndexCtx::Domain && !in_data_range_)
    diag_.error(DiagId::ScalarParamInEvent, e.range, {e.name});
  else if (ctx == IndexCtx::Shape && in_where_)
    diag_.error(DiagId::ScalarParamInWhere, e.range, {e.name});
  else
    diag_.error(
        DiagId::ScalarParamInShape, e.range,
        {e.name, ctx == IndexCtx::Range || ctx == IndexCtx::Domain ? "a task range" : "a shape"});
  if (is_integer(kernel_->scalars[size_t(e.ref_index)].elem))
    diag_.note(DiagId::NoteScalarParamUseDim, e.range, {e.name});
  return set(e, Type());
}

bool Checker::report_scalar_index(const Expr &e) {
  if (e.kind == ExprKind::Name && e.ref == NameRef::Scalar && kernel_) {
    ElemType t = kernel_->scalars[size_t(e.ref_index)].elem;
    diag_.error(DiagId::ScalarParamAsIndex, e.range, {e.name, spelling(t)});
    if (is_integer(t))
      diag_.note(DiagId::NoteScalarParamUseDim, e.range, {e.name});
    return true;
  }
  for (const ExprPtr &a : e.args)
    if (a && report_scalar_index(*a))
      return true;
  return false;
}

Type Checker::check_unary(Expr &e, IndexCtx ctx) {
  Type t = check_expr(*e.args[0], ctx);
  if (t.kind == TypeKind::Unknown)
    return set(e, t);
  if (e.un_op == UnOp::Neg) {
    if (t.kind == TypeKind::Index) {
      e.sym = -*e.args[0]->sym;
      return set(e, t);
    }
    if ((t.kind == TypeKind::Scalar || t.kind == TypeKind::Tile) && t.elem != ElemType::Bool)
      return set(e, t);
  }
  if (e.un_op == UnOp::BitNot) {
    if (t.kind == TypeKind::Index) {
      if (auto c = e.args[0]->sym ? e.args[0]->sym->as_constant() : std::nullopt) { // `~0xF`
        e.sym = Sym(~*c);
        return set(e, t);
      }
      diag_.error(DiagId::TileOpUnsupported, e.range, {"~", kIndexBitsNote});
      return set(e, Type());
    }
    if (t.kind == TypeKind::Scalar || t.kind == TypeKind::Tile) {
      if (is_integer(t.elem))
        return set(e, t);
      diag_.error(DiagId::BitOpNotInteger, e.args[0]->range, {"~", describe(t)});
      return set(e, Type());
    }
  }
  if (e.un_op == UnOp::Not && t.kind != TypeKind::Index) {
    if ((t.kind == TypeKind::Scalar || t.kind == TypeKind::Tile) && t.elem == ElemType::Bool)
      return set(e, t);
    diag_.error(DiagId::ExpectedBool, e.args[0]->range, {describe(t)});
    return set(e, Type());
  }
  diag_.error(DiagId::TileOpUnsupported, e.range, {spelling(e.un_op), describe(t)});
  return set(e, Type());
}

Type Checker::check_binary(Expr &e, IndexCtx ctx) {
  Type a = check_expr(*e.args[0], ctx);
  Type b = check_expr(*e.args[1], ctx);
  if (a.kind == TypeKind::Unknown || b.kind == TypeKind::Unknown)
    return set(e, Type());
  if (a.kind == TypeKind::Index && b.kind == TypeKind::Index) {
    const Sym &x = *e.args[0]->sym, &y = *e.args[1]->sym;
    switch (e.bin_op) {
    case BinOp::Add:
      e.sym = x + y;
      break;
    case BinOp::Sub:
      e.sym = x - y;
      break;
    case BinOp::Mul:
      e.sym = x * y;
      break;
    case BinOp::Div:
    case BinOp::Mod:
      if (auto c = y.as_constant(); c && *c <= 0) {
        diag_.error(DiagId::DivisionByZero, e.range, {e.args[1]->sym->str()});
        return set(e, Type());
      }
      e.sym = e.bin_op == BinOp::Div ? Sym::floordiv(x, y) : Sym::mod(x, y);
      break;
    default:
      // In a task body, comparing two indices gives a bool scalar.
      if (ctx == IndexCtx::Body && is_comparison(e.bin_op))
        return set(e, scalar_type(ElemType::Bool));
      if (is_bit_op(e.bin_op)) {
        // Constant operands fold (`1 << 7`, `MASK & 0xF0`: consts, shapes);
        // others have no symbolic form for the prover.
        auto cx = x.as_constant(), cy = y.as_constant();
        if (!cx || !cy) {
          diag_.error(DiagId::TileOpUnsupported, e.range, {spelling(e.bin_op), kIndexBitsNote});
          return set(e, Type());
        }
        e.sym = Sym(fold_bits(e.bin_op, *cx, *cy));
        return set(e, index_type());
      }
      diag_.error(DiagId::TileOpUnsupported, e.range,
                  {spelling(e.bin_op), "index expressions outside `where`"});
      return set(e, Type());
    }
    return set(e, index_type());
  }
  if (is_comparison(e.bin_op) || e.bin_op == BinOp::And || e.bin_op == BinOp::Or) {
    auto r = logic(a, b, e);
    return set(e, r ? *r : Type());
  }
  if (is_bit_op(e.bin_op)) {
    auto r = bits(a, b, e);
    return set(e, r ? *r : Type());
  }
  if (!adopt_float_literal(a, *e.args[0], b, e.range) ||
      !adopt_float_literal(b, *e.args[1], a, e.range))
    return set(e, Type());
  auto r = arith(a, b, e.bin_op, e.range);
  return set(e, r ? *r : Type());
}

/// `a op b` of two constant indices (i64): shift amounts modulo 64, `>>`
/// arithmetic, as on an i64 tile.
int64_t Checker::fold_bits(BinOp op, int64_t a, int64_t b) {
  uint64_t ua = uint64_t(a), s = uint64_t(b) & 63u;
  switch (op) {
  case BinOp::BitAnd:
    return a & b;
  case BinOp::BitOr:
    return a | b;
  case BinOp::BitXor:
    return a ^ b;
  case BinOp::Shl:
    return int64_t(ua << s);
  default: // Shr
    return a >> s;
  }
}

bool Checker::is_comparison(BinOp op) {
  return op == BinOp::Eq || op == BinOp::Ne || op == BinOp::Lt || op == BinOp::Le ||
         op == BinOp::Gt || op == BinOp::Ge;
}

/// `& | ^ << >>` of integer tiles and scalars (an index or integer literal
/// adopts the other operand's type); the result has the operands' type.
std::optional<Type> Checker::bits(Type a, Type b, Expr &e) {
  for (size_t i = 0; i < 2; ++i) {
    const Type &t = i ? b : a;
    if (t.kind == TypeKind::Tensor || t.kind == TypeKind::Slice) {
      diag_.error(DiagId::TileOpUnsupported, e.range,
                  {spelling(e.bin_op), describe(t) + "; load(...) it into a tile first"});
      return std::nullopt;
    }
    if (t.kind != TypeKind::Index && !is_integer(t.elem)) {
      diag_.error(DiagId::BitOpNotInteger, e.args[i]->range, {spelling(e.bin_op), describe(t)});
      return std::nullopt;
    }
  }
  return unify(a, b, e.range);
}

/// Comparisons (numeric operands, broadcast, bool result) and `&&`/`||`
/// (bool operands) of tiles and scalars.
std::optional<Type> Checker::logic(Type a, Type b, Expr &e) {
  for (const Type *t : {&a, &b})
    if (t->kind == TypeKind::Tensor || t->kind == TypeKind::Slice) {
      diag_.error(DiagId::TileOpUnsupported, e.range,
                  {spelling(e.bin_op), describe(*t) + "; load(...) it into a tile first"});
      return std::nullopt;
    }
  if (!is_comparison(e.bin_op)) {
    for (size_t i = 0; i < 2; ++i) {
      const Type &t = i ? b : a;
      if (t.kind == TypeKind::Index || t.elem != ElemType::Bool) {
        diag_.error(DiagId::ExpectedBool, e.args[i]->range, {describe(t)});
        return std::nullopt;
      }
    }
  }
  adopt_literal(a, *e.args[0], b);
  adopt_literal(b, *e.args[1], a);
  auto r = unify(a, b, e.range);
  if (!r)
    return std::nullopt;
  r->elem = ElemType::Bool;
  return r;
}

/// The common type of two element-wise operands: an index adopts the other
/// operand's element type, element types must match, shapes broadcast.
std::optional<Type> Checker::unify(Type a, Type b, SourceRange r) {
  if (a.kind == TypeKind::Index && b.kind == TypeKind::Index)
    return scalar_type(ElemType::I32);
  if (a.kind == TypeKind::Index)
    a = scalar_type(b.elem);
  if (b.kind == TypeKind::Index)
    b = scalar_type(a.elem);
  if (a.elem != b.elem) {
    diag_.error(DiagId::ElemTypeMismatch, r, {spelling(a.elem), spelling(b.elem)});
    return std::nullopt;
  }
  if (a.kind == TypeKind::Scalar && b.kind == TypeKind::Scalar)
    return a;
  if (a.kind == TypeKind::Scalar)
    return b;
  if (b.kind == TypeKind::Scalar)
    return a;
  auto shape = broadcast(a.tile_shape, b.tile_shape);
  if (!shape) {
    diag_.error(DiagId::BroadcastMismatch, r, {shape_str(a.tile_shape), shape_str(b.tile_shape)});
    return std::nullopt;
  }
  // Broadcasting a smaller tile re-lays it out through shared scratch.
  for (const Type *t : {&a, &b})
    if (numel(t->tile_shape) != numel(*shape) && !scratch_fits("broadcast", *t, r))
      return std::nullopt;
  return tile_type(a.elem, *shape);
}

/// `1.5`, `-2.0`, `inf`, `-inf`, or the name of a float `const`.
bool Checker::is_float_literal(const Expr &e) const {
  if (e.kind == ExprKind::Unary && e.un_op == UnOp::Neg)
    return is_float_literal(*e.args[0]);
  if (e.kind == ExprKind::Name && e.ref == NameRef::Const)
    return prog_.consts[size_t(e.ref_index)].is_float;
  return e.kind == ExprKind::FloatLit || (e.kind == ExprKind::Name && e.ref == NameRef::Builtin);
}

/// The value of a float constant's initialiser: a float literal, possibly
/// negated (checked before names are resolved, so `inf` is spelled out).
std::optional<double> Checker::float_literal_value(const Expr &e) {
  if (e.kind == ExprKind::Unary && e.un_op == UnOp::Neg) {
    auto v = float_literal_value(*e.args[0]);
    return v ? std::optional<double>(-*v) : std::nullopt;
  }
  if (e.kind == ExprKind::FloatLit)
    return e.float_value;
  return std::nullopt;
}

/// Typing rule for float literals: one combined with a float tile or scalar
/// takes its element type (`h * 0.5` stays f16); one combined with an
/// integer tile or scalar is an error. `lit` is the literal's type.
bool Checker::adopt_float_literal(Type &lit, const Expr &lit_expr, const Type &other,
                                  SourceRange r) {
  if (!is_float_literal(lit_expr) ||
      (other.kind != TypeKind::Tile && other.kind != TypeKind::Scalar))
    return true;
  if (!is_float(other.elem)) {
    diag_.error(DiagId::FloatLiteralWithInt, r, {describe(other)});
    return false;
  }
  lit.elem = other.elem;
  return true;
}

/// A float value (a float literal, `inf`, a float const) where an integer
/// tile is made (full<i32>, pad of an i32 load): reported, true.
bool Checker::float_into_int(const Type &v, const Type &target, SourceRange r) {
  if (v.kind != TypeKind::Scalar || !is_float(v.elem) || is_float(target.elem))
    return false;
  diag_.error(DiagId::FloatLiteralWithInt, r, {describe(target)});
  return true;
}

/// An op that re-lays tile `v` out through the shared scratch area
/// (reductions, scans, argmax, transpose: lower/body_lowerer.h) fits the
/// smallest target's budget; else reported at the op, false.
bool Checker::scratch_fits(const std::string &op, const Type &v, SourceRange r) {
  int64_t n = 1;
  for (int64_t d : v.tile_shape)
    n *= d;
  int64_t bytes = n * (v.elem == ElemType::I64 ? 8 : 4);
  if (bytes <= scratch_limit())
    return true;
  diag_.error(DiagId::ScratchTooLarge, r,
              {op, describe(v), std::to_string(bytes), std::to_string(scratch_limit())});
  return false;
}

/// Element-wise arithmetic of tiles and scalars. Integer indices and
/// literals mixed with float values take the float's type.
std::optional<Type> Checker::arith(Type a, Type b, BinOp op, SourceRange r) {
  static const std::set<BinOp> ok = {BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Mod};
  for (const Type *t : {&a, &b})
    if (t->kind == TypeKind::Tensor || t->kind == TypeKind::Slice) {
      diag_.error(DiagId::TileOpUnsupported, r,
                  {spelling(op), describe(*t) + "; load(...) it into a tile first"});
      return std::nullopt;
    }
  if (!ok.count(op)) {
    diag_.error(DiagId::TileOpUnsupported, r, {spelling(op), "tiles"});
    return std::nullopt;
  }
  for (const Type *t : {&a, &b})
    if (t->kind != TypeKind::Index && t->elem == ElemType::Bool) {
      diag_.error(DiagId::TileOpUnsupported, r,
                  {spelling(op), describe(*t) + "; convert it with cast<i32>(...)"});
      return std::nullopt;
    }
  auto t = unify(a, b, r);
  if (t && op == BinOp::Mod && !is_integer(t->elem)) {
    diag_.error(DiagId::TileOpUnsupported, r, {spelling(op), describe(*t) + " (only integers)"});
    return std::nullopt;
  }
  return t;
}

} // namespace etl::sema
