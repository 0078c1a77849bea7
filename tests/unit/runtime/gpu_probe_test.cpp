//===- tests/unit/runtime/gpu_probe_test.cpp - Tensor-core probes, GPU vs sim ===//
//
// What this covers: the small programs of gpu_probes/ (one m16n8k16 mma
// with ldmatrix; a bf16 K loop with ragged edges), compiled for sim, sm_80
// and sm_90. On sim each must equal a C reference bit for bit (small
// integers: every partial sum is exact, so the order of the additions does
// not matter). When a CUDA device is present the same artifact runs on it
// and must equal sim bit for bit: the hardware's fragment layouts, swizzles
// and asynchronous copies against the simulator's. Without a device the GPU
// half is skipped with a message saying why.
//
//===----------------------------------------------------------------------===//
#include "artifacts.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

uint16_t f16_bits(int v) { // |v| < 2048: exact in f16
  if (v == 0)
    return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  uint32_t a = uint32_t(v < 0 ? -v : v);
  int e = 31 - __builtin_clz(a);
  uint32_t mant = (a << (10 - e)) & 0x3ffu;
  return uint16_t(sign | uint16_t((e + 15) << 10) | mant);
}

uint16_t bf16_bits(int v) { // |v| < 256: exact in bf16
  float f = float(v);
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return uint16_t(x >> 16);
}

/// One tensor of a probe: host bytes and shape.
struct Tensor {
  const char *name;
  etlDType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// Runs `path` on `device` with `dims` and `ts` (outputs written back into
/// `ts`); "" on success, else why not. Device memory on a GPU context.
std::string run(const char *device, const std::string &path,
                const std::vector<std::pair<const char *, int64_t>> &dims,
                std::vector<Tensor> &ts) {
  etlContext ctx = nullptr;
  if (etlContextCreate(&ctx, device, nullptr) != ETL_SUCCESS)
    return std::string("no ") + device + " context: " + etlGetLastErrorMessage();
  std::string msg;
  etlProgram prog = nullptr;
  std::vector<void *> dev(ts.size(), nullptr);
  bool gpu = etlContextIsGpu(ctx) != 0;
  if (etlProgramLoadFile(ctx, path.c_str(), &prog) != ETL_SUCCESS)
    msg = std::string("load: ") + etlGetLastErrorMessage();
  for (auto &[name, v] : dims)
    if (msg.empty() && etlBindDim(prog, name, v) != ETL_SUCCESS)
      msg = std::string("bind dim: ") + etlGetLastErrorMessage();
  for (size_t i = 0; i < ts.size() && msg.empty(); ++i) {
    void *p = ts[i].bytes.data();
    if (gpu) {
      if (etlMalloc(ctx, ts[i].bytes.size(), &dev[i]) != ETL_SUCCESS ||
          etlMemcpyHtoD(ctx, dev[i], p, ts[i].bytes.size()) != ETL_SUCCESS) {
        msg = std::string("device memory: ") + etlGetLastErrorMessage();
        break;
      }
      p = dev[i];
    }
    if (etlBindTensor(prog, ts[i].name, p, ts[i].dtype, int(ts[i].shape.size()),
                      ts[i].shape.data()) != ETL_SUCCESS)
      msg = std::string("bind ") + ts[i].name + ": " + etlGetLastErrorMessage();
  }
  if (msg.empty() && etlRun(prog) != ETL_SUCCESS)
    msg = std::string("etlRun: ") + etlGetLastErrorMessage();
  for (size_t i = 0; i < ts.size(); ++i)
    if (dev[i]) {
      if (msg.empty() &&
          etlMemcpyDtoH(ctx, ts[i].bytes.data(), dev[i], ts[i].bytes.size()) != ETL_SUCCESS)
        msg = std::string("copy back: ") + etlGetLastErrorMessage();
      etlFree(ctx, dev[i]);
    }
  if (prog)
    etlProgramDestroy(prog);
  etlContextDestroy(ctx);
  return msg;
}

/// A probe's inputs: A [M, K] and B [K, N] of small integers (f16 or bf16
/// bits), C [M, N] f32 filled with NaN; and the reference C = A B.
struct Probe {
  std::vector<Tensor> ts;
  std::vector<float> ref;
};

Probe make(int M, int N, int K, bool bf16) {
  Probe p;
  auto bits = [&](int v) { return bf16 ? bf16_bits(v) : f16_bits(v); };
  std::vector<int> a(size_t(M * K)), b(size_t(K * N));
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = int((i * 2654435761u) % 15) - 7;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = int((i * 40503u + 11) % 13) - 6;
  auto pack = [&](const std::vector<int> &v) {
    std::vector<uint8_t> out(v.size() * 2);
    for (size_t i = 0; i < v.size(); ++i) {
      uint16_t h = bits(v[i]);
      std::memcpy(&out[i * 2], &h, 2);
    }
    return out;
  };
  etlDType dt = bf16 ? ETL_BF16 : ETL_F16;
  std::vector<float> nan(size_t(M * N), __builtin_nanf(""));
  std::vector<uint8_t> c(nan.size() * 4);
  std::memcpy(c.data(), nan.data(), c.size());
  p.ts = {{"a", dt, {M, K}, pack(a)}, {"b", dt, {K, N}, pack(b)}, {"c", ETL_F32, {M, N}, c}};
  p.ref.resize(size_t(M * N));
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      int acc = 0;
      for (int k = 0; k < K; ++k)
        acc += a[size_t(m * K + k)] * b[size_t(k * N + n)];
      p.ref[size_t(m * N + n)] = float(acc);
    }
  return p;
}

/// Elements of `c` (f32 bytes) that differ from `want` bit for bit.
int mismatches(const std::vector<uint8_t> &c, const std::vector<float> &want) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    bad += std::memcmp(&c[i * 4], &want[i], 4) != 0;
  return bad;
}

void check_probe(const char *stem, const std::vector<std::pair<const char *, int64_t>> &dims, int M,
                 int N, int K, bool bf16) {
  std::string path = etl::testartifacts::built(std::string("gpu_probes/") + stem);
  if (path.empty())
    return;
  Probe sim = make(M, N, K, bf16);
  std::string err = run("sim", path, dims, sim.ts);
  REQUIRE_MESSAGE(err.empty(), err);
  CHECK(mismatches(sim.ts[2].bytes, sim.ref) == 0);

  Probe gpu = make(M, N, K, bf16);
  err = run("cuda", path, dims, gpu.ts);
  if (err.rfind("no cuda context", 0) == 0) {
    MESSAGE("GPU half of " << std::string(stem) << " skipped: " << err);
    return;
  }
  REQUIRE_MESSAGE(err.empty(), err);
  std::vector<float> simc(sim.ref.size());
  std::memcpy(simc.data(), sim.ts[2].bytes.data(), simc.size() * 4);
  CHECK_MESSAGE(mismatches(gpu.ts[2].bytes, simc) == 0,
                (std::string(stem) + ": GPU differs from sim"));
}

} // namespace

TEST_CASE("gpu probes: one m16n8k16 mma with ldmatrix, f16 (sim vs C; GPU vs sim)") {
  check_probe("probe_mma", {}, 16, 8, 16, false);
}

TEST_CASE("gpu probes: a bf16 K loop with ragged edges (sim vs C; GPU vs sim)") {
  check_probe("probe_kloop", {{"M", 45}, {"N", 70}, {"K", 100}}, 45, 70, 100, true);
  check_probe("probe_kloop", {{"M", 64}, {"N", 64}, {"K", 128}}, 64, 64, 128, true);
}
