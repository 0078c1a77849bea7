// --emit=time and `etlc tune`'s ranking: the timing model (cost/timing.h)
// read from the code of a synthetic GEMM whose K slice is tunable: a thinner
// slice means more steps, each with its ring latency and per-step code, so
// the modelled time must grow as BK shrinks; the steps per task are K / BK;
// tune ranks every candidate, the default among them, and its pick is never
// slower than the default (the default is a candidate). No GPU: modelled.
#include "driver_harness.h"

#include <llvm/Support/JSON.h>

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

namespace etl {
namespace {

using drivertest::etlc;
using drivertest::Result;

const char *kGemm = R"(const BM = 64 in [32, 64];
const BK = 32 in [16, 32, 64];

kernel g<M: dim, N: dim, K: dim>(a: tensor<bf16>[M, K], b: tensor<bf16>[K, N],
                                 c: tensor<f32>[M, N]) {
  task tile[i in 0 .. cdiv(M, BM), j in 0 .. cdiv(N, 64)] {
    var acc = zeros<f32>[BM, 64];
    for k in 0 .. cdiv(K, BK) {
      acc += dot(load(a[i * BM .. +BM, k * BK .. +BK]), load(b[k * BK .. +BK, j * 64 .. +64]));
    }
    store(c[i * BM .. +BM, j * 64 .. +64], acc);
  }
}
)";

std::string source() {
  return drivertest::write(drivertest::temp_dir("time_test") / "g.etl", kGemm);
}

llvm::json::Object time_json(const std::string &file, const std::string &bk) {
  Result r = etlc({"compile", file, "--target", "sm_90", "--emit=time", "--format=json", "--gpu",
                   "h200", "--bind", "M=1024,N=1024,K=4096", "-D", "BK=" + bk});
  INFO(r.err);
  REQUIRE(r.code == 0);
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(r.out);
  REQUIRE(bool(v));
  REQUIRE(v->getAsObject());
  return *v->getAsObject();
}

double group_field(const llvm::json::Object &o, const char *field) {
  const llvm::json::Array *gs = o.getArray("groups");
  REQUIRE(gs);
  REQUIRE(gs->size() == 1);
  return *(*gs)[0].getAsObject()->getNumber(field);
}

TEST_CASE("--emit=time: the model reads the K loop from the code, slower as BK shrinks") {
  std::string f = source();
  llvm::json::Object t16 = time_json(f, "16"), t32 = time_json(f, "32"), t64 = time_json(f, "64");
  // K / BK steps per task, from the code's mma FLOPs per step and the cost
  CHECK(group_field(t16, "steps") == 256);
  CHECK(group_field(t32, "steps") == 128);
  CHECK(group_field(t64, "steps") == 64);
  // one step's code, read from the PTX (its size against BK is the
  // lowering's business: the bumped ring copies made BK 64's step smaller
  // than BK 16's)
  for (const llvm::json::Object *t : {&t16, &t32, &t64})
    CHECK(group_field(*t, "ptx_step") > 0);
  CHECK(group_field(t32, "ring") >= 2); // a cp.async ring the model sees
  double s16 = *t16.getNumber("seconds"), s32 = *t32.getNumber("seconds"),
         s64 = *t64.getNumber("seconds");
  CHECK(s16 > s32);
  CHECK(s32 > s64);
  CHECK(group_field(t32, "tasks") == 16 * 16);
  // the text form: a table and the total
  Result r = etlc({"compile", f, "--target", "sm_90", "--emit=time", "--gpu", "h200", "--bind",
                   "M=1024,N=1024,K=4096"});
  CHECK(r.out.find("modelled time on h200") != std::string::npos);
  CHECK(r.out.find("\ntile ") != std::string::npos);
  CHECK(r.out.find("total ") != std::string::npos);
}

TEST_CASE("--emit=time: clear errors without a binding, a GPU target or timing constants") {
  std::string f = source();
  Result r = etlc({"compile", f, "--target", "sm_90", "--emit=time"});
  CHECK(r.code == 2);
  CHECK(r.err.find("--bind gives no value for dim 'M'") != std::string::npos);
  r = etlc({"compile", f, "--target", "sim", "--emit=time", "--bind", "M=1,N=1,K=1"});
  CHECK(r.code == 2);
  CHECK(r.err.find("--emit=ptx or --emit=time needs an sm_* target") != std::string::npos);
  r = etlc({"compile", f, "--target", "sm_90", "--emit=time", "--bind", "M=1,N=1,K=1", "--gpu",
            "rtx4090"});
  CHECK(r.code == 2);
  CHECK(r.err.find("no timing constants for GPU 'rtx4090'") != std::string::npos);
}

TEST_CASE("etlc tune ranks every candidate by the model; its pick is never slower than the default") {
  std::string f = source();
  std::string rec = (drivertest::temp_dir("time_test") / "record.json").string();
  Result r = etlc({"tune", f, "--target", "sm_90", "--bind", "M=1024,N=1024,K=4096", "--bind",
                   "M=64,N=64,K=4096", "--record", rec});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("modelled, not measured") != std::string::npos);
  CHECK(r.err.find("tune: [6/6] BM=64 BK=64") != std::string::npos); // progress
  CHECK(r.out.find("(default)") != std::string::npos);
  CHECK(r.out.find("pick: ") != std::string::npos);
  std::ifstream in(rec);
  std::stringstream text;
  text << in.rdbuf();
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(text.str());
  REQUIRE(bool(v));
  const llvm::json::Object &o = *v->getAsObject();
  CHECK(o.getString("how") == "modelled");
  CHECK(o.getString("gpu") == "h200");
  CHECK(o.getString("target") == "sm_90");
  CHECK(o.getString("program_sha256")->size() == 64);
  const llvm::json::Array *bs = o.getArray("bindings");
  REQUIRE(bs);
  REQUIRE(bs->size() == 2);
  for (const llvm::json::Value &b : *bs) {
    const llvm::json::Array *cs = b.getAsObject()->getArray("candidates");
    REQUIRE(cs);
    CHECK(cs->size() == 6); // every candidate, ranked or pruned
    double first = -1, dflt = -1, prev = 0;
    for (const llvm::json::Value &c : *cs) {
      const llvm::json::Object &co = *c.getAsObject();
      auto s = co.getNumber("seconds");
      if (!s)
        continue;
      CHECK(*s >= prev); // ranked: fastest first
      prev = *s;
      if (first < 0)
        first = *s;
      if (co.getBoolean("default") == true)
        dflt = *s;
    }
    REQUIRE(dflt > 0);
    CHECK(first <= dflt);
  }
  // -D pins a tunable: only its combinations are candidates
  r = etlc({"tune", f, "--target", "sm_90", "--bind", "M=256,N=256,K=256", "-D", "BM=32"});
  CHECK(r.code == 0);
  CHECK(r.err.find("tune: [3/3] BM=32 BK=64") != std::string::npos);
  CHECK(r.out.find("BM=64") == std::string::npos);
}

} // namespace
} // namespace etl
