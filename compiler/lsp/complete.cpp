//===- lsp/complete.cpp - Completion -------------------------------------------===//
//
// At the cursor: inside the parentheses of a builtin's call, its keyword
// arguments first (`axis = `, from its line of ast/builtins.def); then every
// builtin (with its description), the fns and consts (imported ones too)
// and the document's other names; all of them starting with the word
// typed so far.
//
//===----------------------------------------------------------------------===//
#include "ast/builtins.h"
#include "lsp/analysis.h"
#include "lsp/text.h"

#include <set>

namespace etl::lsp {
namespace {

namespace json = llvm::json;

// LSP CompletionItemKind values.
enum ItemKind { Function = 3, Field = 5, Variable = 6, Constant = 21, Event = 23 };

int item_kind(SymbolKind k) {
  switch (k) {
  case SymbolKind::Fn:
    return Function;
  case SymbolKind::Const:
  case SymbolKind::Dim:
    return Constant;
  case SymbolKind::Event:
    return Event;
  default:
    return Variable;
  }
}

/// The builtin whose call's parentheses hold byte `offset`, or "": the
/// nearest unclosed `(` before it on the text, preceded by a name (after an
/// optional `<...>` type argument and `[...]` shape).
std::string enclosing_call(std::string_view text, uint32_t offset) {
  int depth = 0;
  uint32_t limit = offset > 4000 ? offset - 4000 : 0;
  for (uint32_t i = offset; i-- > limit;) {
    char ch = text[i];
    if (ch == ')' || ch == ']')
      ++depth;
    else if (ch == '[' && depth > 0)
      --depth;
    else if (ch == ';' || ch == '{' || ch == '}')
      return "";
    else if (ch == '(' && depth-- == 0) {
      uint32_t e = i;
      while (e > 0 && text[e - 1] == ' ')
        --e;
      uint32_t start = 0;
      std::string_view w = word_at(text, e, &start);
      if (start + w.size() != e)
        return "";
      return std::string(w);
    }
  }
  return "";
}

} // namespace

json::Array completions(const Analysis &a, uint32_t offset) {
  json::Array items;
  std::string_view text = a.text;
  if (offset > text.size())
    return items;
  uint32_t start = 0;
  word_at(text, offset, &start);
  std::string prefix(text.substr(start, offset - start));
  std::set<std::string> seen;
  auto add = [&](const std::string &label, int kind, const std::string &detail,
                 const std::string &insert, const std::string &sort) {
    if (label.compare(0, prefix.size(), prefix) != 0 || !seen.insert(label).second)
      return;
    json::Object item{{"label", label}, {"kind", kind}, {"sortText", sort + label}};
    if (!detail.empty())
      item["detail"] = detail;
    if (!insert.empty())
      item["insertText"] = insert;
    items.push_back(std::move(item));
  };
  std::string call = enclosing_call(text, start);
  for (const std::string &k : builtin_keywords(call))
    add(k, Field, "keyword argument of " + call, k + " = ", "0");
  for (const std::string &b : builtin_names())
    add(b, Function, builtin_doc(b), "", "1");
  for (const Symbol &s : a.symbols) {
    bool global = s.kind == SymbolKind::Const || s.kind == SymbolKind::Fn;
    if (!global && s.path != a.path)
      continue; // a fn's own names, in its module
    if (s.kind == SymbolKind::Task || s.kind == SymbolKind::Kernel)
      continue;
    add(s.name, item_kind(s.kind), s.summary, "", "2");
  }
  return items;
}

} // namespace etl::lsp
