// Tests of `import` through the driver (CompileOptions::import_dirs is
// `etlc -I`): modules found in -I directories before the stdlib, consts of
// modules usable in the program, import cycles, and diagnostics that point
// into the imported file, with the call chain into it.
#include "driver/pipeline.h"
#include "driver_harness.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace etl {
namespace {

using drivertest::Result;
using drivertest::write;

fs::path lib_dir() {
  fs::path d = fs::path(ETL_TEST_BINARY_DIR) / "import_test";
  fs::create_directories(d / "mylib");
  fs::create_directories(d / "std");
  return d;
}

const char kKernel[] = R"(
kernel k<M: dim>(x: tensor<f32>[M], y: tensor<f32>[M]) {
  task t[i in 0 .. cdiv(M, TM)] {
    let a = load(x[i * TM .. +TM]);
    store(y[i * TM .. +TM], EXPR);
  }
}
)";

/// Compiles `head` + the kernel storing EXPR, with -I lib_dir().
Result compile_with(const std::string &head, const std::string &expr,
                    const std::string &emit = "inline") {
  std::string k = kKernel;
  k.replace(k.find("EXPR"), 4, expr);
  fs::path main = lib_dir() / "main.etl";
  write(main, head + k);
  CompileOptions o;
  o.input = main.string();
  o.emit = emit;
  o.targets = {"sim"};
  o.import_dirs = {lib_dir().string()};
  std::ostringstream out, err;
  int code = compile(o, out, err);
  return {code, out.str(), err.str()};
}

TEST_CASE("import: -I directories, module consts, cycles") {
  write(lib_dir() / "mylib" / "act.etl", "import mylib.util;\n"
                                         "const K = HALF_K * 2;\n"
                                         "fn twice(x) {\n  return half(x) * 4.0;\n}\n");
  write(lib_dir() / "mylib" / "util.etl", "import mylib.act;\n" // a cycle: loaded once
                                          "const HALF_K = 1;\n"
                                          "fn half(x) {\n  return x * 0.5;\n}\n");
  Result r = compile_with("import mylib.act;\nconst TM = K * 8 * HALF_K;\n", "twice(a)");
  INFO(r.err);
  REQUIRE(r.code == 0);
  // Dependencies' consts first, so TM can use both; every call expanded.
  CHECK(r.out.find("(Const HALF_K") < r.out.find("(Const K"));
  CHECK(r.out.find("(Const K") < r.out.find("(Const TM"));
  CHECK(r.out.find("(Binary * (Binary * (Name a) (FloatLit 0.5)) (FloatLit 4.0))") !=
        std::string::npos);
  CHECK(r.out.find("Call twice") == std::string::npos);

  // The whole pipeline, to an artifact's worth of code.
  r = compile_with("import mylib.act;\nconst TM = K * 8 * HALF_K;\n", "twice(a)", "llvm");
  INFO(r.err);
  CHECK(r.code == 0);
}

TEST_CASE("import: a -I directory comes before the stdlib") {
  write(lib_dir() / "std" / "math.etl", "fn sigmoid(x) {\n  return x * 3.0;\n}\n");
  Result r = compile_with("import std.math;\nconst TM = 16;\n", "sigmoid(a)");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("(Binary * (Name a) (FloatLit 3.0))") != std::string::npos);
  fs::remove(lib_dir() / "std" / "math.etl");
  r = compile_with("import std.math;\nconst TM = 16;\n", "sigmoid(a)");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("(Call exp") != std::string::npos); // the real one
}

TEST_CASE("import: errors point into the imported file") {
  SUBCASE("a syntax error in a module") {
    write(lib_dir() / "mylib" / "broken.etl", "fn f(x) {\n  return x +;\n}\n");
    Result r = compile_with("import mylib.broken;\nconst TM = 16;\n", "f(a)");
    CHECK(r.code == 1);
    CHECK(r.err.find("mylib/broken.etl:2:") != std::string::npos);
  }
  SUBCASE("a type error in a module's fn, with the call chain") {
    write(lib_dir() / "mylib" / "typed.etl",
          "fn idx(x) {\n  return cdiv(x, 2);\n}\nfn outer(x) {\n  return idx(x) + 1.0;\n}\n");
    Result r = compile_with("import mylib.typed;\nconst TM = 16;\n", "outer(a)", "taskgraph");
    CHECK(r.code == 1);
    size_t e = r.err.find("mylib/typed.etl:2:10: error:");
    size_t n1 = r.err.find("mylib/typed.etl:5:10: note: in call to 'idx' here");
    size_t n2 = r.err.find("main.etl:7:29: note: in call to 'outer' here");
    INFO(r.err);
    CHECK(e != std::string::npos);
    CHECK(n1 != std::string::npos);
    CHECK(n2 != std::string::npos);
    CHECK((e < n1 && n1 < n2));
  }
  SUBCASE("a missing module names every searched path") {
    Result r = compile_with("import mylib.nothere;\nconst TM = 16;\n", "a");
    CHECK(r.code == 1);
    CHECK(r.err.find((lib_dir() / "mylib" / "nothere.etl").string()) != std::string::npos);
    CHECK(r.err.find(default_stdlib_dir() + "/mylib/nothere.etl") != std::string::npos);
  }
  SUBCASE("two modules defining one name") {
    write(lib_dir() / "mylib" / "one.etl", "fn same(x) {\n  return x;\n}\n");
    write(lib_dir() / "mylib" / "two.etl", "fn same(x) {\n  return x;\n}\n");
    Result r = compile_with("import mylib.one;\nimport mylib.two;\nconst TM = 16;\n", "same(a)");
    CHECK(r.code == 1);
    CHECK(r.err.find("mylib/two.etl:1:4: error: 'same' is defined in both") != std::string::npos);
    CHECK(r.err.find("mylib/one.etl:1:4: note: 'same' declared here") != std::string::npos);
  }
}

} // namespace
} // namespace etl
