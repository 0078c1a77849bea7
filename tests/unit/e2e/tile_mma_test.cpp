//===- tests/unit/e2e/tile_mma_test.cpp - Tensor-core dots on the tile IR -===//
//
// What this pins (tile/mma.cpp, lower/lower_tile_mma.cpp):
//
//   path     bf16 dots of power-of-two m16n8k16 shapes with an m16 row
//            block per warp take the tile IR (ETL_TILE_DEBUG's lowering
//            lines) with mma.sync and ldmatrix in the PTX, and so do
//            `acc += dot(..)` K loops, fewer row blocks than warps and
//            shapes that are not powers of two (48 x 48 x 40: the layouts
//            over 64 x 64 x 64, mma and ldmatrix for the real blocks only);
//            f16/bf16 dots off the mma shape and one-row ones take the tile
//            IR's FMA dot;
//   copies   a b that is a load (through a transpose too) goes global ->
//            shared by cp.async, element by element off a 16-byte base;
//   ring     in a K/V loop (prefill's attn, small) those copies run one
//            iteration ahead in a two-slot ring: equal to ETL_TILE_RING=0
//            and a C reference bit for bit, ragged S too, race-checked;
//   layouts  the result is mma_layout(Acc, ..) (warps own row blocks), a
//            cast of an accumulator is the next dot's A in registers (no
//            shared staging of P: its buffer holds only b);
//   sim      ragged M (100 rows: the last tile is partial), small integers
//            whose sums f32 holds exactly: a C reference bit for bit, at 1
//            and 4 warps, with b, k and v off a 16-byte base, and under the
//            race check (the staging barriers are in place); with operands
//            whose sums round (exponents spread over 2^-10 .. 2^-2), the
//            non-power-of-two, chained, FMA and one-row dots equal an f32
//            k-order reference bit for bit.
//
//===----------------------------------------------------------------------===//
#include "compile_run.h"
#include "driver/pipeline.h"
#include "lower/plan.h"
#include "tile/passes.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

using namespace etl;
using namespace etl::testing;

namespace {

// plain: A staged, B [K, N] (ldmatrix.trans); nt: B = transpose(load(k))
// staged as [N, K] rows (plain ldmatrix); chain: P = bf16(s / 16) from the
// accumulator registers as the A of dot(P, v); fused: acc * 2 + dot(..)
// in a loop, the mma accumulating onto acc * 2 (3 times plain's c);
// twice: b used by two dots (as it is and transposed) is staged from
// registers, not copied by cp.async.
const char *kMma = R"(
kernel tm<M: dim>(a: tensor<bf16>[M, 32], b: tensor<bf16>[32, 32], k: tensor<bf16>[32, 32],
                  v: tensor<bf16>[32, 16], c: tensor<f32>[M, 32], ct: tensor<f32>[M, 32],
                  o: tensor<f32>[M, 16], cf: tensor<f32>[M, 32], cw: tensor<f32>[M, 32]) {
  task plain[i in 0 .. cdiv(M, 64)] {
    store(c[i * 64 .. +64, 0 .. +32], dot(load(a[i * 64 .. +64, 0 .. +32]), load(b[0 .. +32, 0 .. +32])));
  }
  task nt[i in 0 .. cdiv(M, 64)] {
    store(ct[i * 64 .. +64, 0 .. +32],
          dot(load(a[i * 64 .. +64, 0 .. +32]), transpose(load(k[0 .. +32, 0 .. +32]))));
  }
  task chain[i in 0 .. cdiv(M, 64)] {
    let s = dot(load(a[i * 64 .. +64, 0 .. +32]), transpose(load(k[0 .. +32, 0 .. +32])));
    store(o[i * 64 .. +64, 0 .. +16], dot(cast<bf16>(s * 0.0625), load(v[0 .. +32, 0 .. +16])));
  }
  task fused[i in 0 .. cdiv(M, 64)] {
    var acc = zeros<f32>[64, 32];
    for j in 0 .. 2 {
      acc = acc * 2.0 + dot(load(a[i * 64 .. +64, 0 .. +32]), load(b[0 .. +32, 0 .. +32]));
    }
    store(cf[i * 64 .. +64, 0 .. +32], acc);
  }
  task twice[i in 0 .. cdiv(M, 64)] {
    let w = load(b[0 .. +32, 0 .. +32]);
    let x = load(a[i * 64 .. +64, 0 .. +32]);
    store(cw[i * 64 .. +64, 0 .. +32], dot(x, w) + dot(x, transpose(w)));
  }
}
)";

int64_t small(int64_t i, int64_t salt) { return (i * 7 + salt) % 5 - 2; } // -2 .. 2

/// x[i] = small(i, salt) and h[i] its bf16 bits, for every i of h.
void fill(std::vector<uint16_t> &h, std::vector<int64_t> &x, int64_t salt) {
  for (size_t i = 0; i < h.size(); ++i) {
    x[i] = small(int64_t(i), salt);
    h[i] = bf16_bits(float(x[i]));
  }
}

size_t count(const std::string &s, const char *what) {
  size_t n = 0, at = 0;
  while ((at = s.find(what, at)) != std::string::npos) {
    ++n;
    ++at;
  }
  return n;
}

/// ETL_TILE_DEBUG's lowering lines and the PTX of `src` for `target`.
std::string lowering_lines(const std::string &src, const char *target, std::string &ptx,
                           unsigned threads = 128) {
  CompileOptions o;
  o.targets = {target};
  o.emit = "ptx";
  o.threads_per_cta = threads;
  std::string err, lines;
  int code = compile_text_tile_debug(src, o, "lowering ", ptx, err, lines);
  INFO(err);
  REQUIRE(code == 0);
  return lines;
}

/// The tile IR of the first kernel of `text`, layouts assigned, shared memory planned.
TileModule tiles(const std::string &text, unsigned threads, Compilation &c) {
  c.file = c.sm.add("t.etl", text);
  REQUIRE_MESSAGE(compile_front(c), c.diag.render());
  const KernelDecl &k = c.program->kernels[0];
  TileModule m = build_tile_ir(k, c.graph, *c.program, threads);
  assign_layouts(m, k, c.graph, c.diag);
  plan_shared(m, c.target);
  std::vector<std::string> errs = verify_tile(m);
  CHECK_MESSAGE(errs.empty(), (errs.empty() ? "" : errs[0]));
  return m;
}

void dots(const std::vector<TOp> &body, std::vector<const TOp *> &out) {
  for (const TOp &op : body) {
    if (op.kind == TileOpKind::Dot)
      out.push_back(&op);
    dots(op.body, out);
  }
}

} // namespace

TEST_CASE("tile mma: bf16 dots take the tile IR with mma.sync and ldmatrix") {
  for (const char *target : {"sm_90", "sm_80"}) {
    INFO("target " << target);
    std::string ptx;
    std::string lines = lowering_lines(kMma, target, ptx);
    CHECK(lines == "lowering plain: tile IR\nlowering nt: tile IR\nlowering chain: tile IR\n"
                   "lowering fused: tile IR\nlowering twice: tile IR\n");
    // Each of the 4 warps owns one m16 row block of the 64 rows. plain and
    // nt: 2 k16 x 4 n8 mmas; chain: that and 2 k16 x 2 n8; fused as plain,
    // its two-iteration ring loop (tile/pipeline.cpp) twice in the PTX
    // (ETL_TILE_RING=0: once, 52 mma, 14 and 24 ldmatrix); twice: 16.
    CHECK(count(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") ==
          8 + 8 + 8 + 4 + 2 * 8 + 16);
    // .trans: plain's b (2 k16 x 2 n16 units) and chain's v (2 k16 x 1);
    // plain: the staged a of plain, nt and chain's first dot (2 k16 each),
    // the [N, K] b of nt and chain (2 x 2 each), and fused as plain (twice).
    // No ldmatrix reads P.
    CHECK(count(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 4 + 2 + 2 * 4 + 4);
    CHECK(count(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16") ==
          3 * 2 + 2 * 4 + 2 + 2 * 2 + 4 + 2);
    // Every b is a load: copied global -> shared by cp.async, not through
    // registers (plain, nt, chain's k and v; fused: its loop is a ring of
    // a and b, tile/pipeline.cpp, issued before the loop and in it): 8
    // sites. Beside a site's per-chunk loop, the interior path
    // (tile_mma_copy) issues its chunks unrolled; LLVM merges the two calls
    // where a thread copies one chunk (plain, nt, chain's k) and may merge
    // chain's v (+1 otherwise); fused's ring of a and b keeps 2 more before
    // the loop and again in it.
    const size_t copies = count(ptx, "cp.async.cg.shared.global");
    CHECK(copies >= 8 + 2 * 2);
    CHECK(copies <= 8 + 1 + 2 * 2);
  }
}

TEST_CASE("tile mma: result layouts, and P in registers as the next dot's A") {
  Compilation c;
  TileModule m = tiles(kMma, 128, c);
  for (const TileFunc &f : m.funcs) {
    CAPTURE(f.name);
    std::vector<const TOp *> ds;
    dots(f.body, ds);
    REQUIRE(!ds.empty());
    for (const TOp *d : ds) {
      const TValue &r = f.values[size_t(d->results[0])];
      CHECK(f.layouts[size_t(r.layout)] == mma_layout(MmaOperand::Acc, r.shape, 4));
      MmaStaging s = mma_staging(f, *d);
      CHECK(s.ok);
      CHECK(s.b_nk == (((f.name == "nt" || f.name == "chain") && d == ds.front()) ||
                       (f.name == "twice" && d == ds.back())));
    }
    // The chain's second dot reads a from registers: its buffer is v's alone.
    MmaStaging last = mma_staging(f, *ds.back());
    CHECK(last.a_regs == (f.name == "chain")); // fused: a is loaded inside the loop
    if (f.name == "chain") {
      CHECK(last.bytes == 2 * 32 * 16);
      CHECK(f.smem.at(size_t(ds.back()->smem)).bytes == 2 * 32 * 16);
    } else {
      CHECK(last.bytes == 2 * 64 * 32 + 2 * 32 * 32); // a [64, 32], then b
    }
  }
}

TEST_CASE("tile mma: an acc += dot K loop, a dot of fewer row blocks than warps and one of "
          "24 columns take the tile IR") {
  std::string ptx;
  std::string lines = lowering_lines(R"(
kernel g<M: dim, K: dim>(a: tensor<bf16>[M, K], b: tensor<bf16>[K, 32], c: tensor<f32>[M, 32],
                         d: tensor<f32>[M, 24], e: tensor<f32>[M, 32]) {
  task loop[i in 0 .. cdiv(M, 32)] {
    var acc = zeros<f32>[32, 32];
    for kk in 0 .. cdiv(K, 32) {
      acc += dot(load(a[i * 32 .. +32, kk * 32 .. +32]), load(b[kk * 32 .. +32, 0 .. +32]));
    }
    store(c[i * 32 .. +32, 0 .. +32], acc);
  }
  task odd[i in 0 .. cdiv(M, 64)] {
    store(d[i * 64 .. +64, 0 .. +24], dot(load(a[i * 64 .. +64, 0 .. +32]), load(b[0 .. +32, 0 .. +24])));
  }
  task few[i in 0 .. cdiv(M, 32)] {
    store(e[i * 32 .. +32, 0 .. +32], dot(load(a[i * 32 .. +32, 0 .. +32]), load(b[0 .. +32, 0 .. +32])));
  }
}
)",
                                     "sm_90", ptx);
  CHECK(lines.find("lowering loop: tile IR") != std::string::npos);
  CHECK(lines.find("lowering odd: tile IR") != std::string::npos);
  // 2 m16 row blocks over 4 warps: the warps split the columns too.
  CHECK(lines.find("lowering few: tile IR") != std::string::npos);
  // loop's K loop is a ring (tile/pipeline.cpp): three stages, its wait
  // leaves one group in flight.
  CHECK(ptx.find("cp.async.wait_group 1;") != std::string::npos);
}

TEST_CASE("tile mma: ragged bf16 dots equal a C reference bit for bit") {
  const int64_t M = 100;
  std::vector<uint16_t> a(M * 32), b(32 * 32), k(32 * 32), v(32 * 16);
  std::vector<int64_t> ai(a.size()), bi(b.size()), ki(k.size()), vi(v.size());
  fill(a, ai, 1);
  fill(b, bi, 2);
  fill(k, ki, 3);
  fill(v, vi, 4);
  std::vector<float> rc(M * 32), rt(M * 32), ro(M * 16), rw(M * 32); // rw: a b^T
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < 32; ++j) {
      int64_t s = 0, t = 0, w = 0;
      for (int64_t q = 0; q < 32; ++q) {
        s += ai[size_t(i * 32 + q)] * bi[size_t(q * 32 + j)];
        t += ai[size_t(i * 32 + q)] * ki[size_t(j * 32 + q)];
        w += ai[size_t(i * 32 + q)] * bi[size_t(j * 32 + q)];
      }
      rw[size_t(i * 32 + j)] = float(w);
      rc[size_t(i * 32 + j)] = float(s);
      rt[size_t(i * 32 + j)] = float(t);
    }
    for (int64_t j = 0; j < 16; ++j) {
      double s = 0; // P = t / 16 (|t| <= 128: exact in bf16), sums of multiples of 1/16
      for (int64_t q = 0; q < 32; ++q)
        s += double(rt[size_t(i * 32 + q)]) / 16.0 * double(vi[size_t(q * 16 + j)]);
      ro[size_t(i * 16 + j)] = float(s);
    }
  }
  struct Run {
    unsigned threads;
    bool race;
    size_t shift; // b, k and v this many elements past a 16-byte boundary
  } runs[] = {{32, false, 0}, {128, false, 0}, {128, true, 0}, {128, false, 1}};
  for (const Run &rn : runs) {
    CAPTURE(rn.threads);
    CAPTURE(rn.race);
    CAPTURE(rn.shift);
    // b's copy by cp.async needs a 16-byte aligned base; off it, element
    // by element (lower_tile_mma.cpp's tile_mma_copy).
    std::vector<uint16_t> bs(b.size() + 8), ks(k.size() + 8), vs(v.size() + 8);
    std::copy(b.begin(), b.end(), bs.begin() + long(rn.shift));
    std::copy(k.begin(), k.end(), ks.begin() + long(rn.shift));
    std::copy(v.begin(), v.end(), vs.begin() + long(rn.shift));
    std::vector<float> c(M * 32, -1.f), ct(M * 32, -1.f), o(M * 16, -1.f), cf(M * 32, -1.f),
        cw(M * 32, -1.f);
    RunOptions ro_;
    ro_.threads_per_cta = rn.threads;
    ro_.race_check = rn.race;
    std::string err = compile_and_run(kMma, "tile_mma_ragged", {{"M", M}},
                                      {{"a", a.data(), ETL_BF16, {M, 32}},
                                       {"b", bs.data() + rn.shift, ETL_BF16, {32, 32}},
                                       {"k", ks.data() + rn.shift, ETL_BF16, {32, 32}},
                                       {"v", vs.data() + rn.shift, ETL_BF16, {32, 16}},
                                       {"c", c.data(), ETL_F32, {M, 32}},
                                       {"ct", ct.data(), ETL_F32, {M, 32}},
                                       {"o", o.data(), ETL_F32, {M, 16}},
                                       {"cf", cf.data(), ETL_F32, {M, 32}},
                                       {"cw", cw.data(), ETL_F32, {M, 32}}},
                                      ro_);
    REQUIRE_MESSAGE(err.empty(), err);
    int bad_c = 0, bad_t = 0, bad_o = 0, bad_f = 0, bad_w = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      bad_c += c[i] != rc[i];
      bad_f += cf[i] != 3 * rc[i];
      bad_w += cw[i] != rc[i] + rw[i];
      bad_t += ct[i] != rt[i];
    }
    for (size_t i = 0; i < o.size(); ++i)
      bad_o += o[i] != ro[i];
    CHECK(bad_c == 0);
    CHECK(bad_t == 0);
    CHECK(bad_o == 0);
    CHECK(bad_f == 0);
    CHECK(bad_w == 0);
  }
}

// The K/V loop of prefill_attention's attn, small: K and V tiles of
// iteration j + 1 go global -> shared by cp.async (a two-slot ring) while
// iteration j's dots run; S = 40 leaves the last tile ragged (zero-filled
// rows at the element path's edge).
const char *kRing = R"(
kernel kv<S: dim>(q: tensor<bf16>[64, 32], k: tensor<bf16>[S, 32], v: tensor<bf16>[S, 32],
                  o: tensor<f32>[64, 32]) {
  task attn[i in 0 .. 1] {
    let qt = load(q[0 .. +64, 0 .. +32]);
    var acc = zeros<f32>[64, 32];
    for j in 0 .. cdiv(S, 16) {
      let s = dot(qt, transpose(load(k[j * 16 .. +16, 0 .. +32])));
      acc = acc + dot(cast<bf16>(s * 0.0625), load(v[j * 16 .. +16, 0 .. +32]));
    }
    store(o[0 .. +64, 0 .. +32], acc);
  }
}
)";

TEST_CASE("tile mma: a K/V loop's cp.async ring equals the unpipelined form bit for bit") {
  // The PTX: the ring's commit is not followed by its wait (the loads of
  // the next iteration stay in flight over the dots); without the ring
  // (ETL_TILE_RING=0) each dot commits and waits at once.
  std::string ptx, plain;
  lowering_lines(kRing, "sm_90", ptx);
  setenv("ETL_TILE_RING", "0", 1);
  lowering_lines(kRing, "sm_90", plain);
  unsetenv("ETL_TILE_RING");
  const char *at_once = "cp.async.commit_group;\n\tcp.async.wait_group 0;";
  CHECK(count(plain, at_once) == 2);
  CHECK(count(ptx, at_once) == 0);
  CHECK(count(ptx, "cp.async.wait_group 0") == 2); // in the loop and after it

  for (int64_t S : {int64_t(48), int64_t(40), int64_t(16)}) {
    CAPTURE(S);
    std::vector<uint16_t> q(64 * 32), k(size_t(S * 32)), v(k.size());
    std::vector<int64_t> qi(q.size()), ki(k.size()), vi(v.size());
    fill(q, qi, 1);
    fill(k, ki, 2);
    fill(v, vi, 3);
    std::vector<float> ref(64 * 32, 0.f);
    for (int64_t r = 0; r < 64; ++r)
      for (int64_t c = 0; c < 32; ++c) {
        double s = 0; // P = (q k^T) / 16, exact in bf16; sums of multiples of 1/16
        for (int64_t t = 0; t < S; ++t) {
          int64_t d = 0;
          for (int64_t x = 0; x < 32; ++x)
            d += qi[size_t(r * 32 + x)] * ki[size_t(t * 32 + x)];
          s += double(d) / 16.0 * double(vi[size_t(t * 32 + c)]);
        }
        ref[size_t(r * 32 + c)] = float(s);
      }
    for (int ring : {1, 0}) {
      for (bool race : {false, true}) {
        CAPTURE(ring);
        CAPTURE(race);
        std::vector<float> o(64 * 32, -1.f);
        RunOptions ro;
        ro.threads_per_cta = 128;
        ro.race_check = race;
        if (!ring)
          setenv("ETL_TILE_RING", "0", 1);
        std::string err = compile_and_run(kRing, "tile_mma_ring", {{"S", S}},
                                          {{"q", q.data(), ETL_BF16, {64, 32}},
                                           {"k", k.data(), ETL_BF16, {S, 32}},
                                           {"v", v.data(), ETL_BF16, {S, 32}},
                                           {"o", o.data(), ETL_F32, {64, 32}}},
                                          ro);
        unsetenv("ETL_TILE_RING");
        REQUIRE_MESSAGE(err.empty(), err);
        int bad = 0;
        for (size_t i = 0; i < o.size(); ++i)
          bad += o[i] != ref[i];
        CHECK(bad == 0);
      }
    }
  }
}

// Shapes that are not powers of two on tensor cores, and 16-bit dots off
// them: odd (48 x 48 @ 48 x 40: three m16 row blocks, five n8 tiles and
// three k16 steps of layouts over 64 x 64 x 64), loop (its K loop in steps
// of 16: a ring), chain (P = bf16(s / 16) of a 48 x 48 s as the A of a dot
// with 40 columns), fma (f16 [16, 24] @ [24, 12]: off the mma shape, the
// FMA dot) and row (bf16 [48] @ [48, 40]: one row, the FMA dot).
const char *kOdd = R"(
kernel od<M: dim>(a: tensor<bf16>[M, 48], b: tensor<bf16>[48, 40], q: tensor<bf16>[48, 48],
                  h: tensor<f16>[M, 24], g: tensor<f16>[24, 12], c: tensor<f32>[M, 40],
                  e: tensor<f32>[M, 40], o: tensor<f32>[M, 40], d: tensor<f32>[M, 12],
                  r: tensor<f32>[40]) {
  task odd[i in 0 .. cdiv(M, 48)] {
    store(c[i * 48 .. +48, 0 .. +40], dot(load(a[i * 48 .. +48, 0 .. +48]), load(b[0 .. +48, 0 .. +40])));
  }
  task loop[i in 0 .. cdiv(M, 48)] {
    var acc = zeros<f32>[48, 40];
    for k in 0 .. 3 {
      acc += dot(load(a[i * 48 .. +48, k * 16 .. +16]), load(b[k * 16 .. +16, 0 .. +40]));
    }
    store(e[i * 48 .. +48, 0 .. +40], acc);
  }
  task chain[i in 0 .. cdiv(M, 48)] {
    let s = dot(load(a[i * 48 .. +48, 0 .. +48]), load(q[0 .. +48, 0 .. +48]));
    store(o[i * 48 .. +48, 0 .. +40], dot(cast<bf16>(s * 0.0625), load(b[0 .. +48, 0 .. +40])));
  }
  task fma[i in 0 .. cdiv(M, 16)] {
    store(d[i * 16 .. +16, 0 .. +12], dot(load(h[i * 16 .. +16, 0 .. +24]), load(g[0 .. +24, 0 .. +12])));
  }
  task row[u in 0 .. 1] {
    store(r[0 .. +40], dot(load(a[0, 0 .. +48]), load(b[0 .. +48, 0 .. +40])));
  }
}
)";

TEST_CASE("tile mma: non-power-of-two, chained, off-shape and one-row 16-bit dots take the tile "
          "IR and equal a k-order reference bit for bit") {
  for (const char *target : {"sm_90", "sm_80"}) {
    INFO("target " << target);
    std::string ptx;
    CHECK(lowering_lines(kOdd, target, ptx) ==
          "lowering odd: tile IR\nlowering loop: tile IR\nlowering chain: tile IR\n"
          "lowering fma: tile IR\nlowering row: tile IR\n");
    // 4 warps over 64 x 64 padded rows and columns (odd and chain's outer
    // dot: a row block each; the fourth's rows 48 .. 63 are padding, read
    // as row 0): per warp 3 k16 x 5 n8 mmas, no mma for the padded
    // n8 tiles 40 .. 63 or k16 step 48 .. 63; chain's first dot 3 x 6;
    // loop (a ring): 5 n8 x 1 k16, warps over rows only (a split of the
    // columns would hold padded accumulators: mma_dot_col_warps).
    CHECK(count(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") ==
          15 + 15 + 18 + 5);
  }
  const int64_t M = 100; // ragged: the last tiles are partial
  // m * 2^e, |m| <= 127 (exact in bf16 and f16), e in -10 .. -2: sums round.
  auto wide = [](size_t i, unsigned salt) {
    const int m = int((i * 2654435761u + salt) % 255u) - 127, e = int((i * 7 + salt) % 9) - 10;
    return std::ldexp(float(m), e);
  };
  std::vector<float> af(M * 48), bf(48 * 40), qf(48 * 48), hf(M * 24), gf(24 * 12);
  std::vector<uint16_t> a(af.size()), b(bf.size()), q(qf.size()), h(hf.size()), g(gf.size());
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = bf16_bits(af[i] = wide(i, 1));
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = bf16_bits(bf[i] = wide(i, 2));
  for (size_t i = 0; i < q.size(); ++i)
    q[i] = bf16_bits(qf[i] = wide(i, 3));
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = half_bits(hf[i] = wide(i, 4));
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = half_bits(gf[i] = wide(i, 5));
  // out[m, n] = the f32 sum over k, in k order from 0, of x(m, k) y(k, n).
  auto ref = [](int64_t rows, int64_t cols, int64_t K, auto x, auto y) {
    std::vector<float> out(size_t(rows * cols));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        float s = 0;
        for (int64_t k = 0; k < K; ++k) {
          volatile float p = x(i, k) * y(k, j);
          s = s + p;
        }
        out[size_t(i * cols + j)] = s;
      }
    return out;
  };
  const std::vector<float> rc = ref(
      M, 40, 48, [&](int64_t i, int64_t k) { return af[size_t(i * 48 + k)]; },
      [&](int64_t k, int64_t j) { return bf[size_t(k * 40 + j)]; });
  const std::vector<float> rd = ref(
      M, 12, 24, [&](int64_t i, int64_t k) { return hf[size_t(i * 24 + k)]; },
      [&](int64_t k, int64_t j) { return gf[size_t(k * 12 + j)]; });
  // The chain: s = a q in k order, P = bf16(s * 0.0625) rounded to nearest
  // even, then P b in k order.
  const std::vector<float> rs = ref(
      M, 48, 48, [&](int64_t i, int64_t k) { return af[size_t(i * 48 + k)]; },
      [&](int64_t k, int64_t j) { return qf[size_t(k * 48 + j)]; });
  auto bf16_rne = [](float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    return bf16_value(uint16_t((u + 0x7fffu + (u >> 16 & 1u)) >> 16));
  };
  const std::vector<float> ro = ref(
      M, 40, 48, [&](int64_t i, int64_t k) { return bf16_rne(rs[size_t(i * 48 + k)] * 0.0625f); },
      [&](int64_t k, int64_t j) { return bf[size_t(k * 40 + j)]; });
  struct Run {
    unsigned threads;
    bool race;
  } runs[] = {{128, false}, {128, true}, {32, false}};
  for (const Run &rn : runs) {
    CAPTURE(rn.threads);
    CAPTURE(rn.race);
    std::vector<float> c(M * 40, -1.f), e(c), o(c), d(M * 12, -1.f), r(40, -1.f);
    RunOptions opt;
    opt.threads_per_cta = rn.threads;
    opt.race_check = rn.race;
    std::string err = compile_and_run(kOdd, "tile_mma_odd", {{"M", M}},
                                      {{"a", a.data(), ETL_BF16, {M, 48}},
                                       {"b", b.data(), ETL_BF16, {48, 40}},
                                       {"q", q.data(), ETL_BF16, {48, 48}},
                                       {"h", h.data(), ETL_F16, {M, 24}},
                                       {"g", g.data(), ETL_F16, {24, 12}},
                                       {"c", c.data(), ETL_F32, {M, 40}},
                                       {"e", e.data(), ETL_F32, {M, 40}},
                                       {"o", o.data(), ETL_F32, {M, 40}},
                                       {"d", d.data(), ETL_F32, {M, 12}},
                                       {"r", r.data(), ETL_F32, {40}}},
                                      opt);
    REQUIRE_MESSAGE(err.empty(), err);
    CHECK(std::memcmp(c.data(), rc.data(), c.size() * 4) == 0);
    CHECK(std::memcmp(d.data(), rd.data(), d.size() * 4) == 0);
    CHECK(std::memcmp(r.data(), rc.data(), r.size() * 4) == 0); // row 0 of a b
    // The K loop accumulates onto acc in k order (lower_tile_mma.cpp).
    CHECK(std::memcmp(e.data(), rc.data(), e.size() * 4) == 0);
    CHECK(std::memcmp(o.data(), ro.data(), o.size() * 4) == 0);
    int inside = 0;
    for (float x : o)
      inside += x != -1.f && std::isfinite(x);
    CHECK(inside == int(o.size()));
  }
}
