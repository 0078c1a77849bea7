//===- sema/check_types.cpp - Types, their descriptions, broadcasting -----===//
//
// What this owns: the small type helpers the checker shares: constructing
// index, scalar and tile types, describing a type in a message, shape
// spelling, numpy broadcasting, and the "did you mean" candidate.
//
//===----------------------------------------------------------------------===//
#include "sema/checker.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

namespace etl::sema {

std::string shape_str(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::string shape_str(const std::vector<Sym> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + s[i].str();
  return r + "]";
}

/// How a type reads in a message: "a tile<f32>[16, 128]", "an index".
std::string describe(const Type &t) {
  switch (t.kind) {
  case TypeKind::Index:
    return "an integer index";
  case TypeKind::Scalar:
    return std::string("a scalar ") + spelling(t.elem);
  case TypeKind::Tile:
    return std::string("a tile<") + spelling(t.elem) + ">" + shape_str(t.tile_shape);
  case TypeKind::Tensor:
    return std::string("a tensor<") + spelling(t.elem) + ">" + shape_str(t.tensor_shape);
  case TypeKind::Slice:
    return "a tensor slice";
  case TypeKind::Unknown:
    break;
  }
  return "an expression";
}

Type index_type() {
  Type t;
  t.kind = TypeKind::Index;
  return t;
}

Type scalar_type(ElemType e) {
  Type t;
  t.kind = TypeKind::Scalar;
  t.elem = e;
  return t;
}

Type tile_type(ElemType e, std::vector<int64_t> shape) {
  Type t;
  t.kind = TypeKind::Tile;
  t.elem = e;
  t.tile_shape = std::move(shape);
  return t;
}

int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Numpy broadcasting of two static shapes; nullopt if incompatible.
std::optional<std::vector<int64_t>> broadcast(const std::vector<int64_t> &a,
                                              const std::vector<int64_t> &b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> r(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      return std::nullopt;
    r[i] = x == 1 ? y : x;
  }
  return r;
}

} // namespace etl::sema
