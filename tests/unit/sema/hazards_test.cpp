// sema/hazards.h: which accesses of a task body get a barrier before them.
// Each case checks a one-task kernel and lists the source lines of the
// marked loads, stores and element reads; cases without a conflict (other
// tensors, the same slice, disjoint ranges, an earlier loop iteration of a
// disjoint slice) must stay unmarked so the pass costs nothing there.
#include "ast/ast.h"
#include "frontend/parser.h"
#include "sema/check.h"

#include <doctest/doctest.h>

#include <functional>
#include <vector>

using namespace etl;

namespace {

/// Line numbers (1-based, counting the kernel header as line 1) of the
/// accesses marked barrier_before in the body.
std::vector<unsigned> marked(const std::string &body) {
  SourceManager sm;
  std::string text = "kernel k<N: dim>(x: tensor<f32>[N], y: tensor<f32>[N], z: tensor<f32>[N],\n"
                     "  p: tensor<f32>[8, N], c: tensor<i32>[N]) where N % 64 == 0 {\n"
                     "  task t[i in 0 .. N / 64] {\n" +
                     body + "\n  }\n}\n";
  FileId f = sm.add("t.etl", text);
  Diag diag(sm);
  auto prog = parse_program(f, sm, diag);
  REQUIRE(prog);
  REQUIRE(check_program(*prog, diag, every_target_info()));
  std::vector<unsigned> lines;
  std::function<void(const Expr &)> expr = [&](const Expr &e) {
    if (e.barrier_before)
      lines.push_back(e.range.begin.line - 3);
    for (const auto &a : e.args)
      if (a)
        expr(*a);
    for (const auto &k : e.kwargs)
      if (k.value)
        expr(*k.value);
  };
  std::function<void(const std::vector<StmtPtr> &)> stmts = [&](const std::vector<StmtPtr> &b) {
    for (const auto &s : b) {
      for (const Expr *e : {s->value.get(), s->lo.get(), s->hi.get(), s->step.get()})
        if (e)
          expr(*e);
      stmts(s->body);
      stmts(s->else_body);
    }
  };
  stmts(prog->kernels.at(0).tasks.at(0).body);
  return lines;
}

using L = std::vector<unsigned>;

} // namespace

TEST_CASE("hazards: a reversed load of the task's own store is marked, the same slice is not") {
  CHECK(marked("    store(y[i * 64 .. +64], load(x[i * 64 .. +64]));\n"
               "    store(z[i * 64 .. +64], load(y[(63 - arange<i32>[64]) + i * 64]));") == L{2});
  CHECK(marked("    store(y[i * 64 .. +64], load(x[i * 64 .. +64]));\n"
               "    store(z[i * 64 .. +64], load(y[i * 64 .. +64]) + 1.0);") == L{});
  // Other tensors, or only loads: nothing.
  CHECK(marked("    store(y[i * 64 .. +64], load(x[(63 - arange<i32>[64]) + i * 64]));\n"
               "    store(z[i * 64 .. +64], load(x[i * 64 .. +64]));") == L{});
}

TEST_CASE("hazards: disjoint ranges need nothing, overlapping ones do") {
  CHECK(marked("    store(y[i * 64 .. +32], load(x[i * 64 .. +32]));\n"
               "    store(z[i * 64 .. +32], load(y[i * 64 + 32 .. +32]));") == L{});
  CHECK(marked("    store(y[i * 64 .. +32], load(x[i * 64 .. +32]));\n"
               "    store(z[i * 64 .. +32], load(y[i * 64 + 16 .. +32]));") == L{2});
  // A shifted window of another task's block is disjoint only when provable.
  CHECK(marked("    store(y[i * 64 .. +64], load(x[i * 64 .. +64]));\n"
               "    store(z[i * 64 .. +32], load(y[i * 64 + 64 .. +32], mask = arange<i32>[32] < "
               "0));") == L{});
}

TEST_CASE("hazards: write after read and write after write in another order") {
  CHECK(marked("    let v = load(y[(63 - arange<i32>[64]) + i * 64]);\n"
               "    store(y[i * 64 .. +64], v);") == L{2});
  CHECK(marked("    store(y[(63 - arange<i32>[64]) + i * 64], load(x[i * 64 .. +64]));\n"
               "    store(y[i * 64 .. +64], load(x[i * 64 .. +64]));") == L{2});
  CHECK(marked("    let v = load(y[i * 64 .. +64]);\n"
               "    store(y[i * 64 .. +64], v * 2.0);") == L{});
}

TEST_CASE("hazards: loops carry accesses into the next iteration") {
  // part[j, ...] of an earlier iteration is another row: nothing.
  CHECK(marked("    for j in 0 .. 8 {\n"
               "      store(p[j, i * 64 .. +64], load(x[i * 64 .. +64]));\n"
               "      store(z[i * 64 .. +64], load(p[j, i * 64 .. +64]));\n"
               "    }") == L{});
  // The same block every iteration, same slice: each element stays with its thread.
  CHECK(marked("    for j in 0 .. 8 {\n"
               "      store(y[i * 64 .. +64], load(y[i * 64 .. +64]) + 1.0);\n"
               "    }") == L{});
  // A window that moves by one element: the next iteration's load reads
  // what another thread stored in the previous one.
  CHECK(marked("    for j in 0 .. 8 {\n"
               "      let v = load(y[i * 64 + j .. +32]);\n"
               "      store(y[i * 64 + j .. +32], v + 1.0);\n"
               "    }") == L{2});
  // After the loop: any iteration's store may conflict.
  CHECK(marked("    for j in 0 .. 8 {\n"
               "      store(p[j, i * 64 .. +64], load(x[i * 64 .. +64]));\n"
               "    }\n"
               "    store(z[i * 64 .. +64], load(p[3, (63 - arange<i32>[64]) + i * 64]));") ==
        L{4});
}

TEST_CASE("hazards: rank-0 stores are thread 0's, rank-0 loads and element reads everyone's") {
  CHECK(marked("    store(c[i], cast<i32>(sum(load(x[i * 64 .. +64]), axis = 0)));\n"
               "    store(z[i * 64 .. +64], load(x[i * 64 .. +64]) + cast<f32>(c[i]));") == L{2});
  // Every thread reads block i of c, then thread 0 overwrites element i of it.
  CHECK(marked("    store(c[i], sum(load(c[i * 64 .. +64]), axis = 0));") == L{1});
  CHECK(marked("    store(y[i], sum(load(x[i * 64 .. +64]), axis = 0));\n"
               "    store(y[i], sum(load(x[i * 64 .. +64]), axis = 0) * 2.0);") == L{});
  CHECK(marked("    store(y[i], sum(load(x[i * 64 .. +64]), axis = 0));\n"
               "    store(z[i * 64 .. +64], load(x[i * 64 .. +64]) * load(y[i]));") == L{2});
}

TEST_CASE("hazards: each branch of an `if` starts from what was pending before it") {
  // The barrier of the then branch does not run when the else branch is
  // taken: the else branch's conflicting load needs its own.
  CHECK(marked("    store(y[i * 64 .. +64], load(x[i * 64 .. +64]));\n"
               "    if i == 0 {\n"
               "      store(z[i * 64 .. +32], load(y[i * 64 + 16 .. +32]));\n"
               "    } else {\n"
               "      store(z[i * 64 .. +32], load(y[i * 64 + 8 .. +32]));\n"
               "    }") == L{3, 5});
  // After the `if`, what either branch left pending (the then branch's
  // store; the else branch has no access) still conflicts.
  CHECK(marked("    if i == 0 {\n"
               "      store(y[i * 64 .. +64], load(x[i * 64 .. +64]));\n"
               "    }\n"
               "    store(z[i * 64 .. +32], load(y[i * 64 + 16 .. +32]));") == L{4});
  // Disjoint ranges stay unmarked inside a branch too.
  CHECK(marked("    store(y[i * 64 .. +32], load(x[i * 64 .. +32]));\n"
               "    if i > 0 {\n"
               "      store(z[i * 64 .. +32], load(y[i * 64 + 32 .. +32]));\n"
               "    }") == L{});
}

TEST_CASE("hazards: an `if` condition is a fact inside its branch, its negation in the else") {
  // y[0 .. +64] and y[i * 64 .. +64] are disjoint only when i >= 1.
  CHECK(marked("    store(y[0 .. +64], load(x[0 .. +64]));\n"
               "    store(z[i * 64 .. +64], load(y[i * 64 .. +64]));") == L{2});
  CHECK(marked("    store(y[0 .. +64], load(x[0 .. +64]));\n"
               "    if i > 0 {\n"
               "      store(z[i * 64 .. +64], load(y[i * 64 .. +64]));\n"
               "    }") == L{});
  CHECK(marked("    store(y[0 .. +64], load(x[0 .. +64]));\n"
               "    if 1 <= i && i < N / 64 {\n"
               "      store(z[i * 64 .. +64], load(y[i * 64 .. +64]));\n"
               "    }") == L{});
  CHECK(marked("    store(y[0 .. +64], load(x[0 .. +64]));\n"
               "    if i < 1 || i > N {\n"
               "      store(z[0 .. +64], load(x[0 .. +64]));\n"
               "    } else {\n"
               "      store(z[i * 64 .. +64], load(y[i * 64 .. +64]));\n"
               "    }") == L{});
  CHECK(marked("    store(y[0 .. +64], load(x[0 .. +64]));\n"
               "    if !(i < 1 || i > N) {\n"
               "      store(z[i * 64 .. +64], load(y[i * 64 .. +64]));\n"
               "    }") == L{});
  // The then branch's fact is not the else branch's, nor after the `if`;
  // `||` and `!=` give none.
  CHECK(marked("    store(y[0 .. +64], load(x[0 .. +64]));\n"
               "    if i > 0 {\n"
               "      store(z[0 .. +64], load(x[0 .. +64]));\n"
               "    } else {\n"
               "      store(z[i * 64 .. +64], load(y[i * 64 .. +64]));\n"
               "    }") == L{5});
  CHECK(marked("    store(y[0 .. +64], load(x[0 .. +64]));\n"
               "    if i > 0 {\n"
               "      store(z[0 .. +64], load(x[0 .. +64]));\n"
               "    }\n"
               "    store(z[i * 64 .. +64], load(y[i * 64 .. +64]));") == L{5});
  CHECK(marked("    store(y[0 .. +64], load(x[0 .. +64]));\n"
               "    if i > 0 || i > 1 {\n"
               "      store(z[i * 64 .. +64], load(y[i * 64 .. +64]));\n"
               "    }") == L{3});
  CHECK(marked("    store(y[0 .. +64], load(x[0 .. +64]));\n"
               "    if i != 0 {\n"
               "      store(z[i * 64 .. +64], load(y[i * 64 .. +64]));\n"
               "    }") == L{3});
}

TEST_CASE("hazards: the same atomic twice needs nothing; a use of its old values or a load does") {
  // Two atomic_adds through a gather: other threads may hit the same
  // elements, but the sums do not depend on the order.
  CHECK(marked("    atomic_add(c[(63 - arange<i32>[64]) + i * 64], 1);\n"
               "    atomic_add(c[i * 64 .. +64], 2);") == L{});
  // A load after an atomic of other threads' elements waits for it.
  CHECK(marked("    atomic_add(y[(63 - arange<i32>[64]) + i * 64], 1.0);\n"
               "    store(z[i * 64 .. +64], load(y[i * 64 .. +64]));") == L{2});
  // Different atomics, or old values used, keep program order.
  CHECK(marked("    atomic_add(y[(63 - arange<i32>[64]) + i * 64], 1.0);\n"
               "    atomic_max(y[i * 64 .. +64], 0.5);") == L{2});
  CHECK(marked("    atomic_add(c[(63 - arange<i32>[64]) + i * 64], 1);\n"
               "    store(c[i * 64 .. +64], atomic_add(c[i * 64 .. +64], 1));") == L{2});
}
