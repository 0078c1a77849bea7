//===- sema/check_builtins.cpp - Builtin calls ------------------------------===//
//
// What this owns: the builtin functions: arity and keywords, index functions,
// load/store, constructors, casts, math, reductions and the compute builtins
// (select, arange, cumsum, argmax/argmin, transpose, reshape, dot).
//
//===----------------------------------------------------------------------===//
#include "sema/checker.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

namespace etl::sema {

/// Checks that `e` has exactly `n` positional args and only `kws` keywords.
bool Checker::arity(Expr &e, size_t n, const std::string &what,
                    std::initializer_list<const char *> kws) {
  for (const KwArg &k : e.kwargs) {
    bool known = false;
    for (const char *allowed : kws)
      known |= k.name == allowed;
    if (!known) {
      diag_.error(DiagId::UnknownKeyword, k.name_range, {e.name, k.name});
      return false;
    }
  }
  if (e.args.size() != n) {
    diag_.error(DiagId::WrongArgCount, e.range, {e.name, what, std::to_string(e.args.size())});
    return false;
  }
  return true;
}

const KwArg *Checker::kwarg(const Expr &e, const std::string &name) {
  for (const KwArg &k : e.kwargs)
    if (k.name == name)
      return &k;
  return nullptr;
}

/// A static tile shape from `zeros<f32>[TM, TN]`.
std::optional<std::vector<int64_t>> Checker::static_shape(Expr &call) {
  std::vector<int64_t> shape;
  bool ok = true;
  for (auto &s : call.shape_args) {
    std::optional<Sym> v = check_index(*s, IndexCtx::Body);
    auto c = v ? v->as_constant() : std::nullopt;
    if (v && (!c || *c <= 0)) {
      diag_.error(DiagId::TileDimNotConstant, s->range, {v->str()});
      ok = false;
    } else if (!v) {
      ok = false;
    } else {
      shape.push_back(*c);
    }
  }
  if (!ok)
    return std::nullopt;
  return shape;
}

/// `axis = k` of a reduction or expand; k must be in [0, limit).
std::optional<int64_t> Checker::axis_arg(Expr &e, size_t limit, size_t rank) {
  const KwArg *a = kwarg(e, "axis");
  if (!a) {
    diag_.error(DiagId::MissingKeyword, e.callee_range, {e.name, "axis"});
    return std::nullopt;
  }
  std::optional<Sym> v = check_index(*a->value, IndexCtx::Body);
  auto c = v ? v->as_constant() : std::nullopt;
  if (!v)
    return std::nullopt;
  if (!c || *c < 0 || size_t(*c) >= limit) {
    diag_.error(DiagId::AxisOutOfRange, a->value->range, {v->str(), std::to_string(rank)});
    return std::nullopt;
  }
  return *c;
}

/// pow(x, y): both float tiles or scalars (a float literal takes the other
/// operand's type), broadcast like `x * y`. An integer exponent is an error
/// that says to write a float (pow has one float form, exp2(y * log2 x)).
Type Checker::check_pow(Expr &e) {
  if (!arity(e, 2, "2 arguments"))
    return set(e, Type());
  Type x = check_value(*e.args[0]), y = check_value(*e.args[1]);
  if (x.kind == TypeKind::Unknown || y.kind == TypeKind::Unknown)
    return set(e, Type());
  auto is_float_value = [](const Type &t) {
    return (t.kind == TypeKind::Tile || t.kind == TypeKind::Scalar) && is_float(t.elem);
  };
  if (!is_float_value(x)) {
    diag_.error(DiagId::TileOpUnsupported, e.args[0]->range, {"pow", describe(x)});
    return set(e, Type());
  }
  if (!is_float_value(y)) {
    diag_.error(DiagId::PowExponentNotFloat, e.args[1]->range, {describe(y)});
    return set(e, Type());
  }
  if (!adopt_float_literal(x, *e.args[0], y, e.range) ||
      !adopt_float_literal(y, *e.args[1], x, e.range))
    return set(e, Type());
  auto r = arith(x, y, BinOp::Mul, e.range);
  return set(e, r ? *r : Type());
}

Type Checker::check_call(Expr &e, IndexCtx ctx) {
  const std::string &f = e.name;
  // Resolve the callee once; the later stages switch on e.builtin.
  e.builtin = find_builtin(f);
  const Builtin fn = e.builtin;
  // Index functions work everywhere.
  if (fn == Builtin::Cdiv || ((fn == Builtin::Min || fn == Builtin::Max) && e.kwargs.empty())) {
    if (!arity(e, 2, "2 arguments"))
      return set(e, Type());
    Type a = check_expr(*e.args[0], ctx), b = check_expr(*e.args[1], ctx);
    if (a.kind == TypeKind::Unknown || b.kind == TypeKind::Unknown)
      return set(e, Type());
    if (a.kind == TypeKind::Index && b.kind == TypeKind::Index) {
      const Sym &x = *e.args[0]->sym, &y = *e.args[1]->sym;
      if (fn == Builtin::Cdiv) {
        if (auto c = y.as_constant(); c && *c <= 0) {
          diag_.error(DiagId::DivisionByZero, e.range, {y.str()});
          return set(e, Type());
        }
        e.sym = Sym::cdiv(x, y);
      } else {
        e.sym = fn == Builtin::Min ? Sym::min(x, y) : Sym::max(x, y);
      }
      return set(e, index_type());
    }
    if (fn == Builtin::Cdiv) {
      diag_.error(DiagId::ExpectedIndex, e.range, {describe(a.kind == TypeKind::Index ? b : a)});
      return set(e, Type());
    }
    // Element-wise min/max of tiles.
    if (ctx != IndexCtx::Body)
      return not_in_shape(e);
    if (!adopt_float_literal(a, *e.args[0], b, e.range) ||
        !adopt_float_literal(b, *e.args[1], a, e.range))
      return set(e, Type());
    for (const Type *t : {&a, &b})
      if (t->kind != TypeKind::Index && t->elem == ElemType::Bool) {
        diag_.error(DiagId::TileOpUnsupported, e.range,
                    {f, describe(*t) + "; on bool tiles write a || b (max) or a && b (min)"});
        return set(e, Type());
      }
    auto r = arith(a, b, BinOp::Add, e.range);
    return set(e, r ? *r : Type());
  }
  if (ctx != IndexCtx::Body) {
    if (fn == Builtin::None) {
      undefined(f, e.callee_range, builtin_names(), DiagId::UnknownFunction);
      return set(e, Type());
    }
    return not_in_shape(e);
  }
  if (e.type_arg && is_packed(*e.type_arg)) {
    diag_.error(DiagId::PackedNotTensor, e.range,
                {spelling(*e.type_arg), spelling(loaded_elem(*e.type_arg))});
    return set(e, Type());
  }
  if (fn == Builtin::Load) {
    if (!arity(e, 1, "1 argument (a tensor slice)", {"pad", "mask"}))
      return set(e, Type());
    slice_arg_ = true;
    Type s = check_value(*e.args[0]);
    if (s.kind == TypeKind::Unknown)
      return set(e, Type());
    if (s.kind != TypeKind::Slice) {
      diag_.error(DiagId::ExpectedIndex, e.args[0]->range, {describe(s)});
      return set(e, Type());
    }
    if (const KwArg *pad = kwarg(e, "pad")) {
      Type p = check_value(*pad->value);
      if (p.kind != TypeKind::Unknown && p.kind != TypeKind::Scalar && p.kind != TypeKind::Index) {
        diag_.error(DiagId::ExpectedIndex, pad->value->range, {describe(p)});
        return set(e, Type());
      }
      if (float_into_int(p, tile_type(s.elem, s.tile_shape), pad->value->range))
        return set(e, Type());
    }
    if (!check_mask(e, s.tile_shape))
      return set(e, Type());
    return set(e, tile_type(loaded_elem(s.elem), s.tile_shape)); // i4 -> i8, u4 -> u8
  }
  if (fn == Builtin::Store) {
    if (std::exchange(stmt_call_, nullptr) != &e) {
      diag_.error(DiagId::StatementAsValue, e.range, {f});
      return set(e, Type());
    }
    if (!arity(e, 2, "2 arguments (a tensor slice and a tile)", {"mask"}))
      return set(e, Type());
    slice_arg_ = true;
    Type s = check_value(*e.args[0]);
    Type v = check_value(*e.args[1]);
    if (s.kind == TypeKind::Unknown || v.kind == TypeKind::Unknown)
      return set(e, Type());
    if (s.kind != TypeKind::Slice) {
      diag_.error(DiagId::ExpectedIndex, e.args[0]->range, {describe(s)});
      return set(e, Type());
    }
    if (v.kind != TypeKind::Tile) {
      diag_.error(DiagId::ExpectedTile, e.args[1]->range, {describe(v)});
      return set(e, Type());
    }
    if (is_packed(s.elem)) {
      diag_.error(DiagId::PackedStore, e.args[0]->range,
                  {e.args[0]->args[0]->name, spelling(s.elem), spelling(loaded_elem(s.elem))});
      return set(e, Type());
    }
    if (!check_mask(e, s.tile_shape))
      return set(e, Type());
    // One element (a [1] or [1, 1] tile, e.g. a reduction) stores to a
    // rank-0 slice.
    bool one = s.tile_shape.empty() && std::all_of(v.tile_shape.begin(), v.tile_shape.end(),
                                                   [](int64_t n) { return n == 1; });
    if (v.tile_shape != s.tile_shape && !one) {
      diag_.error(DiagId::StoreShapeMismatch, e.args[1]->range,
                  {shape_str(v.tile_shape), shape_str(s.tile_shape)});
      for (size_t d = 0; d < s.tile_shape.size(); ++d)
        if (const Expr *g = gather_of_dim(*e.args[0], d))
          diag_.note(DiagId::NoteGatheredDim, g->range,
                     {std::to_string(d), std::to_string(s.tile_shape[d])});
    } else if (v.elem != s.elem)
      diag_.error(DiagId::StoreElemMismatch, e.args[1]->range,
                  {spelling(v.elem), e.args[0]->args[0]->name, spelling(s.elem)});
    return set(e, Type());
  }
  if (is_atomic_fn(fn))
    return check_atomic(e, std::exchange(stmt_call_, nullptr) == &e);
  if (fn == Builtin::Zeros || fn == Builtin::Full) {
    bool full = fn == Builtin::Full;
    if (!arity(e, full ? 1 : 0, full ? "1 argument (the value)" : "no arguments"))
      return set(e, Type());
    auto shape = static_shape(e);
    if (full) {
      Type v = check_value(*e.args[0]);
      if (v.kind != TypeKind::Unknown && v.kind != TypeKind::Scalar && v.kind != TypeKind::Index) {
        diag_.error(DiagId::ExpectedIndex, e.args[0]->range, {describe(v)});
        return set(e, Type());
      }
      if (e.type_arg &&
          float_into_int(v, tile_type(*e.type_arg, shape ? *shape : std::vector<int64_t>{}),
                         e.args[0]->range))
        return set(e, Type());
    }
    if (!shape)
      return set(e, Type());
    return set(e, tile_type(e.type_arg.value_or(ElemType::F32), *shape));
  }
  if (fn == Builtin::Cast) {
    if (!arity(e, 1, "1 argument"))
      return set(e, Type());
    Type v = check_value(*e.args[0]);
    ElemType to = e.type_arg.value_or(ElemType::F32);
    if (v.kind == TypeKind::Unknown)
      return set(e, v);
    if (v.kind == TypeKind::Tile)
      return set(e, tile_type(to, v.tile_shape));
    if (v.kind == TypeKind::Scalar || v.kind == TypeKind::Index)
      return set(e, scalar_type(to));
    diag_.error(DiagId::ExpectedTile, e.args[0]->range, {describe(v)});
    return set(e, Type());
  }
  if (fn == Builtin::Pow)
    return check_pow(e);
  if (fn == Builtin::Popc) {
    if (!arity(e, 1, "1 argument"))
      return set(e, Type());
    Type v = check_value(*e.args[0]);
    if (v.kind == TypeKind::Unknown)
      return set(e, v);
    if (v.kind == TypeKind::Index) {
      diag_.error(DiagId::TileOpUnsupported, e.range, {f, kIndexBitsNote});
      return set(e, Type());
    }
    if (v.kind != TypeKind::Tile && v.kind != TypeKind::Scalar) {
      diag_.error(DiagId::ExpectedTile, e.args[0]->range, {describe(v)});
      return set(e, Type());
    }
    if (!is_integer(v.elem)) {
      diag_.error(DiagId::BitOpNotInteger, e.args[0]->range, {f, describe(v)});
      return set(e, Type());
    }
    v.elem = ElemType::I32; // a count of 0 .. 64 bits
    return set(e, v);
  }
  if (is_unary_math_fn(fn) || fn == Builtin::Abs) {
    if (!arity(e, 1, "1 argument"))
      return set(e, Type());
    Type v = check_value(*e.args[0]);
    if (v.kind == TypeKind::Unknown)
      return set(e, v);
    if ((v.kind != TypeKind::Tile && v.kind != TypeKind::Scalar) ||
        (!is_float(v.elem) && fn != Builtin::Abs)) {
      diag_.error(DiagId::TileOpUnsupported, e.range, {f, describe(v)});
      return set(e, Type());
    }
    return set(e, v);
  }
  if (fn == Builtin::Sum || fn == Builtin::Max || fn == Builtin::Min || fn == Builtin::Expand) {
    if (!arity(e, 1, "1 tile argument", {"axis"}))
      return set(e, Type());
    Type v = check_value(*e.args[0]);
    if (v.kind == TypeKind::Unknown)
      return set(e, v);
    if (v.kind != TypeKind::Tile) {
      diag_.error(DiagId::ExpectedTile, e.args[0]->range, {describe(v)});
      return set(e, Type());
    }
    size_t rank = v.tile_shape.size();
    bool expand = fn == Builtin::Expand;
    auto axis = axis_arg(e, expand ? rank + 1 : rank, rank);
    if (!axis)
      return set(e, Type());
    if (!expand && !scratch_fits(f, v, e.range))
      return set(e, Type());
    std::vector<int64_t> shape = v.tile_shape;
    if (expand) {
      shape.insert(shape.begin() + *axis, 1);
    } else {
      shape.erase(shape.begin() + *axis);
      if (shape.empty())
        shape.push_back(1);
    }
    // The sum of a bool tile counts its true elements.
    bool count = fn == Builtin::Sum && v.elem == ElemType::Bool;
    return set(e, tile_type(count ? ElemType::I32 : v.elem, shape));
  }
  if (auto t = check_compute_call(e))
    return set(e, *t);
  undefined(f, e.callee_range, builtin_names(), DiagId::UnknownFunction);
  for (auto &a : e.args)
    check_value(*a);
  return set(e, Type());
}

/// atomic_add/max/min(slice, v, mask=) and atomic_cas(slice, expected,
/// desired, mask=): each value is a tile of the tensor's element type whose
/// shape broadcasts to the slice's (a one-element tile also fits a rank-0
/// slice), or a scalar, index or literal that broadcasts; cas needs an
/// integer tensor. As a statement the call has no type; as a value it is the
/// elements' old values, a tile of the slice's shape.
Type Checker::check_atomic(Expr &e, bool statement) {
  const Builtin fn = e.builtin;
  const bool cas = fn == Builtin::AtomicCas;
  if (!arity(e, cas ? 3 : 2,
             cas ? "3 arguments (a tensor slice, the expected and the desired values)"
                 : "2 arguments (a tensor slice and a value)",
             {"mask"}))
    return set(e, Type());
  slice_arg_ = true;
  Type s = check_value(*e.args[0]);
  bool ok = s.kind != TypeKind::Unknown;
  if (ok && s.kind != TypeKind::Slice) {
    diag_.error(DiagId::ExpectedIndex, e.args[0]->range, {describe(s)});
    ok = false;
  }
  std::vector<Type> vals;
  for (size_t i = 1; i < e.args.size(); ++i)
    vals.push_back(check_value(*e.args[i]));
  if (!ok)
    return set(e, Type());
  const std::string &tensor = e.args[0]->args.empty() ? e.name : e.args[0]->args[0]->name;
  if (cas && !is_integer(s.elem)) {
    diag_.error(DiagId::AtomicCasNotInteger, e.args[0]->range, {tensor, spelling(s.elem)});
    return set(e, Type());
  }
  // The types with a hardware atomic or a cas loop (lower/lower_atomic.cpp);
  // packed, narrow and fp8 elements share a word with their neighbours.
  const ElemType el = s.elem;
  if (el != ElemType::F32 && el != ElemType::F16 && el != ElemType::BF16 && el != ElemType::I32 &&
      el != ElemType::I64) {
    diag_.error(DiagId::AtomicElemType, e.args[0]->range, {e.name, tensor, spelling(el)});
    return set(e, Type());
  }
  Type target = tile_type(s.elem, s.tile_shape);
  for (size_t i = 0; i < vals.size(); ++i) {
    const Type &v = vals[i];
    const Expr &arg = *e.args[i + 1];
    if (v.kind == TypeKind::Unknown)
      return set(e, Type());
    if (v.kind != TypeKind::Tile && v.kind != TypeKind::Scalar && v.kind != TypeKind::Index) {
      diag_.error(DiagId::ExpectedTile, arg.range, {describe(v)});
      return set(e, Type());
    }
    if (float_into_int(v, target, arg.range))
      return set(e, Type());
    if (v.kind == TypeKind::Index || (v.kind == TypeKind::Scalar && is_literal(arg)))
      continue; // converted to the tensor's type, like a literal in `x * 2`
    bool one = s.tile_shape.empty() && numel(v.tile_shape) == 1;
    auto b = broadcast(v.tile_shape, s.tile_shape);
    if (!one && (!b || *b != s.tile_shape)) {
      diag_.error(DiagId::AtomicShapeMismatch, arg.range,
                  {e.name, shape_str(v.tile_shape), shape_str(s.tile_shape)});
      return set(e, Type());
    }
    if (v.elem != s.elem) {
      diag_.error(DiagId::AtomicElemMismatch, arg.range,
                  {e.name, describe(v), tensor, spelling(s.elem)});
      return set(e, Type());
    }
    // A smaller tile is broadcast through shared scratch.
    if (v.kind == TypeKind::Tile && !one && numel(v.tile_shape) != numel(s.tile_shape) &&
        !scratch_fits(e.name, v, arg.range))
      return set(e, Type());
  }
  if (!check_mask(e, s.tile_shape))
    return set(e, Type());
  return set(e, statement ? Type() : target);
}

/// A tile operand of a compute builtin; reports anything else.
std::optional<Type> Checker::tile_arg(Expr &arg) {
  Type v = check_value(arg);
  if (v.kind == TypeKind::Unknown)
    return std::nullopt;
  if (v.kind != TypeKind::Tile) {
    diag_.error(DiagId::ExpectedTile, arg.range, {describe(v)});
    return std::nullopt;
  }
  return v;
}

/// A literal (`1.5`, `-inf`) that may take the element type of the other operand.
bool Checker::is_literal(const Expr &e) {
  if (e.kind == ExprKind::Unary && e.un_op == UnOp::Neg)
    return is_literal(*e.args[0]);
  return e.kind == ExprKind::FloatLit || e.kind == ExprKind::IntLit ||
         (e.kind == ExprKind::Name && e.ref == NameRef::Builtin);
}

/// A float literal operand takes the other operand's float type
/// (`select(m, h, 0.0)` or `h > 0.0` with h an f16 tile).
void Checker::adopt_literal(Type &t, const Expr &e, const Type &other) {
  if (t.kind == TypeKind::Scalar && is_literal(e) && other.kind != TypeKind::Index &&
      other.kind != TypeKind::Unknown && is_float(t.elem) && is_float(other.elem))
    t.elem = other.elem;
}

/// Checks the compute builtins; nullopt if `e` is none of them. An error
/// yields an Unknown type.
std::optional<Type> Checker::check_compute_call(Expr &e) {
  const std::string &f = e.name;
  const Builtin fn = e.builtin;
  if (fn == Builtin::Select) {
    if (!arity(e, 3, "3 arguments (a bool condition and two values)"))
      return Type();
    Type c = check_value(*e.args[0]);
    Type x = check_value(*e.args[1]), y = check_value(*e.args[2]);
    if (c.kind == TypeKind::Unknown || x.kind == TypeKind::Unknown || y.kind == TypeKind::Unknown)
      return Type();
    if ((c.kind != TypeKind::Tile && c.kind != TypeKind::Scalar) || c.elem != ElemType::Bool) {
      diag_.error(DiagId::ExpectedBool, e.args[0]->range, {describe(c)});
      return Type();
    }
    for (size_t i = 1; i < 3; ++i) {
      Type &t = i == 1 ? x : y;
      if (t.kind != TypeKind::Tile && t.kind != TypeKind::Scalar && t.kind != TypeKind::Index) {
        diag_.error(DiagId::ExpectedTile, e.args[i]->range, {describe(t)});
        return Type();
      }
    }
    adopt_literal(x, *e.args[1], y);
    adopt_literal(y, *e.args[2], x);
    auto v = unify(x, y, e.range);
    if (!v)
      return Type();
    Type cv = c;
    cv.elem = v->elem;
    auto r = unify(cv, *v, e.range);
    return r ? *r : Type();
  }
  if (fn == Builtin::Arange) {
    if (!arity(e, 0, "no arguments"))
      return Type();
    ElemType t = e.type_arg.value_or(ElemType::I32);
    if (e.shape_args.size() != 1) {
      diag_.error(DiagId::WrongArgCount, e.range,
                  {"arange", "1 extent (`arange<i32>[N]`)", std::to_string(e.shape_args.size())});
      return Type();
    }
    auto shape = static_shape(e);
    if (!shape)
      return Type();
    if (t == ElemType::Bool) {
      diag_.error(DiagId::TileOpUnsupported, e.range, {"arange", "bool tiles"});
      return Type();
    }
    return tile_type(t, *shape);
  }
  if (fn == Builtin::Cumsum || fn == Builtin::Argmax || fn == Builtin::Argmin) {
    if (!arity(e, 1, "1 tile argument", {"axis"}))
      return Type();
    auto v = tile_arg(*e.args[0]);
    if (!v)
      return Type();
    size_t rank = v->tile_shape.size();
    auto axis = axis_arg(e, rank, rank);
    if (!axis)
      return Type();
    if (!scratch_fits(f, *v, e.range))
      return Type();
    if (fn == Builtin::Cumsum) {
      if (v->elem == ElemType::Bool) {
        diag_.error(DiagId::TileOpUnsupported, e.range,
                    {f, describe(*v) + "; convert it with cast<i32>(...)"});
        return Type();
      }
      return *v;
    }
    std::vector<int64_t> shape = v->tile_shape;
    shape.erase(shape.begin() + *axis);
    if (shape.empty())
      shape.push_back(1);
    return tile_type(ElemType::I32, shape);
  }
  if (fn == Builtin::Transpose) {
    if (!arity(e, 1, "1 tile argument"))
      return Type();
    auto v = tile_arg(*e.args[0]);
    if (!v)
      return Type();
    if (v->tile_shape.size() != 2) {
      diag_.error(DiagId::TransposeRank, e.args[0]->range, {describe(*v)});
      return Type();
    }
    if (!scratch_fits(f, *v, e.range))
      return Type();
    return tile_type(v->elem, {v->tile_shape[1], v->tile_shape[0]});
  }
  if (fn == Builtin::Reshape) { // reshape(t, d0, d1, ...): same elements, row-major
    if (e.args.size() < 2 || !e.kwargs.empty()) {
      diag_.error(DiagId::WrongArgCount, e.range,
                  {"reshape", "a tile and the new extents", std::to_string(e.args.size())});
      return Type();
    }
    auto v = tile_arg(*e.args[0]);
    std::vector<int64_t> shape;
    int64_t n = 1, have = 1;
    for (size_t i = 1; i < e.args.size(); ++i) {
      auto d = check_index(*e.args[i], IndexCtx::Const);
      if (!d)
        return Type();
      auto c = d->as_constant();
      if (!c || *c <= 0) {
        diag_.error(DiagId::NonPositiveExtent, e.args[i]->range, {"extent", d->str()});
        return Type();
      }
      shape.push_back(*c);
      n *= *c;
    }
    if (!v)
      return Type();
    for (int64_t d : v->tile_shape)
      have *= d;
    if (n != have) {
      diag_.error(DiagId::ReshapeMismatch, e.range,
                  {describe(*v), std::to_string(have), shape_str(shape), std::to_string(n)});
      return Type();
    }
    return tile_type(v->elem, shape);
  }
  if (fn == Builtin::Dot) {
    if (!arity(e, 2, "2 tile arguments", {"precision"}))
      return Type();
    // `precision = ieee | tf32`: a word, not a value (never resolved as a name).
    const KwArg *prec = kwarg(e, "precision");
    bool tf32 = false;
    if (prec) {
      const Expr &v = *prec->value;
      bool word = v.kind == ExprKind::Name && (v.name == "ieee" || v.name == "tf32");
      if (!word) {
        diag_.error(DiagId::DotPrecisionValue, v.range,
                    {v.kind == ExprKind::Name ? "'" + v.name + "'" : "an expression"});
        return Type();
      }
      tf32 = v.name == "tf32";
    }
    auto a = tile_arg(*e.args[0]);
    auto c = tile_arg(*e.args[1]);
    if (!a || !c)
      return Type();
    for (const Type *t : {&*a, &*c})
      if (!is_float(t->elem)) {
        diag_.error(DiagId::TileOpUnsupported, e.range,
                    {"dot", describe(*t) + "; convert it with cast<f32>(...)"});
        return Type();
      }
    if (tf32 && (a->elem != ElemType::F32 || c->elem != ElemType::F32)) {
      diag_.error(DiagId::DotTf32Operands, prec->value->range, {describe(*a), describe(*c)});
      return Type();
    }
    const auto &as = a->tile_shape, &cs = c->tile_shape;
    if (as.empty() || as.size() > 2 || cs.size() != 2) {
      diag_.error(DiagId::DotRank, e.range, {describe(*a), describe(*c)});
      return Type();
    }
    if (as.back() != cs[0]) {
      diag_.error(DiagId::DotInnerMismatch, e.range,
                  {shape_str(as), std::to_string(as.back()), shape_str(cs), std::to_string(cs[0])});
      return Type();
    }
    // The scratch its operands stage through depends on the layouts the
    // tile IR picks (tile/smem.cpp, shared_need): the driver checks the
    // body's shared-memory plan against the budget (SmemOverBudget).
    std::vector<int64_t> shape = {cs[1]};
    if (as.size() == 2)
      shape.insert(shape.begin(), as[0]);
    return tile_type(ElemType::F32, shape);
  }
  return std::nullopt;
}

Type Checker::not_in_shape(Expr &e) {
  diag_.error(DiagId::ExpectedIndex, e.range, {"a call to '" + e.name + "'"});
  return set(e, Type());
}

} // namespace etl::sema
