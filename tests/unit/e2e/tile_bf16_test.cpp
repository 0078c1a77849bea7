//===- tests/unit/e2e/tile_bf16_test.cpp - bf16 loads and stores on the tile IR -===//
//
// What this pins: task bodies that load and store bf16 tensors (outside the
// tensor-core `dot`) are lowered from the tile IR (lower/lower_tile_memory.cpp):
// 8 bf16 values travel in one 16-byte access as four 32-bit words, widened in
// registers (a shift or a mask) and narrowed with round-to-nearest-even
// (lower/lower_convert.cpp).
//
//   sim      tests/golden/bf16_tile.etl's residual add on ragged sizes (a
//            masked tail of rows and of 8-element vectors), with ties, NaN
//            and infinities: the bf16 output equals a reference rounded
//            here bit for bit, also when the tensors' base is off 16 bytes
//            (the scalar fallback);
//   PTX      the same body on sm_80 and sm_90 loads and stores bf16 with
//            128-bit accesses (ld.global.nc.v4.u32 / st.global.v4.u32), no
//            narrow 16-bit global access, 0 spills;
//   examples decode_layer's (chunk, merge, o_sum, down_sum), moe_layer's
//            (combine) and moe_bf16's (gather, combine) bf16 bodies take the
//            tile path (ETL_TILE_DEBUG's lowering lines); the rest of their
//            bodies have bf16 tensor-core dots.
//
//===----------------------------------------------------------------------===//
#include "../target/ptx_programs.h"
#include "compile_run.h"
#include "driver/pipeline.h"

#include "../skip.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

using namespace etl;
using namespace etl::testing;

namespace {

std::string read_source(const std::string &rel) {
  std::ifstream in(std::string(ETL_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  REQUIRE(!ss.str().empty());
  return ss.str();
}

/// The program of tests/golden/bf16_tile.etl (the golden test pins its IR).
std::string residual_source() { return read_source("tests/golden/bf16_tile.etl"); }

/// ETL_TILE_DEBUG's "lowering GROUP: PATH" lines and the PTX of `src`.
std::string lowering_lines(const std::string &src, const char *target, std::string &ptx) {
  CompileOptions o;
  o.targets = {target};
  o.emit = "ptx";
  std::string err, lines;
  int code = compile_text_tile_debug(src, o, "lowering ", ptx, err, lines);
  INFO(err);
  REQUIRE(code == 0);
  return lines;
}

size_t count(const std::string &s, const char *what) {
  size_t n = 0, at = 0;
  while ((at = s.find(what, at)) != std::string::npos) {
    ++n;
    ++at;
  }
  return n;
}

/// f32 -> bf16 bits, round to nearest even, NaN stays a quiet NaN (the
/// rule of lower/lower_convert.cpp's f32_to_bf16_bits).
uint16_t bf16_rne(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f))
    return uint16_t((x >> 16) | 0x40);
  return uint16_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

float f32_of(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

struct Residual {
  int64_t B = 19, H = 264; // ragged: 2 row tiles (3 live rows in the last), 3 column tiles
  std::vector<uint16_t> x;
  std::vector<float> part;
  Residual() {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> d(-4.0f, 4.0f);
    x.resize(size_t(B * H));
    part.resize(size_t(B * H));
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = bf16_rne(d(rng));
      part[i] = d(rng);
    }
    // Ties (x = 0: the sum is `part` itself), NaN and infinities.
    x[0] = x[1] = x[2] = x[3] = x[4] = x[5] = 0;
    part[0] = f32_of(0x3F808000u); // halfway between 0x3F80 and 0x3F81: even 0x3F80
    part[1] = f32_of(0x3F818000u); // halfway between 0x3F81 and 0x3F82: even 0x3F82
    part[2] = f32_of(0xBF818001u); // just past halfway: away, 0xBF82
    part[3] = std::numeric_limits<float>::quiet_NaN();
    part[4] = std::numeric_limits<float>::infinity();
    part[5] = f32_of(0x7F7FFFFFu); // the largest f32 rounds up to infinity
  }
  std::vector<uint16_t> expected() const {
    std::vector<uint16_t> r(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      r[i] = bf16_rne(bf16_value(x[i]) + part[i]);
    return r;
  }
  /// Runs the program with the tensors `shift`
  /// elements past a 16-byte boundary; the bf16 output in `out`, the row
  /// sums of squares in `ss`.
  std::string run(size_t shift, unsigned threads, std::vector<uint16_t> &out,
                  std::vector<float> &ss) const {
    size_t n = x.size(), nt = size_t((H + 127) / 128);
    std::vector<uint16_t> xb(n + 8, 0), ob(n + 8, 0);
    std::vector<float> pb(n + 8, 0);
    std::memcpy(xb.data() + shift, x.data(), n * 2);
    std::memcpy(pb.data() + shift, part.data(), n * 4);
    ss.assign(nt * size_t(B), 0);
    RunOptions ro;
    ro.threads_per_cta = threads;
    std::string msg = compile_and_run(residual_source(), "bf16_residual", {{"B", B}, {"H", H}},
                                      {{"x", xb.data() + shift, ETL_BF16, {B, H}},
                                       {"part", pb.data() + shift, ETL_F32, {B, H}},
                                       {"out", ob.data() + shift, ETL_BF16, {B, H}},
                                       {"ss", ss.data(), ETL_F32, {int64_t(nt), B}}},
                                      ro);
    out.assign(ob.begin() + long(shift), ob.begin() + long(shift + n));
    return msg;
  }
};

} // namespace

TEST_CASE("tile bf16: the residual body takes the tile path with 128-bit bf16 accesses") {
  for (const char *target : {"sm_90", "sm_80"}) {
    CAPTURE(target);
    std::string ptx;
    std::string lines = lowering_lines(residual_source(), target, ptx);
    CHECK(lines == "lowering add: tile IR\n");
    // x: 8 bf16 in one non-coherent 128-bit load; out: one 128-bit store.
    CHECK(count(ptx, "ld.global.nc.v4.u32") >= 1);
    CHECK(count(ptx, "st.global.v4.u32") >= 1);
    // part (f32) too; ss is a 1-D store of a row sum.
    CHECK(count(ptx, "ld.global.nc.v4.f32") >= 1);
    // The 16-bit accesses are the scalar fallback of a base off 16 bytes
    // only: at most 8 per vector, never the vector path.
    CHECK(count(ptx, "ld.global.nc.v4.u16") == 0);
    CHECK(count(ptx, "ld.global.nc.v2.u16") == 0);
    long sp = ptxcheck::ptxas_spills(ptx, target);
    if (sp < 0)
      ETL_TEST_SKIP("ptxas not found at configure time: spills not checked");
    else
      CHECK(sp == 0);
  }
}

TEST_CASE("tile bf16: sim results equal a bf16 reference bit for bit") {
  Residual r;
  std::vector<uint16_t> want = r.expected();
  CHECK(want[0] == 0x3F80);
  CHECK(want[1] == 0x3F82);
  CHECK(want[2] == 0xBF82);
  CHECK(want[4] == 0x7F80);
  CHECK(want[5] == 0x7F80);
  for (unsigned threads : {32u, 128u})
    for (size_t shift : {size_t(0), size_t(1)}) { // 1: a base 2 or 4 bytes off 16
      CAPTURE(threads);
      CAPTURE(shift);
      std::vector<uint16_t> tile;
      std::vector<float> ss_tile;
      REQUIRE(r.run(shift, threads, tile, ss_tile) == "");
      size_t bad = 0;
      for (size_t i = 0; i < want.size(); ++i)
        bad += tile[i] != want[i];
      CHECK(bad == 0);
      CHECK((tile[3] & 0x7FC0) == 0x7FC0); // a quiet NaN
      // The row sums of squares, against double precision (skipping the
      // special row 0).
      for (int64_t n = 0; n * 128 < r.H; ++n)
        for (int64_t b = 1; b < r.B; ++b) {
          double s = 0;
          for (int64_t c = n * 128; c < std::min(r.H, n * 128 + 128); ++c) {
            double a = double(bf16_value(r.x[size_t(b * r.H + c)])) + r.part[size_t(b * r.H + c)];
            s += a * a;
          }
          CHECK(std::fabs(ss_tile[size_t(n * r.B + b)] - s) <= 1e-4 * s + 1e-4);
        }
    }
}

TEST_CASE("tile bf16: the memory-bound bf16 bodies of decode_layer, moe_layer and moe_bf16 take "
          "the tile path") {
  struct Case {
    const char *path;
    std::vector<const char *> tiled;
  } cases[] = {{"examples/decode_layer/decode_layer.etl", {"chunk", "merge", "o_sum", "down_sum"}},
               {"examples/moe_layer/moe_layer.etl", {"combine"}},
               {"examples/moe/moe_bf16.etl", {"gather", "combine"}}};
  for (const Case &c : cases) {
    CAPTURE(c.path);
    std::string ptx;
    std::string lines = lowering_lines(read_source(c.path), "sm_90", ptx);
    INFO(lines);
    CHECK(lines.find("bf16 memory") == std::string::npos);
    for (const char *g : c.tiled)
      CHECK(lines.find(std::string("lowering ") + g + ": tile IR\n") != std::string::npos);
  }
}
