//===- inline/inline.cpp - Expanding calls of user `fn`s ------------------===//
//
// Two steps. check_fns() looks at every fn once, without argument types:
// builtin names taken, duplicate fns and parameters, a missing return, names
// that are neither parameters, locals nor consts, calls of unknown functions
// and recursion (a cycle of the call graph, reported with its chain). Only
// if all is well does expand() rewrite the task bodies, so a broken fn is
// reported once rather than at each call.
//
//===----------------------------------------------------------------------===//
#include "inline/inline.h"

#include "ast/builtins.h"
#include "ast/walk.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace etl {

//===-- InlineSites ------------------------------------------------------===//

void InlineSites::add(FileId copy, std::string fn, SourceRange call) {
  by_copy_[copy] = Site{std::move(fn), call};
}

/// `msg` with the fresh names of expanded fns' locals ('silu.1.x', which no
/// user can write) shown as the user wrote them ('x').
static std::string user_names(const std::string &msg) {
  std::string out;
  size_t i = 0;
  while (i < msg.size()) {
    size_t close = msg[i] == '\'' ? msg.find('\'', i + 1) : std::string::npos;
    if (close == std::string::npos) {
      out += msg[i++];
      continue;
    }
    std::string inner = msg.substr(i + 1, close - i - 1);
    size_t a = inner.find('.'), b = a == std::string::npos ? a : inner.find('.', a + 1);
    bool fresh = b != std::string::npos && a > 0 && b > a + 1 && b + 1 < inner.size() &&
                 inner.find_first_not_of("0123456789", a + 1) == b &&
                 inner.find_first_of(" .'", b + 1) == std::string::npos &&
                 inner.find(' ') == std::string::npos;
    out += "'" + (fresh ? inner.substr(b + 1) : inner) + "'";
    i = close + 1;
  }
  return out;
}

void InlineSites::add_notes(Diag &diag) const {
  if (by_copy_.empty())
    return;
  diag.add_trailing_notes([&](Diagnostic &d) {
    d.message = user_names(d.message);
    std::vector<Diagnostic> notes;
    if (!d.range.valid() || d.severity == Severity::Note)
      return notes;
    FileId f = d.range.begin.file;
    for (auto it = by_copy_.find(f); it != by_copy_.end(); it = by_copy_.find(f)) {
      notes.push_back(
          Diagnostic{DiagId::NoteInCallTo, Severity::Note, it->second.call,
                     format_message(diag_format(DiagId::NoteInCallTo), {it->second.fn})});
      f = it->second.call.begin.file;
    }
    return notes;
  });
}

namespace {

//===-- Walking and copying the tree --------------------------------------===//

bool declares(const Stmt &s) {
  return s.kind == StmtKind::Let || s.kind == StmtKind::Var || s.kind == StmtKind::For;
}

/// How one expansion maps the fn's text: parameters to arguments (or fresh
/// lets), locals to fresh names, ranges into the fn's file to its copy.
struct Env {
  FileId from = 0, to = 0;
  std::map<std::string, const Expr *> subst;  ///< parameter -> argument
  std::map<std::string, std::string> renamed; ///< parameter/local -> fresh name

  SourceRange remap(SourceRange r) const {
    if (r.valid() && r.begin.file == from) {
      r.begin.file = to;
      r.end.file = to;
    }
    return r;
  }
  std::string name(const std::string &n) const {
    auto it = renamed.find(n);
    return it == renamed.end() ? n : it->second;
  }
};

/// A deep copy of `e`; with `env`, an expansion of the fn text `e`.
ExprPtr clone(const Expr *e, const Env *env) {
  if (!e)
    return nullptr;
  if (env && e->kind == ExprKind::Name) {
    auto it = env->subst.find(e->name);
    if (it != env->subst.end())
      return clone(it->second, nullptr); // the caller's text, with its ranges
  }
  auto c = std::make_unique<Expr>(e->kind, env ? env->remap(e->range) : e->range);
  c->int_value = e->int_value;
  c->float_value = e->float_value;
  c->name = env && e->kind == ExprKind::Name ? env->name(e->name) : e->name;
  c->bin_op = e->bin_op;
  c->un_op = e->un_op;
  for (const ExprPtr &a : e->args)
    c->args.push_back(clone(a.get(), env));
  for (const KwArg &k : e->kwargs)
    c->kwargs.push_back(
        KwArg{k.name, env ? env->remap(k.name_range) : k.name_range, clone(k.value.get(), env)});
  c->type_arg = e->type_arg;
  for (const ExprPtr &a : e->shape_args)
    c->shape_args.push_back(clone(a.get(), env));
  c->callee_range = env ? env->remap(e->callee_range) : e->callee_range;
  c->plus_extent = e->plus_extent;
  return c;
}

StmtPtr clone(const Stmt &s, const Env &env) {
  auto c = std::make_unique<Stmt>(s.kind, env.remap(s.range));
  c->name = env.name(s.name);
  c->name_range = env.remap(s.name_range);
  c->assign_op = s.assign_op;
  c->compound = s.compound;
  c->value = clone(s.value.get(), &env);
  c->lo = clone(s.lo.get(), &env);
  c->hi = clone(s.hi.get(), &env);
  c->step = clone(s.step.get(), &env);
  for (const StmtPtr &b : s.body)
    if (b)
      c->body.push_back(clone(*b, env));
  for (const StmtPtr &b : s.else_body)
    if (b)
      c->else_body.push_back(clone(*b, env));
  return c;
}

/// Arguments substituted as they are rather than bound to a `let`: names
/// (which also lets tensors, dims and indices be passed) and literals (and
/// index expressions, Inliner::index_valued).
bool substitutable(const Expr &e) {
  switch (e.kind) {
  case ExprKind::Name:
  case ExprKind::IntLit:
  case ExprKind::FloatLit:
    return true;
  case ExprKind::Unary:
    return e.un_op == UnOp::Neg && e.args.size() == 1 && e.args[0] && substitutable(*e.args[0]);
  default:
    return false;
  }
}

//===-- The pass -----------------------------------------------------------===//

class Inliner {
public:
  Inliner(Program &p, SourceManager &sm, Diag &d, InlineSites &sites)
      : prog_(p), sm_(sm), diag_(d), sites_(sites) {}

  bool run() {
    unsigned before = diag_.error_count();
    check_fns();
    for (KernelDecl &k : prog_.kernels)
      for (TaskDecl &t : k.tasks)
        check_calls(t.body);
    check_outside_bodies();
    if (diag_.error_count() != before)
      return false;
    expand_outside_bodies();
    for (KernelDecl &k : prog_.kernels) {
      index_names_.clear();
      for (const ConstDecl &c : prog_.consts)
        index_names_.insert(c.name);
      for (const DimDecl &d : k.dims)
        index_names_.insert(d.name);
      for (TaskDecl &t : k.tasks) {
        for (const TaskIndexDecl &d : t.domain)
          index_names_.insert(d.name);
        t.body = expand_block(std::move(t.body));
        for (const TaskIndexDecl &d : t.domain)
          index_names_.erase(d.name);
      }
    }
    if (diag_.error_count() != before)
      return false;
    prog_.fns.clear(); // expanded everywhere: no later stage looks at fns
    return true;
  }

private:
  //===-- Checks, once per fn --------------------------------------------===//

  void check_fns() {
    std::map<std::string, SourceRange> consts;
    for (const ConstDecl &c : prog_.consts)
      consts.emplace(c.name, c.name_range);
    const std::vector<std::string> &builtins = builtin_names();
    for (const FnDecl &f : prog_.fns) {
      if (std::find(builtins.begin(), builtins.end(), f.name) != builtins.end()) {
        diag_.error(DiagId::FnShadowsBuiltin, f.name_range, {f.name});
        continue;
      }
      auto prev = fns_.find(f.name);
      auto c = consts.find(f.name);
      if (prev != fns_.end() || c != consts.end()) {
        diag_.error(DiagId::Redefinition, f.name_range, {f.name});
        diag_.note(DiagId::NoteDeclaredHere,
                   prev != fns_.end() ? prev->second->name_range : c->second, {f.name});
        continue;
      }
      fns_[f.name] = &f;
    }
    for (const FnDecl &f : prog_.fns) // in source order
      if (auto it = fns_.find(f.name); it != fns_.end() && it->second == &f)
        check_fn(f, consts);
    check_recursion();
  }

  void check_fn(const FnDecl &f, const std::map<std::string, SourceRange> &consts) {
    if (!f.ret)
      diag_.error(DiagId::MissingReturn, f.name_range, {f.name});
    std::map<std::string, SourceRange> params, locals;
    for (const FnParam &p : f.params)
      if (!params.emplace(p.name, p.range).second) {
        diag_.error(DiagId::Redefinition, p.range, {p.name});
        diag_.note(DiagId::NoteDeclaredHere, params[p.name], {p.name});
      }
    walk_body(
        f.body,
        [&](const Stmt &s) {
          if (declares(s)) {
            auto p = params.find(s.name);
            if (p != params.end()) {
              diag_.error(DiagId::Redefinition, s.name_range, {s.name});
              diag_.note(DiagId::NoteDeclaredHere, p->second, {s.name});
            }
            locals.emplace(s.name, s.name_range);
          }
        },
        [](const Expr &) {});
    std::vector<std::string> visible;
    for (const auto &m : {params, locals, consts})
      for (const auto &kv : m)
        visible.push_back(kv.first);
    auto known = [&](const std::string &n) {
      return params.count(n) || locals.count(n) || consts.count(n) || n == "inf";
    };
    auto on_expr = [&](const Expr &e) {
      if (e.kind == ExprKind::Name && !known(e.name))
        undefined(e.name, e.range, visible, DiagId::UndefinedName);
      check_call(e, &f);
    };
    walk_body(
        f.body,
        [&](const Stmt &s) {
          if (s.kind != StmtKind::Assign)
            return;
          if (params.count(s.name))
            diag_.error(DiagId::AssignToNonLocal, s.name_range, {s.name});
          else if (!known(s.name))
            undefined(s.name, s.name_range, visible, DiagId::UndefinedName);
        },
        on_expr);
    walk_expr(f.ret.get(), on_expr);
  }

  /// Calls in task bodies: only unknown functions are reported here.
  void check_calls(const std::vector<StmtPtr> &body) {
    walk_body(
        body, [](const Stmt &) {}, [&](const Expr &e) { check_call(e, nullptr); });
  }

  /// A call of an unknown function; in fn `from`, records the call edge.
  void check_call(const Expr &e, const FnDecl *from) {
    if (e.kind != ExprKind::Call)
      return;
    auto it = fns_.find(e.name);
    if (it != fns_.end()) {
      if (from)
        calls_[from->name].push_back(&e);
      return;
    }
    const std::vector<std::string> &builtins = builtin_names();
    if (std::find(builtins.begin(), builtins.end(), e.name) != builtins.end())
      return;
    std::vector<std::string> candidates = builtins;
    for (const auto &kv : fns_)
      candidates.push_back(kv.first);
    undefined(e.name, e.callee_range, candidates, DiagId::UnknownFunction);
  }

  /// Every expression outside task and fn bodies (constants, shapes,
  /// `where`, task ranges, event indices), with what it is.
  void for_index_exprs(const std::function<void(ExprPtr &, const char *)> &f) {
    for (ConstDecl &c : prog_.consts) {
      f(c.value, "a constant");
      for (ExprPtr &e : c.candidates)
        f(e, "a constant");
      for (ExprPtr &e : c.where)
        f(e, "a constant");
    }
    for (KernelDecl &k : prog_.kernels) {
      for (TensorDecl &t : k.tensors)
        for (ExprPtr &e : t.type.shape)
          f(e, "a shape");
      for (ExprPtr &e : k.where)
        f(e, "a `where` clause");
      for (EventDecl &ev : k.events)
        for (ExprPtr &e : ev.shape)
          f(e, "a shape");
      for (TaskDecl &t : k.tasks) {
        for (TaskIndexDecl &d : t.domain) {
          f(d.lo, "a task range");
          f(d.hi, "a task range");
        }
        for (auto *refs : {&t.waits, &t.notifies})
          for (EventRef &r : *refs)
            for (ExprPtr &e : r.indices)
              f(e, "an event index");
      }
    }
  }

  /// Whether fn `name` is a single `return` calling only such fns: only
  /// those expand outside bodies, where no statement can be hoisted.
  bool expression_fn(const std::string &name) {
    auto memo = expression_fn_.find(name);
    if (memo != expression_fn_.end())
      return memo->second;
    const FnDecl &f = *fns_.at(name);
    expression_fn_[name] = false; // until shown otherwise (also ends cycles)
    bool ok = f.body.empty() && f.ret;
    walk_expr(f.ret.get(), [&](const Expr &c) {
      if (c.kind == ExprKind::Call && fns_.count(c.name) && !expression_fn(c.name))
        ok = false;
    });
    return expression_fn_[name] = ok;
  }

  /// Calls of fns with statements where only an expression can go.
  void check_outside_bodies() {
    for_index_exprs([&](ExprPtr &e, const char *where) {
      walk_expr(e.get(), [&](const Expr &c) {
        if (c.kind == ExprKind::Call && fns_.count(c.name) && !expression_fn(c.name))
          diag_.error(DiagId::FnCallOutsideBody, c.callee_range, {c.name, where});
      });
    });
  }

  /// Expands the calls outside bodies, substituting every argument.
  void expand_outside_bodies() {
    substitute_all_ = true;
    for_index_exprs([&](ExprPtr &e, const char *) {
      std::vector<StmtPtr> out;
      expand(e, out);
      if (!out.empty())
        internal_error("a fn call outside a body needed a statement");
    });
    substitute_all_ = false;
  }

  void undefined(const std::string &name, SourceRange r, const std::vector<std::string> &candidates,
                 DiagId id) {
    diag_.error(id, r, {name});
    std::string best = closest_name(name, candidates);
    if (!best.empty())
      diag_.note(DiagId::NoteDidYouMean, r, {best});
  }

  /// Depth-first over the call graph; a back edge closes a cycle, reported
  /// at the call that closes it: "a -> b -> a".
  void check_recursion() {
    std::map<std::string, int> state; // 1: on the stack, 2: done
    std::vector<std::string> stack;
    std::function<void(const std::string &)> visit = [&](const std::string &f) {
      state[f] = 1;
      stack.push_back(f);
      for (const Expr *call : calls_[f]) {
        int s = state[call->name];
        if (s == 1) {
          std::string chain;
          auto from = std::find(stack.begin(), stack.end(), call->name);
          for (auto it = from; it != stack.end(); ++it)
            chain += *it + " -> ";
          chain += call->name;
          diag_.error(DiagId::RecursiveFn, call->callee_range, {call->name, chain});
        } else if (s == 0) {
          visit(call->name);
        }
      }
      stack.pop_back();
      state[f] = 2;
    };
    for (const auto &kv : fns_)
      if (state[kv.first] == 0)
        visit(kv.first);
  }

  //===-- Expansion ------------------------------------------------------===//

  std::vector<StmtPtr> expand_block(std::vector<StmtPtr> body) {
    std::vector<StmtPtr> out;
    for (StmtPtr &s : body)
      if (s)
        expand_stmt(std::move(s), out);
    return out;
  }

  /// Appends `s` to `out`, after the expansions of the calls it contains.
  void expand_stmt(StmtPtr s, std::vector<StmtPtr> &out) {
    expand(s->value, out);
    expand(s->lo, out);
    expand(s->hi, out);
    expand(s->step, out);
    if (s->kind == StmtKind::For) {
      bool fresh = index_names_.insert(s->name).second;
      s->body = expand_block(std::move(s->body));
      if (fresh)
        index_names_.erase(s->name);
    }
    if (s->kind == StmtKind::If) {
      s->body = expand_block(std::move(s->body));
      s->else_body = expand_block(std::move(s->else_body));
    }
    out.push_back(std::move(s));
  }

  /// Replaces the calls of fns in `e`, innermost first.
  void expand(ExprPtr &e, std::vector<StmtPtr> &out) {
    if (!e)
      return;
    for (ExprPtr &a : e->args)
      expand(a, out);
    for (KwArg &k : e->kwargs)
      expand(k.value, out);
    for (ExprPtr &a : e->shape_args)
      expand(a, out);
    if (e->kind != ExprKind::Call)
      return;
    auto it = fns_.find(e->name);
    if (it != fns_.end())
      expand_call(e, *it->second, out);
  }

  /// An integer index expression (of consts, dims, task indices, loop
  /// variables): substituted rather than bound to a `let`, which cannot hold
  /// an index; it is cheap to evaluate at each use.
  bool index_valued(const Expr &e) const {
    auto all = [&](const std::vector<ExprPtr> &v) {
      return std::all_of(v.begin(), v.end(),
                         [&](const ExprPtr &a) { return a && index_valued(*a); });
    };
    switch (e.kind) {
    case ExprKind::IntLit:
      return true;
    case ExprKind::Name:
      return index_names_.count(e.name) != 0;
    case ExprKind::Unary:
      return e.un_op == UnOp::Neg && all(e.args);
    case ExprKind::Binary:
      return (e.bin_op == BinOp::Add || e.bin_op == BinOp::Sub || e.bin_op == BinOp::Mul ||
              e.bin_op == BinOp::Div || e.bin_op == BinOp::Mod) &&
             all(e.args);
    case ExprKind::Call:
      return is_index_fn(find_builtin(e.name)) && e.args.size() == 2 && e.kwargs.empty() &&
             !e.type_arg && e.shape_args.empty() && all(e.args);
    default:
      return false;
    }
  }

  /// Binds the arguments of `call` to f's parameters (positional, then by
  /// keyword); null after reporting a mismatch.
  std::optional<std::vector<ExprPtr *>> bind(Expr &call, const FnDecl &f) {
    std::vector<ExprPtr *> bound(f.params.size(), nullptr);
    bool ok = call.args.size() <= f.params.size();
    for (size_t i = 0; ok && i < call.args.size(); ++i)
      bound[i] = &call.args[i];
    for (KwArg &k : call.kwargs) {
      auto p = std::find_if(f.params.begin(), f.params.end(),
                            [&](const FnParam &fp) { return fp.name == k.name; });
      if (p == f.params.end()) {
        diag_.error(DiagId::UnknownKeyword, k.name_range, {f.name, k.name});
        return std::nullopt;
      }
      ExprPtr *&slot = bound[size_t(p - f.params.begin())];
      if (slot) {
        diag_.error(DiagId::DuplicateArg, k.name_range, {k.name, f.name});
        return std::nullopt;
      }
      slot = &k.value;
    }
    ok = ok && std::all_of(bound.begin(), bound.end(), [](ExprPtr *a) { return a && *a; });
    if (!ok) {
      std::string names;
      for (const FnParam &p : f.params)
        names += (names.empty() ? "" : ", ") + p.name;
      diag_.error(DiagId::FnArgCount, call.range,
                  {f.name, std::to_string(f.params.size()), names,
                   std::to_string(call.args.size() + call.kwargs.size())});
      diag_.note(DiagId::NoteDeclaredHere, f.name_range, {f.name});
      return std::nullopt;
    }
    return bound;
  }

  void expand_call(ExprPtr &e, const FnDecl &f, std::vector<StmtPtr> &out) {
    if (std::find(stack_.begin(), stack_.end(), f.name) != stack_.end())
      internal_error("recursive fn '" + f.name + "' passed the recursion check");
    std::optional<std::vector<ExprPtr *>> bound = bind(*e, f);
    if (!bound)
      return; // the error stops the pipeline before sema
    Env env;
    env.from = f.range.begin.file;
    env.to = sm_.add(sm_.path(env.from), std::string(sm_.text(env.from)));
    sites_.add(env.to, f.name, e->range);
    std::string prefix = f.name + "." + std::to_string(++count_[f.name]) + ".";
    std::vector<ExprPtr> kept; // substituted arguments, alive while cloning
    for (size_t i = 0; i < f.params.size(); ++i) {
      ExprPtr &arg = *(*bound)[i];
      const std::string &p = f.params[i].name;
      if (substitute_all_ || substitutable(*arg) || index_valued(*arg)) {
        env.subst[p] = arg.get();
        kept.push_back(std::move(arg));
        continue;
      }
      auto let = std::make_unique<Stmt>(StmtKind::Let, arg->range);
      let->name = prefix + p;
      let->name_range = arg->range;
      let->value = std::move(arg);
      out.push_back(std::move(let));
      env.renamed[p] = prefix + p;
    }
    walk_body(
        f.body,
        [&](const Stmt &s) {
          if (declares(s))
            env.renamed[s.name] = prefix + s.name;
        },
        [](const Expr &) {});
    stack_.push_back(f.name);
    for (const StmtPtr &s : f.body)
      if (s)
        expand_stmt(clone(*s, env), out);
    ExprPtr ret = clone(f.ret.get(), &env);
    expand(ret, out);
    stack_.pop_back();
    e = std::move(ret);
  }

  Program &prog_;
  SourceManager &sm_;
  Diag &diag_;
  InlineSites &sites_;
  std::map<std::string, const FnDecl *> fns_;
  std::map<std::string, std::vector<const Expr *>> calls_; ///< fn -> calls of fns in it
  std::map<std::string, int> count_;                       ///< expansions so far, per fn
  std::vector<std::string> stack_;                         ///< fns being expanded
  std::set<std::string> index_names_;         ///< names of index values in scope while expanding
  std::map<std::string, bool> expression_fn_; ///< memo of expression_fn()
  bool substitute_all_ = false;               ///< expanding outside bodies
};

} // namespace

bool inline_fns(Program &p, SourceManager &sm, Diag &diag, InlineSites &sites) {
  if (p.fns.empty() && p.kernels.empty())
    return true;
  return Inliner(p, sm, diag, sites).run();
}

} // namespace etl
