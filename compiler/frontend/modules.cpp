//===- frontend/modules.cpp - `import` of ETL modules ---------------------===//
//
// Depth-first over the imports: a module's own imports are loaded before it,
// so the merged consts come in an order where each is declared before use.
// The merge keeps the first definition of a name and reports any later one
// from a different file; duplicates within one file are left to the stage
// that reports them for a single file (sema for consts, inline for fns).
//
//===----------------------------------------------------------------------===//
#include "frontend/modules.h"

#include "frontend/parser.h"

#include <filesystem>
#include <map>
#include <set>

#ifndef ETL_STDLIB_DIR
#define ETL_STDLIB_DIR "stdlib"
#endif

namespace etl {

// An installed etlc (PREFIX/bin/etlc) uses PREFIX/share/etl/stdlib, found
// from its own location; from the build tree, the source tree's stdlib/.
std::string default_stdlib_dir() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::filesystem::path installed = exe.parent_path().parent_path() / "share" / "etl" / "stdlib";
    if (std::filesystem::is_directory(installed / "std", ec))
      return installed.string();
  }
  return ETL_STDLIB_DIR;
}

namespace {

class Loader {
public:
  Loader(SourceManager &sm, Diag &diag, const std::vector<std::string> &search_path)
      : sm_(sm), diag_(diag), search_path_(search_path) {}

  /// Loads what `imports` name, dependencies first, into modules_.
  void load_all(const std::vector<ImportDecl> &imports) {
    for (const ImportDecl &imp : imports)
      load(imp);
  }

  std::vector<std::unique_ptr<Program>> modules_; ///< dependencies first

private:
  void load(const ImportDecl &imp) {
    std::string name = imp.dotted();
    if (!seen_.insert(name).second)
      return; // loaded, being loaded (a cycle) or already reported missing
    std::string rel;
    for (size_t i = 0; i < imp.path.size(); ++i)
      rel += (i ? "/" : "") + imp.path[i];
    rel += ".etl";
    std::string searched, found;
    for (const std::string &dir : search_path_) {
      std::string cand = dir.empty() ? rel : dir + "/" + rel;
      std::error_code ec;
      if (std::filesystem::is_regular_file(cand, ec)) {
        found = cand;
        break;
      }
      searched += (searched.empty() ? "'" : ", '") + cand + "'";
    }
    if (found.empty()) {
      diag_.error(
          DiagId::UnknownModule, imp.range,
          {name, searched.empty() ? "no directories (the search path is empty)" : searched});
      return;
    }
    FileId id = 0;
    std::string err;
    if (!sm_.load(found, id, err)) {
      diag_.error(DiagId::CannotReadFile, imp.range, {found, err});
      return;
    }
    std::unique_ptr<Program> m = parse_program(id, sm_, diag_);
    for (const ImportDecl &sub : m->imports)
      load(sub);
    modules_.push_back(std::move(m));
  }

  SourceManager &sm_;
  Diag &diag_;
  const std::vector<std::string> &search_path_;
  std::set<std::string> seen_;
};

/// Where each top-level name was first defined.
class Names {
public:
  Names(const SourceManager &sm, Diag &diag) : sm_(sm), diag_(diag) {}

  /// Records `name`; false (after reporting) if another file defined it.
  bool add(const std::string &name, SourceRange r) {
    auto [it, fresh] = first_.emplace(name, r);
    if (fresh || it->second.begin.file == r.begin.file)
      return true;
    diag_.error(DiagId::DuplicateImportedName, r,
                {name, sm_.path(it->second.begin.file), sm_.path(r.begin.file)});
    diag_.note(DiagId::NoteDeclaredHere, it->second, {name});
    return false;
  }

private:
  const SourceManager &sm_;
  Diag &diag_;
  std::map<std::string, SourceRange> first_;
};

} // namespace

bool load_imports(Program &p, SourceManager &sm, Diag &diag,
                  const std::vector<std::string> &search_path) {
  if (p.imports.empty())
    return true;
  unsigned before = diag.error_count();
  Loader loader(sm, diag, search_path);
  loader.load_all(p.imports);

  // The program's own names first: a clash is reported at the module's
  // definition, which the program's author did not write but imported.
  Names names(sm, diag);
  for (const ConstDecl &c : p.consts)
    names.add(c.name, c.name_range);
  for (const FnDecl &f : p.fns)
    names.add(f.name, f.name_range);

  std::vector<ConstDecl> consts;
  std::vector<FnDecl> fns;
  for (auto &m : loader.modules_) {
    for (ConstDecl &c : m->consts)
      if (names.add(c.name, c.name_range))
        consts.push_back(std::move(c));
    for (FnDecl &f : m->fns)
      if (names.add(f.name, f.name_range))
        fns.push_back(std::move(f));
    for (KernelDecl &k : m->kernels)
      p.kernels.push_back(std::move(k));
  }
  for (ConstDecl &c : p.consts)
    consts.push_back(std::move(c));
  p.consts = std::move(consts);
  for (FnDecl &f : fns)
    p.fns.push_back(std::move(f));
  return diag.error_count() == before;
}

} // namespace etl
