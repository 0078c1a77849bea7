//===- tests/unit/ast/builtins_test.cpp - The builtin table ---------------===//
//
// What this covers: ast/builtins.def as the one list of builtins: names and
// enum values map both ways, and sema records the builtin each call
// resolves to (Expr::builtin), which the later stages switch on.
//
//===----------------------------------------------------------------------===//
#include "ast/ast.h"
#include "frontend/parser.h"
#include "sema/check.h"

#include <doctest/doctest.h>

#include <functional>

using namespace etl;

TEST_CASE("builtins: names and enum values map both ways") {
  REQUIRE(builtin_names().size() > 20);
  for (const std::string &n : builtin_names()) {
    Builtin b = find_builtin(n);
    CHECK(b != Builtin::None);
    CHECK(builtin_name(b) == n);
  }
  CHECK(find_builtin("softmax") == Builtin::None);
  CHECK(std::string(builtin_name(Builtin::None)).empty());
  CHECK(is_index_fn(Builtin::Cdiv));
  CHECK_FALSE(is_index_fn(Builtin::Sum));
}

TEST_CASE("builtins: sema records the builtin of every call") {
  SourceManager sm;
  Diag diag(sm);
  FileId f = sm.add("t.etl", "kernel k<M: dim>(x: tensor<f32>[M], y: tensor<f32>[M]) {\n"
                             "  task t[i in 0 .. cdiv(M, 4)] {\n"
                             "    store(y[i * 4 .. +4], exp(load(x[i * 4 .. +4])));\n"
                             "  }\n"
                             "}\n");
  std::unique_ptr<Program> p = parse_program(f, sm, diag);
  REQUIRE(p);
  REQUIRE(check_program(*p, diag, every_target_info()));
  std::vector<Builtin> seen;
  std::function<void(const Expr &)> walk = [&](const Expr &e) {
    if (e.kind == ExprKind::Call)
      seen.push_back(e.builtin);
    for (const ExprPtr &a : e.args)
      walk(*a);
  };
  const TaskDecl &t = p->kernels.at(0).tasks.at(0);
  walk(*t.domain.at(0).hi);
  walk(*t.body.at(0)->value);
  CHECK(seen == std::vector<Builtin>{Builtin::Cdiv, Builtin::Store, Builtin::Exp, Builtin::Load});
}
