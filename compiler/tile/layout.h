//===- tile/layout.h - Layouts of tile values as linear maps over F2 ------===//
//
// What this owns: the layout of a tile value as data. A layout is an
// F2-linear map from hardware bits to coordinate bits of the tile padded to
// powers of two: hardware index (register r, lane l, warp w) maps to
//
//   coord = XOR of reg[k] for every bit k of r,
//           lane[k] for every bit k of l, warp[k] for every bit k of w,
//
// where a coordinate is the row-major index over the padded shape (dim d
// owns a bit field of lg[d] bits, the last dim the lowest bits). A basis of
// 0 is a replica: the lanes (or warps) that differ in that bit hold the same
// element. Every kind below is one such map:
//
//   blocked  `vec` contiguous elements per thread on the fastest dim, then
//            lanes in `order`, warps slowest dim first; registers take
//            what is left;
//   slice    the result of reducing one axis of a parent (that axis's bits
//            dropped: lanes/warps that held it become replicas);
//   uniform  every thread holds every element (a broadcast tile);
//   shared   an offset -> coordinate map of shared memory with an XOR
//            swizzle (SmemLayout: `offset` bits instead of reg/lane/warp),
//            or affine: a row pitch, then the swizzle within the row (the
//            staging areas the lowering addresses, tile/smem_layout.cpp);
//   mma      the fragments of mma.sync.m16n8k16 (mma_layout): one 16-bit
//            (A, B) or f32 (accumulator) element per register index, PTX's
//            maps, atoms repeated over registers and warps.
//
// Conversions, vector widths and bank conflicts are computed from the maps
// (tile/assign.cpp), never from the kind, which is kept for printing.
// Design: shared/design/TILE-IR.md (b); Zhou et al., arXiv:2505.23819.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace etl {

enum class LayoutKind { Blocked, Slice, Uniform, Shared, Mma };
const char *layout_kind_name(LayoutKind k);

/// Lanes per warp (the lane field always has 5 bases).
constexpr unsigned kLaneBits = 5;

/// log2 of the smallest power of two >= n (n >= 1).
unsigned ceil_log2(int64_t n);

struct Layout {
  LayoutKind kind = LayoutKind::Blocked;
  std::vector<int64_t> shape; ///< logical shape
  std::vector<unsigned> lg;   ///< per dim: log2 of the padded extent
  std::vector<uint32_t> reg, lane, warp;
  std::string origin; ///< how it was built, e.g. "blocked vec=4 order=[1,0]"

  unsigned rank() const { return unsigned(shape.size()); }
  unsigned coord_bits() const;
  /// Bit offset of dim d's field in a packed coordinate.
  unsigned field_offset(unsigned d) const;
  uint32_t apply(uint32_t r, uint32_t l, uint32_t w) const;
  std::vector<int64_t> unpack(uint32_t coord) const;
  uint32_t pack(const std::vector<int64_t> &c) const;
  /// Registers per thread, lanes (32), warps.
  uint32_t num_regs() const { return 1u << reg.size(); }
  uint32_t num_warps() const { return 1u << warp.size(); }
  /// Does every coordinate of the padded tile have an owner?
  bool surjective() const;
  /// No two distinct hardware indices hold the same element (no replicas).
  bool injective() const;
  /// Number of elements of dim `d` each thread holds as one contiguous
  /// run starting at register 0 (the leading register bases are dim d's
  /// bits 0, 1, ...): the widest vector along d.
  unsigned contiguous_regs(unsigned d) const;
  /// The widest vector (a power of two, at most `max` elements) of
  /// contiguous_regs along d whose runs start at multiples of its width:
  /// no lane, warp or higher register basis moves within a run (shared
  /// memory reads and writes of whole aligned vectors).
  unsigned aligned_vector_regs(unsigned d, unsigned max) const;
  /// Lane bases and warp bases that are 0 (replicas): one writer per group.
  bool has_replicas() const;
  /// Same map (shape, lg and bases); `kind`/`origin` are ignored.
  bool operator==(const Layout &o) const {
    return shape == o.shape && lg == o.lg && reg == o.reg && lane == o.lane && warp == o.warp;
  }
  bool operator!=(const Layout &o) const { return !(*this == o); }
  /// `ll<16x128 reg=[(0,1),(0,2)] lane=[...] warp=[...]>`
  std::string str() const;
  std::string coord_str(uint32_t coord) const;
};

/// `vec` contiguous elements of dim order[0] per thread, then the 32 lanes
/// over the dims in `order` (fastest first), then `warps` warps (a power of
/// two) over the dims in reverse order (slowest first: a warp owns whole
/// rows); what is left of each dim goes to registers, fastest first.
Layout blocked_layout(const std::vector<int64_t> &shape, unsigned vec,
                      const std::vector<unsigned> &order, unsigned warps);
/// blocked_layout with the last dim fastest.
Layout default_layout(const std::vector<int64_t> &shape, unsigned vec, unsigned warps);
/// Every thread holds all elements.
Layout uniform_layout(const std::vector<int64_t> &shape, unsigned warps);
/// The parent without dim `axis`: bases lose that field; register bases that
/// become 0 are dropped (each thread keeps one copy).
Layout slice_layout(const Layout &parent, unsigned axis);
/// Inserts a dim of extent 1 at `axis` (no data moves).
Layout expand_layout(const Layout &l, unsigned axis);
/// expand(slice(l, axis), axis): the layout a size-1 operand along `axis`
/// needs to broadcast into `l` for free.
Layout squash_layout(const Layout &l, unsigned axis);
/// Where the bits of dim `d`'s coordinate live: for each bit p of its field
/// (lowest first), the one basis that sets exactly that bit, as (space,
/// index) with space 0 = register, 1 = lane, 2 = warp. nullopt when a bit has
/// no such basis, or a basis mixes dim d's bits with others or sets several
/// (a scan along d walks these bits in order; lower/lower_tile_reduce.cpp).
struct AxisBit {
  unsigned space, index;
};
std::optional<std::vector<AxisBit>> axis_bits_of(const Layout &l, unsigned d);
/// The hardware bits that index a compact scratch slot: an element's slot is
/// its owner's chosen lane bits (lowest), then warp bits, then register
/// bits, so the lanes of one request hit consecutive words and copies share
/// one (lower/lower_tile_reduce.cpp).
struct HwBits {
  uint32_t lanes = 0, warps = 0, regs = 0;
  unsigned count() const;
};
/// reduce/argreduce's cross-warp step: every non-replica basis of the result.
HwBits fold_slot_bits(const Layout &result);
/// scan's run of warp bits p .. p+mb-1 of `bits` (axis_bits_of(l, axis)):
/// the non-replica bases of `l` but those of the axis bits below p and the run's.
HwBits scan_slot_bits(const Layout &l, const std::vector<AxisBit> &bits, unsigned p, unsigned mb);
/// Extent-1 dim `axis` becomes `n`: its bits go to registers (every thread
/// holds the whole new dim).
Layout broadcast_layout(const Layout &l, unsigned axis, int64_t n);
/// Rank 2: swaps the two fields.
Layout transpose_layout(const Layout &l);
/// Same bases under another shape of as many bits, when both shapes pack a
/// coordinate as its row-major index (every dim after the first one longer
/// than 1 a power of two); else nullopt (the reshape moves data through
/// scratch: lower/lower_tile_map.cpp).
std::optional<Layout> reshape_layout(const Layout &l, const std::vector<int64_t> &shape);
/// The result of an FMA `dot` ([M, N] or [N]): blocked, last dim fastest,
/// up to 4 consecutive columns per thread (as many as the tile has per
/// thread), so each k step reads one 128-bit run of b per thread and one a
/// element per row it owns (lower/lower_tile_dot.cpp).
Layout fma_dot_layout(const std::vector<int64_t> &shape, unsigned warps);
/// Registers per thread up to which an FMA dot's a operand is held in
/// registers (dot_operand_layout) rather than read from shared memory.
constexpr unsigned kDotRegsA = 32;
/// Operand `which` (0: a [M, K] or [K], 1: b [K, N]) of an FMA `dot` whose
/// result has layout `c`: the M (or N) bits as in c, the other result dim
/// replicated, every K element in registers.
Layout dot_operand_layout(const Layout &c, unsigned which, const std::vector<int64_t> &shape);

/// The operands of mma.sync.aligned.m16n8k16 (PTX ISA "Matrix Fragments
/// for mma.m16n8k16 with floating point type"; g = lane >> 2, t = lane & 3).
enum class MmaOperand {
  A,  ///< [16, 16] f16/bf16: element i (reg i >> 1, half i & 1) at
      ///< (g + 8((i >> 1) & 1), 2t + (i & 1) + 8(i >> 2))
  B,  ///< [16 (k), 8 (n)]: element i at (2t + (i & 1) + 8(i >> 1), g)
  Acc ///< [16, 8] f32: element i at (g + 8(i >> 1), 2t + (i & 1))
};
/// The layout of operand `which` for a [R, C] tile (R, C powers of two,
/// multiples of the atom: 16 x 16 for A, 16 x 8 for B and Acc). The atom's
/// element index takes the lowest register bits (the 16-bit halves of a
/// packed register for A and B), then the `warps` (power of two) split the
/// rows in atom-sized blocks (slowest first; warps left over are
/// replicas), then the remaining atoms go to registers, columns first.
/// `col_warps` (a power of two) of the warps split the columns instead (a
/// warp tile: the low warp bits take the highest column bits; for A, whose
/// columns are K, those warps are replicas), the rest split the rows.
Layout mma_layout(MmaOperand which, const std::vector<int64_t> &shape, unsigned warps,
                  unsigned col_warps = 1);
/// How many warps of an mma layout split its columns (its col_warps).
unsigned mma_col_warps(const Layout &l);

/// Sector efficiency of the warp-level requests a global access of a tile in
/// layout `l` issues with `vec` elements of `bytes` per lane access along dim
/// `fast` (contiguous in memory; every other coordinate is another row):
/// distinct bytes / (distinct 32-byte sectors x 32), over every warp and
/// register vector, padding skipped.
double access_efficiency(const Layout &l, unsigned vec, unsigned fast, unsigned bytes);
/// Warp-level requests a store of a tile in layout `l` issues with `vec`
/// elements per access, one writer per replica group: the warps holding
/// distinct data times the distinct register vectors.
uint32_t store_requests(const Layout &l, unsigned vec);

/// How a conversion from `src` to `dst` moves data (TILE-IR.md (d)).
enum class ConvertPath { None, Registers, Shuffle, Scratch };
const char *convert_path_name(ConvertPath p);
ConvertPath convert_path(const Layout &src, const Layout &dst);

/// A conversion done with one `shfl.sync.idx` per destination register:
/// register r of every thread is register src_reg[r] of the lane
///   base[r] ^ XOR(lane bit k set: lane_mask[r][k]) ^ XOR(warp bit j set: warp_mask[r][j])
/// of its own warp; `own[r]`: the thread holds it itself (a register move).
struct ShufflePlan {
  std::vector<uint32_t> src_reg, base;
  std::vector<std::vector<uint32_t>> lane_mask, warp_mask;
  std::vector<bool> own;
};
/// The plan, or nullopt when some destination element is not in the same
/// warp of `src`, or not in one register of every source lane, or the
/// source lane is not an F2-linear function of the lane and warp.
std::optional<ShufflePlan> shuffle_plan(const Layout &src, const Layout &dst);

/// Pseudo-inverse by Gauss-Jordan elimination: a hardware index (reg | lane
/// << reg bits | warp << (reg + 5) bits) holding `coord`, or nullopt.
std::optional<uint64_t> invert(const Layout &l, uint32_t coord);

/// Shared memory. The linear part (a tile padded to powers of two): offset
/// bit k (element units) holds coordinate offset[k]. The affine part
/// (row_bytes > 0: a staging area the lowering addresses, whose rows need
/// not be a power of two of bytes, as a [.., 48] f16 operand's 96): element
/// (row, col) of `elem_bytes` lies at byte
///
///   row * row_bytes + ((col / per) ^ phase(row)) * 16 + (col % per) * elem_bytes,
///
/// per = 16 / elem_bytes elements a 16-byte chunk, phase(row) = (row /
/// per_phase) % max_phase with its log2(max_phase) bits rotated left by
/// `rotate`; max_phase divides the chunks of a row, so a chunk stays in its
/// row. With `lines` the rows are the 128-byte lines (row_bytes) of the
/// row-major index of any tile, addressed by that index: element index ^
/// phase(index / (row_bytes / elem_bytes)) * per. smem_place computes both.
struct SmemLayout {
  std::vector<int64_t> shape;
  std::vector<unsigned> lg;
  std::vector<uint32_t> offset;
  unsigned vec = 1, per_phase = 1, max_phase = 1;
  int64_t row_bytes = 0; ///< the affine part's row pitch (a multiple of 16); 0: none
  unsigned elem_bytes = 0, rotate = 0;
  bool lines = false;
  /// Column blocks (wgmma_staging_layout): a row of more than row_bytes is
  /// split into blocks of row_bytes / elem_bytes columns, block b at byte
  /// b * block_bytes (0: one block, the row pitch is row_bytes).
  int64_t block_bytes = 0;
  uint32_t apply(uint32_t off) const;
  bool bijective() const;
  std::string str() const;
};
/// Where element (row, col) of the affine part of `s` lies: its byte offset,
/// or with s.lines its element index, `col` being the row-major index (row
/// unused; no rotation). In the arithmetic `A` gives (Value, k(constant),
/// udiv, urem, mul, add, and_, xor_, or_, shl, lshr: SmemInt for host integers, the
/// lowering's LLVM IR builder), so that the bank check and the code compute
/// one function. The calls nest as the lowering's did before they were
/// folded here, so its PTX did not change; A::chunk_term_first() picks the
/// order in which the two terms of a pitched offset are built (the tf32
/// staging built the chunk's first), which changes no value.
template <class A>
typename A::Value smem_place(A &a, const SmemLayout &s, typename A::Value row,
                             typename A::Value col) {
  using V = typename A::Value;
  const int64_t per = 16 / int64_t(s.elem_bytes), mp = int64_t(s.max_phase);
  auto phase_of = [&](V r, int64_t div) {
    V p = a.urem(a.udiv(r, a.k(div)), a.k(mp));
    if (mp > 1 && s.rotate) // rotl within log2(max_phase) bits (rotate <= that)
      p = a.or_(a.urem(a.shl(p, s.rotate), a.k(mp)), a.lshr(p, ceil_log2(mp) - s.rotate));
    return p;
  };
  if (s.lines) { // the phase by a mask (max_phase a power of two), as the scratch took it:
    // LLVM folds `& 7` and `% 8` into different but equal code
    const int64_t div = s.row_bytes / int64_t(s.elem_bytes) * int64_t(s.per_phase);
    V line = a.and_(a.udiv(col, a.k(div)), a.k(mp - 1));
    return a.xor_(col, a.mul(line, a.k(per)));
  }
  V block{};
  if (s.block_bytes) { // a column block of row_bytes, then the row inside it
    const int64_t cpb = s.row_bytes / int64_t(s.elem_bytes);
    block = a.mul(a.udiv(col, a.k(cpb)), a.k(s.block_bytes));
    col = a.urem(col, a.k(cpb));
  }
  V phase = phase_of(row, int64_t(s.per_phase));
  V chunk = a.xor_(a.udiv(col, a.k(per)), phase);
  V off;
  if (a.chunk_term_first()) { // the same sum, its terms built in the other order
    V c16 = a.mul(chunk, a.k(16));
    off = a.add(a.mul(row, a.k(s.row_bytes)), c16);
  } else {
    off = a.mul(row, a.k(s.row_bytes));
    off = a.add(off, a.mul(chunk, a.k(16)));
  }
  off = a.add(off, a.mul(a.urem(col, a.k(per)), a.k(int64_t(s.elem_bytes))));
  return s.block_bytes ? a.add(off, block) : off;
}
/// smem_place's arithmetic on host integers.
struct SmemInt {
  using Value = int64_t;
  Value k(int64_t c) const { return c; }
  Value udiv(Value x, Value y) const { return int64_t(uint64_t(x) / uint64_t(y)); }
  Value urem(Value x, Value y) const { return int64_t(uint64_t(x) % uint64_t(y)); }
  Value mul(Value x, Value y) const { return x * y; }
  Value add(Value x, Value y) const { return x + y; }
  Value and_(Value x, Value y) const { return x & y; }
  Value xor_(Value x, Value y) const { return x ^ y; }
  Value or_(Value x, Value y) const { return x | y; }
  Value shl(Value x, unsigned n) const { return int64_t(uint64_t(x) << n); }
  Value lshr(Value x, unsigned n) const { return int64_t(uint64_t(x) >> n); }
  bool chunk_term_first() const { return false; }
};
/// The staging of a tensor-core dot's operand (tile/mma.cpp), rows of `cols`
/// elements of `elem_bytes` (2: f16/bf16; 4: a tf32 dot's f32), 16-byte
/// chunks XORed by the row's phase so that the 8 rows of an ldmatrix phase
/// hit distinct bank groups (Triton's #shared, CUTLASS's swizzle):
/// max_phase the largest power of two dividing the chunks of a row, at most
/// 8. 16-bit: per_phase rows fill a 128-byte line (1 for longer rows). f32:
/// per_phase = 8 / max_phase (a run of per_phase rows already falls in
/// distinct groups; rows of 6 chunks need runs of 4), the phase rotated
/// left by one, so that the 4 rows of a B fragment load (k = t + 4i) take
/// phases whose chunk pairs differ and its 32 lanes hit 32 banks.
SmemLayout mma_staging_layout(int64_t cols, unsigned elem_bytes);
/// The staging of a wgmma dot's 16-bit operand of `rows` x `cols` (tile/
/// mma.cpp wgmma_gap): the canonical layout a shared-memory matrix
/// descriptor names with a W-byte swizzle, W = 128 when a row is a multiple
/// of 128 bytes (column blocks of 64 elements, each `rows` x 128 bytes,
/// block_bytes apart), else the row's 64 or 32 bytes: row r of a block at r
/// W, its 16-byte chunk c at (c ^ phase) 16 with phase = (r / (128 / W)) %
/// (W / 16): the address bits [4, 4 + log2(W / 16)) XORed with bits [7, ..)
/// of a block whose base is 8 W aligned (PTX's 128/64/32-byte swizzle
/// modes). For W = 128 and one block it is mma_staging_layout's map. Other
/// row lengths: mma_staging_layout (no wgmma).
SmemLayout wgmma_staging_layout(int64_t rows, int64_t cols);
/// The scratch of re-layouts and the FMA dot's b (lower_tile_map.cpp's
/// tile_convert), registers of `elem_bytes`: the row-major index, each
/// 16-byte chunk XORed by its 128-byte line's number mod 8 (lanes reading
/// vectors 32 words apart or a column of a 32-wide tile hit distinct banks;
/// a vector stays inside its chunk, a line inside itself).
SmemLayout scratch_smem_layout(unsigned elem_bytes);
/// A 2-D [R, C] tile, row-major, with the column chunks of `vec` elements
/// XORed by the row's phase ((row / per_phase) % max_phase). vec, per_phase
/// and max_phase are chosen so that the lanes of one wavefront reading a
/// column chunk (one vec-wide access per lane) hit distinct banks.
SmemLayout swizzled_smem_layout(const std::vector<int64_t> &shape, unsigned elem_bytes,
                                unsigned vec);
/// The unswizzled row-major layout (for comparison in tests and dumps).
SmemLayout row_major_smem_layout(const std::vector<int64_t> &shape);
/// Wavefronts (shared-memory transactions) for `lanes` lanes each reading
/// `vec` elements of `elem_bytes` at coordinates coords[lane] through `s`
/// (the row-major index of the tile; through smem_place for an affine `s`,
/// of [R, C] rows of the shape's last dim, or the index itself for lines).
unsigned smem_wavefronts(const SmemLayout &s, const std::vector<uint32_t> &coords, unsigned vec,
                         unsigned elem_bytes);

} // namespace etl
