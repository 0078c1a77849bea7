//===- frontend/parser.h - .etl text to AST -------------------------------===//
//
// What this owns: turning a source file into an ast::Program. ANTLR (the
// generated ETLLexer/ETLParser from grammar/ETL.g4) is used only inside this
// folder; syntax errors are reported through Diag as `SyntaxError` with the
// offending token's range, as many as the parser recovers from.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "diag/diag.h"

#include <memory>

namespace etl {

/// Parses file `file` of `sm`. Always returns a Program (possibly partial);
/// check diag.has_errors() before going on.
std::unique_ptr<Program> parse_program(FileId file, const SourceManager &sm, Diag &diag);

} // namespace etl
