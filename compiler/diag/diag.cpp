//===- diag/diag.cpp - Diagnostics ----------------------------------------===//
//
// Implements the diagnostic table (from diag/kinds.def), message formatting
// and rendering:
//
//   file.etl:12:7: error: use of undefined name 'foo'
//       let t = foo + 1;
//               ^~~
//
// The caret line copies the tabs of the source line so that the caret lines
// up in any editor; a range that runs past the end of its first line is
// underlined to the end of that line.
//
//===----------------------------------------------------------------------===//
#include "diag/diag.h"

#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace etl {

namespace {
struct DiagInfo {
  const char *name;
  Severity severity;
  const char *format;
};

const DiagInfo kDiagInfo[] = {
#define ETL_DIAG(ID, SEVERITY, FORMAT) {#ID, Severity::SEVERITY, FORMAT},
#include "diag/kinds.def"
};

} // namespace

const char *severity_word(Severity s) {
  switch (s) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Note:
    return "note";
  case Severity::Remark:
    return "remark";
  }
  return "error";
}

const char *diag_format(DiagId id) { return kDiagInfo[static_cast<size_t>(id)].format; }
Severity diag_severity(DiagId id) { return kDiagInfo[static_cast<size_t>(id)].severity; }
const char *diag_name(DiagId id) { return kDiagInfo[static_cast<size_t>(id)].name; }

std::vector<DiagId> all_diag_ids() {
  return {
#define ETL_DIAG(ID, SEVERITY, FORMAT) DiagId::ID,
#include "diag/kinds.def"
  };
}

std::string format_message(const char *fmt, const std::vector<std::string> &args) {
  std::string out;
  for (const char *p = fmt; *p; ++p) {
    if (*p == '{') {
      const char *q = p + 1;
      size_t n = 0;
      bool digits = false;
      while (*q >= '0' && *q <= '9') {
        n = n * 10 + static_cast<size_t>(*q - '0');
        digits = true;
        ++q;
      }
      if (digits && *q == '}') {
        if (n < args.size())
          out += args[n];
        else
          out += "{" + std::to_string(n) + "}";
        p = q;
        continue;
      }
    }
    out += *p;
  }
  return out;
}

void Diag::report(DiagId id, SourceRange r, std::vector<std::string> args) {
  switch (diag_severity(id)) {
  case Severity::Warning:
    return warning(id, r, std::move(args));
  case Severity::Note:
    return note(id, r, std::move(args));
  case Severity::Remark:
    return remark(id, r, std::move(args));
  default:
    break;
  }
  drop_notes_ = false;
  ++errors_;
  diags_.push_back({id, Severity::Error, r, format_message(diag_format(id), args)});
}

void Diag::add(const Diagnostic &d) {
  if (d.severity == Severity::Error)
    ++errors_;
  diags_.push_back(d);
}

void Diag::error(DiagId id, SourceRange r, std::vector<std::string> args) {
  Diagnostic d{id, Severity::Error, r, format_message(diag_format(id), args)};
  drop_notes_ = false;
  ++errors_;
  diags_.push_back(std::move(d));
}

void Diag::warning(DiagId id, SourceRange r, std::vector<std::string> args) {
  drop_notes_ = warning_mode_ == WarningMode::Ignore;
  if (drop_notes_)
    return;
  if (warning_mode_ == WarningMode::AsError) {
    ++errors_;
    diags_.push_back(
        {id, Severity::Error, r, format_message(diag_format(id), args) + " [-Werror]"});
    return;
  }
  diags_.push_back({id, Severity::Warning, r, format_message(diag_format(id), args)});
}

void Diag::note(DiagId id, SourceRange r, std::vector<std::string> args) {
  if (drop_notes_)
    return;
  diags_.push_back({id, Severity::Note, r, format_message(diag_format(id), args)});
}

void Diag::remark(DiagId id, SourceRange r, std::vector<std::string> args) {
  drop_notes_ = false;
  diags_.push_back({id, Severity::Remark, r, format_message(diag_format(id), args)});
}

void Diag::add_trailing_notes(const std::function<std::vector<Diagnostic>(Diagnostic &)> &f) {
  std::vector<Diagnostic> out, pending;
  for (Diagnostic &d : diags_) {
    if (d.severity != Severity::Note)
      out.insert(out.end(), pending.begin(), pending.end());
    std::vector<Diagnostic> notes = f(d);
    if (d.severity != Severity::Note)
      pending = std::move(notes);
    out.push_back(std::move(d));
  }
  out.insert(out.end(), pending.begin(), pending.end());
  diags_ = std::move(out);
}

std::string Diag::render(const Diagnostic &d, bool color) const {
  // clang's colours: bold text, severity by colour, a green caret.
  const char *bold = color ? "\033[1m" : "", *reset = color ? "\033[0m" : "";
  const char *sev_color = !color                            ? ""
                          : d.severity == Severity::Error   ? "\033[0;1;31m"
                          : d.severity == Severity::Warning ? "\033[0;1;35m"
                                                            : "\033[0;1;30m";
  auto header = [&](const std::string &where) {
    return std::string(bold) + where + ": " + sev_color + severity_word(d.severity) + ": " + reset +
           bold + d.message + reset + "\n";
  };
  if (!d.range.valid())
    return header("etlc");
  const SourceLoc &b = d.range.begin;
  std::string out =
      header(sm_.path(b.file) + ":" + std::to_string(b.line) + ":" + std::to_string(b.col));
  std::string_view line = sm_.line_text(b.file, b.line);
  out += std::string(line) + "\n";
  // Caret line: [col, end) underlined, clamped to the end of the line (one
  // column past it is allowed, for "expected ';'" at the end of a line).
  size_t col0 = b.col - 1;
  size_t end0 = col0 + 1;
  if (d.range.end.valid() && d.range.end.offset > b.offset) {
    if (d.range.end.line == b.line)
      end0 = d.range.end.col - 1;
    else
      end0 = line.size();
  }
  if (col0 > line.size())
    col0 = line.size();
  if (end0 > line.size())
    end0 = std::max(line.size(), col0 + 1);
  if (end0 <= col0)
    end0 = col0 + 1;
  std::string caret;
  for (size_t i = 0; i < col0; ++i)
    caret += line[i] == '\t' ? '\t' : ' ';
  caret += color ? "\033[0;1;32m^" : "^";
  for (size_t i = col0 + 1; i < end0; ++i)
    caret += '~';
  out += caret + reset + "\n";
  return out;
}

std::string Diag::render(bool color) const {
  std::string out;
  for (const Diagnostic &d : diags_)
    out += render(d, color);
  return out;
}

void internal_error(const std::string &msg) {
  std::fprintf(stderr, "etlc: internal error: %s\n", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

std::string closest_name(const std::string &name, const std::vector<std::string> &candidates) {
  std::string best;
  unsigned best_d = unsigned(std::max<size_t>(1, std::min<size_t>(2, name.size() / 3 + 1))) + 1;
  for (const std::string &c : candidates) {
    unsigned d = llvm::StringRef(name).edit_distance(c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

} // namespace etl
