//===- lsp/serve.cpp - The stdio transport --------------------------------------===//
//
// Messages are framed as the base protocol says: header lines
// (`Content-Length: N` and optionally `Content-Type`) ending in CRLF, an
// empty line, then N bytes of UTF-8 JSON. A header block without a length
// is logged and skipped; a body over 256 MiB is read past and refused.
//
//===----------------------------------------------------------------------===//
#include "lsp/lsp.h"

#include <llvm/ADT/StringRef.h>

#include <istream>
#include <ostream>

namespace etl {
namespace {

constexpr size_t kMaxBody = size_t(256) << 20;

} // namespace

bool read_message(std::istream &in, std::string &body, std::string &error) {
  body.clear();
  error.clear();
  std::string line;
  bool any = false, have_length = false;
  unsigned long long length = 0;
  while (std::getline(in, line)) {
    any = true;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty()) {
      if (!have_length) {
        error = "a message without a Content-Length header";
        return true;
      }
      break;
    }
    llvm::StringRef l(line);
    auto [name, value] = l.split(':');
    if (name.trim().equals_insensitive("content-length")) {
      if (value.trim().getAsInteger(10, length)) {
        error = "a bad Content-Length: " + value.trim().str();
        have_length = false;
        continue;
      }
      have_length = true;
    }
  }
  if (!in)
    return false; // the end of input (before the body)
  if (!any)
    return false;
  if (length > kMaxBody) {
    in.ignore(std::streamsize(length));
    error = "a message of " + std::to_string(length) + " bytes (the limit is 256 MiB)";
    return bool(in);
  }
  body.resize(size_t(length));
  in.read(body.data(), std::streamsize(length));
  if (size_t(in.gcount()) != length) {
    body.clear();
    return false;
  }
  return true;
}

void write_message(std::ostream &out, const std::string &body) {
  out << "Content-Length: " << body.size() << "\r\n\r\n" << body;
  out.flush();
}

int serve_lsp(const LspOptions &opts, std::istream &in, std::ostream &out, std::ostream &log) {
  LspServer server(opts);
  std::string body, error;
  while (read_message(in, body, error)) {
    if (!error.empty()) {
      log << "etlc lsp: " << error << "\n";
      continue;
    }
    for (const std::string &m : server.handle(body))
      write_message(out, m);
    if (server.exited())
      return server.exit_code();
  }
  return 1; // the input ended without `exit`
}

} // namespace etl
