//===- tests/unit/e2e/variants_test.cpp - One artifact, several variants --===//
//
// `etlc compile --variant`: the program compiled once per variant with its
// own tunable values, one artifact; the runtime runs, per binding, the
// first variant whose dim ranges hold (etlProgramLastVariant says which)
// and refuses a binding none holds for. decode_layer with a batch-1 and a
// batch-64 variant runs both bindings on sim, each compared bit for bit
// with the single-variant artifact compiled with the same values.
//
//===----------------------------------------------------------------------===//
#include "compile_run.h"

#include <doctest/doctest.h>

#include <random>

using namespace etl;
using namespace etl::testing;

namespace {

std::filesystem::path work_dir() {
  std::filesystem::path dir = std::filesystem::path(ETL_TEST_BINARY_DIR) / "e2e_programs";
  std::filesystem::create_directories(dir);
  return dir;
}

/// etlc compile `input` -o `out` for sim with `defines` and `variants`;
/// "" or the diagnostics.
std::string compile_to(const std::string &input, const std::string &out,
                       const std::vector<std::string> &defines,
                       const std::vector<std::string> &variants) {
  CompileOptions o;
  o.input = input;
  o.output = out;
  o.targets = {"sim"};
  o.defines = defines;
  o.variants = variants;
  std::ostringstream os, es;
  return compile(o, os, es) == 0 ? "" : "compile failed:\n" + es.str();
}

struct Sim {
  etlContext ctx = nullptr;
  Sim() {
    etlContextParams p = etlContextDefaultParams();
    p.sim_workers = 2;
    p.watchdog_ms = 20000;
    REQUIRE(etlContextCreate(&ctx, "sim", &p) == ETL_SUCCESS);
  }
  ~Sim() { etlContextDestroy(ctx); }
  etlProgram load(const std::string &path) {
    etlProgram prog = nullptr;
    INFO(etlGetLastErrorMessage());
    REQUIRE(etlProgramLoadFile(ctx, path.c_str(), &prog) == ETL_SUCCESS);
    return prog;
  }
};

const char *kRowsum = R"(
const TN = 64 in [16, 32, 64];

kernel twice<M: dim, N: dim>(x: tensor<f32>[M, N], y: tensor<f32>[M, N]) {
  task t[i in 0 .. M, j in 0 .. cdiv(N, TN)] {
    store(y[i, j * TN .. +TN], load(x[i, j * TN .. +TN]) * 2.0);
  }
}
)";

} // namespace

TEST_CASE("variants: the runtime runs the first variant whose ranges hold") {
  std::filesystem::path src = work_dir() / "variants_rowsum.etl",
                        art = work_dir() / "variants_rowsum.etlb";
  std::ofstream(src) << kRowsum;
  REQUIRE(compile_to(src.string(), art.string(), {},
                     {"N<=32,M>=2:TN=16", "N<=100:TN=32", "N>=200,N<300:"}) == "");
  Sim sim;
  etlProgram prog = sim.load(art.string());
  int n = 0, sel = -1, last = 7;
  const char *label = nullptr;
  REQUIRE(etlProgramNumVariants(prog, &n) == ETL_SUCCESS);
  CHECK(n == 3);
  REQUIRE(etlProgramVariantLabel(prog, 1, &label) == ETL_SUCCESS);
  CHECK(std::string(label) == "N<=100:TN=32");
  CHECK(etlProgramVariantLabel(prog, 3, &label) == ETL_ERROR_INVALID_VALUE);
  REQUIRE(etlProgramLastVariant(prog, &last) == ETL_SUCCESS);
  CHECK(last == -1);
  // N is unbound: the first variant's range names it.
  CHECK(etlProgramSelectVariant(prog, &sel) == ETL_ERROR_UNBOUND);
  CHECK(std::string(etlGetLastErrorMessage()).find("'N' is not bound") != std::string::npos);

  struct Case {
    int64_t m, n;
    int variant; // -1: none holds
  };
  for (Case c : {Case{3, 20, 0}, Case{1, 20, 1}, Case{2, 70, 1}, Case{2, 250, 2},
                 Case{2, 150, -1}, Case{2, 300, -1}}) {
    CAPTURE(c.m);
    CAPTURE(c.n);
    std::vector<float> x(size_t(c.m * c.n)), y(size_t(c.m * c.n), -1.0f);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(int(i % 7) - 3) * 0.25f;
    int64_t xs[2] = {c.m, c.n};
    REQUIRE(etlBindDim(prog, "M", c.m) == ETL_SUCCESS);
    REQUIRE(etlBindDim(prog, "N", c.n) == ETL_SUCCESS);
    REQUIRE(etlBindTensor(prog, "x", x.data(), ETL_F32, 2, xs) == ETL_SUCCESS);
    REQUIRE(etlBindTensor(prog, "y", y.data(), ETL_F32, 2, xs) == ETL_SUCCESS);
    etlStatus st = etlRun(prog);
    if (c.variant < 0) {
      CHECK(st == ETL_ERROR_BINDING);
      std::string msg = etlGetLastErrorMessage();
      CHECK(msg.find("no variant of the program is for M = 2, N = " + std::to_string(c.n)) !=
            std::string::npos);
      CHECK(msg.find("'N<=32,M>=2:TN=16', 'N<=100:TN=32', 'N>=200,N<300:'") !=
            std::string::npos);
      CHECK(etlProgramSelectVariant(prog, &sel) == ETL_ERROR_BINDING);
      continue;
    }
    INFO(etlGetLastErrorMessage());
    REQUIRE(st == ETL_SUCCESS);
    REQUIRE(etlProgramSelectVariant(prog, &sel) == ETL_SUCCESS);
    REQUIRE(etlProgramLastVariant(prog, &last) == ETL_SUCCESS);
    CHECK(sel == c.variant);
    CHECK(last == c.variant);
    for (size_t i = 0; i < x.size(); ++i)
      CHECK(y[i] == 2 * x[i]);
  }
  etlProgramDestroy(prog);
}

TEST_CASE("variants: etlc's errors and a plain artifact's one variant") {
  std::filesystem::path src = work_dir() / "variants_rowsum_err.etl",
                        art = work_dir() / "variants_rowsum_err.etlb";
  std::ofstream(src) << kRowsum;
  CHECK(compile_to(src.string(), art.string(), {}, {"Q<=1:TN=16"}).find(
            "'Q' is not a dim of kernel 'twice'") != std::string::npos);
  CHECK(compile_to(src.string(), art.string(), {}, {"N<1:TN=16"}).find(
            "no value of N (a dim is >= 1) satisfies its conditions") != std::string::npos);
  CHECK(compile_to(src.string(), art.string(), {}, {"*:TQ=16"}).find(
            "--variant '*:TQ=16': TQ: the program has no top-level const 'TQ'") !=
        std::string::npos);
  REQUIRE(compile_to(src.string(), art.string(), {}, {}) == "");
  Sim sim;
  etlProgram prog = sim.load(art.string());
  int n = 0, last = 5, sel = 3;
  const char *label = nullptr;
  CHECK(etlProgramNumVariants(prog, &n) == ETL_SUCCESS);
  CHECK(n == 1);
  CHECK(etlProgramVariantLabel(prog, 0, &label) == ETL_SUCCESS);
  CHECK(std::string(label).empty());
  CHECK(etlProgramSelectVariant(prog, &sel) == ETL_SUCCESS);
  CHECK(sel == 0);
  CHECK(etlProgramLastVariant(prog, &last) == ETL_SUCCESS);
  CHECK(last == -1);
  etlProgramDestroy(prog);
}

namespace {

/// decode_layer's inputs at small dims for a batch of `b` requests
/// (deterministic), and the outputs a run writes.
struct DecodeCase {
  static constexpr int64_t H = 128, NKV = 2, G = 1, F = 3072, DH = 128, DH2 = 64, PS = 16,
                           MP = 2;
  int64_t B, NP;
  std::vector<uint16_t> x, ln1, wq, wk, wv, qn, kn, kcache, vcache, wo, ln2, wg, wu, wd, out;
  std::vector<float> cos_t, sin_t;
  std::vector<int32_t> kv_len, page_table;

  explicit DecodeCase(int64_t b) : B(b), NP(b * MP + 1) {
    std::mt19937 rng{static_cast<unsigned>(b)};
    auto fill = [&](std::vector<uint16_t> &v, size_t n, float scale, float mean) {
      std::uniform_real_distribution<float> d(-1.0f, 1.0f);
      v.resize(n);
      for (uint16_t &e : v)
        e = bf16_bits(mean + scale * d(rng));
    };
    fill(x, size_t(B * H), 1.0f, 0);
    fill(ln1, H, 0.1f, 1.0f);
    fill(wq, size_t(H * NKV * G * DH), 0.09f, 0);
    fill(wk, size_t(H * NKV * DH), 0.09f, 0);
    fill(wv, size_t(H * NKV * DH), 0.09f, 0);
    fill(qn, DH, 0.1f, 1.0f);
    fill(kn, DH, 0.1f, 1.0f);
    fill(kcache, size_t(NP * PS * NKV * DH), 1.0f, 0);
    fill(vcache, size_t(NP * PS * NKV * DH), 1.0f, 0);
    fill(wo, size_t(NKV * G * DH * H), 0.09f, 0);
    fill(ln2, H, 0.1f, 1.0f);
    fill(wg, size_t(H * F), 0.09f, 0);
    fill(wu, size_t(H * F), 0.09f, 0);
    fill(wd, size_t(F * H), 0.03f, 0);
    out.assign(size_t(B * H), 0);
    for (int64_t p = 0; p < MP * PS; ++p)
      for (int64_t j = 0; j < DH2; ++j) {
        float a = float(p) * std::pow(10000.0f, -float(j) / float(DH2));
        cos_t.push_back(std::cos(a));
        sin_t.push_back(std::sin(a));
      }
    for (int64_t r = 0; r < B; ++r) {
      kv_len.push_back(int32_t(1 + (r * 7) % (MP * PS)));
      for (int64_t p = 0; p < MP; ++p)
        page_table.push_back(int32_t(r * MP + p + 1)); // page 0 nobody owns
    }
  }

  /// Runs `prog` on these inputs: "" or the error.
  std::string run(etlProgram prog) {
    const std::pair<const char *, int64_t> dims[] = {{"B", B},   {"H", H},   {"NKV", NKV},
                                                     {"G", G},   {"F", F},   {"NP", NP},
                                                     {"MP", MP}};
    for (auto &[n, v] : dims)
      if (etlBindDim(prog, n, v) != ETL_SUCCESS)
        return etlGetLastErrorMessage();
    struct T {
      const char *name;
      void *data;
      etlDType dt;
      std::vector<int64_t> shape;
    };
    const T ts[] = {
        {"x", x.data(), ETL_BF16, {B, H}},
        {"ln1", ln1.data(), ETL_BF16, {H}},
        {"wq", wq.data(), ETL_BF16, {H, NKV, G, DH}},
        {"wk", wk.data(), ETL_BF16, {H, NKV, DH}},
        {"wv", wv.data(), ETL_BF16, {H, NKV, DH}},
        {"qn", qn.data(), ETL_BF16, {DH}},
        {"kn", kn.data(), ETL_BF16, {DH}},
        {"cos_t", cos_t.data(), ETL_F32, {MP * PS, DH2}},
        {"sin_t", sin_t.data(), ETL_F32, {MP * PS, DH2}},
        {"kv_len", kv_len.data(), ETL_I32, {B}},
        {"page_table", page_table.data(), ETL_I32, {B, MP}},
        {"kcache", kcache.data(), ETL_BF16, {NP * PS, NKV, DH}},
        {"vcache", vcache.data(), ETL_BF16, {NP * PS, NKV, DH}},
        {"wo", wo.data(), ETL_BF16, {NKV, G, DH, H}},
        {"ln2", ln2.data(), ETL_BF16, {H}},
        {"wg", wg.data(), ETL_BF16, {H, F}},
        {"wu", wu.data(), ETL_BF16, {H, F}},
        {"wd", wd.data(), ETL_BF16, {F, H}},
        {"out", out.data(), ETL_BF16, {B, H}},
    };
    for (const T &t : ts)
      if (etlBindTensor(prog, t.name, t.data, t.dt, int(t.shape.size()), t.shape.data()) !=
          ETL_SUCCESS)
        return std::string(t.name) + ": " + etlGetLastErrorMessage();
    float eps = 1e-6f;
    if (etlBindScalar(prog, "eps", ETL_F32, &eps) != ETL_SUCCESS)
      return etlGetLastErrorMessage();
    return etlRun(prog) == ETL_SUCCESS ? "" : etlGetLastErrorMessage();
  }
};

} // namespace

TEST_CASE("variants: decode_layer at batch 1 and 64, each variant as its own artifact") {
  std::string src = std::string(ETL_SOURCE_DIR) + "/examples/decode_layer/decode_layer.etl";
  std::string both = (work_dir() / "decode_layer_variants.etlb").string(),
              tk64 = (work_dir() / "decode_layer_tk64.etlb").string(),
              tk32 = (work_dir() / "decode_layer_tk32.etlb").string();
  REQUIRE(compile_to(src, both, {}, {"B<=1:TK=64", "B>1:TK=32"}) == "");
  REQUIRE(compile_to(src, tk64, {}, {}) == "");
  REQUIRE(compile_to(src, tk32, {"TK=32"}, {}) == "");
  Sim sim;
  etlProgram prog = sim.load(both);
  for (const auto &row : {std::tuple<int64_t, int, std::string>{1, 0, tk64}, {64, 1, tk32}}) {
    const int64_t b = std::get<0>(row); // no structured binding: clang 14 can't CAPTURE one
    const int variant = std::get<1>(row);
    const std::string &single = std::get<2>(row);
    CAPTURE(b);
    DecodeCase got(b), want(b);
    REQUIRE(got.run(prog) == "");
    int last = -1;
    REQUIRE(etlProgramLastVariant(prog, &last) == ETL_SUCCESS);
    CHECK(last == variant);
    etlProgram ref = sim.load(single);
    REQUIRE(want.run(ref) == "");
    etlProgramDestroy(ref);
    CHECK(got.out == want.out);
    CHECK(got.kcache == want.kcache);
    CHECK(got.vcache == want.vcache);
    // The run did something: the new cache rows differ from the inputs.
    CHECK(got.kcache != DecodeCase(b).kcache);
  }
  etlProgramDestroy(prog);
}
