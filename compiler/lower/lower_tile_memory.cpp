//===- lower/lower_tile_memory.cpp - The tile IR path: loads and stores ---===//
//
// What this owns: the Memory family of the tile IR. A load or store moves
// `vec` elements per access (tile/memory.cpp proved the alignment and that
// each vector lies wholly inside or outside the tensor; the layout's first
// register bases are the contiguous run): register r, r+1, .., r+vec-1 of
// the thread are one `<vec x T>` access at the coordinates of register r.
// One bounds test per vector, none along dims memory.cpp proved in bounds;
// a fixed component is tested too. Element offsets are 32-bit where every
// offset of the tensor fits in 31 bits (`idx32`). Loads of tensors the
// kernel never writes take the non-coherent path (Machine::global_load_nc:
// ld.global.nc on NVPTX). The offsets' alignment is proven; the tensor's
// base is tested once per access (uniform, hoisted): a base that is not a
// multiple of the vector's size takes scalar accesses. A store is done by one thread per replica
// group (lanes or warps whose layout basis is 0 hold the same element) and skips registers that
// repeat lower ones. Out-of-bounds and masked-off elements are neither read (they get `pad`) nor
// written. A gathered dim's coordinate is the index
// tile's register that holds the element's row (gathered_at): every element
// of a gathered row shares it, so a row moves at the proven vector width. A
// rank-0 load with an `attr` is an element read: it binds that symbol for
// the `Sym`s that follow (tile_data_syms). f16 and bf16 elements live in f32
// registers: f16 is converted by fpext/fptrunc, bf16 by integer ops
// (lower_convert.cpp: bf16 -> f32 a shift, f32 -> bf16 round to nearest
// even with integer ops, the same on sim and NVPTX); a vector of bf16 moves
// as 32-bit words (8 bf16 = one 128-bit access of 4 words), a word's low
// half the lower element. A vector of narrow elements (i8, u8, i16, u16,
// FP8, packed i4/u4: word_packed) moves likewise as one integer of its
// bits or as i32 words, element j in bits [j w, j w + w), shifted and
// masked out and extended or decoded into its register (lower_convert.cpp's
// register forms); a single packed element is the byte at half its offset
// and the nibble its low bit picks. The pad is converted to the loaded
// type (u4 loads as u8) and wrapped.
//
// An `atomic` (atomic_add/_max/_min/_cas) is a store's walk, one element
// per access: the writer of each replica group applies the
// per-element read-modify-write (lower_atomic.cpp's atomic_elem), so no
// element is updated twice by threads holding copies. Its old values (0
// where masked off or outside), when used, reach the copies: a register
// copy takes its register's, lanes of the writer's warp one shfl.sync.idx
// from the writer, warps holding copies read them back from the op's
// scratch buffer after a barrier; a rank-0 atomic is thread 0's, its old
// value through scratch to every thread.
//
//===----------------------------------------------------------------------===//
#include "lower/body_lowerer.h"

#include <llvm/IR/Constants.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>

namespace etl {

namespace {

/// Sub-word elements other than f16 and bf16 (i8, u8, i16, u16, FP8 and
/// packed i4/u4): a vector of them moves as one integer of its bits (i8,
/// i16, i32) or as i32 words, element j in bits [j w, j w + w) (memory is
/// little-endian), picked out by shifts and masks.
bool word_packed(ElemType t) {
  return elem_bits(t) < 32 && t != ElemType::F16 && t != ElemType::BF16 && t != ElemType::Bool;
}

/// The type a tensor element has in memory: f16 `half`, bf16 its bits
/// (i16), the narrow types lower_convert.cpp's memory_type (a packed
/// element: the byte that holds it); the others their register type.
llvm::Type *mem_elem_type(BodyLowerer &L, ElemType t) {
  if (t == ElemType::F16 || t == ElemType::BF16 || word_packed(t))
    return L.memory_type(t);
  return L.reg_type(t);
}

/// The type of one access of `n` elements of `t`: n bf16 travel as n/2 i32
/// words (LLVM 16's NVPTX had no legal vector of i16 and split `<8 x i16>`
/// into narrow accesses; 19 keeps it whole, words still cost nothing), n > 1 narrow elements as an integer
/// of their bits or i32 words (word_packed), the others as `<n x T>`.
llvm::Type *access_type(BodyLowerer &L, ElemType t, unsigned n) {
  llvm::Type *ety = mem_elem_type(L, t);
  if (n == 1)
    return ety;
  if (word_packed(t)) {
    unsigned bits = n * elem_bits(t);
    if (bits <= 32)
      return L.b.getIntNTy(std::max(bits, 8u));
    return llvm::FixedVectorType::get(L.b.getInt32Ty(), bits / 32);
  }
  if (t == ElemType::BF16 && n % 2 == 0)
    return n == 2 ? static_cast<llvm::Type *>(L.b.getInt32Ty())
                  : llvm::FixedVectorType::get(L.b.getInt32Ty(), n / 2);
  return llvm::FixedVectorType::get(ety, n);
}

/// The f32 registers of the `n` elements of one access `v` (access_type).
/// A bf16 in the low half of a word is the word shifted left by 16, one in
/// the high half the word with its low half cleared: bf16_bits_to_f32 bit
/// for bit, one instruction each.
std::vector<llvm::Value *> unpack_access(BodyLowerer &L, llvm::Value *v, ElemType t, unsigned n,
                                         const std::function<llvm::Value *(llvm::Value *)> &widen) {
  Builder &b = L.b;
  std::vector<llvm::Value *> out;
  if (n == 1) {
    out.push_back(widen(v));
    return out;
  }
  if (t == ElemType::BF16 && n % 2 == 0) {
    for (unsigned w = 0; w < n / 2; ++w) {
      llvm::Value *word = n == 2 ? v : b.CreateExtractElement(v, uint64_t(w));
      out.push_back(b.CreateBitCast(b.CreateShl(word, 16), b.getFloatTy()));
      out.push_back(b.CreateBitCast(b.CreateAnd(word, b.getInt32(0xFFFF0000u)), b.getFloatTy()));
    }
    return out;
  }
  if (word_packed(t)) { // element e: its bits of word e w / 32, in the register form
    const unsigned w = elem_bits(t);
    for (unsigned e = 0; e < n; ++e) {
      unsigned at = e * w;
      llvm::Value *word =
          v->getType()->isVectorTy() ? b.CreateExtractElement(v, uint64_t(at / 32)) : v;
      word = b.CreateZExt(word, b.getInt32Ty());
      llvm::Value *field = b.CreateAnd(b.CreateLShr(word, at % 32), b.getInt32((1u << w) - 1));
      if (is_integer(t))
        out.push_back(is_unsigned(t) ? field : b.CreateAShr(b.CreateShl(field, 32 - w), 32 - w));
      else // FP8: its bits decoded as a load of one element decodes them
        out.push_back(L.from_memory(b.CreateTrunc(field, L.memory_type(t)), t, nullptr));
    }
    return out;
  }
  for (unsigned e = 0; e < n; ++e)
    out.push_back(widen(b.CreateExtractElement(v, uint64_t(e))));
  return out;
}

/// One access (access_type) of the f32 registers `xs`, each narrowed to
/// memory by `narrow`: bf16 pairs packed low element first.
llvm::Value *pack_access(BodyLowerer &L, const std::vector<llvm::Value *> &xs, ElemType t,
                         const std::function<llvm::Value *(llvm::Value *)> &narrow) {
  Builder &b = L.b;
  unsigned n = unsigned(xs.size());
  llvm::Type *ty = access_type(L, t, n);
  if (n == 1)
    return narrow(xs[0]);
  if (t == ElemType::BF16 && n % 2 == 0) {
    llvm::Value *v = llvm::PoisonValue::get(ty);
    for (unsigned w = 0; w < n / 2; ++w) {
      llvm::Value *lo = b.CreateZExt(narrow(xs[2 * w]), b.getInt32Ty());
      llvm::Value *hi = b.CreateZExt(narrow(xs[2 * w + 1]), b.getInt32Ty());
      llvm::Value *word = b.CreateOr(lo, b.CreateShl(hi, 16));
      v = n == 2 ? word : b.CreateInsertElement(v, word, uint64_t(w));
    }
    return v;
  }
  if (word_packed(t)) { // (sema: no stores into packed tensors)
    const unsigned w = elem_bits(t);
    std::vector<llvm::Value *> words((n * w + 31) / 32, b.getInt32(0));
    for (unsigned e = 0; e < n; ++e) {
      unsigned at = e * w;
      llvm::Value *x = b.CreateZExt(narrow(xs[e]), b.getInt32Ty());
      words[at / 32] = b.CreateOr(words[at / 32], b.CreateShl(x, at % 32));
    }
    if (!ty->isVectorTy())
      return b.CreateTrunc(words[0], ty);
    llvm::Value *v = llvm::PoisonValue::get(ty);
    for (size_t k = 0; k < words.size(); ++k)
      v = b.CreateInsertElement(v, words[k], uint64_t(k));
    return v;
  }
  llvm::Value *v = llvm::PoisonValue::get(ty);
  for (unsigned e = 0; e < n; ++e)
    v = b.CreateInsertElement(v, narrow(xs[e]), uint64_t(e));
  return v;
}

/// i1: a mask register is on.
llvm::Value *truthy(BodyLowerer &L, llvm::Value *v) {
  if (v->getType()->isIntegerTy(1))
    return v;
  if (v->getType()->isFloatingPointTy())
    return L.b.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
  return L.b.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
}

llvm::Value *and_of(BodyLowerer &L, llvm::Value *a, llvm::Value *c) {
  if (!a)
    return c;
  if (!c)
    return a;
  return L.b.CreateAnd(a, c);
}

/// The slice of a load or store: per tensor dim its extent, the uniform
/// part of its index (fixed component or range start) and the tile dim it
/// feeds (-1: fixed).
struct Slice {
  llvm::Value *base = nullptr;
  std::vector<llvm::Value *> dims, at, strides;
  std::vector<int> tile_dim;
  std::vector<bool> checked; ///< per tensor dim: needs a bounds test
  /// Per tensor dim: the value id of its gather index (-1: none); its
  /// coordinate is then the index's element at the tile dim it feeds.
  std::vector<int> gather;
  ElemType elem = ElemType::F32;
  unsigned bytes = 4;
};

Slice slice_of(BodyLowerer &L, const TOp &op) {
  const KernelDecl &k = *L.plan.kernel;
  if (op.tensor < 0 || size_t(op.tensor) >= k.tensors.size())
    throw LowerError("tile IR access of an unknown tensor");
  const TensorDecl &td = k.tensors[size_t(op.tensor)];
  if (td.type.shape.size() != op.parts.size())
    throw LowerError("tile IR slice of '" + td.name + "' has the wrong rank");
  Slice s;
  s.elem = td.type.elem;
  s.bytes = unsigned(byte_size(s.elem));
  s.base = L.arg_slot_ptr(L.tensor_slot(op.tensor));
  for (const ExprPtr &d : td.type.shape)
    s.dims.push_back(L.index(*d));
  size_t rank = s.dims.size();
  s.strides.assign(rank, nullptr);
  llvm::Value *st = L.b.getInt64(1);
  for (size_t d = rank; d-- > 0;) {
    s.strides[d] = st;
    st = L.b.CreateMul(st, s.dims[d]);
  }
  for (size_t d = 0; d < rank; ++d) {
    const SlicePart &p = op.parts[d];
    bool g = p.kind == SlicePart::Gather;
    s.at.push_back(g ? nullptr : L.sym_value(*p.at));
    s.gather.push_back(g ? p.gather : -1);
    s.tile_dim.push_back(p.kind == SlicePart::Range ? p.tile_dim : -1);
    bool proven = p.kind == SlicePart::Range && p.tile_dim >= 0 &&
                  size_t(p.tile_dim) < op.mem.in_bounds.size() &&
                  op.mem.in_bounds[size_t(p.tile_dim)];
    s.checked.push_back(!proven);
  }
  return s;
}

/// Per tensor dim, the gathered index (i64) of register `r` of a tile in
/// layout `l` (null for dims that are not gathered). The index tile's
/// layout is `l` sliced to the gathered dim (the layout pass requires it):
/// same lanes and warps, so the register whose coordinate along that dim
/// equals r's holds r's row. A gathered row's elements along the other dims
/// share it: one index per vector.
std::vector<llvm::Value *> gathered_at(BodyLowerer &L, const Slice &s, const TOp &op, const Layout &l,
                                       uint32_t r) {
  std::vector<llvm::Value *> out(s.gather.size(), nullptr);
  std::vector<int64_t> rc = l.unpack(l.apply(r, 0, 0));
  for (size_t d = 0; d < s.gather.size(); ++d) {
    if (s.gather[d] < 0)
      continue;
    const SlicePart &p = op.parts[d];
    const Layout &lg = L.layout_of(s.gather[d]);
    Layout want = l;
    for (unsigned k = l.rank(); k-- > 0;)
      if (int(k) != p.tile_dim)
        want = slice_layout(want, k);
    if (lg != want)
      throw LowerError("tile IR gather index of '" + op.tensor_name +
                       "' is not in its access's layout");
    const std::vector<llvm::Value *> &regs = L.tregs[size_t(s.gather[d])];
    for (uint32_t q = 0; q < lg.num_regs() && !out[d]; ++q)
      if (lg.unpack(lg.apply(q, 0, 0))[0] == rc.at(size_t(p.tile_dim)) && q < regs.size())
        out[d] = regs[q];
    if (!out[d])
      throw LowerError("tile IR gather of '" + op.tensor_name + "': no index register");
    if (!out[d]->getType()->isIntegerTy(64))
      out[d] = L.b.CreateSExt(out[d], L.b.getInt64Ty());
  }
  return out;
}

/// Address and in-bounds test (null: none needed) of the element at tile
/// coordinates `c` (empty for a rank-0 access); `g`: gathered_at's indexes
/// (empty: no gather).
std::pair<llvm::Value *, llvm::Value *> element_at(BodyLowerer &L, const Slice &s, const TOp &op,
                                                   const std::vector<llvm::Value *> &c,
                                                   const std::vector<llvm::Value *> &g = {},
                                                   llvm::Value **lin = nullptr) {
  Builder &b = L.b;
  llvm::Value *ok = nullptr;
  bool i32 = op.mem.index32;
  llvm::Type *ity = i32 ? b.getInt32Ty() : b.getInt64Ty();
  llvm::Value *off = llvm::ConstantInt::get(ity, 0);
  for (size_t d = 0; d < s.dims.size(); ++d) {
    llvm::Value *x = s.gather[d] >= 0 ? g.at(d) : s.at[d];
    if (s.tile_dim[d] >= 0)
      x = b.CreateAdd(x, c.at(size_t(s.tile_dim[d])));
    if (s.checked[d])
      ok = and_of(L, ok, b.CreateICmpULT(x, s.dims[d]));
    // In bounds, every offset fits in 31 bits when idx32 holds.
    llvm::Value *xs = i32 ? b.CreateTrunc(x, ity) : x;
    llvm::Value *st = i32 ? b.CreateTrunc(s.strides[d], ity) : s.strides[d];
    off = b.CreateAdd(off, b.CreateMul(xs, st));
  }
  if (i32)
    off = b.CreateZExt(off, b.getInt64Ty());
  if (lin) // a packed element's nibble is its offset's low bit
    *lin = off;
  llvm::Value *bytes = is_packed(s.elem) ? b.CreateLShr(off, 1) // two elements per byte
                                         : b.CreateMul(off, b.getInt64(s.bytes));
  llvm::Value *p = b.CreateGEP(b.getInt8Ty(), s.base, bytes);
  return {p, ok};
}

/// i1, uniform: the tensor's base address is a multiple of `n` elements
/// (tensors from etlMalloc / cuMemAlloc are; a binding of a pointer into
/// the middle of an allocation may not be).
llvm::Value *aligned_base_of(BodyLowerer &L, const Slice &s, unsigned n) {
  llvm::Value *a = L.b.CreatePtrToInt(s.base, L.b.getInt64Ty());
  const uint64_t bytes = std::max(1u, n * elem_bits(s.elem) / 8); // n packed nibbles: n / 2
  return L.b.CreateICmpEQ(L.b.CreateAnd(a, L.b.getInt64(bytes - 1)), L.b.getInt64(0));
}

} // namespace

void BodyLowerer::tile_load(const TOp &op) {
  auto aligned_base = [this](const Slice &sl, unsigned n) { return aligned_base_of(*this, sl, n); };
  int rv = op.results[0];
  const TValue &tv = tf->values[size_t(rv)];
  Slice s = slice_of(*this, op);
  if (op.barrier_before) // an earlier access of this task may conflict (sema/hazards.h)
    m.barrier(b);
  llvm::Type *ety = mem_elem_type(*this, s.elem), *rty = reg_type(tv.elem);
  TileVal f64;
  f64.elem = ElemType::F32;
  // The pad in the loaded type (u4 loads as u8): a float converted, an
  // integer's digits wrapped to a narrow type.
  double pv = tile_number(op.pad);
  char *end = nullptr;
  long long ipad = std::strtoll(op.pad.c_str(), &end, 10);
  llvm::Value *pad = is_float(tv.elem) || (end && *end)
                         ? convert_scalar(fconst(pv), f64, tv.elem)
                         : wrap_int(llvm::ConstantInt::get(rty, uint64_t(ipad),
                                                           /*signed=*/true),
                                    tv.elem);
  if (op.pad_value >= 0) // a scalar the body computed, already of the loaded type
    pad = tval(op.pad_value).regs.at(0);
  const bool packed = is_packed(s.elem);
  llvm::Value *lin = nullptr; // the element offset of the access (a packed nibble's low bit)
  std::function<llvm::Value *(llvm::Value *)> widen = [&](llvm::Value *x) {
    return s.elem == ElemType::F16 || s.elem == ElemType::BF16 || word_packed(s.elem)
               ? from_memory(x, s.elem, lin)
               : x;
  };
  // One access of `n` elements at coordinates `c` (i1 `ok`, null: always),
  // its registers appended to `out`.
  auto access = [&](const std::vector<llvm::Value *> &c, const std::vector<llvm::Value *> &g,
                    llvm::Value *ok, unsigned n, std::vector<llvm::Value *> &out) {
    auto [addr, in] = element_at(*this, s, op, c, g, &lin);
    llvm::Value *p = addr;
    ok = and_of(*this, ok, in);
    llvm::Type *ty = access_type(*this, s.elem, n);
    auto load = [&] {
      auto one = [&](llvm::Type *t, llvm::Value *at) {
        return op.mem.non_coherent ? m.global_load_nc(b, t, at) : m.global_load(b, t, at);
      };
      std::vector<llvm::Value *> r;
      if (n == 1) {
        r.push_back(widen(one(ety, p)));
        return r;
      }
      // The prover aligned the offsets; the tensor's base is checked here
      // (uniform): a base off the vector size takes n scalar accesses.
      auto *vb = llvm::BasicBlock::Create(ctx, "tload.vec", fn);
      auto *sb = llvm::BasicBlock::Create(ctx, "tload.scalar", fn);
      auto *jb = llvm::BasicBlock::Create(ctx, "tload.join", fn);
      b.CreateCondBr(aligned_base(s, n), vb, sb);
      b.SetInsertPoint(vb);
      std::vector<llvm::Value *> fast = unpack_access(*this, one(ty, p), s.elem, n, widen);
      llvm::BasicBlock *vend = b.GetInsertBlock();
      b.CreateBr(jb);
      b.SetInsertPoint(sb);
      std::vector<llvm::Value *> slow;
      for (unsigned e = 0; e < n; ++e) { // a vector of nibbles starts at an even element
        lin = b.getInt64(e);
        slow.push_back(
            widen(one(ety, b.CreateGEP(b.getInt8Ty(), p,
                                       b.getInt64(packed ? e / 2 : uint64_t(e) * s.bytes)))));
      }
      llvm::BasicBlock *send = b.GetInsertBlock();
      b.CreateBr(jb);
      b.SetInsertPoint(jb);
      for (unsigned e = 0; e < n; ++e) {
        llvm::PHINode *phi = b.CreatePHI(rty, 2);
        phi->addIncoming(fast[e], vend);
        phi->addIncoming(slow[e], send);
        r.push_back(phi);
      }
      return r;
    };
    if (!ok) {
      for (llvm::Value *x : load())
        out.push_back(x);
      return;
    }
    for (llvm::Value *x : guarded_regs(ok, rty, pad, "tload", load))
      out.push_back(x);
  };
  std::vector<llvm::Value *> regs;
  if (!tv.is_tile()) {
    access({}, {}, nullptr, 1, regs);
    tregs[size_t(rv)] = regs;
    if (!op.attr.empty()) // an element read (`kv_len[b]`): the symbol it binds
      tile_data_syms[op.attr] = regs[0]->getType()->isIntegerTy(64) ? regs[0]
                                : is_unsigned(tv.elem)              ? b.CreateZExt(regs[0], i64)
                                                                    : b.CreateSExt(regs[0], i64);
    return;
  }
  const Layout &l = layout_of(rv);
  unsigned vec = std::max(1u, op.mem.vec);
  if (op.mem.fast_dim < 0 || l.contiguous_regs(unsigned(op.mem.fast_dim)) < vec)
    vec = 1;
  const std::vector<llvm::Value *> *mask = op.mask >= 0 ? &tregs[size_t(op.mask)] : nullptr;
  for (uint32_t r = 0; r < l.num_regs(); r += vec) {
    llvm::Value *ok = reg_alive(l, r);
    if (mask)
      ok = and_of(*this, ok, truthy(*this, mask->at(r)));
    access(reg_coords(l, r), gathered_at(*this, s, op, l, r), ok, vec, regs);
  }
  tregs[size_t(rv)] = regs;
}

void BodyLowerer::tile_ring_read(const TOp &view, llvm::Value *slot) {
  // The slot holds the tile row-major (its last dim along the rows), as the
  // async.copy put it: each run of `w` registers that are consecutive
  // elements of a row (no lane or warp basis between them) is one shared
  // access of up to 16 bytes, converted as the load converts memory.
  const int rv = view.results.at(0);
  const TValue &tv = tf->values[size_t(rv)];
  const Layout &l = layout_of(rv);
  const unsigned last = unsigned(tv.shape.size() - 1), eb = byte_size(tv.elem);
  const unsigned w = l.aligned_vector_regs(last, 16 / eb);
  llvm::Type *rty = reg_type(tv.elem), *ty = access_type(*this, tv.elem, w);
  std::function<llvm::Value *(llvm::Value *)> widen = [&](llvm::Value *x) {
    return tv.elem == ElemType::F16 || tv.elem == ElemType::BF16 || word_packed(tv.elem)
               ? from_memory(x, tv.elem, nullptr)
               : x;
  };
  auto elem_of = [&](const std::vector<llvm::Value *> &c) {
    return last == 1 ? b.CreateAdd(b.CreateMul(c[0], b.getInt64(uint64_t(tv.shape[1]))), c[1])
                     : c[last];
  };
  // The thread's place in the slot, once: a register whose coordinates add
  // a constant to the thread's reads at a constant byte offset from it.
  llvm::Value *at_thread =
      scratch_ptr(b.CreateAdd(slot, b.CreateMul(elem_of(thread_dims(l)), b.getInt64(eb))), 1);
  std::vector<llvm::Value *> regs;
  for (uint32_t r = 0; r < l.num_regs(); r += w) {
    const std::vector<int64_t> d = reg_offsets(l, r);
    auto read = [&] {
      llvm::Value *p =
          !d.empty()
              ? b.CreateGEP(b.getInt8Ty(), at_thread,
                            b.getInt64(uint64_t(
                                (last == 1 ? d[0] * tv.shape[1] + d[1] : d[last]) * int64_t(eb))))
              : scratch_ptr(
                    b.CreateAdd(slot, b.CreateMul(elem_of(reg_coords(l, r)), b.getInt64(eb))), 1);
      m.shared_access(b, p, w * eb, false);
      return unpack_access(*this, b.CreateAlignedLoad(ty, p, llvm::Align(w * eb)), tv.elem, w,
                           widen);
    };
    llvm::Value *alive = reg_alive(l, r);
    if (!alive) { // a padded register (a shape that is not a power of two) reads nothing
      for (llvm::Value *x : read())
        regs.push_back(x);
      continue;
    }
    for (llvm::Value *x :
         guarded_regs(alive, rty, llvm::Constant::getNullValue(rty), "tring", read))
      regs.push_back(x);
  }
  tregs[size_t(rv)] = regs;
}

void BodyLowerer::tile_store(const TOp &op) {
  auto aligned_base = [this](const Slice &sl, unsigned n) { return aligned_base_of(*this, sl, n); };
  int vv = op.operands[0];
  const TValue &tv = tf->values[size_t(vv)];
  Slice s = slice_of(*this, op);
  const std::vector<llvm::Value *> &val = tregs[size_t(vv)];
  if (val.empty())
    throw LowerError("tile IR store of an undefined value");
  if (op.barrier_before) // an earlier access of this task may conflict (sema/hazards.h)
    m.barrier(b);
  std::function<llvm::Value *(llvm::Value *)> narrow = [&](llvm::Value *x) {
    return s.elem == ElemType::F16 || s.elem == ElemType::BF16 || word_packed(s.elem)
               ? to_memory(x, s.elem)
               : x;
  };
  auto access = [&](const std::vector<llvm::Value *> &c, const std::vector<llvm::Value *> &g,
                    llvm::Value *ok, const std::vector<llvm::Value *> &xs) {
    auto [addr, in] = element_at(*this, s, op, c, g);
    llvm::Value *p = addr;
    ok = and_of(*this, ok, in);
    auto store = [&] {
      if (xs.size() == 1) {
        m.global_store(b, narrow(xs[0]), p);
        return;
      }
      auto *vb = llvm::BasicBlock::Create(ctx, "tstore.vec", fn);
      auto *sb = llvm::BasicBlock::Create(ctx, "tstore.scalar", fn);
      auto *jb = llvm::BasicBlock::Create(ctx, "tstore.join", fn);
      b.CreateCondBr(aligned_base(s, unsigned(xs.size())), vb, sb);
      b.SetInsertPoint(vb);
      m.global_store(b, pack_access(*this, xs, s.elem, narrow), p);
      b.CreateBr(jb);
      b.SetInsertPoint(sb);
      for (size_t e = 0; e < xs.size(); ++e)
        m.global_store(b, narrow(xs[e]),
                       b.CreateGEP(b.getInt8Ty(), p, b.getInt64(uint64_t(e) * s.bytes)));
      b.CreateBr(jb);
      b.SetInsertPoint(jb);
    };
    if (ok)
      if_then(ok, store);
    else
      store();
  };
  if (!tv.is_tile()) { // a rank-0 store: thread 0
    access({}, {}, b.CreateICmpEQ(tid, b.getInt32(0)), {val[0]});
    return;
  }
  const Layout &l = layout_of(vv);
  unsigned vec = std::max(1u, op.mem.vec);
  if (op.mem.fast_dim < 0 || l.contiguous_regs(unsigned(op.mem.fast_dim)) < vec)
    vec = 1;
  llvm::Value *writer = replica_writer(l);
  const std::vector<llvm::Value *> *mask = op.mask >= 0 ? &tregs[size_t(op.mask)] : nullptr;
  for (uint32_t r = 0; r < l.num_regs(); r += vec) {
    if (reg_replica(l, r))
      continue;
    llvm::Value *ok = and_of(*this, writer, reg_alive(l, r));
    if (mask)
      ok = and_of(*this, ok, truthy(*this, mask->at(r)));
    std::vector<llvm::Value *> xs(val.begin() + r, val.begin() + r + vec);
    access(reg_coords(l, r), gathered_at(*this, s, op, l, r), ok, xs);
  }
}

} // namespace etl

namespace etl {

std::pair<llvm::Value *, llvm::Value *> BodyLowerer::tile_elem_addr(const TOp &op,
                                                                const std::vector<llvm::Value *> &c,
                                                                unsigned n, llvm::Value **aligned) {
  Slice s = slice_of(*this, op);
  if (aligned)
    *aligned = aligned_base_of(*this, s, n);
  return element_at(*this, s, op, c);
}

llvm::Value *BodyLowerer::tile_affine_step(const TOp &op, const std::string &var, int64_t step) {
  // Per tensor dim, the index's coefficient of `var` (a Sym fixed outside
  // the loop: a ring copy's slice is indexed by nothing else): the slice
  // moves by the sum of coefficient x step x stride, in bytes.
  std::vector<Sym> coeff;
  for (const SlicePart &p : op.parts) {
    std::optional<Sym> c;
    if (p.kind != SlicePart::Gather && p.at)
      c = p.at->linear_coeff(var);
    if (!c || c->mentions(var))
      return nullptr;
    coeff.push_back(*c);
  }
  Slice s = slice_of(*this, op);
  if (is_packed(s.elem)) // two elements a byte: no byte step per element
    return nullptr;
  llvm::Value *bytes = b.getInt64(0);
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (coeff[d] != Sym(0))
      bytes = b.CreateAdd(bytes, b.CreateMul(b.CreateMul(sym_value(coeff[d] * Sym(step)), s.strides[d]),
                                             b.getInt64(s.bytes)));
  return bytes;
}

llvm::Value *BodyLowerer::tile_inside_until(const TOp &op, const std::vector<int64_t> &shape,
                                            const std::string &var, int64_t step,
                                            llvm::Value *lo) {
  // Per tested dim d, at lo: index a, extent n along it (1 for a fixed
  // index), coefficient c >= 0 of var. Inside at lo + j step iff a + j c
  // step >= 0 (a >= 0 suffices) and a + j c step + n - 1 < dim: for
  // j <= (dim - n - a) / (c step) (every j when c = 0). The bound is the
  // least over the dims, lo where some dim is outside already.
  Slice s = slice_of(*this, op);
  const int64_t never = int64_t(1) << 62;
  llvm::Value *until = b.getInt64(uint64_t(never));
  for (size_t d = 0; d < s.dims.size(); ++d) {
    if (!s.checked[d])
      continue;
    const SlicePart &p = op.parts[d];
    std::optional<Sym> c;
    if (p.kind != SlicePart::Gather && p.at)
      c = p.at->linear_coeff(var);
    const std::optional<int64_t> k = c ? c->as_constant() : std::nullopt;
    if (!k || *k < 0)
      return nullptr;
    const int64_t n = s.tile_dim[d] >= 0 ? shape.at(size_t(s.tile_dim[d])) : 1;
    llvm::Value *room = b.CreateSub(b.CreateSub(s.dims[d], b.getInt64(uint64_t(n))), s.at[d]);
    llvm::Value *ok = b.CreateAnd(b.CreateICmpSGE(s.at[d], b.getInt64(0)),
                                  b.CreateICmpSGE(room, b.getInt64(0)));
    llvm::Value *last = b.getInt64(uint64_t(never));
    if (*k) { // lo + (room / (k step) + 1) step
      llvm::Value *j = b.CreateSDiv(room, b.getInt64(uint64_t(*k * step)));
      last = b.CreateAdd(lo, b.CreateMul(b.CreateAdd(j, b.getInt64(1)), b.getInt64(uint64_t(step))));
    }
    llvm::Value *here = b.CreateSelect(ok, last, lo);
    until = b.CreateSelect(b.CreateICmpSLT(here, until), here, until);
  }
  return until;
}

llvm::Value *BodyLowerer::tile_inside(const TOp &op, const std::vector<int64_t> &shape,
                                  std::vector<llvm::Value *> &stride_bytes) {
  Slice s = slice_of(*this, op);
  stride_bytes.assign(shape.size(), nullptr);
  llvm::Value *ok = nullptr;
  for (size_t d = 0; d < s.dims.size(); ++d) {
    const int t = s.tile_dim[d];
    if (s.gather[d] >= 0)
      throw LowerError("tile IR slice of '" + op.tensor_name + "' gathers: no uniform bounds");
    if (t >= 0)
      stride_bytes.at(size_t(t)) = b.CreateMul(s.strides[d], b.getInt64(s.bytes));
    if (!s.checked[d])
      continue;
    // Its first and its last index inside [0, dim) (unsigned: a negative
    // start is outside too).
    ok = and_of(*this, ok, b.CreateICmpULT(s.at[d], s.dims[d]));
    if (t >= 0 && shape.at(size_t(t)) > 1)
      ok = and_of(
          *this, ok,
          b.CreateICmpULT(b.CreateAdd(s.at[d], b.getInt64(shape[size_t(t)] - 1)), s.dims[d]));
  }
  return ok;
}

} // namespace etl

namespace etl {

void BodyLowerer::tile_atomic(const TOp &op) {
  static const std::pair<const char *, Builtin> kinds[] = {{"add", Builtin::AtomicAdd},
                                                           {"max", Builtin::AtomicMax},
                                                           {"min", Builtin::AtomicMin},
                                                           {"cas", Builtin::AtomicCas}};
  Builtin kind = Builtin::None;
  for (const auto &[name, f] : kinds)
    if (op.attr == name)
      kind = f;
  if (kind == Builtin::None)
    throw LowerError("tile IR atomic '" + op.attr + "' has no lowering");
  const size_t nv = value_operands(op);
  std::vector<const std::vector<llvm::Value *> *> vals;
  for (size_t j = 0; j < nv; ++j) {
    vals.push_back(&tregs[size_t(op.operands[j])]);
    if (vals.back()->empty())
      throw LowerError("tile IR atomic of an undefined value");
  }
  const TValue &tv = tf->values[size_t(op.operands[0])];
  Slice s = slice_of(*this, op);
  if (op.barrier_before) // an earlier access of this task may conflict (sema/hazards.h)
    m.barrier(b);
  // Register r's element at coordinates `c` when `ok` (null: always): its
  // old value, 0 where it is off or outside the tensor.
  auto apply = [&](const std::vector<llvm::Value *> &c, const std::vector<llvm::Value *> &g,
                   llvm::Value *ok, uint32_t r) {
    auto [addr, in] = element_at(*this, s, op, c, g);
    llvm::Value *p = addr;
    ok = and_of(*this, ok, in);
    llvm::BasicBlock *from = b.GetInsertBlock();
    auto *ab = llvm::BasicBlock::Create(ctx, "tatomic", fn);
    auto *jb = llvm::BasicBlock::Create(ctx, "tatomic.done", fn);
    b.CreateCondBr(ok ? ok : b.getTrue(), ab, jb);
    b.SetInsertPoint(ab);
    llvm::Value *old =
        atomic_elem(kind, s.elem, p, vals[0]->at(r), nv == 2 ? vals[1]->at(r) : nullptr);
    llvm::BasicBlock *aend = b.GetInsertBlock();
    b.CreateBr(jb);
    b.SetInsertPoint(jb);
    llvm::PHINode *phi = b.CreatePHI(old->getType(), 2);
    phi->addIncoming(llvm::Constant::getNullValue(old->getType()), from);
    phi->addIncoming(old, aend);
    return static_cast<llvm::Value *>(phi);
  };
  const bool used = !op.results.empty();
  if (!tv.is_tile()) { // rank 0: thread 0, its old value to every thread
    llvm::Value *t0 = b.CreateICmpEQ(tid, b.getInt32(0));
    llvm::Value *old = apply({}, {}, t0, 0);
    if (!used)
      return;
    const unsigned bytes = scratch_bytes(s.elem);
    note_scratch(bytes / 4);
    if_then(t0, [&] { scratch_store(old, b.getInt64(0), bytes); });
    m.barrier(b);
    tregs[size_t(op.results[0])] = {scratch_load(old->getType(), b.getInt64(0), bytes)};
    scratch_release();
    return;
  }
  const Layout &l = layout_of(op.operands[0]);
  llvm::Value *writer = replica_writer(l);
  const std::vector<llvm::Value *> *mask = op.mask >= 0 ? &tregs[size_t(op.mask)] : nullptr;
  std::vector<llvm::Value *> old(l.num_regs(), nullptr);
  for (uint32_t r = 0; r < l.num_regs(); ++r) {
    if (reg_replica(l, r))
      continue;
    llvm::Value *ok = and_of(*this, writer, reg_alive(l, r));
    if (mask)
      ok = and_of(*this, ok, truthy(*this, mask->at(r)));
    old[r] = apply(reg_coords(l, r), gathered_at(*this, s, op, l, r), ok, r);
  }
  if (!used)
    return;
  // The old values reach the copies: lanes of the writer's warp by a
  // shuffle from it, other warps through the op's scratch buffer
  // (tile/smem.cpp sized it), registers by a move.
  uint32_t lane_copies = 0;
  for (size_t k = 0; k < l.lane.size(); ++k)
    if (!l.lane[k])
      lane_copies |= 1u << k;
  const bool warp_copies = std::count(l.warp.begin(), l.warp.end(), 0u) != 0;
  const TValue &out = tf->values[size_t(op.results[0])];
  if (warp_copies) {
    const unsigned bytes = scratch_bytes(out.elem);
    const int64_t per_line = 128 / bytes;
    note_scratch((out.numel() + per_line - 1) / per_line * per_line * bytes / 4);
    for (uint32_t r = 0; r < l.num_regs(); ++r) {
      if (!old[r])
        continue;
      llvm::Value *lin = tile_scratch_index(reg_coords(l, r), out.shape, bytes, 0);
      llvm::Value *x = old[r];
      if (llvm::Value *w = and_of(*this, writer, reg_alive(l, r)))
        if_then(w, [&] { scratch_store(x, lin, bytes); });
      else
        scratch_store(x, lin, bytes);
    }
    m.barrier(b);
    for (uint32_t r = 0; r < l.num_regs(); ++r) {
      if (!old[r])
        continue;
      llvm::Value *lin = tile_scratch_index(reg_coords(l, r), out.shape, bytes, 0);
      if (llvm::Value *alive = reg_alive(l, r)) // a padded element reads element 0
        lin = b.CreateSelect(alive, lin, b.getInt64(0));
      old[r] = scratch_load(old[r]->getType(), lin, bytes);
    }
    scratch_release();
  } else if (lane_copies) {
    llvm::Value *src = b.CreateAnd(tid, b.getInt32(31u & ~lane_copies));
    for (llvm::Value *&x : old) {
      if (!x)
        continue;
      x = shuffle_reg(ShflMode::Idx, x, src, op.loc.begin.line);
    }
  }
  for (uint32_t r = 0; r < l.num_regs(); ++r) // a register copy: its lowest register's
    if (!old[r]) {
      uint32_t base = r;
      for (size_t k = 0; k < l.reg.size(); ++k)
        if (!l.reg[k])
          base &= ~(1u << k);
      old[r] = old.at(base);
    }
  tregs[size_t(op.results[0])] = old;
}

} // namespace etl
