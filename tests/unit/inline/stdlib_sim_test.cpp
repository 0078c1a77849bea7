//===- tests/unit/inline/stdlib_sim_test.cpp - The stdlib, run on sim -----===//
//
// What this covers: every fn of stdlib/std/*.etl, called from a small kernel
// that goes through the whole pipeline (import, inline, sema, task graph,
// back end) and runs on the in-process sim, compared with a C++ reference.
// Also that such a program assembles with ptxas, and the driver's -I.
//
// The kernel: tiles a, b, c (TM x TN, from x0, x1, x2) and row vectors w, bias
// (TN, from v0, v1); the task stores one expression per row block into y.
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"
#include "lower/backend.h"

#include "../lower/backend_harness.h"
#include "../lower/sim_harness.h"

#include "../skip.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

using namespace etl;

namespace {

constexpr int64_t TM = 4, TN = 32, M = 12;

std::string kernel_source(const std::string &imports, const std::string &expr) {
  return imports + R"(
const TM = 4;
const TN = 32;

kernel k<M: dim>(x0: tensor<f32>[M, TN], x1: tensor<f32>[M, TN], x2: tensor<f32>[M, TN],
                 v0: tensor<f32>[TN], v1: tensor<f32>[TN], y: tensor<f32>[M, TN]) {
  task t[i in 0 .. cdiv(M, TM)] {
    let a = load(x0[i * TM .. +TM, 0 .. +TN]);
    let b = load(x1[i * TM .. +TM, 0 .. +TN]);
    let c = load(x2[i * TM .. +TM, 0 .. +TN]);
    let w = load(v0[0 .. +TN]);
    let bias = load(v1[0 .. +TN]);
    store(y[i * TM .. +TM, 0 .. +TN], )" +
         expr + R"();
  }
}
)";
}

struct Compiled {
  Compilation c;
  BackendResult result;
};

std::unique_ptr<Compiled> compile(const std::string &src, const std::vector<std::string> &targets,
                                  unsigned threads = 32) {
  auto r = std::make_unique<Compiled>();
  r->c.file = r->c.sm.add("stdlib_test.etl", src);
  bool ok = compile_front(r->c);
  INFO(r->c.diag.render());
  REQUIRE(ok);
  BackendOptions opts;
  opts.threads_per_cta = threads;
  r->result = testing::lower_compiled(r->c, targets, opts);
  INFO(r->result.error);
  REQUIRE(r->result.ok);
  return r;
}

/// The inputs: a, b, c in [-4, 4) (times `scale` for a), w around 1, bias
/// around 0.
struct Inputs {
  std::vector<float> x0, x1, x2, v0, v1;
  explicit Inputs(float scale) {
    uint32_t s = 12345;
    auto rnd = [&] {
      s = s * 1664525u + 1013904223u;
      return float((s >> 8) % 8192) / 1024.f - 4.f;
    };
    for (auto *v : {&x0, &x1, &x2})
      for (int64_t i = 0; i < M * TN; ++i)
        v->push_back(rnd() * (v == &x0 ? scale : 1.f));
    for (int64_t i = 0; i < TN; ++i) {
      v0.push_back(1.f + rnd() / 8.f);
      v1.push_back(rnd() / 4.f);
    }
  }
};

/// Runs kernel source `src` on sim over M / TM tasks of its one task group,
/// with `tensors` bound to its tensor parameters in order.
void run_source(const std::string &src, const std::vector<std::vector<float> *> &tensors) {
  using namespace etl::testing;
  auto r = compile(src, {"sim"});
  const unsigned CTAS = 2, T = 32;
  std::vector<uint32_t> events(1, 0);
  SimLaunch launch({{0, uint32_t(M / TM)}}, CTAS);
  ArgLayout L = arg_layout(r->c.program->kernels[0]);
  REQUIRE(L.num_tensors == tensors.size());
  std::vector<uint64_t> args(L.num_slots(), 0);
  launch.fill(args.data(), events.data());
  args[L.dim(0)] = uint64_t(M);
  SimState st;
  for (unsigned i = 0; i < tensors.size(); ++i) {
    args[L.tensor(i)] = uint64_t(uintptr_t(tensors[i]->data()));
    st.buffers.push_back(
        {reinterpret_cast<const char *>(tensors[i]->data()), tensors[i]->size() * 4});
  }
  std::string code;
  for (auto &o : r->result.outputs)
    if (o.target == "sim")
      code = o.code;
  REQUIRE(run_sim(code, args.data(), CTAS, T, r->result.smem_bytes, st) == "");
  CHECK(st.violations == 0);
}

/// Runs `expr` over every row block on sim; returns y.
std::vector<float> run(const std::string &imports, const std::string &expr, Inputs in) {
  std::vector<float> y(size_t(M * TN), -7.f);
  run_source(kernel_source(imports, expr), {&in.x0, &in.x1, &in.x2, &in.v0, &in.v1, &y});
  return y;
}

using RowFn = std::function<void(const float *a, const float *b, const float *c, const float *w,
                                 const float *bias, float *out)>;

/// Checks y against `ref`, which computes one row of TN outputs.
void compare(const std::vector<float> &y, const Inputs &in, const RowFn &ref, double eps = 1e-4) {
  std::vector<float> want(static_cast<size_t>(TN));
  int bad = 0;
  for (int64_t m = 0; m < M; ++m) {
    size_t o = size_t(m * TN);
    ref(&in.x0[o], &in.x1[o], &in.x2[o], in.v0.data(), in.v1.data(), want.data());
    for (int64_t n = 0; n < TN; ++n) {
      float got = y[o + size_t(n)], w = want[size_t(n)];
      if (!(std::fabs(double(got) - w) <= eps * (1.0 + std::fabs(double(w)))) && bad++ < 5)
        FAIL_CHECK("y[" << m << ", " << n << "] = " << got << ", want " << w);
    }
  }
  CHECK(bad == 0);
}

/// An element-wise fn of a (x0 scaled by `scale`) against `f`.
void elementwise(const std::string &fn, float scale, double (*f)(double)) {
  INFO("std.math " << fn);
  Inputs in(scale);
  std::vector<float> y = run("import std.math;", fn + "(a)", in);
  compare(
      y, in,
      [&](const float *a, const float *, const float *, const float *, const float *, float *out) {
        for (int64_t n = 0; n < TN; ++n)
          out[n] = float(f(double(a[n])));
      });
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double gelu(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

void softmax_row(const float *x, float *out) {
  double m = -INFINITY, s = 0;
  for (int64_t n = 0; n < TN; ++n)
    m = std::max(m, double(x[n]));
  for (int64_t n = 0; n < TN; ++n)
    s += std::exp(x[n] - m);
  for (int64_t n = 0; n < TN; ++n)
    out[n] = float(std::exp(x[n] - m) / s);
}

double row_max(const float *x) {
  double m = -INFINITY;
  for (int64_t n = 0; n < TN; ++n)
    m = std::max(m, double(x[n]));
  return m;
}

double row_sum(const float *x) {
  double s = 0;
  for (int64_t n = 0; n < TN; ++n)
    s += x[n];
  return s;
}

} // namespace

TEST_CASE(
    "stdlib: std.math sigmoid, silu, relu, gelu, gelu_erf, softplus (and builtin tanh) on sim") {
  elementwise("sigmoid", 1, sigmoid);
  elementwise("sigmoid", 40, sigmoid); // saturates without inf / inf
  elementwise("silu", 1, [](double x) { return x * sigmoid(x); });
  elementwise("relu", 1, [](double x) { return std::max(x, 0.0); });
  elementwise("tanh", 1, [](double x) { return std::tanh(x); });
  elementwise("tanh", 40, [](double x) { return std::tanh(x); });
  elementwise("gelu", 1, gelu);
  elementwise("gelu_erf", 1, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); });
  elementwise("gelu_erf", 40,
              [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); });
  elementwise("softplus", 1, [](double x) { return std::log1p(std::exp(x)); });
  elementwise("softplus", 40,
              [](double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); });
}

TEST_CASE("stdlib: std.nn softmax, rmsnorm, layernorm on sim") {
  Inputs in(2);
  SUBCASE("softmax") {
    compare(run("import std.nn;", "softmax(a)", in), in,
            [](const float *a, const float *, const float *, const float *, const float *,
               float *out) { softmax_row(a, out); });
  }
  SUBCASE("softmax of large inputs (max subtracted)") {
    Inputs big(30);
    compare(
        run("import std.nn;", "softmax(a * 4.0)", big), big,
        [](const float *a, const float *, const float *, const float *, const float *, float *out) {
          float x[TN];
          for (int64_t n = 0; n < TN; ++n)
            x[n] = a[n] * 4.f;
          softmax_row(x, out);
        });
  }
  SUBCASE("rmsnorm") {
    compare(run("import std.nn;", "rmsnorm(a, w, 1e-5)", in), in,
            [](const float *a, const float *, const float *, const float *w, const float *,
               float *out) {
              double ms = 0;
              for (int64_t n = 0; n < TN; ++n)
                ms += double(a[n]) * a[n];
              double r = 1 / std::sqrt(ms / TN + 1e-5);
              for (int64_t n = 0; n < TN; ++n)
                out[n] = float(a[n] * r * w[n]);
            });
  }
  SUBCASE("layernorm") {
    compare(run("import std.nn;", "layernorm(a, w, bias, 1e-5)", in), in,
            [](const float *a, const float *, const float *, const float *w, const float *bias,
               float *out) {
              double mean = row_sum(a) / TN, var = 0;
              for (int64_t n = 0; n < TN; ++n)
                var += (a[n] - mean) * (a[n] - mean);
              double r = 1 / std::sqrt(var / TN + 1e-5);
              for (int64_t n = 0; n < TN; ++n)
                out[n] = float((a[n] - mean) * r * w[n] + bias[n]);
            });
  }
  SUBCASE("row_count") {
    compare(
        run("import std.nn;", "a * 0.0 + expand(row_count(a), axis = 1)", in), in,
        [](const float *, const float *, const float *, const float *, const float *, float *out) {
          for (int64_t n = 0; n < TN; ++n)
            out[n] = float(TN);
        });
  }
}

TEST_CASE("stdlib: std.nn online softmax helpers on sim") {
  Inputs in(2);
  // m = rowmax(b), l = rowsum(exp(b - m)): the state after block b; a is the
  // next block, c an accumulator row block.
  SUBCASE("online_max") {
    compare(
        run("import std.nn;", "a * 0.0 + expand(online_max(max(b, axis = 1), a), axis = 1)", in),
        in,
        [](const float *a, const float *b, const float *, const float *, const float *,
           float *out) {
          double m = std::max(row_max(a), row_max(b));
          for (int64_t n = 0; n < TN; ++n)
            out[n] = float(m);
        });
  }
  SUBCASE("online_sum and online_probs: two blocks give the softmax of both") {
    // softmax over the 2*TN columns [b | a], second half: probs(a) / l_new.
    std::string e = "online_probs(a, online_max(max(b, axis = 1), a)) / expand(online_sum("
                    "sum(exp(b - expand(max(b, axis = 1), axis = 1)), axis = 1), max(b, axis = 1), "
                    "online_max(max(b, axis = 1), a), a), axis = 1)";
    compare(run("import std.nn;", e, in), in,
            [](const float *a, const float *b, const float *, const float *, const float *,
               float *out) {
              float x[2 * TN], p[2 * TN];
              for (int64_t n = 0; n < TN; ++n) {
                x[n] = b[n];
                x[TN + n] = a[n];
              }
              double m = -INFINITY, s = 0;
              for (float v : x)
                m = std::max(m, double(v));
              for (float v : x)
                s += std::exp(v - m);
              for (int64_t n = 0; n < 2 * TN; ++n)
                p[n] = float(std::exp(x[n] - m) / s);
              for (int64_t n = 0; n < TN; ++n)
                out[n] = p[TN + n];
            });
  }
  SUBCASE("online_rescale") {
    compare(run("import std.nn;", "online_rescale(c, max(b, axis = 1), max(a, axis = 1))", in), in,
            [](const float *a, const float *b, const float *c, const float *, const float *,
               float *out) {
              double f = std::exp(row_max(b) - row_max(a));
              for (int64_t n = 0; n < TN; ++n)
                out[n] = float(c[n] * f);
            });
  }
}

TEST_CASE("stdlib: std.nn rope_first and rope_second on sim") {
  Inputs in(1);
  // a, b: the even and odd halves; c: angles, cos/sin from it.
  compare(
      run("import std.nn;",
          "rope_first(a, b, c * 0.0 + 0.6, c * 0.0 + 0.8) + rope_second(a, b, c * 0.0 + 0.6, c * "
          "0.0 + 0.8) * 10.0",
          in),
      in,
      [](const float *a, const float *b, const float *, const float *, const float *, float *out) {
        for (int64_t n = 0; n < TN; ++n)
          out[n] = float((a[n] * 0.6 - b[n] * 0.8) + (a[n] * 0.8 + b[n] * 0.6) * 10.0);
      });
}

TEST_CASE("stdlib: a program using std.math and std.nn assembles with ptxas") {
  auto r = compile(kernel_source("import std.math;\nimport std.nn;\n"
                                 "fn repeat_sum(x, n) {\n  var acc = x * 0.0;\n"
                                 "  for r in 0 .. n {\n    acc += x;\n  }\n  return acc;\n}\n",
                                 "layernorm(gelu(a), w, bias, 1e-5) + softmax(silu(b)) + "
                                 "rmsnorm(softplus(c), w, 1e-6) + tanh(a) + relu(b) + "
                                 "rope_first(a, b, c, c) + online_rescale(a, max(b, axis = 1), "
                                 "online_max(max(b, axis = 1), c)) + repeat_sum(a, 2)"),
                   {"sm_90", "sm_80", "sim"}, 128);
  if (std::string(ETL_PTXAS).empty()) {
    ETL_TEST_SKIP("ptxas not found at configure time: skipping PTX assembly");
    return;
  }
  for (const auto &o : r->result.outputs) {
    if (o.target == "sim")
      continue;
    std::string in = "/tmp/etl-stdlib-" + std::to_string(getpid()) + "-" + o.target + ".ptx";
    std::ofstream(in) << o.code;
    std::string cmd = std::string(ETL_PTXAS) + " -arch=" + o.target + " " + in + " -o /dev/null";
    int rc = std::system(cmd.c_str());
    std::remove(in.c_str());
    CHECK_MESSAGE(rc == 0, "ptxas rejected the PTX for " << o.target);
  }
}

TEST_CASE("fn: a user fn with a var and a loop, expanded twice, on sim") {
  Inputs in(1);
  std::string fns = "fn repeat_sum(x, n) {\n"
                    "  var acc = x * 0.0;\n"
                    "  for r in 0 .. n {\n"
                    "    acc += x;\n"
                    "  }\n"
                    "  return acc;\n"
                    "}\n";
  compare(
      run(fns, "repeat_sum(a, 3) + repeat_sum(b * 2.0, n = 2)", in), in,
      [](const float *a, const float *b, const float *, const float *, const float *, float *out) {
        for (int64_t n = 0; n < TN; ++n)
          out[n] = 3 * a[n] + 4 * b[n];
      });
}

TEST_CASE("stdlib: online softmax over column blocks in a loop (FlashAttention style) on sim") {
  constexpr int64_t NB = 4, N = NB * TN;
  std::string src = R"(import std.nn;

const TM = 4;
const TN = 32;

kernel k<M: dim>(x: tensor<f32>[M, 128], y: tensor<f32>[M, 128]) {
  task t[i in 0 .. cdiv(M, TM)] {
    var m = full<f32>[TM](-inf);
    var l = zeros<f32>[TM];
    for j in 0 .. 4 {
      let blk = load(x[i * TM .. +TM, j * TN .. +TN]);
      let m_new = online_max(m, blk);
      l = online_sum(l, m, m_new, blk);
      m = m_new;
    }
    for j in 0 .. 4 {
      let blk = load(x[i * TM .. +TM, j * TN .. +TN]);
      store(y[i * TM .. +TM, j * TN .. +TN], online_probs(blk, m) / expand(l, axis = 1));
    }
  }
}
)";
  std::vector<float> x(size_t(M * N)), y(size_t(M * N), -7.f);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(int(i * 37 % 101) - 50) / 6.f;
  run_source(src, {&x, &y});
  int bad = 0;
  for (int64_t r = 0; r < M; ++r) {
    double mx = -INFINITY, s = 0;
    for (int64_t n = 0; n < N; ++n)
      mx = std::max(mx, double(x[size_t(r * N + n)]));
    for (int64_t n = 0; n < N; ++n)
      s += std::exp(x[size_t(r * N + n)] - mx);
    for (int64_t n = 0; n < N; ++n) {
      double want = std::exp(x[size_t(r * N + n)] - mx) / s, got = y[size_t(r * N + n)];
      if (!(std::fabs(got - want) <= 1e-5 + 1e-4 * want) && bad++ < 5)
        FAIL_CHECK("y[" << r << ", " << n << "] = " << got << ", want " << want);
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("fn: tensors and index expressions as arguments, on sim") {
  Inputs in(1);
  std::string fns = "fn load_block(t, r, c0) {\n"
                    "  return load(t[r .. +TM, c0 .. +TN]);\n"
                    "}\n";
  compare(
      run(fns, "load_block(x1, i * TM, 0) + load_block(x2, min(i * TM, M - TM), 0 * TN) + a", in),
      in,
      [](const float *a, const float *b, const float *c, const float *, const float *, float *out) {
        for (int64_t n = 0; n < TN; ++n)
          out[n] = b[n] + c[n] + a[n];
      });
}
