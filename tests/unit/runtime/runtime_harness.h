// Shared by the runtime tests: a small artifact writer mirroring etl_abi.h,
// the test program's metadata (test_meta), a hand-written C kernel compiled
// into the "sim" code section at test time with `cc -shared -fPIC`, and
// context/buffer helpers for running it on sim.
#ifndef ETL_TESTS_RUNTIME_HARNESS_H
#define ETL_TESTS_RUNTIME_HARNESS_H

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "etl/etl.h"
#include "etl_abi.h"
#include "internal.h"

namespace etl_test {

using X = std::vector<int64_t>;

inline X C(int64_t v) { return {ETL_XOP_CONST, v}; }
inline X D(int64_t i) { return {ETL_XOP_DIM, i}; }
inline X V(int64_t i) { return {ETL_XOP_VAR, i}; }
inline X op(X a, const X &b, int64_t o) {
  a.insert(a.end(), b.begin(), b.end());
  a.push_back(o);
  return a;
}

struct W {
  std::string b;
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      b.push_back(char((v >> (8 * i)) & 0xff));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      b.push_back(char((v >> (8 * i)) & 0xff));
  }
  void str(const std::string &s) {
    u32(uint32_t(s.size()));
    b += s;
  }
  void expr(const X &x) {
    u32(uint32_t(x.size()));
    for (int64_t w : x)
      u64(uint64_t(w));
  }
};

inline uint32_t fnv(const std::string &s, size_t from) {
  uint32_t h = ETL_FNV1A_OFFSET;
  for (size_t i = from; i < s.size(); ++i) {
    h ^= uint8_t(s[i]);
    h *= ETL_FNV1A_PRIME;
  }
  return h;
}

inline void put32(std::string &s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    s[at + i] = char((v >> (8 * i)) & 0xff);
}

inline void fix_checksum(std::string &a) { put32(a, 20, fnv(a, 32)); }

inline std::string artifact(const std::string &meta,
                            const std::vector<std::pair<std::string, std::string>> &code,
                            uint32_t version = ETL_ARTIFACT_VERSION) {
  size_t n = 1 + code.size();
  W w;
  w.b += "ETLB";
  w.u32(version);
  w.u64(0); // file size, patched
  w.u32(uint32_t(n));
  w.u32(0); // checksum, patched
  w.u64(0);
  uint64_t off = 32 + 32 * n;
  auto entry = [&](uint32_t kind, const std::string &target, uint64_t size) {
    w.u32(kind);
    std::string t = target;
    t.resize(12, '\0');
    w.b += t;
    w.u64(off);
    w.u64(size);
    off += size;
  };
  entry(ETL_SECTION_META, "", meta.size());
  for (auto &c : code)
    entry(ETL_SECTION_CODE, c.first, c.second.size());
  w.b += meta;
  for (auto &c : code)
    w.b += c.second;
  for (int i = 0; i < 8; ++i)
    w.b[8 + i] = char((uint64_t(w.b.size()) >> (8 * i)) & 0xff);
  fix_checksum(w.b);
  return w.b;
}

// The test program:
//   dim N (slot 8); x f32[N*32] (9, read only), y f32[N] (10), total f32[1] (11),
//   buffer partial f32[N*32] (12); constraint N <= 1000;
//   events E[N] (13), F[1] (14);
//   group 0 consume j in [0,N): waits E[j], notifies F[0]
//   group 1 produce i in [0,N): notifies E[i + notify_shift]
//   group 2 total   [0,1):      waits F[*]
//   order: produce, consume, total.
// With scalar_elem >= 0: a scalar parameter "eps" of that element type at
// `scalar_slot` (the kernel never reads it), and 16 slots. `blocks`: each
// group's layer_block word (consume, produce, total), else none.
inline std::string test_meta(int64_t notify_shift = 0, int64_t scalar_elem = -1,
                             uint32_t scalar_slot = 15, std::vector<uint32_t> blocks = {}) {
  blocks.resize(3, ETL_NO_LAYER_BLOCK);
  W w;
  w.u32(32); // threads per CTA
  w.u32(0);  // smem
  w.str("etl_main");
  w.str("test.etl");
  w.u32(scalar_elem >= 0 ? 16 : 15);
  w.u32(1);
  w.str("N");
  w.u32(8);
  w.u32(4);
  auto tensor = [&](const char *name, uint32_t is_buffer, const X &shape, uint32_t slot) {
    w.str(name);
    w.u32(ETL_ELEM_F32);
    w.u32(is_buffer);
    w.u32(1);
    w.expr(shape);
    w.u32(slot);
  };
  tensor("x", ETL_TENSOR_INPUT, op(D(0), C(32), ETL_XOP_MUL), 9); // the kernel only reads x
  tensor("y", 0, D(0), 10);
  tensor("total", 0, C(1), 11);
  tensor("partial", 1, op(D(0), C(32), ETL_XOP_MUL), 12);
  w.u32(scalar_elem >= 0 ? 1 : 0); // scalars
  if (scalar_elem >= 0) {
    w.str("eps");
    w.u32(uint32_t(scalar_elem));
    w.u32(scalar_slot);
  }
  w.u32(1);
  w.expr(op(D(0), C(1000), ETL_XOP_LE));
  w.str("N <= 1000");
  w.str("test.etl:3:7");
  w.u32(2);
  w.str("E");
  w.u32(1);
  w.expr(D(0));
  w.u32(13);
  w.str("F");
  w.u32(1);
  w.expr(C(1));
  w.u32(14);
  w.u32(3);
  // consume
  w.str("consume");
  w.u32(1);
  w.expr(C(0));
  w.expr(D(0));
  w.u32(1); // notifies F[0]
  w.u32(1);
  w.u32(1);
  w.u32(0);
  w.expr(C(0));
  w.u32(1); // waits E[j]
  w.u32(0);
  w.u32(1);
  w.u32(0);
  w.expr(V(0));
  w.u32(ETL_SCHEDULE_STATIC);
  w.u32(ETL_NO_DATA_VAR);
  w.u32(blocks[0]);
  // produce
  w.str("produce");
  w.u32(1);
  w.expr(C(0));
  w.expr(D(0));
  w.u32(1);
  w.u32(0);
  w.u32(1);
  w.u32(0);
  w.expr(op(V(0), C(notify_shift), ETL_XOP_ADD));
  w.u32(0);
  w.u32(ETL_SCHEDULE_STATIC);
  w.u32(ETL_NO_DATA_VAR);
  w.u32(blocks[1]);
  // total
  w.str("total");
  w.u32(1);
  w.expr(C(0));
  w.expr(C(1));
  w.u32(0);
  w.u32(1); // waits F[*]
  w.u32(1);
  w.u32(1);
  w.u32(1);
  w.u32(ETL_SCHEDULE_STATIC);
  w.u32(ETL_NO_DATA_VAR);
  w.u32(blocks[2]);
  w.u32(3);
  w.u32(1);
  w.u32(0);
  w.u32(2);
  w.u32(0); // no tensor maps (v9)
  return w.b;
}

#define OPS_FIELD(name, ret, params) #ret " (*" #name ")" #params ";\n"

inline const char *const kernel_body = R"(
const etl_sim_ops *__etl_sim_ops;
#define O __etl_sim_ops
static void wait_ev(uint32_t *c) {
  if (O->tid() == 0)
    while (O->load_acquire(c) != 0) O->spin_pause();
  O->barrier();
}
static void notify(uint32_t *c) {
  O->barrier();
  if (O->tid() == 0) { O->fence(); O->atomic_add_release(c, 0xffffffffu); }
}
void etl_main(uint64_t *a) {
  uint32_t *ev = (uint32_t *)a[0], *q = (uint32_t *)a[1], *offs = (uint32_t *)a[2];
  uint32_t cta = O->ctaid(), t = O->tid();
  int64_t N = (int64_t)a[8];
  float *x = (float *)a[9], *y = (float *)a[10], *total = (float *)a[11], *partial = (float *)a[12];
  uint64_t E = a[13], F = a[14];
  O->check_access(&offs[cta], 8, 0);
  for (uint32_t k = offs[cta]; k < offs[cta + 1]; ++k) {
    O->check_access(&q[2 * k], 8, 0);
    uint32_t g = q[2 * k], lin = q[2 * k + 1];
    O->task_begin(g, lin);
    if (g == 1) {
      int64_t idx = (int64_t)lin * 32 + t;
#ifdef BAD
      if (lin == 2) idx += 32 * N;
#endif
      O->check_access(&x[idx], 4, 0);
      float v = x[idx];
      O->check_access(&partial[idx], 4, 1);
      partial[idx] = v * 2.0f;
#ifdef DEADLOCK
      O->barrier();
#else
      notify(&ev[E + lin]);
#endif
    } else if (g == 0) {
      wait_ev(&ev[E + lin]);
      if (t == 0) {
        float s = 0;
        for (int i = 0; i < 32; ++i) {
          O->check_access(&partial[lin * 32 + i], 4, 0);
          s += partial[lin * 32 + i];
        }
        O->check_access(&y[lin], 4, 1);
        y[lin] = s;
      }
      notify(&ev[F]);
    } else {
      wait_ev(&ev[F]);
      if (t == 0) {
        float s = 0;
        for (int64_t j = 0; j < N; ++j) { O->check_access(&y[j], 4, 0); s += y[j]; }
        O->check_access(total, 4, 1);
        total[0] = s;
      }
      O->barrier();
    }
    O->task_end();
  }
}
)";

inline std::string read_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Compiles the kernel with `defines`; returns "" (and prints why) when no C
// compiler is available.
inline std::string compile_kernel(const std::string &defines) {
  std::string dir = std::string(ETL_TEST_BINARY_DIR) + "/runtime_kernels";
  mkdir(dir.c_str(), 0755);
  std::string tag = defines.empty() ? "good" : defines.substr(2);
  std::string src = dir + "/k_" + tag + ".c", so = dir + "/k_" + tag + ".so";
  {
    std::ofstream f(src);
    f << "#include <stdint.h>\ntypedef struct etl_sim_ops {\n"
      << ETL_SIM_OPS(OPS_FIELD) << "} etl_sim_ops;\n"
      << kernel_body;
  }
  std::string cmd = "cc -shared -fPIC -O1 " + defines + " -o " + so + " " + src + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    MESSAGE("skipping: `cc` is not available or failed to compile the test kernel: " << cmd);
    return "";
  }
  return read_file(so);
}

inline const std::string &kernel(const std::string &defines) {
  static std::deque<std::pair<std::string, std::string>> cache; // references stay valid
  for (auto &c : cache)
    if (c.first == defines)
      return c.second;
  cache.emplace_back(defines, compile_kernel(defines));
  return cache.back().second;
}

struct Ctx {
  etlContext ctx = nullptr;
  explicit Ctx(uint32_t workers = 4, uint32_t watchdog_ms = 10000) {
    etlContextParams p = etlContextDefaultParams();
    p.sim_workers = workers;
    p.watchdog_ms = watchdog_ms;
    REQUIRE(etlContextCreate(&ctx, "sim", &p) == ETL_SUCCESS);
  }
  ~Ctx() { etlContextDestroy(ctx); }
};

struct Buffers {
  etlContext ctx;
  void *x = nullptr, *y = nullptr, *total = nullptr;
  int64_t n;
  Buffers(etlContext c, int64_t n_) : ctx(c), n(n_) {
    REQUIRE(etlMalloc(ctx, size_t(n * 32 * 4), &x) == ETL_SUCCESS);
    REQUIRE(etlMalloc(ctx, size_t(n * 4), &y) == ETL_SUCCESS);
    REQUIRE(etlMalloc(ctx, 4, &total) == ETL_SUCCESS);
    std::vector<float> hx(size_t(n * 32));
    for (size_t i = 0; i < hx.size(); ++i)
      hx[i] = float(i % 7);
    REQUIRE(etlMemcpyHtoD(ctx, x, hx.data(), hx.size() * 4) == ETL_SUCCESS);
  }
  ~Buffers() {
    etlFree(ctx, x);
    etlFree(ctx, y);
    etlFree(ctx, total);
  }
  void bind(etlProgram p) {
    int64_t sx = n * 32, sy = n, st = 1;
    REQUIRE(etlBindDim(p, "N", n) == ETL_SUCCESS);
    REQUIRE(etlBindTensor(p, "x", x, ETL_F32, 1, &sx) == ETL_SUCCESS);
    REQUIRE(etlBindTensor(p, "y", y, ETL_F32, 1, &sy) == ETL_SUCCESS);
    REQUIRE(etlBindTensor(p, "total", total, ETL_F32, 1, &st) == ETL_SUCCESS);
  }
  void check() {
    std::vector<float> hy(static_cast<size_t>(n));
    float ht = -1;
    REQUIRE(etlMemcpyDtoH(ctx, hy.data(), y, hy.size() * 4) == ETL_SUCCESS);
    REQUIRE(etlMemcpyDtoH(ctx, &ht, total, 4) == ETL_SUCCESS);
    double want_total = 0;
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t i = 0; i < 32; ++i)
        s += 2.0 * double((j * 32 + i) % 7);
      CHECK(hy[size_t(j)] == doctest::Approx(s));
      want_total += s;
    }
    CHECK(ht == doctest::Approx(want_total));
  }
};

/// Artifact `a` loaded on a fresh sim context (4 workers); the context
/// destroys the program with it.
struct Loaded {
  Ctx ctx;
  etlProgram prog = nullptr;
  explicit Loaded(const std::string &a, uint32_t watchdog_ms = 10000) : ctx(4, watchdog_ms) {
    REQUIRE(etlProgramLoadMemory(ctx.ctx, a.data(), a.size(), &prog) == ETL_SUCCESS);
  }
};

/// The runtime's last error message, and whether a message contains `part`.
inline std::string last_error() { return etlGetLastErrorMessage(); }
inline bool has(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

inline std::string good_artifact() {
  const std::string &k = kernel("");
  if (k.empty())
    return "";
  return artifact(test_meta(), {{"sim", k}, {"sm_90", std::string(".version 7.8\n", 14)}});
}

} // namespace etl_test

#endif // ETL_TESTS_RUNTIME_HARNESS_H
