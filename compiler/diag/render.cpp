//===- diag/render.cpp - Diagnostics as text, JSON or SARIF ---------------===//
//
// Builds the json and sarif documents with llvm::json (escaping, numbers)
// and prints them indented by two. Notes belong to the error or warning
// before them (diag/diag.h), so both forms nest them under it.
//
//===----------------------------------------------------------------------===//
#include "diag/render.h"

#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>

#include <cctype>
#include <map>

namespace etl {
namespace {

/// SARIF 2.1.0 levels are none/note/warning/error: a remark is a "note".
const char *sarif_level(Severity s) { return s == Severity::Remark ? "note" : severity_word(s); }

/// An error or warning with the notes after it.
struct Group {
  const Diagnostic *main;
  std::vector<const Diagnostic *> notes;
};

std::vector<Group> group(const Diag &d) {
  std::vector<Group> groups;
  for (const Diagnostic &x : d.diagnostics()) {
    if (x.severity == Severity::Note && !groups.empty())
      groups.back().notes.push_back(&x);
    else
      groups.push_back({&x, {}});
  }
  return groups;
}

/// [begin, end) of a range as 1-based line/column pairs; the end is one
/// column past the begin when the range is empty.
void bounds(const SourceRange &r, uint32_t &end_line, uint32_t &end_col) {
  end_line = r.begin.line;
  end_col = r.begin.col + 1;
  if (r.end.valid() && r.end.offset > r.begin.offset) {
    end_line = r.end.line;
    end_col = r.end.col;
  }
}

llvm::json::Value json_location(const SourceManager &sm, const SourceRange &r) {
  uint32_t el, ec;
  bounds(r, el, ec);
  return llvm::json::Object{{"file", sm.path(r.begin.file)},
                            {"line", r.begin.line},
                            {"column", r.begin.col},
                            {"end_line", el},
                            {"end_column", ec}};
}

llvm::json::Object json_diag(const SourceManager &sm, const Diagnostic &x) {
  llvm::json::Object o{
      {"kind", diag_name(x.id)}, {"severity", severity_word(x.severity)}, {"message", x.message}};
  if (x.range.valid())
    o["location"] = json_location(sm, x.range);
  return o;
}

std::string render_json(const Diag &d) {
  const SourceManager &sm = d.source_manager();
  llvm::json::Array diags;
  unsigned warnings = 0;
  for (const Group &g : group(d)) {
    llvm::json::Object o = json_diag(sm, *g.main);
    llvm::json::Array notes;
    for (const Diagnostic *n : g.notes)
      notes.push_back(json_diag(sm, *n));
    o["notes"] = std::move(notes);
    warnings += g.main->severity == Severity::Warning;
    diags.push_back(std::move(o));
  }
  llvm::json::Value doc = llvm::json::Object{
      {"diagnostics", std::move(diags)}, {"errors", d.error_count()}, {"warnings", warnings}};
  return llvm::formatv("{0:2}", doc).str() + "\n";
}

/// A path as a URI reference (SARIF's artifactLocation.uri): bytes other
/// than letters, digits, `-._~/` percent-encoded (`<stdin>` is `%3Cstdin%3E`).
std::string uri_of(const std::string &path) {
  static const char hex[] = "0123456789ABCDEF";
  std::string r;
  for (unsigned char ch : path) {
    if (std::isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~' || ch == '/') {
      r += static_cast<char>(ch);
    } else {
      r += '%';
      r += hex[ch >> 4];
      r += hex[ch & 15];
    }
  }
  return r;
}

/// A SARIF location (physicalLocation with a region), plus `message` for a
/// note's relatedLocation.
llvm::json::Object sarif_location(const SourceManager &sm, const SourceRange &r) {
  uint32_t el, ec;
  bounds(r, el, ec);
  return llvm::json::Object{
      {"physicalLocation",
       llvm::json::Object{
           {"artifactLocation", llvm::json::Object{{"uri", uri_of(sm.path(r.begin.file))}}},
           {"region", llvm::json::Object{{"startLine", r.begin.line},
                                         {"startColumn", r.begin.col},
                                         {"endLine", el},
                                         {"endColumn", ec}}}}}};
}

/// A kind's format with its placeholders shown as "…" (SARIF reads `{0}`
/// in a message as a placeholder of its own).
std::string rule_text(DiagId id) {
  return format_message(diag_format(id), std::vector<std::string>(10, "…"));
}

std::string render_sarif(const Diag &d, const std::string &tool_version) {
  const SourceManager &sm = d.source_manager();
  std::map<DiagId, size_t> rule_index;
  llvm::json::Array rules, results;
  for (const Group &g : group(d)) {
    const Diagnostic &x = *g.main;
    auto [it, added] = rule_index.emplace(x.id, rule_index.size());
    if (added)
      rules.push_back(
          llvm::json::Object{{"id", diag_name(x.id)},
                             {"shortDescription", llvm::json::Object{{"text", rule_text(x.id)}}},
                             {"defaultConfiguration",
                              llvm::json::Object{{"level", sarif_level(diag_severity(x.id))}}}});
    llvm::json::Object r{{"ruleId", diag_name(x.id)},
                         {"ruleIndex", it->second},
                         {"level", sarif_level(x.severity)},
                         {"message", llvm::json::Object{{"text", x.message}}}};
    if (x.range.valid())
      r["locations"] = llvm::json::Array{sarif_location(sm, x.range)};
    llvm::json::Array related;
    for (const Diagnostic *n : g.notes) {
      llvm::json::Object loc =
          n->range.valid() ? sarif_location(sm, n->range) : llvm::json::Object{};
      loc["id"] = related.size();
      loc["message"] = llvm::json::Object{{"text", n->message}};
      related.push_back(std::move(loc));
    }
    if (!related.empty())
      r["relatedLocations"] = std::move(related);
    results.push_back(std::move(r));
  }
  llvm::json::Value doc = llvm::json::Object{
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs", llvm::json::Array{llvm::json::Object{
                   {"tool", llvm::json::Object{{"driver",
                                                llvm::json::Object{{"name", "etlc"},
                                                                   {"version", tool_version},
                                                                   {"rules", std::move(rules)}}}}},
                   {"results", std::move(results)}}}}};
  return llvm::formatv("{0:2}", doc).str() + "\n";
}

} // namespace

std::optional<DiagFormat> parse_diag_format(const std::string &s) {
  if (s == "text")
    return DiagFormat::Text;
  if (s == "json")
    return DiagFormat::Json;
  if (s == "sarif")
    return DiagFormat::Sarif;
  return std::nullopt;
}

std::string render_diagnostics(const Diag &d, DiagFormat format, bool color,
                               const std::string &tool_version) {
  switch (format) {
  case DiagFormat::Json:
    return render_json(d);
  case DiagFormat::Sarif:
    return render_sarif(d, tool_version);
  case DiagFormat::Text:
    break;
  }
  return d.render(color);
}

bool use_color(const std::string &mode, bool stderr_is_terminal, const char *no_color_env) {
  if (mode == "always")
    return true;
  if (mode == "never")
    return false;
  return stderr_is_terminal && (!no_color_env || !*no_color_env);
}

} // namespace etl
