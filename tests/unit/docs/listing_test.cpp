//===- tests/unit/docs/listing_test.cpp - Listings equal their files -------===//
//
// What this covers: a fenced block in a document that follows a line
//
//   <!-- listing: examples/rowsum/rowsum.etl -->
//
// shows that file, so its code must be the file's code: both sides compared
// line by line after dropping `//` comments (the file's header, the
// listing's annotations), trailing blanks and empty lines. A listing that
// leaves out `where N % 4 == 0`, or an example changed without its listing,
// fails here. Documents scanned: README.md, docs/*.md, grammar/*.md,
// examples/*/README.md, editors/vscode/README.md; README.md must have one.
//
//===----------------------------------------------------------------------===//
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const char kMarker[] = "<!-- listing: ";

std::string read(const fs::path &p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The code lines of `text`: `//` comments, trailing blanks and empty
/// lines dropped.
std::vector<std::string> code_lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t c = line.find("//");
    if (c != std::string::npos)
      line.erase(c);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
      line.pop_back();
    if (!line.empty())
      out.push_back(line);
  }
  return out;
}

struct Listing {
  std::string path; ///< the file it shows, from the marker
  unsigned line = 0;
  std::string body; ///< the fenced block's text, or empty with no fence
  bool fenced = false;
};

std::vector<Listing> listings(const std::string &doc) {
  std::vector<Listing> out;
  std::istringstream in(doc);
  std::string line;
  unsigned n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.rfind(kMarker, 0) != 0)
      continue;
    Listing l;
    l.line = n;
    size_t end = line.find(" -->");
    l.path = line.substr(sizeof kMarker - 1, end == std::string::npos ? std::string::npos
                                                                      : end - (sizeof kMarker - 1));
    if (std::getline(in, line) && (++n, line.rfind("```", 0) == 0)) {
      l.fenced = true;
      while (std::getline(in, line) && (++n, line.rfind("```", 0) != 0))
        l.body += line + "\n";
    }
    out.push_back(l);
  }
  return out;
}

std::vector<fs::path> documents(const fs::path &root) {
  std::vector<fs::path> docs = {root / "README.md", root / "editors" / "vscode" / "README.md"};
  for (const char *dir : {"docs", "grammar"})
    for (const auto &e : fs::directory_iterator(root / dir))
      if (e.path().extension() == ".md")
        docs.push_back(e.path());
  for (const auto &e : fs::directory_iterator(root / "examples"))
    if (fs::exists(e.path() / "README.md"))
      docs.push_back(e.path() / "README.md");
  return docs;
}

} // namespace

TEST_CASE("docs: every `<!-- listing: FILE -->` block shows FILE's code") {
  const fs::path root = ETL_SOURCE_DIR;
  size_t in_readme = 0;
  for (const fs::path &doc : documents(root)) {
    if (!fs::exists(doc))
      continue;
    for (const Listing &l : listings(read(doc))) {
      CAPTURE(doc.string());
      CAPTURE(l.line);
      CAPTURE(l.path);
      in_readme += doc == root / "README.md";
      REQUIRE_MESSAGE(l.fenced, "the line after a listing marker must open a ``` block");
      REQUIRE_MESSAGE(fs::exists(root / l.path), "the listed file does not exist");
      std::vector<std::string> want = code_lines(read(root / l.path));
      std::vector<std::string> got = code_lines(l.body);
      for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
        std::string w = i < want.size() ? want[i] : "<end of file>";
        std::string g = i < got.size() ? got[i] : "<end of listing>";
        CAPTURE(i);
        REQUIRE_MESSAGE(g == w, "code line " << i + 1 << " of the listing differs from the file:\n"
                                              << "  listing: " << g << "\n     file: " << w);
      }
    }
  }
  CHECK_MESSAGE(in_readme >= 1, "README.md shows examples/rowsum/rowsum.etl as a marked listing");
}

TEST_CASE("docs listings: the comparison sees a dropped `where` fact") {
  // The bug this test exists for: the README's rowsum lacked the file's
  // `where N % 4 == 0`. Comments and blank lines do not count; code does.
  std::string file = "// header\n\nkernel k<N: dim>(x: tensor<f32>[N]) where N % 4 == 0 {\n}\n";
  std::string shown = "kernel k<N: dim>(x: tensor<f32>[N]) {   // annotated\n}\n";
  CHECK(code_lines(file) != code_lines(shown));
  CHECK(code_lines(file) ==
        code_lines("kernel k<N: dim>(x: tensor<f32>[N]) where N % 4 == 0 {  // ok\n\n}\n"));
}
