// The language reference cannot rot: every ```etl block of
// grammar/REFERENCE.md is a complete program that this test compiles with
// etlc's own driver for sm_90 and sim (an artifact is written, so every
// stage runs). A block whose first line is `// error: TEXT` must instead be
// rejected with a diagnostic containing TEXT; one whose first line is
// `// warning: TEXT` must compile with a warning containing TEXT. No other
// block may warn that its tiles would spill registers.
#include "driver/pipeline.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace etl {
namespace {

struct Block {
  int line = 0; ///< line of the opening fence in REFERENCE.md
  std::string text;
};

std::vector<Block> etl_blocks(const std::string &path) {
  std::ifstream in(path);
  std::vector<Block> blocks;
  std::string line;
  int n = 0;
  Block *cur = nullptr;
  while (std::getline(in, line)) {
    ++n;
    if (!cur && line.rfind("```etl", 0) == 0) {
      blocks.push_back(Block{n, ""});
      cur = &blocks.back();
    } else if (cur && line.rfind("```", 0) == 0) {
      cur = nullptr;
    } else if (cur) {
      cur->text += line + "\n";
    }
  }
  return blocks;
}

TEST_CASE("every example of the language reference compiles") {
  const std::string ref = std::string(ETL_SOURCE_DIR) + "/grammar/REFERENCE.md";
  std::vector<Block> blocks = etl_blocks(ref);
  REQUIRE(blocks.size() >= 10);
  fs::path dir = fs::path(ETL_TEST_BINARY_DIR) / "reference_test";
  fs::create_directories(dir);
  for (const Block &b : blocks) {
    std::string where = "grammar/REFERENCE.md:" + std::to_string(b.line);
    CAPTURE(where);
    std::string expect_error, expect_warning;
    if (b.text.rfind("// error: ", 0) == 0)
      expect_error = b.text.substr(10, b.text.find('\n') - 10);
    if (b.text.rfind("// warning: ", 0) == 0)
      expect_warning = b.text.substr(12, b.text.find('\n') - 12);
    fs::path src = dir / ("ref_" + std::to_string(b.line) + ".etl");
    std::ofstream(src) << b.text;
    CompileOptions o;
    o.input = src.string();
    o.output = (dir / ("ref_" + std::to_string(b.line) + ".etlb")).string();
    o.targets = {"sm_90", "sim"};
    std::ostringstream out, err;
    int code = compile(o, out, err);
    CAPTURE(err.str());
    if (!expect_warning.empty()) {
      CHECK(code == 0);
      CHECK(err.str().find("warning: ") != std::string::npos);
      CHECK(err.str().find(expect_warning) != std::string::npos);
    } else if (expect_error.empty()) {
      CHECK(code == 0);
      CHECK(err.str().find("for the tile elements it keeps live") == std::string::npos);
    } else {
      CHECK(code == 1);
      CHECK(err.str().find(expect_error) != std::string::npos);
    }
  }
}

} // namespace
} // namespace etl
