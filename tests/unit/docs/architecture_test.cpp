//===- tests/unit/docs/architecture_test.cpp - docs/ARCHITECTURE.md paths --===//
//
// What this covers: every repository path that docs/ARCHITECTURE.md names in
// backquotes exists, so the map of the tree cannot rot. A span is a path
// when it starts with a top-level folder of the repository; a `<placeholder>`
// in its last component (`tests/diag/fail_<what>.etl`) checks the folder.
//
//===----------------------------------------------------------------------===//
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// The backquoted spans of `text` outside ``` blocks.
std::vector<std::string> backquoted(const std::string &text) {
  std::vector<std::string> spans;
  std::istringstream in(text);
  std::string line;
  bool fenced = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    if (fenced)
      continue;
    size_t at = 0;
    while ((at = line.find('`', at)) != std::string::npos) {
      size_t end = line.find('`', at + 1);
      if (end == std::string::npos)
        break;
      spans.push_back(line.substr(at + 1, end - at - 1));
      at = end + 1;
    }
  }
  return spans;
}

bool is_repo_path(const std::string &s) {
  for (const char *top : {"compiler/", "runtime/", "tests/", "grammar/", "stdlib/", "examples/",
                          "docs/", "scripts/", "editors/"})
    if (s.rfind(top, 0) == 0)
      return s.find(' ') == std::string::npos;
  return false;
}

} // namespace

TEST_CASE("docs/ARCHITECTURE.md: every path it names exists") {
  const fs::path root = ETL_SOURCE_DIR;
  std::ifstream in(root / "docs" / "ARCHITECTURE.md");
  REQUIRE(in);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int checked = 0;
  for (const std::string &span : backquoted(text)) {
    if (!is_repo_path(span))
      continue;
    fs::path p = root / span;
    if (span.find('<') != std::string::npos)
      p = p.parent_path();
    INFO("docs/ARCHITECTURE.md names `" << span << "`");
    CHECK(fs::exists(p));
    ++checked;
  }
  // The stages, the tables and the runtime files: a scan that finds few
  // paths has stopped reading the document.
  CHECK(checked >= 30);
}

TEST_CASE("docs/ARCHITECTURE.md: the path scan rejects a missing path") {
  // The check above can fail: a made-up path is not found.
  CHECK(is_repo_path("compiler/sema/no_such_file.cpp"));
  CHECK_FALSE(fs::exists(fs::path(ETL_SOURCE_DIR) / "compiler/sema/no_such_file.cpp"));
  CHECK_FALSE(is_repo_path("etl_main(uint64_t *args)"));
  CHECK(backquoted("a `x/y` b `c`\n```\n`z`\n```\n") == std::vector<std::string>{"x/y", "c"});
}
