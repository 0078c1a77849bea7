//===- tools/etlrun/main.cpp - Run an .etlb artifact from .npy files ------===//
//
//   etlrun prog.etlb [--device sim|cuda|auto] [--dim N=1000]...
//          [--in x=x.npy]... [--out y=y.npy]... [--check y=ref.npy]...
//          [--rtol R] [--atol A] [--trace t.json] [--profile p.json]
//          [--watchdog-ms N] [--sim-workers N] [--seed S] [--int-range LO:HI]
//          [--scalar eps=1e-6]... [--params] [--version]
// (--params also lists an artifact's variants and, given --dim, the one
// that runs; a run of an artifact of several variants says which ran)
//
// After IREE's iree-run-module: loads the artifact, binds the dims given
// with --dim and those the --in arrays imply (an axis whose extent is a dim
// name), fills every tensor without --in with random values (floats uniform
// in [-1, 1), integers in --int-range, default 0:1, since integer
// parameters are usually indices), runs once, writes --out arrays and
// compares --check arrays within |got - ref| <= atol + rtol * |ref|.
// Scalar parameters (`eps: f32`) take their value from --scalar NAME=VALUE,
// parsed for the parameter's dtype (f16 and bf16 rounded to nearest even);
// one without --scalar is an error.
// --out and --check paths are checked before the run (a reference that
// does not read or has the wrong shape, an output that cannot be written).
// Written against the public runtime API only. Exit status: 0 success (and
// --help, --version), 1 a failed run or check, 2 bad usage or input (every
// command-line error too, whatever CLI11's own code for it).
//
//===----------------------------------------------------------------------===//
#include "npy.h"

#include <CLI/CLI.hpp>
#include <etl/etl.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <unistd.h>

using etlrun::NpyArray;

namespace {

struct Param {
  etlTensorInfo info;
  int index = 0;
  NpyArray host; // what is copied to the device, then read back
  void *dptr = nullptr;
};

[[noreturn]] void fail(int code, const std::string &msg) {
  std::fprintf(stderr, "etlrun: error: %s\n", msg.c_str());
  std::exit(code);
}

std::string api_error(etlStatus st) {
  return std::string(etlGetErrorName(st)) + ": " + etlGetLastErrorMessage();
}

// "name=value" into its halves.
std::pair<std::string, std::string> split_eq(const std::string &s, const char *opt) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    fail(2, std::string(opt) + " '" + s + "': expected NAME=VALUE");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

std::string shape_text(const std::vector<int64_t> &s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i)
    t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

// The f16 bits of `v` (round to nearest even); false when |v| overflows f16.
bool f16_bits(double v, uint16_t &out) {
  float f = (float)v;
  uint32_t w;
  std::memcpy(&w, &f, 4);
  uint32_t sign = (w >> 16) & 0x8000u;
  double a = std::fabs(v);
  if (std::isnan(v)) {
    out = (uint16_t)(sign | 0x7E00u);
    return true;
  }
  if (a >= 65520.0) // rounds to infinity
    return std::isinf(v) ? (out = (uint16_t)(sign | 0x7C00u), true) : false;
  // scale into the integer grid of the target's precision, round half to even
  int e;
  std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1;   // a = 1.x * 2^exp
  if (exp < -14)
    exp = -14;                                        // subnormal: fixed step 2^-24
  double q = std::nearbyint(std::ldexp(a, 10 - exp)); // mantissa with the implicit bit
  if (q >= 2048) {                                    // carried into the next binade
    q /= 2;
    exp += 1;
  }
  uint32_t bits = q < 1024 ? (uint32_t)q : (uint32_t)(exp + 15) << 10 | ((uint32_t)q - 1024);
  out = (uint16_t)(sign | bits);
  return true;
}

// The bf16 bits of `v`: the f32's top 16 bits, rounded to nearest even.
uint16_t bf16_bits(double v) {
  float f = (float)v;
  uint32_t w;
  std::memcpy(&w, &f, 4);
  if (std::isnan(f))
    return (uint16_t)((w >> 16) | 0x40u);
  w += 0x7FFFu + ((w >> 16) & 1u);
  return (uint16_t)(w >> 16);
}

// `text` as a value of `dtype` into `out` (little-endian bytes); false with
// `err` set when it does not parse or does not fit.
bool parse_scalar(etlDType dtype, const std::string &text, uint8_t out[8], std::string &err) {
  char *end = nullptr;
  errno = 0;
  if (dtype != ETL_F32 && dtype != ETL_F16 && dtype != ETL_BF16) { // an integer type
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (*end || text.empty()) {
      err = "'" + text + "' is not an integer";
      return false;
    }
    long long lo = dtype == ETL_I32   ? INT32_MIN
                   : dtype == ETL_I8  ? INT8_MIN
                   : dtype == ETL_I16 ? INT16_MIN
                   : dtype == ETL_I64 ? INT64_MIN
                                      : 0;
    long long hi = dtype == ETL_I32   ? INT32_MAX
                   : dtype == ETL_I8  ? INT8_MAX
                   : dtype == ETL_U8  ? UINT8_MAX
                   : dtype == ETL_I16 ? INT16_MAX
                   : dtype == ETL_U16 ? UINT16_MAX
                   : dtype == ETL_U32 ? (long long)UINT32_MAX
                                      : INT64_MAX;
    if (errno == ERANGE || v < lo || v > hi) {
      err = "'" + text + "' does not fit in " + etlDTypeName(dtype);
      return false;
    }
    int64_t x = v;
    std::memcpy(out, &x, 8); // little-endian: the low bytes are the value
    return true;
  }
  double v = std::strtod(text.c_str(), &end);
  if (*end || text.empty()) {
    err = "'" + text + "' is not a number";
    return false;
  }
  if (dtype == ETL_F32) {
    float f = (float)v;
    if (std::isinf(f) && !std::isinf(v)) {
      err = "'" + text + "' overflows f32";
      return false;
    }
    std::memcpy(out, &f, 4);
  } else if (dtype == ETL_F16) {
    uint16_t h;
    if (!f16_bits(v, h)) {
      err = "'" + text + "' overflows f16 (largest 65504)";
      return false;
    }
    std::memcpy(out, &h, 2);
  } else {
    uint16_t h = bf16_bits(v);
    std::memcpy(out, &h, 2);
  }
  return true;
}

void fill_random(NpyArray &a, std::mt19937_64 &rng, int64_t lo, int64_t hi) {
  size_t n = a.data.size() / etlrun::dtype_size(a.dtype);
  std::uniform_real_distribution<float> uf(-1.0f, 1.0f);
  std::uniform_int_distribution<int64_t> ui(lo, hi - 1);
  for (size_t i = 0; i < n; ++i) {
    uint8_t *p = a.data.data() + i * etlrun::dtype_size(a.dtype);
    if (a.dtype != ETL_F32 && a.dtype != ETL_F16 && a.dtype != ETL_BF16 && a.dtype != ETL_I64) {
      int64_t v = ui(rng); // the low bytes of the value (i8 .. u32)
      std::memcpy(p, &v, etlrun::dtype_size(a.dtype));
    } else if (a.dtype == ETL_I64) {
      int64_t v = ui(rng);
      std::memcpy(p, &v, 8);
    } else {
      float f = uf(rng);
      uint32_t w;
      std::memcpy(&w, &f, 4);
      if (a.dtype == ETL_F32) {
        std::memcpy(p, &f, 4);
      } else if (a.dtype == ETL_BF16) {
        uint16_t b = (uint16_t)(w >> 16);
        std::memcpy(p, &b, 2);
      } else { // f16 of a value in [-1, 1): normal or zero, no rounding carry issues
        uint32_t sign = w >> 31, exp = (w >> 23) & 255, man = w & 0x7FFFFF;
        int e = (int)exp - 127 + 15;
        uint16_t h = e <= 0 ? 0 : (uint16_t)(sign << 15 | (uint32_t)e << 10 | man >> 13);
        if (e <= 0)
          h = (uint16_t)(sign << 15);
        std::memcpy(p, &h, 2);
      }
    }
  }
}

// Why `path` cannot be written by --out (empty when it can): checked before
// the run, so a typo does not cost a whole run.
std::string unwritable(const std::string &path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec))
    return path + " is a directory";
  if (fs::exists(p, ec))
    return access(path.c_str(), W_OK) == 0 ? "" : path + ": " + std::strerror(errno);
  fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (!fs::is_directory(dir, ec))
    return "directory " + dir.string() + " does not exist";
  if (access(dir.c_str(), W_OK) != 0)
    return "directory " + dir.string() + ": " + std::strerror(errno);
  return "";
}

// Compares `got` with the reference `ref` (read and shape-checked before the
// run); prints a line, true if it holds.
bool check(const std::string &name, const NpyArray &got, const NpyArray &ref, double rtol,
           double atol) {
  size_t n = got.data.size() / etlrun::dtype_size(got.dtype), bad = 0, first = 0;
  double max_err = 0;
  for (size_t i = 0; i < n; ++i) {
    double g = etlrun::npy_get(got, i), r = etlrun::npy_get(ref, i);
    bool ok = (std::isnan(g) && std::isnan(r)) || std::fabs(g - r) <= atol + rtol * std::fabs(r);
    if (!std::isnan(g) && !std::isnan(r))
      max_err = std::fmax(max_err, std::fabs(g - r));
    if (!ok && bad++ == 0)
      first = i;
  }
  if (bad) {
    std::printf("check %s: FAIL: %zu of %zu elements differ (max |err| %.3g, rtol %g, atol %g); "
                "first at flat index %zu: got %.9g, expected %.9g\n",
                name.c_str(), bad, n, max_err, rtol, atol, first, etlrun::npy_get(got, first),
                etlrun::npy_get(ref, first));
    return false;
  }
  std::printf("check %s: OK (%zu elements, max |err| %.3g)\n", name.c_str(), n, max_err);
  return true;
}

/// --params of an artifact of several variants: each one's label, and
/// which one runs for the dims --dim bound.
void print_variants(etlProgram prog) {
  int n = 1, sel = -1;
  const char *first = "";
  etlProgramNumVariants(prog, &n);
  etlProgramVariantLabel(prog, 0, &first);
  if (n == 1 && !first[0]) // compiled without --variant
    return;
  etlStatus st = etlProgramSelectVariant(prog, &sel);
  for (int i = 0; i < n; ++i) {
    const char *label = "";
    etlProgramVariantLabel(prog, i, &label);
    std::printf("variant %d: '%s'%s\n", i, label, i == sel && !st ? "  <- runs for these dims" : "");
  }
  if (st == ETL_ERROR_UNBOUND)
    std::printf("(give every dim with --dim to see which variant runs)\n");
  else if (st)
    std::printf("no variant runs for these dims: %s\n", etlGetLastErrorMessage());
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"Run an ETL artifact (.etlb) on inputs from .npy files"};
  std::string artifact, device = "auto", trace, profile, int_range = "0:1";
  std::vector<std::string> dims, ins, outs, checks, scalars;
  double rtol = 1e-4, atol = 1e-5;
  uint32_t watchdog = 0, workers = 0;
  uint64_t seed = 1;
  bool list_params = false;
  app.add_option("artifact", artifact, "the .etlb file written by etlc")->required();
  app.add_option("--device", device, "sim, cuda or auto")->capture_default_str();
  app.add_option("--dim", dims, "bind a dim: NAME=VALUE (repeatable)");
  app.add_option("--scalar", scalars,
                 "a scalar parameter's value: NAME=VALUE, e.g. eps=1e-6 (repeatable)");
  app.add_option("--in", ins, "a tensor's contents: NAME=FILE.npy (repeatable)");
  app.add_option("--out", outs, "write a tensor after the run: NAME=FILE.npy (repeatable)");
  app.add_option("--check", checks, "compare a tensor after the run: NAME=REF.npy (repeatable)");
  app.add_option("--rtol", rtol, "relative tolerance of --check")->capture_default_str();
  app.add_option("--atol", atol, "absolute tolerance of --check")->capture_default_str();
  app.add_option("--trace", trace, "write the per-task timeline as Chrome trace JSON");
  app.add_option("--profile", profile, "sim: write the profile counters (docs/PROFILE.md)");
  app.add_option("--watchdog-ms", watchdog, "abort when no task finishes for this long");
  app.add_option("--sim-workers", workers, "sim: CTAs (worker threads)");
  app.add_option("--seed", seed, "seed of the random inputs")->capture_default_str();
  app.add_option("--int-range", int_range, "LO:HI, random integer inputs in [LO, HI)")
      ->capture_default_str();
  app.add_flag("--params", list_params, "print the program's parameters and exit");
  int rv = etlVersion();
  app.set_version_flag("--version",
                       "etlrun " ETL_VERSION " (runtime " + std::to_string(rv / 10000) + "." +
                           std::to_string(rv / 100 % 100) + "." + std::to_string(rv % 100) + ")");
  app.footer("Exit status: 0 success, 1 a failed run or --check, 2 bad usage or input.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    // --help and --version exit 0; every usage error exits 2, as documented
    // (CLI11's own codes differ per error: 106, 109, 114, ...).
    return app.exit(e) == 0 ? 0 : 2;
  }

  long long lo = 0, hi = 1;
  if (std::sscanf(int_range.c_str(), "%lld:%lld", &lo, &hi) != 2 || hi <= lo)
    fail(2, "--int-range '" + int_range + "': expected LO:HI with LO < HI");

  etlContextParams prm = etlContextDefaultParams();
  if (watchdog)
    prm.watchdog_ms = watchdog;
  if (workers)
    prm.sim_workers = workers;
  etlContext ctx = nullptr;
  etlProgram prog = nullptr;
  etlStatus st = etlContextCreate(&ctx, device.c_str(), &prm);
  if (st)
    fail(2, "device '" + device + "': " + api_error(st));
  if ((st = etlProgramLoadFile(ctx, artifact.c_str(), &prog)))
    fail(2, api_error(st));

  int n_tensors = 0, n_dims = 0;
  etlProgramNumTensors(prog, &n_tensors);
  etlProgramNumDims(prog, &n_dims);
  std::map<std::string, Param> params;
  std::vector<std::string> order;
  for (int i = 0; i < n_tensors; ++i) {
    Param p;
    etlProgramTensorInfo(prog, i, &p.info);
    p.index = i;
    order.push_back(p.info.name);
    params[p.info.name] = p;
  }
  int n_scalars = 0;
  etlProgramNumScalars(prog, &n_scalars);
  std::vector<etlScalarInfo> scalar_info((size_t)n_scalars);
  for (int i = 0; i < n_scalars; ++i)
    etlProgramScalarInfo(prog, i, &scalar_info[(size_t)i]);
  // dims: --dim first, then what the inputs' shapes say
  std::map<std::string, int64_t> bound;
  for (const std::string &d : dims) {
    auto [name, value] = split_eq(d, "--dim");
    char *end = nullptr;
    long long v = std::strtoll(value.c_str(), &end, 10);
    if (*end)
      fail(2, "--dim " + d + ": '" + value + "' is not an integer");
    if ((st = etlBindDim(prog, name.c_str(), v)))
      fail(2, "--dim " + d + ": " + api_error(st));
    bound[name] = v;
  }
  if (list_params) {
    print_variants(prog);
    for (const std::string &n : order) {
      const etlTensorInfo &t = params[n].info;
      std::printf("%s: %s[", n.c_str(), etlDTypeName(t.dtype));
      for (int k = 0; k < t.rank; ++k)
        std::printf("%s%s", k ? ", " : "", t.dims[k]);
      std::printf("]\n");
    }
    for (const etlScalarInfo &sc : scalar_info)
      std::printf("%s: %s (scalar)\n", sc.name, etlDTypeName(sc.dtype));
    return 0;
  }
  std::map<std::string, bool> scalar_given;
  for (const std::string &s : scalars) {
    auto [name, value] = split_eq(s, "--scalar");
    const etlScalarInfo *sc = nullptr;
    std::string all;
    for (const etlScalarInfo &x : scalar_info) {
      if (name == x.name)
        sc = &x;
      all += (all.empty() ? "" : ", ") + std::string(x.name) + " (" + etlDTypeName(x.dtype) + ")";
    }
    if (!sc)
      fail(2, "--scalar " + s + ": the program has no scalar parameter '" + name +
                  "' (it has: " + (all.empty() ? "none" : all) + ")");
    uint8_t bytes[8] = {0};
    std::string err;
    if (!parse_scalar(sc->dtype, value, bytes, err))
      fail(2, "--scalar " + s + ": " + err + " (scalar '" + name + "' is " +
                  etlDTypeName(sc->dtype) + ")");
    if ((st = etlBindScalar(prog, sc->name, sc->dtype, bytes)))
      fail(2, "--scalar " + s + ": " + api_error(st));
    scalar_given[name] = true;
  }
  for (const etlScalarInfo &sc : scalar_info)
    if (!scalar_given.count(sc.name))
      fail(2, std::string("scalar parameter '") + sc.name + "' (" + etlDTypeName(sc.dtype) +
                  ") has no value: give --scalar " + sc.name + "=VALUE");
  auto param = [&](const std::string &name, const char *opt) -> Param & {
    auto it = params.find(name);
    if (it == params.end()) {
      std::string all;
      for (const std::string &n : order)
        all += (all.empty() ? "" : ", ") + n;
      fail(2, std::string(opt) + " " + name + ": the program has no tensor '" + name +
                  "' (it has: " + all + ")");
    }
    return it->second;
  };

  for (const std::string &n : order) {
    etlDType t = params[n].info.dtype;
    if (t == ETL_I4 || t == ETL_U4)
      fail(2, "tensor '" + n + "' is packed " + etlDTypeName(t) +
                  " (two per byte): etlrun cannot read, fill or write it (.npy has no 4-bit "
                  "type); bind it from a host program (see examples/gemv_int4)");
    if (t == ETL_F8E4M3 || t == ETL_F8E5M2)
      fail(2, "tensor '" + n + "' is " + etlDTypeName(t) +
                  ": etlrun cannot read, fill or write FP8 tensors yet (.npy has no standard "
                  "FP8 type); bind it from a host program");
  }
  std::map<std::string, bool> given;
  for (const std::string &s : ins) {
    auto [name, path] = split_eq(s, "--in");
    Param &p = param(name, "--in");
    std::string err;
    if (!etlrun::npy_read(path, p.host, err))
      fail(2, "--in " + name + ": " + err);
    if (p.host.dtype != p.info.dtype)
      fail(2, "--in " + name + ": " + path + " holds " + etlDTypeName(p.host.dtype) +
                  ", the tensor is " + etlDTypeName(p.info.dtype));
    if ((int)p.host.shape.size() != p.info.rank)
      fail(2, "--in " + name + ": " + path + " has rank " + std::to_string(p.host.shape.size()) +
                  ", the tensor has rank " + std::to_string(p.info.rank));
    given[name] = true;
    for (int k = 0; k < p.info.rank; ++k) {
      std::string dim = p.info.dims[k];
      bool is_dim = false;
      for (int d = 0; d < n_dims; ++d) {
        const char *dn = nullptr;
        etlProgramDimName(prog, d, &dn);
        is_dim |= dim == dn;
      }
      if (!is_dim || bound.count(dim))
        continue; // an expression, or bound already: etlRun checks the shape
      if ((st = etlBindDim(prog, dim.c_str(), p.host.shape[k])))
        fail(2,
             "--in " + name + ": axis " + std::to_string(k) + " (" + dim + "): " + api_error(st));
      bound[dim] = p.host.shape[k];
    }
  }

  std::mt19937_64 rng(seed);
  for (const std::string &n : order) {
    Param &p = params[n];
    if (!given.count(n)) {
      p.host.dtype = p.info.dtype;
      p.host.shape.assign((size_t)p.info.rank, 0);
      if ((st = etlProgramTensorShape(prog, p.index, p.host.shape.data())))
        fail(2, "tensor '" + n + "' has no --in, and its shape is unknown: " + api_error(st) +
                    " (give --dim or --in)");
      size_t count = 1;
      for (int64_t e : p.host.shape)
        count *= (size_t)e;
      p.host.data.assign(count * etlrun::dtype_size(p.info.dtype), 0);
      fill_random(p.host, rng, lo, hi);
    }
    size_t bytes = p.host.data.size();
    if ((st = etlMalloc(ctx, bytes, &p.dptr)) ||
        (bytes && (st = etlMemcpyHtoD(ctx, p.dptr, p.host.data.data(), bytes))) ||
        (st = etlBindTensor(prog, n.c_str(), p.dptr, p.info.dtype, p.info.rank,
                            p.host.shape.data())))
      fail(2, "tensor '" + n + "': " + api_error(st));
  }
  if (!trace.empty() && (st = etlProgramSetTimeline(prog, trace.c_str())))
    fail(2, "--trace: " + api_error(st));
  if (!profile.empty() && (st = etlProgramSetProfile(prog, profile.c_str())))
    fail(2, "--profile: " + api_error(st));
  // --out and --check before the run: names, paths, reference shapes.
  for (const std::string &s : outs) {
    auto [name, path] = split_eq(s, "--out");
    param(name, "--out");
    std::string why = unwritable(path);
    if (!why.empty())
      fail(2, "--out " + name + ": cannot write " + path + ": " + why);
  }
  std::vector<std::pair<std::string, NpyArray>> refs;
  for (const std::string &s : checks) {
    auto [name, path] = split_eq(s, "--check");
    const NpyArray &got = param(name, "--check").host;
    NpyArray ref;
    std::string err;
    if (!etlrun::npy_read(path, ref, err))
      fail(2, "--check " + name + ": " + err);
    if (ref.shape != got.shape)
      fail(2, "--check " + name + ": reference " + path + " has shape " + shape_text(ref.shape) +
                  ", the tensor " + shape_text(got.shape));
    refs.emplace_back(name, std::move(ref));
  }

  std::string dim_text;
  for (int d = 0; d < n_dims; ++d) {
    const char *dn = nullptr;
    etlProgramDimName(prog, d, &dn);
    dim_text += (d ? ", " : "") + std::string(dn) + "=" +
                (bound.count(dn) ? std::to_string(bound[dn]) : std::string("?"));
  }
  std::printf("etlrun: %s on %s with %s\n", artifact.c_str(), etlContextDeviceName(ctx),
              dim_text.c_str());
  st = etlRun(prog);
  int ran = -1;
  const char *label = "";
  if (etlProgramLastVariant(prog, &ran) == ETL_SUCCESS && ran >= 0 &&
      etlProgramVariantLabel(prog, ran, &label) == ETL_SUCCESS && label[0])
    std::printf("etlrun: ran variant %d, '%s'\n", ran, label);
  if (st) {
    std::fprintf(stderr, "etlrun: run failed: %s\n", api_error(st).c_str());
    return 1;
  }
  for (const std::string &n : order) {
    Param &p = params[n];
    if (!p.host.data.empty() &&
        (st = etlMemcpyDtoH(ctx, p.host.data.data(), p.dptr, p.host.data.size())))
      fail(1, "reading back '" + n + "': " + api_error(st));
  }
  for (const std::string &s : outs) {
    auto [name, path] = split_eq(s, "--out");
    std::string err;
    if (!etlrun::npy_write(path, param(name, "--out").host, err))
      fail(2, "--out " + name + ": " + err);
  }
  bool ok = true;
  for (const auto &[name, ref] : refs)
    ok &= check(name, params[name].host, ref, rtol, atol);
  etlProgramDestroy(prog);
  etlContextDestroy(ctx);
  return ok ? 0 : 1;
}
