//===- driver/variants.cpp - `--variant`: one artifact, several variants --===//
#include "driver/variants.h"
#include "driver/defines.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>

namespace etl {
namespace {

/// One condition `DIM OP N` intersected into `out`.
bool parse_condition(llvm::StringRef cond, VariantSpec &out, std::string &why) {
  static const char *const ops[] = {"<=", ">=", "==", "<", ">"};
  for (const char *op : ops) {
    size_t at = cond.find(op);
    if (at == llvm::StringRef::npos)
      continue;
    llvm::StringRef dim = cond.substr(0, at).trim(), num = cond.substr(at + strlen(op)).trim();
    int64_t n = 0;
    if (!is_identifier(dim)) {
      why = "'" + cond.str() + "' does not start with a dim name";
      return false;
    }
    if (num.getAsInteger(10, n)) {
      why = "'" + cond.str() + "' does not end with a base-10 integer";
      return false;
    }
    const int64_t max = std::numeric_limits<int64_t>::max();
    int64_t lo = 1, hi = max; // dims are >= 1
    std::string o = op;
    if (o == "<=")
      hi = n;
    else if (o == "<")
      hi = n == std::numeric_limits<int64_t>::min() ? 0 : n - 1;
    else if (o == ">=")
      lo = std::max<int64_t>(n, 1);
    else if (o == ">" && n == max)
      hi = 0; // nothing is above it
    else if (o == ">")
      lo = std::max<int64_t>(n + 1, 1);
    else
      lo = hi = n;
    ArtifactVariant::Range *r = nullptr;
    for (ArtifactVariant::Range &x : out.ranges)
      if (x.dim == dim)
        r = &x;
    if (!r) {
      out.ranges.push_back({dim.str(), 1, max});
      r = &out.ranges.back();
    }
    r->lo = std::max(r->lo, lo);
    r->hi = std::min(r->hi, hi);
    if (r->lo > r->hi) {
      why = "no value of " + dim.str() + " (a dim is >= 1) satisfies its conditions";
      return false;
    }
    return true;
  }
  why = "'" + cond.str() + "' is not DIM<=N, DIM<N, DIM>=N, DIM>N or DIM==N";
  return false;
}

} // namespace

bool parse_variant(const std::string &text, VariantSpec &out, std::string &why) {
  out = VariantSpec();
  out.text = text;
  auto [conds, values] = llvm::StringRef(text).split(':');
  if (!llvm::StringRef(text).contains(':')) {
    why = "no ':' between the conditions and the values";
    return false;
  }
  conds = conds.trim();
  if (conds.empty()) {
    why = "no conditions before ':' (write '*' for every binding)";
    return false;
  }
  if (conds != "*") {
    llvm::SmallVector<llvm::StringRef, 4> parts;
    conds.split(parts, ',');
    for (llvm::StringRef c : parts)
      if (!parse_condition(c.trim(), out, why))
        return false;
  }
  if (!values.trim().empty()) {
    llvm::SmallVector<llvm::StringRef, 4> parts;
    values.split(parts, ',');
    for (llvm::StringRef v : parts) {
      llvm::StringRef d = v.trim();
      if (!d.contains('=') || !is_identifier(d.split('=').first.trim())) {
        why = "'" + d.str() + "' is not NAME=VALUE";
        return false;
      }
      out.defines.push_back(d.split('=').first.trim().str() + "=" +
                            d.split('=').second.trim().str());
    }
  }
  return true;
}

bool check_variant_dims(const VariantSpec &v, const KernelDecl &k, Diag &diag) {
  for (const ArtifactVariant::Range &r : v.ranges) {
    bool found = false;
    std::string dims;
    for (const DimDecl &d : k.dims) {
      found = found || d.name == r.dim;
      dims += (dims.empty() ? "" : ", ") + d.name;
    }
    if (!found) {
      diag.error(DiagId::VariantUnknownDim, SourceRange(),
                 {v.text, r.dim, k.name, dims.empty() ? "none" : dims});
      return false;
    }
  }
  return true;
}

std::string interface_mismatch(const ArtifactMeta &a, const ArtifactMeta &b) {
  if (a.dims.size() != b.dims.size())
    return "it has other dims";
  for (size_t i = 0; i < a.dims.size(); ++i)
    if (a.dims[i].name != b.dims[i].name)
      return "it has other dims";
  if (a.scalars.size() != b.scalars.size())
    return "it has other scalar parameters";
  for (size_t i = 0; i < a.scalars.size(); ++i)
    if (a.scalars[i].name != b.scalars[i].name || a.scalars[i].elem != b.scalars[i].elem)
      return "scalar parameter '" + a.scalars[i].name + "' differs";
  std::vector<const ArtifactTensor *> x, y;
  for (const ArtifactTensor &t : a.tensors)
    if (!t.is_buffer)
      x.push_back(&t);
  for (const ArtifactTensor &t : b.tensors)
    if (!t.is_buffer)
      y.push_back(&t);
  if (x.size() != y.size())
    return "it has other tensor parameters";
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i]->name != y[i]->name || x[i]->elem != y[i]->elem || x[i]->shape != y[i]->shape ||
        x[i]->read_only != y[i]->read_only)
      return "tensor parameter '" + x[i]->name + "' has another type, shape or use";
  return "";
}

bool is_variant_usage_error(DiagId id) {
  return id == DiagId::VariantSyntax || id == DiagId::VariantUnknownDim ||
         id == DiagId::VariantWithEmit;
}

} // namespace etl
