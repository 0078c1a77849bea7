// Runtime tests: the whole public API on the sim device, with artifacts
// built here (a small writer mirroring etl_abi.h) and a hand-written C kernel
// compiled into the "sim" code section at test time with `cc -shared -fPIC`.
// Also covers the reader's robustness (fuzzed/truncated/wrong-version
// artifacts), the evaluator, wait counts and static queues (through the
// private header), the memory checker and the watchdog.
#include "runtime_harness.h"

using namespace etl_test;

TEST_CASE("errors: names, strings, version") {
  CHECK(std::string(etlGetErrorName(ETL_SUCCESS)) == "ETL_SUCCESS");
  CHECK(std::string(etlGetErrorName(ETL_ERROR_TIMEOUT)) == "ETL_ERROR_TIMEOUT");
  CHECK(std::string(etlGetErrorName(etlStatus(999))) == "ETL_ERROR_UNKNOWN");
  CHECK(std::strlen(etlGetErrorString(ETL_ERROR_BINDING)) > 0);
  CHECK(etlVersion() == ETL_VERSION_MAJOR * 10000 + ETL_VERSION_MINOR * 100 + ETL_VERSION_PATCH);
  CHECK(etlArtifactVersion() == ETL_ARTIFACT_VERSION);
}

TEST_CASE("expression evaluator") {
  auto ev = [](const X &x, int64_t dim, int64_t *out) {
    etl_expr e{uint32_t(x.size()), const_cast<int64_t *>(x.data())};
    char err[160];
    if (etl_expr_check(&e, 1, 1, err, sizeof err) != 0)
      return -2;
    int64_t var = 5;
    return etl_expr_eval(&e, &dim, 1, &var, 1, out, err, sizeof err);
  };
  int64_t r = 0;
  CHECK(ev(op(C(-7), C(2), ETL_XOP_FLOORDIV), 0, &r) == 0);
  CHECK(r == -4);
  CHECK(ev(op(C(-7), C(2), ETL_XOP_MOD), 0, &r) == 0);
  CHECK(r == 1);
  CHECK(ev(op(C(7), C(2), ETL_XOP_CDIV), 0, &r) == 0);
  CHECK(r == 4);
  CHECK(ev(op(C(-7), C(2), ETL_XOP_CDIV), 0, &r) == 0);
  CHECK(r == -3);
  CHECK(ev(op(D(0), V(0), ETL_XOP_MUL), 6, &r) == 0);
  CHECK(r == 30);
  CHECK(ev(op(op(D(0), C(3), ETL_XOP_GE), op(D(0), C(9), ETL_XOP_LT), ETL_XOP_AND), 6, &r) == 0);
  CHECK(r == 1);
  CHECK(ev(op(C(1), D(0), ETL_XOP_FLOORDIV), 0, &r) == -1);            // divide by zero
  CHECK(ev(op(C(INT64_MAX), C(1), ETL_XOP_ADD), 0, &r) == -1);         // overflow
  CHECK(ev(op(C(INT64_MAX / 2 + 1), C(2), ETL_XOP_MUL), 0, &r) == -1); // overflow
  X neg = C(INT64_MIN);
  neg.push_back(ETL_XOP_NEG);
  CHECK(ev(neg, 0, &r) == -1);
  CHECK(ev({ETL_XOP_ADD}, 0, &r) == -2);                        // underflow
  CHECK(ev({ETL_XOP_CONST}, 0, &r) == -2);                      // missing immediate
  CHECK(ev({ETL_XOP_DIM, 3}, 0, &r) == -2);                     // dim out of range
  CHECK(ev(op(C(1), C(2), 999), 0, &r) == -2);                  // unknown op
  CHECK(ev({ETL_XOP_CONST, 1, ETL_XOP_CONST, 2}, 0, &r) == -2); // depth 2 at end
}

TEST_CASE("plan: wait counts with star, queues round-robin over CTAs") {
  // dims N; events G[N, 3]; groups: a (i in [0,N), j in [0,2)) notifies G[i, *];
  // b (i in [0,N)) waits G[i, 1]; order b? no: a, b.
  W w;
  w.u32(4);
  w.u32(0);
  w.str("k");
  w.str("p.etl");
  w.u32(10);
  w.u32(1);
  w.str("N");
  w.u32(8);
  w.u32(0); // tensors
  w.u32(0); // scalars
  w.u32(0); // constraints
  w.u32(1);
  w.str("G");
  w.u32(2);
  w.expr(D(0));
  w.expr(C(3));
  w.u32(9);
  w.u32(2);
  w.str("a");
  w.u32(2);
  w.expr(C(0));
  w.expr(D(0));
  w.expr(C(0));
  w.expr(C(2));
  w.u32(1);
  w.u32(0);
  w.u32(2);
  w.u32(0);
  w.expr(V(0));
  w.u32(1);
  w.u32(0);
  w.u32(ETL_SCHEDULE_STATIC);
  w.u32(ETL_NO_DATA_VAR);
  w.u32(ETL_NO_LAYER_BLOCK);
  w.str("b");
  w.u32(1);
  w.expr(C(0));
  w.expr(D(0));
  w.u32(0);
  w.u32(1);
  w.u32(0);
  w.u32(2);
  w.u32(0);
  w.expr(V(0));
  w.u32(0);
  w.expr(C(1));
  w.u32(ETL_SCHEDULE_STATIC);
  w.u32(ETL_NO_DATA_VAR);
  w.u32(ETL_NO_LAYER_BLOCK);
  w.u32(2);
  w.u32(1); // order: b listed last
  w.u32(0);
  // order is [1, 0] above? no: written as order[0]=1? fix below
  std::string meta = w.b;
  // order entries are the last two u32: make them (0, 1)
  put32(meta, meta.size() - 8, 0);
  put32(meta, meta.size() - 4, 1);
  meta.append(4, '\0'); // no tensor maps (v9)
  std::string a = artifact(meta, {});
  etl_artifact art;
  REQUIRE(etl_artifact_parse(a.data(), a.size(), &art) == ETL_SUCCESS);
  int64_t n = 3;
  etl_plan *p = nullptr;
  REQUIRE(etl_plan_build(&art.meta, &n, 4, &p) == ETL_SUCCESS);
  CHECK(p->n_counters == 9);
  for (int i = 0; i < 9; ++i)
    CHECK(p->wait_counts[i] == 2);
  CHECK(p->n_entries == 9); // 6 tasks of a, 3 of b
  // round robin over 4 CTAs: CTA 0 gets tasks 0, 4, 8; CTA 1: 1, 5; ...
  CHECK(p->queue_offs[0] == 0);
  CHECK(p->queue_offs[1] == 3);
  CHECK(p->queue_offs[2] == 5);
  CHECK(p->queue_offs[3] == 7);
  CHECK(p->queue_offs[4] == 9);
  uint32_t want0[] = {0, 0, 0, 4, 1, 2}; // (a,0) (a,4) (b,2)
  for (int i = 0; i < 6; ++i)
    CHECK(p->queue[i] == want0[i]);
  CHECK(p->queue[2 * 5] == 0); // CTA 2 starts with (a, 2)
  CHECK(p->queue[2 * 5 + 1] == 2);
  char name[64];
  etl_plan_task_name(&art.meta, p, 0, 5, name, sizeof name);
  CHECK(std::string(name) == "a[2, 1]");
  etl_plan_counter_name(&art.meta, p, 7, name, sizeof name);
  CHECK(std::string(name) == "G[2, 1]");
  etl_plan_free_host(p);
  etl_artifact_free(&art);
}

TEST_CASE("plan: out-of-range notify names group and event") {
  std::string a = artifact(test_meta(1), {});
  etl_artifact art;
  REQUIRE(etl_artifact_parse(a.data(), a.size(), &art) == ETL_SUCCESS);
  int64_t n = 4;
  etl_plan *p = nullptr;
  CHECK(etl_plan_build(&art.meta, &n, 2, &p) == ETL_ERROR_BINDING);
  std::string msg = etlGetLastErrorMessage();
  CHECK(msg.find("produce") != std::string::npos);
  CHECK(msg.find("'E'") != std::string::npos);
  CHECK(msg.find("produce[3]") != std::string::npos);
  etl_artifact_free(&art);
}

TEST_CASE("artifact reader refuses corrupt, truncated and wrong-version files") {
  std::string good = artifact(test_meta(), {{"sim", std::string(100, 'k')}});
  etl_artifact art;
  REQUIRE(etl_artifact_parse(good.data(), good.size(), &art) == ETL_SUCCESS);
  CHECK(art.meta.n_groups == 3);
  CHECK(std::string(art.meta.constraints[0].text) == "N <= 1000");
  // the tensor kinds: x only read (ETL_TENSOR_INPUT), y written, partial a buffer
  CHECK((!art.meta.tensors[0].written && !art.meta.tensors[0].is_buffer));
  CHECK((art.meta.tensors[1].written && !art.meta.tensors[1].is_buffer));
  CHECK(art.meta.tensors[3].is_buffer);
  etl_artifact_free(&art);

  SUBCASE("wrong version") {
    std::string a = artifact(test_meta(), {}, ETL_ARTIFACT_VERSION + 1);
    CHECK(etl_artifact_parse(a.data(), a.size(), &art) == ETL_ERROR_UNSUPPORTED_VERSION);
    std::string msg = etlGetLastErrorMessage();
    CHECK(msg.find("artifact version " + std::to_string(ETL_ARTIFACT_VERSION + 1) +
                   ", this runtime reads " + std::to_string(ETL_ARTIFACT_VERSION_MIN) + " .. " +
                   std::to_string(ETL_ARTIFACT_VERSION)) != std::string::npos);
    a = artifact(test_meta(), {}, ETL_ARTIFACT_VERSION_MIN - 1);
    CHECK(etl_artifact_parse(a.data(), a.size(), &art) == ETL_ERROR_UNSUPPORTED_VERSION);
  }
  SUBCASE("version 8: no tensor maps, still read") {
    std::string meta = test_meta();
    meta.resize(meta.size() - 4); // v9's count of tensor maps
    std::string a = artifact(meta, {}, 8);
    REQUIRE(etl_artifact_parse(a.data(), a.size(), &art) == ETL_SUCCESS);
    CHECK(art.meta.n_tma_maps == 0);
    CHECK(art.meta.n_groups == 3);
    etl_artifact_free(&art);
  }
  SUBCASE("bad magic, checksum, size") {
    std::string a = good;
    a[0] = 'X';
    CHECK(etl_artifact_parse(a.data(), a.size(), &art) == ETL_ERROR_INVALID_ARTIFACT);
    a = good;
    a[a.size() - 1] ^= 1;
    CHECK(etl_artifact_parse(a.data(), a.size(), &art) == ETL_ERROR_INVALID_ARTIFACT);
    CHECK(std::string(etlGetLastErrorMessage()).find("checksum") != std::string::npos);
    a = good + "x";
    CHECK(etl_artifact_parse(a.data(), a.size(), &art) == ETL_ERROR_INVALID_ARTIFACT);
  }
  SUBCASE("malformed metadata with a valid checksum") {
    std::string meta = test_meta();
    std::string bad = meta;
    put32(bad, 0, 0); // threads_per_cta 0
    std::string a = artifact(bad, {});
    CHECK(etl_artifact_parse(a.data(), a.size(), &art) == ETL_ERROR_INVALID_ARTIFACT);
    bad = meta;
    put32(bad, bad.size() - 16, 0x7fffffff); // huge group order count
    a = artifact(bad, {});
    CHECK(etl_artifact_parse(a.data(), a.size(), &art) == ETL_ERROR_INVALID_ARTIFACT);
    a = artifact(meta + "zz", {});
    CHECK(etl_artifact_parse(a.data(), a.size(), &art) == ETL_ERROR_INVALID_ARTIFACT);
    CHECK(std::string(etlGetLastErrorMessage()).find("trailing") != std::string::npos);
  }
  SUBCASE("every truncation") {
    for (size_t n = 0; n < good.size(); ++n)
      REQUIRE(etl_artifact_parse(good.data(), n, &art) != ETL_SUCCESS);
  }
  SUBCASE("flipped bytes, checksum left stale") {
    for (size_t i = 0; i < good.size(); ++i) {
      std::string a = good;
      a[i] = char(a[i] ^ 0x5a);
      REQUIRE(etl_artifact_parse(a.data(), a.size(), &art) != ETL_SUCCESS);
    }
  }
  SUBCASE("flipped/overwritten metadata bytes with a fixed checksum never crash") {
    size_t meta_end = 32 + 64 + test_meta().size();
    const uint8_t patterns[] = {0x01, 0x80, 0xff, 0x5a};
    int ok = 0, bad = 0;
    for (size_t i = 0; i < meta_end; ++i) {
      for (uint8_t pat : patterns) {
        std::string a = good;
        a[i] = char(uint8_t(a[i]) ^ pat);
        fix_checksum(a);
        if (etl_artifact_parse(a.data(), a.size(), &art) == ETL_SUCCESS) {
          ++ok;
          etl_artifact_free(&art);
        } else {
          ++bad;
        }
        a = good;
        a[i] = char(0xff);
        if (i + 1 < a.size())
          a[i + 1] = char(0xff);
        fix_checksum(a);
        if (etl_artifact_parse(a.data(), a.size(), &art) == ETL_SUCCESS)
          etl_artifact_free(&art);
      }
    }
    CHECK(bad > 0);
    MESSAGE("fuzz: " << ok << " accepted, " << bad << " refused");
  }
}

TEST_CASE("contexts, memory and NULL handles") {
  etlContext c = nullptr;
  CHECK(etlContextCreate(&c, "tpu", nullptr) == ETL_ERROR_NOT_FOUND);
  CHECK(etlContextCreate(nullptr, "sim", nullptr) == ETL_ERROR_INVALID_VALUE);
  etlStatus cuda = etlContextCreate(&c, "cuda", nullptr);
  if (cuda == ETL_SUCCESS) {
    CHECK(etlContextIsGpu(c) == 1);
    etlContextDestroy(c);
  } else {
    CHECK((cuda == ETL_ERROR_NO_CUDA_DRIVER || cuda == ETL_ERROR_NO_DEVICE));
    CHECK(std::strlen(etlGetLastErrorMessage()) > 10);
    REQUIRE(etlContextCreate(&c, "auto", nullptr) == ETL_SUCCESS);
    CHECK(etlContextIsGpu(c) == 0);
    CHECK(std::string(etlContextDeviceName(c)) == "sim (4 workers)");
    etlContextDestroy(c);
  }
  CHECK(etlContextDestroy(nullptr) == ETL_SUCCESS);
  CHECK(etlContextDeviceName(nullptr) == nullptr);
  CHECK(etlContextIsGpu(nullptr) == 0);
  void *p = nullptr;
  CHECK(etlMalloc(nullptr, 16, &p) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlFree(nullptr, p) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlMemcpyHtoD(nullptr, p, p, 1) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlMemcpyDtoH(nullptr, p, p, 1) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlProgramLoadMemory(nullptr, "x", 1, nullptr) == ETL_ERROR_INVALID_HANDLE);
  int n;
  const char *nm;
  CHECK(etlProgramNumDims(nullptr, &n) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlProgramDimName(nullptr, 0, &nm) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlProgramNumTensors(nullptr, &n) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlProgramTensorName(nullptr, 0, &nm) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlBindDim(nullptr, "N", 1) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlBindTensor(nullptr, "x", p, ETL_F32, 0, nullptr) == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlRun(nullptr) == ETL_ERROR_INVALID_HANDLE);
  CHECK(std::string(etlGetLastErrorMessage()).find("etlRun") != std::string::npos);
  CHECK(etlProgramDestroy(nullptr) == ETL_SUCCESS);

  Ctx ctx;
  CHECK(etlMalloc(ctx.ctx, 100, &p) == ETL_SUCCESS);
  int local = 0;
  CHECK(etlFree(ctx.ctx, &local) == ETL_ERROR_INVALID_VALUE);
  CHECK(etlFree(ctx.ctx, p) == ETL_SUCCESS);
  CHECK(etlFree(ctx.ctx, p) == ETL_ERROR_INVALID_VALUE);
  etlProgram prog = nullptr;
  CHECK(etlProgramLoadFile(ctx.ctx, "/nonexistent/x.etlb", &prog) == ETL_ERROR_NOT_FOUND);
  CHECK(etlProgramLoadMemory(ctx.ctx, "ETLB", 4, &prog) == ETL_ERROR_INVALID_ARTIFACT);
  CHECK(prog == nullptr);
  // an artifact without sim code
  std::string no_sim = artifact(test_meta(), {{"sm_90", std::string("x\0", 2)}});
  CHECK(etlProgramLoadMemory(ctx.ctx, no_sim.data(), no_sim.size(), &prog) == ETL_ERROR_NOT_FOUND);
  CHECK(std::string(etlGetLastErrorMessage()).find("sm_90") != std::string::npos);
}

TEST_CASE("end to end on sim: several shape bindings") {
  std::string a = good_artifact();
  if (a.empty())
    return;
  for (uint32_t workers : {1u, 3u, 4u}) {
    Ctx ctx(workers);
    // through a file, as applications do
    std::string path = std::string(ETL_TEST_BINARY_DIR) + "/runtime_kernels/good.etlb";
    {
      std::ofstream f(path, std::ios::binary);
      f << a;
    }
    etlProgram prog = nullptr;
    REQUIRE(etlProgramLoadFile(ctx.ctx, path.c_str(), &prog) == ETL_SUCCESS);
    int n = 0;
    const char *nm = nullptr;
    CHECK(etlProgramNumDims(prog, &n) == ETL_SUCCESS);
    CHECK(n == 1);
    CHECK(etlProgramDimName(prog, 0, &nm) == ETL_SUCCESS);
    CHECK(std::string(nm) == "N");
    CHECK(etlProgramDimName(prog, 1, &nm) == ETL_ERROR_INVALID_VALUE);
    CHECK(etlProgramNumTensors(prog, &n) == ETL_SUCCESS);
    CHECK(n == 3);
    CHECK(etlProgramTensorName(prog, 2, &nm) == ETL_SUCCESS);
    CHECK(std::string(nm) == "total");
    CHECK(etlProgramTensorName(prog, 3, &nm) == ETL_ERROR_INVALID_VALUE);
    int written = -1;
    CHECK(etlProgramTensorWritten(prog, 0, &written) == ETL_SUCCESS);
    CHECK(written == 0); // x: ETL_TENSOR_INPUT
    CHECK(etlProgramTensorWritten(prog, 1, &written) == ETL_SUCCESS);
    CHECK(written == 1);
    CHECK(etlProgramTensorWritten(prog, 3, &written) == ETL_ERROR_INVALID_VALUE);
    CHECK(etlProgramTensorWritten(prog, 0, nullptr) == ETL_ERROR_INVALID_VALUE);
    for (int64_t size : {1, 2, 5, 13, 40, 5}) {
      CAPTURE(workers);
      CAPTURE(size);
      Buffers b(ctx.ctx, size);
      b.bind(prog);
      etlStatus st = etlRun(prog);
      INFO(etlGetLastErrorMessage());
      REQUIRE(st == ETL_SUCCESS);
      b.check();
      REQUIRE(etlRun(prog) == ETL_SUCCESS); // counters re-initialised
      b.check();
    }
    etlProgramDestroy(prog);
  }
}

TEST_CASE("binding validation") {
  std::string a = good_artifact();
  if (a.empty())
    return;
  Loaded l(a);
  Buffers b(l.ctx.ctx, 4);
  auto msg = [] { return std::string(etlGetLastErrorMessage()); };

  CHECK(etlRun(l.prog) == ETL_ERROR_UNBOUND);
  CHECK(msg().find("'N'") != std::string::npos);
  CHECK(etlBindDim(l.prog, "M", 3) == ETL_ERROR_NOT_FOUND);
  CHECK(msg().find("'M'") != std::string::npos);
  CHECK(etlBindDim(l.prog, "N", 0) == ETL_ERROR_BINDING);
  CHECK(etlBindDim(l.prog, nullptr, 3) == ETL_ERROR_INVALID_VALUE);
  REQUIRE(etlBindDim(l.prog, "N", 4) == ETL_SUCCESS);
  CHECK(etlRun(l.prog) == ETL_ERROR_UNBOUND);
  CHECK(msg().find("'x'") != std::string::npos);

  b.bind(l.prog);
  REQUIRE(etlRun(l.prog) == ETL_SUCCESS);
  b.check();

  int64_t bad = 4 * 32 + 1, two[2] = {4, 32};
  CHECK(etlBindTensor(l.prog, "x", b.x, ETL_I32, 1, &bad) == ETL_ERROR_BINDING);
  CHECK(msg().find("dtype") != std::string::npos);
  CHECK(etlBindTensor(l.prog, "x", b.x, ETL_BF16, 1, &bad) == ETL_ERROR_BINDING);
  CHECK(msg().find("has dtype f32, bound as bf16") != std::string::npos);
  CHECK(etlBindTensor(l.prog, "x", b.x, ETL_I64, 1, &bad) == ETL_ERROR_BINDING);
  CHECK(msg().find("bound as i64") != std::string::npos);
  CHECK(etlBindTensor(l.prog, "x", b.x, ETL_F32, 2, two) == ETL_ERROR_BINDING);
  CHECK(msg().find("rank") != std::string::npos);
  CHECK(etlBindTensor(l.prog, "x", nullptr, ETL_F32, 1, &bad) == ETL_ERROR_INVALID_VALUE);
  CHECK(etlBindTensor(l.prog, "partial", b.x, ETL_F32, 1, &bad) == ETL_ERROR_NOT_FOUND);
  CHECK(etlBindTensor(l.prog, "nope", b.x, ETL_F32, 1, &bad) == ETL_ERROR_NOT_FOUND);
  CHECK(msg().find("x, y, total") != std::string::npos);
  // failed binds left the previous binding intact
  REQUIRE(etlRun(l.prog) == ETL_SUCCESS);

  // 129 elements do not fit x's 512-byte allocation: refused at bind
  CHECK(etlBindTensor(l.prog, "x", b.x, ETL_F32, 1, &bad) == ETL_ERROR_BINDING);
  CHECK(msg().find("tensor 'x' bound as f32[129] needs 516 bytes") != std::string::npos);
  // 127 fit, but the program expects N * 32 = 128: refused at etlRun
  int64_t fewer = 4 * 32 - 1;
  CHECK(etlBindTensor(l.prog, "x", b.x, ETL_F32, 1, &fewer) == ETL_SUCCESS);
  CHECK(etlRun(l.prog) == ETL_ERROR_BINDING);
  CHECK(msg().find("tensor 'x'") != std::string::npos);
  CHECK(msg().find("[127]") != std::string::npos);
  CHECK(msg().find("[128]") != std::string::npos);

  b.bind(l.prog);
  CHECK(etlBindDim(l.prog, "N", 2000) == ETL_SUCCESS);
  CHECK(etlRun(l.prog) == ETL_ERROR_BINDING);
  CHECK(msg().find("N <= 1000") != std::string::npos);
  CHECK(msg().find("test.etl:3:7") != std::string::npos);
  CHECK(msg().find("N=2000") != std::string::npos);

  b.bind(l.prog);
  REQUIRE(etlRun(l.prog) == ETL_SUCCESS);
  b.check();
  etlProgramDestroy(l.prog);
}

TEST_CASE("sim: memory violation names the task, and the context stays usable") {
  std::string k = kernel("-DBAD");
  std::string a = good_artifact();
  if (k.empty() || a.empty())
    return;
  std::string bad = artifact(test_meta(), {{"sim", k}});
  Ctx ctx(3);
  etlProgram pb = nullptr, pg = nullptr;
  REQUIRE(etlProgramLoadMemory(ctx.ctx, bad.data(), bad.size(), &pb) == ETL_SUCCESS);
  REQUIRE(etlProgramLoadMemory(ctx.ctx, a.data(), a.size(), &pg) == ETL_SUCCESS);
  Buffers b(ctx.ctx, 5);
  b.bind(pb);
  CHECK(etlRun(pb) == ETL_ERROR_MEMORY_VIOLATION);
  std::string msg = etlGetLastErrorMessage();
  INFO(msg);
  CHECK(msg.find("produce[2]") != std::string::npos);
  CHECK(msg.find("load") != std::string::npos);
  CHECK(msg.find("'x'") != std::string::npos);
  CHECK(msg.find("'x' (160 elements) at element offset 224") != std::string::npos);
  b.bind(pg);
  REQUIRE(etlRun(pg) == ETL_SUCCESS);
  b.check();
  CHECK(etlRun(pb) == ETL_ERROR_MEMORY_VIOLATION); // and again
  REQUIRE(etlRun(pg) == ETL_SUCCESS);
  b.check();
}

TEST_CASE("sim: a deadlock ends in ETL_ERROR_TIMEOUT listing pending events") {
  std::string k = kernel("-DDEADLOCK");
  std::string a = good_artifact();
  if (k.empty() || a.empty())
    return;
  std::string dead = artifact(test_meta(), {{"sim", k}});
  Ctx ctx(4, 200);
  etlProgram pd = nullptr, pg = nullptr;
  REQUIRE(etlProgramLoadMemory(ctx.ctx, dead.data(), dead.size(), &pd) == ETL_SUCCESS);
  Buffers b(ctx.ctx, 3);
  b.bind(pd);
  CHECK(etlRun(pd) == ETL_ERROR_TIMEOUT);
  std::string msg = etlGetLastErrorMessage();
  INFO(msg);
  CHECK(msg.find("E[0]=1") != std::string::npos);
  CHECK(msg.find("E[2]=1") != std::string::npos);
  CHECK(msg.find("F[0]=3") != std::string::npos);
  CHECK(msg.find("consume[") != std::string::npos);
  etlProgramDestroy(pd);
  REQUIRE(etlProgramLoadMemory(ctx.ctx, a.data(), a.size(), &pg) == ETL_SUCCESS);
  b.bind(pg);
  REQUIRE(etlRun(pg) == ETL_SUCCESS);
  b.check();
}

TEST_CASE("runtime: element sizes of every element type") {
  CHECK(etl_elem_size(ETL_ELEM_F32) == 4);
  CHECK(etl_elem_size(ETL_ELEM_F16) == 2);
  CHECK(etl_elem_size(ETL_ELEM_I32) == 4);
  CHECK(etl_elem_size(ETL_ELEM_I64) == 8);
  CHECK(etl_elem_size(ETL_ELEM_BF16) == 2);
  CHECK(etl_elem_size(ETL_ELEM_I8) == 1);
  CHECK(etl_elem_size(ETL_ELEM_U8) == 1);
  CHECK(etl_elem_size(ETL_ELEM_I16) == 2);
  CHECK(etl_elem_size(ETL_ELEM_U16) == 2);
  CHECK(etl_elem_size(ETL_ELEM_U32) == 4);
  // packed: two elements per byte, an odd count rounds up
  CHECK(etl_elems_bytes(ETL_ELEM_I4, 10) == 5);
  CHECK(etl_elems_bytes(ETL_ELEM_U4, 7) == 4);
  CHECK(etl_elems_bytes(ETL_ELEM_U16, 7) == 14);
  CHECK(!etl_elem_valid(5));
  CHECK(!etl_elem_valid(ETL_ELEM_LAST + 1));
  CHECK(etl_elem_valid(ETL_ELEM_U4));
  // The public dtype codes are the artifact's element codes.
  CHECK(int(ETL_I64) == ETL_ELEM_I64);
  CHECK(int(ETL_BF16) == ETL_ELEM_BF16);
}
