// cost/: FLOPs, minimum DRAM bytes and speed of light of rowsum, softmax, a
// bf16 GEMM, a loop bounded by the task index and prefill_attention, each
// checked against formulas written here at bindings that are and are not
// multiples of the tiles; the JSON form parses and holds the same values;
// bad --bind / --gpu get clear errors.
#include "cost/cost.h"
#include "driver/pipeline.h"

#include <llvm/Support/JSON.h>

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace etl {
namespace {

struct Evaluated {
  double tasks, tc, other, read, written, sol_s;
};

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Costs of `src` at `env` on the H100, per group and (last) the total.
std::vector<Evaluated> costs(const std::string &src, const std::map<std::string, int64_t> &env) {
  Compilation c;
  c.file = c.sm.add("cost.etl", src);
  bool ok = compile_front(c);
  INFO(c.diag.render());
  REQUIRE(ok);
  KernelCost kc = estimate_cost(c.program->kernels[0], c.graph);
  const GpuSpec *gpu = find_gpu("h100-sxm");
  REQUIRE(gpu);
  std::vector<Evaluated> out;
  std::vector<const Cost *> rows;
  for (const Cost &g : kc.groups)
    rows.push_back(&g);
  rows.push_back(&kc.total);
  for (const Cost *g : rows) {
    auto s = speed_of_light(*g, env, *gpu);
    REQUIRE(s);
    auto tasks =
        g->tasks.eval([&](const std::string &n) -> std::optional<int64_t> { return env.at(n); });
    REQUIRE(tasks);
    double rd = s->bytes - double(*g->bytes_written.eval([&](const std::string &n) {
                  return std::optional<int64_t>(env.at(n));
                }));
    out.push_back({double(*tasks), s->flops_tc, s->flops_other, rd, s->bytes - rd, s->sol_s});
  }
  return out;
}

std::string read_example(const char *name) {
  std::ifstream f(std::string(ETL_SOURCE_DIR) + "/examples/" + name + "/" + name + ".etl");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const double kHbm = 3350e9, kFp32 = 66.9e12, kTc = 989.4e12;

} // namespace

TEST_CASE("cost: rowsum, split-K row sum (TM 16, TN 128)") {
  std::string src = read_example("rowsum");
  for (auto [M, N] : {std::pair<int64_t, int64_t>{4096, 4096}, {1000, 300}}) {
    auto c = costs(src, {{"M", M}, {"N", N}});
    REQUIRE(c.size() == 3);
    int64_t P = cdiv(M, 16) * cdiv(N, 128); // partial tasks
    CHECK(c[0].tasks == P);
    CHECK(c[0].other == 16.0 * 128 * P); // sum over axis 1 of a 16x128 tile
    CHECK(c[0].read == 4.0 * std::min(M * N, 2048 * P));
    CHECK(c[1].tasks == cdiv(M, 16));
    CHECK(c[1].other == 16.0 * cdiv(N, 128) * cdiv(M, 16)); // acc += per K block
    // The kernel: x read once, part written and read once, y written once.
    double part = 4.0 * M * cdiv(N, 128);
    CHECK(c[2].read == 4.0 * M * N + part);
    CHECK(c[2].written == part + 4.0 * M);
    CHECK(c[2].tc == 0);
    double bytes = c[2].read + c[2].written;
    CHECK(c[2].sol_s == doctest::Approx(std::max(bytes / kHbm, c[2].other / kFp32)));
  }
}

TEST_CASE("cost: softmax, online statistics then normalisation (TB 4, TN 128)") {
  std::string src = read_example("softmax");
  for (auto [B, N] : {std::pair<int64_t, int64_t>{512, 4096}, {33, 1000}}) {
    auto c = costs(src, {{"B", B}, {"N", N}});
    REQUIRE(c.size() == 3);
    int64_t nb = cdiv(B, 4), nj = cdiv(N, 128);
    // stats, per K block: max, t - m, exp, sum over 512 elements; five [4] ops.
    CHECK(c[0].other == double(nb * nj * (4 * 512 + 5 * 4)));
    // normalize: t - m, exp, / l over 512 elements.
    CHECK(c[1].other == double(nb * nj * 3 * 512));
    CHECK(c[2].read == 4.0 * B * N + 8.0 * B);
    CHECK(c[2].written == 4.0 * B * N + 8.0 * B);
  }
}

TEST_CASE("cost: a bf16 GEMM's dot is tensor-core work, 2*M*N*K on whole tiles") {
  const char *src = R"(
const TM = 32;
const TN = 32;
const TK = 32;
kernel gemm<M: dim, N: dim, K: dim>(a: tensor<bf16>[M, K], b: tensor<bf16>[K, N],
                                    c: tensor<f32>[M, N]) {
  task t[i in 0 .. cdiv(M, TM), j in 0 .. cdiv(N, TN)] {
    var acc = zeros<f32>[TM, TN];
    for k in 0 .. cdiv(K, TK) {
      acc += dot(load(a[i * TM .. +TM, k * TK .. +TK]), load(b[k * TK .. +TK, j * TN .. +TN]));
    }
    store(c[i * TM .. +TM, j * TN .. +TN], acc);
  }
}
)";
  for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{4096, 4096, 4096}, {100, 70, 50}}) {
    auto c = costs(src, {{"M", M}, {"N", N}, {"K", K}});
    REQUIRE(c.size() == 2);
    int64_t tiles = cdiv(M, 32) * cdiv(N, 32), kb = cdiv(K, 32);
    CHECK(c[1].tc == 2.0 * 32 * 32 * 32 * tiles * kb);
    CHECK(c[1].other == 0); // acc += dot: the mma adds into its accumulators
    CHECK(c[1].read == 2.0 * M * K + 2.0 * K * N);
    CHECK(c[1].written == 4.0 * M * N);
    if (M == 4096) { // compute-bound: 2*4096^3 on tensor cores
      CHECK(c[1].tc == 2.0 * M * N * K);
      CHECK(c[1].sol_s == doctest::Approx(c[1].tc / kTc));
    }
  }
}

TEST_CASE("cost: --emit=cost text and JSON through the driver, and bad options") {
  std::string path = std::string(ETL_SOURCE_DIR) + "/examples/rowsum/rowsum.etl";
  CompileOptions o;
  o.input = path;
  o.emit = "cost";
  o.bind = "M=4096,N=4096";
  o.format = "json";
  std::ostringstream out, err;
  REQUIRE(compile(o, out, err) == 0);
  auto v = llvm::json::parse(out.str());
  REQUIRE_MESSAGE(bool(v), out.str());
  const llvm::json::Object *root = v->getAsObject();
  REQUIRE(root);
  CHECK(root->getString("kernel") == "rowsum");
  const llvm::json::Array *groups = root->getArray("groups");
  REQUIRE(groups);
  CHECK(groups->size() == 2);
  const llvm::json::Object *total = root->getObject("total");
  REQUIRE(total);
  CHECK(total->getObject("bytes_read")->getNumber("value") == 4.0 * 4096 * 4096 + 4.0 * 4096 * 32);
  CHECK(total->getObject("sol")->getString("bound") == "memory");
  // each group's for loops (what the timing model, cost/timing.cpp, reads): final's
  // one loop runs cdiv(N, TN) trips, each loading a [TM] f32 slice
  const llvm::json::Array *partial_loops = (*groups)[0].getAsObject()->getArray("loops");
  REQUIRE(partial_loops);
  CHECK(partial_loops->empty());
  const llvm::json::Array *loops = (*groups)[1].getAsObject()->getArray("loops");
  REQUIRE(loops);
  REQUIRE(loops->size() == 1);
  const llvm::json::Object *loop = (*loops)[0].getAsObject();
  CHECK(loop->getInteger("depth") == 0);
  CHECK(loop->getObject("trips")->getNumber("value") == 4096.0 / 128);
  CHECK(loop->getObject("trips")->getString("expr") == "cdiv(N, 128)");
  CHECK(loop->getObject("bytes")->getNumber("value") == 16.0 * 4);
  CHECK(!total->getArray("loops")); // a group's, not the kernel's

  o.format = "text";
  o.gpu = "h100";
  std::ostringstream out2, err2;
  CHECK(compile(o, out2, err2) == 2);
  CHECK(err2.str().find("unknown GPU 'h100'; expected h100-sxm h200") != std::string::npos);
  o.gpu = "a100-sxm";
  o.bind = "M=64";
  std::ostringstream out3, err3;
  CHECK(compile(o, out3, err3) == 2);
  CHECK(err3.str().find("no value for dim 'N'") != std::string::npos);
  o.bind = "M=64,Q=3";
  std::ostringstream out4, err4;
  CHECK(compile(o, out4, err4) == 2);
  CHECK(err4.str().find("--bind 'Q=3': expected DIM=VALUE with DIM one of M N") !=
        std::string::npos);
  o.bind = "M=64,N=x";
  std::ostringstream out5, err5;
  CHECK(compile(o, out5, err5) == 2);
  o.bind = "";
  std::ostringstream out6, err6;
  CHECK(compile(o, out6, err6) == 0);
  CHECK(out6.str().find("give --bind") != std::string::npos);
}

TEST_CASE("cost: --bind gives an integer tensor a value for the elements the cost reads") {
  // A loop over data: `for c in 0 .. min(cdiv(len[b], 4), 8)` runs min(cdiv(5, 4), 8) = 2
  // times per task when every element of len is 5.
  std::string src = "kernel k<B: dim>(len: tensor<i32>[B], x: tensor<f32>[B, 32]) {\n"
                    "  task t[b in 0 .. B] {\n"
                    "    var acc = zeros<f32>[32];\n"
                    "    for c in 0 .. min(cdiv(len[b], 4), 8) {\n"
                    "      acc += load(x[b, 0 .. +32]);\n"
                    "    }\n"
                    "    store(x[b, 0 .. +32], acc);\n"
                    "  }\n"
                    "}\n";
  auto c = costs(src, {{"B", 3}, {"len", 5}});
  CHECK(c.back().other == 3.0 * 2 * 32); // the += of each trip
  // Through the driver: decode_layer reads kv_len[b] in a loop bound.
  CompileOptions o;
  o.input = std::string(ETL_SOURCE_DIR) + "/examples/decode_layer/decode_layer.etl";
  o.emit = "cost";
  o.bind = "B=1,H=1024,NKV=8,G=2,F=3072,NP=14,MP=14";
  std::ostringstream out, err;
  REQUIRE(compile(o, out, err) == 0);
  CHECK(out.str().find("an expression could not be evaluated") != std::string::npos);
  o.bind += ",kv_len=208";
  std::ostringstream out2, err2;
  REQUIRE(compile(o, out2, err2) == 0);
  CHECK(out2.str().find("an expression could not be evaluated") == std::string::npos);
  CHECK(out2.str().find("-bound: memory") != std::string::npos);
  for (const char *bad : {",kv_len=-1", ",eps=1", ",q=1"}) { // negative; a scalar; a buffer
    o.bind = std::string("B=1,H=1024,NKV=8,G=2,F=3072,NP=14,MP=14") + bad;
    std::ostringstream out3, err3;
    CAPTURE(bad);
    CHECK(compile(o, out3, err3) == 2);
    CHECK(err3.str().find("(or an integer tensor, each element read as VALUE: kv_len "
                          "page_table)") != std::string::npos);
  }
}

TEST_CASE("cost: a loop from a nonzero start runs hi - lo times, an empty one none; an if counts "
          "both branches") {
  const char *src = R"(
kernel k<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N]) where N % 16 == 0 {
  task t[i in 0 .. N / 16] {
    var a = load(x[i * 16 .. +16]);
    for k in 1 .. 4 {
      a += 1.0;
    }
    for k in 5 .. 2 {
      a += 1.0;
    }
    if i == 0 {
      a += 1.0;
    } else {
      a += 2.0;
    }
    store(y[i * 16 .. +16], a);
  }
}
)";
  auto c = costs(src, {{"N", 256}});
  REQUIRE(c.size() == 2);
  CHECK(c[1].tasks == 16);
  // 3 trips of 16 adds, none of the empty loop, 16 for each branch (an
  // upper bound: one of them runs).
  CHECK(c[1].other == 16.0 * (3 * 16 + 0 + 2 * 16));
}

TEST_CASE("cost: a loop whose trip count reads the task index is summed over the domain") {
  // A triangle: task i adds tiles 0 .. i (causal attention's shape).
  const char *src = R"(
kernel tri<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N]) where N % 16 == 0 {
  task t[i in 0 .. N / 16] {
    var a = zeros<f32>[16];
    for j in 0 .. i + 1 {
      a += load(x[j * 16 .. +16]);
    }
    store(y[i * 16 .. +16], a);
  }
}
)";
  for (int64_t N : {16, 256, 4096}) {
    auto c = costs(src, {{"N", N}});
    REQUIRE(c.size() == 2);
    int64_t n = N / 16;
    CHECK(c[1].other == 16.0 * (n * (n + 1) / 2)); // 16 adds per trip, sum of i + 1
    CHECK(c[1].read == 4.0 * N);                   // x read once, however often tiles are
    CHECK(c[1].written == 4.0 * N);
  }
  Compilation comp;
  comp.file = comp.sm.add("tri.etl", src);
  REQUIRE(compile_front(comp));
  KernelCost kc = estimate_cost(comp.program->kernels[0], comp.graph);
  CHECK(kc.total.flops_other.str().find("sum[t](") != std::string::npos);
  const GpuSpec *gpu = find_gpu("h100-sxm");
  REQUIRE(gpu);
  // 2^26 tasks: more than a domain sum enumerates, so no value (not a hang).
  CHECK(!speed_of_light(kc.total, {{"N", int64_t(1) << 30}}, *gpu));
  std::string text = print_cost(kc, nullptr, *gpu, false);
  CHECK(text.find("sum[t](16*i + 16)") != std::string::npos);
}

TEST_CASE("cost: prefill_attention's causal loop (128-row query tiles, 16-row KV tiles)") {
  std::string src = read_example("prefill_attention");
  for (auto [S, H] : {std::pair<int64_t, int64_t>{4096, 8}, {130, 3}}) {
    auto c = costs(src, {{"S", S}, {"NKV", H}, {"G", 1}, {"HID", 256}});
    REQUIRE(c.size() == 3); // attn, o_proj, total
    int64_t trips = 0;      // KV tiles over the query tiles: up to the causal limit
    for (int64_t i = 0; i < cdiv(S, 128); ++i)
      trips += std::min(8 * (i + 1), cdiv(S, 16));
    CHECK(c[0].tc == 2.0 * 2 * 128 * 16 * 128 * trips * H); // both dots, per trip
    // at least the causal triangle's 4 H D S (S + 1) / 2, at most 1.1 x that at S = 4096
    CHECK(c[0].tc >= 4.0 * H * 128 * S * (S + 1) / 2);
    if (S == 4096)
      CHECK(c[0].tc <= 1.1 * 4.0 * H * 128 * S * (S + 1) / 2);
    CHECK(c[0].read == 2.0 * 128 * S * H * 3); // q, k and v once
    CHECK(c[1].tc == 2.0 * 128 * cdiv(S, 128) * 128 * H * 256); // o_proj on whole row tiles
  }
}

} // namespace etl
