//===- tests/unit/e2e/tile_port_test.cpp - Bodies ported to the tile IR ---===//
//
// What this pins (issue 28's port, docs/ARCHITECTURE.md "Porting the
// lowering to the tile IR"): bodies that used to need the AST path now
// take the tile IR path (ETL_TILE_DEBUG's "lowering GROUP: tile IR"), and
// on sim they give the AST path's results bit for bit: each program runs
// twice from the same inputs, once as compiled and once with
// ETL_TILE_LOWERING=0, and every tensor must hold the same bytes.
//
//   math     sin cos tanh erf floor ceil round pow (f32, f16, bf16) and
//            popc (i32, i64): the same helpers (lower_math.cpp) on both
//            paths; constants keep every bit (a float's 17 digits, an
//            i64's 2^53 + 1).
//   atomics  add/max/min of f32, f16, bf16, i32, i64 into colliding bins
//            (exact sums, so every order gives the same bits), old values
//            of atomic_add/_max/_cas (each element hit once, so they are
//            the initial ones) from [64] and [16] slices at 128 and 32
//            threads (copies in other warps: scratch; in other lanes:
//            shuffles, i64 in two halves) and of a rank-0 atomic; the
//            gemv_atomic example's bodies take the tile IR path.
//   if       if / else if / else on task indices, a scalar parameter and a
//            loop variable, assigning tile and scalar vars, with a
//            cross-warp reduction, an element read bound by a `let`, a
//            store, a hazard
//            barrier and an atomic inside branches, in and around a `for`;
//            tests/unit/target/branches.etl's body takes the tile IR path.
//   narrow   u8, i8, u16, i16, u32, packed i4/u4 and FP8 (e4m3, e5m2):
//            loads (vectors of words, and elements one by one past a
//            tensor's end with a wrapped pad), wrapping arithmetic, unsigned
//            shifts, division, comparisons, max/min, reductions, argmax,
//            argmin and cumsum, ~ - abs,
//            casts, FP8 rounding, stores; with the `where` fact that makes
//            the accesses 128-bit vectors and with one that allows pairs
//            (a 16-bit word of two u8, a byte of two u4), at 128 and 32
//            threads;
//            the gemv_int4 example's bodies (u4 weights) take the tile IR
//            path.
//
//===----------------------------------------------------------------------===//
#include "compile_run.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace etl {
namespace {
using testing::Bind;
using testing::compile_and_run;
using testing::compile_text_tile_debug;
using testing::ScalarArg;

/// A tensor of a run: its name, type, shape and initial bytes; `out`: the
/// run writes it.
struct Buf {
  const char *name;
  etlDType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  bool out = false;
};

/// An output tensor of `bytes` per element, every byte `fill`.
Buf out(const char *name, etlDType t, std::vector<int64_t> shape, size_t bytes,
        uint8_t fill = 0xAB) {
  size_t n = bytes;
  for (int64_t s : shape)
    n *= size_t(s);
  return Buf{name, t, std::move(shape), std::vector<uint8_t>(n, fill), true};
}

template <class T> Buf buf(const char *name, etlDType t, const std::vector<T> &v) {
  Buf b{name, t, {int64_t(v.size())}, std::vector<uint8_t>(v.size() * sizeof(T))};
  std::memcpy(b.bytes.data(), v.data(), b.bytes.size());
  return b;
}

/// Runs `src` on sim from `bufs` (copied), on the tile IR path or (`ast`)
/// with ETL_TILE_LOWERING=0; returns the tensors' bytes after the run.
std::vector<std::vector<uint8_t>> run(const std::string &src, const std::string &stem,
                                      const std::vector<std::pair<const char *, int64_t>> &dims,
                                      std::vector<Buf> bufs, bool ast,
                                      const std::vector<ScalarArg> &scalars = {},
                                      unsigned threads = 128) {
  std::vector<Bind> binds;
  for (Buf &b : bufs)
    binds.push_back({b.name, b.bytes.data(), b.dtype, b.shape});
  if (ast)
    setenv("ETL_TILE_LOWERING", "0", 1);
  testing::RunOptions o;
  o.threads_per_cta = threads;
  std::string err = compile_and_run(src, stem + (ast ? "_ast" : "_tile"), dims, binds, o, scalars);
  unsetenv("ETL_TILE_LOWERING");
  INFO(err);
  CHECK(err.empty());
  std::vector<std::vector<uint8_t>> out;
  for (const Buf &b : bufs)
    out.push_back(b.bytes);
  return out;
}

/// The tile IR path and the AST path leave the same bytes in every tensor.
void same_on_both_paths(const std::string &src, const std::string &stem,
                        const std::vector<std::pair<const char *, int64_t>> &dims,
                        const std::vector<Buf> &bufs, const std::vector<ScalarArg> &scalars = {},
                        unsigned threads = 128) {
  std::vector<std::vector<uint8_t>> tile = run(src, stem, dims, bufs, false, scalars, threads);
  std::vector<std::vector<uint8_t>> ast = run(src, stem, dims, bufs, true, scalars, threads);
  REQUIRE(tile.size() == ast.size());
  for (size_t i = 0; i < tile.size(); ++i) {
    std::string name = bufs[i].name;
    CAPTURE(name);
    if (bufs[i].out)
      CHECK(tile[i] != bufs[i].bytes); // the run wrote it
    size_t first = 0;
    while (first < tile[i].size() && tile[i][first] == ast[i][first])
      ++first;
    CAPTURE(first);
    CHECK(tile[i] == ast[i]);
  }
}

/// ETL_TILE_DEBUG's lowering lines of `src` compiled for sm_90 PTX: one
/// "lowering GROUP: PATH" line per group.
std::string lowering_lines(const std::string &src, unsigned threads = 128) {
  CompileOptions o;
  o.targets = {"sm_90"};
  o.emit = "ptx";
  o.threads_per_cta = threads;
  std::string ptx, err, lines;
  int code = compile_text_tile_debug(src, o, "lowering ", ptx, err, lines);
  INFO(err);
  REQUIRE(code == 0);
  return lines;
}

/// Every group of `src` takes the tile IR path.
void all_tile_ir(const std::string &src, size_t groups, unsigned threads = 128) {
  std::string lines = lowering_lines(src, threads);
  INFO(lines);
  size_t n = 0, at = 0;
  while ((at = lines.find(": tile IR\n", at)) != std::string::npos)
    ++n, ++at;
  CHECK(n == groups);
  CHECK(lines.find(": AST") == std::string::npos);
}

/// The source of examples/NAME/NAME.etl.
std::string example(const char *name) {
  std::ifstream in(std::string(ETL_SOURCE_DIR) + "/examples/" + name + "/" + name + ".etl");
  std::stringstream ss;
  ss << in.rdbuf();
  REQUIRE(!ss.str().empty());
  return ss.str();
}

template <class T> std::vector<T> filled(int64_t n, T v) {
  return std::vector<T>(static_cast<size_t>(n), v);
}

std::vector<float> spread(int64_t n, double lo, double hi) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    x[size_t(k)] = float(lo + (hi - lo) * double(k) / double(n - 1));
  return x;
}

} // namespace

TEST_CASE("tile port: math builtins and popc take the tile IR path, bit for bit the AST path's") {
  const char *src = R"(
const TN = 64;
kernel math<N: dim>(x: tensor<f32>[N], p: tensor<f32>[N], h: tensor<f16>[N], g: tensor<bf16>[N],
                    k: tensor<i32>[N], w: tensor<i64>[N],
                    y: tensor<f32>[10, N], yh: tensor<f16>[3, N], yg: tensor<bf16>[2, N],
                    c: tensor<i32>[2, N]) where N % 64 == 0 {
  task t[i in 0 .. N / TN] {
    let a = load(x[i * TN .. +TN]);
    let e = load(p[i * TN .. +TN]);
    store(y[0, i * TN .. +TN], sin(a));
    store(y[1, i * TN .. +TN], cos(a));
    store(y[2, i * TN .. +TN], tanh(a));
    store(y[3, i * TN .. +TN], erf(a));
    store(y[4, i * TN .. +TN], floor(a) + ceil(a) * 0.5);
    store(y[5, i * TN .. +TN], round(a));
    store(y[6, i * TN .. +TN], pow(a, e));
    store(y[7, i * TN .. +TN], pow(abs(a), 0.5) + pow(a, 3.0));
    store(y[8, i * TN .. +TN], exp(a) + log(abs(a)) + sqrt(abs(a)) + rsqrt(abs(a) + 1.0));
    store(y[9, i * TN .. +TN], sin(a) * sin(a) + cos(a) * cos(a));
    let hv = load(h[i * TN .. +TN]);
    store(yh[0, i * TN .. +TN], erf(hv) + tanh(hv));
    store(yh[1, i * TN .. +TN], pow(hv, cast<f16>(e)) + floor(hv));
    store(yh[2, i * TN .. +TN], sin(hv) * cos(hv) + round(hv));
    let gv = load(g[i * TN .. +TN]);
    store(yg[0, i * TN .. +TN], erf(gv) + ceil(gv));
    store(yg[1, i * TN .. +TN], pow(abs(gv), cast<bf16>(e)) + tanh(gv));
    store(c[0, i * TN .. +TN], popc(load(k[i * TN .. +TN])));
    store(c[1, i * TN .. +TN], popc(load(w[i * TN .. +TN]) & 9007199254740993) +
                               popc(load(k[i * TN .. +TN]) * 3));
  }
}
)";
  all_tile_ir(src, 1);
  const int64_t N = 1024;
  std::vector<float> x = spread(N, -9.5, 9.5), p = spread(N, -3.0, 3.0);
  x[0] = 0.0f, x[1] = -0.0f, x[2] = 0.5f, x[3] = -2.5f, x[4] = INFINITY, x[5] = -INFINITY;
  x[6] = NAN, x[7] = 1.0f, p[7] = NAN, p[8] = 0.0f, x[9] = -2.0f, p[9] = 3.0f;
  std::mt19937 rng(28);
  std::vector<uint16_t> h(static_cast<size_t>(N)), g(static_cast<size_t>(N));
  std::vector<int32_t> k(static_cast<size_t>(N));
  std::vector<int64_t> w(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) {
    h[size_t(i)] = uint16_t(rng() & 0x7bffu) ^ uint16_t(i & 1 ? 0x8000u : 0); // finite
    g[size_t(i)] = testing::bf16_bits(x[size_t(i)] * 0.37f);
    k[size_t(i)] = int32_t(rng());
    w[size_t(i)] = int64_t(uint64_t(rng()) << 32 | rng());
  }
  same_on_both_paths(src, "port_math", {{"N", N}},
                     {buf("x", ETL_F32, x), buf("p", ETL_F32, p), buf("h", ETL_F16, h),
                      buf("g", ETL_BF16, g), buf("k", ETL_I32, k), buf("w", ETL_I64, w),
                      out("y", ETL_F32, {10, N}, 4), out("yh", ETL_F16, {3, N}, 2),
                      out("yg", ETL_BF16, {2, N}, 2), out("c", ETL_I32, {2, N}, 4)});
}

TEST_CASE("tile port: atomics take the tile IR path, bit for bit the AST path's") {
  const char *src = R"(
const T = 64;
const S = 16;
kernel at<N: dim, B: dim>(bin: tensor<i32>[N], x: tensor<f32>[N],
    fadd: tensor<f32>[B], fmax: tensor<f32>[B], fmin: tensor<f32>[B], hadd: tensor<f16>[B],
    hmax: tensor<f16>[B], gadd: tensor<bf16>[B], gmin: tensor<bf16>[B], iadd: tensor<i32>[B],
    imax: tensor<i32>[B], lmin: tensor<i64>[B], ladd: tensor<i64>[B],
    uf: tensor<f32>[N], ui: tensor<i32>[N], ul: tensor<i64>[N], ul2: tensor<i64>[N],
    of: tensor<f32>[N], oi: tensor<i32>[N], ol: tensor<i64>[N], os: tensor<i64>[N],
    per: tensor<f32>[N], first: tensor<f32>[N]) {
  task t[i in 0 .. cdiv(N, T)] {
    let b = load(bin[i * T .. +T], pad = -1);
    let v = load(x[i * T .. +T]);
    let live = b >= 0 && b < B;
    atomic_add(fadd[b], v, mask = live);
    atomic_max(fmax[b], v, mask = live);
    atomic_min(fmin[b], v, mask = live);
    atomic_add(hadd[b], cast<f16>(v), mask = live);
    atomic_max(hmax[b], cast<f16>(v), mask = live);
    atomic_add(gadd[b], cast<bf16>(floor(v)), mask = live);
    atomic_min(gmin[b], cast<bf16>(v), mask = live);
    atomic_add(iadd[b], 1, mask = live && v > 0.0);
    atomic_max(imax[b], b);
    atomic_min(lmin[b], cast<i64>(b) * 3);
    atomic_add(ladd[b], cast<i64>(b));
    store(of[i * T .. +T], atomic_add(uf[i * T .. +T], v));
    store(oi[i * T .. +T], atomic_cas(ui[i * T .. +T], 0, b, mask = v > 0.0));
    store(ol[i * T .. +T], atomic_max(ul[i * T .. +T], cast<i64>(b) * 5000000000));
    for k in 0 .. T / S {
      store(os[i * T + k * S .. +S], atomic_add(ul2[i * T + k * S .. +S], k + 1) * 2);
    }
    let o = atomic_add(per[i], 1.5);
    store(first[i], o + 1.0);
  }
}
)";
  const int64_t N = 1000, B = 37;
  std::mt19937 rng(19);
  std::vector<int32_t> bin(static_cast<size_t>(N)), ui(static_cast<size_t>(N));
  std::vector<float> x(static_cast<size_t>(N)), uf(static_cast<size_t>(N));
  std::vector<int64_t> ul(static_cast<size_t>(N)), ul2(static_cast<size_t>(N));
  for (size_t k = 0; k < size_t(N); ++k) {
    bin[k] = int32_t(rng() % 45) - 4; // some outside [0, B): masked off
    x[k] = float(int(rng() % 65) - 32) * 0.25f;
    uf[k] = float(int(rng() % 100)) * 0.5f;
    ui[k] = rng() % 3 == 0 ? 0 : int32_t(rng() % 1000);
    ul[k] = int64_t(rng() % 7) * 3000000000;
    ul2[k] = int64_t(rng()) << 20;
  }
  // The accumulators start at 0 (lmin high), the returned old values' outputs at 0xAB..
  std::vector<Buf> in{
      buf("bin", ETL_I32, bin),         buf("x", ETL_F32, x),
      out("fadd", ETL_F32, {B}, 4, 0),  out("fmax", ETL_F32, {B}, 4, 0),
      out("fmin", ETL_F32, {B}, 4, 0),  out("hadd", ETL_F16, {B}, 2, 0),
      out("hmax", ETL_F16, {B}, 2, 0),  out("gadd", ETL_BF16, {B}, 2, 0),
      out("gmin", ETL_BF16, {B}, 2, 0), out("iadd", ETL_I32, {B}, 4, 0),
      out("imax", ETL_I32, {B}, 4, 0),  out("lmin", ETL_I64, {B}, 8, 0x3F),
      out("ladd", ETL_I64, {B}, 8, 0),  buf("uf", ETL_F32, uf),
      buf("ui", ETL_I32, ui),           buf("ul", ETL_I64, ul),
      buf("ul2", ETL_I64, ul2),         out("of", ETL_F32, {N}, 4),
      out("oi", ETL_I32, {N}, 4),       out("ol", ETL_I64, {N}, 8),
      out("os", ETL_I64, {N}, 8),       buf("per", ETL_F32, filled<float>(N, 2.0f)),
      out("first", ETL_F32, {N}, 4),
  };
  for (size_t k : {13u, 14u, 15u, 16u, 21u}) // updated in place
    in[k].out = true;
  for (unsigned threads : {128u, 32u}) {
    CAPTURE(threads);
    all_tile_ir(src, 1, threads);
    same_on_both_paths(src, "port_atomics_" + std::to_string(threads), {{"N", N}, {"B", B}}, in, {},
                       threads);
  }
}

TEST_CASE("tile port: the gemv_atomic example's bodies take the tile IR path") {
  all_tile_ir(example("gemv_atomic"), 2, 0);
}

TEST_CASE("tile port: if / else if / else take the tile IR path, bit for bit the AST path's") {
  const char *src = R"(
const T = 64;
kernel br<N: dim>(x: tensor<f32>[N], off: tensor<i32>[N], y: tensor<f32>[N], z: tensor<f32>[N],
                  w: tensor<i32>[N], cnt: tensor<i32>[8], n: i32) where N % 64 == 0 {
  task t[i in 0 .. N / T] {
    var v = load(x[i * T .. +T]);
    var m = zeros<f32>[1];
    var q = 0.0;
    var c = zeros<i32>[T];
    if i == 0 {
      v = v * 2.0;
      m = sum(v, axis = 0);
      q = 2.0;
    } else if i < n {
      store(y[i * T .. +T], v);
      let k = off[i];
      v = v + load(x[k * T .. +T]) + load(y[i * T .. +T]);
      m = sum(v * v, axis = 0);
      c = c + 1;
    } else {
      v = v - 1.0;
      atomic_add(cnt[i % 8], 1);
    }
    for j in 0 .. 3 {
      if j == i % 3 {
        v = v + cast<f32>(j);
        c = c + 2;
        q = q + 0.25;
      } else {
        v = v * 0.5;
      }
    }
    if n > 7 && i > 2 {
      m = m + max(v, axis = 0);
    }
    store(y[i * T .. +T], v);
    store(z[i * T .. +T], v + m + q);
    store(w[i * T .. +T], c);
  }
}
)";
  const int64_t N = 64 * 12;
  // Multiples of 1/8: the reductions are exact, so their order (the two
  // paths reduce in different orders) does not change a bit.
  std::vector<float> x(static_cast<size_t>(N));
  for (size_t k = 0; k < x.size(); ++k)
    x[k] = float(int(k * 37 % 41) - 20) / 8.0f;
  std::vector<int32_t> off(static_cast<size_t>(N));
  for (size_t k = 0; k < off.size(); ++k)
    off[k] = int32_t((k * 7) % 13); // 12: outside x, loads its pad
  for (int32_t nv : {5, 9}) {
    CAPTURE(nv);
    for (unsigned threads : {128u, 32u}) {
      CAPTURE(threads);
      all_tile_ir(src, 1, threads);
      same_on_both_paths(
          src, "port_if_" + std::to_string(nv) + "_" + std::to_string(threads), {{"N", N}},
          {buf("x", ETL_F32, x), buf("off", ETL_I32, off), out("y", ETL_F32, {N}, 4),
           out("z", ETL_F32, {N}, 4), out("w", ETL_I32, {N}, 4), out("cnt", ETL_I32, {8}, 4, 0)},
          {{"n", ETL_I32, &nv}}, threads);
    }
  }
}

TEST_CASE("tile port: tests/unit/target/branches.etl takes the tile IR path") {
  std::ifstream in(std::string(ETL_SOURCE_DIR) + "/tests/unit/target/branches.etl");
  std::stringstream ss;
  ss << in.rdbuf();
  all_tile_ir(ss.str(), 1, 0);
}

TEST_CASE("tile port: narrow, unsigned, packed and FP8 elements take the tile IR path, bit for "
          "bit the AST path's") {
  const std::string tmpl = R"(
const T = 512;
kernel nar<N: dim>(a: tensor<u8>[N], b: tensor<i8>[N], h: tensor<u16>[N], g: tensor<i16>[N],
                   w: tensor<u32>[N], q: tensor<i4>[N], p: tensor<u4>[N], x: tensor<f32>[N],
                   e4: tensor<f8e4m3>[N], e5: tensor<f8e5m2>[N], yu8: tensor<u8>[N],
                   yi8: tensor<i8>[N], yu16: tensor<u16>[N], yi16: tensor<i16>[N],
                   yu32: tensor<u32>[N], yf: tensor<f32>[2, N], ye4: tensor<f8e4m3>[N],
                   ye5: tensor<f8e5m2>[N], red: tensor<i32>[5, N], yc: tensor<i32>[2, N])
    WHERE {
  task t[i in 0 .. cdiv(N, T)] {
    let ua = load(a[i * T .. +T], pad = -1);
    let sb = load(b[i * T .. +T]);
    let uh = load(h[i * T .. +T]);
    let sg = load(g[i * T .. +T], pad = 7);
    let uw = load(w[i * T .. +T]);
    let v = load(x[i * T .. +T]);
    let sq = load(q[i * T .. +T]);
    let up = load(p[i * T .. +T]);
    store(yu8[i * T .. +T], (ua >> 2) + cast<u8>(v) * ua - ~ua + max(ua, cast<u8>(200)) / 3,
          mask = ua != 17);
    store(yi8[i * T .. +T], sb / 3 + cast<i8>(v) - -sb + abs(sb) + sq * sb % 5);
    store(yu16[i * T .. +T], uh * uh + (uh >> 3) - min(uh, cast<u16>(40000)));
    store(yi16[i * T .. +T], sg * sg - (sg << 3) + abs(sg) + max(sg, cast<i16>(-5)));
    store(yu32[i * T .. +T], select(uw > 3000000000, uw >> 3, uw / 7) + cast<u32>(uh) +
                             max(uw, cast<u32>(4000000000)));
    store(yf[0, i * T .. +T], cast<f32>(uw) + cast<f32>(up) + cast<f32>(cast<u32>(v)) +
                              cast<f32>(load(e5[i * T .. +T])));
    store(yf[1, i * T .. +T], cast<f32>(ua) * 0.5 + cast<f32>(sb) + cast<f32>(sq) * 0.25 +
                              cast<f32>(cast<i8>(up) - sq));
    store(ye4[i * T .. +T], load(e4[i * T .. +T]) * 0.5 + cast<f8e4m3>(v));
    store(ye5[i * T .. +T], exp(load(e5[i * T .. +T])) + cast<f8e5m2>(v));
    store(red[0, i .. +1], cast<i32>(sum(ua, axis = 0)));
    store(red[1, i .. +1], cast<i32>(max(uw, axis = 0)));
    store(red[2, i .. +1], cast<i32>(min(sb, axis = 0)));
    store(red[3, i .. +1], cast<i32>(sum(up, axis = 0)) + cast<i32>(max(sg, axis = 0)));
    store(red[4, i .. +1], argmax(uw, axis = 0) + 1000 * argmin(sb, axis = 0));
    store(yc[0, i * T .. +T], cast<i32>(cumsum(ua, axis = 0)));
    store(yc[1, i * T .. +T], cast<i32>(cumsum(sg, axis = 0)) + cast<i32>(cumsum(uw, axis = 0)));
  }
}
)";
  for (bool facts : {true, false}) {
    const int64_t N = facts ? 4096 : 4000;
    std::string src = tmpl;
    src.replace(src.find("WHERE"), 5, facts ? "where N % 512 == 0" : "where N % 2 == 0");
    std::mt19937 rng(facts ? 4 : 8);
    auto bytes = [&](size_t n) {
      std::vector<uint8_t> v(n);
      for (uint8_t &x : v)
        x = uint8_t(rng());
      return v;
    };
    std::vector<float> x(static_cast<size_t>(N));
    for (float &f : x)
      f = float(int(rng() % 2001) - 1000) * 0.37f;
    std::vector<uint32_t> w(static_cast<size_t>(N));
    for (uint32_t &u : w)
      u = uint32_t(rng());
    // FP8 bits without NaNs (e4m3: S.1111.111; e5m2: exponent 31)
    std::vector<uint8_t> e4 = bytes(size_t(N)), e5 = bytes(size_t(N));
    for (uint8_t &c : e4)
      c = (c & 0x7F) == 0x7F ? uint8_t(c ^ 1) : c;
    for (uint8_t &c : e5)
      c = (c & 0x7C) == 0x7C ? uint8_t(c ^ 0x40) : c;
    const size_t n = size_t(N), half = (n + 1) / 2;
    std::vector<Buf> in{
        Buf{"a", ETL_U8, {N}, bytes(n)},
        Buf{"b", ETL_I8, {N}, bytes(n)},
        Buf{"h", ETL_U16, {N}, bytes(2 * n)},
        Buf{"g", ETL_I16, {N}, bytes(2 * n)},
        buf("w", ETL_U32, w),
        Buf{"q", ETL_I4, {N}, bytes(half)},
        Buf{"p", ETL_U4, {N}, bytes(half)},
        buf("x", ETL_F32, x),
        Buf{"e4", ETL_F8E4M3, {N}, e4},
        Buf{"e5", ETL_F8E5M2, {N}, e5},
        out("yu8", ETL_U8, {N}, 1),
        out("yi8", ETL_I8, {N}, 1),
        out("yu16", ETL_U16, {N}, 2),
        out("yi16", ETL_I16, {N}, 2),
        out("yu32", ETL_U32, {N}, 4),
        out("yf", ETL_F32, {2, N}, 4),
        out("ye4", ETL_F8E4M3, {N}, 1),
        out("ye5", ETL_F8E5M2, {N}, 1),
        out("red", ETL_I32, {5, N}, 4),
        out("yc", ETL_I32, {2, N}, 4),
    };
    for (unsigned threads : {128u, 32u}) {
      CAPTURE(facts);
      CAPTURE(threads);
      all_tile_ir(src, 1, threads);
      same_on_both_paths(src, "port_narrow_" + std::to_string(facts) + std::to_string(threads),
                         {{"N", N}}, in, {}, threads);
    }
  }
}

TEST_CASE("tile port: the gemv_int4 example's bodies (u4 weights) take the tile IR path") {
  all_tile_ir(example("gemv_int4"), 4, 0);
}

} // namespace etl
