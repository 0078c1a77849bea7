//===- tests/unit/lower/memory_ops_test.cpp - Gather, scatter, masks, types -===//
//
// What this covers: ETL programs (from source, through the real frontend,
// sema and task graph) that use gather loads, scatter stores, load/store
// masks and the i64/bf16 element types, run on the in-process sim against
// C++ references: out-of-range gather indices read `pad` and are not written,
// masked-off elements are neither read nor written, i64 keeps 64 bits through
// arithmetic and broadcasts, bf16 rounds to nearest even. The same programs
// also compile for sm_80/sm_90 and ptxas assembles them.
//
//===----------------------------------------------------------------------===//
#include "backend_harness.h"
#include "frontend/parser.h"
#include "lower/backend.h"
#include "sema/check.h"
#include "taskgraph/taskgraph.h"

#include "sim_harness.h"

#include "../skip.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

using namespace etl;
using namespace etl::testing;

namespace {

struct Compiled {
  Compilation c;
  BackendResult result;
  std::string diags;
};

std::unique_ptr<Compiled> compile(const std::string &src, const std::vector<std::string> &targets,
                                  unsigned threads = 32) {
  auto r = std::make_unique<Compiled>();
  r->c.file = r->c.sm.add("test.etl", src);
  r->c.target = target_info(targets);
  bool ok = compile_front(r->c);
  r->diags = r->c.diag.render();
  INFO(r->diags);
  REQUIRE(ok);
  REQUIRE(r->c.program->kernels.size() == 1);
  BackendOptions opts;
  opts.threads_per_cta = threads;
  r->result = testing::lower_compiled(r->c, targets, opts);
  INFO(r->result.error);
  REQUIRE(r->result.ok);
  return r;
}

/// A tensor argument: its bytes, bound at the tensor's slot.
struct Buffer {
  void *data;
  size_t bytes;
};

/// Runs every task of every group (no events: the tasks are independent)
/// on `ctas` CTAs; `tasks[g]` is the number of tasks of group g.
void run(const Compiled &c, const std::vector<int64_t> &dims, const std::vector<Buffer> &tensors,
         const std::vector<uint32_t> &tasks, unsigned ctas = 2, unsigned threads = 32) {
  std::vector<std::pair<uint32_t, uint32_t>> counts;
  for (uint32_t g = 0; g < tasks.size(); ++g)
    counts.push_back({g, tasks[g]});
  SimLaunch launch(counts, ctas);
  const KernelDecl &k = c.c.program->kernels[0];
  ArgLayout L = arg_layout(k);
  REQUIRE(dims.size() == k.dims.size());
  REQUIRE(tensors.size() == k.tensors.size());
  std::vector<uint64_t> args(L.num_slots(), 0);
  uint32_t no_events = 0;
  launch.fill(args.data(), &no_events);
  SimState st;
  for (unsigned i = 0; i < dims.size(); ++i)
    args[L.dim(i)] = uint64_t(dims[i]);
  for (unsigned i = 0; i < tensors.size(); ++i) {
    args[L.tensor(i)] = uint64_t(uintptr_t(tensors[i].data));
    st.buffers.push_back({static_cast<const char *>(tensors[i].data), tensors[i].bytes});
  }
  std::string code;
  for (auto &o : c.result.outputs)
    if (o.target == "sim")
      code = o.code;
  REQUIRE(!code.empty());
  REQUIRE(run_sim(code, args.data(), ctas, threads, c.result.smem_bytes, st) == "");
  CHECK(st.violations == 0);
  uint32_t total = 0;
  for (uint32_t n : tasks)
    total += n;
  CHECK(st.tasks == int(total));
}

template <class T> Buffer buf(std::vector<T> &v) { return Buffer{v.data(), v.size() * sizeof(T)}; }

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// bf16 bits of `f`, round to nearest even (the reference).
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}
float from_bf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Assembles the PTX outputs with ptxas (skipped with a message when absent).
void assemble(const BackendResult &r) {
  for (const auto &o : r.outputs) {
    if (o.target == "sim")
      continue;
    if (std::string(ETL_PTXAS).empty()) {
      ETL_TEST_SKIP("ptxas not found at configure time: skipping PTX assembly of " << o.target);
      continue;
    }
    std::string in = "/tmp/etl-memops-" + std::to_string(getpid()) + "-" + o.target + ".ptx";
    std::ofstream(in) << o.code;
    std::string cmd =
        std::string(ETL_PTXAS) + " -arch=" + o.target + " " + in + " -o /dev/null 2>&1";
    int rc = std::system(cmd.c_str());
    std::remove(in.c_str());
    CHECK_MESSAGE(rc == 0, "ptxas rejected the PTX for " << o.target);
  }
}

// Paged gather: row r of the result is table[rows[r], ...]; rows outside the
// table (and the padded rows past M) read `pad`.
const char *kGatherRows = R"(
const TM = 4;
const TK = 8;
kernel g<M: dim, V: dim, K: dim>(table: tensor<f32>[V, K], rows: tensor<i32>[M],
                                 y: tensor<f32>[M, K]) {
  task a[i in 0 .. cdiv(M, TM), j in 0 .. cdiv(K, TK)] {
    let r = load(rows[i * TM .. +TM], pad = -1);
    let t = load(table[r, j * TK .. +TK], pad = 0.5);
    store(y[i * TM .. +TM, j * TK .. +TK], t);
  }
}
)";

// Scatter through an i64 permutation, masked by a per-column i32 flag.
const char *kScatter = R"(
const TM = 4;
const TN = 8;
kernel s<M: dim, N: dim>(x: tensor<f32>[M, N], perm: tensor<i64>[M], keep: tensor<i32>[N],
                         y: tensor<f32>[M, N]) {
  task a[i in 0 .. cdiv(M, TM)] {
    let p = load(perm[i * TM .. +TM], pad = -1);
    let k = load(keep[0 .. +TN]);
    let t = load(x[i * TM .. +TM, 0 .. +TN]);
    store(y[p, 0 .. +TN], t, mask = k);
  }
}
)";

// Masked load with a [TM, 1] mask (broadcast over columns), a column gather
// (gathered last dim) and a zipped gather x[r, c] from an i64 tensor.
const char *kMaskAndZip = R"(
const TM = 4;
const TN = 8;
kernel m<M: dim, N: dim>(x: tensor<f32>[M, N], on: tensor<i32>[M], cols: tensor<i32>[TN],
                         w: tensor<i64>[M, N], y: tensor<f32>[M, N], z: tensor<f32>[M, TN],
                         d: tensor<i64>[M], z2: tensor<f32>[M, TN]) {
  task a[i in 0 .. cdiv(M, TM)] {
    let m = expand(load(on[i * TM .. +TM]), axis = 1);
    let t = load(x[i * TM .. +TM, 0 .. +TN], mask = m, pad = -1.0);
    store(y[i * TM .. +TM, 0 .. +TN], t);
  }
  task b[i in 0 .. M] {
    let c = load(cols[0 .. +TN]);
    store(z[i, 0 .. +TN], load(x[i, c], pad = 9.0));
  }
  task c[i in 0 .. cdiv(M, TM)] {
    let r = load(on[i * TM .. +TM]);
    let q = load(cols[0 .. +TM]);
    store(d[i * TM .. +TM], load(w[r, q], pad = 7));
  }
  task e[i in 0 .. cdiv(M, TM)] {
    let c = load(cols[0 .. +TN]);
    store(z2[i * TM .. +TM, 0 .. +TN], load(x[i * TM .. +TM, c], pad = 9.0));
  }
}
)";

// i64 arithmetic and broadcasts, bf16 loads/stores/arithmetic, casts.
const char *kTypes = R"(
const TM = 8;
kernel t<M: dim>(a: tensor<i64>[M], h: tensor<bf16>[M], f: tensor<f32>[M], ya: tensor<i64>[M],
                 yh: tensor<bf16>[M], yf: tensor<f32>[M], yc: tensor<bf16>[M],
                 yi: tensor<i32>[M], ymax: tensor<i64>[cdiv(M, TM)],
                 ysum: tensor<i64>[cdiv(M, TM)]) {
  task k[i in 0 .. cdiv(M, TM)] {
    let x = load(a[i * TM .. +TM]);
    let s = load(a[0 .. +1]);
    store(ya[i * TM .. +TM], x * 3 + s);
    let b = load(h[i * TM .. +TM]);
    store(yh[i * TM .. +TM], b * 2.0 + 1.0);
    store(yf[i * TM .. +TM], cast<f32>(x) + cast<f32>(b));
    store(yc[i * TM .. +TM], cast<bf16>(load(f[i * TM .. +TM])));
    store(yi[i * TM .. +TM], cast<i32>(x - s));
    let xp = load(a[i * TM .. +TM], pad = -4611686018427387904);
    store(ymax[i .. +1], max(xp, axis = 0));
    store(ysum[i .. +1], sum(x, axis = 0));
  }
}
)";

// The typing rules: float literals (and `inf`) adopt the f16/bf16 type of
// the other operand, in binary ops, min/max and compound assignment.
const char *kLiterals = R"(
const TM = 8;
kernel r<M: dim>(h: tensor<f16>[M], g: tensor<bf16>[M], yh: tensor<f16>[M], yg: tensor<bf16>[M]) {
  task k[i in 0 .. cdiv(M, TM)] {
    var a = load(h[i * TM .. +TM]);
    a *= 0.5;
    store(yh[i * TM .. +TM], max(a, 0.0) + 1);
    var b = load(g[i * TM .. +TM]);
    b += 1.5;
    store(yg[i * TM .. +TM], min(b * 3.0, inf));
  }
}
)";

/// f16 bits of a float that f16 represents exactly (normal or zero).
uint16_t f16_exact(float f) {
  if (f == 0.f)
    return 0;
  int e = 0;
  float m = std::frexp(std::fabs(f), &e); // |f| = m * 2^e, m in [0.5, 1)
  return uint16_t((f < 0 ? 0x8000 : 0) | ((e - 1 + 15) << 10) | int((m * 2.f - 1.f) * 1024.f));
}
float f16_value(uint16_t h) {
  if ((h & 0x7FFF) == 0)
    return 0.f;
  float m = 1.f + float(h & 0x3FF) / 1024.f;
  float v = std::ldexp(m, int((h >> 10) & 0x1F) - 15);
  return h & 0x8000 ? -v : v;
}

} // namespace

TEST_CASE("memory ops: float literals adopt the f16/bf16 type of the other operand") {
  auto c = compile(kLiterals, {"sim"});
  const int64_t M = 11;
  const size_t n = size_t(M);
  std::vector<uint16_t> h(n), g(n), yh(n, 0), yg(n, 0);
  for (size_t i = 0; i < n; ++i) {
    h[i] = f16_exact(float(int(i) - 5) * 0.75f);
    g[i] = to_bf16(float(i) * 0.3f - 1.f);
  }
  run(*c, {M}, {buf(h), buf(g), buf(yh), buf(yg)}, {uint32_t(cdiv(M, 8))});
  for (size_t i = 0; i < n; ++i) {
    INFO("i=" << i);
    CHECK(f16_value(yh[i]) == std::max(f16_value(h[i]) * 0.5f, 0.f) + 1.f);
    CHECK(yg[i] == to_bf16(from_bf16(to_bf16(from_bf16(g[i]) + 1.5f)) * 3.f));
  }
}

TEST_CASE("memory ops: gather rows through an i32 index tile, out-of-range rows read pad") {
  auto c = compile(kGatherRows, {"sim"});
  const int64_t TM = 4, TK = 8, M = 10, V = 7, K = 13;
  std::vector<float> table(size_t(V * K)), y(size_t(M * K), -3.f);
  for (int64_t i = 0; i < V * K; ++i)
    table[size_t(i)] = float(i) * 0.25f;
  std::vector<int32_t> rows = {3, 0, 6, 6, -2, 1, 7, 100, 2, 5};
  run(*c, {M, V, K}, {buf(table), buf(rows), buf(y)}, {uint32_t(cdiv(M, TM) * cdiv(K, TK))});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      int32_t r = rows[size_t(m)];
      float want = r >= 0 && r < V ? table[size_t(r * K + k)] : 0.5f;
      INFO("m=" << m << " k=" << k);
      CHECK(y[size_t(m * K + k)] == want);
    }
}

TEST_CASE("memory ops: scatter through an i64 permutation with a column mask") {
  auto c = compile(kScatter, {"sim"});
  const int64_t TM = 4, M = 6, N = 8;
  std::vector<float> x(size_t(M * N)), y(size_t(M * N), -7.f);
  for (int64_t i = 0; i < M * N; ++i)
    x[size_t(i)] = float(i) + 0.5f;
  // Rows 1 and 4 go out of range (skipped); the others are a permutation of
  // part of 0 .. M.
  std::vector<int64_t> perm = {5, -1, 0, 3, int64_t(1) << 40, 2};
  std::vector<int32_t> keep = {1, 0, 1, 1, 0, 0, 7, 1};
  run(*c, {M, N}, {buf(x), buf(perm), buf(keep), buf(y)}, {uint32_t(cdiv(M, TM))});
  std::vector<float> want(size_t(M * N), -7.f);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      if (perm[size_t(m)] >= 0 && perm[size_t(m)] < M && keep[size_t(n)] != 0)
        want[size_t(perm[size_t(m)] * N + n)] = x[size_t(m * N + n)];
  for (int64_t i = 0; i < M * N; ++i) {
    INFO("i=" << i);
    CHECK(y[size_t(i)] == want[size_t(i)]);
  }
}

TEST_CASE("memory ops: masked load, column gather and zipped gather from an i64 tensor") {
  auto c = compile(kMaskAndZip, {"sim"});
  const int64_t TM = 4, TN = 8, M = 7, N = 6;
  std::vector<float> x(size_t(M * N)), y(size_t(M * N), -3.f), z(size_t(M * TN), -3.f);
  for (int64_t i = 0; i < M * N; ++i)
    x[size_t(i)] = float(i) * 1.5f;
  std::vector<int32_t> on = {1, 0, 2, 0, 0, -1, 1};
  std::vector<int32_t> cols = {5, 0, 7, 3, -1, 2, 2, 6};
  std::vector<int64_t> w(size_t(M * N)), d(size_t(M), -3);
  std::vector<float> z2(size_t(M * TN), -3.f);
  for (int64_t i = 0; i < M * N; ++i)
    w[size_t(i)] = (int64_t(1) << 36) + i;
  run(*c, {M, N}, {buf(x), buf(on), buf(cols), buf(w), buf(y), buf(z), buf(d), buf(z2)},
      {uint32_t(cdiv(M, TM)), uint32_t(M), uint32_t(cdiv(M, TM)), uint32_t(cdiv(M, TM))});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      INFO("y m=" << m << " n=" << n);
      CHECK(y[size_t(m * N + n)] == (on[size_t(m)] != 0 ? x[size_t(m * N + n)] : -1.f));
    }
  for (int64_t m = 0; m < M; ++m)
    for (int64_t t = 0; t < TN; ++t) {
      int32_t col = cols[size_t(t)];
      INFO("z m=" << m << " t=" << t);
      CHECK(z[size_t(m * TN + t)] == (col >= 0 && col < N ? x[size_t(m * N + col)] : 9.f));
      // The same columns for a block of rows: the gathered dim comes second.
      CHECK(z2[size_t(m * TN + t)] == z[size_t(m * TN + t)]);
    }
  for (int64_t m = 0; m < M; ++m) {
    // d[m] = w[on[m], cols[m % TM]]: row i*TM + t zips on[i*TM + t] with cols[t].
    int64_t r = on[size_t(m)], q = cols[size_t(m % TM)];
    INFO("d m=" << m);
    CHECK(d[size_t(m)] == (r >= 0 && r < M && q >= 0 && q < N ? w[size_t(r * N + q)] : 7));
  }
}

TEST_CASE("memory ops: i64 and bf16 tensors, arithmetic, broadcasts and casts") {
  auto c = compile(kTypes, {"sim"});
  const int64_t M = 13;
  const size_t n = size_t(M);
  std::vector<int64_t> a(n), ya(n, 0);
  std::vector<uint16_t> h(n), yh(n, 0), yc(n, 0);
  std::vector<float> f(n), yf(n, 0.f);
  std::vector<int32_t> yi(n, 0);
  for (int64_t i = 0; i < M; ++i) {
    a[size_t(i)] = (int64_t(1) << 33) + i * 1000003 - (i % 3 == 0 ? (int64_t(1) << 35) : 0);
    h[size_t(i)] = to_bf16(float(i) * 0.375f - 2.f);
  }
  // Exact ties between two bf16 values (round to even), and non-ties.
  for (int64_t i = 0; i < M; ++i) {
    uint32_t bits = 0x3F800000u + uint32_t(i) * 0x8000u + (i % 4 == 3 ? 1u : 0u);
    std::memcpy(&f[size_t(i)], &bits, 4);
  }
  std::vector<int64_t> ymax(size_t(cdiv(M, 8)), 0), ysum(size_t(cdiv(M, 8)), 0);
  run(*c, {M},
      {buf(a), buf(h), buf(f), buf(ya), buf(yh), buf(yf), buf(yc), buf(yi), buf(ymax), buf(ysum)},
      {uint32_t(cdiv(M, 8))});
  for (int64_t b = 0; b < cdiv(M, 8); ++b) {
    int64_t mx = INT64_MIN, sm = 0;
    for (int64_t i = b * 8; i < std::min(M, b * 8 + 8); ++i) {
      mx = std::max(mx, a[size_t(i)]);
      sm += a[size_t(i)];
    }
    INFO("block " << b);
    CHECK(ymax[size_t(b)] == mx);
    CHECK(ysum[size_t(b)] == sm);
  }
  for (int64_t i = 0; i < M; ++i) {
    INFO("i=" << i);
    CHECK(ya[size_t(i)] == a[size_t(i)] * 3 + a[0]);
    float b = from_bf16(h[size_t(i)]);
    CHECK(yh[size_t(i)] == to_bf16(from_bf16(to_bf16(b * 2.f)) + 1.f));
    CHECK(yf[size_t(i)] == float(a[size_t(i)]) + b);
    CHECK(yc[size_t(i)] == to_bf16(f[size_t(i)]));
    CHECK(yi[size_t(i)] == int32_t(a[size_t(i)] - a[0]));
  }
  CHECK(yc[1] == 0x3F80); // 1 + 2^-8: a tie, rounds to the even 1.0
  CHECK(yc[2] == 0x3F81); // exact
  CHECK(yc[5] == 0x3F82); // 0x3F828000: a tie, rounds to the even 0x3F82
  CHECK(yc[3] == 0x3F82); // just above the tie 0x3F818000: rounds up
}

TEST_CASE("memory ops: cast<T> between every pair of element types") {
  const char *types[] = {"f32", "f16", "bf16", "i32", "i64"};
  // out_ST = cast<f32>(cast<T>(cast<S>(x))) for every pair (S, T).
  std::string params = "x: tensor<f32>[M]", body;
  for (const char *a : types)
    for (const char *b : types) {
      std::string out = std::string("o_") + a + "_" + b;
      params += ", " + out + ": tensor<f32>[M]";
      body += "    store(" + out + "[i * TM .. +TM], cast<f32>(cast<" + b + ">(cast<" + a +
              ">(v))));\n";
    }
  std::string src =
      "const TM = 8;\nkernel c<M: dim>(" + params +
      ") {\n  task k[i in 0 .. cdiv(M, TM)] {\n    let v = load(x[i * TM .. +TM]);\n" + body +
      "  }\n}\n";
  auto c = compile(src, {"sim"});
  const int64_t M = 15;
  std::vector<std::vector<float>> t(26, std::vector<float>(size_t(M), 99.f));
  for (int64_t i = 0; i < M; ++i)
    t[0][size_t(i)] = float(i - 7) * 0.75f; // exact in f16 and bf16
  std::vector<Buffer> bufs;
  for (auto &v : t)
    bufs.push_back(buf(v));
  run(*c, {M}, bufs, {uint32_t(cdiv(M, 8))});
  auto conv = [](float v, int ty) { return ty >= 3 ? std::trunc(v) : v; };
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 5; ++b)
      for (int64_t i = 0; i < M; ++i) {
        INFO(types[a] << " -> " << types[b] << " i=" << i);
        CHECK(t[size_t(1 + a * 5 + b)][size_t(i)] == conv(conv(t[0][size_t(i)], a), b));
      }
}

TEST_CASE("memory ops: the programs compile for sm_80 and sm_90 and ptxas assembles them") {
  for (const char *src : {kGatherRows, kScatter, kMaskAndZip, kTypes, kLiterals}) {
    auto c = compile(src, {"sm_80", "sm_90"}, 128);
    assemble(c->result);
  }
}
