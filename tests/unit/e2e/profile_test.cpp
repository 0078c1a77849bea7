// The sim's profile counters (runtime/src/sim_profile.h) on microkernels
// whose answers are computed by hand: 32 threads per CTA (one warp), f32
// tensors 256-byte aligned, so a warp's 32 consecutive floats are exactly 4
// sectors. Checked: coalesced rows (4 sectors per request, 100 %), stride 2
// (8 sectors, 50 %), a column of a row-major tile (32 sectors per request),
// a masked tail (lane utilisation), unique DRAM bytes, the synchronisation
// counts, and that the JSON document parses with the documented fields.
#include "compile_run.h"

#include <llvm/Support/JSON.h>

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace etl {
using testing::Bind;
using testing::compile_and_run;
using testing::RunOptions;

namespace {

/// 256-byte aligned zeroed floats (like etlMalloc on sim).
struct Aligned {
  float *p;
  explicit Aligned(size_t n)
      : p(static_cast<float *>(std::aligned_alloc(256, (n * 4 + 255) / 256 * 256))) {
    std::memset(p, 0, (n * 4 + 255) / 256 * 256);
  }
  ~Aligned() { std::free(p); }
};

llvm::json::Value read_json(const std::string &path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  auto v = llvm::json::parse(ss.str());
  REQUIRE_MESSAGE(bool(v), "not JSON: " << path);
  return std::move(*v);
}

/// The `global` object of the load (or store) site of group `group`; the
/// program has one of each.
const llvm::json::Object *site(const llvm::json::Value &doc, const std::string &group,
                               const char *kind) {
  for (const llvm::json::Value &g : *doc.getAsObject()->getArray("groups")) {
    const llvm::json::Object &go = *g.getAsObject();
    if (go.getString("name") != group)
      continue;
    for (const llvm::json::Value &s : *go.getArray("sites"))
      if (s.getAsObject()->getString("kind") == kind)
        return s.getAsObject()->getObject("global");
  }
  return nullptr;
}

std::string path_of(const char *stem) {
  return (std::filesystem::path(ETL_TEST_BINARY_DIR) / "e2e_programs" / stem).string() + ".json";
}

} // namespace

TEST_CASE("profile: a coalesced row copy, 4 sectors per request, unique DRAM bytes") {
  const char *src = R"(
kernel k<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N]) where N % 32 == 0 {
  task copy[i in 0 .. N / 32] {
    store(y[i * 32 .. +32], load(x[i * 32 .. +32]));
  }
}
)";
  const int64_t N = 128;
  Aligned x(N), y(N);
  std::string out = path_of("prof_row");
  std::string err = compile_and_run(src, "prof_row", {{"N", N}},
                                    {{"x", x.p, ETL_F32, {N}}, {"y", y.p, ETL_F32, {N}}},
                                    RunOptions{false, out, ""});
  REQUIRE_MESSAGE(err.empty(), err);
  llvm::json::Value doc = read_json(out);
  const llvm::json::Object &root = *doc.getAsObject();
  CHECK(root.getString("schema") == "etl-sim-profile-1");
  CHECK(root.getInteger("unique_dram_bytes") == 2 * N * 4);
  for (const char *kind : {"load", "store"}) {
    const llvm::json::Object *g = site(doc, "copy", kind);
    REQUIRE(g);
    CHECK(g->getInteger("requests") == N / 32);
    CHECK(g->getInteger("bytes_requested") == N * 4);
    CHECK(g->getNumber("sectors_per_request") == 4.0);
    CHECK(g->getNumber("efficiency") == 1.0);
    CHECK(g->getNumber("lane_utilization") == 1.0);
  }
  std::ifstream table(out + ".txt");
  CHECK(table.good());
}

TEST_CASE("profile: stride 2 (50 %), a column of a row-major tile (32 sectors), a masked tail") {
  const char *src = R"(
kernel k<N: dim, L: dim>(x: tensor<f32>[2 * N], m: tensor<f32>[32, 32], y: tensor<f32>[N],
                         c: tensor<f32>[32, 32], t: tensor<f32>[L]) where N % 32 == 0 {
  task strided[i in 0 .. N / 32] {
    store(y[i * 32 .. +32], load(x[2 * arange<i32>[32] + i * 64]));
  }
  task column[j in 0 .. 32] {
    store(c[j, 0 .. +32], load(m[0 .. +32, j]));
  }
  task tail[i in 0 .. cdiv(L, 32)] {
    store(t[i * 32 .. +32], load(t[i * 32 .. +32]) + 1.0);
  }
}
)";
  const int64_t N = 64, L = 40;
  Aligned x(2 * N), m(32 * 32), y(N), c(32 * 32), t(L);
  std::string out = path_of("prof_patterns");
  std::string err = compile_and_run(src, "prof_patterns", {{"N", N}, {"L", L}},
                                    {{"x", x.p, ETL_F32, {2 * N}},
                                     {"m", m.p, ETL_F32, {32, 32}},
                                     {"y", y.p, ETL_F32, {N}},
                                     {"c", c.p, ETL_F32, {32, 32}},
                                     {"t", t.p, ETL_F32, {L}}},
                                    RunOptions{false, out, ""});
  REQUIRE_MESSAGE(err.empty(), err);
  llvm::json::Value doc = read_json(out);
  const llvm::json::Object *s = site(doc, "strided", "load");
  REQUIRE(s);
  CHECK(s->getNumber("sectors_per_request") == 8.0);
  CHECK(s->getNumber("efficiency") == 0.5);
  const llvm::json::Object *col = site(doc, "column", "load");
  REQUIRE(col);
  CHECK(col->getInteger("requests") == 32);
  CHECK(col->getNumber("sectors_per_request") == 32.0);
  CHECK(col->getNumber("efficiency") == 0.125);
  const llvm::json::Object *row = site(doc, "column", "store");
  REQUIRE(row);
  CHECK(row->getNumber("sectors_per_request") == 4.0);
  // L = 40: the second task's load has 8 live lanes (one sector).
  const llvm::json::Object *tail = site(doc, "tail", "load");
  REQUIRE(tail);
  CHECK(tail->getInteger("requests") == 2);
  CHECK(tail->getInteger("bytes_requested") == L * 4);
  CHECK(tail->getNumber("sectors_per_request") == 2.5);
  CHECK(tail->getNumber("lane_utilization") == doctest::Approx(40.0 / 64.0));
}

TEST_CASE("profile: tasks, barriers, atomics and fences of a split-K join") {
  const char *src = R"(
kernel k<M: dim, N: dim>(x: tensor<f32>[M, N], y: tensor<f32>[M]) where M % 32 == 0, N % 32 == 0 {
  buffer part: tensor<f32>[N / 32, M];
  event E[M / 32];
  task partial[i in 0 .. M / 32, j in 0 .. N / 32] notifies E[i] {
    store(part[j, i * 32 .. +32], sum(load(x[i * 32 .. +32, j * 32 .. +32]), axis = 1));
  }
  task final[i in 0 .. M / 32] waits E[i] {
    var acc = zeros<f32>[32];
    for j in 0 .. N / 32 {
      acc += load(part[j, i * 32 .. +32]);
    }
    store(y[i * 32 .. +32], acc);
  }
}
)";
  const int64_t M = 64, N = 96;
  Aligned x(M * N), y(M);
  std::string out = path_of("prof_sync");
  std::string err = compile_and_run(src, "prof_sync", {{"M", M}, {"N", N}},
                                    {{"x", x.p, ETL_F32, {M, N}}, {"y", y.p, ETL_F32, {M}}},
                                    RunOptions{false, out, ""});
  REQUIRE_MESSAGE(err.empty(), err);
  llvm::json::Value doc = read_json(out);
  for (const llvm::json::Value &g : *doc.getAsObject()->getArray("groups")) {
    const llvm::json::Object &go = *g.getAsObject();
    const llvm::json::Object &sync = *go.getObject("sync");
    if (go.getString("name") == "partial") {
      CHECK(sync.getInteger("tasks") == (M / 32) * (N / 32));
      // one notify per task: a fence and a release atomic by thread 0
      CHECK(sync.getInteger("fences") == (M / 32) * (N / 32));
      CHECK(sync.getInteger("atomics") == (M / 32) * (N / 32));
      CHECK(*sync.getInteger("barriers") >= (M / 32) * (N / 32));
      // the row sums reduce across lanes (tile IR layout, 128 threads, vec=4
      // from `where N % 32 == 0`): a row's 32 columns lie in 4 registers x 8
      // lanes, so 3 butterflies per row; each thread holds 2 rows, so each of
      // the 4 warps shuffles 2 x 3 times per task
      CHECK(sync.getInteger("shuffles") == 4 * 2 * 3 * (M / 32) * (N / 32));
    } else if (go.getString("name") == "final") {
      CHECK(sync.getInteger("tasks") == M / 32);
      CHECK(*sync.getInteger("atomics") >= M / 32); // at least one acquire load per wait
      CHECK(sync.getInteger("shuffles") == 0);      // no reduction
    }
  }
}

TEST_CASE("profile: shared memory, a transposed tile's 4-way bank conflicts and a broadcast") {
  // The transposed tile (32 threads: each holds 4 consecutive rows of one
  // column of y; per register a warp's lanes cover 8 rows 4 apart and 4
  // consecutive columns) goes to y's rows through scratch (tile/assign.cpp,
  // fewer_stores): the 8 rows are 4 lines apart, so the 16-byte chunk
  // swizzle by line mod 8 puts them at 2 positions: 8 banks, 4 wavefronts
  // per write; the rows are read back as 16-byte vectors, conflict-free.
  // The [128, 1]
  // operand broadcast along the rows is read by
  // the 8 lanes of a warp that share a row at one word: one wavefront (its
  // rows change warps, so it goes through scratch; a [32] one every warp
  // loads whole would be loaded in the broadcast layout or shuffled there).
  const char *src = R"(
kernel k<N: dim>(x: tensor<f32>[32, 32], v: tensor<f32>[128], y: tensor<f32>[32, 32],
                 w: tensor<f32>[128, 32], z: tensor<f32>[128, 32]) {
  task flip[u in 0 .. 1] {
    store(y[0 .. +32, 0 .. +32], transpose(load(x[0 .. +32, 0 .. +32])));
  }
  task rows[u in 0 .. 1] {
    store(z[0 .. +128, 0 .. +32], expand(load(v[0 .. +128]), axis = 1) + load(w[0 .. +128, 0 .. +32]));
  }
}
)";
  Aligned x(32 * 32), v(128), y(32 * 32), w(128 * 32), z(128 * 32);
  std::string out = path_of("prof_shared");
  std::string err = compile_and_run(src, "prof_shared", {{"N", 1}},
                                    {{"x", x.p, ETL_F32, {32, 32}},
                                     {"v", v.p, ETL_F32, {128}},
                                     {"y", y.p, ETL_F32, {32, 32}},
                                     {"w", w.p, ETL_F32, {128, 32}},
                                     {"z", z.p, ETL_F32, {128, 32}}},
                                    RunOptions{false, out, ""});
  REQUIRE_MESSAGE(err.empty(), err);
  llvm::json::Value doc = read_json(out);
  auto shared_sites = [&](const char *group) {
    std::vector<std::pair<std::string, double>> r; // kind, bank conflict factor
    for (const llvm::json::Value &g : *doc.getAsObject()->getArray("groups")) {
      if (g.getAsObject()->getString("name") != group)
        continue;
      for (const llvm::json::Value &site : *g.getAsObject()->getArray("sites"))
        if (site.getAsObject()->getString("space") == "shared")
          r.emplace_back(
              site.getAsObject()->getString("kind")->str(),
              *site.getAsObject()->getObject("shared")->getNumber("bank_conflict_factor"));
    }
    return r;
  };
  auto flip = shared_sites("flip");
  REQUIRE(!flip.empty());
  for (auto &[kind, factor] : flip)
    CHECK(factor == (kind == "load" ? 1.0 : 4.0));
  auto rows = shared_sites("rows");
  REQUIRE(!rows.empty());
  for (auto &[kind, factor] : rows)
    CHECK(factor == 1.0);
  const llvm::json::Object &shared = *doc.getAsObject()->getObject("shared");
  CHECK(*shared.getInteger("wavefronts") > *shared.getInteger("requests"));
}

TEST_CASE("profile: counter tracks in the timeline's Chrome trace") {
  const char *src = R"(
kernel k<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N]) where N % 32 == 0 {
  task copy[i in 0 .. N / 32] {
    store(y[i * 32 .. +32], load(x[i * 32 .. +32]));
  }
}
)";
  const int64_t N = 256;
  Aligned x(N), y(N);
  std::string prof = path_of("prof_trace"), trace = path_of("prof_trace_timeline");
  std::string err = compile_and_run(src, "prof_trace", {{"N", N}},
                                    {{"x", x.p, ETL_F32, {N}}, {"y", y.p, ETL_F32, {N}}},
                                    RunOptions{false, prof, trace});
  REQUIRE_MESSAGE(err.empty(), err);
  llvm::json::Value doc = read_json(trace);
  int tasks = 0, counters = 0;
  uint64_t last_requests = 0;
  for (const llvm::json::Value &ev : *doc.getAsObject()->getArray("traceEvents")) {
    const llvm::json::Object &o = *ev.getAsObject();
    if (o.getString("ph") == "X")
      ++tasks;
    if (o.getString("ph") == "C") {
      ++counters;
      CHECK(o.getString("name")->starts_with("profile cta "));
      last_requests =
          std::max<uint64_t>(last_requests, *o.getObject("args")->getInteger("global requests"));
    }
  }
  CHECK(tasks == N / 32);
  CHECK(counters == N / 32); // one sample per finished task
  CHECK(last_requests >= 2); // a CTA's running total after its tasks' load and store
}

TEST_CASE("profile: a tensor-core K loop's ragged staging (rows past the tensor) costs no bank "
          "conflicts: each edge chunk is one 16-byte store, as its cp.async") {
  // a has B = 3 real rows of the 16 the mma tile needs (decode_layer's o_part
  // at batch 1): every other chunk of a's stages is read element by element
  // (0 outside). Those chunks were eight 2-byte stores each (bank factor
  // 1.4 to 1.6 in decode_layer); now they are one st.shared of 16 bytes at
  // the chunk's swizzled place, so every staging store is conflict-free.
  const char *src = R"(
kernel k<B: dim>(a: tensor<bf16>[B, 128], w: tensor<bf16>[128, 64], y: tensor<f32>[B, 64]) {
  task t[u in 0 .. 1] {
    var acc = zeros<f32>[16, 64];
    for k in 0 .. 128 / 32 {
      acc += dot(load(a[0 .. +16, k * 32 .. +32]), load(w[k * 32 .. +32, 0 .. +64]));
    }
    store(y[0 .. +16, 0 .. +64], acc);
  }
}
)";
  const int64_t B = 3;
  std::vector<uint16_t> a(size_t(B * 128)), w(128 * 64);
  std::vector<float> y(size_t(B * 64));
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = testing::bf16_bits(float(int(i % 7) - 3));
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = testing::bf16_bits(float(int(i % 5) - 2));
  std::string prof = path_of("prof_mma_edge");
  RunOptions run{false, prof, ""};
  run.threads_per_cta = 128;
  std::string err = compile_and_run(src, "prof_mma_edge", {{"B", B}},
                                    {{"a", a.data(), ETL_BF16, {B, 128}},
                                     {"w", w.data(), ETL_BF16, {128, 64}},
                                     {"y", y.data(), ETL_F32, {B, 64}}},
                                    run);
  REQUIRE_MESSAGE(err.empty(), err);
  for (int64_t r = 0; r < B; ++r) // small integers: exact sums
    for (int64_t c = 0; c < 64; ++c) {
      float want = 0;
      for (int64_t k = 0; k < 128; ++k)
        want += testing::bf16_value(a[size_t(r * 128 + k)]) *
                testing::bf16_value(w[size_t(k * 64 + c)]);
      REQUIRE(y[size_t(r * 64 + c)] == want);
    }
  llvm::json::Value doc = read_json(prof);
  int stores = 0;
  for (const llvm::json::Value &g : *doc.getAsObject()->getArray("groups"))
    for (const llvm::json::Value &site : *g.getAsObject()->getArray("sites")) {
      const llvm::json::Object &o = *site.getAsObject();
      if (o.getString("space") != "shared" || o.getString("kind") != "store")
        continue;
      ++stores;
      CAPTURE(o.getInteger("line"));
      CHECK(*o.getObject("shared")->getNumber("bank_conflict_factor") == 1.0);
    }
  CHECK(stores > 0);
  const llvm::json::Object &shared = *doc.getAsObject()->getObject("shared");
  CHECK(*shared.getNumber("bank_conflict_factor") == 1.0);
}

} // namespace etl
