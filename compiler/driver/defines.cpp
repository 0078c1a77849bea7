//===- driver/defines.cpp - `-D NAME=VALUE` overrides a const -------------===//
//
// Parses each VALUE with llvm::StringRef (whole base-10 int64 for an
// integer const, a whole finite double for a float const) and swaps the
// const's value expression for a literal with the old expression's range.
//
//===----------------------------------------------------------------------===//
#include "driver/defines.h"

#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace etl {
namespace {

/// A float const's initialiser is a float literal, possibly negated (the
/// rule of sema's check_consts).
bool is_float_const(const Expr &e) {
  if (e.kind == ExprKind::Unary && e.un_op == UnOp::Neg)
    return is_float_const(*e.args[0]);
  return e.kind == ExprKind::FloatLit;
}

/// Whether `s` is a whole number in decimal notation (digits, one optional
/// sign, point and exponent): what strtod reads, less hex, inf and nan.
bool looks_decimal(llvm::StringRef s) {
  if (s.empty())
    return false;
  for (char ch : s)
    if (!(std::isdigit(static_cast<unsigned char>(ch)) || ch == '.' || ch == 'e' || ch == 'E' ||
          ch == '+' || ch == '-'))
      return false;
  return std::isdigit(static_cast<unsigned char>(s[0])) ||
         (s.size() > 1 && (s[0] == '-' || s[0] == '+' || s[0] == '.'));
}

/// Whether `s` is an optionally signed run of digits.
bool looks_integer(llvm::StringRef s) {
  if (!s.consume_front("-"))
    s.consume_front("+");
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) {
    return std::isdigit(static_cast<unsigned char>(ch)) != 0;
  });
}

} // namespace

bool is_identifier(llvm::StringRef s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
    return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'))
      return false;
  return true;
}

bool is_define_error(DiagId id) {
  return id == DiagId::DefineSyntax || id == DiagId::DefineUnknownConst ||
         id == DiagId::DefineBadValue || id == DiagId::DefineOutOfRange;
}

bool apply_defines(Program &p, const std::vector<std::string> &defines, Diag &diag,
                   const std::string &origin) {
  unsigned errors = diag.error_count();
  SourceRange none;
  for (const std::string &d : defines) {
    auto [name, value] = llvm::StringRef(d).split('=');
    if (!llvm::StringRef(d).contains('=') || !is_identifier(name) || value.empty()) {
      diag.error(DiagId::DefineSyntax, none, {d});
      continue;
    }
    ConstDecl *c = nullptr;
    std::vector<std::string> names;
    for (ConstDecl &k : p.consts) {
      names.push_back(k.name);
      if (k.name == name)
        c = &k;
    }
    if (!c) {
      diag.error(DiagId::DefineUnknownConst, none, {name.str(), origin});
      std::string best = closest_name(name.str(), names);
      for (const ConstDecl &k : p.consts)
        if (!best.empty() && k.name == best) {
          diag.note(DiagId::NoteDidYouMean, k.name_range, {best});
          break;
        }
      continue;
    }
    SourceRange at = c->value->range;
    auto lit = std::make_unique<Expr>(ExprKind::IntLit, at);
    if (is_float_const(*c->value)) {
      lit->kind = ExprKind::FloatLit;
      std::string s = value.str();
      char *end = nullptr;
      errno = 0;
      double v = looks_decimal(value) ? std::strtod(s.c_str(), &end) : 0;
      if (!end || *end) {
        diag.error(DiagId::DefineBadValue, none,
                   {name.str(), value.str(), "a float const", "a number such as 0.5", origin});
        diag.note(DiagId::NoteDefineOverrides, at, {name.str(), origin});
        continue;
      }
      if (errno == ERANGE || !std::isfinite(v)) {
        diag.error(DiagId::DefineOutOfRange, none, {name.str(), value.str(), "a 64-bit float", origin});
        diag.note(DiagId::NoteDefineOverrides, at, {name.str(), origin});
        continue;
      }
      lit->float_value = v;
    } else {
      int64_t v = 0;
      if (!looks_integer(value)) {
        diag.error(DiagId::DefineBadValue, none,
                   {name.str(), value.str(), "an integer const", "a base-10 integer", origin});
        diag.note(DiagId::NoteDefineOverrides, at, {name.str(), origin});
        continue;
      }
      llvm::StringRef digits = value;
      digits.consume_front("+");
      if (digits.getAsInteger(10, v)) {
        diag.error(DiagId::DefineOutOfRange, none, {name.str(), value.str(), "a 64-bit integer", origin});
        diag.note(DiagId::NoteDefineOverrides, at, {name.str(), origin});
        continue;
      }
      lit->int_value = v;
    }
    if (!c->default_value) // the source's value: a tunable's default
      c->default_value = std::move(c->value);
    c->value = std::move(lit);
  }
  return diag.error_count() == errors;
}

} // namespace etl
