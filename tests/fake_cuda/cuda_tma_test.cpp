// The tensor maps of an sm_90a TMA ring (compiler/tile/pipeline.cpp, the
// runtime's tma.c), on the fake driver: the naive GEMV (scripts/kloop_gemv.etl,
// a 64 x 128 bf16 weight tile and a 64-element x slice per K step) compiled
// for sm_90a streams both loads by TMA, so each run encodes one map for x
// and one for w with cuTensorMapEncodeTiled from the bound shapes: the
// extents innermost first, w's row pitch, the boxes the artifact recorded, no
// swizzle or interleave, zeros out of bounds. A w bound off a 16-byte
// boundary is refused before the launch, naming the tensor.
#include "fake_harness.h"

#include <etl/etl.h>

#include <cstdint>
#include <string>

using namespace fake_cuda;

namespace {

struct Gemv {
  etlContext ctx = nullptr;
  etlProgram prog = nullptr;
  void *x = nullptr, *w = nullptr, *y = nullptr;
  static constexpr int64_t N = 152, K = 200; // partial tiles along both

  Gemv() {
    REQUIRE(etlContextCreate(&ctx, "cuda", nullptr) == ETL_SUCCESS);
    INFO(etlGetLastErrorMessage());
    REQUIRE(etlProgramLoadFile(ctx, artifact("kloop_gemv_90a").c_str(), &prog) == ETL_SUCCESS);
    REQUIRE(etlMalloc(ctx, K * 2, &x) == ETL_SUCCESS);
    REQUIRE(etlMalloc(ctx, K * N * 2 + 16, &w) == ETL_SUCCESS);
    REQUIRE(etlMalloc(ctx, N * 4, &y) == ETL_SUCCESS);
    REQUIRE(etlBindDim(prog, "N", N) == ETL_SUCCESS);
    REQUIRE(etlBindDim(prog, "K", K) == ETL_SUCCESS);
  }
  etlStatus run(size_t w_offset) {
    const int64_t xs[] = {K}, ws[] = {K, N}, ys[] = {N};
    etlStatus st = etlBindTensor(prog, "x", x, ETL_BF16, 1, xs);
    if (!st)
      st = etlBindTensor(prog, "w", static_cast<char *>(w) + w_offset, ETL_BF16, 2, ws);
    if (!st)
      st = etlBindTensor(prog, "y", y, ETL_F32, 1, ys);
    return st ? st : etlRun(prog);
  }
  ~Gemv() {
    for (void *p : {x, w, y})
      etlFree(ctx, p);
    etlProgramDestroy(prog);
    etlContextDestroy(ctx);
  }
};

} // namespace

TEST_CASE("sm_90a TMA rings: the runtime encodes each tensor map from the bound shapes") {
  Fake &f = fake();
  f.device_cc(90);
  {
    Gemv g;
    CHECK(std::string(f.stats().last_target) == "sm_90a");
    INFO(etlGetLastErrorMessage());
    REQUIRE(g.run(0) == ETL_SUCCESS);
    const etl_fake_cuda_stats s = f.stats();
    CHECK(s.violations == 0);
    REQUIRE(s.tmaps == 2);
    for (int i = 0; i < 2; ++i) {
      const auto &t = s.tmap[i];
      CAPTURE(i);
      CHECK(t.dtype == 9); // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
      CHECK(t.interleave == 0);
      CHECK(t.swizzle == 0); // row-major slots
      CHECK(t.oob == 0);     // zeros out of bounds: the loads' default pad
      CHECK(t.elem_strides[0] == 1);
      if (t.rank == 1) { // x[k * TK .. +TK]
        CHECK(t.addr == reinterpret_cast<uintptr_t>(g.x));
        CHECK(t.dims[0] == uint64_t(Gemv::K));
        CHECK(t.box[0] == 64);
      } else { // w[k * TK .. +TK, n * TN .. +TN], innermost first
        CHECK(t.rank == 2);
        CHECK(t.addr == reinterpret_cast<uintptr_t>(g.w));
        CHECK(t.dims[0] == uint64_t(Gemv::N));
        CHECK(t.dims[1] == uint64_t(Gemv::K));
        CHECK(t.stride == uint64_t(Gemv::N * 2));
        CHECK(t.box[0] == 128);
        CHECK(t.box[1] == 64);
      }
    }
    CHECK(s.tmap[0].rank + s.tmap[1].rank == 3); // one of each
    // A w 8 bytes off its 16-byte boundary: TMA cannot address it.
    CHECK(g.run(8) == ETL_ERROR_BINDING);
    std::string msg = etlGetLastErrorMessage();
    CHECK(msg.find("tensor 'w'") != std::string::npos);
    CHECK(msg.find("not 16-byte aligned") != std::string::npos);
    CHECK(f.stats().tmaps == 3); // x again, then w refused before the driver saw it
  }
  f.reset();
}
