//===- ast/builtins.cpp - Builtin names, from builtins.def ----------------===//
#include "ast/builtins.h"

namespace etl {

Builtin find_builtin(const std::string &name) {
#define ETL_BUILTIN(E, NAME, WHAT)                                                                 \
  if (name == NAME)                                                                                \
    return Builtin::E;
#include "ast/builtins.def"
  return Builtin::None;
}

const char *builtin_name(Builtin b) {
  switch (b) {
  case Builtin::None:
    return "";
#define ETL_BUILTIN(E, NAME, WHAT)                                                                 \
  case Builtin::E:                                                                                 \
    return NAME;
#include "ast/builtins.def"
  }
  return "";
}

const std::vector<std::string> &builtin_names() {
  static const std::vector<std::string> names = {
#define ETL_BUILTIN(E, NAME, WHAT) NAME,
#include "ast/builtins.def"
  };
  return names;
}

} // namespace etl
