//===- tests/fake_cuda/fake_harness.h - The fake driver from a doctest -----===//
//
// Shared by the tests that drive the runtime on the fake libcuda.so.1
// (fake_cuda.h): the fake's control functions, its own Driver API entry
// points (sym), and the artifacts compiled for it.
//
//===----------------------------------------------------------------------===//
#ifndef ETL_FAKE_HARNESS_H
#define ETL_FAKE_HARNESS_H

#include "fake_cuda.h"

#include <doctest/doctest.h>

#include <cstring>
#include <dlfcn.h>
#include <string>

namespace fake_cuda {

/// The fake, opened the way the runtime opens it; the handle keeps its
/// state alive while the runtime dlopens and dlcloses it per context.
struct Fake {
  void *h = nullptr;
  etl_fake_cuda_reset_fn reset = nullptr;
  etl_fake_cuda_fail_fn fail = nullptr;
  etl_fake_cuda_kernel_fn kernel = nullptr;
  etl_fake_cuda_calls_fn calls = nullptr;
  etl_fake_cuda_get_stats_fn stats = nullptr;
  etl_fake_cuda_first_violation_fn violation = nullptr;
  etl_fake_cuda_device_cc_fn device_cc = nullptr;
  Fake() {
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
      return;
    reset = (etl_fake_cuda_reset_fn)dlsym(h, "etl_fake_cuda_reset");
    fail = (etl_fake_cuda_fail_fn)dlsym(h, "etl_fake_cuda_fail");
    kernel = (etl_fake_cuda_kernel_fn)dlsym(h, "etl_fake_cuda_kernel");
    calls = (etl_fake_cuda_calls_fn)dlsym(h, "etl_fake_cuda_calls");
    stats = (etl_fake_cuda_get_stats_fn)dlsym(h, "etl_fake_cuda_get_stats");
    violation = (etl_fake_cuda_first_violation_fn)dlsym(h, "etl_fake_cuda_first_violation");
    device_cc = (etl_fake_cuda_device_cc_fn)dlsym(h, "etl_fake_cuda_device_cc");
  }
};

inline Fake &fake() {
  static Fake f;
  INFO("run through ctest (test cuda_fake), which puts the fake libcuda.so.1 on LD_LIBRARY_PATH");
  REQUIRE(f.h);
  bool is_fake = f.reset && f.fail && f.kernel && f.calls && f.stats && f.violation && f.device_cc;
  REQUIRE(is_fake); // the fake, not a real driver
  f.reset();
  return f;
}

inline std::string artifact(const char *name) {
  return std::string(ETL_FAKE_CUDA_ARTIFACTS) + "/" + name + ".etlb";
}

/// The fake's own entry points, as the runtime's cuda_mini.h declares them.
template <class F> F sym(Fake &f, const char *name) {
  void *p = dlsym(f.h, name);
  INFO(name);
  REQUIRE(p != nullptr);
  F fn;
  std::memcpy(&fn, &p, sizeof p);
  return fn;
}

} // namespace fake_cuda

#endif // ETL_FAKE_HARNESS_H
