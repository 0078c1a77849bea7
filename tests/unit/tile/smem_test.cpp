// Tests of the shared-memory allocator (tile/smem.cpp, tile/passes.h):
// pack_buffers on synthetic live ranges (buffers live together never share
// a byte, disjoint ones do, offsets keep their alignment), and plan_shared
// on checked programs (the buffers staging ops get, their live ranges over
// loops, which trailing barriers go, the total against op-by-op reuse,
// the budget of the compilation's targets).
#include "driver/pipeline.h"
#include "lower/plan.h"
#include "tile/passes.h"

#include <doctest/doctest.h>

#include <random>

using namespace etl;

namespace {

SmemBuffer buf(int64_t bytes, std::vector<std::pair<int, int>> live, int64_t align = 16) {
  SmemBuffer b;
  b.bytes = bytes;
  b.align = align;
  b.live = std::move(live);
  b.pos = b.live.empty() ? 0 : b.live[0].first;
  return b;
}

bool bytes_meet(const SmemBuffer &a, const SmemBuffer &b) {
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

/// The allocator's contract on `bufs` after pack_buffers returned `total`.
void check_packing(const std::vector<SmemBuffer> &bufs, int64_t total) {
  int64_t end = 0;
  for (size_t i = 0; i < bufs.size(); ++i) {
    CHECK(bufs[i].offset >= 0);
    CHECK(bufs[i].offset % bufs[i].align == 0);
    end = std::max(end, bufs[i].offset + bufs[i].bytes);
    for (size_t j = i + 1; j < bufs.size(); ++j)
      if (live_overlap(bufs[i], bufs[j]))
        CHECK_MESSAGE(!bytes_meet(bufs[i], bufs[j]), "buffers " << i << " and " << j);
  }
  CHECK(total == end);
}

struct Tiled {
  Compilation c;
  TileModule m;
};

std::unique_ptr<Tiled> planned(const std::string &text) {
  auto t = std::make_unique<Tiled>();
  t->c.file = t->c.sm.add("t.etl", text);
  bool ok = compile_front(t->c);
  REQUIRE_MESSAGE(ok, t->c.diag.render());
  const KernelDecl &k = t->c.program->kernels[0];
  t->m = build_tile_ir(k, t->c.graph, *t->c.program, 256);
  assign_layouts(t->m, k, t->c.graph, t->c.diag);
  REQUIRE(verify_tile(t->m).empty());
  plan_shared(t->m, t->c.target);
  return t;
}

} // namespace

TEST_CASE("pack_buffers: live together never share bytes, disjoint ranges do") {
  std::vector<SmemBuffer> b = {buf(256, {{0, 0}}), buf(128, {{1, 1}}), buf(64, {{2, 2}})};
  CHECK(pack_buffers(b) == 256); // three disjoint ranges: all at 0
  for (const SmemBuffer &x : b)
    CHECK(x.offset == 0);

  b = {buf(256, {{0, 3}}), buf(128, {{3, 3}}), buf(64, {{5, 6}})};
  CHECK(live_overlap(b[0], b[1]));
  CHECK(!live_overlap(b[0], b[2]));
  int64_t total = pack_buffers(b);
  CHECK(b[0].offset == 0);
  CHECK(b[1].offset == 256);
  CHECK(b[2].offset == 0); // after both: reuses byte 0
  CHECK(total == 384);
  check_packing(b, total);

  // Segments: a range that wraps a loop ([4..6] and [1..2]) misses 3.
  b = {buf(100, {{1, 2}, {4, 6}}), buf(100, {{3, 3}}), buf(32, {{2, 2}}, 128)};
  total = pack_buffers(b);
  CHECK(b[0].offset == 0);
  CHECK(b[1].offset == 0);
  CHECK(b[2].offset == 128); // after b0's 100 bytes, at the next 128
  check_packing(b, total);
}

TEST_CASE("pack_buffers on random ranges: the contract holds") {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<SmemBuffer> b;
    int n = 1 + int(rng() % 12);
    for (int i = 0; i < n; ++i) {
      std::vector<std::pair<int, int>> live;
      int segs = 1 + int(rng() % 3);
      for (int s = 0; s < segs; ++s) {
        int lo = int(rng() % 40);
        live.push_back({lo, lo + int(rng() % 6)});
      }
      b.push_back(buf(4 * (1 + int64_t(rng() % 300)), live, rng() % 2 ? 128 : 16));
    }
    int64_t total = pack_buffers(b);
    check_packing(b, total);
    // Never more than every buffer side by side.
    int64_t sum = 0;
    for (const SmemBuffer &x : b)
      sum += x.bytes + x.align;
    CHECK(total <= sum);
  }
}

namespace {
// Two cross-warp reductions per loop iteration (4 rows of 512 on 8 warps:
// one warp bit lies along the reduced axis), then two re-layouts for the
// stores.
const char *kTwoReduces = "const T = 4;\nconst C = 512;\n"
                          "kernel k<N: dim>(x: tensor<f32>[N, C], y: tensor<f32>[N], "
                          "z: tensor<f32>[N]) {\n"
                          "  task t[i in 0 .. cdiv(N, T)] {\n"
                          "    var s = zeros<f32>[T];\n"
                          "    var m = zeros<f32>[T];\n"
                          "    for j in 0 .. 4 {\n"
                          "      let a = load(x[i * T .. +T, 0 .. +C]);\n"
                          "      s += sum(a, axis = 1);\n"
                          "      m = max(m, max(a, axis = 1));\n"
                          "    }\n"
                          "    store(y[i * T .. +T], s);\n"
                          "    store(z[i * T .. +T], m);\n"
                          "  }\n"
                          "}\n";
} // namespace

TEST_CASE("plan_shared: ranges over a loop, which barriers go, total within op by op") {
  auto t = planned(kTwoReduces);
  const TileFunc &f = t->m.funcs.at(0);
  REQUIRE(f.smem_planned);
  REQUIRE(f.smem.size() == 4);
  const SmemBuffer &sum = f.smem[0], &mx = f.smem[1], &cy = f.smem[2], &cz = f.smem[3];
  CHECK(sum.bytes == 4 * 2 * 4); // 4 rows x 2 warps along the axis x f32
  CHECK(mx.bytes == 32);
  CHECK(cy.bytes == 128); // a re-layout: a whole 128-byte line
  CHECK(cy.align == 128);
  // The sum's barrier goes: its range runs to the max's writes, which take
  // other bytes. The max's would run around the loop into the sum and out
  // into the first re-layout: no room within 128 bytes, it stays; so does
  // the first re-layout's (the second's bytes would be needed). The last
  // op's range ends at the task end: its barrier goes.
  CHECK(!sum.barrier_after);
  CHECK(mx.barrier_after);
  CHECK(cy.barrier_after);
  CHECK(!cz.barrier_after);
  CHECK(live_overlap(sum, mx));
  CHECK(!bytes_meet(sum, mx));
  CHECK(!live_overlap(mx, cy));
  CHECK(f.smem_bytes == 128);
  CHECK(f.smem_op_by_op == 128);
  std::string text = print_tile(t->m);
  CHECK(text.find("// shared memory: 4 buffers, 128 bytes (op by op: 128), trailing barriers "
                  "kept: 2 of 4") != std::string::npos);
  CHECK(text.find("reduce sum %6, axis=1 : tile<4xf32, #L0> {smem=#S0}") != std::string::npos);
}

TEST_CASE("plan_shared: a lone staging op in a loop keeps its barrier") {
  auto t = planned("kernel k<N: dim>(x: tensor<f32>[N, 512], y: tensor<f32>[N]) {\n"
                   "  task t[i in 0 .. cdiv(N, 4)] {\n"
                   "    var s = zeros<f32>[4];\n"
                   "    for j in 0 .. 4 { s += sum(load(x[i * 4 .. +4, 0 .. +512]), axis = 1); }\n"
                   "    store(y[i * 4 .. +4], s);\n"
                   "  }\n"
                   "}\n");
  const TileFunc &f = t->m.funcs.at(0);
  REQUIRE(f.smem.size() >= 1);
  // Its next iteration writes the same bytes before any other barrier.
  CHECK(f.smem[0].barrier_after);
  CHECK(f.smem_bytes <= f.smem_op_by_op);
}

TEST_CASE("plan_shared: a body whose scratch passes the targets' budget is reported") {
  auto t = planned(kTwoReduces);
  TileFunc &f = t->m.funcs.at(0);
  // Planned for every target (the test Compilation's): 99 KiB less the
  // header is the budget, and 128 bytes fit it.
  CHECK(f.smem_budget == int64_t(99 * 1024 - kSmemHeaderBytes));
  CHECK_FALSE(smem_over_budget(f));
  CHECK(print_tile(t->m).find("over the budget") == std::string::npos);
  const KernelDecl &k = t->c.program->kernels[0];
  CHECK(tile_lowering_gap(f, k, k.tasks.at(0), 256).empty());
  // Targets that allow exactly the 128 bytes of scratch, then one byte less.
  TargetInfo tight = t->c.target;
  tight.smem_budget = kSmemHeaderBytes + 128;
  plan_shared(t->m, tight);
  CHECK(f.smem_bytes == 128);
  CHECK_FALSE(smem_over_budget(f));
  tight.smem_budget -= 1;
  plan_shared(t->m, tight);
  CHECK(f.smem_bytes == 128); // the plan is the same; only the report changes
  CHECK(smem_over_budget(f));
  CHECK(print_tile(t->m).find("// shared memory over the budget: 128 bytes of scratch, the "
                              "targets allow 127 (a resource-limit error)") !=
        std::string::npos);
}
