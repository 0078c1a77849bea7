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
#include "driver/time.h"
#include "driver/tunables.h"

#include "ast/tunables.h"
#include "cost/cost.h"
#include "cost/ptx_loops.h"
#include "cost/timing.h"
#include "target/target.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SHA256.h>
#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
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

/// The bytes ptxas -v reports spilled (stores) in its text: "" when none,
/// else why the candidate is pruned.
std::string spills_of(const std::string &text, const std::string &target) {
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

/// The PTX of `o` for `target` (a temporary file, read and removed), or
/// nullopt when code generation failed.
std::optional<std::string> ptx_of(CompileOptions o, const std::string &target, std::string &path) {
  o.emit = "ptx";
  o.targets = {target};
  llvm::SmallString<128> tmp;
  int fd = -1;
  if (llvm::sys::fs::createTemporaryFile("etlc-tune", "ptx", fd, tmp))
    return std::nullopt;
  close(fd);
  o.output = path = tmp.str().str();
  std::ostringstream so, se;
  if (compile(o, so, se) != kExitOk) {
    llvm::sys::fs::remove(path);
    return std::nullopt;
  }
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return std::nullopt;
  return (*buf)->getBuffer().str();
}

} // namespace

namespace {

struct Candidate {
  TunableChoice choice;
  std::string label, why; ///< why: "" when kept
  bool is_default = false;
  std::vector<std::optional<double>> seconds; ///< per binding, the model's
};

/// Each tunable at its default: the combination the program runs untuned.
TunableChoice default_choice(const Program &p) {
  TunableChoice d;
  for (const ConstDecl &c : p.consts)
    if (c.tunable())
      d.emplace_back(c.name, c.is_float ? format_float_const(c.float_default)
                                        : std::to_string(c.folded_default));
  return d;
}

std::string sha256_of(const std::string &text) {
  auto h = llvm::SHA256::hash(llvm::arrayRefFromStringRef(text));
  return llvm::toHex(h, true);
}

/// `o`'s program read and checked up to its task graph, into `c`.
bool check(const CompileOptions &o, Compilation &c) {
  c.import_dirs = o.import_dirs;
  c.defines = o.defines;
  c.target = target_info(o.targets);
  std::string io_err;
  return c.sm.load(o.input, c.file, io_err) && compile_front(c);
}

/// The model's seconds of candidate `o` (its PTX given) at each binding.
std::vector<std::optional<double>> model_candidate(const CompileOptions &o, const std::string &ptx,
                                                   const std::vector<std::map<std::string, int64_t>> &envs,
                                                   const GpuSpec &gpu, double sass,
                                                   std::string &why) {
  std::vector<std::optional<double>> out(envs.size());
  Compilation c;
  if (!check(o, c)) {
    why = "the model could not check it";
    return out;
  }
  const KernelDecl &k = c.program->kernels[0];
  KernelCost kc = estimate_cost(k, c.graph);
  std::vector<std::string> names;
  for (const TaskGroup &g : c.graph.groups)
    names.push_back(g.name);
  PtxAnalysis pa = analyse_ptx(ptx, names);
  TimingOptions to;
  if (double expanded = expanded_ptx(ptx); sass > 0 && expanded > 0)
    to.sass_ratio = sass / expanded;
  for (size_t i = 0; i < envs.size(); ++i) {
    std::string error;
    if (auto r = model_time(kc, c.graph, pa, envs[i], gpu, to, error))
      out[i] = r->seconds;
    else
      why = "the model: " + error;
  }
  return out;
}

std::string fmt_ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", s * 1e3);
  return buf;
}

} // namespace

int tune(const TuneOptions &topts, std::ostream &out, std::ostream &err) {
  const CompileOptions &opts = topts.compile;
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
  if (!check(opts, c)) {
    err << "etlc tune: cannot check '" << opts.input << "'\n";
    return kExitUsage;
  }
  uint64_t total = 0;
  auto combos = allowed_combinations(*c.program, total, 4096);
  if (!combos) {
    err << "etlc tune: more than 4096 candidate combinations; pin some tunables with -D\n";
    return kExitUsage;
  }
  // -D NAME=V pins a tunable: only its combinations with V stay
  for (const std::string &d : opts.defines) {
    std::string name = d.substr(0, d.find('=')), value = d.substr(d.find('=') + 1);
    combos->erase(std::remove_if(combos->begin(), combos->end(),
                                 [&](const TunableChoice &ch) {
                                   for (const auto &nv : ch)
                                     if (nv.first == name && nv.second != value)
                                       return true;
                                   return false;
                                 }),
                  combos->end());
  }
  // the bindings and the GPU the model ranks for
  std::vector<std::map<std::string, int64_t>> envs;
  for (const std::string &b : topts.binds) {
    CompileOptions bo = opts;
    bo.bind = b;
    if (auto env = parse_binding(bo, c.program->kernels[0], c.diag, true))
      envs.push_back(*env);
  }
  const GpuSpec *gpu = find_gpu(topts.gpu);
  if (c.diag.has_errors() || !gpu || !find_gpu_timing(topts.gpu)) {
    for (const Diagnostic &d : c.diag.diagnostics())
      err << "etlc tune: " << d.message << "\n";
    if (!gpu || !find_gpu_timing(topts.gpu))
      err << "etlc tune: --gpu " << topts.gpu
          << ": the timing model knows h100-sxm and h200 (cost/gpus.def ETL_GPU_TIMING)\n";
    return kExitUsage;
  }
  out << listing.str() << "\n";
  std::string ptxas = find_ptxas(), target;
  for (const std::string &t : opts.targets)
    if (const TargetDesc *d = find_target(t); target.empty() && d && d->kind == TargetKind::Nvptx)
      target = t;
  if (ptxas.empty() || target.empty())
    out << "(no " << (target.empty() ? "GPU target" : "ptxas")
        << ": spills are the register estimate's only)\n";
  else
    out << "(spills: the register estimate, then " << ptxas << " -v on " << target << ")\n";
  bool ranking = !target.empty() && !envs.empty();
  if (ranking)
    out << "(ranked by the timing model on " << gpu->id << ", from each candidate's " << target
        << " code" << (ptxas.empty() ? "" : " and its SASS ratio (ptxas's cubin)")
        << ": modelled, not measured; etlc measures nothing on a GPU yet)\n";
  else
    out << "(not ranked: " << (target.empty() ? "no sm_* target for the model to read" : "no --bind")
        << ")\n";
  TunableChoice def = default_choice(*c.program);
  std::vector<Candidate> cands;
  size_t n = 0;
  for (const TunableChoice &choice : *combos) {
    Candidate cand;
    cand.choice = choice;
    cand.is_default = choice == def;
    CompileOptions o = opts;
    o.emit = "taskgraph";
    o.output.clear();
    o.diag_format = DiagFormat::Json;
    o.color = false;
    for (const auto &[name, value] : choice) {
      o.defines.push_back(name + "=" + value);
      cand.label += (cand.label.empty() ? "" : " ") + name + "=" + value;
    }
    err << "tune: [" << ++n << "/" << combos->size() << "] " << cand.label << std::flush;
    std::ostringstream so, se;
    compile(o, so, se);
    cand.why = prune_reason(se.str());
    if (cand.why.empty() && !target.empty()) {
      std::string path;
      auto ptx = ptx_of(o, target, path);
      if (!ptx)
        cand.why = "code generation failed";
      PtxasRun run;
      if (cand.why.empty() && !ptxas.empty()) {
        run = run_ptxas(ptxas, path, target);
        cand.why = spills_of(run.text, target);
      }
      llvm::sys::fs::remove(path);
      if (cand.why.empty() && ranking) {
        cand.seconds = model_candidate(o, *ptx, envs, *gpu, run.sass, cand.why);
        for (size_t i = 0; i < envs.size(); ++i)
          err << (i ? ", " : ": ")
              << (cand.seconds[i] ? fmt_ms(*cand.seconds[i]) + " ms modelled" : "?");
      }
    }
    err << (cand.why.empty() ? "" : ": pruned: " + cand.why) << "\n";
    cands.push_back(std::move(cand));
  }
  size_t kept = 0;
  for (const Candidate &k : cands)
    kept += k.why.empty();
  // per binding: the table of every candidate, ranked, and the pick
  llvm::json::Array records;
  for (size_t b = 0; b < std::max<size_t>(1, envs.size()); ++b) {
    std::vector<const Candidate *> order;
    for (const Candidate &k : cands)
      order.push_back(&k);
    auto t = [&](const Candidate *k) -> double {
      return ranking && k->why.empty() && k->seconds[b] ? *k->seconds[b]
                                                        : std::numeric_limits<double>::infinity();
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](const Candidate *x, const Candidate *y) { return t(x) < t(y); });
    const Candidate *dflt = nullptr;
    for (const Candidate &k : cands)
      if (k.is_default)
        dflt = &k;
    out << "\n";
    if (ranking) {
      out << "binding " << topts.binds[b] << " on " << gpu->id << " (" << target << "):\n";
      char line[512];
      std::snprintf(line, sizeof line, "%5s  %-40s %12s %10s  %s\n", "rank", "candidate", "modelled ms",
                    "/ default", "");
      out << line;
      size_t rank = 0;
      for (const Candidate *k : order) {
        bool ranked = std::isfinite(t(k));
        std::string vs = ranked && dflt && std::isfinite(t(dflt))
                             ? fmt_ms(t(k) / t(dflt) / 1e3).substr(0, 5) + "x"
                             : "";
        std::string note = k->is_default ? "(default)" : "";
        if (!ranked)
          note += (note.empty() ? "" : " ") + std::string("pruned: ") + k->why;
        std::snprintf(line, sizeof line, "%5s  %-40s %12s %10s  %s\n",
                      ranked ? std::to_string(++rank).c_str() : "-", k->label.c_str(),
                      ranked ? fmt_ms(t(k)).c_str() : "", vs.c_str(), note.c_str());
        out << line;
      }
      if (std::isfinite(t(order[0])))
        out << "pick: " << order[0]->label << " (" << fmt_ms(t(order[0])) << " ms modelled"
            << (dflt && std::isfinite(t(dflt)) ? ", default " + fmt_ms(t(dflt)) + " ms" : "")
            << ")\n";
    } else {
      for (const Candidate &k : cands)
        out << (k.why.empty() ? "  kept    " : "  pruned  ") << k.label
            << (k.why.empty() ? "" : ": " + k.why) << "\n";
    }
    if (!ranking)
      break;
    llvm::json::Array rows;
    for (const Candidate *k : order) {
      llvm::json::Object values;
      for (const auto &nv : k->choice)
        values[nv.first] = nv.second;
      llvm::json::Object row{{"candidate", std::move(values)}, {"default", k->is_default}};
      if (std::isfinite(t(k))) {
        row["seconds"] = t(k);
        row["how"] = "modelled";
      } else {
        row["pruned"] = k->why;
      }
      rows.push_back(std::move(row));
    }
    llvm::json::Object bind;
    for (const auto &[name, v] : envs[b])
      bind[name] = v;
    records.push_back(llvm::json::Object{{"binding", std::move(bind)}, {"candidates", std::move(rows)}});
  }
  out << kept << " of " << combos->size() << " allowed combinations kept (" << total
      << " candidate combinations); pruned: a compilation error (shared memory over the budget of "
         "the targets, ...) a register-spill estimate or ptxas's spills"
      << (ranking ? "" : "; not ranked") << "\n";
  if (!topts.record.empty() && ranking) {
    llvm::json::Object rec{{"program", opts.input},
                           {"program_sha256", sha256_of(c.sm.text(c.file))},
                           {"etlc", version_text()},
                           {"target", target},
                           {"gpu", gpu->id},
                           {"how", "modelled"},
                           {"defines", llvm::json::Array(opts.defines)},
                           {"bindings", std::move(records)}};
    std::error_code ec;
    llvm::raw_fd_ostream f(topts.record, ec);
    if (ec) {
      err << "etlc tune: cannot write '" << topts.record << "': " << ec.message() << "\n";
      return kExitUsage;
    }
    f << llvm::formatv("{0:2}", llvm::json::Value(std::move(rec))) << "\n";
    out << "record: " << topts.record << "\n";
  }
  return kExitOk;
}

} // namespace etl
