//===- lsp/text.cpp - LSP positions and file URIs ----------------------------===//
//
// UTF-16 columns are counted by decoding UTF-8 (a 4-byte sequence is two
// UTF-16 units); bytes that are not valid UTF-8 count one unit each.
//
//===----------------------------------------------------------------------===//
#include "lsp/text.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <cctype>

namespace etl::lsp {
namespace {

/// The length in bytes of the UTF-8 sequence starting with `c`, and the
/// UTF-16 units it takes.
void utf8_step(unsigned char c, unsigned &bytes, unsigned &units) {
  if (c < 0x80 || c < 0xC0) { // ASCII, or a stray continuation byte
    bytes = 1, units = 1;
  } else if (c < 0xE0) {
    bytes = 2, units = 1;
  } else if (c < 0xF0) {
    bytes = 3, units = 1;
  } else {
    bytes = 4, units = 2;
  }
}

uint32_t line_start(std::string_view text, int64_t line, bool &ok) {
  uint32_t pos = 0;
  for (int64_t l = 0; l < line; ++l) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      ok = false;
      return 0;
    }
    pos = uint32_t(nl + 1);
  }
  ok = true;
  return pos;
}

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

} // namespace

std::optional<uint32_t> offset_of(std::string_view text, int64_t line, int64_t character) {
  if (line < 0 || character < 0 || line > int64_t(text.size()))
    return std::nullopt;
  bool ok = false;
  uint32_t pos = line_start(text, line, ok);
  if (!ok)
    return std::nullopt;
  int64_t units = 0;
  while (pos < text.size() && text[pos] != '\n' && units < character) {
    unsigned b = 1, u = 1;
    utf8_step(static_cast<unsigned char>(text[pos]), b, u);
    pos = uint32_t(std::min<size_t>(text.size(), pos + b));
    units += u;
  }
  return pos;
}

llvm::json::Object position_of(std::string_view text, uint32_t offset) {
  if (offset > text.size())
    offset = uint32_t(text.size());
  int64_t line = 0;
  size_t start = 0;
  for (size_t i = 0; i < offset; ++i)
    if (text[i] == '\n')
      ++line, start = i + 1;
  int64_t units = 0;
  for (size_t i = start; i < offset;) {
    unsigned b = 1, u = 1;
    utf8_step(static_cast<unsigned char>(text[i]), b, u);
    i += b;
    units += u;
  }
  return llvm::json::Object{{"line", line}, {"character", units}};
}

llvm::json::Object range_of(std::string_view text, const SourceRange &r) {
  if (!r.valid())
    return llvm::json::Object{{"start", position_of(text, 0)}, {"end", position_of(text, 0)}};
  uint32_t end = r.end.valid() && r.end.offset >= r.begin.offset ? r.end.offset : r.begin.offset;
  return llvm::json::Object{{"start", position_of(text, r.begin.offset)},
                            {"end", position_of(text, end)}};
}

std::optional<std::string> uri_to_path(const std::string &uri) {
  const std::string scheme = "file://";
  if (uri.compare(0, scheme.size(), scheme) != 0)
    return std::nullopt;
  std::string rest = uri.substr(scheme.size());
  // file://host/path: only the local host (empty or localhost) is a path.
  size_t slash = rest.find('/');
  if (slash == std::string::npos)
    return std::nullopt;
  std::string host = rest.substr(0, slash);
  if (!host.empty() && host != "localhost")
    return std::nullopt;
  std::string path;
  for (size_t i = slash; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && std::isxdigit(static_cast<unsigned char>(rest[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(rest[i + 2]))) {
      path += char(std::stoi(rest.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      path += rest[i];
    }
  }
  return path;
}

std::string path_to_uri(const std::string &path) {
  llvm::SmallString<256> abs(path);
  llvm::sys::fs::make_absolute(abs);
  llvm::sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
  static const char *hex = "0123456789ABCDEF";
  std::string uri = "file://";
  for (unsigned char c : abs.str()) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      uri += char(c);
    } else {
      uri += '%';
      uri += hex[c >> 4];
      uri += hex[c & 15];
    }
  }
  return uri;
}

std::string_view word_at(std::string_view text, uint32_t offset, uint32_t *start) {
  if (offset > text.size())
    offset = uint32_t(text.size());
  uint32_t b = offset, e = offset;
  while (b > 0 && is_word(text[b - 1]))
    --b;
  while (e < text.size() && is_word(text[e]))
    ++e;
  if (start)
    *start = b;
  return text.substr(b, e - b);
}

} // namespace etl::lsp
