// Artifacts of several variants (etl_abi.h, v8; `etlc compile --variant`):
// the loader validates the variant table and every variant's own artifact,
// and refuses, with ETL_ERROR_INVALID_ARTIFACT and a message saying what,
// an empty or oversized table, a count that differs from the variant
// sections, a range on no dim or with lo > hi, two ranges on one dim,
// nested variants, variants whose parameters differ, a variant table
// beside a metadata section, trailing or missing bytes. A good one loads,
// and each run copies the bindings into the variant the dims select.
#include "runtime_harness.h"

using namespace etl_test;

namespace {

struct Range {
  std::string dim;
  int64_t lo, hi;
};
struct Variant {
  std::string label;
  std::vector<Range> ranges;
};

std::string table(const std::vector<Variant> &vs, int64_t count = -1) {
  W w;
  w.u32(count >= 0 ? uint32_t(count) : uint32_t(vs.size()));
  for (const Variant &v : vs) {
    w.str(v.label);
    w.u32(uint32_t(v.ranges.size()));
    for (const Range &r : v.ranges) {
      w.str(r.dim);
      w.u64(uint64_t(r.lo));
      w.u64(uint64_t(r.hi));
    }
  }
  return w.b;
}

/// An artifact of the given sections (kind, payload), target "" each.
std::string sections(const std::vector<std::pair<uint32_t, std::string>> &ss) {
  W w;
  w.b += "ETLB";
  w.u32(ETL_ARTIFACT_VERSION);
  w.u64(0);
  w.u32(uint32_t(ss.size()));
  w.u32(0);
  w.u64(0);
  uint64_t off = 32 + 32 * ss.size();
  for (auto &[kind, payload] : ss) {
    w.u32(kind);
    w.b += std::string(12, '\0');
    w.u64(off);
    w.u64(payload.size());
    off += payload.size();
  }
  for (auto &s : ss)
    w.b += s.second;
  for (int i = 0; i < 8; ++i)
    w.b[8 + i] = char((uint64_t(w.b.size()) >> (8 * i)) & 0xff);
  fix_checksum(w.b);
  return w.b;
}

std::string variants(const std::string &t, const std::vector<std::string> &arts) {
  std::vector<std::pair<uint32_t, std::string>> ss = {{ETL_SECTION_VARIANTS, t}};
  for (const std::string &a : arts)
    ss.emplace_back(ETL_SECTION_VARIANT, a);
  return sections(ss);
}

std::string refused(const std::string &a) {
  Ctx ctx;
  etlProgram prog = nullptr;
  etlStatus st = etlProgramLoadMemory(ctx.ctx, a.data(), a.size(), &prog);
  if (st == ETL_SUCCESS)
    return "loaded";
  CHECK(prog == nullptr);
  CHECK(st == ETL_ERROR_INVALID_ARTIFACT);
  return last_error();
}

} // namespace

TEST_CASE("variants: a good table loads and each binding runs its variant") {
  std::string a = good_artifact();
  REQUIRE(!a.empty());
  std::string both =
      variants(table({{"N<=3:", {{"N", 1, 3}}}, {"*:", {}}}), {a, a});
  Loaded l(both);
  int n = 0, last = 0, sel = 0;
  const char *label = nullptr;
  REQUIRE(etlProgramNumVariants(l.prog, &n) == ETL_SUCCESS);
  CHECK(n == 2);
  REQUIRE(etlProgramVariantLabel(l.prog, 0, &label) == ETL_SUCCESS);
  CHECK(std::string(label) == "N<=3:");
  REQUIRE(etlProgramLastVariant(l.prog, &last) == ETL_SUCCESS);
  CHECK(last == -1);
  int nt = 0; // the interface is the variants' common one
  REQUIRE(etlProgramNumTensors(l.prog, &nt) == ETL_SUCCESS);
  CHECK(nt == 3);
  for (const auto &nw : {std::pair<int64_t, int>{2, 0}, {9, 1}, {3, 0}}) {
    const int64_t n_ = nw.first; // no structured binding: clang 14 can't CAPTURE one
    const int want = nw.second;
    CAPTURE(n_);
    Buffers b(l.ctx.ctx, n_);
    b.bind(l.prog);
    REQUIRE(etlProgramSelectVariant(l.prog, &sel) == ETL_SUCCESS);
    CHECK(sel == want);
    INFO(last_error());
    REQUIRE(etlRun(l.prog) == ETL_SUCCESS);
    REQUIRE(etlProgramLastVariant(l.prog, &last) == ETL_SUCCESS);
    CHECK(last == want);
    b.check();
  }
}

TEST_CASE("variants: a binding no variant is for, and an unbound dim") {
  std::string a = good_artifact();
  REQUIRE(!a.empty());
  Loaded l(variants(table({{"N==4:", {{"N", 4, 4}}}}), {a}));
  int sel = 0;
  CHECK(etlProgramSelectVariant(l.prog, &sel) == ETL_ERROR_UNBOUND);
  CHECK(has(last_error(), "dimension 'N' is not bound; variant 'N==4:'"));
  Buffers b(l.ctx.ctx, 5);
  b.bind(l.prog);
  CHECK(etlRun(l.prog) == ETL_ERROR_BINDING);
  CHECK(has(last_error(), "no variant of the program is for N = 5 (its variants, tried in "
                          "order: 'N==4:')"));
}

TEST_CASE("variants: the loader refuses bad variant tables") {
  std::string a = good_artifact();
  REQUIRE(!a.empty());
  std::string other = artifact(test_meta(0, ETL_ELEM_F32), {{"sim", kernel("")}});
  Variant all{"*:", {}};
  CHECK(has(refused(variants(table({}), {})), "variant count not in 1 .. ETL_MAX_VARIANTS"));
  CHECK(has(refused(variants(table({all, all}), {a})),
            "variant count differs from the number of variant sections"));
  CHECK(has(refused(variants(table({all}), {a, a})),
            "variant count differs from the number of variant sections"));
  CHECK(has(refused(variants(table({{"x", {{"Q", 1, 2}}}}), {a})),
            "its range names 'Q', not a dim of the program"));
  CHECK(has(refused(variants(table({{"x", {{"N", 3, 2}}}}), {a})),
            "a range whose lo is above its hi"));
  CHECK(has(refused(variants(table({{"x", {{"N", 1, 2}, {"N", 1, 3}}}}), {a})),
            "two ranges of dim 'N'"));
  CHECK(has(refused(variants(table({all, all}), {a, other})),
            "artifact variant 1 ('*:'): its scalar parameters differ from the first variant's"));
  std::string nested = variants(table({all}), {a});
  CHECK(has(refused(variants(table({all}), {nested})), "it holds variants itself"));
  CHECK(has(refused(sections({{ETL_SECTION_VARIANTS, table({all})},
                              {ETL_SECTION_VARIANT, a},
                              {ETL_SECTION_META, test_meta()}})),
            "both variants and a metadata or code section"));
  CHECK(has(refused(sections({{ETL_SECTION_VARIANT, a}})), "no variant table"));
  CHECK(has(refused(variants(table({all}) + "x", {a})), "trailing bytes"));
  std::string t = table({{"N<=3", {{"N", 1, 3}}}});
  CHECK(has(refused(variants(t.substr(0, t.size() - 4), {a})), "variant table is malformed"));
  std::string bad = a;
  bad[40] ^= 1; // the variant's own artifact: its checksum no longer holds
  CHECK(has(refused(variants(table({all}), {bad})), "artifact variant 0 ('*:'): "));
}
