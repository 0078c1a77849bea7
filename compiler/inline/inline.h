//===- inline/inline.h - Expanding calls of user `fn`s --------------------===//
//
// What this owns: the stage between parsing (with imports merged) and sema
// that makes user fns disappear. Every call `f(a, b)` in a task body is
// replaced by f's returned expression, after f's body statements, which are
// hoisted before the statement that contains the call:
//
//   let y = silu(load(x[..]));      let silu.1.x = load(x[..]);
//                              =>   let y = silu.1.x * (1.0 / (1.0 + exp(-silu.1.x)));
//
// Arguments are evaluated once: each becomes a fresh `let <fn>.<n>.<param>`,
// unless it is a name, a literal or an index expression (of consts, dims,
// task indices and loop variables: `i * TM`), which is substituted as is (so
// tensors and indices can be passed too). The fn's locals and loop
// variables are renamed `<fn>.<n>.<name>`. Sema then checks each expansion
// with the types of its arguments, like a C++ template instantiation.
// Outside bodies (consts, shapes, ranges, event indices) only fns that are a
// single `return` expand, with every argument substituted.
//
// Ranges of the expanded code point into the fn's text, through a copy of
// the fn's file registered once per expansion; InlineSites maps each copy to
// its call, so that diagnostics inside get the notes "in call to 'f' here";
// their messages show the fresh names as written ('x', not 'silu.1.x').
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "diag/diag.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace etl {

/// The expansions made by inline_fns, for the call-chain notes.
class InlineSites {
public:
  /// Records that file `copy` holds the body of `fn` expanded at `call`.
  void add(FileId copy, std::string fn, SourceRange call);
  /// Adds after each error or warning located in an expansion the notes
  /// "in call to 'f' here" for its call chain, innermost first.
  void add_notes(Diag &diag) const;

private:
  struct Site {
    std::string fn;
    SourceRange call;
  };
  std::unordered_map<FileId, Site> by_copy_;
};

/// Checks the fns of `p` (names, returns, parameters, recursion) and expands
/// every call of one in the task bodies of `p`. Also reports calls of
/// functions that are neither builtins nor fns, suggesting either. On
/// success the fns are removed from `p` (`etlc --emit=inline` shows the
/// result). Returns false if it reported an error.
bool inline_fns(Program &p, SourceManager &sm, Diag &diag, InlineSites &sites);

} // namespace etl
