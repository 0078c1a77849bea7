//===- diag/source.h - Source files and locations -------------------------===//
//
// What this owns: the text of every file the compiler reads and the mapping
// from byte offsets to line:column. Every AST node and every diagnostic
// carries a SourceRange into a file held here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace etl {

using FileId = uint32_t;

/// A position in a file: 1-based line and column (columns count bytes).
struct SourceLoc {
  FileId file = 0;
  uint32_t line = 0; ///< 0 means "no location"
  uint32_t col = 0;
  uint32_t offset = 0; ///< byte offset into the file
  bool valid() const { return line != 0; }
};

/// A half-open range [begin, end) within one file.
struct SourceRange {
  SourceLoc begin, end;
  bool valid() const { return begin.valid(); }
};

/// Joins two ranges of the same file into the smallest one covering both.
SourceRange join(SourceRange a, SourceRange b);

/// Owns the contents of source files.
class SourceManager {
public:
  /// Adds a file from memory; returns its id.
  FileId add(std::string path, std::string text);
  /// Reads a file from disk; returns false (and leaves `err`) on failure.
  bool load(const std::string &path, FileId &id, std::string &err);

  const std::string &path(FileId f) const { return files_[f].path; }
  /// How many files were added or loaded (ids are 0 .. file_count() - 1).
  size_t file_count() const { return files_.size(); }
  const std::string &text(FileId f) const { return files_[f].text; }
  /// The text of line `line` (1-based) without its newline.
  std::string_view line_text(FileId f, uint32_t line) const;
  /// Location of a byte offset.
  SourceLoc loc(FileId f, uint32_t offset) const;
  /// Location of 1-based line and 0-based column (ANTLR's convention).
  SourceLoc loc_line_col0(FileId f, uint32_t line, uint32_t col0) const;

private:
  struct File {
    std::string path, text;
    std::vector<uint32_t> line_starts;
  };
  std::vector<File> files_;
};

} // namespace etl
