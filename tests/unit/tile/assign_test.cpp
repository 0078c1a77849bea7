// Tests of the tile stage on checked programs: build, memory facts, the
// layout pass and the verifier (tile/passes.h). Vector widths follow the
// `where` facts, the NarrowAccess remark names the missing fact, reductions
// take the slice of their operand's layout, conversions appear only where
// uses disagree, and every example verifies.
#include "driver/pipeline.h"
#include "tile/passes.h"

#include <doctest/doctest.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace etl;

namespace {

struct Tiled {
  Compilation c;
  TileModule m;
  std::string diags;
};

std::unique_ptr<Tiled> tile_of(const std::string &text, bool assign = true) {
  auto t = std::make_unique<Tiled>();
  t->c.file = t->c.sm.add("t.etl", text);
  bool ok = compile_front(t->c);
  REQUIRE_MESSAGE(ok, t->c.diag.render());
  const KernelDecl &k = t->c.program->kernels[0];
  t->m = build_tile_ir(k, t->c.graph, *t->c.program, 128);
  std::vector<std::string> errs = verify_tile(t->m);
  CHECK_MESSAGE(errs.empty(), (errs.empty() ? "" : errs[0]));
  if (assign) {
    assign_layouts(t->m, k, t->c.graph, t->c.diag);
    errs = verify_tile(t->m);
    CHECK_MESSAGE(errs.empty(), (errs.empty() ? "" : errs[0]));
  }
  t->diags = t->c.diag.render();
  return t;
}

const TileFunc &func(const TileModule &m, const std::string &name) {
  for (const TileFunc &f : m.funcs)
    if (f.name == name)
      return f;
  FAIL("no task " << name);
  return m.funcs.at(0);
}

/// Every op of `f` (loop bodies included) of kind `k`.
std::vector<const TOp *> ops_of(const std::vector<TOp> &body, TileOpKind k) {
  std::vector<const TOp *> r;
  for (const TOp &op : body) {
    if (op.kind == k)
      r.push_back(&op);
    std::vector<const TOp *> in = ops_of(op.body, k);
    r.insert(r.end(), in.begin(), in.end());
  }
  return r;
}

const Layout &layout_of(const TileFunc &f, int v) {
  return f.layouts.at(size_t(f.values.at(size_t(v)).layout));
}

std::string rowsum(const std::string &where) {
  return "const TM = 16;\nconst TN = 128;\n"
         "kernel rowsum<M: dim, N: dim>(x: tensor<f32>[M, N], y: tensor<f32>[M])" +
         where +
         " {\n"
         "  buffer part: tensor<f32>[cdiv(N, TN), M];\n"
         "  event E[cdiv(M, TM)];\n"
         "  task partial[i in 0 .. cdiv(M, TM), j in 0 .. cdiv(N, TN)] notifies E[i] {\n"
         "    let t = load(x[i * TM .. +TM, j * TN .. +TN]);\n"
         "    store(part[j, i * TM .. +TM], sum(t, axis = 1));\n"
         "  }\n"
         "  task final[i in 0 .. cdiv(M, TM)] waits E[i] {\n"
         "    var acc = zeros<f32>[TM];\n"
         "    for j in 0 .. cdiv(N, TN) { acc += load(part[j, i * TM .. +TM]); }\n"
         "    store(y[i * TM .. +TM], acc);\n"
         "  }\n"
         "}\n";
}

} // namespace

TEST_CASE("tile IR of rowsum: ops, loop iter_args, events") {
  auto t = tile_of(rowsum(""), false);
  const TileFunc &p = func(t->m, "partial");
  REQUIRE(ops_of(p.body, TileOpKind::Load).size() == 1);
  CHECK(ops_of(p.body, TileOpKind::Reduce).size() == 1);
  CHECK(ops_of(p.body, TileOpKind::Notify).size() == 1);
  CHECK(p.body.back().kind == TileOpKind::Notify);
  const TileFunc &f = func(t->m, "final");
  CHECK(f.body.front().kind == TileOpKind::Wait);
  std::vector<const TOp *> loops = ops_of(f.body, TileOpKind::For);
  REQUIRE(loops.size() == 1);
  CHECK(loops[0]->block_args.size() == 1); // acc
  CHECK(loops[0]->body.back().kind == TileOpKind::Yield);
  std::string text = print_tile(t->m);
  CHECK(text.find("load x[range(16*i, 16), range(128*j, 128)] : tile<16x128xf32>") !=
        std::string::npos);
  CHECK(text.find("iter_args(") != std::string::npos);
}

TEST_CASE("where N % 4 == 0: 128-bit loads in the layout of TILE-IR.md, no remark") {
  auto t = tile_of(rowsum(" where N % 4 == 0"));
  const TileFunc &p = func(t->m, "partial");
  const TOp *ld = ops_of(p.body, TileOpKind::Load).at(0);
  CHECK(ld->mem.vec == 4);
  CHECK(ld->mem.vec_bits == 128);
  CHECK(ld->mem.non_coherent); // x is never written
  CHECK(layout_of(p, ld->results[0]).str() ==
        "ll<16x128 reg=[(0,1),(0,2),(4,0),(8,0)] lane=[(0,4),(0,8),(0,16),(0,32),(0,64)] "
        "warp=[(1,0),(2,0)]>");
  const TOp *red = ops_of(p.body, TileOpKind::Reduce).at(0);
  CHECK(layout_of(p, red->results[0]).str() == "ll<16 reg=[4,8] lane=[0,0,0,0,0] warp=[1,2]>");
  // The row sums (one lane per warp holds each) go to 16 lanes of one warp
  // before their store: one convert, through scratch (rows change warps).
  std::vector<const TOp *> conv = ops_of(p.body, TileOpKind::Convert);
  REQUIRE(conv.size() == 1);
  CHECK(conv[0]->path == ConvertPath::Scratch);
  CHECK(layout_of(p, conv[0]->results[0]).str() == "ll<16 reg=[] lane=[1,2,4,8,0] warp=[0,0]>");
  CHECK(t->diags.find("remark") == std::string::npos);
  // part is written by partial: its loads in final are coherent.
  const TOp *pl = ops_of(func(t->m, "final").body, TileOpKind::Load).at(0);
  CHECK_FALSE(pl->mem.non_coherent);
}

TEST_CASE("no where fact: 32-bit loads and a NarrowAccess remark naming N % 4 == 0") {
  auto t = tile_of(rowsum(""));
  const TOp *ld = ops_of(func(t->m, "partial").body, TileOpKind::Load).at(0);
  CHECK(ld->mem.vec == 1);
  CHECK(t->diags.find("remark: load of 'x' uses 32-bit accesses") != std::string::npos);
  CHECK(t->diags.find("`where N % 4 == 0` would allow 128-bit accesses") != std::string::npos);
  CHECK(t->c.diag.error_count() == 0);
}

TEST_CASE("tiles provably inside the tensor need no bounds test") {
  auto t = tile_of(rowsum(" where M % 16 == 0, N % 128 == 0"));
  const TOp *ld = ops_of(func(t->m, "partial").body, TileOpKind::Load).at(0);
  CHECK(ld->mem.in_bounds == std::vector<bool>{true, true});
  auto u = tile_of(rowsum(""));
  const TOp *lu = ops_of(func(u->m, "partial").body, TileOpKind::Load).at(0);
  CHECK(lu->mem.in_bounds == std::vector<bool>{false, false});
  CHECK_FALSE(lu->mem.index32); // M and N are unbounded
}

TEST_CASE("bounded dims: 32-bit index arithmetic") {
  auto t = tile_of(rowsum(" where M <= 4096, N <= 4096"));
  CHECK(ops_of(func(t->m, "partial").body, TileOpKind::Load).at(0)->mem.index32);
  auto big = tile_of(rowsum(" where M <= 65536, N <= 65536")); // 2^32 elements
  CHECK_FALSE(ops_of(func(big->m, "partial").body, TileOpKind::Load).at(0)->mem.index32);
}

TEST_CASE("f16 loads widen to 8 elements (128 bits) with where K % 8 == 0") {
  std::string src = "kernel g<N: dim, K: dim>(w: tensor<f16>[N, K], y: tensor<f32>[N]) WHERE {\n"
                    "  task t[i in 0 .. cdiv(N, 32), s in 0 .. cdiv(K, 128)] {\n"
                    "    store(y[i * 32 .. +32], sum(cast<f32>(load(w[i * 32 .. +32, s * 128 .. "
                    "+128])), axis = 1));\n"
                    "  }\n"
                    "}\n";
  auto with = [&](const std::string &w) {
    std::string s = src;
    s.replace(s.find("WHERE"), 5, w);
    return s;
  };
  auto t = tile_of(with("where K % 8 == 0"));
  CHECK(ops_of(func(t->m, "t").body, TileOpKind::Load).at(0)->mem.vec_bits == 128);
  auto n = tile_of(with("where K % 2 == 0"));
  CHECK(ops_of(func(n->m, "t").body, TileOpKind::Load).at(0)->mem.vec_bits == 32);
  CHECK(n->diags.find("`where K % 8 == 0` would allow 128-bit") != std::string::npos);
}

TEST_CASE("softmax: conversions only where uses disagree") {
  std::ifstream in(std::string(ETL_SOURCE_DIR) + "/examples/softmax/softmax.etl");
  std::stringstream ss;
  ss << in.rdbuf();
  auto t = tile_of(ss.str());
  const TileFunc &st = func(t->m, "stats");
  // The row statistics live in the slice of the tile's layout: the loop
  // carries them without conversion, and exp(t - expand(m)) broadcasts for
  // free. After the loop each goes to the coalesced layout of its store
  // (one request of 4 lanes instead of one single-lane request per warp).
  std::vector<const TOp *> conv = ops_of(st.body, TileOpKind::Convert);
  CHECK(conv.size() == 2);
  for (const TOp *op : ops_of(st.body, TileOpKind::For))
    CHECK(ops_of(op->body, TileOpKind::Convert).empty());
  for (const TOp *op : ops_of(st.body, TileOpKind::Store))
    CHECK(std::count(layout_of(st, op->operands[0]).lane.begin(),
                     layout_of(st, op->operands[0]).lane.end(), 0u) < 5);
  const TileFunc &nm = func(t->m, "normalize");
  // Only the two small row loads (row_max, row_sum) are re-laid out.
  CHECK(ops_of(nm.body, TileOpKind::Convert).size() == 2);
  for (const TOp *r : ops_of(st.body, TileOpKind::Reduce))
    CHECK(layout_of(st, r->results[0]) ==
          slice_layout(layout_of(st, r->operands[0]), unsigned(r->axis)));
}

TEST_CASE("gemv: x loads 128-bit into the weights' broadcast layout; sums stored by one warp") {
  std::ifstream in(std::string(ETL_SOURCE_DIR) + "/examples/gemv/gemv.etl");
  std::stringstream ss;
  ss << in.rdbuf();
  auto t = tile_of(ss.str());
  for (const char *name : {"partial16", "partial32"}) {
    CAPTURE(name);
    const TileFunc &f = func(t->m, name);
    for (const TOp *ld : ops_of(f.body, TileOpKind::Load))
      CHECK(ld->mem.vec_bits == 128); // the weights and x
    // x: straight into the layout its broadcast needs (f32: 4 per lane, as
    // loaded), or loaded 4 per lane and shuffled to the f16 weights' 8 per
    // lane; only the stored row sums go through scratch (warps -> lanes).
    int scratch = 0, shuffle = 0;
    for (const TOp *c : ops_of(f.body, TileOpKind::Convert)) {
      scratch += c->path == ConvertPath::Scratch;
      shuffle += c->path == ConvertPath::Shuffle;
    }
    CHECK(scratch == 1);
    CHECK(shuffle == (std::string(name) == "partial16" ? 1 : 0));
    const TOp *st = ops_of(f.body, TileOpKind::Store).at(0);
    CHECK(store_requests(layout_of(f, st->operands[0]), st->mem.vec) == 1);
  }
}

TEST_CASE("every example builds, takes layouts and verifies") {
  int n = 0;
  for (const fs::directory_entry &e :
       fs::recursive_directory_iterator(fs::path(ETL_SOURCE_DIR) / "examples"))
    if (e.path().extension() == ".etl") {
      INFO(e.path().string());
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      auto t = tile_of(ss.str());
      CHECK(!t->m.funcs.empty());
      ++n;
    }
  CHECK(n >= 7);
}

TEST_CASE("the verifier rejects a wrong layout and a use before its definition") {
  auto t = tile_of(rowsum(" where N % 4 == 0"));
  TileModule bad = t->m;
  TileFunc &p = bad.funcs[0];
  const TOp *red = ops_of(p.body, TileOpKind::Reduce).at(0);
  int r = red->results[0];
  // Give the reduction's result a layout that is not the slice of its operand's.
  p.layouts.push_back(default_layout({16}, 1, 4));
  p.values[size_t(r)].layout = int(p.layouts.size()) - 1;
  std::vector<std::string> errs = verify_tile(bad);
  REQUIRE(!errs.empty());
  CHECK(errs[0].find("slice") != std::string::npos);

  TileModule order = t->m;
  std::swap(order.funcs[0].body[0], order.funcs[0].body[1]); // reduce before its load
  errs = verify_tile(order);
  REQUIRE(!errs.empty());
  CHECK(errs[0].find("not defined before its use") != std::string::npos);
}

TEST_CASE("a splat used in three layouts is cloned; the dot's b keeps its load's layout") {
  auto t = tile_of(
      // x's rows have no known alignment: its load is 32-bit, 1 per thread
      "kernel k<N: dim, M: dim>(x: tensor<f32>[N, M], w: tensor<f32>[16, 16],\n"
      "                 y: tensor<f32>[N, M], o: tensor<f32>[N, 16]) {\n"
      "  task t[i in 0 .. cdiv(N, 16)] {\n"
      "    let z = zeros<f32>[16, 16];\n"
      "    store(y[i * 16 .. +16, 0 .. +16], z + load(x[i * 16 .. +16, 0 .. +16]));\n"
      "    store(o[i * 16 .. +16, 0 .. +16], dot(z, load(w[0 .. +16, 0 .. +16])) + z);\n"
      "  }\n"
      "}\n");
  const TileFunc &f = func(t->m, "t");
  // The FMA dot (lower_tile_dot.cpp): the result is the FMA layout (256
  // elements over 128 threads, 2 consecutive columns per thread); a, whose
  // rows fit in 16 registers per thread, takes dot_operand_layout (here a
  // clone of the splat); b is read from shared memory in any layout (the w
  // load's own). z's three uses (the x add, dot's a, the dot add) get three
  // clones, and nothing converts.
  const TOp *dot = ops_of(f.body, TileOpKind::Dot).at(0);
  const Layout &c = layout_of(f, dot->results[0]);
  CHECK(c == fma_dot_layout({16, 16}, 4));
  CHECK(c.contiguous_regs(1) == 2);
  CHECK(layout_of(f, dot->operands[0]) == dot_operand_layout(c, 0, {16, 16}));
  const TOp *wl = ops_of(f.body, TileOpKind::Load).at(1);
  CHECK(dot->operands[1] == wl->results[0]);
  std::vector<const TOp *> splats = ops_of(f.body, TileOpKind::Splat);
  REQUIRE(splats.size() == 3);
  for (size_t i = 0; i < splats.size(); ++i)
    for (size_t j = i + 1; j < splats.size(); ++j)
      CHECK(layout_of(f, splats[i]->results[0]) != layout_of(f, splats[j]->results[0]));
  CHECK(ops_of(f.body, TileOpKind::Convert).empty());
}
