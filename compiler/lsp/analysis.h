//===- lsp/analysis.h - What the server knows about one document -----------===//
//
// What this owns: running the compiler on a document's text and keeping
// what the editor features read:
//
//   1. the parsed program with its imports merged, before inlining (so fn
//      calls and fn bodies are still there), resolved by lsp/index.cpp into
//      symbols (every declaration: its name, where, a one-line summary) and
//      occurrences (every name in the document, and the symbol or builtin it
//      names). A program with syntax errors still parses into a partial tree.
//   2. driver/pipeline.h check_source on the same text: the diagnostics (as
//      LSP Diagnostic objects) and, keyed by each declaration's position,
//      what sema and the tile IR found out (lsp/hover.cpp, semantic_facts).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "diag/source.h"

#include <llvm/Support/JSON.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace etl {
struct Program;
class SourceManager;
struct Compilation;
struct TileModule;
} // namespace etl

namespace etl::lsp {

/// Every symbol kind: its word in hover text.
#define ETL_LSP_SYMBOLS(X)                                                                         \
  X(Const, "const")                                                                                \
  X(Fn, "fn")                                                                                      \
  X(FnParam, "fn parameter")                                                                       \
  X(Kernel, "kernel")                                                                              \
  X(Dim, "dim")                                                                                    \
  X(Tensor, "tensor parameter")                                                                    \
  X(Buffer, "buffer")                                                                              \
  X(Scalar, "scalar parameter")                                                                    \
  X(Event, "event")                                                                                \
  X(Task, "task")                                                                                  \
  X(TaskIndex, "task index")                                                                       \
  X(LoopVar, "loop variable")                                                                      \
  X(Local, "local")

enum class SymbolKind {
#define ETL_LSP_SYMBOL_ENUM(K, WORD) K,
  ETL_LSP_SYMBOLS(ETL_LSP_SYMBOL_ENUM)
#undef ETL_LSP_SYMBOL_ENUM
};
const char *symbol_word(SymbolKind k);

/// A declaration.
struct Symbol {
  SymbolKind kind = SymbolKind::Local;
  std::string name;
  std::string path;    ///< the file it is declared in
  SourceRange decl;    ///< its name (offsets into that file)
  std::string summary; ///< its declaration as written, e.g. `x: tensor<f32>[M, N]`
  std::string doc;     ///< the `//` comment lines right above it (fns, consts, kernels)
  llvm::json::Value range = nullptr; ///< `decl` as an LSP range in its file
};

/// A name in the document: [begin, end) bytes of the document's text.
struct Occurrence {
  uint32_t begin = 0, end = 0;
  int symbol = -1;     ///< into Analysis::symbols, or -1
  std::string builtin; ///< a builtin's spelling (symbol -1), or empty
};

/// Where a declaration is: its file and the byte offset of its name.
using DeclKey = std::pair<std::string, uint32_t>;

struct Analysis {
  std::string path, text;
  llvm::json::Array diagnostics;
  std::vector<Symbol> symbols;
  std::vector<Occurrence> occurrences; ///< sorted by begin
  /// What sema and the tile IR know of a declaration: hover lines.
  std::map<DeclKey, std::vector<std::string>> facts;
  /// The occurrence covering byte `offset` (the innermost), or null.
  const Occurrence *at(uint32_t offset) const;
};

/// Where the compiler looks for imports.
struct SearchPath {
  std::vector<std::string> import_dirs; ///< searched first, in order
  std::string stdlib_dir;               ///< then this
};

/// Parses, resolves and checks `text` as the file `path`.
Analysis analyse(const std::string &path, const std::string &text, const SearchPath &search);

/// lsp/index.cpp: the symbols and document occurrences of `p` (parsed from
/// `sm`'s file `file`, imports merged).
void index_program(const Program &p, const SourceManager &sm, FileId file, Analysis &a);

/// lsp/hover.cpp: the facts sema (on c.program) and the tile IR (`tiles`,
/// when built) give about each declaration, into a.facts.
void semantic_facts(const Compilation &c, const TileModule *tiles, Analysis &a);

/// lsp/hover.cpp: the hover text (markdown) at `offset`, or "" for none.
std::string hover_text(const Analysis &a, uint32_t offset);

/// lsp/complete.cpp: the CompletionItems at `offset`.
llvm::json::Array completions(const Analysis &a, uint32_t offset);

/// Keyword arguments of a builtin, read from its line of ast/builtins.def
/// (`load(slice, pad=, mask=)` -> pad, mask).
std::vector<std::string> builtin_keywords(const std::string &builtin);
/// Its description in ast/builtins.def, or "".
std::string builtin_doc(const std::string &builtin);

} // namespace etl::lsp
