// warn_pad_reductions (tile/padding.cpp): which reductions over a load's
// padding warn. Every case is a small kernel whose one reduction reads a
// [TB, TN] tile of x loaded from a slice that may run past N (or a masked
// one); the expected count is 1 where the padding can change the result for
// some data, 0 where it cannot or where the pass cannot tell (unknown
// never warns). Then every example compiles without the warning.
#include "driver/pipeline.h"
#include "tile/passes.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace etl;

namespace {

struct Result {
  int warnings = 0;
  std::string text; ///< the rendered diagnostics
};

Result check(const std::string &src, const std::string &path = "t.etl") {
  Compilation c;
  c.file = c.sm.add(path, src);
  bool ok = compile_front(c);
  REQUIRE_MESSAGE(ok, c.diag.render());
  const KernelDecl &k = c.program->kernels[0];
  TileModule m = build_tile_ir(k, c.graph, *c.program, 128);
  REQUIRE(verify_tile(m).empty());
  Diag quiet(c.sm);
  analyse_memory(m, k, c.graph, quiet);
  Diag d(c.sm);
  warn_pad_reductions(m, d);
  Result r;
  for (const Diagnostic &x : d.diagnostics())
    r.warnings += x.id == DiagId::PadNotIdentity;
  r.text = d.render();
  return r;
}

/// A kernel whose task loads `v` with `load_args` (after the slice) and
/// stores `expr` (a [TB] tile) to y; `where` after the signature.
std::string kernel(const std::string &load_args, const std::string &expr,
                   const std::string &where = "", const std::string &x_elem = "f32",
                   const std::string &pre = "") {
  return "const TB = 4;\nconst TN = 128;\n"
         "kernel k<B: dim, N: dim>(x: tensor<" +
         x_elem + ">[B, N], y: tensor<f32>[B], s: f32) " + where +
         " {\n"
         "  task t[b in 0 .. cdiv(B, TB)] {\n" +
         pre + "    let v = load(x[b * TB .. +TB, 0 .. +TN]" + load_args +
         ");\n"
         "    store(y[b * TB .. +TB], " +
         expr + ");\n  }\n}\n";
}

} // namespace

TEST_CASE("pad check: max, min, sum and the arg reductions against their identities") {
  // warns: the padding can win
  CHECK(check(kernel("", "max(v, axis = 1)")).warnings == 1);
  CHECK(check(kernel(", pad = -inf", "min(v, axis = 1)")).warnings == 1);
  CHECK(check(kernel(", pad = 1.0", "sum(v, axis = 1)")).warnings == 1);
  CHECK(check(kernel("", "cast<f32>(argmax(v, axis = 1))")).warnings == 1);
  CHECK(check(kernel(", pad = -inf", "cast<f32>(argmin(v, axis = 1))")).warnings == 1);
  // the identity: no warning
  CHECK(check(kernel(", pad = -inf", "max(v, axis = 1)")).warnings == 0);
  CHECK(check(kernel(", pad = inf", "min(v, axis = 1)")).warnings == 0);
  CHECK(check(kernel("", "sum(v, axis = 1)")).warnings == 0);
  CHECK(check(kernel(", pad = -inf", "cast<f32>(argmax(v, axis = 1))")).warnings == 0);
}

TEST_CASE("pad check: the padding followed through element-wise ops") {
  // exp(-inf) = 0: a softmax's sum of a -inf pad is right, of a 0 pad not
  CHECK(check(kernel(", pad = -inf",
                     "sum(exp(v - expand(max(v, axis = 1), axis = 1)), axis = 1)"))
            .warnings == 0);
  CHECK(check(kernel("", "sum(exp(v), axis = 1)")).warnings == 1);
  // 0 * anything finite stays 0: a weighted sum of a 0 pad is right
  CHECK(check(kernel("", "sum(v * 3.0 + v * s, axis = 1)")).warnings == 0);
  // ... but not for max: -inf * 2 is -inf, fine; 0 * 2 is 0, a bug
  CHECK(check(kernel(", pad = -inf", "max(v * 2.0, axis = 1)")).warnings == 0);
  CHECK(check(kernel("", "max(v * 2.0, axis = 1)")).warnings == 1);
  // relu first: every real value is >= 0, so a 0 pad cannot win the max
  CHECK(check(kernel("", "max(max(v, 0.0), axis = 1)")).warnings == 0);
  // a cast keeps it (f16 load, f32 reduction)
  CHECK(check(kernel("", "max(cast<f32>(v), axis = 1)", "", "f16")).warnings == 1);
  // a padding the pass cannot follow (a scalar parameter, a sign it cannot
  // know) never warns
  CHECK(check(kernel(", pad = s", "max(v, axis = 1)")).warnings == 0);
  CHECK(check(kernel(", pad = -inf", "max(v * s, axis = 1)")).warnings == 0);
}

TEST_CASE("pad check: where padding can happen at all") {
  // `where N % TN == 0` with a loop tiling N: every tile lies inside
  std::string tiled = "const TB = 4;\nconst TN = 128;\n"
                      "kernel k<B: dim, N: dim>(x: tensor<f32>[B, N], y: tensor<f32>[B]) "
                      "where N % TN == 0 {\n"
                      "  task t[b in 0 .. cdiv(B, TB), j in 0 .. N / TN] {\n"
                      "    let v = load(x[b * TB .. +TB, j * TN .. +TN]);\n"
                      "    atomic_max(y[b * TB .. +TB], max(v, axis = 1));\n  }\n}\n";
  CHECK(check(tiled).warnings == 0);
  // padded rows only (B ragged, the columns a static extent): the row
  // reduction is fine, a reduction down the rows is not
  std::string rows = "const TB = 4;\nconst TN = 128;\n"
                     "kernel k<B: dim>(x: tensor<f32>[B, TN], y: tensor<f32>[B], z: "
                     "tensor<f32>[TN]) {\n"
                     "  task t[b in 0 .. cdiv(B, TB)] {\n"
                     "    let v = load(x[b * TB .. +TB, 0 .. +TN]);\n"
                     "    store(y[b * TB .. +TB], max(v, axis = 1));\n"
                     "    atomic_max(z[0 .. +TN], max(v, axis = 0));\n  }\n}\n";
  Result r = check(rows);
  CHECK(r.warnings == 1);
  CHECK(r.text.find("along axis 0") != std::string::npos);
  // a mask constant along the reduced axis (whole rows off) pads no row
  // partly; the select with the load's mask restores the identity
  std::string masked = "const TB = 4;\nconst TN = 128;\n"
                       "kernel k<B: dim>(x: tensor<f32>[B, TN], live: tensor<i32>[B], y: "
                       "tensor<f32>[B]) {\n"
                       "  task t[b in 0 .. cdiv(B, TB)] {\n"
                       "    let on = load(live[b * TB .. +TB]) > 0;\n"
                       "    let v = load(x[b * TB .. +TB, 0 .. +TN], mask = expand(on, axis = 1));\n"
                       "    store(y[b * TB .. +TB], max(v, axis = 1));\n  }\n}\n";
  CHECK(check(masked).warnings == 0);
  std::string cols = "const TB = 4;\nconst TN = 128;\n"
                     "kernel k<B: dim>(x: tensor<f32>[B, TN], keep: tensor<i32>[TN], y: "
                     "tensor<f32>[B]) {\n"
                     "  task t[b in 0 .. cdiv(B, TB)] {\n"
                     "    let m = expand(load(keep[0 .. +TN]) > 0, axis = 0);\n"
                     "    let v = load(x[b * TB .. +TB, 0 .. +TN], mask = m);\n"
                     "    store(y[b * TB .. +TB], max(SEL, axis = 1));\n  }\n}\n";
  auto with = [&](const std::string &sel) {
    std::string s = cols;
    s.replace(s.find("SEL"), 3, sel);
    return s;
  };
  CHECK(check(with("v")).warnings == 1);
  CHECK(check(with("select(m, v, -inf)")).warnings == 0);
  CHECK(check(with("select(m, v, 0.0)")).warnings == 1);
}

TEST_CASE("pad check: the warning names the load, the value, the fix and the reduction") {
  Result r = check(kernel("", "max(v, axis = 1)"), "rowmax.etl");
  CHECK(r.text.find("rowmax.etl:5:13: warning: the padding of this load of 'x' (the elements "
                    "outside the tensor) reaches `max` along axis 1 as 0, not as -inf") !=
        std::string::npos);
  CHECK(r.text.find("write `pad = -inf` on the load") != std::string::npos);
  CHECK(r.text.find("rowmax.etl:6:29: note: the `max` that reads the padding") !=
        std::string::npos);
  Result e = check(kernel("", "sum(exp(v), axis = 1)"));
  CHECK(e.text.find("reaches `sum` along axis 1 as 1, not as 0") != std::string::npos);
  CHECK(e.text.find("choose a `pad =` that reaches `sum` as 0") != std::string::npos);
  Result i = check(kernel("", "cast<f32>(max(v, axis = 1))", "", "i32"));
  CHECK(i.text.find("write `pad = -2147483648`") != std::string::npos);
  CHECK(check(kernel("", "cast<f32>(max(v, axis = 1))", "", "u8")).warnings == 0); // 0 is u8's least
}

TEST_CASE("pad check: no example warns") {
  const fs::path root = ETL_SOURCE_DIR;
  for (const auto &e : fs::directory_iterator(root / "examples")) {
    fs::path src = e.path() / (e.path().filename().string() + ".etl");
    if (!fs::exists(src))
      continue;
    CAPTURE(src.string());
    std::ifstream in(src);
    std::stringstream s;
    s << in.rdbuf();
    Result r = check(s.str(), src.string());
    CHECK_MESSAGE(r.warnings == 0, r.text);
  }
}
