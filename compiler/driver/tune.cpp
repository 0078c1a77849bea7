//===- driver/tune.cpp - `etlc tune`: enumerate and prune the tunables -----===//
//
// Each combination of candidates the constraints allow is compiled up to the
// task graph (the tile IR built, its shared memory planned against the
// targets' budget, the register estimate checked) with its values as -D, in
// process, diagnostics as JSON; its errors or register-spill warnings prune
// it. Ranking what is left (measuring on a GPU, or the timing model) is
// issue 33 item 2 and not implemented: the table says so.
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"
#include "driver/tunables.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/JSON.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <unistd.h>

namespace etl {

namespace {

/// Why a compilation's JSON diagnostics prune its combination ("" keeps it).
std::string prune_reason(const std::string &json) {
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(json);
  if (!v) {
    llvm::consumeError(v.takeError());
    return "etlc's diagnostics did not parse";
  }
  const llvm::json::Object *o = v->getAsObject();
  const llvm::json::Array *ds = o ? o->getArray("diagnostics") : nullptr;
  if (!ds)
    return "";
  for (const llvm::json::Value &d : *ds) {
    const llvm::json::Object *x = d.getAsObject();
    if (!x)
      continue;
    auto kind = x->getString("kind"), sev = x->getString("severity"), msg = x->getString("message");
    if ((sev && *sev == "error") || (kind && *kind == "RegisterSpill"))
      return (kind ? kind->str() + ": " : "") + (msg ? msg->str() : "");
  }
  return "";
}

/// ptxas from /usr/local/cuda/bin, $CUDA_HOME/bin or PATH; "" when none.
std::string find_ptxas() {
  std::vector<std::string> dirs = {"/usr/local/cuda/bin"};
  if (const char *h = std::getenv("CUDA_HOME"))
    dirs.push_back(std::string(h) + "/bin");
  if (const char *path = std::getenv("PATH"))
    for (llvm::StringRef rest = path; !rest.empty();) {
      auto [dir, tail] = rest.split(':');
      dirs.push_back(dir.str());
      rest = tail;
    }
  for (const std::string &d : dirs)
    if (!d.empty() && access((d + "/ptxas").c_str(), X_OK) == 0)
      return d + "/ptxas";
  return "";
}

/// The bytes ptxas -v reports spilled (stores) for the PTX of `o` on GPU
/// target `target`, or a reason it could not tell.
std::string ptxas_spills(CompileOptions o, const std::string &target, const std::string &ptxas) {
  o.emit = "ptx";
  o.targets = {target};
  llvm::SmallString<128> path;
  int fd = -1;
  if (llvm::sys::fs::createTemporaryFile("etlc-tune", "ptx", fd, path))
    return "no temporary file for ptxas";
  close(fd);
  o.output = path.str().str();
  std::ostringstream so, se;
  if (compile(o, so, se) != kExitOk) {
    llvm::sys::fs::remove(path);
    return "code generation failed";
  }
  std::string cmd = "'" + ptxas + "' -v -arch=" + target + " '" + o.output + "' -o /dev/null 2>&1";
  std::string text;
  if (FILE *f = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, f))
      text += buf;
    pclose(f);
  }
  llvm::sys::fs::remove(path);
  // One "N bytes spill stores" per function (the kernel and its callees).
  const std::string key = " bytes spill stores";
  size_t at = text.find(key);
  if (at == std::string::npos)
    return "ptxas -v said nothing of spills: " + text.substr(0, 200);
  long bytes = 0;
  for (; at != std::string::npos; at = text.find(key, at + 1)) {
    size_t from = text.rfind(' ', at - 1);
    bytes += std::strtol(text.c_str() + (from == std::string::npos ? 0 : from + 1), nullptr, 10);
  }
  return bytes > 0 ? "ptxas: " + std::to_string(bytes) + " bytes spill stores on " + target : "";
}

} // namespace

int tune(const CompileOptions &opts, std::ostream &out, std::ostream &err) {
  // The program checked once at the command line's values: its tunables.
  CompileOptions first = opts;
  first.emit = "tunables";
  std::ostringstream listing, diags;
  int code = compile(first, listing, diags);
  if (code != kExitOk) {
    err << diags.str();
    return code;
  }
  Compilation c;
  c.import_dirs = opts.import_dirs;
  c.defines = opts.defines;
  c.target = target_info(opts.targets);
  std::string io_err;
  if (!c.sm.load(opts.input, c.file, io_err) || !compile_front(c)) {
    err << "etlc tune: cannot check '" << opts.input << "'\n";
    return kExitUsage;
  }
  uint64_t total = 0;
  auto combos = allowed_combinations(*c.program, total, 4096);
  if (!combos) {
    err << "etlc tune: more than 4096 candidate combinations; pin some tunables with -D\n";
    return kExitUsage;
  }
  out << listing.str() << "\n";
  std::string ptxas = find_ptxas(), gpu;
  for (const std::string &t : opts.targets)
    if (const TargetDesc *d = find_target(t); gpu.empty() && d && d->kind == TargetKind::Nvptx)
      gpu = t;
  if (ptxas.empty() || gpu.empty())
    out << "(no " << (gpu.empty() ? "GPU target" : "ptxas")
        << ": spills are the register estimate's only)\n";
  else
    out << "(spills: the register estimate, then " << ptxas << " -v on " << gpu << ")\n";
  size_t kept = 0;
  for (const TunableChoice &choice : *combos) {
    CompileOptions o = opts;
    o.emit = "taskgraph";
    o.output.clear();
    o.diag_format = DiagFormat::Json;
    o.color = false;
    std::string label;
    for (const auto &[name, value] : choice) {
      o.defines.push_back(name + "=" + value);
      label += (label.empty() ? "" : " ") + name + "=" + value;
    }
    std::ostringstream so, se;
    compile(o, so, se);
    std::string why = prune_reason(se.str());
    if (why.empty() && !ptxas.empty() && !gpu.empty())
      why = ptxas_spills(o, gpu, ptxas);
    kept += why.empty();
    out << (why.empty() ? "  kept    " : "  pruned  ") << label << (why.empty() ? "" : ": " + why)
        << "\n";
  }
  out << kept << " of " << combos->size() << " allowed combinations kept (" << total
      << " candidate combinations); pruned: a compilation error (shared memory over the budget of "
         "the targets, ...) a register-spill estimate or ptxas's spills. Not ranked: ranking "
         "(measured on a GPU, or modelled) is not implemented yet\n";
  return kExitOk;
}

} // namespace etl
