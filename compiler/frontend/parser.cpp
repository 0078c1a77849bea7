//===- frontend/parser.cpp - .etl text to AST -----------------------------===//
//
// Runs the generated ANTLR lexer and parser over a file and hands the parse
// tree to the AST builder. Syntax errors are reported through Diag by an error
// strategy that words ANTLR's findings the way a user reads them:
//
//   expected ';' after statement        (at the end of the previous token)
//   unexpected '}'; expected expression
//
// Recovery is ANTLR's (single-token insertion/deletion, then resync), which
// reports several independent errors per file and always terminates. Bytes
// the lexer does not know and unterminated comments are reported here, once
// each, from hidden-channel tokens the parser never sees.
//
//===----------------------------------------------------------------------===//
#include "frontend/parser.h"

#include "frontend/ast_builder.h"

#include "ETLLexer.h"
#include "ETLParser.h"
#include "antlr4-runtime.h"

#include <algorithm>
#include <set>

namespace etl {

namespace {

using grammar::ETLLexer;
using grammar::ETLParser;

/// More nesting than this is refused before parsing (the parser recurses).
constexpr int kMaxNesting = 256;
/// The parse tree is never deeper than this: the generated parser recurses
/// once per rule it enters, and so do the AST builder and every later pass
/// over what it builds. Brackets are counted before parsing, but error
/// recovery nests too (`1 - + - + ...`: each `+` is dropped and the `-` after
/// it parsed as a unary minus, one level each, with no bracket and no run of
/// minus tokens), so the parser itself stops there. A `cast<f32>(` level is 4
/// rules, so every program within kMaxNesting brackets stays far below.
constexpr int kMaxTreeDepth = 8 * kMaxNesting;
/// After a syntax error, parsing stops at the first rule entered this deep.
/// Recovery inside a deep expression makes every later prediction look far
/// ahead through the broken nesting: a 2.4 KB fuzzer input (a typo inside
/// 200 nested casts) took 2.4 s and 400 MB to parse. The errors after the
/// first in such an expression are echoes of it; programs nest far less.
constexpr int kMaxDepthAfterError = 64;
/// Syntax errors reported per file, at most.
constexpr unsigned kMaxSyntaxErrors = 50;

/// Turns parser findings into SyntaxError diagnostics.
class SyntaxReporter {
public:
  SyntaxReporter(FileId f, const SourceManager &sm, Diag &diag) : file_(f), sm_(sm), diag_(diag) {}

  /// The range of a real token; a zero-width range for EOF.
  SourceRange token_range(antlr4::Token *t) const {
    size_t start = t->getStartIndex(), stop = t->getStopIndex();
    if (start == INVALID_INDEX)
      return {};
    SourceRange r;
    r.begin = sm_.loc(file_, static_cast<uint32_t>(start));
    if (t->getType() == antlr4::Token::EOF || stop == INVALID_INDEX || stop < start)
      r.end = r.begin;
    else
      r.end = sm_.loc(file_, static_cast<uint32_t>(stop + 1));
    return r;
  }

  /// The one-column range just after token `t` (where something is missing).
  SourceRange after(antlr4::Token *t) const {
    if (!t || t->getStopIndex() == INVALID_INDEX)
      return {};
    SourceRange r;
    r.begin = sm_.loc(file_, static_cast<uint32_t>(t->getStopIndex() + 1));
    r.end = r.begin;
    return r;
  }

  unsigned count() const { return count_; }

  void error(SourceRange r, const std::string &msg) {
    if (count_++ >= kMaxSyntaxErrors)
      return;
    if (!r.valid()) // e.g. an empty file: point at its start
      r.begin = r.end = sm_.loc(file_, 0);
    diag_.error(DiagId::SyntaxError, r, {msg});
  }

private:
  FileId file_;
  const SourceManager &sm_;
  Diag &diag_;
  unsigned count_ = 0;
};

/// Describes a token kind for "expected ..." lists.
std::string token_kind_name(const antlr4::dfa::Vocabulary &v, size_t type) {
  switch (type) {
  case antlr4::Token::EOF:
    return "end of input";
  case ETLParser::IDENT:
    return "identifier";
  case ETLParser::INT:
    return "integer literal";
  case ETLParser::FLOAT:
    return "float literal";
  default:
    break;
  }
  std::string lit = v.getLiteralName(type);
  return lit.empty() ? v.getDisplayName(type) : lit;
}

/// Describes the token the parser stumbled on.
std::string token_display(antlr4::Token *t) {
  if (!t || t->getType() == antlr4::Token::EOF)
    return "end of input";
  std::string text = t->getText();
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  return "'" + text + "'";
}

/// "expected ';'", "expected ')' or ','", "expected expression", ...; empty
/// when the set is too large to be useful.
std::string expected_list(ETLParser *p, const antlr4::misc::IntervalSet &set) {
  const antlr4::dfa::Vocabulary &v = p->getVocabulary();
  std::vector<size_t> types;
  for (ssize_t t : set.toList())
    types.push_back(static_cast<size_t>(t));
  std::set<size_t> ts(types.begin(), types.end());
  std::vector<std::string> names;
  // The tokens that start an expression are named together.
  bool expr = ts.count(ETLParser::INT) && ts.count(ETLParser::FLOAT) && ts.count(ETLParser::IDENT);
  if (expr)
    names.push_back("expression");
  // A const's optional `in [...]` (a tunable) is rarer than the `;` that
  // ends it: not offered where a `;` is.
  bool const_end = p->getContext() && p->getContext()->getRuleIndex() == ETLParser::RuleConstDecl;
  for (size_t t : types) {
    if (const_end && token_kind_name(v, t) == "'in'")
      continue;
    if (expr) {
      std::string n = token_kind_name(v, t);
      if (t == ETLParser::INT || t == ETLParser::FLOAT || t == ETLParser::IDENT || n == "'('" ||
          n == "'-'" || n == "'!'" || n == "'~'")
        continue;
    }
    names.push_back(token_kind_name(v, t));
  }
  if (names.empty() || names.size() > 6)
    return "";
  std::string out = "expected ";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0)
      out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

/// What a rule is, for "expected ';' after <rule>".
const char *rule_description(size_t rule) {
  switch (rule) {
  case ETLParser::RuleConstDecl:
    return "constant declaration";
  case ETLParser::RuleBufferDecl:
    return "buffer declaration";
  case ETLParser::RuleEventDecl:
    return "event declaration";
  case ETLParser::RuleStmt:
    return "statement";
  case ETLParser::RuleImportDecl:
    return "import declaration";
  default:
    return nullptr;
  }
}

/// ANTLR's recovery with our wording and ranges.
class ErrorStrategy : public antlr4::DefaultErrorStrategy {
public:
  explicit ErrorStrategy(SyntaxReporter &r) : rep_(r) {}

protected:
  void reportNoViableAlternative(antlr4::Parser *p,
                                 const antlr4::NoViableAltException &e) override {
    unexpected(static_cast<ETLParser *>(p), e.getOffendingToken(), e.getExpectedTokens());
  }
  void reportInputMismatch(antlr4::Parser *p, const antlr4::InputMismatchException &e) override {
    auto *ep = static_cast<ETLParser *>(p);
    // `const TM = 16` then the next declaration: the `;` is missing (the
    // mismatch comes from the decision of the optional `in [...]`).
    if (ep->getContext() && ep->getContext()->getRuleIndex() == ETLParser::RuleConstDecl &&
        expected_list(ep, e.getExpectedTokens()) == "expected ';'") {
      SourceRange r = rep_.after(p->getTokenStream()->LT(-1));
      rep_.error(r.valid() ? r : rep_.token_range(e.getOffendingToken()),
                 "expected ';' after constant declaration");
      return;
    }
    unexpected(ep, e.getOffendingToken(), e.getExpectedTokens());
  }
  void reportFailedPredicate(antlr4::Parser *p,
                             const antlr4::FailedPredicateException &e) override {
    unexpected(static_cast<ETLParser *>(p), e.getOffendingToken(), e.getExpectedTokens());
  }
  void reportUnwantedToken(antlr4::Parser *p) override {
    if (inErrorRecoveryMode(p))
      return;
    beginErrorCondition(p);
    antlr4::Token *t = p->getCurrentToken();
    rep_.error(where(p, t), describe(static_cast<ETLParser *>(p), t, getExpectedTokens(p)));
  }
  void reportMissingToken(antlr4::Parser *p) override {
    if (inErrorRecoveryMode(p))
      return;
    beginErrorCondition(p);
    auto *ep = static_cast<ETLParser *>(p);
    antlr4::misc::IntervalSet expecting = getExpectedTokens(p);
    std::string exp = expected_list(ep, expecting);
    if (exp.empty())
      exp = "unexpected " + token_display(p->getCurrentToken());
    const char *what =
        p->getContext() ? rule_description(p->getContext()->getRuleIndex()) : nullptr;
    if (exp == "expected ';'" && what)
      exp += std::string(" after ") + what;
    antlr4::Token *prev = p->getTokenStream()->LT(-1);
    SourceRange r = rep_.after(prev);
    if (!r.valid())
      r = rep_.token_range(p->getCurrentToken());
    rep_.error(r, exp);
  }

private:
  /// Where to point for token `t`: the token itself, or for EOF the end of
  /// the last real token (so expectations do not depend on trailing text).
  SourceRange where(antlr4::Parser *p, antlr4::Token *t) {
    if (t && t->getType() == antlr4::Token::EOF) {
      SourceRange r = rep_.after(p->getTokenStream()->LT(-1));
      if (r.valid())
        return r;
    }
    return t ? rep_.token_range(t) : SourceRange{};
  }

  /// Called through reportError, which has already checked and begun the
  /// error condition.
  void unexpected(ETLParser *p, antlr4::Token *t, const antlr4::misc::IntervalSet &expecting) {
    std::string msg = describe(p, t, expecting);
    SourceRange r;
    if (t && t->getType() == antlr4::Token::EOF) {
      // The token before EOF in the stream (LT(-1) may be far back after a
      // no-viable-alternative lookahead).
      auto *ts = p->getTokenStream();
      antlr4::Token *prev = nullptr;
      for (ssize_t i = static_cast<ssize_t>(t->getTokenIndex()) - 1; i >= 0; --i) {
        antlr4::Token *c = ts->get(static_cast<size_t>(i));
        if (c->getChannel() == antlr4::Token::DEFAULT_CHANNEL) {
          prev = c;
          break;
        }
      }
      r = rep_.after(prev);
    }
    if (!r.valid() && t)
      r = rep_.token_range(t);
    rep_.error(r, msg);
  }

  /// "unexpected 'x'; expected ..."
  static std::string describe(ETLParser *p, antlr4::Token *t,
                              const antlr4::misc::IntervalSet &expecting) {
    std::string msg = "unexpected " + token_display(t);
    std::string exp = expected_list(p, expecting);
    // At the end of input an unclosed block is the likely story.
    if (t && t->getType() == antlr4::Token::EOF && expecting.contains(close_brace(p)))
      exp = "expected '}'";
    if (!exp.empty())
      msg += "; " + exp;
    return msg;
  }

  static size_t close_brace(ETLParser *p) {
    const antlr4::dfa::Vocabulary &v = p->getVocabulary();
    for (size_t t = 1; t <= v.getMaxTokenType(); ++t)
      if (v.getLiteralName(t) == "'}'")
        return t;
    return 0;
  }

  SyntaxReporter &rep_;
};

/// Anything the runtime reports outside the strategy (not expected, kept so
/// no message is ever lost or printed to the console).
class ErrorListener : public antlr4::BaseErrorListener {
public:
  explicit ErrorListener(SyntaxReporter &r) : rep_(r) {}
  void syntaxError(antlr4::Recognizer *, antlr4::Token *t, size_t, size_t, const std::string &msg,
                   std::exception_ptr) override {
    rep_.error(t ? rep_.token_range(t) : SourceRange{}, msg);
  }

private:
  SyntaxReporter &rep_;
};

/// Shows a bad character: printable ASCII as is, other bytes as \xNN unless
/// they form UTF-8 text.
std::string show_char(const std::string &bytes) {
  if (bytes.size() == 1 && (static_cast<unsigned char>(bytes[0]) < 0x20 ||
                            static_cast<unsigned char>(bytes[0]) == 0x7f)) {
    static const char hex[] = "0123456789abcdef";
    unsigned char c = static_cast<unsigned char>(bytes[0]);
    return std::string("\\x") + hex[c >> 4] + hex[c & 15];
  }
  return bytes;
}

/// Thrown by BoundedParser when the parse tree would grow past
/// kMaxTreeDepth (`abandoned`: past kMaxDepthAfterError after a syntax
/// error, which is already reported); `at` is the token the parser was on.
struct TreeTooDeep {
  antlr4::Token *at;
  bool abandoned = false;
};

/// The generated parser, refusing to enter a rule kMaxTreeDepth levels
/// below the root: its recursion (and every later pass's) stays bounded
/// whatever the input, within the stack the pipeline gives it
/// (driver/pipeline.cpp runs the compiler on a thread of known size).
class BoundedParser : public ETLParser {
public:
  BoundedParser(antlr4::TokenStream *tokens, const SyntaxReporter &rep)
      : ETLParser(tokens), rep_(rep) {}
  void enterRule(antlr4::ParserRuleContext *ctx, size_t state, size_t rule) override {
    check_depth(ctx);
    ETLParser::enterRule(ctx, state, rule);
  }
  void enterRecursionRule(antlr4::ParserRuleContext *ctx, size_t state, size_t rule,
                          int precedence) override {
    check_depth(ctx, 0);
    chain_.push_back(0);
    ETLParser::enterRecursionRule(ctx, state, rule, precedence);
  }
  /// A left-recursive rule's loop (`1 - 1 + 1 ...`) deepens the tree below
  /// it without recursing: each operator nests what came before one level
  /// down. A chain longer than the bound is refused here, before the parser
  /// reads the rest of it (800,000 tokens took 14 s under ASan).
  void pushNewRecursionContext(antlr4::ParserRuleContext *ctx, size_t state, size_t rule) override {
    if (!chain_.empty())
      check_depth(ctx, ++chain_.back());
    ETLParser::pushNewRecursionContext(ctx, state, rule);
  }
  void unrollRecursionContexts(antlr4::ParserRuleContext *parent) override {
    if (!chain_.empty())
      chain_.pop_back();
    ETLParser::unrollRecursionContexts(parent);
  }

private:
  /// Operators of each left-recursive rule being parsed, innermost last.
  std::vector<int> chain_;
  const SyntaxReporter &rep_;

  /// Walks at most kMaxTreeDepth parents: linear in the depth, which is
  /// small in real programs and bounded in the rest.
  void check_depth(antlr4::RuleContext *ctx, int below = 0) {
    int depth = below;
    // A rule context's parent is always a rule context.
    for (antlr4::tree::ParseTree *c = ctx; c && depth <= kMaxTreeDepth; c = c->parent)
      ++depth;
    if (depth > kMaxTreeDepth)
      throw TreeTooDeep{getCurrentToken()};
    if (depth > kMaxDepthAfterError && rep_.count() > 0)
      throw TreeTooDeep{getCurrentToken(), true};
  }
};

/// What a token kind means to the nesting count before parsing.
enum class Nesting : uint8_t { None, Open, Close, Unary };

/// Per token type, from the grammar's literals (once per process: the
/// count then reads a type per token instead of copying each token's text).
const std::vector<Nesting> &nesting_of_types(const antlr4::dfa::Vocabulary &v) {
  static const std::vector<Nesting> table = [&] {
    std::vector<Nesting> t(v.getMaxTokenType() + 1, Nesting::None);
    for (size_t type = 1; type < t.size(); ++type) {
      std::string lit = v.getLiteralName(type);
      if (lit == "'('" || lit == "'['" || lit == "'{'")
        t[type] = Nesting::Open;
      else if (lit == "')'" || lit == "']'" || lit == "'}'")
        t[type] = Nesting::Close;
      else if (lit == "'-'" || lit == "'!'")
        t[type] = Nesting::Unary;
    }
    return t;
  }();
  return table;
}

} // namespace

namespace {
std::unique_ptr<Program> parse_into(FileId file, const SourceManager &sm, Diag &diag) {
  const std::string &text = sm.text(file);
  // The runtime decodes its input as UTF-8 (and throws on invalid UTF-8);
  // non-ASCII bytes are only meaningful inside comments, so they are replaced
  // by a byte the lexer does not know. Token indices then equal byte offsets.
  std::string ascii = text;
  for (char &c : ascii)
    if (static_cast<unsigned char>(c) >= 0x80 || c == '\0')
      c = '\x01';

  SyntaxReporter rep(file, sm, diag);
  antlr4::ANTLRInputStream input(ascii);
  ETLLexer lexer(&input);
  lexer.removeErrorListeners();
  ErrorListener listener(rep);
  lexer.addErrorListener(&listener);
  antlr4::CommonTokenStream tokens(&lexer);
  tokens.fill();

  // Hidden-channel errors from the lexer, and nesting depth.
  const std::vector<Nesting> &roles = nesting_of_types(lexer.getVocabulary());
  int depth = 0, unary_run = 0;
  bool too_deep = false;
  const std::vector<antlr4::Token *> &all = tokens.getTokens();
  for (size_t i = 0; i < all.size(); ++i) {
    antlr4::Token *t = all[i];
    if (t->getType() == ETLLexer::UNTERMINATED_COMMENT) {
      SourceRange r = rep.token_range(t);
      r.end = sm.loc(file, r.begin.offset + 2);
      diag.error(DiagId::UnterminatedComment, r);
    } else if (t->getType() == ETLLexer::ERROR_CHAR) {
      // A run of non-ASCII bytes (one UTF-8 character or more) is one error.
      size_t j = i;
      size_t begin = t->getStartIndex(), end = t->getStopIndex() + 1;
      bool wide = static_cast<unsigned char>(text[begin]) >= 0x80;
      while (wide && j + 1 < all.size() && all[j + 1]->getType() == ETLLexer::ERROR_CHAR &&
             all[j + 1]->getStartIndex() == end && static_cast<unsigned char>(text[end]) >= 0x80) {
        ++j;
        end = all[j]->getStopIndex() + 1;
      }
      SourceRange r{sm.loc(file, static_cast<uint32_t>(begin)),
                    sm.loc(file, static_cast<uint32_t>(end))};
      diag.error(DiagId::InvalidCharacter, r, {show_char(text.substr(begin, end - begin))});
      i = j;
    } else if (t->getChannel() == antlr4::Token::DEFAULT_CHANNEL) {
      Nesting n = t->getType() < roles.size() ? roles[t->getType()] : Nesting::None;
      unary_run = n == Nesting::Unary ? unary_run + 1 : 0;
      if (unary_run > kMaxNesting && !too_deep) {
        too_deep = true;
        diag.error(DiagId::NestingTooDeep, rep.token_range(t), {std::to_string(kMaxNesting)});
      }
      if (n == Nesting::Open) {
        if (++depth > kMaxNesting && !too_deep) {
          too_deep = true;
          diag.error(DiagId::NestingTooDeep, rep.token_range(t), {std::to_string(kMaxNesting)});
        }
      } else if (n == Nesting::Close) {
        --depth;
      }
    }
  }
  if (too_deep) {
    auto p = std::make_unique<Program>();
    p->file = file;
    return p;
  }

  // SLL prediction: it decides `f<T>(x)` against the comparison chain
  // `f < T > (x)` from local lookahead (the first alternative, the call,
  // wins), where full-context LL prediction rescans the rest of a nested
  // expression at every level: quadratic in the depth of
  // `cast<f32>(cast<f32>(...))`, seconds for 200 levels, on valid programs
  // and on programs with a syntax error alike. The grammar has no decision
  // that needs full context (every golden and REFERENCE program parses the
  // same), and the error strategy and messages are unchanged.
  BoundedParser parser(&tokens, rep);
  parser.removeErrorListeners();
  parser.addErrorListener(&listener);
  parser.setErrorHandler(std::make_shared<ErrorStrategy>(rep));
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::SLL);
  ETLParser::ProgramContext *tree = nullptr;
  try {
    tree = parser.program();
  } catch (const TreeTooDeep &e) {
    if (!e.abandoned)
      diag.error(DiagId::NestingTooDeep, rep.token_range(e.at), {std::to_string(kMaxNesting)});
    auto p = std::make_unique<Program>();
    p->file = file;
    return p;
  }
  return frontend::build_ast(tree, file, sm, diag);
}
} // namespace

std::unique_ptr<Program> parse_program(FileId file, const SourceManager &sm, Diag &diag) {
  // Lexical problems are found before parsing and AST problems after it;
  // report everything in source order.
  Diag local(sm);
  std::unique_ptr<Program> p = parse_into(file, sm, local);
  std::vector<Diagnostic> ds = local.diagnostics();
  std::stable_sort(ds.begin(), ds.end(), [](const Diagnostic &a, const Diagnostic &b) {
    return a.range.begin.offset < b.range.begin.offset;
  });
  for (const Diagnostic &d : ds)
    diag.add(d);
  return p;
}

} // namespace etl
