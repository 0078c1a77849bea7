//===- driver/time.cpp - --emit=cost and --emit=time ----------------------===//
//
// What this owns: parse_binding, emit_cost and emit_time (driver/time.h).
//
//===----------------------------------------------------------------------===//
#include "driver/time.h"

#include "cost/cost.h"
#include "cost/ptx_loops.h"
#include "cost/timing.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <unistd.h>

namespace etl {

std::optional<std::map<std::string, int64_t>> parse_binding(const CompileOptions &opts,
                                                            const KernelDecl &k, Diag &diag,
                                                            bool need_all) {
  const SourceRange none;
  std::string dims, ints;
  for (const DimDecl &d : k.dims)
    dims += (dims.empty() ? "" : " ") + d.name;
  // An integer tensor parameter may be given a value too: every element the
  // cost reads from it (a loop or task range over kv_len[b]) is taken as it.
  auto int_tensor = [&](const std::string &name) {
    return std::any_of(k.tensors.begin(), k.tensors.end(), [&](const TensorDecl &t) {
      return !t.is_buffer && t.name == name &&
             (t.type.elem == ElemType::I32 || t.type.elem == ElemType::I64);
    });
  };
  for (const TensorDecl &t : k.tensors)
    if (int_tensor(t.name))
      ints += (ints.empty() ? "" : " ") + t.name;
  if (!ints.empty())
    dims += " (or an integer tensor, each element read as VALUE: " + ints + ")";
  std::map<std::string, int64_t> env;
  std::stringstream items(opts.bind);
  std::string item;
  while (std::getline(items, item, ',')) {
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq);
    bool data = int_tensor(name);
    bool known = data || std::any_of(k.dims.begin(), k.dims.end(),
                                     [&](const DimDecl &d) { return d.name == name; });
    int64_t v = 0; // getAsInteger: true on anything but a whole base-10 int64
    bool number =
        eq != std::string::npos && !llvm::StringRef(item).substr(eq + 1).getAsInteger(10, v);
    if (!known || !number || v < (data ? 0 : 1)) {
      diag.error(DiagId::BadBind, none, {item, dims});
      return std::nullopt;
    }
    env[name] = v;
  }
  if (!env.empty() || need_all)
    for (const DimDecl &d : k.dims)
      if (!env.count(d.name)) {
        diag.error(DiagId::BindMissingDim, none, {d.name, k.name});
        return std::nullopt;
      }
  return env;
}

const GpuSpec *pick_gpu(const CompileOptions &opts, Diag &diag) {
  const GpuSpec *gpu = find_gpu(opts.gpu);
  if (!gpu) {
    std::string ids;
    for (const GpuSpec &s : known_gpus())
      ids += (ids.empty() ? "" : " ") + std::string(s.id);
    diag.error(DiagId::UnknownGpu, SourceRange(), {opts.gpu, ids});
  }
  return gpu;
}

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

PtxasRun run_ptxas(const std::string &ptxas, const std::string &ptx_path, const std::string &arch) {
  PtxasRun r;
  std::string cubin = ptx_path + ".cubin";
  std::string cmd =
      "'" + ptxas + "' -v -arch=" + arch + " '" + ptx_path + "' -o '" + cubin + "' 2>&1";
  if (FILE *f = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, f))
      r.text += buf;
    pclose(f);
  }
  auto obj = llvm::object::ObjectFile::createObjectFile(cubin);
  if (obj) {
    double bytes = 0;
    for (const llvm::object::SectionRef &sec : obj->getBinary()->sections()) {
      llvm::Expected<llvm::StringRef> name = sec.getName();
      if (!name) {
        llvm::consumeError(name.takeError());
        continue;
      }
      if (name->starts_with(".text."))
        bytes += double(sec.getSize());
    }
    r.sass = std::floor(bytes / 16);
  } else {
    llvm::consumeError(obj.takeError());
  }
  llvm::sys::fs::remove(cubin);
  return r;
}

namespace {

bool check_format(const CompileOptions &opts, Diag &diag) {
  if (opts.format == "text" || opts.format == "json")
    return true;
  diag.error(DiagId::BadCommandLine, SourceRange(),
             {"unknown --format '" + opts.format + "'; expected text or json"});
  return false;
}

} // namespace

/// --emit=cost: parses --bind against the kernel's dims, prints the report.
int emit_cost(const CompileOptions &opts, const Program &p, std::ostream &out, Diag &diag,
              const TaskGraph &g) {
  const KernelDecl &k = p.kernels[0];
  const GpuSpec *gpu = pick_gpu(opts, diag);
  if (!gpu || !check_format(opts, diag))
    return kExitUsage;
  auto env = parse_binding(opts, k, diag, false);
  if (!env)
    return kExitUsage;
  out << print_cost(estimate_cost(k, g), env->empty() ? nullptr : &*env, *gpu,
                    opts.format == "json");
  return kExitOk;
}

/// --emit=time: the timing model at the binding, on the GPU, from `ptx`.
int emit_time(const CompileOptions &opts, const Program &p, const TaskGraph &g,
              const std::string &ptx, std::ostream &out, Diag &diag) {
  const KernelDecl &k = p.kernels[0];
  const GpuSpec *gpu = pick_gpu(opts, diag);
  if (!gpu || !check_format(opts, diag))
    return kExitUsage;
  auto env = parse_binding(opts, k, diag, true);
  if (!env)
    return kExitUsage;
  std::vector<std::string> names;
  for (const TaskGroup &grp : g.groups)
    names.push_back(grp.name);
  TimingOptions to;
  to.cas_queue = opts.queue == "cas";
  // the SASS ratio: ptxas's cubin against the PTX, when ptxas is there
  std::string ptxas = opts.sass_ratio ? find_ptxas() : "";
  llvm::SmallString<128> path;
  int fd = -1;
  if (!ptxas.empty() && !llvm::sys::fs::createTemporaryFile("etlc-time", "ptx", fd, path)) {
    {
      llvm::raw_fd_ostream os(fd, true);
      os << ptx;
    }
    std::string arch = opts.targets.empty() ? "sm_90" : opts.targets[0];
    for (const std::string &t : opts.targets)
      if (t.rfind("sm_", 0) == 0) {
        arch = t;
        break;
      }
    PtxasRun run = run_ptxas(ptxas, path.str().str(), arch);
    llvm::sys::fs::remove(path);
    double expanded = expanded_ptx(ptx);
    if (run.sass > 0 && expanded > 0) {
      to.sass_ratio = run.sass / expanded;
      char note[160];
      std::snprintf(note, sizeof note, "SASS / expanded PTX from the cubin: %.0f / %.0f = %.3f",
                    run.sass, expanded, to.sass_ratio);
      to.sass_note = note;
    }
  } else if (!opts.sass_ratio) {
    to.sass_note = "SASS taken as expanded PTX (ratio 1: --sass-ratio=false)";
  } else {
    to.sass_note = "SASS taken as expanded PTX (ratio 1: no ptxas)";
  }
  std::string error;
  auto r = model_time(estimate_cost(k, g), g, analyse_ptx(ptx, names), *env, *gpu, to, error);
  if (!r) {
    diag.error(DiagId::BadCommandLine, SourceRange(), {"--emit=time: " + error});
    return kExitUsage;
  }
  out << print_time(*r, *env, opts.format == "json");
  return kExitOk;
}

} // namespace etl
