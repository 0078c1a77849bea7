// Tests of etlc's command line (driver/cli.h) in process: --help and its
// exit codes, --version, `-` for stdin, -D, -MD/-MF, --color and
// --diagnostics-format=json|sarif (valid documents, also for command-line
// errors). The golden side of -D and json/sarif is in tests/diag and
// tests/golden (`// RUN: etlc ...`).
#include "cost/cost.h"
#include "driver/cli.h"
#include "driver/pipeline.h"
#include "driver_harness.h"

#include <llvm/Support/JSON.h>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace etl {
namespace {

using drivertest::etlc;
using drivertest::Result;
using drivertest::write;

fs::path temp_dir() { return drivertest::temp_dir("cli_test"); }

std::string read(const fs::path &p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const char kProgram[] = R"(const TM = 16;
const SCALE = 0.5;

kernel k<M: dim>(x: tensor<f32>[M], y: tensor<f32>[M]) {
  task t[i in 0 .. cdiv(M, TM)] {
    store(y[i * TM .. +TM], load(x[i * TM .. +TM]) * SCALE);
  }
}
)";

TEST_CASE("--help explains every option and ends with the exit codes") {
  Result r = etlc({"compile", "--help"});
  CHECK(r.code == kExitOk);
  for (const char *opt : {"-o,--output", "--target", "--emit", "-I,--import-dir", "-D,--define",
                          "--MD", "--MF", "--Werror", "-w", "--color", "--diagnostics-format",
                          "read the program from standard input"})
    CHECK_MESSAGE(r.out.find(opt) != std::string::npos, opt);
  size_t at = r.out.find(exit_code_help());
  REQUIRE(at != std::string::npos);
  CHECK(r.out.find_first_not_of(" \n", at + exit_code_help().size()) == std::string::npos);
  // The table names each ExitCode.
  for (int code : {kExitOk, kExitProgramError, kExitUsage, kExitInternalError})
    CHECK(exit_code_help().find("\n  " + std::to_string(code) + "  ") != std::string::npos);
  CHECK(etlc({"--help"}).out.find(exit_code_help()) != std::string::npos);
}

TEST_CASE("--gpu's help lists every GPU of cost/gpus.def") {
  Result r = etlc({"compile", "--help"});
  for (const GpuSpec &g : known_gpus()) {
    CAPTURE(g.id);
    CHECK(gpu_help().find(std::string(" ") + g.id) != std::string::npos);
  }
  // CLI11 prints the text as given, wrapped at most at its spaces.
  std::string flat = r.out;
  for (char &ch : flat)
    if (ch == '\n')
      ch = ' ';
  std::string words;
  for (std::istringstream is(flat); is >> flat;)
    words += flat + " ";
  std::string want;
  for (std::istringstream is(gpu_help()); is >> flat;)
    want += flat + " ";
  CHECK(words.find(want) != std::string::npos);
}

TEST_CASE("--version prints the project's version") {
  Result r = etlc({"--version"});
  CHECK(r.code == kExitOk);
  CHECK(r.out == version_text() + "\n");
  CHECK(r.out.rfind("etlc 0.", 0) == 0); // CMake's project(ETL VERSION ...)
}

TEST_CASE("`-` reads the program from stdin; diagnostics name it <stdin>") {
  Result r = etlc({"compile", "-", "--emit=ast"}, kProgram);
  CHECK(r.code == kExitOk);
  CHECK(r.out.find("(Const TM @1:1 (IntLit 16))") != std::string::npos);
  r = etlc({"compile", "-", "--emit=ast"}, "const TM = 16\n");
  CHECK(r.code == kExitProgramError);
  CHECK(r.err.rfind("<stdin>:1:14: error: expected ';'", 0) == 0);
}

TEST_CASE("-D NAME=VALUE overrides a const; the last one wins") {
  Result r = etlc({"compile", "-", "--emit=ast", "-D", "TM=32", "-DSCALE=0.25"}, kProgram);
  CHECK(r.code == kExitOk);
  CHECK(r.out.find("(Const TM @1:1 (IntLit 32))") != std::string::npos);
  CHECK(r.out.find("(Const SCALE @2:1 (FloatLit 0.25))") != std::string::npos);
  r = etlc({"compile", "-", "--emit=ast", "-D", "TM=8", "-D", "TM=-4"}, kProgram);
  CHECK(r.code == kExitOk);
  CHECK(r.out.find("(Const TM @1:1 (IntLit -4))") != std::string::npos);
  // The value takes effect: a zero tile size is then the program's error
  // at the const, after the -D is accepted.
  r = etlc({"compile", "-", "--emit=taskgraph", "-D", "TM=0"}, kProgram);
  CHECK(r.code == kExitProgramError);
  CHECK(r.err.find("<stdin>:") != std::string::npos);
  // Bad -D values are usage errors (exit 2) with a note at the const.
  for (const char *d : {"TM", "TM=", "9X=1", "TX=1", "TM=1.5", "TM=0x10", "SCALE=abc", "SCALE=inf",
                        "TM=99999999999999999999", "SCALE=1e999"}) {
    r = etlc({"compile", "-", "--emit=taskgraph", "-D", d}, kProgram);
    INFO(d << ": " << r.err);
    CHECK(r.code == kExitUsage);
    CHECK(r.err.rfind("etlc: error: -D ", 0) == 0);
  }
}

TEST_CASE("etlc tune lists the allowed combinations and prunes what fails; unranked without sm_*") {
  fs::path f = temp_dir() / "tune.etl";
  write(f, R"(const TN = 64 in [32, 64, 512];
const TM = 8 in [8, 16] where TM * TN <= 4096;

kernel big<N: dim>(x: tensor<f32>[N, N], y: tensor<f32>[N, N]) {
  task t[i in 0 .. cdiv(N, TN)] {
    store(y[i * TN .. +TN, 0 .. +TN], load(x[i * TN .. +TN, 0 .. +TN]) * 2.0);
  }
}
)");
  Result r = etlc({"tune", f.string(), "--target", "sim"});
  INFO(r.out << r.err);
  CHECK(r.code == kExitOk);
  CHECK(r.out.find("combinations: 5 of 6 satisfy the constraints") != std::string::npos);
  CHECK(r.out.find("(no GPU target: spills are the register estimate's only)") !=
        std::string::npos);
  CHECK(r.out.find("  kept    TN=32 TM=8\n") != std::string::npos);
  CHECK(r.out.find("  kept    TN=64 TM=16\n") != std::string::npos);
  CHECK(r.out.find("  pruned  TN=512 TM=8: TileTooLarge: a tile of shape [512, 512]") !=
        std::string::npos);
  CHECK(r.out.find("TN=512 TM=16") == std::string::npos); // the constraint excludes it
  CHECK(r.out.find("4 of 5 allowed combinations kept (6 candidate combinations)") !=
        std::string::npos);
  CHECK(r.out.find("(not ranked: no sm_* target for the model to read)") != std::string::npos);
  CHECK(r.err.find("tune: [5/5] TN=512 TM=8: pruned: TileTooLarge") != std::string::npos);
  r = etlc({"tune", (temp_dir() / "none.etl").string()});
  CHECK(r.code == kExitUsage);
}

TEST_CASE("--color: clang's colours when asked, or auto on a terminal without NO_COLOR") {
  const std::string broken = "const TM = 16\n";
  Result r = etlc({"compile", "-", "--emit=ast", "--color=always"}, broken);
  CHECK(r.err.find("\033[0;1;31merror: \033[0m") != std::string::npos);
  CHECK(r.err.find("\033[0;1;32m^") != std::string::npos);
  CHECK(etlc({"compile", "-", "--emit=ast"}, broken).err.find('\033') == std::string::npos);
  CHECK(etlc({"compile", "-", "--emit=ast", "--color=never"}, broken, true).err.find('\033') ==
        std::string::npos);
  // The last --color wins (the editor task passes --color=never first).
  CHECK(etlc({"compile", "-", "--emit=ast", "--color=always", "--color=never"}, broken)
            .err.find('\033') == std::string::npos);
  CHECK(use_color("auto", true, nullptr));
  CHECK(use_color("auto", true, ""));
  CHECK_FALSE(use_color("auto", true, "1"));
  CHECK_FALSE(use_color("auto", false, nullptr));
  CHECK(use_color("always", false, "1"));
  CHECK_FALSE(use_color("never", true, nullptr));
}

/// Parses `text` as JSON; fails the test if it is not one document.
llvm::json::Value parse_json(const std::string &text) {
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(text);
  if (!v) {
    FAIL_CHECK("not JSON: " << llvm::toString(v.takeError()) << "\n" << text);
    return nullptr;
  }
  return std::move(*v);
}

TEST_CASE("--diagnostics-format=json|sarif: one valid document for any failure") {
  std::string missing = (temp_dir() / "missing.etl").string();
  std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"compile", "-", "--emit=taskgraph"}, "const TM = 16\n"},            // syntax
      {{"compile", "-", "--emit=taskgraph", "-D", "TM=x"}, kProgram},       // -D
      {{"compile", missing, "--emit=taskgraph"}, ""},                       // unreadable
      {{"compile", "-", "--emit=nope"}, kProgram},                          // bad flag
      {{"compile", "-", "--emit=taskgraph", "--target", "sm_1"}, kProgram}, // bad target
      {{"compile", "-", "--emit=taskgraph", "--threads", "33"}, kProgram},  // bad value
      {{"compile", "-", "-MD", "--emit=taskgraph"}, kProgram},              // -MD, no -o
      {{"compile", "-", "--emit=taskgraph"}, kProgram},                     // success
  };
  for (auto &[args, text] : cases) {
    for (const char *fmt : {"json", "sarif"}) {
      std::vector<std::string> a = args;
      a.push_back(std::string("--diagnostics-format=") + fmt);
      Result r = etlc(a, text);
      INFO(fmt << " " << a[1] << " " << a[2] << ": " << r.err);
      if (&args == &cases.back().first)
        CHECK(r.code == kExitOk);
      else
        CHECK(r.code != kExitOk);
      llvm::json::Value v = parse_json(r.err);
      const llvm::json::Object *o = v.getAsObject();
      REQUIRE(o);
      if (std::string(fmt) == "json") {
        const llvm::json::Array *ds = o->getArray("diagnostics");
        REQUIRE(ds);
        CHECK(o->getInteger("errors") == int64_t(ds->size()));
        for (const llvm::json::Value &d : *ds) {
          CHECK(d.getAsObject()->getString("kind"));
          CHECK(d.getAsObject()->getString("message"));
        }
        continue;
      }
      CHECK(o->getString("version") == llvm::StringRef("2.1.0"));
      const llvm::json::Object *run = (*o->getArray("runs"))[0].getAsObject();
      const llvm::json::Object *driver = run->getObject("tool")->getObject("driver");
      CHECK(driver->getString("name") == llvm::StringRef("etlc"));
      // rules: exactly the kinds the results use, each result's ruleIndex
      // pointing at its rule.
      std::set<std::string> rule_ids, used;
      const llvm::json::Array *rules = driver->getArray("rules");
      for (const llvm::json::Value &rule : *rules)
        rule_ids.insert(rule.getAsObject()->getString("id")->str());
      for (const llvm::json::Value &res : *run->getArray("results")) {
        const llvm::json::Object *ro = res.getAsObject();
        std::string id = ro->getString("ruleId")->str();
        used.insert(id);
        int64_t index = *ro->getInteger("ruleIndex");
        CHECK((*rules)[size_t(index)].getAsObject()->getString("id")->str() == id);
      }
      CHECK(rule_ids == used);
      CHECK(rule_ids.size() == rules->size());
    }
  }
}

TEST_CASE("sarif: a location's uri is the path, percent-encoded") {
  Result r = etlc({"compile", "-", "--emit=ast", "--diagnostics-format=sarif"}, "const TM = 16\n");
  CHECK(r.code == kExitProgramError);
  CHECK(r.err.find("\"uri\": \"%3Cstdin%3E\"") != std::string::npos);
  r = etlc({"compile", "-", "--emit=ast", "--diagnostics-format=json"}, "const TM = 16\n");
  CHECK(r.err.find("\"file\": \"<stdin>\"") != std::string::npos);
}

TEST_CASE("depfile_text escapes paths for make") {
  CHECK(depfile_text("a b.etlb", {"x.etl", "lib/$m#.etl"}) ==
        "a\\ b.etlb: \\\n  x.etl \\\n  lib/$$m\\#.etl\n\nlib/$$m\\#.etl:\n");
}

TEST_CASE("-MD writes <o>.d naming the input and every imported module; -MF moves it") {
  fs::path d = temp_dir() / "deps";
  fs::remove_all(d);
  std::string module =
      write(d / "lib" / "my" / "scale.etl", "fn twice(x) {\n  return x * 2.0;\n}\n");
  std::string prog =
      write(d / "prog.etl", "import my.scale;\nimport std.math;\n" +
                                std::string(kProgram).replace(std::string(kProgram).find("* SCALE"),
                                                              7, "* twice(SCALE)"));
  std::string out = (d / "prog.etlb").string();
  Result r =
      etlc({"compile", prog, "-o", out, "--target", "sim", "-I", (d / "lib").string(), "-MD"});
  REQUIRE_MESSAGE(r.code == kExitOk, r.err);
  std::string dep = read(out + ".d");
  CHECK(dep.rfind(out + ": \\\n  " + prog + " \\\n", 0) == 0);
  CHECK(dep.find("  " + module) != std::string::npos);
  CHECK(dep.find("stdlib/std/math.etl") != std::string::npos);
  CHECK(dep.find("\n" + module + ":\n") != std::string::npos); // -MP-style rule

  std::string mf = (d / "custom.d").string();
  r = etlc({"compile", prog, "-o", out, "--target", "sim", "-I", (d / "lib").string(), "-MF", mf});
  CHECK(r.code == kExitOk);
  CHECK(read(mf) == dep);

  // Nothing is written on failure, and -MD needs -o.
  fs::remove(mf);
  r = etlc({"compile", prog, "-o", out, "-MF", mf}); // my.scale not found without -I
  CHECK(r.code == kExitProgramError);
  CHECK_FALSE(fs::exists(mf));
  r = etlc({"compile", prog, "--emit=ast", "-MD"});
  CHECK(r.code == kExitUsage);
  CHECK(r.err.find("-MD and -MF need -o FILE") != std::string::npos);

  // make reads it: touching the imported module makes the artifact stale.
  if (std::system("make --version > /dev/null 2>&1") != 0) {
    MESSAGE("skipping the make check: no make on PATH");
    return;
  }
  write(d / "Makefile", "include " + out + ".d\n" + out + ":\n\ttrue\n");
  // The artifact is newer than its prerequisites, then the module is newer.
  fs::last_write_time(out, fs::file_time_type::clock::now());
  fs::last_write_time(module, fs::file_time_type::clock::now() - std::chrono::hours(1));
  fs::last_write_time(prog, fs::file_time_type::clock::now() - std::chrono::hours(1));
  std::string make = "make -q -C " + d.string() + " -f Makefile " + out + " > /dev/null 2>&1";
  CHECK(std::system(make.c_str()) == 0); // up to date
  fs::last_write_time(module, fs::file_time_type::clock::now() + std::chrono::hours(1));
  CHECK(std::system(make.c_str()) != 0); // needs rebuilding
}

} // namespace
} // namespace etl
