//===- diag/diag.h - Diagnostics ------------------------------------------===//
//
// What this owns: reporting user errors. Every diagnostic the compiler can
// emit is declared once in diag/kinds.def with its severity and message
// format; code reports one by its id with arguments:
//
//   diag.error(DiagId::UndefinedName, e.range, {name});
//   diag.note(DiagId::NoteDeclaredHere, decl.range, {name});
//   diag.remark(DiagId::NarrowAccess, call.range, {...});
//
// Rendered as
//
//   file.etl:12:7: error: use of undefined name 'foo'
//       let t = foo + 1;
//               ^~~
//
// Notes attach to the error reported before them. Internal compiler errors
// (a bug in etlc, never the user's fault) are not diagnostics: they go
// through internal_error(), which prints and aborts.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "diag/source.h"

#include <functional>
#include <string>
#include <vector>

namespace etl {

enum class DiagId {
#define ETL_DIAG(ID, SEVERITY, FORMAT) ID,
#include "diag/kinds.def"
};

/// Remark: an optimisation report (e.g. a narrow memory access and the
/// `where` fact that would widen it); never an error, not affected by -w or
/// -Werror, shown by the stages that produce them (`--emit=tile`).
enum class Severity { Error, Warning, Note, Remark };

/// The message format of a diagnostic kind, e.g. "use of undefined name '{0}'".
const char *diag_format(DiagId id);
Severity diag_severity(DiagId id);
/// "error", "warning", "note" or "remark", as the text renderer writes it.
const char *severity_word(Severity s);
const char *diag_name(DiagId id);
/// All kinds, in declaration order (the coverage test walks this).
std::vector<DiagId> all_diag_ids();

struct Diagnostic {
  DiagId id;
  Severity severity;
  SourceRange range;
  std::string message; ///< formatted
};

/// Collects diagnostics and renders them to a stream.
class Diag {
public:
  explicit Diag(const SourceManager &sm) : sm_(sm) {}

  void error(DiagId id, SourceRange r, std::vector<std::string> args = {});
  void warning(DiagId id, SourceRange r, std::vector<std::string> args = {});
  void note(DiagId id, SourceRange r, std::vector<std::string> args = {});
  void remark(DiagId id, SourceRange r, std::vector<std::string> args = {});
  /// Adds an already formatted diagnostic (e.g. collected elsewhere).
  void add(const Diagnostic &d);
  /// Generic entry: severity comes from kinds.def.
  void report(DiagId id, SourceRange r, std::vector<std::string> args = {});

  /// Calls `f` on every diagnostic, which may rewrite its message, and
  /// inserts the notes `f` returns for an error or warning after it and the
  /// notes already attached to it (compiler/inline adds call chains so).
  void add_trailing_notes(const std::function<std::vector<Diagnostic>(Diagnostic &)> &f);

  /// -Werror: warnings are reported as errors (and counted as such); -w:
  /// warnings and the notes attached to them are dropped.
  enum class WarningMode { Report, AsError, Ignore };
  void set_warning_mode(WarningMode m) { warning_mode_ = m; }

  unsigned error_count() const { return errors_; }
  bool has_errors() const { return errors_ != 0; }
  const std::vector<Diagnostic> &diagnostics() const { return diags_; }
  const SourceManager &source_manager() const { return sm_; }

  /// Renders every diagnostic as `file:line:col: severity: message`, the
  /// source line and a caret line (`^~~~` under the range). `color` adds
  /// clang's ANSI colours (bold location and message, red error, magenta
  /// warning, grey note, green caret); diag/render.h picks text, json or sarif.
  std::string render(bool color = false) const;
  std::string render(const Diagnostic &d, bool color = false) const;

private:
  WarningMode warning_mode_ = WarningMode::Report;
  bool drop_notes_ = false; ///< after a warning dropped by -w
  const SourceManager &sm_;
  std::vector<Diagnostic> diags_;
  unsigned errors_ = 0;
};

/// Formats "{0} and {1}" with args.
std::string format_message(const char *fmt, const std::vector<std::string> &args);

/// "Did you mean": the candidate closest to `name` by edit distance (at most
/// 1 for names under 3 characters, else 2; the first of equally close ones),
/// or "" if none is that close.
std::string closest_name(const std::string &name, const std::vector<std::string> &candidates);

/// A bug in etlc: prints "etlc: internal error: <msg>" and aborts.
[[noreturn]] void internal_error(const std::string &msg);

} // namespace etl
