//===- frontend/modules.h - `import` of ETL modules -----------------------===//
//
// What this owns: resolving `import a.b;` to a file, parsing it, and merging
// the modules a program imports into that program. A module is an ordinary
// .etl file of `fn`s and `const`s (and imports of its own).
//
//   import std.math;   ->  <dir>/std/math.etl, for the first <dir> of the
//                          search path that has it (etlc -I DIR..., then the
//                          stdlib directory compiled into etlc)
//
// Every module is loaded once, however often and from wherever it is
// imported (import cycles are fine). Imported names are unqualified: after
// merging, `sigmoid` from std.math is called as `sigmoid(x)`. A name defined
// in two different files is an error naming both (DuplicateImportedName).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "diag/diag.h"

#include <string>
#include <vector>

namespace etl {

/// The stdlib directory: PREFIX/share/etl/stdlib next to an installed etlc
/// (PREFIX/bin), else the one compiled in (ETL_STDLIB_DIR, the source tree's).
std::string default_stdlib_dir();

/// Loads the modules `p` imports (transitively) from `search_path` into `sm`
/// and merges their consts (before p's own, dependencies first), fns and
/// kernels into `p`. Reports UnknownModule, DuplicateImportedName and the
/// syntax errors of the modules. Returns false if it reported an error.
bool load_imports(Program &p, SourceManager &sm, Diag &diag,
                  const std::vector<std::string> &search_path);

} // namespace etl
