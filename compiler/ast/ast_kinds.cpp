//===- ast/ast_kinds.cpp - Names of node kinds, from kinds.def ------------===//
#include "ast/ast.h"

namespace etl {

const char *kind_name(ExprKind k) {
  switch (k) {
#define ETL_EXPR(K, DOC)                                                                           \
  case ExprKind::K:                                                                                \
    return #K;
#include "ast/kinds.def"
  }
  return "?";
}

const char *kind_name(StmtKind k) {
  switch (k) {
#define ETL_STMT(K, DOC)                                                                           \
  case StmtKind::K:                                                                                \
    return #K;
#include "ast/kinds.def"
  }
  return "?";
}

const char *kind_name(DeclKind k) {
  switch (k) {
#define ETL_DECL(K, DOC)                                                                           \
  case DeclKind::K:                                                                                \
    return #K;
#include "ast/kinds.def"
  }
  return "?";
}

const char *spelling(BinOp op) {
  switch (op) {
#define ETL_BINOP(K, S)                                                                            \
  case BinOp::K:                                                                                   \
    return S;
#include "ast/kinds.def"
  }
  return "?";
}

const char *spelling(UnOp op) {
  switch (op) {
#define ETL_UNOP(K, S)                                                                             \
  case UnOp::K:                                                                                    \
    return S;
#include "ast/kinds.def"
  }
  return "?";
}

const char *spelling(ElemType t) {
  switch (t) {
#define ETL_ELEM(K, S, B)                                                                          \
  case ElemType::K:                                                                                \
    return S;
#include "ast/kinds.def"
  }
  return "?";
}

unsigned byte_size(ElemType t) {
  switch (t) {
#define ETL_ELEM(K, S, B)                                                                          \
  case ElemType::K:                                                                                \
    return B;
#include "ast/kinds.def"
  }
  return 0;
}

std::optional<ElemType> parse_elem_type(const std::string &s) {
#define ETL_ELEM(K, S, B)                                                                          \
  if (s == S)                                                                                      \
    return ElemType::K;
#include "ast/kinds.def"
  return std::nullopt;
}

bool is_float(ElemType t) {
  return t == ElemType::F32 || t == ElemType::F16 || t == ElemType::BF16;
}

bool is_integer(ElemType t) { return t == ElemType::I32 || t == ElemType::I64; }

} // namespace etl
