//===- lsp/index.cpp - Names to their declarations ---------------------------===//
//
// Resolves every name of the parsed program (imports merged, before
// inlining) by the language's scopes, innermost first:
//
//   top level   consts and fns (the imported modules' too)
//   kernel      dims, tensor parameters, buffers, scalar parameters, events
//   task        its domain's indices, then its body's blocks: a `let`/`var`
//               from its statement on, a `for` variable inside its loop
//   fn          its parameters, then its body like a task's
//
// This works on a half-written program (the parser's partial tree) and
// inside fns, which sema never sees (compiler/inline expands them first).
//
//===----------------------------------------------------------------------===//
#include "ast/ast.h"
#include "ast/walk.h"
#include "lsp/analysis.h"
#include "lsp/text.h"

#include <algorithm>
#include <unordered_map>

namespace etl::lsp {
namespace {

/// The source text of `r` (in its own file), trimmed of a trailing `;`.
std::string text_of(const SourceManager &sm, const SourceRange &r) {
  if (!r.valid() || r.begin.file >= sm.file_count())
    return "";
  const std::string &t = sm.text(r.begin.file);
  uint32_t b = std::min<uint32_t>(r.begin.offset, uint32_t(t.size()));
  uint32_t e = std::min<uint32_t>(std::max(r.end.offset, b), uint32_t(t.size()));
  std::string s = t.substr(b, e - b);
  while (!s.empty() && (s.back() == ';' || s.back() == ' ' || s.back() == '\n'))
    s.pop_back();
  return s;
}

/// The `//` comment lines right above line `line` of file `f`, without the
/// slashes (`///` too).
std::string doc_above(const SourceManager &sm, FileId f, uint32_t line) {
  std::vector<std::string> lines;
  for (uint32_t l = line; l-- > 1;) {
    std::string_view t = sm.line_text(f, l);
    size_t i = t.find_first_not_of(" \t");
    if (i == std::string_view::npos || t.compare(i, 2, "//") != 0)
      break;
    t.remove_prefix(i);
    while (!t.empty() && t.front() == '/')
      t.remove_prefix(1);
    if (!t.empty() && t.front() == ' ')
      t.remove_prefix(1);
    lines.emplace_back(t);
  }
  std::string doc;
  for (size_t i = lines.size(); i-- > 0;)
    doc += lines[i] + (i ? "\n" : "");
  return doc;
}

class Indexer {
public:
  Indexer(const SourceManager &sm, FileId file, Analysis &a) : sm_(sm), file_(file), a_(a) {}

  void run(const Program &p) {
    push();
    for (const ConstDecl &c : p.consts)
      declare(SymbolKind::Const, c.name, c.name_range, text_of(sm_, c.range), true);
    for (const FnDecl &f : p.fns) {
      std::string sig = "fn " + f.name + "(";
      for (size_t i = 0; i < f.params.size(); ++i)
        sig += (i ? ", " : "") + f.params[i].name;
      declare(SymbolKind::Fn, f.name, f.name_range, sig + ")", true);
    }
    for (const ConstDecl &c : p.consts) {
      expr(c.value.get());
      for (const ExprPtr &e : c.candidates)
        expr(e.get());
      for (const ExprPtr &e : c.where)
        expr(e.get());
    }
    for (const FnDecl &f : p.fns)
      fn(f);
    for (const KernelDecl &k : p.kernels)
      kernel(k);
    pop();
    std::sort(a_.occurrences.begin(), a_.occurrences.end(),
              [](const Occurrence &x, const Occurrence &y) {
                return x.begin != y.begin ? x.begin < y.begin : x.end > y.end;
              });
  }

private:
  const SourceManager &sm_;
  FileId file_;
  Analysis &a_;
  std::vector<std::unordered_map<std::string, int>> scopes_;

  void push() { scopes_.emplace_back(); }
  void pop() { scopes_.pop_back(); }

  int declare(SymbolKind kind, const std::string &name, const SourceRange &r,
              std::string summary, bool with_doc = false) {
    Symbol s;
    s.kind = kind;
    s.name = name;
    s.decl = r;
    if (r.valid() && r.begin.file < sm_.file_count()) {
      s.path = sm_.path(r.begin.file);
      s.range = range_of(sm_.text(r.begin.file), r);
      if (with_doc)
        s.doc = doc_above(sm_, r.begin.file, r.begin.line);
    }
    s.summary = std::move(summary);
    a_.symbols.push_back(std::move(s));
    int id = int(a_.symbols.size()) - 1;
    scopes_.back()[name] = id;
    occur(r, id, "");
    return id;
  }

  int lookup(const std::string &name) const {
    for (size_t i = scopes_.size(); i-- > 0;) {
      auto it = scopes_[i].find(name);
      if (it != scopes_[i].end())
        return it->second;
    }
    return -1;
  }

  /// Records a name of the document (names in other files are not shown).
  void occur(const SourceRange &r, int symbol, const std::string &builtin) {
    if (!r.valid() || r.begin.file != file_ || r.end.offset <= r.begin.offset)
      return;
    if (symbol < 0 && builtin.empty())
      return;
    a_.occurrences.push_back({r.begin.offset, r.end.offset, symbol, builtin});
  }

  void use(const std::string &name, const SourceRange &r) {
    int s = lookup(name);
    if (s >= 0)
      occur(r, s, "");
    else if (find_builtin(name) != Builtin::None || name == "inf")
      occur(r, -1, name);
  }

  void expr(const Expr *root) {
    walk_expr(root, [&](const Expr &e) {
      if (e.kind == ExprKind::Name)
        use(e.name, e.range);
      else if (e.kind == ExprKind::Call)
        use(e.name, e.callee_range);
    });
  }

  /// A block; `tail` (a fn's returned expression) is resolved in its scope.
  void body(const std::vector<StmtPtr> &stmts, const Expr *tail = nullptr) {
    push();
    for (const StmtPtr &s : stmts) {
      if (!s)
        continue;
      switch (s->kind) {
      case StmtKind::Let:
      case StmtKind::Var:
        expr(s->value.get());
        declare(SymbolKind::Local, s->name, s->name_range,
                std::string(s->kind == StmtKind::Let ? "let " : "var ") + s->name);
        break;
      case StmtKind::Assign:
        use(s->name, s->name_range);
        expr(s->value.get());
        break;
      case StmtKind::For:
        expr(s->lo.get());
        expr(s->hi.get());
        expr(s->step.get());
        push();
        declare(SymbolKind::LoopVar, s->name, s->name_range,
                "for " + s->name + " in " + text_of(sm_, join(s->lo ? s->lo->range : SourceRange(),
                                                               s->hi ? s->hi->range : SourceRange())));
        body(s->body);
        pop();
        break;
      case StmtKind::If:
        expr(s->value.get());
        body(s->body);
        body(s->else_body);
        break;
      case StmtKind::ExprStmt:
        expr(s->value.get());
        break;
      }
    }
    expr(tail);
    pop();
  }

  void fn(const FnDecl &f) {
    push();
    for (const FnParam &p : f.params)
      declare(SymbolKind::FnParam, p.name, p.range, p.name + " (of fn " + f.name + ")");
    body(f.body, f.ret.get()); // `return` sees the body's names
    pop();
  }

  void event_ref(const EventRef &r) {
    use(r.event, r.event_range);
    for (const ExprPtr &i : r.indices)
      expr(i.get());
  }

  void kernel(const KernelDecl &k) {
    declare(SymbolKind::Kernel, k.name, k.name_range, "kernel " + k.name, true);
    push();
    for (const DimDecl &d : k.dims)
      declare(SymbolKind::Dim, d.name, d.range, d.name + ": dim");
    for (size_t i = 0; i < k.tensors.size(); ++i) {
      const TensorDecl &t = k.tensors[i];
      for (const ExprPtr &e : t.type.shape)
        expr(e.get());
      declare(t.is_buffer ? SymbolKind::Buffer : SymbolKind::Tensor, t.name, t.name_range,
              (t.is_buffer ? "buffer " : "") + text_of(sm_, t.range));
    }
    for (const ScalarDecl &s : k.scalars)
      declare(SymbolKind::Scalar, s.name, s.name_range, text_of(sm_, s.range));
    for (const ExprPtr &w : k.where)
      expr(w.get());
    for (const EventDecl &e : k.events) {
      for (const ExprPtr &x : e.shape)
        expr(x.get());
      declare(SymbolKind::Event, e.name, e.name_range, text_of(sm_, e.range));
    }
    for (const TaskDecl &t : k.tasks) {
      declare(SymbolKind::Task, t.name, t.name_range, "task " + t.name);
      push();
      for (const TaskIndexDecl &d : t.domain) {
        expr(d.lo.get());
        expr(d.hi.get());
        declare(SymbolKind::TaskIndex, d.name, d.name_range, text_of(sm_, d.range));
      }
      for (const EventRef &r : t.waits)
        event_ref(r);
      for (const EventRef &r : t.notifies)
        event_ref(r);
      body(t.body);
      pop();
    }
    pop();
  }
};

} // namespace

const char *symbol_word(SymbolKind k) {
  switch (k) {
#define ETL_LSP_SYMBOL_WORD(K, WORD)                                                               \
  case SymbolKind::K:                                                                              \
    return WORD;
    ETL_LSP_SYMBOLS(ETL_LSP_SYMBOL_WORD)
#undef ETL_LSP_SYMBOL_WORD
  }
  return "";
}

void index_program(const Program &p, const SourceManager &sm, FileId file, Analysis &a) {
  Indexer(sm, file, a).run(p);
}

const Occurrence *Analysis::at(uint32_t offset) const {
  const Occurrence *best = nullptr;
  for (const Occurrence &o : occurrences) {
    if (o.begin > offset)
      break;
    if (offset <= o.end && (!best || o.end - o.begin <= best->end - best->begin))
      best = &o;
  }
  return best;
}

} // namespace etl::lsp
