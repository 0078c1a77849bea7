//===- tests/unit/driver/facts_test.cpp - Tables other languages read -----===//
//
// What this pins: facts with one home in a table that a script, another
// language or a standalone header repeats.
//   - scripts/def_facts.py (what scripts/bench.sh takes its H100 numbers
//     from) parses compiler/target/targets.def and compiler/cost/gpus.def
//     itself; every row and field it prints must equal what etlc reads from
//     the same files (all_targets, known_gpus), so a new column or a row the
//     script misreads fails here.
//   - The element types of runtime/abi/etl_elems.def: the artifact's codes
//     (etl_abi.h), the public etlDType (etl.h, installed alone, so it
//     repeats them), the compiler's ElemType with its spellings and widths,
//     the runtime's names (etlDTypeName), and python/etl/_tensors.py's own
//     list (its constants and NAMES) must all say the same, with no type
//     missing or extra in Python.
// Runs Debian's /usr/bin/python3 (skipped, saying so, where it is missing).
//
//===----------------------------------------------------------------------===//
#include "ast/ast.h"
#include "cost/cost.h"
#include "target/target.h"

#include "etl_abi.h"
#include <etl/etl.h>

#include <doctest/doctest.h>
#include <llvm/Support/JSON.h>

#include <cstdio>
#include <map>
#include <string>
#include <unistd.h>

using namespace etl;

namespace {

constexpr const char *kPython = "/usr/bin/python3";

/// The output of `cmd` (its exit status in `status`).
std::string run(const std::string &cmd, int &status) {
  std::string out;
  FILE *f = popen(cmd.c_str(), "r");
  REQUIRE(f);
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, f))
    out.append(buf, n);
  status = pclose(f);
  return out;
}

} // namespace

TEST_CASE("scripts/def_facts.py reads targets.def and gpus.def as etlc does") {
  if (access(kPython, X_OK) != 0) {
    MESSAGE("skipped: no " << kPython);
    return;
  }
  int status = 0;
  std::string out =
      run(std::string(kPython) + " " + ETL_SOURCE_DIR + "/scripts/def_facts.py json", status);
  REQUIRE(status == 0);
  llvm::Expected<llvm::json::Value> doc = llvm::json::parse(out);
  REQUIRE_MESSAGE(bool(doc), out);
  const llvm::json::Object *root = doc->getAsObject();
  REQUIRE(root);

  const llvm::json::Array *ts = root->getArray("targets");
  REQUIRE(ts);
  REQUIRE(ts->size() == all_targets().size());
  for (size_t i = 0; i < ts->size(); ++i) {
    const TargetDesc &t = all_targets()[i];
    const llvm::json::Object *r = (*ts)[i].getAsObject();
    REQUIRE(r);
    CAPTURE(t.name);
    CHECK(r->getString("name").value_or("") == t.name);
    CHECK(r->getString("kind").value_or("") == (t.kind == TargetKind::Sim ? "Sim" : "Nvptx"));
    CHECK(r->getInteger("sm").value_or(-1) == t.sm);
    CHECK(r->getInteger("smem_limit").value_or(-1) == t.smem_limit);
    CHECK(r->getInteger("regs_per_sm").value_or(-1) == t.regs_per_sm);
    CHECK(r->getInteger("regs_per_thread").value_or(-1) == t.regs_per_thread);
    CHECK(r->getInteger("wide_tile").value_or(-1) == t.wide_tile);
    CHECK(r->getString("what").value_or("") == t.what);
  }

  const llvm::json::Array *gs = root->getArray("gpus");
  REQUIRE(gs);
  REQUIRE(gs->size() == known_gpus().size());
  for (size_t i = 0; i < gs->size(); ++i) {
    const GpuSpec &g = known_gpus()[i];
    const llvm::json::Object *r = (*gs)[i].getAsObject();
    REQUIRE(r);
    CAPTURE(g.id);
    CHECK(r->getString("id").value_or("") == g.id);
    CHECK(r->getNumber("hbm_gb_per_s").value_or(-1) == g.hbm_gbps);
    CHECK(r->getNumber("fp32_tflops").value_or(-1) == g.fp32_tflops);
    CHECK(r->getNumber("tc16_tflops").value_or(-1) == g.tc16_tflops);
    CHECK(r->getNumber("tf32_tflops").value_or(-1) == g.tf32_tflops);
    CHECK(r->getInteger("sms").value_or(-1) == g.sms);
    CHECK(r->getInteger("boost_mhz").value_or(-1) == g.boost_mhz);
    CHECK(r->getString("source").value_or("") == g.source);
  }

  // One field, as scripts/bench.sh asks for it.
  std::string smem = run(std::string(kPython) + " " + ETL_SOURCE_DIR +
                             "/scripts/def_facts.py target sm_90 smem_limit",
                         status);
  CHECK(status == 0);
  CHECK(smem == std::to_string(find_target("sm_90")->smem_limit) + "\n");
}

// The C and C++ sides, at compile time: every row's code in etl_abi.h, in
// etl.h and in ElemType.
#define ETL_ELEM_TYPE(K, CODE, SPELLING, BITS)                                                     \
  static_assert(ETL_ELEM_##K == (CODE) && int(ETL_##K) == (CODE) && int(ElemType::K) == (CODE));
#define ETL_ELEM_COMPILER_ONLY(K, CODE, SPELLING, BITS) static_assert(int(ElemType::K) == (CODE));
#include "etl_elems.def"

TEST_CASE("element types: etl_elems.def, the compiler, the runtime's names and Python agree") {
  struct Row {
    int code;
    const char *spelling;
    unsigned bits;
  };
  std::map<std::string, Row> rows; // ETL_ELEM_TYPE rows: the tensor and scalar types
#define ETL_ELEM_TYPE(K, CODE, SPELLING, BITS)                                                     \
  rows[#K] = {CODE, SPELLING, BITS};                                                               \
  CHECK(spelling(ElemType::K) == std::string(SPELLING));                                           \
  CHECK(elem_bits(ElemType::K) == (BITS));                                                         \
  CHECK(etlDTypeName(ETL_##K) == std::string(SPELLING));
#define ETL_ELEM_COMPILER_ONLY(K, CODE, SPELLING, BITS)                                            \
  CHECK(spelling(ElemType::K) == std::string(SPELLING));                                           \
  CHECK(etlDTypeName(etlDType(CODE)) == std::string("?")); /* never a runtime type */
#include "etl_elems.def"
  REQUIRE(rows.size() == 14);
  CHECK(etlDTypeName(etlDType(ETL_ELEM_LAST + 1)) == std::string("?"));

  if (access(kPython, X_OK) != 0) {
    MESSAGE("skipped the Python side: no " << kPython);
    return;
  }
  // python/etl/_tensors.py without the package's __init__ (which loads the
  // runtime's shared library): its upper-case integer constants and NAMES.
  const std::string script =
      "import json, sys, types\n"
      "pkg = types.ModuleType('etl'); pkg.__path__ = [sys.argv[1] + '/python/etl']\n"
      "sys.modules['etl'] = pkg\n"
      "from etl import _tensors as t\n"
      "consts = {k: getattr(t, k) for k in dir(t) if k[0].isupper() and k.isupper()\n"
      "          and type(getattr(t, k)) is int}\n"
      "print(json.dumps({'consts': consts, 'names': {str(c): n for c, n in t.NAMES.items()}}))\n";
  const std::string path = std::string(ETL_TEST_BINARY_DIR) + "/elem_codes.py";
  FILE *f = fopen(path.c_str(), "w");
  REQUIRE(f);
  fputs(script.c_str(), f);
  fclose(f);
  int status = 0;
  std::string out = run(std::string(kPython) + " " + path + " " + ETL_SOURCE_DIR, status);
  REQUIRE(status == 0);
  llvm::Expected<llvm::json::Value> doc = llvm::json::parse(out);
  REQUIRE_MESSAGE(bool(doc), out);
  const llvm::json::Object *consts = doc->getAsObject()->getObject("consts");
  const llvm::json::Object *names = doc->getAsObject()->getObject("names");
  REQUIRE(consts);
  REQUIRE(names);
  CHECK(names->size() == rows.size());
  for (const auto &kv : rows) { // (clang 14: no structured binding in CAPTURE's lambda)
    const std::string &k = kv.first;
    const auto &row = kv.second;
    CAPTURE(k);
    CHECK(consts->getInteger(k).value_or(-1) == row.code);
    CHECK(names->getString(std::to_string(row.code)).value_or("") == row.spelling);
  }
  // No Python constant beyond the table's types (and its DLPack device
  // codes, which are private: _DL_*).
  for (const auto &kv : *consts)
    CHECK_MESSAGE(rows.count(kv.first.str()), "python/etl/_tensors.py has " << kv.first.str());
}
