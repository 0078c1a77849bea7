//===- diag/source.cpp - Source files and locations -----------------------===//
//
// Implements SourceManager: it owns file texts and maps byte offsets to
// 1-based line:column through a per-file table of line starts.
//
//===----------------------------------------------------------------------===//
#include "diag/source.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace etl {

SourceRange join(SourceRange a, SourceRange b) {
  if (!a.valid())
    return b;
  if (!b.valid())
    return a;
  SourceRange r;
  r.begin = a.begin.offset <= b.begin.offset ? a.begin : b.begin;
  r.end = a.end.offset >= b.end.offset ? a.end : b.end;
  return r;
}

FileId SourceManager::add(std::string path, std::string text) {
  File f;
  f.path = std::move(path);
  f.text = std::move(text);
  f.line_starts.push_back(0);
  for (size_t i = 0; i < f.text.size(); ++i)
    if (f.text[i] == '\n')
      f.line_starts.push_back(static_cast<uint32_t>(i + 1));
  files_.push_back(std::move(f));
  return static_cast<FileId>(files_.size() - 1);
}

bool SourceManager::load(const std::string &path, FileId &id, std::string &err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    err = "no such file or not readable";
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    err = "read error";
    return false;
  }
  id = add(path, ss.str());
  return true;
}

std::string_view SourceManager::line_text(FileId f, uint32_t line) const {
  const File &file = files_[f];
  if (line == 0 || line > file.line_starts.size())
    return {};
  uint32_t begin = file.line_starts[line - 1];
  uint32_t end = line < file.line_starts.size() ? file.line_starts[line] - 1
                                                : static_cast<uint32_t>(file.text.size());
  if (end > begin && file.text[end - 1] == '\r')
    --end;
  return std::string_view(file.text).substr(begin, end - begin);
}

SourceLoc SourceManager::loc(FileId f, uint32_t offset) const {
  const File &file = files_[f];
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(file.text.size()));
  auto it = std::upper_bound(file.line_starts.begin(), file.line_starts.end(), offset);
  uint32_t line = static_cast<uint32_t>(it - file.line_starts.begin()); // >= 1
  SourceLoc l;
  l.file = f;
  l.line = line;
  l.col = offset - file.line_starts[line - 1] + 1;
  l.offset = offset;
  return l;
}

SourceLoc SourceManager::loc_line_col0(FileId f, uint32_t line, uint32_t col0) const {
  const File &file = files_[f];
  if (line == 0)
    line = 1;
  if (line > file.line_starts.size())
    return loc(f, static_cast<uint32_t>(file.text.size()));
  return loc(f, file.line_starts[line - 1] + col0);
}

} // namespace etl
