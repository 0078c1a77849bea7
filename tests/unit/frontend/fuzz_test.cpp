//===- tests/unit/frontend/fuzz_test.cpp - The parser survives anything ---===//
//
// Truncations and random mutations of the examples, and random bytes, must
// parse to some Program and diagnostics without crashing or hanging, and
// every diagnostic must render.
//
//===----------------------------------------------------------------------===//
#include "ast/ast.h"
#include "frontend/parser.h"

#include <doctest/doctest.h>

#include <fstream>
#include <random>
#include <sstream>

using namespace etl;

namespace {

std::string read(const std::string &rel) {
  std::ifstream in(std::string(ETL_SOURCE_DIR) + "/" + rel);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Parses, renders the diagnostics and prints the AST; returns the error count.
unsigned survive(const std::string &text) {
  SourceManager sm;
  FileId f = sm.add("fuzz.etl", text);
  Diag diag(sm);
  std::unique_ptr<Program> p = parse_program(f, sm, diag);
  REQUIRE(p);
  std::string r = diag.render();
  std::string a = print_ast(*p, sm);
  CHECK(!a.empty());
  for (const Diagnostic &d : diag.diagnostics())
    if (d.range.valid()) {
      CHECK(d.range.begin.offset <= text.size());
      CHECK(d.range.end.offset <= text.size());
    }
  return diag.error_count();
}

const char *kTokens[] = {"kernel", "task",  "const", "{",  "}",  "(",  ")",  "[", "]",        ";",
                         ",",      "..",    "+",     "<",  ">",  "=",  "+=", "*", "x",        "1",
                         "1.5",    "waits", "for",   "in", "/*", "//", "\n", "$", "\xc3\xa9", "\0"};

} // namespace

TEST_CASE("fuzz: truncations of the examples") {
  for (const char *ex : {"examples/rowsum/rowsum.etl", "examples/softmax/softmax.etl"}) {
    std::string text = read(ex);
    REQUIRE(!text.empty());
    CHECK(survive(text) == 0);
    for (size_t n = 0; n < text.size(); n += 7)
      survive(text.substr(0, n));
    for (size_t n = 0; n < text.size(); n += 31)
      survive(text.substr(n));
  }
}

TEST_CASE("fuzz: random mutations of the examples") {
  std::mt19937 rng(12345);
  const std::string texts[] = {read("examples/rowsum/rowsum.etl"),
                               read("examples/softmax/softmax.etl")};
  for (int iter = 0; iter < 400; ++iter) {
    std::string t = texts[iter % 2];
    int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits && !t.empty(); ++e) {
      size_t pos = rng() % t.size();
      switch (rng() % 4) {
      case 0: // delete a span
        t.erase(pos, 1 + rng() % 12);
        break;
      case 1: { // insert a token
        std::string tok = kTokens[rng() % (sizeof kTokens / sizeof *kTokens)];
        if (tok.empty())
          tok = std::string(1, '\0');
        t.insert(pos, " " + tok + " ");
        break;
      }
      case 2: // replace a byte
        t[pos] = static_cast<char>(rng() % 256);
        break;
      case 3: { // duplicate a span
        size_t len = 1 + rng() % 40;
        t.insert(pos, t.substr(pos, len));
        break;
      }
      }
    }
    survive(t);
  }
}

TEST_CASE("fuzz: random bytes and pathological inputs") {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 100; ++iter) {
    std::string t(rng() % 200, ' ');
    for (char &c : t)
      c = static_cast<char>(rng() % 256);
    survive(t);
  }
  CHECK(survive(std::string(100000, '(')) >= 1);
  CHECK(survive("const A = " + std::string(5000, '-') + "1;") >= 0);
  CHECK(survive("kernel k<M: dim>(x: tensor<f32>[M]) { task t[i in 0 .. M] {") >= 1);
  CHECK(survive("/* never closed") == 1);
  CHECK(survive(std::string(200, '}')) >= 1);
}
