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

/// Levenshtein distance, for "did you mean".
size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest(const std::string &name, const std::vector<std::string> &candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(1, std::min<size_t>(2, name.size() / 3 + 1)) + 1;
  for (const auto &c : candidates) {
    size_t d = edit_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

Type index_type(Sym s) {
  (void)s;
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
