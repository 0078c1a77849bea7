/*===- examples/gemv_atomic/gemv_atomic_host.c - Run gemv_atomic.etl -----===
 *
 * gemv_atomic.etl has gemv.etl's tensors and results (y16 = W16 x,
 * y32 = W32 x), computed by adding the split-K partial sums into y with
 * atomic_add, so it runs under the same host and checks, with y zeroed
 * before each run (examples/gemv/gemv_host.c).
 *
 *   gemv_atomic_host gemv_atomic.etlb [--device auto|sim|cuda] [--profile FILE] [--shape N,K]...
 *===----------------------------------------------------------------------===*/
#define GEMV_NAME "gemv_atomic"
#include "../gemv/gemv_host.c"
