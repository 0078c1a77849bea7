//===- tile/padding.cpp - Reductions that read a load's padding -----------===//
//
// warn_pad_reductions (tile/passes.h): a `max` (or `min`, `sum`, `argmax`,
// `argmin`) along an axis where its operand may hold a load's padding, and
// where that padding, as it reaches the reduction, is not the reduction's
// identity: `load(x[.., j * TN .. +TN])` pads with 0 at a ragged edge, and
// `max(t, axis = 1)` then takes 0 for a row of negative numbers.
//
// An abstract interpretation of each task body, in program order (SSA):
// every value gets an interval that holds its real elements (`r`; a loaded
// float is "any finite value", an integer its type's range) and, per tile
// dim, whether some lines along that dim may hold padding and the interval
// of what the padding has become there (`pad[d]`: through casts, `exp`,
// `+ bias`, `select` ...). An element-wise op evaluates its rule on the
// intervals of every mix of padded and real operands (two loads may pad at
// different places), so `select(m, t, -inf)`, `exp(t - m)` of a `-inf` pad,
// `t * w` of a 0 pad keep or clear the padding as they should. A reduction
// warns when every value its padding can take may change the result for
// some data: for `max`, padding above the lowest value the real elements
// can take (so `max(relu(t), axis = 1)` with a 0 pad is fine). Anything the
// interpretation cannot follow (loop-carried values, dots, reshapes,
// non-constant pads, NaN) becomes unknown, which never warns: false alarms
// are worse than a missed one here.
//
//===----------------------------------------------------------------------===//
#include "tile/passes.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace etl {
namespace {

/// "Some finite value": the bound of data the compiler knows nothing about,
/// kept apart from the infinities that a `pad = -inf` brings.
constexpr double kBig = 1e300;
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Iv {
  double lo = -kInf, hi = kInf;
  bool top() const { return lo == -kInf && hi == kInf; }
  bool constant() const { return lo == hi; }
};

Iv hull(Iv a, Iv b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }

/// A finite result of finite operands stays finite ("some finite value").
double clampf(double r, double x, double y) {
  if (std::isinf(r) && std::isfinite(x) && std::isfinite(y))
    return std::copysign(kBig, r);
  if (std::isfinite(r) && std::fabs(r) > kBig)
    return std::copysign(kBig, r);
  return r;
}

/// The hull of f over the endpoints (f monotone in each operand, or the
/// four corners of a product); NaN anywhere is unknown.
template <typename F> Iv corners(Iv a, Iv b, F f) {
  double v[4] = {clampf(f(a.lo, b.lo), a.lo, b.lo), clampf(f(a.lo, b.hi), a.lo, b.hi),
                 clampf(f(a.hi, b.lo), a.hi, b.lo), clampf(f(a.hi, b.hi), a.hi, b.hi)};
  Iv r{v[0], v[0]};
  for (double x : v) {
    if (std::isnan(x))
      return Iv{};
    r.lo = std::min(r.lo, x);
    r.hi = std::max(r.hi, x);
  }
  return r;
}

/// A monotone (non-decreasing) unary function; `clamp`: finite stays finite.
template <typename F> Iv mono(Iv a, F f, bool clamp = true) {
  Iv r{f(a.lo), f(a.hi)};
  if (std::isnan(r.lo) || std::isnan(r.hi))
    return Iv{};
  if (clamp) {
    r.lo = clampf(r.lo, a.lo, 0);
    r.hi = clampf(r.hi, a.hi, 0);
  }
  return r;
}

Iv type_range(ElemType t) {
  if (t == ElemType::Bool)
    return {0, 1};
  if (!is_integer(t))
    return {-kBig, kBig};
  unsigned bits = elem_bits(t) < 8 ? 8 : elem_bits(t);
  if (is_unsigned(t))
    return {0, std::ldexp(1.0, int(bits)) - 1};
  return {-std::ldexp(1.0, int(bits) - 1), std::ldexp(1.0, int(bits) - 1) - 1};
}

Iv compare(const std::string &name, Iv a, Iv b) {
  auto known = [](bool yes, bool no) { return yes ? Iv{1, 1} : no ? Iv{0, 0} : Iv{0, 1}; };
  if (name == "lt")
    return known(a.hi < b.lo, a.lo >= b.hi);
  if (name == "le")
    return known(a.hi <= b.lo, a.lo > b.hi);
  if (name == "gt")
    return known(a.lo > b.hi, a.hi <= b.lo);
  if (name == "ge")
    return known(a.lo >= b.hi, a.hi < b.lo);
  bool same = a.constant() && b.constant() && a.lo == b.lo;
  bool apart = a.hi < b.lo || b.hi < a.lo;
  if (name == "eq")
    return known(same, apart);
  if (name == "ne")
    return known(apart, same);
  if (name == "and")
    return known(a.lo >= 1 && b.lo >= 1, a.hi <= 0 || b.hi <= 0);
  if (name == "or")
    return known(a.lo >= 1 || b.lo >= 1, a.hi <= 0 && b.hi <= 0);
  return {0, 1};
}

/// One element-wise op on intervals of its operands' values.
Iv eval(const TOp &op, ElemType out, const std::vector<Iv> &a) {
  const std::string &n = op.attr;
  switch (op.kind) {
  case TileOpKind::Unary: {
    Iv x = a[0];
    if (n == "neg")
      return {-x.hi, -x.lo};
    if (n == "not")
      return {1 - std::min(1.0, x.hi), 1 - std::max(0.0, x.lo)};
    if (n == "exp")
      return mono(x, [](double v) { return std::exp(v); });
    if (n == "log" && x.lo >= 0)
      return mono(x, [](double v) { return std::log(v); }, false);
    if (n == "sqrt" && x.lo >= 0)
      return mono(x, [](double v) { return std::sqrt(v); });
    if (n == "rsqrt" && x.lo >= 0)
      return {1 / std::sqrt(x.hi), 1 / std::sqrt(x.lo)};
    if (n == "abs")
      return x.lo >= 0   ? x
             : x.hi <= 0 ? Iv{-x.hi, -x.lo}
                         : Iv{0, std::max(-x.lo, x.hi)};
    if (n == "tanh")
      return mono(x, [](double v) { return std::tanh(v); });
    if (n == "erf")
      return mono(x, [](double v) { return std::erf(v); });
    if (n == "floor")
      return mono(x, [](double v) { return std::floor(v); });
    if (n == "ceil")
      return mono(x, [](double v) { return std::ceil(v); });
    if (n == "round")
      return mono(x, [](double v) { return std::nearbyint(v); });
    if ((n == "sin" || n == "cos") && std::isfinite(x.lo) && std::isfinite(x.hi)) {
      if (x.constant()) {
        double c = n == "sin" ? std::sin(x.lo) : std::cos(x.lo);
        return {c, c};
      }
      return {-1, 1};
    }
    return is_float(out) ? Iv{} : type_range(out);
  }
  case TileOpKind::Binary: {
    auto f = [&](auto g) { return corners(a[0], a[1], g); };
    if (n == "add")
      return f([](double x, double y) { return x + y; });
    if (n == "sub")
      return corners(a[0], Iv{-a[1].hi, -a[1].lo}, [](double x, double y) { return x + y; });
    if (n == "mul")
      return f([](double x, double y) { return x * y; });
    if (n == "div" && (a[1].lo > 0 || a[1].hi < 0))
      return f([](double x, double y) { return x / y; });
    if (n == "max")
      return {std::max(a[0].lo, a[1].lo), std::max(a[0].hi, a[1].hi)};
    if (n == "min")
      return {std::min(a[0].lo, a[1].lo), std::min(a[0].hi, a[1].hi)};
    return is_float(out) ? Iv{} : type_range(out);
  }
  case TileOpKind::Compare:
    return compare(n, a[0], a[1]);
  case TileOpKind::Select:
    if (a[0].lo >= 1)
      return a[1];
    if (a[0].hi <= 0)
      return a[2];
    return hull(a[1], a[2]);
  case TileOpKind::Cast: {
    Iv x = a[0];
    if (out == ElemType::Bool)
      return x.lo > 0 || x.hi < 0 ? Iv{1, 1} : x.constant() && x.lo == 0 ? Iv{0, 0} : Iv{0, 1};
    if (!is_integer(out))
      return x;
    Iv t = type_range(out); // floats saturate; wider integers wrap
    Iv r{std::trunc(x.lo), std::trunc(x.hi)};
    if (std::isnan(r.lo) || std::isnan(r.hi))
      return t;
    return {std::clamp(r.lo, t.lo, t.hi), std::clamp(r.hi, t.lo, t.hi)};
  }
  default:
    return Iv{};
  }
}

/// What the padding of a load has become along one tile dim.
struct Pad {
  bool on = false;
  Iv v;
  const TOp *load = nullptr; ///< the load that padded
  bool direct = false;       ///< still the pad as written (no arithmetic)
};

struct AVal {
  Iv r;
  std::vector<Pad> pad; ///< one per tile dim
};

std::string show(double v) {
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  if (v == std::trunc(v) && std::fabs(v) < 1e18)
    return std::to_string(int64_t(v));
  std::ostringstream s;
  s << v;
  return s.str();
}

struct Interp {
  const TileFunc &f;
  Diag &diag;
  std::set<const TOp *> &warned;
  std::vector<AVal> vals;
  std::map<int, const TOp *> def;

  AVal &at(int v) { return vals[size_t(v)]; }
  size_t rank(int v) const { return f.values[size_t(v)].shape.size(); }

  void set(int v, Iv r, std::vector<Pad> pad = {}) {
    pad.resize(rank(v));
    vals[size_t(v)] = AVal{r, std::move(pad)};
  }

  /// Does the mask `m` change along dim d (not a broadcast or expand of
  /// something constant along it)?
  bool varies(int m, size_t d) {
    auto it = def.find(m);
    if (it == def.end())
      return true;
    const TOp &op = *it->second;
    if (op.kind == TileOpKind::Splat)
      return false;
    if (op.kind == TileOpKind::Convert)
      return varies(op.operands[0], d);
    if (op.kind == TileOpKind::Broadcast)
      return f.values[size_t(op.operands[0])].shape[d] != 1 && varies(op.operands[0], d);
    if (op.kind == TileOpKind::Expand)
      return int(d) != op.axis && varies(op.operands[0], int(d) > op.axis ? d - 1 : d);
    return true;
  }

  void load(const TOp &op) {
    int v = op.results[0];
    ElemType t = f.values[size_t(v)].elem;
    Iv p = op.pad_value >= 0 ? at(op.pad_value).r : Iv{tile_number(op.pad), tile_number(op.pad)};
    std::vector<Pad> pad(rank(v));
    for (size_t d = 0; d < pad.size(); ++d) {
      bool edge = d >= op.mem.in_bounds.size() || !op.mem.in_bounds[d];
      bool masked = op.mask >= 0 && varies(op.mask, d);
      if (edge || masked)
        pad[d] = Pad{true, p, &op, op.pad_value < 0};
    }
    set(v, type_range(t), std::move(pad));
  }

  /// An element-wise op: for every dim, its rule over every mix of padded
  /// and real operands.
  void elementwise(const TOp &op) {
    int v = op.results[0];
    ElemType out = f.values[size_t(v)].elem;
    std::vector<Iv> real;
    for (int o : op.operands)
      real.push_back(at(o).r);
    std::vector<Pad> pad(rank(v));
    for (size_t d = 0; d < pad.size(); ++d) {
      std::vector<size_t> padded;
      for (size_t i = 0; i < op.operands.size(); ++i)
        if (d < at(op.operands[i]).pad.size() && at(op.operands[i]).pad[d].on)
          padded.push_back(i);
      if (padded.empty())
        continue;
      Pad &p = pad[d];
      p.on = true;
      const Pad &first = at(op.operands[padded[0]]).pad[d];
      p.load = first.load;
      p.direct = op.kind == TileOpKind::Convert ||
                 (op.kind == TileOpKind::Cast && is_float(out) && padded.size() == 1 &&
                  first.direct);
      bool any = false;
      for (unsigned mix = 1; mix < (1u << padded.size()); ++mix) {
        std::vector<Iv> in = real;
        for (size_t j = 0; j < padded.size(); ++j)
          if (mix & (1u << j))
            in[padded[j]] = at(op.operands[padded[j]]).pad[d].v;
        Iv r = op.kind == TileOpKind::Convert ? in[0] : eval(op, out, in);
        p.v = any ? hull(p.v, r) : r;
        any = true;
      }
    }
    Iv r = op.kind == TileOpKind::Convert ? real[0] : eval(op, out, real);
    set(v, r, std::move(pad));
  }

  /// A reduction's identity test: may the padding `p` change the result of
  /// `name` over real elements in `r`?
  static bool harmful(const std::string &name, Iv p, Iv r) {
    if (name == "max" || name == "argmax")
      return p.lo > r.lo;
    if (name == "min" || name == "argmin")
      return p.hi < r.hi;
    return p.lo > 0 || p.hi < 0; // sum
  }

  void warn(const TOp &op, const Pad &p, Iv r) {
    if (warned.count(p.load))
      return;
    warned.insert(p.load);
    const TOp &ld = *p.load;
    ElemType t = f.values[size_t(op.operands[0])].elem;
    const std::string &name = op.attr;
    bool up = name == "max" || name == "argmax";
    std::string ident = name == "sum"  ? "0"
                        : is_float(t) ? (up ? "-inf" : "inf")
                                      : show(up ? type_range(t).lo : type_range(t).hi);
    std::string where = ld.mask >= 0 && p.load->mem.in_bounds.size() &&
                                std::find(ld.mem.in_bounds.begin(), ld.mem.in_bounds.end(),
                                          false) == ld.mem.in_bounds.end()
                            ? "where the mask is off"
                        : ld.mask >= 0 ? "outside the tensor and where the mask is off"
                                       : "outside the tensor";
    std::string as = p.v.constant() ? show(p.v.lo)
                     : name == "sum" ? "a value in [" + show(p.v.lo) + ", " + show(p.v.hi) + "]"
                     : up            ? "a value of at least " + show(p.v.lo)
                                     : "a value of at most " + show(p.v.hi);
    std::string fix = p.direct ? "write `pad = " + ident + "` on the load"
                               : "choose a `pad =` that reaches `" + name + "` as " + ident;
    (void)r;
    diag.warning(DiagId::PadNotIdentity, ld.loc,
                 {ld.tensor_name, where, name, std::to_string(op.axis), as, ident, fix});
    diag.note(DiagId::NotePadReduction, op.loc, {name});
  }

  void reduce(const TOp &op) {
    int a = op.operands[0], v = op.results[0];
    const AVal &in = at(a);
    size_t ax = size_t(op.axis);
    int64_t n = f.values[size_t(a)].shape.at(ax);
    const std::string &name = op.attr;
    bool arg = op.kind == TileOpKind::ArgReduce;
    if (ax < in.pad.size() && in.pad[ax].on && harmful(name, in.pad[ax].v, in.r))
      warn(op, in.pad[ax], in.r);
    auto fold = [&](Iv x) {
      if (arg)
        return Iv{0, double(n - 1)};
      if (name == "sum")
        return x.constant() && x.lo == 0 ? x : corners(x, Iv{double(n), double(n)}, std::multiplies<>());
      return x;
    };
    std::vector<Pad> pad;
    for (size_t d = 0; d < in.pad.size(); ++d) {
      if (d == ax)
        continue;
      Pad p = in.pad[d];
      if (p.on) {
        if (in.pad[ax].on)
          p.v = hull(p.v, in.pad[ax].v);
        p.v = fold(p.v);
      }
      pad.push_back(p);
    }
    set(v, fold(in.r), std::move(pad));
  }

  void run(const std::vector<TOp> &ops) {
    for (const TOp &op : ops) {
      switch (op.kind) {
      case TileOpKind::Const:
        if (!op.attr.empty() && op.attr[0] != '$') {
          double c = tile_number(op.attr);
          set(op.results[0], {c, c});
        } else {
          set(op.results[0], type_range(f.values[size_t(op.results[0])].elem));
        }
        break;
      case TileOpKind::Index:
        set(op.results[0], {-kBig, kBig});
        break;
      case TileOpKind::Load:
        if (!op.results.empty())
          load(op);
        break;
      case TileOpKind::Unary:
      case TileOpKind::Binary:
      case TileOpKind::Compare:
      case TileOpKind::Select:
      case TileOpKind::Cast:
      case TileOpKind::Convert:
        elementwise(op);
        break;
      case TileOpKind::Splat:
        set(op.results[0], at(op.operands[0]).r);
        break;
      case TileOpKind::Arange:
        set(op.results[0], {0, double(f.values[size_t(op.results[0])].numel() - 1)});
        break;
      case TileOpKind::Expand: {
        AVal x = at(op.operands[0]);
        x.pad.insert(x.pad.begin() + std::min<size_t>(size_t(op.axis), x.pad.size()), Pad{});
        set(op.results[0], x.r, x.pad);
        break;
      }
      case TileOpKind::Broadcast: {
        AVal x = at(op.operands[0]);
        const std::vector<int64_t> &s = f.values[size_t(op.operands[0])].shape;
        for (size_t d = 0; d < x.pad.size() && d < s.size(); ++d)
          if (s[d] == 1)
            x.pad[d] = Pad{};
        set(op.results[0], x.r, x.pad);
        break;
      }
      case TileOpKind::Transpose: {
        AVal x = at(op.operands[0]);
        if (x.pad.size() == 2)
          std::swap(x.pad[0], x.pad[1]);
        set(op.results[0], x.r, x.pad);
        break;
      }
      case TileOpKind::Reshape:
        set(op.results[0], at(op.operands[0]).r);
        break;
      case TileOpKind::Reduce:
      case TileOpKind::ArgReduce:
        reduce(op);
        break;
      default: // loops, branches, dots, atomics, scans, rings: unknown
        for (int b : op.block_args)
          set(b, Iv{});
        run(op.body);
        for (int r : op.results)
          set(r, Iv{});
      }
    }
  }

  void index(const std::vector<TOp> &ops) {
    for (const TOp &op : ops) {
      for (int r : op.results)
        def[r] = &op;
      index(op.body);
    }
  }
};

} // namespace

void warn_pad_reductions(const TileModule &m, Diag &diag) {
  std::set<const TOp *> warned;
  for (const TileFunc &f : m.funcs) {
    Interp in{f, diag, warned, std::vector<AVal>(f.values.size()), {}};
    for (size_t v = 0; v < f.values.size(); ++v)
      in.set(int(v), Iv{});
    in.index(f.body);
    in.run(f.body);
  }
}

} // namespace etl
