//===- tests/unit/lower/timeline_lower_test.cpp - Per-task timeline -------===//
//
// What this covers: the timeline end to end on sim. examples/rowsum is
// compiled with the driver, run with etlProgramSetTimeline on, and the Chrome
// trace JSON it writes is parsed: one event per task, non-negative
// durations, every final[i] starting after every partial[i, *] ended, tids
// within the workers. Also the records from etlProgramGetTimeline, the
// argument checks, and that the rowsum PTX reads %globaltimer and assembles.
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"
#include "etl_abi.h"

#include <etl/etl.h>

#include "../skip.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

static_assert(sizeof(etl_timeline_record) == ETL_TIMELINE_RECORD_BYTES, "record layout");
static_assert(offsetof(etl_timeline_record, end_ns) == ETL_TIMELINE_OFF_END, "record layout");
static_assert(offsetof(etl_timeline_record, sm) == ETL_TIMELINE_OFF_SM, "record layout");
static_assert(offsetof(etl_timeline_record, cta) == ETL_TIMELINE_OFF_CTA, "record layout");

const std::string kRowsum = std::string(ETL_SOURCE_DIR) + "/examples/rowsum/rowsum.etl";

fs::path temp_dir() {
  fs::path d = fs::path(ETL_TEST_BINARY_DIR) / "timeline_test";
  fs::create_directories(d);
  return d;
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// One trace event, as far as the test needs it.
struct Event {
  std::string name, group;
  double ts = -1, dur = -1;
  long tid = -1, linear = -1;
};

/// The text after `"key":` inside `obj`, or npos.
size_t value_at(const std::string &obj, const std::string &key) {
  size_t k = obj.find("\"" + key + "\":");
  return k == std::string::npos ? k : k + key.size() + 3;
}
std::string str_field(const std::string &obj, const std::string &key) {
  size_t v = value_at(obj, key);
  if (v == std::string::npos || obj[v] != '"')
    return "";
  return obj.substr(v + 1, obj.find('"', v + 1) - v - 1);
}
double num_field(const std::string &obj, const std::string &key) {
  size_t v = value_at(obj, key);
  return v == std::string::npos ? -1e300 : std::strtod(obj.c_str() + v, nullptr);
}

/// Splits {"traceEvents":[{...},{...}]} into its events (one level of
/// nested "args" object per event).
std::vector<Event> parse_trace(const std::string &json) {
  std::vector<Event> out;
  size_t at = json.find("\"traceEvents\":[");
  REQUIRE(at != std::string::npos);
  at = json.find('[', at) + 1;
  for (;;) {
    size_t open = json.find('{', at);
    size_t close_list = json.find(']', at);
    if (open == std::string::npos || (close_list != std::string::npos && close_list < open))
      break;
    int depth = 0;
    size_t i = open;
    for (; i < json.size(); ++i) {
      if (json[i] == '{')
        ++depth;
      else if (json[i] == '}' && --depth == 0)
        break;
    }
    REQUIRE(i < json.size());
    std::string obj = json.substr(open, i - open + 1);
    Event e;
    e.name = str_field(obj, "name");
    e.group = str_field(obj, "group");
    CHECK(str_field(obj, "ph") == "X");
    CHECK(num_field(obj, "pid") == 0);
    e.ts = num_field(obj, "ts");
    e.dur = num_field(obj, "dur");
    e.tid = long(num_field(obj, "tid"));
    e.linear = long(num_field(obj, "linear"));
    out.push_back(e);
    at = i + 1;
  }
  return out;
}

std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

TEST_CASE("timeline: rowsum on sim writes one Chrome trace event per task, in event order") {
  etl::CompileOptions o;
  o.input = kRowsum;
  o.output = (temp_dir() / "rowsum.etlb").string();
  o.targets = {"sim"};
  std::ostringstream out, err;
  int code = etl::compile(o, out, err);
  INFO(err.str());
  REQUIRE(code == 0);

  const uint32_t workers = 3;
  etlContextParams params = etlContextDefaultParams();
  params.sim_workers = workers;
  etlContext ctx;
  etlProgram prog;
  REQUIRE(etlContextCreate(&ctx, "sim", &params) == ETL_SUCCESS);
  REQUIRE(etlProgramLoadFile(ctx, o.output.c_str(), &prog) == ETL_SUCCESS);

  // Argument checks.
  CHECK(etlProgramSetTimeline(nullptr, "x.json") == ETL_ERROR_INVALID_HANDLE);
  CHECK(etlProgramSetTimeline(prog, "") == ETL_ERROR_INVALID_VALUE);
  CHECK(etlProgramSetTimeline(prog, "/nonexistent-etl-dir/trace.json") == ETL_ERROR_IO);
  CHECK(std::string(etlGetLastErrorMessage()).find("nonexistent-etl-dir") != std::string::npos);
  size_t count = 7;
  CHECK(etlProgramGetTimeline(prog, nullptr, 0, nullptr) == ETL_ERROR_INVALID_VALUE);
  CHECK(etlProgramGetTimeline(prog, nullptr, 4, &count) == ETL_ERROR_INVALID_VALUE);
  REQUIRE(etlProgramGetTimeline(prog, nullptr, 0, &count) == ETL_SUCCESS);
  CHECK(count == 0);

  const int64_t M = 70, N = 300; // 5 x 3 partial tasks, 5 final tasks
  std::vector<float> x(size_t(M * N)), y(size_t(M), -1.f);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i % 5) - 2.f;
  int64_t xs[2] = {M, N}, ys[1] = {M};
  REQUIRE(etlBindDim(prog, "M", M) == ETL_SUCCESS);
  REQUIRE(etlBindDim(prog, "N", N) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(prog, "x", x.data(), ETL_F32, 2, xs) == ETL_SUCCESS);
  REQUIRE(etlBindTensor(prog, "y", y.data(), ETL_F32, 1, ys) == ETL_SUCCESS);

  // Off: nothing written, nothing recorded.
  std::string path = (temp_dir() / "rowsum.trace.json").string();
  std::remove(path.c_str());
  REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
  CHECK_FALSE(fs::exists(path));

  REQUIRE(etlProgramSetTimeline(prog, path.c_str()) == ETL_SUCCESS);
  REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
  for (int64_t m = 0; m < M; ++m) {
    float ref = 0;
    for (int64_t n = 0; n < N; ++n)
      ref += x[size_t(m * N + n)];
    CHECK(y[size_t(m)] == doctest::Approx(ref).epsilon(1e-4));
  }
  REQUIRE(fs::exists(path));
  CHECK_FALSE(fs::exists(path + ".tmp." + std::to_string(getpid())));

  const int64_t mt = cdiv(M, 16), nt = cdiv(N, 128);
  const size_t tasks = size_t(mt * nt + mt);
  std::vector<Event> ev = parse_trace(slurp(path));
  REQUIRE(ev.size() == tasks);

  // partial[i, j] / final[i]: names, groups, times, tids.
  std::map<std::string, Event> by_name;
  double partial_end[64] = {};
  for (const Event &e : ev) {
    INFO(e.name);
    CHECK(e.dur >= 0);
    CHECK(e.ts >= 0);
    CHECK(e.tid >= 0);
    CHECK(e.tid < long(workers));
    CHECK(e.name.rfind(e.group + "[", 0) == 0);
    CHECK(by_name.emplace(e.name, e).second); // each task once
    if (e.group == "partial") {
      int i = -1, j = -1;
      REQUIRE(std::sscanf(e.name.c_str(), "partial[%d, %d]", &i, &j) == 2);
      REQUIRE(i >= 0);
      REQUIRE(i < mt);
      CHECK(j < nt);
      CHECK(e.linear == i * nt + j);
      partial_end[i] = std::max(partial_end[i], e.ts + e.dur);
    }
  }
  for (int64_t i = 0; i < mt; ++i) {
    auto it = by_name.find("final[" + std::to_string(i) + "]");
    REQUIRE(it != by_name.end());
    CHECK(it->second.group == "final");
    // ts and dur are printed with 3 decimals (ns): allow their rounding.
    CHECK(it->second.ts >= partial_end[i] - 0.0015);
  }

  // The raw records agree: one per queue entry, end >= start > 0.
  REQUIRE(etlProgramGetTimeline(prog, nullptr, 0, &count) == ETL_SUCCESS);
  REQUIRE(count == tasks);
  std::vector<etlTimelineRecord> rec(count);
  size_t got = 0;
  REQUIRE(etlProgramGetTimeline(prog, rec.data(), rec.size(), &got) == ETL_SUCCESS);
  CHECK(got == count);
  for (const etlTimelineRecord &r : rec) {
    CHECK(r.start_ns > 0);
    CHECK(r.end_ns >= r.start_ns);
    CHECK(r.sm == r.cta);
    CHECK(r.cta < workers);
    CHECK(r.group < 2);
  }

  // An unwritable destination after a successful launch: ETL_ERROR_IO. The
  // directory is removed after SetTimeline accepted it.
  fs::path gone = temp_dir() / "gone";
  fs::create_directories(gone);
  REQUIRE(etlProgramSetTimeline(prog, (gone / "t.json").string().c_str()) == ETL_SUCCESS);
  fs::remove_all(gone);
  CHECK(etlRun(prog) == ETL_ERROR_IO);
  CHECK(std::string(etlGetLastErrorMessage()).find("timeline") != std::string::npos);

  // Off again: the records are dropped.
  REQUIRE(etlProgramSetTimeline(prog, nullptr) == ETL_SUCCESS);
  REQUIRE(etlProgramGetTimeline(prog, nullptr, 0, &count) == ETL_SUCCESS);
  CHECK(count == 0);
  REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());

  etlProgramDestroy(prog);
  etlContextDestroy(ctx);
  std::remove(path.c_str());
}

TEST_CASE("timeline: the rowsum PTX reads %globaltimer and %smid and still assembles") {
  for (const char *sm : {"sm_90", "sm_80"}) {
    etl::CompileOptions o;
    o.input = kRowsum;
    o.targets = {sm};
    o.emit = "ptx";
    std::ostringstream out, err;
    int code = etl::compile(o, out, err);
    INFO(err.str());
    REQUIRE(code == 0);
    std::string ptx = out.str();
    CHECK(ptx.find("%globaltimer") != std::string::npos);
    CHECK(ptx.find("%smid") != std::string::npos);
    if (std::string(ETL_PTXAS).empty()) {
      ETL_TEST_SKIP("ptxas not found at configure time: skipping PTX assembly of " << sm);
      continue;
    }
    std::string in = "/tmp/etl-timeline-" + std::to_string(getpid()) + "-" + sm + ".ptx";
    std::ofstream(in) << ptx;
    std::string cmd = std::string(ETL_PTXAS) + " -arch=" + sm + " " + in + " -o /dev/null";
    int rc = std::system(cmd.c_str());
    std::remove(in.c_str());
    CHECK_MESSAGE(rc == 0, "ptxas rejected the PTX for " << sm);
  }
}
