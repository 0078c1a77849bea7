//===- tests/unit/e2e/rmsnorm_rope_test.cpp - rmsnorm_rope at full width -===//
//
// What this pins: the shipped examples/rmsnorm_rope with the rotate_half
// layout (pairs (j, j + D2); wq, wk, q_out and kcache viewed as [.., 2, D2])
// moves its memory at full width:
//
//   tile     every load of x and of the weights and the vcache store are
//            128-bit accesses in `--emit=tile`;
//   ptx      both task bodies take the tile path, the PTX has 128-bit global
//            loads and stores, and ptxas reports no spills on sm_80 and
//            sm_90;
//   sim      at the bench binding (B = 16, D2 = 64, MP = 4) q, the k cache
//            and the v cache match a rotate_half reference computed here, and
//            the sim profile shows >= 90 % of the global bytes moved by
//            128-bit accesses, sector efficiency >= 95 % and unique DRAM
//            bytes <= 1.05 x the bytes the layer must touch.
//
//===----------------------------------------------------------------------===//
#include "../target/ptx_programs.h"
#include "compile_run.h"
#include "driver/pipeline.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/MemoryBuffer.h>

#include "../skip.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

using namespace etl;
using namespace etl::testing;

namespace {

const std::string kSource = std::string(ETL_SOURCE_DIR) + "/examples/rmsnorm_rope/rmsnorm_rope.etl";

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t count(const std::string &s, const std::string &what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1))
    ++n;
  return n;
}

/// The lines of `dump` after layout assignment that load or store `tensor`.
std::vector<std::string> accesses(const std::string &dump, const std::string &tensor) {
  std::vector<std::string> out;
  std::istringstream is(dump.substr(dump.find("after layout assignment")));
  for (std::string l; std::getline(is, l);)
    if (l.find("load " + tensor + "[") != std::string::npos ||
        l.find("store " + tensor + "[") != std::string::npos)
      out.push_back(l);
  return out;
}

/// 128-byte aligned floats (as etlMalloc gives), filled from `seed`.
struct Floats {
  float *p = nullptr;
  size_t n = 0;
  Floats(size_t count, unsigned seed, float scale) : n(count) {
    p = static_cast<float *>(std::aligned_alloc(128, (n * sizeof(float) + 127) / 128 * 128));
    REQUIRE(p);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-scale, scale);
    for (size_t i = 0; i < n; ++i)
      p[i] = seed ? d(rng) : 0.0f;
  }
  ~Floats() { std::free(p); }
  Floats(const Floats &) = delete;
  Floats &operator=(const Floats &) = delete;
  float &operator[](size_t i) { return p[i]; }
};

} // namespace

TEST_CASE("rmsnorm_rope: 128-bit weights and caches in the tile IR and the PTX, no spills") {
  CompileOptions o;
  o.input = kSource;
  o.targets = {"sm_90"};
  o.emit = "tile";
  std::ostringstream out, err;
  REQUIRE_MESSAGE(compile(o, out, err) == 0, err.str());
  std::string dump = out.str();
  for (const char *t : {"x", "wq", "wk", "wv", "vcache"}) {
    CAPTURE(t);
    std::vector<std::string> lines = accesses(dump, t);
    CHECK(!lines.empty());
    for (const std::string &l : lines) {
      INFO(l);
      CHECK(l.find("vec=4 (128-bit)") != std::string::npos);
    }
  }
  // The rotated halves are contiguous runs too (two per thread: 64-bit).
  for (const char *t : {"q_out", "kcache"})
    for (const std::string &l : accesses(dump, t)) {
      INFO(l);
      CHECK(l.find("fixed last dim") == std::string::npos);
      CHECK(l.find("(32-bit)") == std::string::npos);
    }
  for (const char *target : {"sm_90", "sm_80"}) {
    CAPTURE(target);
    CompileOptions p;
    p.input = kSource;
    p.targets = {target};
    p.emit = "ptx";
    std::string ptx, perr, lines;
    REQUIRE(compile_tile_debug(p, "lowering ", ptx, perr, lines) == 0);
    CHECK(lines == "lowering norm: tile IR\nlowering rope: tile IR\n");
    // x (norm and rope), wn, wq and wk (two halves each), wv.
    CHECK(count(ptx, "ld.global.nc.v4.f32") >= 7);
    CHECK(count(ptx, "st.global.v4.f32") >= 1); // vcache
    CHECK(count(ptx, "st.global.v2.f32") >= 4); // the halves of q_out and kcache
    long sp = ptxcheck::ptxas_spills(ptx, target);
    if (sp < 0)
      ETL_TEST_SKIP("ptxas not found at configure time: spills not checked");
    else
      CHECK(sp == 0);
  }
}

TEST_CASE("rmsnorm_rope: rotate_half on sim matches a reference, at full width") {
  const int64_t B = 16, D2 = 64, D = 2 * D2, MP = 4, PS = 16, NP = B * MP, P = MP * PS;
  const int64_t rows = NP * PS;
  Floats x(size_t(B * D), 1, 1.0f), wn(size_t(D), 2, 1.0f), wq(size_t(D * D), 3, 0.25f),
      wk(size_t(D * D), 4, 0.25f), wv(size_t(D * D), 5, 0.25f);
  Floats cs(size_t(P * D2), 6, 1.0f), sn(size_t(P * D2), 7, 1.0f);
  Floats q(size_t(B * D), 0, 0), kc(size_t(rows * D), 0, 0), vc(size_t(rows * D), 0, 0);
  std::vector<int32_t> pos(static_cast<size_t>(B)), pt(size_t(B * MP));
  for (int64_t b = 0; b < B; ++b) {
    pos[size_t(b)] = int32_t((b * 37 + 11) % P); // distinct positions
    for (int64_t i = 0; i < MP; ++i)             // request b owns its pages, listed in reverse
      pt[size_t(b * MP + i)] = int32_t(b * MP + (MP - 1 - i));
  }
  float eps = 0.25f;
  RunOptions run;
  run.threads_per_cta = 0;
  run.profile = std::string(ETL_TEST_BINARY_DIR) + "/e2e_programs/rmsnorm_rope.json";
  std::string err = compile_and_run(read_text(kSource), "rmsnorm_rope",
                                    {{"B", B}, {"D2", D2}, {"P", P}, {"NP", NP}, {"MP", MP}},
                                    {{"x", x.p, ETL_F32, {B, D}},
                                     {"wn", wn.p, ETL_F32, {D}},
                                     {"wq", wq.p, ETL_F32, {D, 2, D2}},
                                     {"wk", wk.p, ETL_F32, {D, 2, D2}},
                                     {"wv", wv.p, ETL_F32, {D, D}},
                                     {"cos_t", cs.p, ETL_F32, {P, D2}},
                                     {"sin_t", sn.p, ETL_F32, {P, D2}},
                                     {"pos", pos.data(), ETL_I32, {B}},
                                     {"page_table", pt.data(), ETL_I32, {B * MP}},
                                     {"q_out", q.p, ETL_F32, {B, 2, D2}},
                                     {"kcache", kc.p, ETL_F32, {rows, 2, D2}},
                                     {"vcache", vc.p, ETL_F32, {rows, D}}},
                                    run, {{"eps", ETL_F32, &eps}});
  REQUIRE_MESSAGE(err.empty(), err);
  double worst = 0;
  std::set<int64_t> written;
  for (int64_t b = 0; b < B; ++b) {
    double ss = 0;
    for (int64_t d = 0; d < D; ++d)
      ss += double(x[size_t(b * D + d)]) * x[size_t(b * D + d)];
    double r = 1.0 / std::sqrt(ss / double(D) + double(eps));
    std::vector<double> aq(size_t(D), 0.0), ak(size_t(D), 0.0), av(size_t(D), 0.0);
    for (int64_t d = 0; d < D; ++d) {
      double xn = x[size_t(b * D + d)] * r * wn[size_t(d)];
      for (int64_t c = 0; c < D; ++c) {
        aq[size_t(c)] += xn * wq[size_t(d * D + c)];
        ak[size_t(c)] += xn * wk[size_t(d * D + c)];
        av[size_t(c)] += xn * wv[size_t(d * D + c)];
      }
    }
    int64_t p = pos[size_t(b)], row = int64_t(pt[size_t(b * MP + p / PS)]) * PS + p % PS;
    written.insert(row);
    auto err_at = [&](float got, double want) { worst = std::max(worst, std::fabs(got - want)); };
    for (int64_t j = 0; j < D2; ++j) {
      double c = cs[size_t(p * D2 + j)], s = sn[size_t(p * D2 + j)];
      // rotate_half: dims j and j + D2 rotate together.
      err_at(q[size_t(b * D + j)], aq[size_t(j)] * c - aq[size_t(j + D2)] * s);
      err_at(q[size_t(b * D + j + D2)], aq[size_t(j)] * s + aq[size_t(j + D2)] * c);
      err_at(kc[size_t(row * D + j)], ak[size_t(j)] * c - ak[size_t(j + D2)] * s);
      err_at(kc[size_t(row * D + j + D2)], ak[size_t(j)] * s + ak[size_t(j + D2)] * c);
    }
    for (int64_t c = 0; c < D; ++c)
      err_at(vc[size_t(row * D + c)], av[size_t(c)]);
  }
  for (int64_t row = 0; row < rows; ++row) // no other cache row is touched
    if (!written.count(row))
      for (int64_t c = 0; c < D; ++c)
        worst = std::max(worst, double(std::fabs(kc[size_t(row * D + c)])) +
                                    std::fabs(vc[size_t(row * D + c)]));
  CHECK(worst < 1e-4);
  auto buf = llvm::MemoryBuffer::getFile(run.profile);
  REQUIRE(buf);
  auto doc = llvm::json::parse((*buf)->getBuffer());
  REQUIRE(bool(doc));
  const llvm::json::Object *top = doc->getAsObject();
  const llvm::json::Object *g = top->getObject("global");
  REQUIRE(g);
  double bytes = double(*g->getInteger("bytes_requested"));
  double b128 = double(*g->getInteger("bytes_128bit"));
  double eff = *g->getNumber("efficiency");
  // What the layer must touch: x, wn and the three weights once, B rows of
  // the cos/sin tables, pos, B page-table entries, q and the two cache rows
  // of every token, and rscale (written and read once).
  double minimum = 4.0 * double(B * D + D + 3 * D * D + 2 * B * D2 + B + B + 3 * B * D + B);
  double unique = double(*top->getInteger("unique_dram_bytes"));
  MESSAGE("rmsnorm_rope: " << b128 / bytes * 100 << " % of global bytes by 128-bit accesses, "
                           << "sector efficiency " << eff * 100 << " %, unique DRAM bytes "
                           << unique / minimum << " x the minimum");
  CHECK(b128 >= 0.9 * bytes);
  CHECK(eff >= 0.95);
  CHECK(unique <= 1.05 * minimum);
}
