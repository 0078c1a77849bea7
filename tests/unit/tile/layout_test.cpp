// Tests of tile/layout.h: the linear layouts' maps, exactly. Blocked
// layouts own every element once, a slice is the parent's map with one
// coordinate dropped, inversion undoes apply, conversions take the path the
// maps imply, and the swizzled shared-memory layout is a bijection whose
// column reads hit distinct banks where the row-major one conflicts.
#include "tile/layout.h"

#include <doctest/doctest.h>

#include <map>

using namespace etl;

namespace {

/// Calls f(r, l, w, coord) for every hardware index of `l`.
template <class F> void each_hw(const Layout &l, F f) {
  for (uint32_t w = 0; w < l.num_warps(); ++w)
    for (uint32_t ln = 0; ln < 32; ++ln)
      for (uint32_t r = 0; r < l.num_regs(); ++r)
        f(r, ln, w, l.apply(r, ln, w));
}

/// How many hardware indices hold each coordinate.
std::map<uint32_t, int> owners(const Layout &l) {
  std::map<uint32_t, int> n;
  each_hw(l, [&](uint32_t, uint32_t, uint32_t, uint32_t c) { ++n[c]; });
  return n;
}

} // namespace

TEST_CASE("blocked 16x128, vec 4, 4 warps: the bases of TILE-IR.md (a)") {
  Layout l = default_layout({16, 128}, 4, 4);
  CHECK(l.str() == "ll<16x128 reg=[(0,1),(0,2),(4,0),(8,0)] lane=[(0,4),(0,8),(0,16),(0,32),"
                   "(0,64)] warp=[(1,0),(2,0)]>");
  CHECK(l.contiguous_regs(1) == 4);
  CHECK(l.contiguous_regs(0) == 1);
  // Element (row, col) of register r, lane l, warp w, written out.
  CHECK(l.unpack(l.apply(0, 0, 0)) == std::vector<int64_t>{0, 0});
  CHECK(l.unpack(l.apply(3, 0, 0)) == std::vector<int64_t>{0, 3});
  CHECK(l.unpack(l.apply(1, 1, 0)) == std::vector<int64_t>{0, 5});
  CHECK(l.unpack(l.apply(4, 31, 3)) == std::vector<int64_t>{7, 124});
  CHECK(l.unpack(l.apply(15, 31, 3)) == std::vector<int64_t>{15, 127});
}

TEST_CASE("blocked layouts are bijective when the tile fills the threads") {
  for (auto [shape, vec] : std::vector<std::pair<std::vector<int64_t>, unsigned>>{
           {{16, 128}, 4}, {{16, 128}, 1}, {{64, 64}, 2}, {{4, 8, 32}, 4}, {{2048}, 8}}) {
    Layout l = default_layout(shape, vec, 4);
    INFO(l.str());
    CHECK(l.injective());
    CHECK(l.surjective());
    std::map<uint32_t, int> n = owners(l);
    CHECK(n.size() == size_t(1) << l.coord_bits());
    for (const auto &kv : n)
      CHECK(kv.second == 1);
  }
}

TEST_CASE("a small tile is replicated, never left without an owner") {
  Layout l = default_layout({16}, 1, 4); // 16 elements, 128 threads
  CHECK(l.surjective());
  CHECK_FALSE(l.injective());
  CHECK(l.has_replicas());
  std::map<uint32_t, int> n = owners(l);
  CHECK(n.size() == 16);
  for (const auto &kv : n)
    CHECK(kv.second == 8); // 128 threads / 16 elements
  // Non-power-of-two: padded to 32, every padded coordinate owned.
  Layout p = default_layout({24, 20}, 1, 4);
  CHECK(p.lg == std::vector<unsigned>{5, 5});
  CHECK(p.surjective());
}

TEST_CASE("slice: the parent's map with the reduced axis dropped") {
  Layout parent = default_layout({16, 128}, 4, 4);
  Layout s = slice_layout(parent, 1);
  CHECK(s.str() == "ll<16 reg=[4,8] lane=[0,0,0,0,0] warp=[1,2]>");
  CHECK(s.kind == LayoutKind::Slice);
  CHECK(s.surjective());
  // Thread (lane, warp) holds row r in the slice iff it held row r anywhere.
  for (uint32_t w = 0; w < 4; ++w)
    for (uint32_t ln = 0; ln < 32; ++ln) {
      std::map<int64_t, bool> rows;
      for (uint32_t r = 0; r < parent.num_regs(); ++r)
        rows[parent.unpack(parent.apply(r, ln, w))[0]] = true;
      std::map<int64_t, bool> srows;
      for (uint32_t r = 0; r < s.num_regs(); ++r)
        srows[s.unpack(s.apply(r, ln, w))[0]] = true;
      CHECK(rows == srows);
    }
  Layout s0 = slice_layout(parent, 0); // the columns: lanes and registers
  CHECK(s0.str() == "ll<128 reg=[1,2] lane=[4,8,16,32,64] warp=[0,0]>");
}

TEST_CASE("expand, squash, broadcast and transpose keep the map") {
  Layout l = default_layout({16, 128}, 4, 4);
  Layout e = expand_layout(slice_layout(l, 1), 1);
  CHECK(e.shape == std::vector<int64_t>{16, 1});
  CHECK(squash_layout(l, 1) == e);
  Layout b = broadcast_layout(e, 1, 128);
  CHECK(b.shape == std::vector<int64_t>{16, 128});
  CHECK(b.surjective());
  Layout t = transpose_layout(l);
  CHECK(t.shape == std::vector<int64_t>{128, 16});
  each_hw(l, [&](uint32_t r, uint32_t ln, uint32_t w, uint32_t c) {
    std::vector<int64_t> a = l.unpack(c), bt = t.unpack(t.apply(r, ln, w));
    CHECK(a[0] == bt[1]);
    CHECK(a[1] == bt[0]);
  });
  auto rs = reshape_layout(l, {2048});
  REQUIRE(rs);
  CHECK(rs->reg == l.reg);
  // [12, 16] packs (r, c) as 16 r + c, [192] as the index: a renaming.
  Layout d = default_layout({12, 16}, 1, 4);
  auto flat = reshape_layout(d, {192});
  REQUIRE(flat);
  each_hw(d, [&](uint32_t r, uint32_t ln, uint32_t w, uint32_t c) {
    std::vector<int64_t> a = d.unpack(c), f = flat->unpack(flat->apply(r, ln, w));
    CHECK(f[0] == a[0] * 16 + a[1]);
  });
  // A non-power-of-two dim after the first: the packings differ (data moves).
  CHECK_FALSE(reshape_layout(default_layout({12, 12}, 1, 4), {144}));
  CHECK_FALSE(reshape_layout(default_layout({48}, 1, 4), {4, 12}));
}

TEST_CASE("invert undoes apply (Gauss-Jordan over F2)") {
  for (const Layout &l :
       {default_layout({16, 128}, 4, 4), slice_layout(default_layout({16, 128}, 4, 4), 1),
        default_layout({32, 32}, 2, 4)}) {
    for (uint32_t c = 0; c < (1u << l.coord_bits()); ++c) {
      auto hw = invert(l, c);
      REQUIRE(hw);
      uint32_t r = uint32_t(*hw & (l.num_regs() - 1));
      uint32_t ln = uint32_t(*hw >> l.reg.size() & 31);
      uint32_t w = uint32_t(*hw >> (l.reg.size() + kLaneBits));
      CHECK(l.apply(r, ln, w) == c);
    }
  }
}

TEST_CASE("conversion paths follow from the maps") {
  Layout a = default_layout({16, 128}, 4, 4);
  CHECK(convert_path(a, a) == ConvertPath::None);
  Layout swapped = a;
  std::swap(swapped.reg[0], swapped.reg[1]);
  CHECK(convert_path(a, swapped) == ConvertPath::Registers);
  // vec 1 vs vec 4: the same rows per warp, columns move between lanes.
  CHECK(convert_path(a, default_layout({16, 128}, 1, 4)) == ConvertPath::Shuffle);
  // Rows move between warps.
  CHECK(convert_path(a, transpose_layout(default_layout({128, 16}, 4, 4))) == ConvertPath::Scratch);
  CHECK(convert_path(slice_layout(a, 1), uniform_layout({16}, 4)) == ConvertPath::Scratch);
}

TEST_CASE("shuffle plans: one shfl.idx per register inside a warp, or none") {
  // gemv's x for f16 weights: loaded 4 floats per lane (one 16-byte access
  // of 32 lanes), needed 8 per lane (lanes 16..31 copies of 0..15).
  Layout from = blocked_layout({128}, 4, {0}, 8);
  Layout to = slice_layout(default_layout({32, 128}, 8, 8), 0);
  std::optional<ShufflePlan> p = shuffle_plan(from, to);
  REQUIRE(p);
  REQUIRE(p->src_reg.size() == to.num_regs());
  for (uint32_t w = 0; w < to.num_warps(); ++w)
    for (uint32_t l = 0; l < 32; ++l)
      for (uint32_t r = 0; r < to.num_regs(); ++r) {
        uint32_t src = p->base[r];
        for (unsigned k = 0; k < kLaneBits; ++k)
          src ^= (l >> k & 1u) ? p->lane_mask[r][k] : 0u;
        for (size_t j = 0; j < p->warp_mask[r].size(); ++j)
          src ^= (w >> j & 1u) ? p->warp_mask[r][j] : 0u;
        if (p->own[r])
          src = l;
        CHECK(from.apply(p->src_reg[r], src, w) == to.apply(r, l, w));
      }
  // A register rename needs no shuffle at all.
  Layout a = default_layout({16, 128}, 4, 4), swapped = a;
  std::swap(swapped.reg[0], swapped.reg[1]);
  p = shuffle_plan(a, swapped);
  REQUIRE(p);
  for (bool own : p->own)
    CHECK(own);
  // Rows that move between warps cannot be shuffled.
  CHECK_FALSE(shuffle_plan(slice_layout(a, 1), default_layout({16}, 1, 4)));
}

TEST_CASE("access efficiency and store requests follow from the maps") {
  // 32 lanes x 16 bytes, contiguous: every sector used.
  CHECK(access_efficiency(blocked_layout({128}, 4, {0}, 8), 4, 0, 4) == doctest::Approx(1.0));
  // 8 floats per lane read as two 16-byte halves: half of each sector per request.
  Layout eight = slice_layout(default_layout({32, 128}, 8, 8), 0);
  CHECK(access_efficiency(eight, 4, 0, 4) == doctest::Approx(0.5));
  // A row sum held by one lane of each of 8 warps, two rows each: 16
  // single-lane stores; the coalesced layout: one request.
  Layout sums = slice_layout(default_layout({16, 128}, 4, 8), 1);
  CHECK(store_requests(sums, 1) == 16);
  CHECK(store_requests(default_layout({16}, 1, 8), 1) == 1);
}

TEST_CASE("FMA dot operands: each thread holds the rows and columns its outputs need") {
  Layout c = default_layout({16, 32}, 1, 4);
  Layout la = dot_operand_layout(c, 0, {16, 64}), lb = dot_operand_layout(c, 1, {64, 32});
  CHECK(la.surjective());
  CHECK(lb.surjective());
  each_hw(c, [&](uint32_t, uint32_t ln, uint32_t w, uint32_t cc) {
    std::vector<int64_t> mn = c.unpack(cc);
    std::map<int64_t, bool> ks_a, ks_b;
    for (uint32_t r = 0; r < la.num_regs(); ++r) {
      std::vector<int64_t> mk = la.unpack(la.apply(r, ln, w));
      if (mk[0] == mn[0])
        ks_a[mk[1]] = true;
    }
    for (uint32_t r = 0; r < lb.num_regs(); ++r) {
      std::vector<int64_t> kn = lb.unpack(lb.apply(r, ln, w));
      if (kn[1] == mn[1])
        ks_b[kn[0]] = true;
    }
    CHECK(ks_a.size() == 64);
    CHECK(ks_b.size() == 64);
  });
}

TEST_CASE("swizzled shared memory: a bijection without bank conflicts on column reads") {
  for (auto [shape, bytes, vec] : std::vector<std::tuple<std::vector<int64_t>, unsigned, unsigned>>{
           {{32, 32}, 4, 1}, {{32, 32}, 4, 4}, {{64, 64}, 2, 8}, {{16, 128}, 4, 4}}) {
    SmemLayout s = swizzled_smem_layout(shape, bytes, vec);
    INFO(s.str());
    CHECK(s.bijective());
    std::map<uint32_t, int> hit;
    for (uint32_t off = 0; off < (1u << s.offset.size()); ++off)
      ++hit[s.apply(off)];
    CHECK(hit.size() == size_t(1) << s.offset.size());
  }
  // 32 lanes read column 5 of a 32x32 f32 tile, one element each.
  std::vector<uint32_t> col;
  for (uint32_t r = 0; r < 32; ++r)
    col.push_back(r << 5 | 5);
  CHECK(smem_wavefronts(row_major_smem_layout({32, 32}), col, 1, 4) == 32);
  CHECK(smem_wavefronts(swizzled_smem_layout({32, 32}, 4, 1), col, 1, 4) == 1);
  // 32 lanes read a 16-byte chunk (4 x f32) of column chunk 0 of rows 0..31:
  // 8 lanes per wavefront at best, so 4 wavefronts without conflicts.
  std::vector<uint32_t> chunk;
  for (uint32_t r = 0; r < 32; ++r)
    chunk.push_back(r << 5);
  CHECK(smem_wavefronts(row_major_smem_layout({32, 32}), chunk, 4, 4) == 32);
  CHECK(smem_wavefronts(swizzled_smem_layout({32, 32}, 4, 4), chunk, 4, 4) == 4);
  // Row reads stay conflict-free after swizzling.
  std::vector<uint32_t> row;
  for (uint32_t c = 0; c < 32; ++c)
    row.push_back(7u << 5 | c);
  CHECK(smem_wavefronts(swizzled_smem_layout({32, 32}, 4, 1), row, 1, 4) == 1);
}

TEST_CASE("staging layouts: the lowering's swizzles as data (smem_place)") {
  SmemInt a;
  // A [.., 48] f16 operand: 96-byte rows, 6 chunks, max_phase 2, per_phase 1.
  SmemLayout h = mma_staging_layout(48, 2);
  INFO(h.str());
  CHECK(h.row_bytes == 96);
  CHECK(h.max_phase == 2);
  CHECK(h.per_phase == 1);
  CHECK(smem_place(a, h, 1, 0) == 96 + 16); // chunk 0 ^ phase 1
  CHECK(smem_place(a, h, 1, 8) == 96);      // chunk 1 ^ phase 1
  CHECK(smem_place(a, h, 0, 9) == 16 + 2);
  CHECK(smem_place(a, h, 2, 47) == 192 + 5 * 16 + 14);
  // 16-bit rows of 32 bytes: 4 rows share a 128-byte line and a phase.
  SmemLayout n = mma_staging_layout(16, 2);
  CHECK(n.per_phase == 4);
  CHECK(n.max_phase == 2);
  CHECK(smem_place(a, n, 3, 0) == 96);
  CHECK(smem_place(a, n, 4, 0) == 128 + 16);
  // A tf32 dot's f32 rows of 32 floats: 8 chunks, the phase rotated left.
  SmemLayout f = mma_staging_layout(32, 4);
  CHECK(f.rotate == 1);
  CHECK(f.per_phase == 1);
  CHECK(smem_place(a, f, 1, 0) == 128 + 2 * 16); // phase 1 -> 2
  CHECK(smem_place(a, f, 4, 1) == 512 + 1 * 16 + 4); // phase 4 -> 1
  CHECK(smem_place(a, f, 7, 5) == 896 + (1 ^ 7) * 16 + 4); // phase 7 -> 7
  // Rows of 24 floats (6 chunks): runs of 4 rows take a phase.
  CHECK(mma_staging_layout(24, 4).per_phase == 4);
  // The re-layout scratch: 128-byte lines of the row-major index, the
  // chunk XORed by the line's number mod 8 (element units).
  SmemLayout l = scratch_smem_layout(4);
  CHECK(smem_place(a, l, 0, 5) == 5);
  CHECK(smem_place(a, l, 0, 33) == (33 ^ 4));
  CHECK(smem_place(a, l, 0, 7 * 32 + 2) == ((7 * 32 + 2) ^ 28));
  CHECK(smem_place(a, l, 0, 8 * 32 + 3) == 8 * 32 + 3);
  CHECK(smem_place(a, scratch_smem_layout(8), 0, 16 + 1) == ((16 + 1) ^ 2));
  // The bank check reads the affine part: an ldmatrix phase (8 lanes, 16
  // bytes each) over chunk 0 of rows 0..7 of 128-byte rows is one
  // wavefront, and 8 without the phase.
  std::vector<uint32_t> rows;
  for (uint32_t r = 0; r < 8; ++r)
    rows.push_back(r * 64);
  SmemLayout w = mma_staging_layout(64, 2);
  CHECK(smem_wavefronts(w, rows, 8, 2) == 1);
  w.max_phase = 1;
  CHECK(smem_wavefronts(w, rows, 8, 2) == 8);
  // 96-byte rows: rows 0 and 4 still share a bank group (2 wavefronts; 2
  // phases cannot separate 8 rows whose pitch is 3 chunks mod 8 apart).
  std::vector<uint32_t> rows48;
  for (uint32_t r = 0; r < 8; ++r)
    rows48.push_back(r * 48);
  CHECK(smem_wavefronts(h, rows48, 8, 2) == 2);
  // A 32-lane column read of a 32-wide f32 tile in the scratch: 8 phases
  // spread the 32 rows over 8 banks (4 wavefronts; the row-major index
  // alone puts them all in one bank: 32).
  std::vector<uint32_t> col;
  for (uint32_t r = 0; r < 32; ++r)
    col.push_back(r * 32 + 5);
  CHECK(smem_wavefronts(l, col, 1, 4) == 4);
}

TEST_CASE("mma m16n8k16 layouts: PTX's fragment maps, exactly") {
  // Element i of lane `ln` (PTX ISA, "Matrix Fragments for mma.m16n8k16").
  for (uint32_t ln = 0; ln < 32; ++ln) {
    int64_t g = ln >> 2, t = ln & 3;
    Layout a = mma_layout(MmaOperand::A, {16, 16}, 1);
    Layout b = mma_layout(MmaOperand::B, {16, 8}, 1);
    Layout c = mma_layout(MmaOperand::Acc, {16, 8}, 1);
    for (uint32_t i = 0; i < 8; ++i)
      CHECK(a.unpack(a.apply(i, ln, 0)) ==
            std::vector<int64_t>{g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)});
    for (uint32_t i = 0; i < 4; ++i) {
      CHECK(b.unpack(b.apply(i, ln, 0)) == std::vector<int64_t>{2 * t + (i & 1) + 8 * (i >> 1), g});
      CHECK(c.unpack(c.apply(i, ln, 0)) == std::vector<int64_t>{g + 8 * (i >> 1), 2 * t + (i & 1)});
    }
  }
  // A 64x64 accumulator over 4 warps: each element once; warp w owns rows
  // 16w .. 16w+15, and its registers hold the 8 n-atoms.
  Layout acc = mma_layout(MmaOperand::Acc, {64, 64}, 4);
  CHECK(acc.kind == LayoutKind::Mma);
  CHECK(acc.injective());
  CHECK(acc.surjective());
  CHECK(acc.num_regs() == 32);
  for (uint32_t w = 0; w < 4; ++w)
    for (uint32_t r = 0; r < 32; ++r) {
      std::vector<int64_t> rc = acc.unpack(acc.apply(r, 5, w));
      CHECK(rc[0] / 16 == w);
    }
  // More warps than row blocks: the extra warps are replicas.
  Layout rep = mma_layout(MmaOperand::A, {16, 32}, 2);
  CHECK(rep.has_replicas());
  CHECK(rep.surjective());
}

TEST_CASE("mma m16n8k16 layouts: the accumulators of two adjacent n8 tiles are the A fragment "
          "of one k16 slice (chained dots read P in place, lower/lower_tile_mma.cpp)") {
  // Accumulator element index e (an f32 register) and A element index e
  // (half e & 1 of packed register e >> 1) hold the same coordinate, for
  // every lane and warp: A register r is the pair (acc[2r], acc[2r + 1]).
  for (const std::vector<int64_t> &shape :
       {std::vector<int64_t>{16, 16}, {16, 32}, {64, 32}, {32, 128}})
    for (unsigned warps : {1u, 2u, 4u}) {
      CAPTURE(shape[0]);
      CAPTURE(shape[1]);
      CAPTURE(warps);
      Layout acc = mma_layout(MmaOperand::Acc, shape, warps);
      Layout a = mma_layout(MmaOperand::A, shape, warps);
      CHECK(acc == a);
    }
  // In PTX's terms: register j of n8 tile q's accumulators (row g + 8 (j >>
  // 1), col 8 q + 2t + (j & 1)) is A element 4 q + j of the k16 slice
  // holding tiles q and q ^ 1 (row g + 8 ((i >> 1) & 1), col 2t + (i & 1) +
  // 8 (i >> 2)).
  for (uint32_t ln = 0; ln < 32; ++ln) {
    int64_t g = ln >> 2, t = ln & 3;
    for (uint32_t q = 0; q < 2; ++q)
      for (uint32_t j = 0; j < 4; ++j) {
        const uint32_t i = 4 * q + j;
        CHECK(std::vector<int64_t>{g + 8 * (j >> 1), 8 * q + 2 * t + (j & 1)} ==
              std::vector<int64_t>{g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)});
      }
  }
}
