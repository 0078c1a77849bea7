// Sema of the compute tile ops: the types (element type and static shape)
// check_program gives bool tiles, comparisons, select, arange, cumsum,
// argmax/argmin, transpose and dot, read from the task's `let` locals, and
// the diagnostics for their misuse (ids only; the texts are in tests/diag).
#include "ast/ast.h"
#include "frontend/parser.h"
#include "sema/check.h"

#include <doctest/doctest.h>

#include <map>

using namespace etl;

namespace {

struct Checked {
  SourceManager sm;
  std::unique_ptr<Diag> diag;
  std::unique_ptr<Program> prog;
  bool ok = false;
  /// "elem[shape]" of each local of the first task, by name ("bool[]" for a scalar).
  std::map<std::string, std::string> locals;
};

/// Checks a kernel whose only task has `body`, with tensors x: f32[M, 16],
/// h: f16[M, 16], n: i32[M, 16] and v: f32[M].
std::unique_ptr<Checked> check(const std::string &body) {
  auto c = std::make_unique<Checked>();
  std::string text = "const TM = 8;\n"
                     "kernel k<M: dim>(x: tensor<f32>[M, 16], h: tensor<f16>[M, 16],\n"
                     "                 n: tensor<i32>[M, 16], v: tensor<f32>[M]) {\n"
                     "  task t[i in 0 .. cdiv(M, TM)] {\n"
                     "    let a = load(x[i * TM .. +TM, 0 .. +16]);\n"
                     "    let a16 = load(h[i * TM .. +TM, 0 .. +16]);\n"
                     "    let b = load(n[i * TM .. +TM, 0 .. +16]);\n" +
                     body + "\n  }\n}\n";
  FileId f = c->sm.add("t.etl", text);
  c->diag = std::make_unique<Diag>(c->sm);
  c->prog = parse_program(f, c->sm, *c->diag);
  REQUIRE(c->prog);
  REQUIRE_FALSE(c->diag->has_errors());
  c->ok = check_program(*c->prog, *c->diag, every_target_info());
  for (const LocalVar &l : c->prog->kernels.at(0).tasks.at(0).locals) {
    std::string s = l.type.kind == TypeKind::Unknown ? "?" : spelling(l.type.elem);
    s += "[";
    for (size_t d = 0; d < l.type.tile_shape.size(); ++d)
      s += (d ? ", " : "") + std::to_string(l.type.tile_shape[d]);
    c->locals[l.name] = s + "]";
  }
  return c;
}

bool has(const Checked &c, DiagId id) {
  for (const Diagnostic &d : c.diag->diagnostics())
    if (d.id == id)
      return true;
  return false;
}

} // namespace

TEST_CASE("sema: comparisons and logic give bool tiles with broadcasting") {
  auto c = check("    let m = a > 0.0;\n"
                 "    let r = b == 3;\n"
                 "    let s = expand(sum(a, axis = 1), axis = 1) < a;\n"
                 "    let l = m && !r || (a16 != 0.0);\n"
                 "    let q = i < 2;\n"
                 "    let cnt = sum(m, axis = 1);\n"
                 "    let any = max(m, axis = 0);\n"
                 "    let f = cast<f32>(m);\n"
                 "    let nz = cast<bool>(b);\n");
  INFO(c->diag->render());
  REQUIRE(c->ok);
  CHECK(c->locals["m"] == "bool[8, 16]");
  CHECK(c->locals["r"] == "bool[8, 16]");
  CHECK(c->locals["s"] == "bool[8, 16]");
  CHECK(c->locals["l"] == "bool[8, 16]");
  CHECK(c->locals["q"] == "bool[]");
  CHECK(c->locals["cnt"] == "i32[8]");
  CHECK(c->locals["any"] == "bool[16]");
  CHECK(c->locals["f"] == "f32[8, 16]");
  CHECK(c->locals["nz"] == "bool[8, 16]");
}

TEST_CASE("sema: select, arange, cumsum, argmax, transpose and dot types") {
  auto d = check("    let s = select(a > 0.0, a, 0.0);\n"
                 "    let s16 = select(a16 > 0.0, 1.5, a16);\n"
                 "    let si = select(b > 0, b, 0);\n"
                 "    let r = arange<i32>[TM];\n"
                 "    let rf = arange<f32>[16];\n"
                 "    let cs = cumsum(b, axis = 0);\n"
                 "    let am = argmax(a, axis = 1);\n"
                 "    let an = argmin(a16, axis = 0);\n"
                 "    let tr = transpose(a);\n"
                 "    let d = dot(a, transpose(a16));\n"
                 "    let g = dot(sum(a, axis = 0), transpose(a));\n");
  INFO(d->diag->render());
  REQUIRE(d->ok);
  CHECK(d->locals["s"] == "f32[8, 16]");
  CHECK(d->locals["s16"] == "f16[8, 16]");
  CHECK(d->locals["si"] == "i32[8, 16]");
  CHECK(d->locals["r"] == "i32[8]");
  CHECK(d->locals["rf"] == "f32[16]");
  CHECK(d->locals["cs"] == "i32[8, 16]");
  CHECK(d->locals["am"] == "i32[8]");
  CHECK(d->locals["an"] == "i32[16]");
  CHECK(d->locals["tr"] == "f32[16, 8]");
  CHECK(d->locals["d"] == "f32[8, 8]");
  CHECK(d->locals["g"] == "f32[8]");
}

TEST_CASE("sema: misuse of the compute ops is diagnosed") {
  CHECK(has(*check("    let s = select(b, a, a);"), DiagId::ExpectedBool));
  CHECK(has(*check("    let s = !a;"), DiagId::ExpectedBool));
  CHECK(has(*check("    let s = (a > 0.0) || b;"), DiagId::ExpectedBool));
  CHECK(has(*check("    let s = (a > 0.0) + (a > 1.0);"), DiagId::TileOpUnsupported));
  CHECK(has(*check("    let s = -(a > 0.0);"), DiagId::TileOpUnsupported));
  CHECK(has(*check("    let s = a > b;"), DiagId::ElemTypeMismatch));
  CHECK(has(*check("    let s = select(a > 0.0, a, b);"), DiagId::ElemTypeMismatch));
  CHECK(has(*check("    let s = dot(a, a);"), DiagId::DotInnerMismatch));
  CHECK(has(*check("    let s = dot(b, transpose(b));"), DiagId::TileOpUnsupported));
  CHECK(has(*check("    let s = dot(a, sum(a, axis = 1));"), DiagId::DotRank));
  // A dot's scratch depends on the layouts the tile IR picks: sema leaves
  // it to the driver's check of the shared-memory plan (SmemOverBudget,
  // tests/diag/fail_dot_too_large.etl).
  CHECK_FALSE(check("    let s = dot(zeros<f32>[128, 128], zeros<f32>[128, 128]);")
                  ->diag->has_errors());
  CHECK(has(*check("    let s = transpose(sum(a, axis = 1));"), DiagId::TransposeRank));
  CHECK(has(*check("    let s = cumsum(a, axis = 2);"), DiagId::AxisOutOfRange));
  CHECK(has(*check("    let s = argmax(a);"), DiagId::MissingKeyword));
  CHECK(has(*check("    let s = cumsum(a > 0.0, axis = 0);"), DiagId::TileOpUnsupported));
  CHECK(has(*check("    let s = arange<bool>[4];"), DiagId::TileOpUnsupported));
  CHECK(has(*check("    let s = arange<i32>[4, 4];"), DiagId::WrongArgCount));
  CHECK(has(*check("    let s = cumsun(a, axis = 0);"), DiagId::NoteDidYouMean));
  CHECK(has(*check("    store(n[0 .. +8, 0 .. +16], b > 0);"), DiagId::StoreElemMismatch));
}
