//===- tests/unit/frontend/deep_input_test.cpp - Deep inputs end cleanly --===//
//
// Inputs whose parse would nest deeper than any real program, each shape one
// that once crashed etlc (a stack overflow in the generated parser), run
// through compile_front as etlc runs them: on the compiler's own stack
// (driver/pipeline.cpp), with the parser refusing trees deeper than its
// bound (frontend/parser.cpp). Each must end with a located "nested too
// deeply" error, or compile when it is within the limits, in the plain build
// and in the ASan build alike (this file runs in both).
//
//===----------------------------------------------------------------------===//
#include "../front_harness.h"

#include <doctest/doctest.h>

#include <string>

using namespace etl;

namespace {

/// A kernel whose one task computes `let a = EXPR;` on line 3.
std::string kernel_with(const std::string &expr) {
  return "kernel k<N: dim>(x: tensor<f32>[N]) {\n"
         "  task t[i in 0 .. 1] {\n"
         "    let a = " +
         expr +
         ";\n"
         "  }\n"
         "}\n";
}

std::string repeat(const std::string &s, size_t n) {
  std::string r;
  r.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i)
    r += s;
  return r;
}

struct Result {
  bool ok = false;
  unsigned too_deep = 0; ///< NestingTooDeep errors
  unsigned line = 0;     ///< of the first of them
  std::string rendered;
};

Result front(const std::string &text) {
  testing::FrontResult f = testing::run_front(text, "deep.etl");
  Result r{f.ok, 0, 0, f.text};
  for (const Diagnostic &d : f.diagnostics)
    if (d.id == DiagId::NestingTooDeep && r.too_deep++ == 0) {
      REQUIRE(d.range.valid());
      r.line = d.range.begin.line;
    }
  return r;
}

} // namespace

TEST_CASE("alternating '- +' in a load index: error recovery nests, the parser stops it") {
  // Each `+` is dropped by recovery and the `-` after it parsed as a unary
  // minus: no bracket and no run of minus tokens, one level per pair (the
  // fuzzer's find, grown; 20,000 pairs overflowed the ASan build's stack).
  // Past the first syntax error the parser stops once the tree is 64 rules
  // deep: the errors are syntax errors on that line, a bounded number.
  for (size_t pairs : {size_t(20000), size_t(400000)}) {
    CAPTURE(pairs);
    testing::FrontResult f =
        testing::run_front(kernel_with("load(x[1 " + repeat("- + ", pairs) + "1 .. +4])"));
    CHECK_FALSE(f.ok);
    CHECK(f.errors >= 1);
    CHECK(f.errors <= 51);
    for (const Diagnostic &d : f.diagnostics)
      CHECK(d.range.begin.line == 3);
  }
}

TEST_CASE("a syntax error inside 200 nested casts ends the parse there, quickly") {
  // A fuzzer input: a typo deep in the nesting made every later prediction
  // look ahead through the rest (2.4 s and 400 MB for 2.4 KB of text).
  std::string e = repeat("cast<f32>(", 100) + "cast<<<2>(" + repeat("cast<f32>(", 100) +
                  "load(x[0 .. +4])" + repeat(")", 201);
  testing::FrontResult f = testing::run_front(kernel_with(e));
  INFO(f.text);
  CHECK_FALSE(f.ok);
  REQUIRE(f.errors >= 1);
  CHECK(f.diagnostics[0].id == DiagId::SyntaxError);
  CHECK(f.diagnostics[0].range.begin.line == 3);
}

TEST_CASE("a long binary chain is refused once, where it starts") {
  Result r = front(kernel_with("load(x[" + repeat("1 - 1 + ", 200000) + "1 .. +4])"));
  CHECK_FALSE(r.ok);
  CHECK(r.too_deep == 1);
  CHECK(r.line == 3);
}

TEST_CASE("cast<f32>( nested 200 deep compiles; 300 deep is refused") {
  // 200 levels: 2.6 KB of text that overflowed the ASan build's stack in
  // primary()/expr() before any check ran.
  std::string ok = kernel_with(repeat("cast<f32>(", 200) + "load(x[0 .. +4])" + repeat(")", 200));
  Result r = front(ok);
  INFO(r.rendered);
  CHECK(r.ok);
  std::string deep = kernel_with(repeat("cast<f32>(", 300) + "load(x[0 .. +4])" + repeat(")", 300));
  r = front(deep);
  CHECK_FALSE(r.ok);
  CHECK(r.too_deep == 1);
  CHECK(r.line == 3);
}

TEST_CASE("brackets, unary runs and indexing nested past the limit are refused") {
  for (const std::string &e :
       {repeat("(", 100000) + "1" + repeat(")", 100000), repeat("-", 100000) + "1",
        repeat("- ! ", 50000) + "1", "x" + repeat("[0]", 5000)}) {
    Result r = front(kernel_with(e));
    CHECK_FALSE(r.ok);
    CHECK(r.too_deep == 1);
    CHECK(r.line == 3);
  }
}
