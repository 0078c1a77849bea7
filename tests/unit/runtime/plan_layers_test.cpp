// The static queue of a layered block (plan_queue.c): a block's static
// tasks are dealt layer by layer (by their first domain variable, then the
// block's groups in order), round-robin over the CTAs continuing across
// groups; the artifact reader refuses blocks that cannot be dealt so.
#include <doctest/doctest.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "runtime_harness.h"

namespace {

// Groups with constant domains and no events, in the metadata's order.
struct Groups {
  std::deque<std::vector<int64_t>> code;
  std::deque<std::vector<etl_expr>> exprs;
  std::deque<std::string> names;
  std::vector<etl_group_meta> groups;
  std::vector<uint32_t> order;
  etl_meta meta{};

  etl_expr c(int64_t v) {
    code.push_back({ETL_XOP_CONST, v});
    return etl_expr{2, code.back().data()};
  }
  void add(const char *name, std::vector<std::pair<int64_t, int64_t>> domain, uint32_t block,
           uint32_t schedule = ETL_SCHEDULE_STATIC) {
    etl_group_meta g{};
    names.push_back(name);
    g.name = names.back().data();
    g.rank = uint32_t(domain.size());
    exprs.emplace_back();
    for (auto &d : domain)
      exprs.back().push_back(c(d.first));
    g.lo = exprs.back().data();
    exprs.emplace_back();
    for (auto &d : domain)
      exprs.back().push_back(c(d.second));
    g.hi = exprs.back().data();
    g.schedule = schedule;
    g.data_var = ETL_NO_DATA_VAR;
    g.layer_block = block;
    order.push_back(uint32_t(groups.size()));
    groups.push_back(g);
  }
  const etl_meta *build() {
    meta.kernel_name = names.emplace_back("k").data();
    meta.n_groups = meta.n_order = uint32_t(groups.size());
    meta.groups = groups.data();
    meta.order = order.data();
    return &meta;
  }
};

// The plan's static tasks in the order they were dealt ("name/linear"):
// entry t went to CTA t % ctas, as its (t / ctas)-th entry.
std::vector<std::string> dealt(const etl_meta *m, uint32_t ctas) {
  etl_plan *p = nullptr;
  REQUIRE(etl_plan_build(m, nullptr, ctas, &p) == ETL_SUCCESS);
  std::unique_ptr<etl_plan, void (*)(etl_plan *)> own(p, etl_plan_free_host);
  std::vector<std::string> out;
  for (uint64_t t = 0; t < p->n_static; ++t) {
    uint64_t at = p->queue_offs[t % ctas] + t / ctas;
    out.push_back(std::string(m->groups[p->queue[2 * at]].name) + "/" +
                  std::to_string(p->queue[2 * at + 1]));
  }
  return out;
}

} // namespace

TEST_CASE("plan: a layered block's static tasks are dealt layer by layer") {
  Groups g;
  g.add("pre", {{0, 3}}, ETL_NO_LAYER_BLOCK);
  g.add("a", {{0, 3}, {0, 2}}, 1);                    // layers 0, 1, 2; two tasks each
  g.add("d", {{0, 3}}, 1, ETL_SCHEDULE_DYNAMIC);      // dynamic: not in the static queue
  g.add("b", {{1, 4}}, 1);                            // layers 1, 2, 3
  g.add("e", {{5, 5}, {0, 2}}, 1);                    // empty
  g.add("c", {{6, 8}, {0, 1}, {0, 2}}, 1);            // layers 6, 7 (after a gap)
  g.add("post", {{0, 2}}, ETL_NO_LAYER_BLOCK);
  g.add("z", {{0, 2}}, 2);                            // a block of one group: linear order
  const etl_meta *m = g.build();
  const std::vector<std::string> want = {
      "pre/0", "pre/1", "pre/2",         //
      "a/0",   "a/1",                    // layer 0
      "a/2",   "a/3",   "b/0",           // layer 1
      "a/4",   "a/5",   "b/1",           // layer 2
      "b/2",                             // layer 3
      "c/0",   "c/1",                    // layer 6
      "c/2",   "c/3",                    // layer 7
      "post/0", "post/1", "z/0", "z/1"};
  for (uint32_t ctas : {1u, 3u, 7u, 64u}) {
    CAPTURE(ctas);
    CHECK(dealt(m, ctas) == want);
  }
}

TEST_CASE("plan: without blocks the static queue is every group in order, linear") {
  Groups g;
  g.add("a", {{0, 3}, {0, 2}}, ETL_NO_LAYER_BLOCK);
  g.add("b", {{1, 4}}, ETL_NO_LAYER_BLOCK);
  CHECK(dealt(g.build(), 2) ==
        std::vector<std::string>{"a/0", "a/1", "a/2", "a/3", "a/4", "a/5", "b/0", "b/1", "b/2"});
}

TEST_CASE("artifact reader: layered blocks must be consecutive in the order, with a layer") {
  using etl_test::artifact;
  using etl_test::test_meta;
  etl_artifact art;
  // groups consume, produce, total; order produce, consume, total
  std::string ok = artifact(test_meta(0, -1, 15, {1, 1, ETL_NO_LAYER_BLOCK}), {});
  REQUIRE(etl_artifact_parse(ok.data(), ok.size(), &art) == ETL_SUCCESS);
  CHECK(art.meta.groups[0].layer_block == 1);
  CHECK(art.meta.groups[2].layer_block == ETL_NO_LAYER_BLOCK);
  etl_artifact_free(&art);

  std::string split = artifact(test_meta(0, -1, 15, {ETL_NO_LAYER_BLOCK, 1, 1}), {});
  CHECK(etl_artifact_parse(split.data(), split.size(), &art) == ETL_ERROR_INVALID_ARTIFACT);
  CHECK(std::string(etlGetLastErrorMessage()).find("not consecutive in the group order") !=
        std::string::npos);

  std::string far = artifact(test_meta(0, -1, 15, {9, ETL_NO_LAYER_BLOCK, ETL_NO_LAYER_BLOCK}), {});
  CHECK(etl_artifact_parse(far.data(), far.size(), &art) == ETL_ERROR_INVALID_ARTIFACT);
  CHECK(std::string(etlGetLastErrorMessage()).find("layered block out of range") !=
        std::string::npos);
}
