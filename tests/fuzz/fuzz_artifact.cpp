//===- tests/fuzz/fuzz_artifact.cpp - libFuzzer harness: loader and binder -===//
//
// Harness (c): the runtime's artifact loader and binder. Input layout:
//
//   [artifact: the header's file_size bytes][binding tail]
//
// When the header's file_size lies within the input, the harness recomputes
// the checksum of the artifact part, so mutations reach the section table,
// the metadata decoder and the expression checker instead of stopping at the
// checksum; otherwise the whole input goes to the loader unchanged (the
// size/magic/truncation checks). The program is loaded on a sim context
// without its device code (etl_program_load, load_code = 0: the code
// section is an ELF object for dlopen, outside this harness), then every dim,
// tensor and scalar is bound with values read from the tail, and etlRun's checks
// and per-shape plan run without the launch (etl_program_prepare).
//
// Tail: byte 0 is a mode; then, per dim, a value (mode & 1: raw int64, else
// 1 + u16 % 64, so that most plans stay small); per tensor parameter, a dtype and rank (mode & 2:
// from the tail, else the program's) and its extents (mode & 4: int16 each from the tail, else the
// program's shape evaluated for the bound dims, which passes the checks and reaches the plan); per
// scalar parameter, its value's 8 bytes and (mode & 2) a dtype, else the program's. A missing
// tail reads as zeros.
//
// A binding may ask for more memory than the machine has (the runtime's
// limits allow plans and buffers of several GiB); the runtime must then fail
// with ETL_ERROR_OUT_OF_MEMORY. Here any allocation over 256 MiB returns
// NULL (max_allocation_size_mb, allocator_may_return_null), which exercises
// those paths and keeps the harness within libFuzzer's memory limit.
//
//===----------------------------------------------------------------------===//
#include "device.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

/// Reads the binding tail; past its end every read is 0.
struct Tail {
  const uint8_t *p;
  size_t n, at = 0;
  uint64_t bytes(size_t k) {
    uint64_t v = 0;
    for (size_t i = 0; i < k; ++i, ++at)
      v |= uint64_t(at < n ? p[at] : 0) << (8 * i);
    return v;
  }
};

etlContext context() {
  static etlContext ctx = [] {
    etlContextParams params = etlContextDefaultParams();
    params.sim_workers = 2;
    etlContext c = nullptr;
    if (etlContextCreate(&c, "sim", &params) != ETL_SUCCESS)
      __builtin_trap();
    return c;
  }();
  return ctx;
}

} // namespace

extern "C" const char *__asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=256";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> art(data, data + size);
  Tail tail{nullptr, 0};
  if (size >= 32) {
    uint64_t file_size = 0;
    std::memcpy(&file_size, data + 8, 8);
    if (file_size >= 32 && file_size <= size) {
      art.resize(file_size);
      tail = Tail{data + file_size, size - file_size};
      uint32_t sum = etl_fnv1a(art.data() + 32, art.size() - 32);
      std::memcpy(art.data() + 20, &sum, 4);
    }
  }
  etlProgram prog = nullptr;
  if (etl_program_load(context(), art.data(), art.size(), 0, &prog) != ETL_SUCCESS)
    return 0;
  const etl_meta *m = &etl_prog_of(prog)->art.meta;
  unsigned mode = unsigned(tail.bytes(1));
  std::vector<int64_t> dims(m->n_dims + 1, 1);
  for (uint32_t i = 0; i < m->n_dims; ++i) {
    dims[i] = mode & 1 ? int64_t(tail.bytes(8)) : 1 + int64_t(tail.bytes(2) % 64);
    etlBindDim(prog, m->dims[i].name, dims[i]);
  }
  static uint64_t dummy[8]; // never dereferenced: nothing is launched
  for (uint32_t i = 0; i < m->n_tensors; ++i) {
    const etl_tensor_meta *t = &m->tensors[i];
    if (t->is_buffer)
      continue;
    int dtype = int(t->elem), rank = int(t->rank);
    if (mode & 2) {
      dtype = int(tail.bytes(1) % 6);
      rank = int(tail.bytes(1) % (ETL_MAX_RANK + 2)) - 1;
    }
    int64_t shape[ETL_MAX_RANK] = {0};
    char err[160];
    for (int k = 0; k < rank && k < ETL_MAX_RANK; ++k) {
      if (mode & 4 || uint32_t(k) >= t->rank)
        shape[k] = int16_t(tail.bytes(2));
      else if (etl_expr_eval(&t->shape[k], dims.data(), m->n_dims, nullptr, 0, &shape[k], err,
                             sizeof err))
        shape[k] = 0;
    }
    if (rank <= ETL_MAX_RANK)
      etlBindTensor(prog, t->name, dummy, etlDType(dtype), rank, shape);
  }
  for (uint32_t i = 0; i < m->n_scalars; ++i) { // the value's 8 bytes, the dtype maybe wrong
    uint64_t bits = tail.bytes(8);
    int dtype = mode & 2 ? int(tail.bytes(1) % 6) : int(m->scalars[i].elem);
    etlBindScalar(prog, m->scalars[i].name, etlDType(dtype), &bits);
  }
  etl_program_prepare(prog);
  etlProgramDestroy(prog);
  return 0;
}
