//===- lsp/lsp.h - `etlc lsp`: the language server --------------------------===//
//
// What this owns: the Language Server Protocol over a byte stream (JSON-RPC
// 2.0 messages framed by `Content-Length:` headers, parsed and written with
// LLVM's JSON library) and the editor features built on the compiler's own
// stages:
//
//   textDocument/publishDiagnostics  driver/pipeline.h check_source: the
//                                    diagnostics `etlc compile
//                                    --emit=taskgraph` prints (lsp/analysis.cpp)
//   textDocument/hover               a tensor's or tile's element type and
//                                    symbolic shape, the tile IR's layout, a
//                                    builtin's line of ast/builtins.def
//                                    (lsp/hover.cpp)
//   textDocument/definition          names, events, fns of imported modules
//                                    (lsp/index.cpp resolves the parsed AST)
//   textDocument/completion          builtins, their keyword arguments, the
//                                    names in scope (lsp/complete.cpp)
//
// The methods are one table (lsp/server.cpp, kMethods). Every message gets
// an answer or is ignored as the protocol says: malformed JSON is a
// ParseError, an unknown request MethodNotFound, bad parameters (a position
// outside the text, a document never opened) an InvalidParams error or an
// empty result; nothing a client sends stops the server but `exit`.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "driver/cli.h"

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace etl {

/// `etlc lsp`: serves `in` until `exit` or the end of input, writing
/// messages to `out` and a line per problem to `log`. Returns 0 after
/// `shutdown` then `exit`, 1 otherwise (as the protocol asks).
int serve_lsp(const LspOptions &opts, std::istream &in, std::ostream &out, std::ostream &log);

/// Reads one framed message body from `in`: headers up to an empty line
/// (`Content-Length: N` required, others ignored), then N bytes. False at
/// the end of input; a malformed header block is skipped, with `error` set
/// and `body` empty.
bool read_message(std::istream &in, std::string &body, std::string &error);
/// Writes `body` framed with its Content-Length header, and flushes.
void write_message(std::ostream &out, const std::string &body);

class LspServer {
public:
  explicit LspServer(LspOptions opts);
  ~LspServer();
  /// Handles one message body (the JSON text of a request, notification or
  /// response) and returns the messages to send back, in order: the reply to
  /// a request, and notifications such as publishDiagnostics.
  std::vector<std::string> handle(const std::string &body);
  /// `exit` was received.
  bool exited() const;
  /// The process exit code `exit` asks for: 0 after `shutdown`, else 1.
  int exit_code() const;

  struct State;

private:
  std::unique_ptr<State> s_;
};

} // namespace etl
