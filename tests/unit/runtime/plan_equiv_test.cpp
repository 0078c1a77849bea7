// etl_plan_build's fast counting (ETL_PLAN_FAST, plan.c "Fast counting")
// against the enumeration it replaced (ETL_PLAN_ENUMERATE): for the shipped
// artifacts (the runtime tests' programs, the GPU probes and the examples)
// at many bindings, and for random synthetic metadata (star, data and
// out-of-range indices, empty dimensions and domains, dynamic groups,
// data-dependent ranges), the two plans are byte for byte the same, or both
// builds fail with the same status and message.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../skip.h"
#include "internal.h"

namespace {

// Builds the plan both ways; compares everything the build fills in.
void check_same(const etl_meta *m, const std::vector<int64_t> &dims, uint32_t ctas,
                const std::string &what) {
  CAPTURE(what);
  etl_plan *slow = nullptr, *fast = nullptr;
  etlStatus ss = etl_plan_build_mode(m, dims.data(), ctas, ETL_PLAN_ENUMERATE, &slow);
  std::string slow_msg = ss ? etlGetLastErrorMessage() : "";
  etlStatus fs = etl_plan_build_mode(m, dims.data(), ctas, ETL_PLAN_FAST, &fast);
  std::string fast_msg = fs ? etlGetLastErrorMessage() : "";
  std::unique_ptr<etl_plan, void (*)(etl_plan *)> a(slow, etl_plan_free_host),
      b(fast, etl_plan_free_host);
  REQUIRE(ss == fs);
  CHECK(slow_msg == fast_msg);
  if (ss)
    return;
  REQUIRE(slow->n_counters == fast->n_counters);
  REQUIRE(slow->n_entries == fast->n_entries);
  REQUIRE(slow->dyn_words == fast->dyn_words);
  CHECK(slow->n_static == fast->n_static);
  CHECK(slow->n_dynamic == fast->n_dynamic);
  CHECK(std::memcmp(slow->wait_counts, fast->wait_counts,
                    (slow->n_counters + 1) * sizeof(uint32_t)) == 0);
  CHECK(std::memcmp(slow->queue, fast->queue, (2 * slow->n_entries + 2) * sizeof(uint32_t)) == 0);
  CHECK(std::memcmp(slow->queue_offs, fast->queue_offs, (ctas + 1) * sizeof(uint32_t)) == 0);
  CHECK((slow->dyn == nullptr) == (fast->dyn == nullptr));
  if (slow->dyn && fast->dyn)
    CHECK(std::memcmp(slow->dyn, fast->dyn, slow->dyn_words * sizeof(uint32_t)) == 0);
  size_t ne = m->n_events;
  CHECK(std::memcmp(slow->event_offset, fast->event_offset, ne * sizeof(uint64_t)) == 0);
}

std::vector<std::filesystem::path> shipped_artifacts() {
  std::vector<std::filesystem::path> out;
  std::string base = ETL_TEST_BINARY_DIR;
  for (std::string dir :
       {base + "/artifacts", base + "/artifacts/gpu_probes", base + "/../examples"}) {
    std::error_code ec;
    for (const auto &e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".etlb")
        out.push_back(e.path());
  }
  return out;
}

} // namespace

TEST_CASE("plan: fast counting equals the enumeration on the shipped artifacts") {
  auto paths = shipped_artifacts();
  if (paths.empty()) { // artifacts.h's rule: a failure where an etlc builds them
    if (ETL_TEST_HAVE_ETLC)
      FAIL("no .etlb under " ETL_TEST_BINARY_DIR ", though this configuration has an etlc");
    ETL_TEST_SKIP("no .etlb under " ETL_TEST_BINARY_DIR " (no etlc in this configuration)");
    return;
  }
  bool stars = false;
  std::mt19937 rng(7);
  for (const auto &path : paths) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string bytes = ss.str();
    etl_artifact art;
    REQUIRE_MESSAGE(etl_artifact_parse(bytes.data(), bytes.size(), &art) == ETL_SUCCESS,
                    path.string() << ": " << etlGetLastErrorMessage());
    const etl_meta *m = &art.meta;
    stars |= path.stem() == "plan_stars";
    std::vector<std::vector<int64_t>> bindings;
    for (int64_t v : {0, 1, 2, 3, 5, 8, 16, 33})
      bindings.emplace_back(m->n_dims, v);
    for (int r = 0; r < 8; ++r) {
      std::vector<int64_t> d(m->n_dims);
      for (auto &x : d)
        x = std::uniform_int_distribution<int64_t>(1, 40)(rng);
      bindings.push_back(d);
    }
    for (const auto &d : bindings)
      for (uint32_t ctas : {1u, 3u, 132u}) {
        std::string what = path.filename().string() + " dims";
        for (int64_t x : d)
          what += " " + std::to_string(x);
        check_same(m, d, ctas, what + " ctas " + std::to_string(ctas));
      }
    etl_artifact_free(&art);
  }
  CHECK_MESSAGE(stars, "plan_stars.etlb (tests/unit/runtime/programs) was not among them");
}

namespace {

// Random metadata built in memory (what artifact.c would decode), owning its
// expressions and tables.
struct Synth {
  std::deque<std::vector<int64_t>> code;
  std::deque<std::vector<etl_expr>> exprs;
  std::deque<std::vector<etl_index_meta>> idx;
  std::deque<std::vector<etl_edge_meta>> edges;
  std::deque<std::string> names;
  std::vector<etl_dim_meta> dims;
  std::vector<etl_event_meta> events;
  std::vector<etl_group_meta> groups;
  std::vector<uint32_t> order;
  etl_meta meta{};
  std::mt19937 &rng;

  explicit Synth(std::mt19937 &r) : rng(r) {}
  int64_t pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }
  char *name(std::string s) {
    names.push_back(std::move(s));
    return names.back().data();
  }
  etl_expr expr(std::vector<int64_t> c) {
    code.push_back(std::move(c));
    return etl_expr{(uint32_t)code.back().size(), code.back().data()};
  }
  // An extent: a constant, a dim, or a dim plus one.
  etl_expr extent(uint32_t n_dims) {
    int64_t r = pick(0, 9);
    if (r < 5)
      return expr({ETL_XOP_CONST, pick(0, 5)});
    int64_t d = pick(0, n_dims - 1);
    if (r < 8)
      return expr({ETL_XOP_DIM, d});
    return expr({ETL_XOP_DIM, d, ETL_XOP_CONST, 1, ETL_XOP_ADD});
  }
  // An index of a group of `rank` variables: mostly in range, sometimes
  // not (an error both ways), sometimes a division by a zero dim.
  etl_expr index(uint32_t rank, uint32_t n_dims) {
    int64_t v = pick(0, rank - 1), w = pick(0, rank - 1);
    switch (pick(0, 7)) {
    case 0:
      return expr({ETL_XOP_VAR, v});
    case 1:
      return expr({ETL_XOP_VAR, v, ETL_XOP_CONST, pick(1, 4), ETL_XOP_MOD});
    case 2:
      return expr(
          {ETL_XOP_VAR, v, ETL_XOP_VAR, w, ETL_XOP_ADD, ETL_XOP_CONST, pick(1, 5), ETL_XOP_MOD});
    case 3:
      return expr({ETL_XOP_CONST, pick(0, 2)});
    case 4:
      return expr({ETL_XOP_VAR, v, ETL_XOP_CONST, 2, ETL_XOP_FLOORDIV});
    case 5:
      return expr({ETL_XOP_VAR, v, ETL_XOP_DIM, pick(0, n_dims - 1), ETL_XOP_MOD});
    case 6:
      return expr({ETL_XOP_VAR, v, ETL_XOP_CONST, pick(0, 2), ETL_XOP_ADD});
    default:
      return expr({ETL_XOP_VAR, v, ETL_XOP_CONST, 3, ETL_XOP_MUL, ETL_XOP_VAR, w, ETL_XOP_ADD,
                   ETL_XOP_CONST, pick(1, 6), ETL_XOP_MOD});
    }
  }
  etl_edge_meta *edge_list(uint32_t n, uint32_t rank, uint32_t n_dims, bool notify) {
    edges.emplace_back(n);
    for (auto &e : edges.back()) {
      e.event = (uint32_t)pick(0, (int64_t)events.size() - 1);
      e.n = events[e.event].rank;
      idx.emplace_back(e.n);
      for (auto &ix : idx.back()) {
        int64_t r = pick(0, 99);
        ix.star = r < 30                   ? ETL_INDEX_STAR
                  : r < (notify ? 34 : 32) ? ETL_INDEX_DATA
                                           : ETL_INDEX_EXPR;
        if (ix.star == ETL_INDEX_EXPR)
          ix.idx = index(rank, n_dims);
      }
      e.idx = idx.back().data();
    }
    return edges.back().data();
  }
  const etl_meta *build() {
    uint32_t n_dims = (uint32_t)pick(1, 3);
    for (uint32_t d = 0; d < n_dims; ++d)
      dims.push_back(etl_dim_meta{name("D" + std::to_string(d)), d});
    uint32_t n_events = (uint32_t)pick(1, 4);
    for (uint32_t e = 0; e < n_events; ++e) {
      uint32_t rank = (uint32_t)pick(1, 3);
      exprs.emplace_back();
      for (uint32_t k = 0; k < rank; ++k)
        exprs.back().push_back(extent(n_dims));
      events.push_back(etl_event_meta{name("E" + std::to_string(e)), rank, e, exprs.back().data()});
    }
    uint32_t n_groups = (uint32_t)pick(1, 4);
    for (uint32_t g = 0; g < n_groups; ++g) {
      etl_group_meta gm{};
      gm.name = name("g" + std::to_string(g));
      gm.rank = (uint32_t)pick(1, 3);
      exprs.emplace_back();
      for (uint32_t k = 0; k < gm.rank; ++k)
        exprs.back().push_back(expr({ETL_XOP_CONST, pick(0, 1)}));
      gm.lo = exprs.back().data();
      exprs.emplace_back();
      for (uint32_t k = 0; k < gm.rank; ++k)
        exprs.back().push_back(extent(n_dims));
      gm.hi = exprs.back().data();
      gm.n_notifies = (uint32_t)pick(0, 3);
      gm.n_waits = (uint32_t)pick(0, 3);
      gm.notifies = edge_list(gm.n_notifies, gm.rank, n_dims, true);
      gm.waits = edge_list(gm.n_waits, gm.rank, n_dims, false);
      gm.schedule = pick(0, 9) < 4 ? ETL_SCHEDULE_DYNAMIC : ETL_SCHEDULE_STATIC;
      gm.data_var = pick(0, 9) < 2 ? (uint32_t)pick(0, gm.rank - 1) : ETL_NO_DATA_VAR;
      groups.push_back(gm);
      order.push_back(g);
    }
    std::shuffle(order.begin(), order.end(), rng);
    meta.kernel_name = name("synth");
    meta.n_dims = n_dims;
    meta.dims = dims.data();
    meta.n_events = n_events;
    meta.events = events.data();
    meta.n_groups = n_groups;
    meta.groups = groups.data();
    meta.n_order = n_groups;
    meta.order = order.data();
    return &meta;
  }
};

} // namespace

TEST_CASE("plan: fast counting equals the enumeration on random metadata") {
  std::mt19937 rng(20261126);
  int built = 0, failed = 0, dynamic = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Synth s(rng);
    const etl_meta *m = s.build();
    std::vector<int64_t> dims(m->n_dims);
    for (auto &d : dims)
      d = s.pick(0, 6);
    etl_plan *p = nullptr;
    if (etl_plan_build_mode(m, dims.data(), 2, ETL_PLAN_ENUMERATE, &p) == ETL_SUCCESS) {
      built += 1;
      dynamic += p->dyn != nullptr;
      etl_plan_free_host(p);
    } else {
      failed += 1;
    }
    check_same(m, dims, (uint32_t)s.pick(1, 5), "random metadata " + std::to_string(iter));
  }
  // both outcomes, and dynamic groups, are exercised
  CHECK(built > 500);
  CHECK(failed > 100);
  CHECK(dynamic > 200);
}
