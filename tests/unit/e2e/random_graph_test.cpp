// Randomized end-to-end test: random task graphs written as ETL source,
// compiled to a sim artifact and run on a sim context with a random number of
// workers, compared with a sequential C++ reference.
//
// Each graph has G groups t0 .. t{G-1}; group g writes row g of
// `v: tensor<f32>[G, N]`:
//   v[g, i] = 1 + sum over its dependencies p of
//               v[p, i]             (waits Ep[i])
//               sum_k v[p, k]       (waits Ep[*] or Dp[0])
//               v[p, inv[i]]        (waits Pp[i])
// Groups may have a 2-D domain [i in 0 .. N, r in 0 .. R]: every task of row i
// writes the same value, and each Eg[i] then counts R notifications. Some
// groups also notify a 1-element event Dg[0] (N * R notifications), and some
// notify Pg[perm[i]] through a random permutation `perm` (inverse `inv`)
// read on the device: wait counts settled at run time. Some groups are
// ragged: [i in 0 .. N, r in 0 .. min(cnt[i], R)], a range read from the
// tensor cnt (1 .. 3) on the device, so they are dynamic, expanded per i.
//
// About a third of the groups are `schedule dynamic` (run from the device
// queue as their events complete), mixed with static ones in one kernel;
// sometimes the kernel says `schedule dynamic` and the static groups say
// `schedule static`.
//
// ETL_RANDOM_GRAPH_SEED and ETL_RANDOM_GRAPHS override the seed and count.
#include "driver/pipeline.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace etl {
namespace {

enum class Map { Same, All, Done, Perm }; // Ep[i], Ep[*], Dp[0], Pp[i]

struct Dep {
  int group;
  Map map;
};

struct Group {
  int rows = 1;               ///< R: extent of the second domain dimension (1: 1-D domain)
  bool notifies_done;         ///< also notifies Dg[0]
  bool notifies_perm = false; ///< also notifies Pg[perm[i]] (a data-dependent index)
  bool ragged = false;        ///< second dimension r in 0 .. min(cnt[i], rows)
  bool dynamic = false;       ///< `schedule dynamic`
  bool say_clause = false;    ///< write the clause even where it is the kernel's default
  std::vector<Dep> deps;
};

struct Graph {
  std::vector<Group> groups;   ///< indexed by group number (= row of v)
  std::vector<int> topo;       ///< a topological order of the groups
  std::vector<int> text;       ///< the order the tasks appear in the source
  std::vector<Dep> back_edge;  ///< cycle tests only: pairs (waiter, event it also waits on)
  bool kernel_dynamic = false; ///< `schedule dynamic` on the kernel
};

Graph random_graph(std::mt19937_64 &rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Graph g;
  int n = pick(2, 6);
  g.groups.resize(n);
  g.topo.resize(n);
  std::iota(g.topo.begin(), g.topo.end(), 0);
  std::shuffle(g.topo.begin(), g.topo.end(), rng);
  for (auto &grp : g.groups) {
    grp.rows = pick(0, 2) == 0 ? pick(2, 3) : 1;
    grp.notifies_done = pick(0, 2) == 0;
    grp.notifies_perm = pick(0, 2) == 0;
    grp.dynamic = pick(0, 2) == 0;
    grp.say_clause = pick(0, 1) == 0;
    grp.ragged = pick(0, 4) == 0;
    if (grp.ragged) { // always dynamic; its notifies may not read data
      grp.rows = pick(2, 3);
      grp.notifies_perm = false;
      grp.dynamic = true;
    }
  }
  g.kernel_dynamic = pick(0, 3) == 0;
  for (int pos = 1; pos < n; ++pos) {
    Group &grp = g.groups[g.topo[pos]];
    for (int q = 0; q < pos; ++q) {
      if (pick(0, 1) == 0)
        continue;
      int p = g.topo[q];
      std::vector<Map> maps = {Map::Same, Map::All};
      if (g.groups[p].notifies_done)
        maps.push_back(Map::Done);
      if (g.groups[p].notifies_perm)
        maps.push_back(Map::Perm);
      grp.deps.push_back({p, maps[size_t(pick(0, int(maps.size()) - 1))]});
    }
    std::shuffle(grp.deps.begin(), grp.deps.end(), rng);
  }
  g.text = g.topo;
  if (pick(0, 1))
    std::shuffle(g.text.begin(), g.text.end(), rng);
  return g;
}

std::string event_ref(const Dep &d) {
  std::string p = std::to_string(d.group);
  switch (d.map) {
  case Map::Same:
    return "E" + p + "[i]";
  case Map::All:
    return "E" + p + "[*]";
  case Map::Done:
    return "D" + p + "[0]";
  case Map::Perm:
    return "P" + p + "[i]";
  }
  return "";
}

std::string source(const Graph &g) {
  std::ostringstream s;
  int n = int(g.groups.size());
  s << "kernel rg<N: dim>(v: tensor<f32>[" << n
    << ", N], perm: tensor<i32>[N], inv: tensor<i32>[N], cnt: tensor<i32>[N])"
    << (g.kernel_dynamic ? " schedule dynamic" : "") << " {\n";
  for (int p = 0; p < n; ++p) {
    s << "  event E" << p << "[N];\n";
    if (g.groups[p].notifies_done)
      s << "  event D" << p << "[1];\n";
    if (g.groups[p].notifies_perm)
      s << "  event P" << p << "[N];\n";
  }
  for (int gi : g.text) {
    const Group &grp = g.groups[gi];
    s << "\n  task t" << gi << "[i in 0 .. N";
    if (grp.ragged)
      s << ", r in 0 .. min(cnt[i], " << grp.rows << ")";
    else if (grp.rows > 1)
      s << ", r in 0 .. " << grp.rows;
    s << "]";
    if (grp.dynamic != g.kernel_dynamic || grp.say_clause)
      s << (grp.dynamic ? " schedule dynamic" : " schedule static");
    std::vector<std::string> refs;
    for (const Dep &d : grp.deps)
      refs.push_back(event_ref(d));
    for (size_t k = 0; k + 1 < g.back_edge.size(); k += 2)
      if (g.back_edge[k].group == gi)
        refs.push_back(event_ref(g.back_edge[k + 1]));
    for (size_t k = 0; k < refs.size(); ++k)
      s << (k ? ", " : " waits ") << refs[k];
    s << " notifies E" << gi << "[i]";
    if (grp.notifies_done)
      s << ", D" << gi << "[0]";
    if (grp.notifies_perm)
      s << ", P" << gi << "[perm[i]]";
    s << " {\n    var acc = full<f32>[1](1.0);\n";
    for (const Dep &d : grp.deps) {
      if (d.map == Map::Same)
        s << "    acc += load(v[" << d.group << ", i .. +1]);\n";
      else if (d.map == Map::Perm)
        s << "    acc += load(v[" << d.group << ", inv[i] .. +1]);\n";
      else
        s << "    for k in 0 .. N {\n      acc += load(v[" << d.group << ", k .. +1]);\n    }\n";
    }
    s << "    store(v[" << gi << ", i .. +1], acc);\n  }\n";
  }
  s << "}\n";
  return s.str();
}

/// v as the groups compute it, run in topological order with the same order
/// of float additions as the task bodies.
std::vector<float> reference(const Graph &g, int64_t N, const std::vector<int32_t> &inv) {
  std::vector<float> v(g.groups.size() * N, 0.f);
  for (int gi : g.topo) {
    for (int64_t i = 0; i < N; ++i) {
      float acc = 1.f;
      for (const Dep &d : g.groups[gi].deps) {
        if (d.map == Map::Same)
          acc += v[d.group * N + i];
        else if (d.map == Map::Perm)
          acc += v[d.group * N + inv[size_t(i)]];
        else
          for (int64_t k = 0; k < N; ++k)
            acc += v[d.group * N + k];
      }
      v[gi * N + i] = acc;
    }
  }
  return v;
}

fs::path temp_dir() {
  fs::path d = fs::path(ETL_TEST_BINARY_DIR) / "random_graph_test";
  fs::create_directories(d);
  return d;
}

struct Compiled {
  int code;
  std::string err;
};

Compiled compile_source(const std::string &text, const std::string &stem) {
  fs::path dir = temp_dir();
  fs::path in = dir / (stem + ".etl");
  std::ofstream(in) << text;
  CompileOptions o;
  o.input = in.string();
  o.output = (dir / (stem + ".etlb")).string();
  o.targets = {"sim"};
  o.threads_per_cta = 32;
  std::ostringstream out, err;
  int code = compile(o, out, err);
  return {code, err.str()};
}

uint64_t env_or(const char *name, uint64_t fallback) {
  const char *s = std::getenv(name);
  return s && *s ? std::strtoull(s, nullptr, 0) : fallback;
}

TEST_CASE("random task graphs compile and run on sim like a sequential reference") {
  const uint64_t seed = env_or("ETL_RANDOM_GRAPH_SEED", 20261123);
  const uint64_t count = env_or("ETL_RANDOM_GRAPHS", 200);
  MESSAGE("random graphs: seed " << seed << ", count " << count
                                 << " (ETL_RANDOM_GRAPH_SEED / ETL_RANDOM_GRAPHS)");
  std::mt19937_64 rng(seed);
  auto t0 = std::chrono::steady_clock::now();
  uint64_t failures = 0, race_checked = 0;
  for (uint64_t n = 0; n < count && failures < 3; ++n) {
    Graph g = random_graph(rng);
    std::string text = source(g);
    uint32_t workers = std::uniform_int_distribution<uint32_t>(1, 5)(rng);
    int64_t dims[2] = {std::uniform_int_distribution<int64_t>(1, 40)(rng),
                       std::uniform_int_distribution<int64_t>(1, 40)(rng)};
    INFO("graph " << n << " (seed " << seed << "), sim_workers " << workers << ", program:\n"
                  << text);
    Compiled c = compile_source(text, "graph");
    INFO("diagnostics:\n" << c.err);
    if (c.code != 0) {
      ++failures;
      CHECK(c.code == 0);
      continue;
    }
    etlContextParams params = etlContextDefaultParams();
    params.sim_workers = workers;
    params.watchdog_ms = 5000;
    etlContext ctx = nullptr;
    REQUIRE(etlContextCreate(&ctx, "sim", &params) == ETL_SUCCESS);
    etlProgram prog = nullptr;
    std::string artifact = (temp_dir() / "graph.etlb").string();
    REQUIRE_MESSAGE(etlProgramLoadFile(ctx, artifact.c_str(), &prog) == ETL_SUCCESS,
                    etlGetLastErrorMessage());
    // Every graph whose tasks each write their own element also runs under
    // the sim's race check: such graphs are race-free by construction,
    // so any report is a false positive. (Groups with R > 1 rows have R
    // tasks write the same element with the same value: a real, benign race
    // the check rightly reports.)
    bool race_check = std::all_of(g.groups.begin(), g.groups.end(),
                                  [](const Group &grp) { return grp.rows == 1; });
    INFO("race check " << (race_check ? "on" : "off"));
    race_checked += race_check;
    REQUIRE(etlProgramSetRaceCheck(prog, race_check) == ETL_SUCCESS);
    for (int64_t N : dims) {
      INFO("N = " << N);
      std::vector<float> v(g.groups.size() * N, std::nanf(""));
      std::vector<int32_t> perm(size_t(N), 0), inv(size_t(N), 0), cnt(size_t(N), 1);
      for (int32_t &c : cnt)
        c = std::uniform_int_distribution<int32_t>(1, 3)(rng);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      for (int64_t k = 0; k < N; ++k)
        inv[size_t(perm[size_t(k)])] = int32_t(k);
      int64_t shape[2] = {int64_t(g.groups.size()), N}, pshape[1] = {N};
      CHECK(etlBindDim(prog, "N", N) == ETL_SUCCESS);
      CHECK(etlBindTensor(prog, "v", v.data(), ETL_F32, 2, shape) == ETL_SUCCESS);
      CHECK(etlBindTensor(prog, "perm", perm.data(), ETL_I32, 1, pshape) == ETL_SUCCESS);
      CHECK(etlBindTensor(prog, "inv", inv.data(), ETL_I32, 1, pshape) == ETL_SUCCESS);
      CHECK(etlBindTensor(prog, "cnt", cnt.data(), ETL_I32, 1, pshape) == ETL_SUCCESS);
      etlStatus st = etlRun(prog);
      if (st != ETL_SUCCESS) {
        ++failures;
        FAIL_CHECK("etlRun: " << std::string(etlGetErrorName(st)) << ": "
                              << std::string(etlGetLastErrorMessage()));
        break;
      }
      std::vector<float> ref = reference(g, N, inv);
      size_t wrong = 0, first = 0;
      for (size_t k = 0; k < v.size(); ++k) {
        bool ok = std::fabs(v[k] - ref[k]) <= 1e-5f * std::fabs(ref[k]);
        if (!ok && wrong++ == 0)
          first = k;
      }
      if (wrong) {
        ++failures;
        FAIL_CHECK(wrong << " wrong values; first v[" << first / N << ", " << first % N
                         << "] = " << v[first] << ", expected " << ref[first]);
        break;
      }
    }
    etlProgramDestroy(prog);
    etlContextDestroy(ctx);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE(count << " random graphs in " << secs << " s, " << race_checked
                << " of them under the sim race check");
}

TEST_CASE("random graphs with a cycle are rejected naming its tasks and events") {
  // The smallest cycle: t0 waits E1[i], t1 waits E0[i].
  {
    Graph g;
    g.groups.resize(2);
    for (auto &grp : g.groups)
      grp.notifies_done = false;
    g.groups[1].deps.push_back({0, Map::Same});
    g.topo = g.text = {0, 1};
    g.back_edge = {{0, Map::Same}, {1, Map::Same}};
    std::string text = source(g);
    Compiled c = compile_source(text, "cycle_min");
    INFO("program:\n" << text << "diagnostics:\n" << c.err);
    CHECK(c.code == 1);
    CHECK(c.err.find("cycle") != std::string::npos);
    CHECK((c.err.find("t0 -> E0 -> t1 -> E1 -> t0") != std::string::npos ||
           c.err.find("t1 -> E1 -> t0 -> E0 -> t1") != std::string::npos));
  }
  // Random graphs with one back edge: a group a earlier in topological order
  // waits on the event of a later group b that waits directly on a.
  const uint64_t seed = env_or("ETL_RANDOM_GRAPH_SEED", 20261123) + 1;
  std::mt19937_64 rng(seed);
  for (int n = 0; n < 5; ++n) {
    Graph g = random_graph(rng);
    int size = int(g.groups.size());
    int pa = std::uniform_int_distribution<int>(0, size - 2)(rng);
    int pb = std::uniform_int_distribution<int>(pa + 1, size - 1)(rng);
    int a = g.topo[pa], b = g.topo[pb];
    auto &bd = g.groups[b].deps;
    if (std::none_of(bd.begin(), bd.end(), [&](const Dep &d) { return d.group == a; }))
      bd.push_back({a, Map::Same});
    g.back_edge = {{a, Map::Same}, {b, Map::Same}};
    std::string text = source(g);
    Compiled c = compile_source(text, "cycle");
    INFO("graph " << n << " (seed " << seed << "), cycle t" << a << " <-> t" << b << ", program:\n"
                  << text << "diagnostics:\n"
                  << c.err);
    CHECK(c.code == 1);
    CHECK(c.err.find("cycle") != std::string::npos);
    // Every cycle runs through the back edge: a waits on E{b}.
    CHECK(c.err.find("t" + std::to_string(a) + " ") != std::string::npos);
    CHECK(c.err.find("t" + std::to_string(b) + " ") != std::string::npos);
    CHECK(c.err.find("E" + std::to_string(b) + " ") != std::string::npos);
  }
}

} // namespace
} // namespace etl
