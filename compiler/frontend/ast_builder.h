//===- frontend/ast_builder.h - ANTLR parse tree to AST (frontend only) ---===//
//
// Private to compiler/frontend: the only header outside the generated parser
// that mentions ANTLR types. parser.cpp calls build_ast() on the parse tree.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "diag/diag.h"

#include "ETLParser.h"

#include <memory>

namespace etl::frontend {

/// Builds the AST of `tree`. Tolerates the partial trees that error recovery
/// leaves behind (missing children are skipped or left null). Reports
/// IntLiteralOverflow, FloatLiteralOutOfRange, UnknownElemType, ReturnNotLast
/// and ReturnOutsideFn.
std::unique_ptr<Program> build_ast(grammar::ETLParser::ProgramContext *tree, FileId file,
                                   const SourceManager &sm, Diag &diag);

} // namespace etl::frontend
