//===- sema/check_slices.cpp - Slices ---------------------------------------===//
//
// What this owns: tensor slices (scalar indices, ranges, gathers) and masks of
// load/store.
//
//===----------------------------------------------------------------------===//
#include "sema/checker.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

namespace etl::sema {

/// A slice's components: scalar indices, ranges `lo .. hi` / `lo .. +n`
/// (constant extent), and gather indices (1-D i32/i64 tiles). Gather
/// components are zipped into one tile dim at the first one's position,
/// so they must have the same length. The slice's type records the tile
/// shape; a component that is a gather index keeps its tile type, which is
/// how lowering tells it from a scalar index.
Type Checker::check_slice(Expr &e) {
  Expr &base = *e.args[0];
  Type bt = check_expr(base, IndexCtx::Body);
  if (bt.kind == TypeKind::Unknown)
    return set(e, Type());
  if (bt.kind != TypeKind::Tensor) {
    diag_.error(DiagId::NotATensor, base.range, {base.name});
    return set(e, Type());
  }
  size_t rank = bt.tensor_shape.size();
  size_t ncomp = e.args.size() - 1;
  bool ok = true;
  std::vector<int64_t> shape;
  const Expr *first_gather = nullptr;
  for (size_t i = 1; i < e.args.size(); ++i) {
    Expr &c = *e.args[i];
    if (c.kind != ExprKind::Range) {
      Type ct = check_expr(c, IndexCtx::Body);
      if (ct.kind == TypeKind::Unknown) {
        ok = false;
      } else if (ct.kind == TypeKind::Tile) {
        if (!check_gather(base.name, c, first_gather, shape))
          ok = false;
      } else if (ct.kind != TypeKind::Index || !c.sym) {
        if (!report_scalar_index(c))
          diag_.error(DiagId::ExpectedIndex, c.range, {describe(ct)});
        c.type = Type();
        ok = false;
      }
      continue;
    }
    std::optional<Sym> lo = check_index(*c.args[0], IndexCtx::Body);
    std::optional<Sym> hi = check_index(*c.args[1], IndexCtx::Body);
    if (!lo || !hi) {
      ok = false;
      continue;
    }
    Sym ext = c.plus_extent ? *hi : *hi - *lo;
    auto n = ext.as_constant();
    if (n && *n <= 0) {
      diag_.error(DiagId::SliceExtentNotPositive, c.range, {ext.str()});
      ok = false;
      continue;
    }
    if (!n) {
      diag_.error(DiagId::SliceExtentNotConstant, c.range, {ext.str()});
      ok = false;
      continue;
    }
    c.type = index_type();
    shape.push_back(*n);
  }
  if (ncomp != rank) {
    diag_.error(DiagId::SliceArity, e.range,
                {base.name, std::to_string(rank), std::to_string(ncomp)});
    return set(e, Type());
  }
  if (!ok)
    return set(e, Type());
  // No range component: one element, moved as a rank-0 tile.
  Type t;
  t.kind = TypeKind::Slice;
  t.elem = bt.elem;
  t.tile_shape = shape;
  return set(e, t);
}

/// A gather component `c` (already typed as a tile) of a slice of `tensor`:
/// a 1-D integer tile; the first one adds a tile dim to `shape`, later ones
/// must match its length.
bool Checker::check_gather(const std::string &tensor, Expr &c, const Expr *&first,
                           std::vector<int64_t> &shape) {
  const Type &ct = c.type;
  if (!is_integer(ct.elem)) {
    diag_.error(DiagId::GatherIndexNotInteger, c.range, {tensor, describe(ct)});
    return false;
  }
  if (ct.tile_shape.size() != 1) {
    diag_.error(DiagId::GatherIndexNot1D, c.range, {tensor, describe(ct)});
    return false;
  }
  if (!first) {
    first = &c;
    shape.push_back(ct.tile_shape[0]);
    return true;
  }
  if (first->type.tile_shape[0] != ct.tile_shape[0]) {
    diag_.error(
        DiagId::GatherLengthMismatch, c.range,
        {tensor, std::to_string(first->type.tile_shape[0]), std::to_string(ct.tile_shape[0])});
    return false;
  }
  return true;
}

/// Where a slice's tile dims come from, for a note: the gather index that
/// sizes dim `d`, or null.
const Expr *Checker::gather_of_dim(const Expr &slice, size_t d) {
  size_t dim = 0;
  bool gathered = false;
  for (size_t i = 1; i < slice.args.size(); ++i) {
    const Expr &c = *slice.args[i];
    bool g = c.kind != ExprKind::Range && c.type.is_tile();
    if (g && gathered)
      continue; // zipped into the first gather's dim
    if (c.kind != ExprKind::Range && !g)
      continue; // a scalar index
    if (dim == d)
      return g ? &c : nullptr;
    gathered |= g;
    ++dim;
  }
  return nullptr;
}

/// `mask = m` of a load/store: an integer (or bool) tile or scalar whose
/// shape broadcasts to the slice's shape.
bool Checker::check_mask(Expr &call, const std::vector<int64_t> &slice_shape) {
  const KwArg *m = kwarg(call, "mask");
  if (!m)
    return true;
  Type t = check_value(*m->value);
  if (t.kind == TypeKind::Unknown)
    return false;
  // ElemType::Bool (once it exists) is a mask type too.
  if ((t.kind != TypeKind::Tile && t.kind != TypeKind::Scalar) || !is_mask_elem(t.elem)) {
    diag_.error(DiagId::MaskNotInteger, m->value->range, {describe(t)});
    return false;
  }
  auto b = broadcast(t.tile_shape, slice_shape);
  if (!b || *b != slice_shape) {
    diag_.error(DiagId::MaskShapeMismatch, m->value->range,
                {shape_str(t.tile_shape), shape_str(slice_shape)});
    return false;
  }
  // A smaller mask tile is broadcast through shared scratch.
  if (t.kind == TypeKind::Tile && numel(t.tile_shape) != numel(slice_shape))
    return scratch_fits("mask", t, m->value->range);
  return true;
}

} // namespace etl::sema
