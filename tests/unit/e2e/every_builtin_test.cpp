//===- tests/unit/e2e/every_builtin_test.cpp - Each builtin reaches code --===//
//
// What this pins: every builtin of compiler/ast/builtins.def is lowered by
// the one back end (the tile IR's lowering) for sim and for sm_80/sm_90
// PTX, from a small task body using it (kSnippets). A builtin added to
// builtins.def without a snippet here fails the first check, so a new
// builtin cannot skip the lowering's tests; values are checked by the
// e2e test of each family (tile_ops_test, math_test, atomics_test, ...).
//
//===----------------------------------------------------------------------===//
#include "ast/builtins.h"
#include "driver/pipeline.h"

#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>

using namespace etl;

namespace {

/// One task body line per builtin, inside a kernel with f32 x, y [64],
/// i32 n, c [64], f32 a [16, 16] and f32 o [16, 16].
const std::map<std::string, std::string> kSnippets = {
    {"load", "store(y[0 .. +64], load(x[0 .. +64]));"},
    {"store", "store(y[0 .. +64], load(x[0 .. +64]));"},
    {"zeros", "store(y[0 .. +64], zeros<f32>[64]);"},
    {"full", "store(y[0 .. +64], full<f32>[64](2.0));"},
    {"cast", "store(n[0 .. +64], cast<i32>(load(x[0 .. +64])));"},
    {"exp", "store(y[0 .. +64], exp(load(x[0 .. +64])));"},
    {"log", "store(y[0 .. +64], log(load(x[0 .. +64])));"},
    {"sqrt", "store(y[0 .. +64], sqrt(load(x[0 .. +64])));"},
    {"rsqrt", "store(y[0 .. +64], rsqrt(load(x[0 .. +64])));"},
    {"abs", "store(y[0 .. +64], abs(load(x[0 .. +64])));"},
    {"sin", "store(y[0 .. +64], sin(load(x[0 .. +64])));"},
    {"cos", "store(y[0 .. +64], cos(load(x[0 .. +64])));"},
    {"tanh", "store(y[0 .. +64], tanh(load(x[0 .. +64])));"},
    {"erf", "store(y[0 .. +64], erf(load(x[0 .. +64])));"},
    {"pow", "store(y[0 .. +64], pow(load(x[0 .. +64]), 1.5));"},
    {"floor", "store(y[0 .. +64], floor(load(x[0 .. +64])));"},
    {"ceil", "store(y[0 .. +64], ceil(load(x[0 .. +64])));"},
    {"round", "store(y[0 .. +64], round(load(x[0 .. +64])));"},
    {"sum", "store(y[0 .. +16], sum(load(a[0 .. +16, 0 .. +16]), axis = 1));"},
    {"max", "store(y[0 .. +16], max(load(a[0 .. +16, 0 .. +16]), axis = 0));"},
    {"min", "store(y[0 .. +16], min(load(a[0 .. +16, 0 .. +16]), axis = 1));"},
    {"expand", "store(o[0 .. +16, 0 .. +16], load(a[0 .. +16, 0 .. +16]) * "
               "expand(load(x[0 .. +16]), axis = 0));"},
    {"cdiv", "store(y[0 .. +64], full<f32>[64](cast<f32>(cdiv(i + 7, 4))));"},
    {"select", "store(y[0 .. +64], select(load(x[0 .. +64]) > 0.0, load(x[0 .. +64]), 0.0));"},
    {"arange", "store(n[0 .. +64], arange<i32>[64]);"},
    {"cumsum", "store(y[0 .. +64], cumsum(load(x[0 .. +64]), axis = 0));"},
    {"dot", "store(o[0 .. +16, 0 .. +16], dot(load(a[0 .. +16, 0 .. +16]), "
            "load(a[0 .. +16, 0 .. +16])));"},
    {"transpose", "store(o[0 .. +16, 0 .. +16], transpose(load(a[0 .. +16, 0 .. +16])));"},
    {"argmax", "store(n[0 .. +16], argmax(load(a[0 .. +16, 0 .. +16]), axis = 1));"},
    {"argmin", "store(n[0 .. +16], argmin(load(a[0 .. +16, 0 .. +16]), axis = 0));"},
    {"reshape", "store(y[0 .. +64], reshape(load(a[0 .. +4, 0 .. +16]), 64));"},
    {"popc", "store(n[0 .. +64], popc(load(c[0 .. +64])));"},
    {"atomic_add", "atomic_add(y[0 .. +64], load(x[0 .. +64]));"},
    {"atomic_max", "atomic_max(n[0 .. +64], load(c[0 .. +64]));"},
    {"atomic_min", "atomic_min(n[0 .. +64], load(c[0 .. +64]));"},
    {"atomic_cas", "store(c[0 .. +64], atomic_cas(n[0 .. +64], 5, arange<i32>[64]));"},
};

std::string program(const std::string &line) {
  return "kernel k(x: tensor<f32>[64], y: tensor<f32>[64], n: tensor<i32>[64],\n"
         "         c: tensor<i32>[64], a: tensor<f32>[16, 16], o: tensor<f32>[16, 16]) {\n"
         "  task t[i in 0 .. 1] {\n    " +
         line + "\n  }\n}\n";
}

} // namespace

TEST_CASE("every builtin of builtins.def has a snippet here") {
  for (const std::string &name : builtin_names()) {
    CAPTURE(name);
    CHECK(kSnippets.count(name) == 1);
  }
  for (const auto &snippet : kSnippets) { // and no snippet names a builtin that is gone
    const std::string &name = snippet.first; // (clang 14 captures no structured binding)
    CAPTURE(name);
    CHECK(find_builtin(name) != Builtin::None);
  }
}

TEST_CASE("every builtin is lowered from the tile IR for sim, sm_80 and sm_90") {
  for (const auto &snippet : kSnippets) {
    const std::string &name = snippet.first, &line = snippet.second;
    CAPTURE(name);
    for (const char *emit : {"llvm", "ptx"}) {
      CAPTURE(emit);
      CompileOptions o;
      o.stdin_text = program(line);
      o.input = "-";
      o.targets = std::string(emit) == "ptx" ? std::vector<std::string>{"sm_80", "sm_90"}
                                             : std::vector<std::string>{"sim"};
      o.emit = emit;
      std::ostringstream out, err;
      int code = compile(o, out, err);
      INFO(err.str());
      CHECK(code == 0);
      CHECK(!out.str().empty());
    }
  }
}
