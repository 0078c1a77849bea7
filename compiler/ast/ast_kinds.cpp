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

unsigned elem_bits(ElemType t) {
  switch (t) {
#define ETL_ELEM(K, S, B)                                                                          \
  case ElemType::K:                                                                                \
    return B;
#include "ast/kinds.def"
  }
  return 0;
}

unsigned byte_size(ElemType t) { return (elem_bits(t) + 7) / 8; }

// ElemType's values are the artifact's codes (driver/metadata.cpp writes
// them as they are): kinds.def lists runtime/abi/etl_elems.def's rows in
// order, and a gap or a row out of order fails here.
#define ETL_ELEM_TYPE(K, CODE, S, B)                                                               \
  static_assert(int(ElemType::K) == (CODE), "ElemType::" #K " is not its etl_elems.def code");
#define ETL_ELEM_COMPILER_ONLY(K, CODE, S, B) ETL_ELEM_TYPE(K, CODE, S, B)
#include "etl_elems.def"

std::optional<ElemType> parse_elem_type(const std::string &s) {
#define ETL_ELEM(K, S, B)                                                                          \
  if (s == S)                                                                                      \
    return ElemType::K;
#include "ast/kinds.def"
  return std::nullopt;
}

bool is_float(ElemType t) {
  return t == ElemType::F32 || t == ElemType::F16 || t == ElemType::BF16 || t == ElemType::F8E4M3 ||
         t == ElemType::F8E5M2;
}

bool is_integer(ElemType t) { return !is_float(t) && t != ElemType::Bool; }

bool is_unsigned(ElemType t) {
  return t == ElemType::U4 || t == ElemType::U8 || t == ElemType::U16 || t == ElemType::U32;
}

bool is_bit_op(BinOp op) {
  return op == BinOp::BitAnd || op == BinOp::BitOr || op == BinOp::BitXor || op == BinOp::Shl ||
         op == BinOp::Shr;
}

bool is_packed(ElemType t) { return t == ElemType::I4 || t == ElemType::U4; }

ElemType loaded_elem(ElemType t) {
  return t == ElemType::I4 ? ElemType::I8 : t == ElemType::U4 ? ElemType::U8 : t;
}

} // namespace etl
