//===- tests/unit/diag/coverage_test.cpp - Every diagnostic has a test ----===//
//
// Fails if an Error, Warning or Remark kind of diag/kinds.def has no golden test
// under tests/diag/ whose CHECK lines contain its message (the literal parts
// of its format, in order, on one `error:`/`warning:`/`remark:` line).
//
//===----------------------------------------------------------------------===//
#include "diag/diag.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using namespace etl;

namespace {

/// The expected-output lines of every tests/diag/*.etl file.
std::vector<std::string> all_check_lines() {
  std::vector<std::string> lines;
  fs::path dir = fs::path(ETL_SOURCE_DIR) / "tests" / "diag";
  if (!fs::exists(dir))
    return lines;
  for (const fs::directory_entry &e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".etl")
      continue;
    std::ifstream in(e.path());
    std::string l;
    while (std::getline(in, l))
      if (l.rfind("// CHECK:", 0) == 0)
        lines.push_back(l);
  }
  return lines;
}

/// Whether `line` shows a diagnostic of format `fmt` with `severity`.
bool matches(const std::string &line, const std::string &fmt, const std::string &severity) {
  size_t pos = line.find(severity + ": ");
  if (pos == std::string::npos)
    return false;
  pos += severity.size() + 2;
  // Literal pieces between {N} placeholders must appear in order.
  size_t i = 0;
  while (i <= fmt.size()) {
    size_t open = fmt.find('{', i);
    std::string piece = fmt.substr(i, open == std::string::npos ? std::string::npos : open - i);
    if (!piece.empty()) {
      size_t at = line.find(piece, pos);
      if (at == std::string::npos || (i == 0 && at != pos))
        return false;
      pos = at + piece.size();
    }
    if (open == std::string::npos)
      break;
    size_t close = fmt.find('}', open);
    if (close == std::string::npos)
      break;
    i = close + 1;
  }
  return true;
}

/// Kinds whose golden test is still to be written by the stage that owns
/// them. Remove an entry together with adding its test.
const std::set<std::string> kPending = {
    // A backstop behind sema's ScratchTooLarge: no known program reaches it
    // (driver_test checks that such a kernel is the program's error).
    "ResourceLimit",
    // A bug in etlc (a stage failing on a checked program, or an exception
    // escaping one): no correct compiler reaches it.
    "InternalCompilerError",
};

} // namespace

TEST_CASE("every error, warning and remark kind has a golden test in tests/diag") {
  std::vector<std::string> lines = all_check_lines();
  for (DiagId id : all_diag_ids()) {
    Severity s = diag_severity(id);
    if (s == Severity::Note || kPending.count(diag_name(id)))
      continue;
    std::string sev = s == Severity::Error     ? "error"
                      : s == Severity::Warning ? "warning"
                                               : "remark";
    bool found = false;
    for (const std::string &l : lines)
      found = found || matches(l, diag_format(id), sev);
    CHECK_MESSAGE(found, "no tests/diag/*.etl expects " << std::string(diag_name(id)) << " (\""
                                                        << std::string(diag_format(id)) << "\")");
  }
}

TEST_CASE("coverage matcher") {
  CHECK(matches("// CHECK: a.etl:1:2: error: use of undefined name 'x'",
                "use of undefined name '{0}'", "error"));
  CHECK_FALSE(matches("// CHECK: a.etl:1:2: error: redefinition of 'x'",
                      "use of undefined name '{0}'", "error"));
  CHECK(matches("// CHECK: a.etl:1:2: error: anything", "{0}", "error"));
  CHECK_FALSE(matches("// CHECK: a.etl:1:2: note: anything", "{0}", "error"));
}
