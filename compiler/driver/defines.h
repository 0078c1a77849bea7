//===- driver/defines.h - `-D NAME=VALUE` overrides a const ---------------===//
//
// What this owns: replacing the value of a top-level `const` of the program
// from the command line, after parsing and before anything reads it:
//
//   const TM = 16;          etlc compile k.etl -D TM=32   (an integer const)
//   const SCALE = 0.125;    etlc compile k.etl -D SCALE=0.5   (a float const)
//
// The new value is a literal placed at the const's value (diagnostics about
// it point there). Errors: not NAME=VALUE, no such const, a value that is
// not an integer (integer const) or a number (float const), a value out of
// range (int64 or double); each but the first with a note at the const.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "diag/diag.h"

#include <llvm/ADT/StringRef.h>

#include <string>
#include <vector>

namespace etl {

/// Applies every `NAME=VALUE` of `defines` (in order; a later one of the
/// same name wins) to `p.consts`, keeping the source's value as the const's
/// `default_value`. Reports errors to `diag`, each naming `origin` ("-D",
/// or "--variant 'SPEC':" for a variant's values); returns false if there
/// were any. A tunable pinned outside its candidates is sema's warning.
bool apply_defines(Program &p, const std::vector<std::string> &defines, Diag &diag,
                   const std::string &origin = "-D");

/// Whether `s` is a name of the language (a letter or `_`, then letters,
/// digits and `_`): what a `-D` or `--variant` names.
bool is_identifier(llvm::StringRef s);

/// Whether `id` is one of the -D errors above (the command line's fault:
/// etlc exits 2 on them, not 1).
bool is_define_error(DiagId id);

} // namespace etl
