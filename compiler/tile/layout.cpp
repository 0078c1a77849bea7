//===- tile/layout.cpp - Linear layouts: construction, queries, printing --===//
//
// The constructors of tile/layout.h (blocked, slice, uniform, expand,
// broadcast, transpose, reshape, FMA dot operands, swizzled shared memory)
// and the questions the layout pass asks of them: ownership, replicas,
// contiguous registers, the path a conversion takes, bank wavefronts.
//
//===----------------------------------------------------------------------===//
#include "tile/layout.h"

#include <algorithm>
#include <map>
#include <unordered_set>

namespace etl {

const char *layout_kind_name(LayoutKind k) {
  switch (k) {
  case LayoutKind::Blocked:
    return "blocked";
  case LayoutKind::Slice:
    return "slice";
  case LayoutKind::Uniform:
    return "uniform";
  case LayoutKind::Shared:
    return "shared";
  case LayoutKind::Mma:
    return "mma";
  }
  return "?";
}

unsigned ceil_log2(int64_t n) {
  unsigned b = 0;
  while ((int64_t(1) << b) < n)
    ++b;
  return b;
}

static std::vector<unsigned> padded_lg(const std::vector<int64_t> &shape) {
  std::vector<unsigned> lg;
  for (int64_t s : shape)
    lg.push_back(ceil_log2(s));
  return lg;
}

unsigned Layout::coord_bits() const {
  unsigned n = 0;
  for (unsigned b : lg)
    n += b;
  return n;
}

unsigned Layout::field_offset(unsigned d) const {
  unsigned off = 0;
  for (unsigned e = d + 1; e < rank(); ++e)
    off += lg[e];
  return off;
}

uint32_t Layout::apply(uint32_t r, uint32_t l, uint32_t w) const {
  uint32_t c = 0;
  for (size_t k = 0; k < reg.size(); ++k)
    if (r >> k & 1)
      c ^= reg[k];
  for (size_t k = 0; k < lane.size(); ++k)
    if (l >> k & 1)
      c ^= lane[k];
  for (size_t k = 0; k < warp.size(); ++k)
    if (w >> k & 1)
      c ^= warp[k];
  return c;
}

std::vector<int64_t> Layout::unpack(uint32_t coord) const {
  std::vector<int64_t> c(rank());
  for (unsigned d = 0; d < rank(); ++d)
    c[d] = int64_t(coord >> field_offset(d) & ((1u << lg[d]) - 1));
  return c;
}

uint32_t Layout::pack(const std::vector<int64_t> &c) const {
  uint32_t v = 0;
  for (unsigned d = 0; d < rank(); ++d)
    v |= uint32_t(c[d]) << field_offset(d);
  return v;
}

/// The span of `vecs` over F2 has full rank `bits`.
static unsigned f2_rank(std::vector<uint32_t> vecs) {
  unsigned r = 0;
  for (unsigned bit = 32; bit-- > 0;) {
    auto it = std::find_if(vecs.begin() + r, vecs.end(), [&](uint32_t v) { return v >> bit & 1; });
    if (it == vecs.end())
      continue;
    std::swap(*it, vecs[r]);
    for (size_t i = 0; i < vecs.size(); ++i)
      if (i != r && (vecs[i] >> bit & 1))
        vecs[i] ^= vecs[r];
    ++r;
  }
  return r;
}

bool Layout::surjective() const {
  std::vector<uint32_t> all = reg;
  all.insert(all.end(), lane.begin(), lane.end());
  all.insert(all.end(), warp.begin(), warp.end());
  return f2_rank(all) == coord_bits();
}

bool Layout::injective() const {
  std::vector<uint32_t> all = reg;
  all.insert(all.end(), lane.begin(), lane.end());
  all.insert(all.end(), warp.begin(), warp.end());
  return f2_rank(all) == all.size();
}

unsigned Layout::contiguous_regs(unsigned d) const {
  if (d >= rank())
    return 1;
  unsigned off = field_offset(d), k = 0;
  while (k < reg.size() && k < lg[d] && reg[k] == (1u << (off + k)))
    ++k;
  return 1u << k;
}

unsigned Layout::aligned_vector_regs(unsigned d, unsigned max) const {
  unsigned w = 1;
  while (w < max && contiguous_regs(d) >= 2 * w)
    w *= 2;
  const uint32_t low = (w - 1u) << field_offset(d);
  for (const std::vector<uint32_t> *bs : {&lane, &warp})
    for (uint32_t x : *bs)
      if (x & low)
        return 1;
  for (size_t k = ceil_log2(w); k < reg.size(); ++k)
    if (reg[k] & low)
      return 1;
  return w;
}

bool Layout::has_replicas() const {
  for (uint32_t b : lane)
    if (!b)
      return true;
  for (uint32_t b : warp)
    if (!b)
      return true;
  return false;
}

std::string Layout::coord_str(uint32_t coord) const {
  std::vector<int64_t> c = unpack(coord);
  if (c.size() == 1)
    return std::to_string(c[0]);
  std::string s = "(";
  for (size_t i = 0; i < c.size(); ++i)
    s += (i ? "," : "") + std::to_string(c[i]);
  return s + ")";
}

std::string Layout::str() const {
  std::string s = "ll<";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  auto list = [&](const char *name, const std::vector<uint32_t> &v) {
    s += std::string(" ") + name + "=[";
    for (size_t i = 0; i < v.size(); ++i)
      s += (i ? "," : "") + coord_str(v[i]);
    s += "]";
  };
  list("reg", reg);
  list("lane", lane);
  list("warp", warp);
  return s + ">";
}

//===-- Constructors -----------------------------------------------------===//

Layout blocked_layout(const std::vector<int64_t> &shape, unsigned vec,
                      const std::vector<unsigned> &order, unsigned warps) {
  Layout l;
  l.kind = LayoutKind::Blocked;
  l.shape = shape;
  l.lg = padded_lg(shape);
  std::vector<unsigned> used(shape.size(), 0); // bits of each dim placed so far
  std::vector<unsigned> order_ = order;
  auto take = [&](std::vector<uint32_t> &out, unsigned want, bool pad_zero) {
    for (unsigned d : order_) {
      while (want > 0 && used[d] < l.lg[d]) {
        out.push_back(1u << (l.field_offset(d) + used[d]));
        ++used[d];
        --want;
      }
    }
    while (pad_zero && want-- > 0)
      out.push_back(0);
  };
  if (!order.empty()) {
    unsigned vbits = ceil_log2(std::max(1u, vec));
    unsigned d0 = order[0];
    while (vbits > 0 && used[d0] < l.lg[d0]) {
      l.reg.push_back(1u << (l.field_offset(d0) + used[d0]));
      ++used[d0];
      --vbits;
    }
  }
  take(l.lane, kLaneBits, true);
  // Warps over the slowest dims first: each warp owns whole rows, so a
  // reduction along the fastest dim stays inside one warp (registers and
  // lanes: shuffles, no shared memory).
  std::vector<unsigned> slow_first(order.rbegin(), order.rend());
  std::swap(order_, slow_first);
  take(l.warp, ceil_log2(std::max(1u, warps)), true);
  std::swap(order_, slow_first);
  take(l.reg, 64, false); // the rest
  l.origin =
      "blocked vec=" + std::to_string(l.contiguous_regs(order.empty() ? 0 : order[0])) + " order=[";
  for (size_t i = 0; i < order.size(); ++i)
    l.origin += (i ? "," : "") + std::to_string(order[i]);
  l.origin += "]";
  return l;
}

Layout default_layout(const std::vector<int64_t> &shape, unsigned vec, unsigned warps) {
  std::vector<unsigned> order;
  for (unsigned d = unsigned(shape.size()); d-- > 0;)
    order.push_back(d);
  return blocked_layout(shape, vec, order, warps);
}

Layout uniform_layout(const std::vector<int64_t> &shape, unsigned warps) {
  Layout l;
  l.kind = LayoutKind::Uniform;
  l.shape = shape;
  l.lg = padded_lg(shape);
  for (unsigned b = 0; b < l.coord_bits(); ++b)
    l.reg.push_back(1u << b);
  l.lane.assign(kLaneBits, 0);
  l.warp.assign(ceil_log2(std::max(1u, warps)), 0);
  l.origin = "uniform";
  return l;
}

Layout mma_layout(MmaOperand which, const std::vector<int64_t> &shape, unsigned warps,
                  unsigned col_warps) {
  Layout l;
  l.kind = LayoutKind::Mma;
  l.shape = shape;
  l.lg = padded_lg(shape);
  auto at = [&](uint32_t row, uint32_t col) { return (row << l.lg[1]) | col; };
  const int64_t ar = 16, ac = which == MmaOperand::A ? 16 : 8;
  // The atom: element-index bits, then lane bits t0 t1 g0 g1 g2.
  switch (which) {
  case MmaOperand::A:
    l.reg = {at(0, 1), at(8, 0), at(0, 8)};
    l.lane = {at(0, 2), at(0, 4), at(1, 0), at(2, 0), at(4, 0)};
    break;
  case MmaOperand::B:
    l.reg = {at(1, 0), at(8, 0)};
    l.lane = {at(2, 0), at(4, 0), at(0, 1), at(0, 2), at(0, 4)};
    break;
  case MmaOperand::Acc:
    l.reg = {at(0, 1), at(8, 0)};
    l.lane = {at(0, 2), at(0, 4), at(1, 0), at(2, 0), at(4, 0)};
    break;
  }
  // Atom rows and columns beyond the first: the low log2(col_warps) warp
  // bits take the highest column bits (a K operand, A's columns, is never
  // split: those warps hold replicas of it), the other warp bits row blocks
  // (the highest row bits first); registers take the rest, columns first.
  std::vector<uint32_t> row_bits, col_bits;
  for (unsigned b = ceil_log2(ar); b < l.lg[0]; ++b)
    row_bits.push_back(at(1u << b, 0));
  for (unsigned b = ceil_log2(ac); b < l.lg[1]; ++b)
    col_bits.push_back(at(0, 1u << b));
  const unsigned wb = ceil_log2(std::max(1u, warps)),
                 wc = std::min(wb, ceil_log2(std::max(1u, col_warps)));
  std::vector<uint32_t> col_warp(wc, 0);
  for (unsigned k = wc; k-- > 0;)
    if (which != MmaOperand::A && !col_bits.empty()) {
      col_warp[k] = col_bits.back();
      col_bits.pop_back();
    }
  std::vector<uint32_t> row_warp;
  unsigned replicas = 0;
  for (unsigned k = wc; k < wb; ++k) {
    if (which != MmaOperand::B && !row_bits.empty()) {
      row_warp.insert(row_warp.begin(), row_bits.back());
      row_bits.pop_back();
    } else
      ++replicas;
  }
  l.warp = col_warp;
  l.warp.insert(l.warp.end(), row_warp.begin(), row_warp.end());
  l.warp.insert(l.warp.end(), replicas, 0u);
  l.reg.insert(l.reg.end(), col_bits.begin(), col_bits.end());
  l.reg.insert(l.reg.end(), row_bits.begin(), row_bits.end());
  l.origin = std::string("mma m16n8k16 ") + (which == MmaOperand::A   ? "A"
                                             : which == MmaOperand::B ? "B"
                                                                      : "acc");
  if (wc)
    l.origin += " " + std::to_string(1u << (wb - wc)) + "x" + std::to_string(1u << wc) + " warps";
  return l;
}

unsigned mma_col_warps(const Layout &l) {
  const uint32_t cols = (1u << l.lg[1]) - 1u;
  unsigned n = 1;
  for (uint32_t x : l.warp)
    if (x & cols)
      n *= 2;
  return n;
}

/// Rewrites every basis through `f` (old packed coord -> new packed coord).
template <class F> static void remap(Layout &l, F f, bool drop_zero_regs) {
  std::vector<uint32_t> regs;
  for (uint32_t &b : l.reg) {
    b = f(b);
    if (b || !drop_zero_regs)
      regs.push_back(b);
  }
  l.reg = regs;
  for (uint32_t &b : l.lane)
    b = f(b);
  for (uint32_t &b : l.warp)
    b = f(b);
}

std::optional<std::vector<AxisBit>> axis_bits_of(const Layout &l, unsigned d) {
  unsigned off = l.field_offset(d), n = l.lg[d];
  uint32_t field = ((1u << n) - 1u) << off;
  std::vector<std::optional<AxisBit>> found(n);
  const std::vector<uint32_t> *spaces[] = {&l.reg, &l.lane, &l.warp};
  for (unsigned s = 0; s < 3; ++s)
    for (unsigned k = 0; k < spaces[s]->size(); ++k) {
      uint32_t x = (*spaces[s])[k];
      if (!(x & field))
        continue;
      if ((x & ~field) || (x & (x - 1u)))
        return std::nullopt; // mixes dims, or several bits of d
      unsigned p = 0;
      while ((1u << (off + p)) != x)
        ++p;
      if (found[p])
        return std::nullopt; // two bases for one bit
      found[p] = AxisBit{s, k};
    }
  std::vector<AxisBit> out;
  for (const std::optional<AxisBit> &f : found) {
    if (!f)
      return std::nullopt;
    out.push_back(*f);
  }
  return out;
}

unsigned HwBits::count() const {
  return unsigned(__builtin_popcount(lanes) + __builtin_popcount(warps) + __builtin_popcount(regs));
}

namespace {
/// Bits k of `bases` that are non-zero and not in `skip`.
uint32_t live_bases(const std::vector<uint32_t> &bases, uint32_t skip) {
  uint32_t m = 0;
  for (size_t k = 0; k < bases.size(); ++k)
    if (bases[k] && !(skip >> k & 1u))
      m |= 1u << k;
  return m;
}
} // namespace

HwBits fold_slot_bits(const Layout &result) {
  return {live_bases(result.lane, 0), live_bases(result.warp, 0), live_bases(result.reg, 0)};
}

HwBits scan_slot_bits(const Layout &l, const std::vector<AxisBit> &bits, unsigned p, unsigned mb) {
  uint32_t skip[3] = {0, 0, 0}; // per space (reg, lane, warp)
  for (unsigned i = 0; i < p + mb && i < bits.size(); ++i)
    skip[bits[i].space] |= 1u << bits[i].index;
  return {live_bases(l.lane, skip[1]), live_bases(l.warp, skip[2]), live_bases(l.reg, skip[0])};
}

Layout slice_layout(const Layout &parent, unsigned axis) {
  Layout l = parent;
  l.kind = LayoutKind::Slice;
  l.shape.erase(l.shape.begin() + axis);
  l.lg.erase(l.lg.begin() + axis);
  unsigned off = parent.field_offset(axis), w = parent.lg[axis];
  uint32_t low = (1u << off) - 1;
  remap(
      l, [&](uint32_t b) { return (b & low) | ((b >> (off + w)) << off); }, true);
  l.origin = "slice(axis=" + std::to_string(axis) + ")";
  return l;
}

Layout expand_layout(const Layout &src, unsigned axis) {
  Layout l = src;
  l.shape.insert(l.shape.begin() + axis, 1);
  l.lg.insert(l.lg.begin() + axis, 0);
  // A zero-width field: packed coordinates are unchanged.
  l.origin = "expand(axis=" + std::to_string(axis) + ")";
  return l;
}

Layout squash_layout(const Layout &l, unsigned axis) {
  Layout r = expand_layout(slice_layout(l, axis), axis);
  r.origin = "squash(axis=" + std::to_string(axis) + ")";
  return r;
}

Layout broadcast_layout(const Layout &src, unsigned axis, int64_t n) {
  Layout l = src;
  l.shape[axis] = n;
  unsigned add = ceil_log2(n), off = src.field_offset(axis);
  l.lg[axis] = add;
  uint32_t low = (1u << off) - 1;
  remap(
      l, [&](uint32_t b) { return (b & low) | ((b >> off) << (off + add)); }, false);
  for (unsigned k = 0; k < add; ++k)
    l.reg.push_back(1u << (off + k));
  l.origin = "broadcast(axis=" + std::to_string(axis) + ")";
  return l;
}

Layout transpose_layout(const Layout &src) {
  Layout l = src;
  std::swap(l.shape[0], l.shape[1]);
  std::swap(l.lg[0], l.lg[1]);
  unsigned lo = src.lg[1], hi = src.lg[0];
  remap(
      l,
      [&](uint32_t b) {
        uint32_t col = b & ((1u << lo) - 1), row = b >> lo;
        return (col << hi) | row;
      },
      false);
  l.origin = "transpose";
  return l;
}

/// Is a coordinate's packing (padded fields) its row-major index? So when
/// every dim after the first one longer than 1 is a power of two.
static bool packs_row_major(const std::vector<int64_t> &shape) {
  bool lead = false;
  for (int64_t s : shape) {
    if (lead && (s & (s - 1)))
      return false;
    lead = lead || s > 1;
  }
  return true;
}

std::optional<Layout> reshape_layout(const Layout &src, const std::vector<int64_t> &shape) {
  // Both packings the row-major index ([48] and [6, 8], [12, 16] and
  // [192]): the same bits name the same element.
  if (!packs_row_major(shape) || !packs_row_major(src.shape))
    return std::nullopt;
  Layout l = src;
  l.shape = shape;
  l.lg = padded_lg(shape);
  if (l.coord_bits() != src.coord_bits())
    return std::nullopt;
  l.origin = "reshape";
  return l;
}

Layout fma_dot_layout(const std::vector<int64_t> &shape, unsigned warps) {
  int64_t padded = 1;
  for (unsigned g : padded_lg(shape))
    padded <<= g;
  int64_t per_thread = padded / ((int64_t(1) << kLaneBits) * std::max(1u, warps));
  int64_t last = shape.empty() ? 1 : int64_t(1) << ceil_log2(shape.back());
  unsigned vec = unsigned(std::max<int64_t>(1, std::min<int64_t>({4, per_thread, last})));
  Layout l = default_layout(shape, vec, warps);
  l.origin = "dot result (fma) vec=" + std::to_string(vec);
  return l;
}

Layout dot_operand_layout(const Layout &c, unsigned which, const std::vector<int64_t> &shape) {
  // c is [M, N] (or [N] for a vector a). The operand keeps c's bits of the
  // dim it shares with the result (M for a, N for b) and replicates the other.
  Layout l;
  l.kind = LayoutKind::Blocked;
  l.shape = shape;
  l.lg = padded_lg(shape);
  bool c2 = c.rank() == 2;
  unsigned kdim = which == 0 ? unsigned(shape.size()) - 1 : 0;
  // Result field kept and where it goes in the operand.
  int keep = which == 0 ? (c2 ? 0 : -1) : int(c.rank()) - 1;
  int to = which == 0 ? (shape.size() == 2 ? 0 : -1) : 1;
  auto map = [&](uint32_t b) -> uint32_t {
    if (keep < 0 || to < 0)
      return 0;
    uint32_t v = b >> c.field_offset(unsigned(keep)) & ((1u << c.lg[unsigned(keep)]) - 1);
    return v << l.field_offset(unsigned(to));
  };
  for (unsigned k = 0; k < l.lg[kdim]; ++k)
    l.reg.push_back(1u << (l.field_offset(kdim) + k));
  for (uint32_t b : c.reg)
    if (uint32_t m = map(b))
      l.reg.push_back(m);
  for (uint32_t b : c.lane)
    l.lane.push_back(map(b));
  for (uint32_t b : c.warp)
    l.warp.push_back(map(b));
  l.origin = which == 0 ? "dot_a(fma)" : "dot_b(fma)";
  return l;
}

//===-- Conversions ------------------------------------------------------===//

const char *convert_path_name(ConvertPath p) {
  switch (p) {
  case ConvertPath::None:
    return "none";
  case ConvertPath::Registers:
    return "registers";
  case ConvertPath::Shuffle:
    return "shuffle";
  case ConvertPath::Scratch:
    return "scratch";
  }
  return "?";
}

std::optional<uint64_t> invert(const Layout &l, uint32_t coord) {
  // Columns: each hardware bit with its basis; eliminate on coordinate bits.
  std::vector<std::pair<uint32_t, uint64_t>> rows; // (basis, hw bits combined)
  uint64_t hw = 1;
  for (uint32_t b : l.reg)
    rows.push_back({b, hw}), hw <<= 1;
  hw = uint64_t(1) << l.reg.size();
  for (uint32_t b : l.lane)
    rows.push_back({b, hw}), hw <<= 1;
  hw = uint64_t(1) << (l.reg.size() + kLaneBits);
  for (uint32_t b : l.warp)
    rows.push_back({b, hw}), hw <<= 1;
  size_t r = 0;
  for (unsigned bit = 32; bit-- > 0;) {
    size_t p = r;
    while (p < rows.size() && !(rows[p].first >> bit & 1))
      ++p;
    if (p == rows.size())
      continue;
    std::swap(rows[p], rows[r]);
    for (size_t i = 0; i < rows.size(); ++i)
      if (i != r && (rows[i].first >> bit & 1)) {
        rows[i].first ^= rows[r].first;
        rows[i].second ^= rows[r].second;
      }
    ++r;
  }
  uint64_t out = 0;
  uint32_t rest = coord;
  for (size_t i = 0; i < r; ++i) {
    unsigned top = 31;
    while (!(rows[i].first >> top & 1))
      --top;
    if (rest >> top & 1) {
      rest ^= rows[i].first;
      out ^= rows[i].second;
    }
  }
  if (rest)
    return std::nullopt;
  return out;
}

double access_efficiency(const Layout &l, unsigned vec, unsigned fast, unsigned bytes) {
  vec = std::max(1u, vec);
  uint64_t used = 0, sectors = 0;
  for (uint32_t w = 0; w < l.num_warps(); ++w)
    for (uint32_t r = 0; r < l.num_regs(); r += vec) {
      std::unordered_set<uint64_t> elems, sect;
      for (uint32_t lane = 0; lane < 32; ++lane) {
        std::vector<int64_t> c = l.unpack(l.apply(r, lane, w));
        bool pad = false;
        for (unsigned d = 0; d < l.rank(); ++d)
          pad = pad || c[d] >= l.shape[d];
        if (pad)
          continue;
        int64_t at = fast < l.rank() ? c[fast] : 0;
        if (fast < l.rank())
          c[fast] = 0;
        uint64_t row = uint64_t(l.pack(c)) << 32;
        for (unsigned j = 0; j < vec; ++j) {
          uint64_t byte = uint64_t(at + j) * bytes;
          elems.insert(row | (byte / bytes));
          sect.insert(row | (byte / 32));
        }
      }
      used += elems.size() * bytes;
      sectors += sect.size() * 32;
    }
  return sectors ? double(used) / double(sectors) : 1.0;
}

uint32_t store_requests(const Layout &l, unsigned vec) {
  uint32_t warps = 1, regs = 1;
  for (uint32_t x : l.warp)
    warps <<= x ? 1 : 0;
  for (uint32_t x : l.reg)
    regs <<= x ? 1 : 0;
  return warps * std::max(1u, regs / std::max(1u, vec));
}

ConvertPath convert_path(const Layout &src, const Layout &dst) {
  if (src == dst)
    return ConvertPath::None;
  if (src.lg != dst.lg)
    return ConvertPath::Scratch;
  uint64_t total = uint64_t(dst.num_regs()) << (kLaneBits + dst.warp.size());
  uint64_t stotal = uint64_t(src.num_regs()) << (kLaneBits + src.warp.size());
  if (total > (1u << 22) || stotal > (1u << 22))
    return ConvertPath::Scratch;
  // What each (lane, warp) and each warp of src holds.
  std::unordered_set<uint64_t> at_thread, at_warp;
  for (uint32_t w = 0; w < src.num_warps(); ++w)
    for (uint32_t l = 0; l < 32; ++l)
      for (uint32_t r = 0; r < src.num_regs(); ++r) {
        uint64_t c = src.apply(r, l, w);
        at_thread.insert(c << 16 | uint64_t(l) << 8 | w);
        at_warp.insert(c << 16 | w);
      }
  bool regs = true, warp = true;
  for (uint32_t w = 0; w < dst.num_warps(); ++w)
    for (uint32_t l = 0; l < 32; ++l)
      for (uint32_t r = 0; r < dst.num_regs(); ++r) {
        uint64_t c = dst.apply(r, l, w);
        if (!at_thread.count(c << 16 | uint64_t(l) << 8 | w))
          regs = false;
        if (!at_warp.count(c << 16 | w))
          warp = false;
      }
  return regs ? ConvertPath::Registers : warp ? ConvertPath::Shuffle : ConvertPath::Scratch;
}

std::optional<ShufflePlan> shuffle_plan(const Layout &src, const Layout &dst) {
  if (src.lg != dst.lg || src.warp.size() != dst.warp.size() ||
      uint64_t(dst.num_regs()) * src.num_regs() > 4096)
    return std::nullopt;
  // Source lanes are chosen with the replica lane bits at 0: unique.
  uint32_t free_bits = 0;
  for (unsigned k = 0; k < kLaneBits; ++k)
    if (src.lane[k])
      free_bits |= 1u << k;
  std::map<uint32_t, uint32_t> lane_of; // lane part of a coordinate -> lane
  for (uint32_t l = 0; l < 32; ++l)
    if ((l & ~free_bits) == 0)
      lane_of.emplace(src.apply(0, l, 0), l);
  ShufflePlan p;
  const uint32_t nw = dst.num_warps();
  for (uint32_t r = 0; r < dst.num_regs(); ++r) {
    bool found = false;
    for (uint32_t sr = 0; sr < src.num_regs() && !found; ++sr) {
      // g(l, w): the source lane, for every lane and warp; then linearity.
      std::vector<uint32_t> g(size_t(32) * nw);
      bool ok = true, own = true;
      for (uint32_t w = 0; w < nw && ok; ++w)
        for (uint32_t l = 0; l < 32 && ok; ++l) {
          uint32_t want = dst.apply(r, l, w);
          own = own && src.apply(sr, l, w) == want;
          auto it = lane_of.find(want ^ src.apply(sr, 0, w));
          ok = it != lane_of.end();
          if (ok)
            g[size_t(w) * 32 + l] = it->second;
        }
      if (!ok)
        continue;
      uint32_t base = g[0];
      std::vector<uint32_t> lm(kLaneBits), wm(dst.warp.size());
      for (unsigned k = 0; k < kLaneBits; ++k)
        lm[k] = g[1u << k] ^ base;
      for (size_t j = 0; j < wm.size(); ++j)
        wm[j] = g[size_t(32) << j] ^ base;
      for (uint32_t w = 0; w < nw && ok && !own; ++w)
        for (uint32_t l = 0; l < 32 && ok; ++l) {
          uint32_t x = base;
          for (unsigned k = 0; k < kLaneBits; ++k)
            x ^= (l >> k & 1u) ? lm[k] : 0u;
          for (size_t j = 0; j < wm.size(); ++j)
            x ^= (w >> j & 1u) ? wm[j] : 0u;
          ok = x == g[size_t(w) * 32 + l];
        }
      if (!ok)
        continue;
      p.src_reg.push_back(sr);
      p.base.push_back(base);
      p.lane_mask.push_back(lm);
      p.warp_mask.push_back(wm);
      p.own.push_back(own);
      found = true;
    }
    if (!found)
      return std::nullopt;
  }
  return p;
}

//===-- Shared memory ----------------------------------------------------===//

uint32_t SmemLayout::apply(uint32_t off) const {
  uint32_t c = 0;
  for (size_t k = 0; k < offset.size(); ++k)
    if (off >> k & 1)
      c ^= offset[k];
  return c;
}

bool SmemLayout::bijective() const {
  unsigned bits = 0;
  for (unsigned b : lg)
    bits += b;
  return offset.size() == bits && f2_rank(offset) == bits;
}

SmemLayout row_major_smem_layout(const std::vector<int64_t> &shape) {
  SmemLayout s;
  s.shape = shape;
  s.lg = padded_lg(shape);
  unsigned bits = 0;
  for (unsigned b : s.lg)
    bits += b;
  for (unsigned k = 0; k < bits; ++k)
    s.offset.push_back(1u << k);
  return s;
}

SmemLayout swizzled_smem_layout(const std::vector<int64_t> &shape, unsigned elem_bytes,
                                unsigned vec) {
  SmemLayout s = row_major_smem_layout(shape);
  if (shape.size() != 2)
    return s;
  unsigned cbits = s.lg[1], rbits = s.lg[0];
  unsigned cols = 1u << cbits;
  vec = std::max(1u, std::min(vec, cols));
  // A row of `cols` elements spans row_bytes; per_phase rows share a phase
  // so that per_phase rows fill the 128-byte bank line; max_phase chunks of
  // vec elements tile the 128 bytes (or the row, if narrower).
  unsigned row_bytes = cols * elem_bytes;
  s.vec = vec;
  s.per_phase = std::max(1u, 128u / std::max(1u, row_bytes));
  s.max_phase = std::max(1u, std::min(cols / vec, 128u / (vec * elem_bytes)));
  for (unsigned j = 0; j < rbits; ++j) {
    uint32_t row = 1u << j;
    uint32_t phase = (row / s.per_phase) % s.max_phase;
    s.offset[cbits + j] = (row << cbits) | (phase * vec);
  }
  return s;
}

} // namespace etl
