//===- tests/unit/golden/golden_test.cpp - Golden tests in .etl files -----===//
//
// Runs every tests/diag/*.etl and tests/golden/*.etl through the compiler in
// process and compares what it prints with the file's own expectations:
//
//   // RUN: --emit=ast          (first line; tests/diag files default to
//                               rendering diagnostics)
//   ...program...
//   // CHECK: <one line of expected output>
//   // CHECK: <the next line>
//
// The output must equal the concatenation of the CHECK lines exactly. Paths
// print as the file name only, so expectations do not depend on the machine.
// CHECK lines go at the end of the file, so rewriting them never moves the
// code they describe.
//
// ETL_UPDATE_GOLDEN=1 rewrites the CHECK lines from the actual output instead
// of comparing (scripts/update-golden.sh). ETL_GOLDEN_FILTER=<text> runs (and
// updates) only the files whose name contains <text>.
//
// Paths of files under the source tree (modules of stdlib/, imported) print
// relative to it: `stdlib/std/math.etl`.
//
// Emitters are a table from the --emit name to a function; add taskgraph, dot
// and so on there.
//
// A first line `// RUN: etlc ARGS...` runs the whole command line instead
// (driver/cli.h, in process, `%s` standing for this file's path, stderr not
// a terminal): the expected output is etlc's stdout, then its stderr, then
// `[exit N]`. Tests of flags (-D, --diagnostics-format, driver errors) use it.
//
//===----------------------------------------------------------------------===//
#include "ast/ast.h"
#include "cost/cost.h"
#include "diag/diag.h"
#include "driver/cli.h"
#include "driver/pipeline.h"
#include "driver/tunables.h"
#include "frontend/parser.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace {

using Emitter = std::function<std::string(const std::string &name, const std::string &text)>;

/// Runs the front half of the pipeline (parse, sema, task graph, schedule)
/// exactly as etlc does; diagnostics stay in `c.diag`.
bool front(etl::Compilation &c, const std::string &name, const std::string &text) {
  c.file = c.sm.add(name, text);
  return etl::compile_front(c);
}

/// The tile stage after the front ones (128 threads per CTA): with `ir`
/// the IR before and after layout assignment, then the diagnostics
/// (remarks included).
std::string tile_stage(const std::string &name, const std::string &text, bool ir) {
  etl::Compilation c;
  if (!front(c, name, text))
    return c.diag.render();
  std::string out, error;
  if (!etl::emit_tile(c, 128, out, error))
    return "internal error: " + error + "\n";
  return (ir ? out : "") + c.diag.render();
}

/// `--emit=<name>` → what the golden test prints.
const std::map<std::string, Emitter> &emitters() {
  static const std::map<std::string, Emitter> table = {
      // Diagnostics only (the default for tests/diag).
      {"diag",
       [](const std::string &name, const std::string &text) {
         etl::Compilation c;
         front(c, name, text);
         return c.diag.render();
       }},
      // The AST after parsing (diagnostics instead if there were errors).
      {"ast",
       [](const std::string &name, const std::string &text) {
         etl::Compilation c;
         c.file = c.sm.add(name, text);
         if (!etl::compile_front(c, "ast"))
           return c.diag.render();
         return etl::print_ast(*c.program, c.sm);
       }},
      // The AST with fn calls expanded (diagnostics instead if there were
      // errors).
      {"inline",
       [](const std::string &name, const std::string &text) {
         etl::Compilation c;
         c.file = c.sm.add(name, text);
         if (!etl::compile_front(c, "inline"))
           return c.diag.render();
         return etl::print_ast(*c.program, c.sm);
       }},
      // The task graph (--emit=taskgraph) and its Graphviz form (--emit=dot).
      {"taskgraph",
       [](const std::string &name, const std::string &text) {
         etl::Compilation c;
         if (!front(c, name, text))
           return c.diag.render();
         return etl::print_task_graph(c.graph) + c.diag.render();
       }},
      // --emit=tunables: the tunable consts and their combinations.
      {"tunables",
       [](const std::string &name, const std::string &text) {
         etl::Compilation c;
         if (!front(c, name, text))
           return c.diag.render();
         return etl::print_tunables(*c.program, c.sm) + c.diag.render();
       }},
      // --emit=cost without a binding: the symbolic work and traffic.
      {"cost",
       [](const std::string &name, const std::string &text) {
         etl::Compilation c;
         if (!front(c, name, text))
           return c.diag.render();
         return etl::print_cost(etl::estimate_cost(c.program->kernels[0], c.graph), nullptr,
                                *etl::find_gpu("h100-sxm"), false);
       }},
      // --emit=tile: the IR before and after layout assignment, then the
      // remarks.
      {"tile", [](const std::string &name,
                  const std::string &text) { return tile_stage(name, text, true); }},
      // The diagnostics after the tile stage (remarks included), without the
      // IR: for tests/diag files of remark kinds.
      {"remarks", [](const std::string &name,
                     const std::string &text) { return tile_stage(name, text, false); }},
      {"dot",
       [](const std::string &name, const std::string &text) {
         etl::Compilation c;
         if (!front(c, name, text))
           return c.diag.render();
         return etl::print_dot(c.graph);
       }},
  };
  return table;
}

const char kCheck[] = "// CHECK:";
const char kRun[] = "// RUN: --emit=";
const char kRunEtlc[] = "// RUN: etlc ";

/// `// RUN: etlc ARGS...`: etlc's stdout, stderr and exit code.
std::string run_etlc(const std::string &first_line, const fs::path &path) {
  std::istringstream words(first_line.substr(sizeof kRunEtlc - 1));
  std::vector<std::string> args;
  for (std::string w; words >> w;) {
    for (size_t at = w.find("%s"); at != std::string::npos; at = w.find("%s"))
      w.replace(at, 2, path.string());
    args.push_back(w);
  }
  std::istringstream in;
  std::ostringstream out, err;
  int code = etl::run_cli(args, in, out, err, false);
  return out.str() + err.str() + "[exit " + std::to_string(code) + "]\n";
}

std::string read_file(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split_lines(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l))
    lines.push_back(l);
  return lines;
}

/// `text` with every "<source dir>/" removed, so imported modules' paths
/// do not depend on where the tree is checked out.
std::string relative_paths(std::string text) {
  const std::string dir = std::string(ETL_SOURCE_DIR) + "/";
  for (size_t at = text.find(dir); at != std::string::npos; at = text.find(dir, at))
    text.erase(at, dir.size());
  return text;
}

bool is_check(const std::string &l) { return l.rfind(kCheck, 0) == 0; }

/// The expected output: the CHECK lines' text after "// CHECK: ".
std::string expected_output(const std::string &text) {
  std::string out;
  for (const std::string &l : split_lines(text)) {
    if (!is_check(l))
      continue;
    std::string rest = l.substr(sizeof kCheck - 1);
    if (!rest.empty() && rest[0] == ' ')
      rest.erase(0, 1);
    out += rest + "\n";
  }
  return out;
}

/// The file with its CHECK lines replaced by `output`, at the end.
std::string with_checks(const std::string &text, const std::string &output) {
  std::vector<std::string> lines;
  for (const std::string &l : split_lines(text))
    if (!is_check(l))
      lines.push_back(l);
  while (!lines.empty() && lines.back().empty())
    lines.pop_back();
  std::string out;
  for (const std::string &l : lines)
    out += l + "\n";
  out += "\n";
  for (const std::string &l : split_lines(output))
    out += l.empty() ? std::string(kCheck) + "\n" : std::string(kCheck) + " " + l + "\n";
  return out;
}

std::string emit_mode(const std::string &text, const std::string &dflt) {
  std::string first = text.substr(0, text.find('\n'));
  if (first.rfind(kRun, 0) == 0) {
    std::string m = first.substr(sizeof kRun - 1);
    while (!m.empty() && (m.back() == ' ' || m.back() == '\r'))
      m.pop_back();
    return m;
  }
  return dflt;
}

std::vector<fs::path> etl_files(const std::string &dir) {
  std::vector<fs::path> files;
  fs::path d = fs::path(ETL_SOURCE_DIR) / dir;
  if (fs::exists(d))
    for (const fs::directory_entry &e : fs::directory_iterator(d))
      if (e.path().extension() == ".etl")
        files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

void run_dir(const std::string &dir, const std::string &default_mode) {
  const char *update_env = std::getenv("ETL_UPDATE_GOLDEN");
  const bool update = update_env && std::string(update_env) != "0";
  const char *filter = std::getenv("ETL_GOLDEN_FILTER");
  std::vector<fs::path> files = etl_files(dir);
  for (const fs::path &path : files) {
    const std::string name = path.filename().string();
    if (filter && name.find(filter) == std::string::npos)
      continue;
    std::string text = read_file(path);
    const std::string first = text.substr(0, text.find('\n'));
    const bool etlc = first.rfind(kRunEtlc, 0) == 0;
    const std::string mode = etlc ? "etlc" : emit_mode(text, default_mode);
    auto it = emitters().find(mode);
    INFO(dir << "/" << name << " (--emit=" << mode << ")");
    REQUIRE_MESSAGE((etlc || it != emitters().end()), "unknown --emit mode '" << mode << "'");
    auto produce = [&] { return etlc ? run_etlc(first, path) : it->second(name, text); };
    if (update) {
      // Twice at most: moving CHECK lines to the end can move the code.
      for (int round = 0; round < 2; ++round) {
        std::string next = with_checks(text, relative_paths(produce()));
        if (next == text)
          break;
        text = next;
        std::ofstream(path, std::ios::binary) << text;
      }
    }
    const std::string expected = expected_output(text);
    const std::string actual = relative_paths(produce());
    CHECK_MESSAGE(!expected.empty(), "no CHECK lines (run scripts/update-golden.sh)");
    if (actual != expected)
      FAIL_CHECK("output differs\n--- expected ---\n" << expected << "--- actual ---\n" << actual);
  }
}

} // namespace

TEST_CASE("golden: tests/diag/*.etl (diagnostics)") { run_dir("tests/diag", "diag"); }

TEST_CASE("golden: tests/golden/*.etl (--emit dumps)") { run_dir("tests/golden", "ast"); }

TEST_CASE("golden: CHECK lines round-trip") {
  std::string text = "const A = 1;\n";
  std::string out = "a.etl:1:1: error: x\nconst A = 1;\n^~~~~\n\n  indented\n";
  std::string file = with_checks(text, out);
  CHECK(file.rfind(text, 0) == 0);
  CHECK(expected_output(file) == out);
  CHECK(with_checks(file, out) == file);
}
