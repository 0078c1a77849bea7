//===- lsp/analysis.cpp - Running the compiler on a document -----------------===//
//
// Two runs on the same text: a parse with the imports merged, for the
// index (lsp/index.cpp), and check_source (driver/pipeline.h), the checks
// of `etlc compile --emit=taskgraph`, for the diagnostics and the facts
// hover shows. Diagnostics become LSP Diagnostic objects: an error or
// warning with the notes that follow it as relatedInformation. One located
// in another file (an imported module, a fn expanded from one) is shown at
// the first of its notes in the document ("in call to 'f' here"), else at
// the start of the document, its own place a related location.
//
// A file with fns or imports and no kernel is a module: the "no kernel"
// error is not shown for it.
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"
#include "frontend/modules.h"
#include "frontend/parser.h"
#include "lsp/analysis.h"
#include "lsp/text.h"

#include <llvm/Support/Path.h>

namespace etl::lsp {
namespace {

namespace json = llvm::json;

int lsp_severity(Severity s) {
  switch (s) {
  case Severity::Error:
    return 1;
  case Severity::Warning:
    return 2;
  case Severity::Note:
    return 3;
  case Severity::Remark:
    return 4;
  }
  return 1;
}

json::Object location(const SourceManager &sm, const SourceRange &r) {
  std::string path = r.valid() && r.begin.file < sm.file_count() ? sm.path(r.begin.file) : "";
  return json::Object{{"uri", path_to_uri(path)},
                      {"range", range_of(r.valid() ? sm.text(r.begin.file) : "", r)}};
}

bool in_document(const SourceManager &sm, const SourceRange &r, FileId doc) {
  // An expansion of a fn of this same file is a copy with the same path.
  return r.valid() && r.begin.file < sm.file_count() &&
         (r.begin.file == doc || sm.path(r.begin.file) == sm.path(doc));
}

void add_diagnostics(const Compilation &c, bool is_module, Analysis &a) {
  const std::vector<Diagnostic> &ds = c.diag.diagnostics();
  for (size_t i = 0; i < ds.size(); ++i) {
    const Diagnostic &d = ds[i];
    if (d.severity == Severity::Remark || (is_module && d.id == DiagId::NoKernel))
      continue;
    json::Array related;
    SourceRange shown = in_document(c.sm, d.range, c.file) ? d.range : SourceRange();
    size_t j = i + 1;
    for (; j < ds.size() && ds[j].severity == Severity::Note; ++j) {
      if (!shown.valid() && in_document(c.sm, ds[j].range, c.file))
        shown = ds[j].range;
      if (ds[j].range.valid())
        related.push_back(
            json::Object{{"location", location(c.sm, ds[j].range)}, {"message", ds[j].message}});
    }
    if (d.severity == Severity::Note && i > 0)
      continue; // a note of the diagnostic before (handled with it)
    if (!in_document(c.sm, d.range, c.file) && d.range.valid())
      related.insert(related.begin(), json::Object{{"location", location(c.sm, d.range)},
                                                   {"message", "the " + std::string(severity_word(d.severity)) + " is here"}});
    std::string msg = d.message;
    json::Object diag{{"range", range_of(a.text, shown)},
                      {"severity", lsp_severity(d.severity)},
                      {"source", "etlc"},
                      {"code", diag_name(d.id)},
                      {"message", msg}};
    if (!related.empty())
      diag["relatedInformation"] = std::move(related);
    a.diagnostics.push_back(std::move(diag));
    i = j - 1;
  }
}

} // namespace

namespace {

void analyse_here(const std::string &path, const std::string &text, const SearchPath &search,
                  Analysis &a) {
  a.path = path;
  a.text = text;
  std::vector<std::string> dirs = search.import_dirs;
  dirs.push_back(search.stdlib_dir);

  // 1. The index, from the parsed tree with its imports.
  bool is_module = false;
  {
    SourceManager sm;
    Diag quiet(sm);
    FileId f = sm.add(path, text);
    std::unique_ptr<Program> p = parse_program(f, sm, quiet);
    if (p) {
      load_imports(*p, sm, quiet, dirs);
      is_module = p->kernels.empty() && (!p->fns.empty() || !p->imports.empty());
      index_program(*p, sm, f, a);
    }
  }

  // 2. The compiler's checks, for diagnostics and facts.
  Compilation c;
  c.import_dirs = search.import_dirs;
  c.stdlib_dir = search.stdlib_dir;
  const std::vector<std::string> targets = CompileOptions().targets;
  c.target = target_info(targets);
  c.file = c.sm.add(path, text);
  std::optional<TileModule> tiles;
  try {
    check_source(c, targets, tiles);
  } catch (const std::exception &e) {
    c.diag.error(DiagId::InternalCompilerError, SourceRange(), {e.what()});
  }
  add_diagnostics(c, is_module, a);
  semantic_facts(c, tiles ? &*tiles : nullptr, a);
}

} // namespace

Analysis analyse(const std::string &path, const std::string &text, const SearchPath &search) {
  Analysis a;
  run_on_compiler_stack([&] { analyse_here(path, text, search, a); });
  return a;
}

} // namespace etl::lsp
