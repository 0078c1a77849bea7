// Round trip: artifacts written by compiler/artifact are read back by the
// runtime's loader (internal reader and the public API), and the atomic
// file write leaves either the old or the new file.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>

#include "artifact/artifact.h"
#include "etl/etl.h"

// The runtime's private reader, to compare every decoded field.
#include "../../../runtime/src/internal.h"

namespace {

etl::ArtifactExpr C(int64_t v) { return {ETL_XOP_CONST, v}; }
etl::ArtifactExpr D(int64_t i) { return {ETL_XOP_DIM, i}; }
etl::ArtifactExpr V(int64_t i) { return {ETL_XOP_VAR, i}; }
etl::ArtifactExpr op(etl::ArtifactExpr a, const etl::ArtifactExpr &b, int64_t o) {
  a.insert(a.end(), b.begin(), b.end());
  a.push_back(o);
  return a;
}

etl::ArtifactMeta sample() {
  etl::ArtifactMeta m;
  m.threads_per_cta = 64;
  m.smem_bytes = 1024;
  m.source_path = "model.etl";
  m.num_slots = 15;
  m.dims = {{"B", 8}, {"S", 9}};
  m.tensors.push_back({"x", ETL_ELEM_F16, false, {D(0), op(D(1), C(64), ETL_XOP_MUL)}, 10});
  m.tensors.push_back({"tmp", ETL_ELEM_F32, true, {D(0)}, 11, true}); // = zeros
  m.scalars.push_back({"eps", ETL_ELEM_BF16, 14});
  m.constraints.push_back(
      {op(op(D(1), C(64), ETL_XOP_MOD), C(0), ETL_XOP_EQ), "S % 64 == 0", "model.etl:2:9"});
  m.events.push_back({"E", {D(0)}, 12});
  m.events.push_back({"Done", {}, 13});
  etl::ArtifactGroup g;
  g.name = "tile";
  g.domain = {{C(0), D(0)}, {C(0), op(D(1), C(64), ETL_XOP_CDIV)}};
  g.notifies.push_back({0, {{false, V(0)}}});
  etl::ArtifactGroup h;
  h.name = "reduce";
  h.domain = {{C(0), C(1)}};
  h.waits.push_back({0, {{true, {}}}});
  h.notifies.push_back({1, {}});
  m.groups = {g, h};
  m.order = {0, 1};
  return m;
}

std::string slurp(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

} // namespace

TEST_CASE("artifact writer output loads in the runtime") {
  std::string bytes = etl::serialize_artifact(sample(), {{"sm_90", ".version 7.8\n"}});
  REQUIRE(bytes.size() % 8 == 0);
  CHECK(bytes.compare(0, 4, "ETLB") == 0);

  etlContext ctx = nullptr;
  REQUIRE(etlContextCreate(&ctx, "sim", nullptr) == ETL_SUCCESS);
  etlProgram prog = nullptr;
  // The sample has no "sim" code: the metadata parses, the load then stops
  // at the missing target, naming the one present.
  CHECK(etlProgramLoadMemory(ctx, bytes.data(), bytes.size(), &prog) == ETL_ERROR_NOT_FOUND);
  CHECK(std::string(etlGetLastErrorMessage()).find("sm_90") != std::string::npos);

  // Any change is caught by the checksum.
  std::string bad = bytes;
  bad[bad.size() / 2] ^= 1;
  CHECK(etlProgramLoadMemory(ctx, bad.data(), bad.size(), &prog) == ETL_ERROR_INVALID_ARTIFACT);
  etlContextDestroy(ctx);
}

TEST_CASE("artifact round trip: a parameter the kernel only reads is ETL_TENSOR_INPUT") {
  etl::ArtifactMeta m = sample();
  m.tensors[0].read_only = true;
  std::string bytes = etl::serialize_artifact(m, {{"sim", "ELF..."}});
  etl_artifact a;
  REQUIRE(etl_artifact_parse(bytes.data(), bytes.size(), &a) == ETL_SUCCESS);
  CHECK(a.meta.tensors[0].written == 0);
  CHECK(a.meta.tensors[0].is_buffer == 0);
  CHECK(a.meta.tensors[1].is_buffer == 1);
  etl_artifact_free(&a);
}

TEST_CASE("artifact round trip: every metadata field") {
  etl::ArtifactMeta m = sample();
  std::string bytes = etl::serialize_artifact(m, {{"sim", "ELF..."}, {"sm_80", "ptx80"}});
  etl_artifact a;
  REQUIRE(etl_artifact_parse(bytes.data(), bytes.size(), &a) == ETL_SUCCESS);
  const etl_meta &r = a.meta;
  CHECK(r.threads_per_cta == 64);
  CHECK(r.smem_bytes == 1024);
  CHECK(std::string(r.kernel_name) == ETL_KERNEL_ENTRY);
  CHECK(std::string(r.source_path) == "model.etl");
  CHECK(r.num_slots == 15);
  REQUIRE(r.n_dims == 2);
  CHECK(std::string(r.dims[1].name) == "S");
  CHECK(r.dims[1].slot == 9);
  REQUIRE(r.n_tensors == 2);
  CHECK(r.tensors[0].elem == ETL_ELEM_F16);
  CHECK(r.tensors[0].rank == 2);
  CHECK(r.tensors[0].shape[1].n == 5);
  CHECK(r.tensors[0].shape[1].code[4] == ETL_XOP_MUL);
  CHECK(r.tensors[0].is_buffer == 0);
  CHECK(r.tensors[0].zeros == 0);
  CHECK(r.tensors[0].written == 1); // a parameter not marked read_only
  CHECK(r.tensors[1].is_buffer == 1);
  CHECK(r.tensors[1].zeros == 1); // ETL_TENSOR_BUFFER_ZEROS on the wire
  REQUIRE(r.n_scalars == 1);
  CHECK(std::string(r.scalars[0].name) == "eps");
  CHECK(r.scalars[0].elem == ETL_ELEM_BF16);
  CHECK(r.scalars[0].slot == 14);
  REQUIRE(r.n_constraints == 1);
  CHECK(std::string(r.constraints[0].text) == "S % 64 == 0");
  CHECK(std::string(r.constraints[0].where) == "model.etl:2:9");
  REQUIRE(r.n_events == 2);
  CHECK(r.events[1].rank == 0);
  REQUIRE(r.n_groups == 2);
  CHECK(std::string(r.groups[0].name) == "tile");
  CHECK(r.groups[0].rank == 2);
  CHECK(r.groups[0].n_notifies == 1);
  CHECK(r.groups[0].notifies[0].idx[0].star == 0);
  CHECK(r.groups[0].notifies[0].idx[0].idx.code[0] == ETL_XOP_VAR);
  CHECK(r.groups[1].n_waits == 1);
  CHECK(r.groups[1].waits[0].idx[0].star == 1);
  CHECK(r.groups[1].notifies[0].event == 1);
  REQUIRE(r.n_order == 2);
  REQUIRE(a.n_code == 2);
  CHECK(std::string(a.code[0].target) == "sim");
  CHECK(std::string(reinterpret_cast<const char *>(a.code[0].data), a.code[0].size) == "ELF...");
  CHECK(a.code[1].size == 6); // NUL appended to PTX
  CHECK(a.code[1].data[5] == 0);

  // the plan for B=3, S=128: tile has 3*2 tasks notifying E[b] -> counts 2
  int64_t dims[2] = {3, 128};
  etl_plan *p = nullptr;
  REQUIRE(etl_plan_build(&r, dims, 4, &p) == ETL_SUCCESS);
  CHECK(p->n_counters == 4);
  CHECK(p->wait_counts[0] == 2);
  CHECK(p->wait_counts[2] == 2);
  CHECK(p->wait_counts[3] == 1); // Done, notified by reduce
  CHECK(p->n_entries == 7);
  etl_plan_free_host(p);
  etl_artifact_free(&a);
}

TEST_CASE("write_file_atomically") {
  std::string dir = std::string(ETL_TEST_BINARY_DIR) + "/artifact_test";
  mkdir(dir.c_str(), 0755);
  std::string path = dir + "/a.etlb", err;
  REQUIRE(etl::write_file_atomically(path, "first", err));
  CHECK(slurp(path) == "first");
  std::string bytes = etl::serialize_artifact(sample(), {});
  REQUIRE(etl::write_file_atomically(path, bytes, err));
  CHECK(slurp(path) == bytes);
  CHECK_FALSE(etl::write_file_atomically(dir + "/no/such/dir/a.etlb", "x", err));
  CHECK(err.find("temporary") != std::string::npos);
}
