//===- lower/lower_tile_map.cpp - The tile IR path: map, shape, convert ---===//
//
// What this owns: the Elementwise, Shape and Layout families of the tile
// IR. The layout pass gives an elementwise op's operands its result's
// layout, so a map works register by register (lower_arith.cpp's arith,
// compare, select and popc_reg, lower_convert.cpp's convert_scalar,
// lower_math.cpp's math_regs for exp .. round and pow; neg, bnot and abs
// wrap a narrow integer to its width and max/min compare unsigned types
// unsigned). A
// splat fills every register; `arange` converts the register's coordinate;
// a `reshape` that keeps the layout's bases (or makes a one-element tile a
// scalar: every thread holds it in register 0) renames registers, any other
// moves the elements through scratch as a convert_layout does, written at
// their row-major index in the operand's shape and read back at theirs in
// the result's (the same index: the row-major order is kept); a
// `transpose` renames registers (its result's layout is the operand's with
// the fields swapped; a store that wants rows converts it);
// `expand` and `broadcast` only rename registers (their operand layouts are
// built so that the register holding coordinate c of the result holds the
// operand's element at c with the broadcast dims at 0). `convert_layout`
// renames registers when only the register bases differ, moves data inside
// each warp with one shfl.sync.idx per register when tile/layout.h's
// shuffle_plan finds one, and otherwise goes through the shared scratch
// area: every thread writes its elements (one writer per replica group;
// lanes holding copies split the registers among them) at their row-major
// index (16-byte chunks XOR-swizzled by line), a barrier, every thread
// reads the elements of the new layout, a barrier (scratch_release: only
// where tile/smem.cpp's plan keeps it; the area starts at its buffer).
//
//===----------------------------------------------------------------------===//
#include "lower/body_lowerer.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <map>
#include <optional>

namespace etl {

namespace {

BinOp binop_of(const std::string &a) {
  static const std::pair<const char *, BinOp> names[] = {
      {"add", BinOp::Add}, {"sub", BinOp::Sub},     {"mul", BinOp::Mul},   {"div", BinOp::Div},
      {"mod", BinOp::Mod}, {"band", BinOp::BitAnd}, {"bor", BinOp::BitOr}, {"bxor", BinOp::BitXor},
      {"shl", BinOp::Shl}, {"shr", BinOp::Shr},     {"eq", BinOp::Eq},     {"ne", BinOp::Ne},
      {"lt", BinOp::Lt},   {"le", BinOp::Le},       {"gt", BinOp::Gt},     {"ge", BinOp::Ge},
      {"and", BinOp::And}, {"or", BinOp::Or}};
  for (const auto &[n, op] : names)
    if (a == n)
      return op;
  throw LowerError("tile IR op 'map." + a + "' has no lowering");
}

/// The coordinate register `r` of `l` contributes, with the dims in `zero`
/// set to 0, packed as `to` packs it (same rank).
uint32_t reg_key(const Layout &l, uint32_t r, const std::vector<bool> &zero, const Layout &to) {
  std::vector<int64_t> c = l.unpack(l.apply(r, 0, 0));
  for (size_t d = 0; d < c.size(); ++d)
    if (d < zero.size() && zero[d])
      c[d] = 0;
  return to.pack(c);
}

} // namespace

void BodyLowerer::tile_elementwise(const TOp &op) {
  int rv = op.results[0];
  const TValue &out = tf->values[size_t(rv)];
  std::vector<llvm::Value *> &res = tregs[size_t(rv)];
  TileVal r;
  switch (op.kind) {
  case TileOpKind::Binary:
    if (op.attr == "max" || op.attr == "min") {
      TileVal a = tval(op.operands[0]), c = tval(op.operands[1]);
      bool mx = op.attr == "max";
      for (size_t k = 0; k < a.regs.size(); ++k) {
        llvm::Value *l = a.regs[k], *x = c.regs.at(k);
        res.push_back(is_float(out.elem)
                          ? b.CreateBinaryIntrinsic(
                                mx ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, l, x)
                          : b.CreateSelect(b.CreateICmp(int_predicate(mx ? llvm::CmpInst::ICMP_SGT
                                                                         : llvm::CmpInst::ICMP_SLT,
                                                                      out.elem),
                                                        l, x),
                                           l, x));
      }
      return;
    }
    if (op.attr == "pow") { // lower_math.cpp: f32 operands, rounded once
      TileVal x = tval(op.operands[0]), y = tval(op.operands[1]);
      std::vector<llvm::Value *> xf, yf;
      for (size_t k = 0; k < x.regs.size(); ++k) {
        xf.push_back(convert_scalar(x.regs[k], x, ElemType::F32));
        yf.push_back(convert_scalar(y.regs.at(k), y, ElemType::F32));
      }
      res = math_regs(MathFn::Pow, xf, yf, out.elem);
      return;
    }
    r = arith(binop_of(op.attr), tval(op.operands[0]), tval(op.operands[1]), out.shape, out.elem);
    break;
  case TileOpKind::Compare:
    r = compare(binop_of(op.attr), tval(op.operands[0]), tval(op.operands[1]), out.shape);
    break;
  case TileOpKind::Select:
    r = select(tval(op.operands[0]), tval(op.operands[1]), tval(op.operands[2]), out.shape,
               out.elem);
    break;
  case TileOpKind::Cast: {
    TileVal a = tval(op.operands[0]);
    for (llvm::Value *x : a.regs)
      res.push_back(convert_scalar(x, a, out.elem));
    return;
  }
  case TileOpKind::Unary: {
    TileVal a = tval(op.operands[0]);
    bool fl = is_float(a.elem) && !a.is_index;
    if (std::optional<MathFn> fn = math_fn_named(op.attr)) { // lower_math.cpp
      std::vector<llvm::Value *> xf;
      for (llvm::Value *x : a.regs)
        xf.push_back(fl ? x : convert_scalar(x, a, ElemType::F32));
      res = math_regs(*fn, xf, {}, out.elem);
      return;
    }
    for (llvm::Value *x : a.regs) {
      llvm::Value *y = nullptr;
      // Integers wrap to a narrow type's width (abs(-128) of an i8 is
      // -128, as in C); an unsigned one's abs is itself.
      if (op.attr == "neg")
        y = fl ? b.CreateFNeg(x) : wrap_int(b.CreateNeg(x), a.elem);
      else if (op.attr == "not")
        y = b.CreateXor(x, b.getInt32(1)); // bool: an i32 holding 0 or 1
      else if (op.attr == "bnot")
        y = wrap_int(b.CreateNot(x), a.elem);
      else if (op.attr == "abs")
        y = fl ? b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)
            : is_unsigned(a.elem)
                ? x
                : wrap_int(
                      b.CreateSelect(b.CreateICmpSLT(x, llvm::Constant::getNullValue(x->getType())),
                                     b.CreateNeg(x), x),
                      a.elem);
      else if (op.attr == "popc")
        y = popc_reg(x, a.elem);
      else
        throw LowerError("tile IR op 'map." + op.attr + "' has no lowering");
      res.push_back(y);
    }
    return;
  }
  default:
    throw LowerError(std::string("tile IR op '") + op_spelling(op.kind) + "' is not elementwise");
  }
  res = r.regs;
}

void BodyLowerer::tile_shape_op(const TOp &op) {
  int rv = op.results[0];
  const TValue &out = tf->values[size_t(rv)];
  std::vector<llvm::Value *> &res = tregs[size_t(rv)];
  unsigned nregs = out.is_tile() ? layout_of(rv).num_regs() : 1;
  switch (op.kind) {
  case TileOpKind::Splat: {
    TileVal a = tval(op.operands[0]);
    res.assign(nregs, convert_scalar(a.regs[0], a, out.elem));
    return;
  }
  case TileOpKind::Arange: {
    const Layout &l = layout_of(rv);
    TileVal idx;
    idx.elem = ElemType::I64;
    idx.is_index = true;
    for (uint32_t r = 0; r < nregs; ++r)
      res.push_back(convert_scalar(reg_coords(l, r)[0], idx, out.elem));
    return;
  }
  case TileOpKind::Expand:
  case TileOpKind::Broadcast: {
    int av = op.operands[0];
    const TValue &a = tf->values[size_t(av)];
    if (!a.is_tile()) {
      res.assign(nregs, tregs[size_t(av)].at(0));
      return;
    }
    const Layout &lo = layout_of(rv), &la = layout_of(av);
    // Operand coordinates in the result's rank: expand inserts op.axis.
    std::vector<bool> zero(out.shape.size(), false);
    if (op.kind == TileOpKind::Broadcast)
      for (size_t d = 0; d < a.shape.size(); ++d)
        zero[d] = a.shape[d] == 1 && out.shape[d] != 1;
    std::map<uint32_t, llvm::Value *> by_key;
    const std::vector<llvm::Value *> &in = tregs[size_t(av)];
    for (uint32_t r = 0; r < la.num_regs(); ++r) {
      std::vector<int64_t> c = la.unpack(la.apply(r, 0, 0));
      if (op.kind == TileOpKind::Expand)
        c.insert(c.begin() + op.axis, 0);
      by_key.emplace(lo.pack(c), in.at(r));
    }
    for (uint32_t r = 0; r < nregs; ++r) {
      auto it = by_key.find(reg_key(lo, r, zero, lo));
      if (it == by_key.end())
        throw LowerError(std::string("tile IR ") + op_spelling(op.kind) +
                         ": no operand register for a result register");
      res.push_back(it->second);
    }
    return;
  }
  case TileOpKind::Transpose: // the fields swapped (tile/verify.cpp checked): same registers
    if (auto v = tile_views.find(op.operands[0]); v != tile_views.end()) {
      tile_views[op.results[0]] = {v->second.first, !v->second.second}; // a ring slot's rows
      return;
    }
    if (tregs[size_t(op.operands[0])].size() != nregs)
      throw LowerError("tile IR transpose that is not a renaming");
    res = tregs[size_t(op.operands[0])];
    return;
  case TileOpKind::Reshape: { // same bases: same registers; else through scratch
    const int av = op.operands[0];
    const std::vector<llvm::Value *> &in = tregs[size_t(av)];
    if (in.empty())
      throw LowerError("tile IR reshape of a value without registers");
    if (!out.is_tile() || !tf->values[size_t(av)].is_tile()) { // one element: every register
      res.assign(nregs, in[0]);
      return;
    }
    std::optional<Layout> l = reshape_layout(layout_of(av), out.shape);
    if (l && *l == layout_of(rv) && in.size() == nregs) {
      res = in;
      return;
    }
    return tile_convert(op);
  }
  default:
    throw LowerError(std::string("tile IR op '") + op_spelling(op.kind) + "' has no lowering");
  }
}

/// A convert_layout, or a reshape that moves data (`op`'s operand of
/// another shape, tile_shape_op): then only through scratch, at each
/// element's row-major index in its own shape.
void BodyLowerer::tile_convert(const TOp &op) {
  int rv = op.results[0], av = op.operands[0];
  const TValue &out = tf->values[size_t(rv)];
  const std::vector<int64_t> &in_shape = tf->values[size_t(av)].shape;
  const bool same = in_shape == out.shape;
  const Layout &ld = layout_of(rv), &ls = layout_of(av);
  const std::vector<llvm::Value *> &in = tregs[size_t(av)];
  std::vector<llvm::Value *> &res = tregs[size_t(rv)];
  if (same && ld.lane == ls.lane && ld.warp == ls.warp) { // registers only: rename
    std::map<uint32_t, llvm::Value *> by_coord;
    for (uint32_t r = 0; r < ls.num_regs(); ++r)
      by_coord.emplace(ls.apply(r, 0, 0), in.at(r));
    bool all = true;
    std::vector<llvm::Value *> got;
    for (uint32_t r = 0; r < ld.num_regs() && all; ++r) {
      auto it = by_coord.find(ld.apply(r, 0, 0));
      all = it != by_coord.end();
      if (all)
        got.push_back(it->second);
    }
    if (all) {
      res = got;
      return;
    }
  }
  if (same && tile_convert_shuffle(op))
    return;
  unsigned bytes = scratch_bytes(out.elem);
  const int64_t per_line = 128 / bytes;
  note_scratch((out.numel() + per_line - 1) / per_line * per_line * bytes / 4);
  llvm::Type *ty = reg_type(out.elem);
  const unsigned wd = scratch_vec(ld, out.shape, bytes);
  tile_scratch_write(ls, in, out.elem, in_shape, 0);
  m.barrier(b);
  for (uint32_t r = 0; r < ld.num_regs(); r += wd) {
    llvm::Value *lin = tile_scratch_index(reg_coords(ld, r), out.shape, bytes, 0);
    if (llvm::Value *alive = reg_alive(ld, r)) // a padded element reads element 0
      lin = b.CreateSelect(alive, lin, b.getInt64(0));
    if (wd == 1) {
      res.push_back(scratch_load(ty, lin, bytes));
      continue;
    }
    llvm::Value *v = scratch_load(llvm::FixedVectorType::get(ty, wd), lin, bytes);
    for (unsigned j = 0; j < wd; ++j)
      res.push_back(b.CreateExtractElement(v, uint64_t(j)));
  }
  scratch_release();
}

/// The row-major index of coordinates `c` of a tile of `shape` in the
/// scratch area, from element `base` (a multiple of a 128-byte line), its
/// 16-byte chunk XORed with the 128-byte line's number mod 8: lanes reading
/// vectors 32 words apart (a thread's run of 8 split in two 16-byte reads)
/// or a column of a 32-wide tile fall in different banks; a vector stays
/// inside its chunk, a line inside itself.
llvm::Value *BodyLowerer::tile_scratch_index(const std::vector<llvm::Value *> &c,
                                         const std::vector<int64_t> &shape, unsigned bytes,
                                         int64_t base) {
  const int64_t per_chunk = 16 / bytes, per_line = 128 / bytes;
  llvm::Value *lin = b.getInt64(0);
  for (size_t d = 0; d < c.size(); ++d)
    lin = b.CreateAdd(b.CreateMul(lin, b.getInt64(uint64_t(shape[d]))), c[d]);
  if (base)
    lin = b.CreateAdd(lin, b.getInt64(uint64_t(base)));
  llvm::Value *line = b.CreateAnd(b.CreateUDiv(lin, b.getInt64(uint64_t(per_line))), b.getInt64(7));
  return b.CreateXor(lin, b.CreateMul(line, b.getInt64(uint64_t(per_chunk))));
}

/// Writes registers `in` of a tile of `shape` in layout `ls` to the scratch
/// at tile_scratch_index(.., base); no barrier.
void BodyLowerer::tile_scratch_write(const Layout &ls, const std::vector<llvm::Value *> &in,
                                 ElemType elem, const std::vector<int64_t> &shape, int64_t base) {
  const unsigned bytes = scratch_bytes(elem);
  llvm::Type *ty = reg_type(elem);
  // Runs of `vw` registers that are consecutive elements of the last dim
  // move as one 8- or 16-byte shared access (a 4-per-lane layout read
  // back with scalar loads 4 words apart is a 4-way bank conflict).
  const unsigned ws = scratch_vec(ls, shape, bytes);
  // Lanes that hold copies (lane basis 0) share the writing: the t-th such
  // lane bit picks the t-th register bit above the vector, so a warp's
  // registers go out in one request of several lanes instead of one
  // single-lane request each (a reduction's row sums: R rows, one store).
  std::vector<unsigned> copy_bits, reg_bits;
  for (unsigned k = 0; k < kLaneBits; ++k)
    if (!ls.lane[k])
      copy_bits.push_back(k);
  for (unsigned i = 0; i < ls.reg.size(); ++i)
    if ((1u << i) >= ws && ls.reg[i])
      reg_bits.push_back(i);
  const size_t spread = std::min(copy_bits.size(), reg_bits.size());
  uint32_t spread_regs = 0;
  for (size_t t = 0; t < spread; ++t)
    spread_regs |= 1u << reg_bits[t];
  Layout lw = ls; // the writers: the spread lane bits are no longer copies
  for (size_t t = 0; t < spread; ++t)
    lw.lane[copy_bits[t]] = 1;
  llvm::Value *writer = replica_writer(lw);
  llvm::Value *q = nullptr; // which of the spread registers this lane writes
  if (spread) {
    llvm::Value *lane = b.CreateAnd(tid, b.getInt32(31));
    q = b.getInt32(0);
    for (size_t t = 0; t < spread; ++t)
      q = b.CreateOr(
          q, b.CreateShl(b.CreateAnd(b.CreateLShr(lane, b.getInt32(copy_bits[t])), b.getInt32(1)),
                         b.getInt32(uint32_t(t))));
  }
  for (uint32_t r = 0; r < ls.num_regs(); r += ws) {
    if (reg_replica(ls, r) || (r & spread_regs))
      continue;
    llvm::Value *ok = nullptr, *lin = nullptr, *x = nullptr;
    bool any_alive = false;
    for (uint32_t c = 0; c < (1u << spread); ++c) {
      uint32_t rc = r;
      for (size_t t = 0; t < spread; ++t)
        if (c >> t & 1u)
          rc |= 1u << reg_bits[t];
      llvm::Value *alive = reg_alive(ls, rc); // null for every register of a vector (scratch_vec)
      any_alive = any_alive || alive;
      llvm::Value *okc = alive ? alive : b.getTrue();
      llvm::Value *linc = tile_scratch_index(reg_coords(ls, rc), shape, bytes, base);
      llvm::Value *xc = in.at(rc);
      if (ws > 1) {
        xc = llvm::UndefValue::get(llvm::FixedVectorType::get(ty, ws));
        for (unsigned j = 0; j < ws; ++j)
          xc = b.CreateInsertElement(xc, in.at(rc + j), uint64_t(j));
      }
      if (!c) {
        ok = okc, lin = linc, x = xc;
        continue;
      }
      llvm::Value *mine = b.CreateICmpEQ(q, b.getInt32(c));
      ok = b.CreateSelect(mine, okc, ok);
      lin = b.CreateSelect(mine, linc, lin);
      x = b.CreateSelect(mine, xc, x);
    }
    if (!any_alive)
      ok = nullptr;
    ok = !writer ? ok : !ok ? writer : b.CreateAnd(ok, writer);
    if (ok)
      if_then(ok, [&] { scratch_store(x, lin, bytes); });
    else
      scratch_store(x, lin, bytes);
  }
}

/// A re-layout inside each warp (tile/layout.h shuffle_plan): one
/// shfl.sync.idx per register whose source is another lane, none through
/// shared memory and no barrier. 32-bit registers only.
bool BodyLowerer::tile_convert_shuffle(const TOp &op) {
  int rv = op.results[0], av = op.operands[0];
  const Layout &ld = layout_of(rv), &ls = layout_of(av);
  llvm::Type *ty = reg_type(tf->values[size_t(rv)].elem);
  if (!ty->isFloatTy() && !ty->isIntegerTy(32))
    return false;
  std::optional<ShufflePlan> p = shuffle_plan(ls, ld);
  if (!p)
    return false;
  const std::vector<llvm::Value *> &in = tregs[size_t(av)];
  std::vector<llvm::Value *> res;
  llvm::Value *lane = b.CreateAnd(tid, b.getInt32(31));
  llvm::Value *warp = b.CreateLShr(tid, b.getInt32(kLaneBits));
  for (uint32_t r = 0; r < ld.num_regs(); ++r) {
    llvm::Value *x = in.at(p->src_reg[r]);
    if (!p->own[r]) {
      llvm::Value *src = b.getInt32(p->base[r]);
      auto add = [&](llvm::Value *idx, unsigned k, uint32_t mask) {
        if (mask)
          src = b.CreateXor(
              src, b.CreateMul(b.CreateAnd(b.CreateLShr(idx, b.getInt32(k)), b.getInt32(1)),
                               b.getInt32(mask)));
      };
      for (unsigned k = 0; k < kLaneBits; ++k)
        add(lane, k, p->lane_mask[r][k]);
      for (unsigned j = 0; j < p->warp_mask[r].size(); ++j)
        add(warp, j, p->warp_mask[r][j]);
      x = shuffle_reg(ShflMode::Idx, x, src, op.loc.begin.line);
    }
    res.push_back(x);
  }
  tregs[size_t(rv)] = res;
  return true;
}

/// Registers per shared access of a re-layout through scratch: the run of
/// leading registers along the last dim (Layout::contiguous_regs), at most
/// 16 bytes, when every register of the tile is a real element (no
/// padding) and no other basis moves within a run (so each run starts at a
/// multiple of its width: an aligned vector).
unsigned BodyLowerer::scratch_vec(const Layout &l, const std::vector<int64_t> &shape, unsigned bytes) {
  if (shape.empty() || bytes > 8)
    return 1;
  const unsigned last = unsigned(shape.size() - 1);
  unsigned w = std::min(l.contiguous_regs(last), 16u / bytes);
  if (w < 2 || shape[last] % w != 0)
    return 1;
  for (unsigned d = 0; d < shape.size(); ++d)
    if ((int64_t(1) << l.lg[d]) != shape[d]) // padded: reg_alive tests each register
      return 1;
  unsigned k = 0;
  while ((1u << k) < w)
    ++k;
  const uint32_t low = ((1u << k) - 1u) << l.field_offset(last);
  for (size_t i = k; i < l.reg.size(); ++i)
    if (l.reg[i] & low)
      return 1;
  for (const std::vector<uint32_t> *bs : {&l.lane, &l.warp})
    for (uint32_t x : *bs)
      if (x & low)
        return 1;
  return w;
}

} // namespace etl
