// Dynamic scheduling in the runtime: the plan's initial state array and
// runs of a compiled megakernel mixing static and dynamic groups
// (programs/dynamic_mixed.etl, compiled at build time by etlc, see
// tests/CMakeLists.txt) on sim with several workers, against a reference.
// This file is part of the TSan build, so the device protocol (queue,
// dependency counters, firing) runs under ThreadSanitizer there. (Named to
// run after runtime_test.cpp: its memory-violation test depends on the heap
// layout of earlier allocations under TSan.)
#include "device.h"
#include "artifacts.h"
#include "internal.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr int64_t TM = 16;

/// Binds programs/data_range.etl's dims and tensors and runs it once.
void bind_and_run_data_range(etlProgram prog, int64_t E, int64_t T, int64_t TM,
                             std::vector<int32_t> &count, std::vector<float> &x,
                             std::vector<float> &y, std::vector<float> &total,
                             std::vector<float> &total2) {
  int64_t se[1] = {E}, set[2] = {E, T}, stm[2] = {E, TM};
  CHECK(etlBindDim(prog, "E", E) == ETL_SUCCESS);
  CHECK(etlBindDim(prog, "T", T) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "count", count.data(), ETL_I32, 1, se) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "x", x.data(), ETL_F32, 2, set) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "y", y.data(), ETL_F32, 2, set) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "total", total.data(), ETL_F32, 2, stm) == ETL_SUCCESS);
  CHECK(etlBindTensor(prog, "total2", total2.data(), ETL_F32, 2, stm) == ETL_SUCCESS);
  REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
}

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// o as programs/dynamic_mixed.etl computes it.
std::vector<float> reference(const std::vector<float> &x, int64_t NB) {
  int64_t nb = 2 * NB;
  std::vector<float> y(x.size()), z(x.size()), w(x.size()), o(x.size());
  auto blk = [&](std::vector<float> &v, int64_t b, int64_t e) -> float & { return v[b * TM + e]; };
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t e = 0; e < TM; ++e)
      blk(y, b, e) = x[b * TM + e] * 2.0f + 1.0f;
  for (int64_t j = 0; j < NB; ++j)
    for (int64_t k = 0; k < 2; ++k)
      for (int64_t e = 0; e < TM; ++e)
        blk(z, 2 * j + k, e) = blk(y, 2 * j, e) + blk(y, 2 * j + 1, e);
  for (int64_t i = 0; i < NB; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t e = 0; e < TM; ++e)
        blk(w, 2 * i + j, e) = blk(z, 2 * i, e) + blk(z, 2 * i + 1, e) + blk(y, i + j, e);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t e = 0; e < TM; ++e)
      blk(o, b, e) = blk(w, b, e) * 0.5f;
  return o;
}

} // namespace

TEST_CASE("dynamic: the plan's initial queue, dependency counters and capacity") {
  std::string path = etl::testartifacts::built("dynamic_mixed");
  if (path.empty())
    return;
  std::string a = slurp(path);
  etl_artifact art;
  REQUIRE(etl_artifact_parse(a.data(), a.size(), &art) == ETL_SUCCESS);
  // groups in source order: a (dyn), b (static), c (dyn), d (dyn), fin (static)
  const etl_meta *m = &art.meta;
  REQUIRE(m->n_groups == 5);
  CHECK(m->groups[0].schedule == ETL_SCHEDULE_DYNAMIC);
  CHECK(m->groups[1].schedule == ETL_SCHEDULE_STATIC);
  CHECK(m->groups[4].schedule == ETL_SCHEDULE_STATIC);
  int64_t nb = 2;
  etl_plan *p = nullptr;
  REQUIRE(etl_plan_build(m, &nb, 3, &p) == ETL_SUCCESS);
  CHECK(p->n_static == 8);   // b: 4, fin: 4
  CHECK(p->n_dynamic == 12); // a: 4, c: 4, d: 4
  CHECK(p->n_entries == 20);
  CHECK(p->queue_offs[3] == 8);
  REQUIRE(p->dyn != nullptr);
  const uint32_t *d = p->dyn;
  CHECK(d[ETL_DYN_CAPACITY] == 12);
  CHECK(d[ETL_DYN_REMAINING] == 12);
  CHECK(d[ETL_DYN_NSTATIC] == 8);
  CHECK(d[ETL_DYN_HEAD] == 0);
  CHECK(d[ETL_DYN_TAIL] == 4); // a's tasks wait on nothing
  CHECK(d[ETL_DYN_GROUP_OFF + 0] == 0);
  CHECK(d[ETL_DYN_GROUP_OFF + 2] == 4);
  CHECK(d[ETL_DYN_GROUP_OFF + 3] == 8);
  for (int g = 0; g < 5; ++g)
    CHECK(d[ETL_DYN_GROUP_OFF + 5 + g] == 0); // no expanders: no range reads data
  const uint32_t *slots = d + ETL_DYN_GROUP_OFF + 2 * 5, *deps = slots + 12;
  for (uint32_t s = 0; s < 4; ++s)
    CHECK(slots[s] == s + 1); // item ids 0..3, stored + 1
  CHECK(slots[4] == 0);
  for (int t = 0; t < 4; ++t) {
    CHECK(deps[t] == 0);     // a
    CHECK(deps[4 + t] == 2); // c: F[2j], F[2j + 1]
    CHECK(deps[8 + t] == 3); // d: F[i + j] and G[i, 0], G[i, 1]
  }
  etl_plan_free_host(p);
  etl_artifact_free(&art);
}

TEST_CASE("dynamic: static and dynamic groups in one megakernel run like the reference") {
  std::string path = etl::testartifacts::built("dynamic_mixed");
  if (path.empty())
    return;
  // Few runs: under TSan each takes about two seconds.
  for (uint32_t workers : {1u, 3u, 6u}) {
    etlContextParams params = etlContextDefaultParams();
    params.sim_workers = workers;
    params.watchdog_ms = 10000;
    etlContext ctx = nullptr;
    REQUIRE(etlContextCreate(&ctx, "sim", &params) == ETL_SUCCESS);
    etlProgram prog = nullptr;
    REQUIRE_MESSAGE(etlProgramLoadFile(ctx, path.c_str(), &prog) == ETL_SUCCESS,
                    etlGetLastErrorMessage());
    std::string trace = std::string(ETL_TEST_BINARY_DIR) + "/dynamic_mixed_trace.json";
    REQUIRE(etlProgramSetTimeline(prog, trace.c_str()) == ETL_SUCCESS);
    for (int64_t NB : {1, 5}) {
      INFO("workers " << workers << ", NB " << NB);
      size_t n = size_t(2 * NB * TM);
      std::vector<float> x(n), y(n, NAN), z(n, NAN), w(n, NAN), o(n, NAN);
      for (size_t k = 0; k < n; ++k)
        x[k] = float(k % 13) - 4.0f;
      int64_t shape[1] = {int64_t(n)};
      CHECK(etlBindDim(prog, "NB", NB) == ETL_SUCCESS);
      CHECK(etlBindTensor(prog, "x", x.data(), ETL_F32, 1, shape) == ETL_SUCCESS);
      CHECK(etlBindTensor(prog, "y", y.data(), ETL_F32, 1, shape) == ETL_SUCCESS);
      CHECK(etlBindTensor(prog, "z", z.data(), ETL_F32, 1, shape) == ETL_SUCCESS);
      CHECK(etlBindTensor(prog, "w", w.data(), ETL_F32, 1, shape) == ETL_SUCCESS);
      CHECK(etlBindTensor(prog, "o", o.data(), ETL_F32, 1, shape) == ETL_SUCCESS);
      // The kernel counts every finished task in its CTA's progress word of
      // the control block (what the CUDA watchdog watches), from 0 in each
      // launch (the runtime zeroes the words; the kernel never reads them).
      auto progress = [&] {
        uint64_t sum = 0;
        const etl_context *c_ = etl_ctx_of(ctx);
        const uint32_t *w = reinterpret_cast<const uint32_t *>(
            reinterpret_cast<const char *>(c_->abort_host) + ETL_CONTROL_PROGRESS);
        for (uint32_t c = 0; c < c_->num_ctas; ++c)
          sum += __atomic_load_n(&w[c], __ATOMIC_ACQUIRE);
        return sum;
      };
      for (int rep = 0; rep < 2; ++rep) {
        std::fill(o.begin(), o.end(), NAN);
        REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
        CHECK(progress() == uint64_t(5 * 2 * NB)); // a, b, c, d, fin: 2*NB each
        std::vector<float> ref = reference(x, NB);
        size_t wrong = 0;
        for (size_t k = 0; k < n; ++k)
          wrong += !(std::fabs(o[k] - ref[k]) <= 1e-5f * std::fabs(ref[k]) + 1e-6f);
        CHECK(wrong == 0);
      }
      // One timeline record per task, dynamic ones included, each run once.
      size_t count = 0;
      REQUIRE(etlProgramGetTimeline(prog, nullptr, 0, &count) == ETL_SUCCESS);
      CHECK(count == size_t(4 * 2 * NB + 1 * 2 * NB)); // a, b, c, d, fin: 2*NB each
      std::vector<etlTimelineRecord> rec(count);
      REQUIRE(etlProgramGetTimeline(prog, rec.data(), count, &count) == ETL_SUCCESS);
      std::vector<std::vector<int>> seen(5, std::vector<int>(size_t(2 * NB), 0));
      for (const etlTimelineRecord &r : rec) {
        CHECK(r.start_ns != 0);
        CHECK(r.end_ns >= r.start_ns);
        REQUIRE(r.group < 5);
        REQUIRE(r.linear < uint32_t(2 * NB));
        seen[r.group][r.linear]++;
      }
      for (auto &g : seen)
        for (int s : g)
          CHECK(s == 1);
    }
    etlProgramDestroy(prog);
    etlContextDestroy(ctx);
  }
}

TEST_CASE("dynamic: a range that reads data expands at run time (programs/data_range.etl)") {
  std::string path = etl::testartifacts::built("data_range");
  if (path.empty())
    return;
  const int64_t TM = 4, T = 16;
  for (uint32_t workers : {2u, 5u}) {
    etlContextParams params = etlContextDefaultParams();
    params.sim_workers = workers;
    params.watchdog_ms = 10000;
    etlContext ctx = nullptr;
    REQUIRE(etlContextCreate(&ctx, "sim", &params) == ETL_SUCCESS);
    etlProgram prog = nullptr;
    REQUIRE(etlProgramLoadFile(ctx, path.c_str(), &prog) == ETL_SUCCESS);
    for (int64_t E : {2, 5}) {
      INFO("workers " << workers << ", E " << E);
      std::vector<int32_t> count(static_cast<size_t>(E), 0);
      for (int64_t e = 0; e < E; ++e)
        count[size_t(e)] = int32_t(e * 3 % 7) - 1; // -1 .. 5: empty and clamped ranges
      std::vector<float> x(size_t(E * T)), y(size_t(E * T), 0.f), total(size_t(E * TM), -1.f),
          total2(size_t(E * TM), -1.f);
      for (size_t k = 0; k < x.size(); ++k)
        x[k] = float(k % 5) + 0.25f;
      bind_and_run_data_range(prog, E, T, TM, count, x, y, total, total2);
      for (int64_t e = 0; e < E; ++e) {
        int64_t blocks = std::min<int64_t>(std::max<int64_t>(count[size_t(e)], 0), T / TM);
        float sum[4] = {0, 0, 0, 0};
        for (int64_t t = 0; t < T; ++t) {
          float want = t < blocks * TM ? x[size_t(e * T + t)] * 2.f : 0.f;
          CHECK(y[size_t(e * T + t)] == want);
          sum[t % TM] += want;
        }
        for (int64_t l = 0; l < TM; ++l) {
          CHECK(total[size_t(e * TM + l)] == sum[l]);
          CHECK(total2[size_t(e * TM + l)] == sum[l]);
        }
      }
    }
    etlProgramDestroy(prog);
    etlContextDestroy(ctx);
  }
}

/// The sum of every `"key": N` in a profile's JSON.
static long long profile_sum(const std::string &json, const std::string &key) {
  const std::string k = "\"" + key + "\": ";
  long long n = 0;
  for (size_t at = 0; (at = json.find(k, at)) != std::string::npos; at += k.size())
    n += std::stoll(json.substr(at + k.size()));
  return n;
}

// The queue is a ticket queue (lower_dynamic.cpp): every pop is one add on
// head, so a CTA takes at most one ticket it is never served (past the last
// push), and an expander claims the slots of all its tasks with one add on
// tail. The profile counts both: the E expanders made ready by prep's one
// notify of counted[0] in one claim (a batch of E <= 8), E fin2 items pushed
// one by one (each by the firing of done[e]), the expert tasks of each
// non-empty range in one claim.
TEST_CASE("dynamic: the profile counts ticket pops and batched pushes (programs/data_range.etl)") {
  std::string path = etl::testartifacts::built("data_range");
  if (path.empty())
    return;
  const int64_t TM = 4, T = 16, E = 5;
  const uint32_t workers = 3;
  etlContextParams params = etlContextDefaultParams();
  params.sim_workers = workers;
  params.watchdog_ms = 10000;
  etlContext ctx = nullptr;
  REQUIRE(etlContextCreate(&ctx, "sim", &params) == ETL_SUCCESS);
  etlProgram prog = nullptr;
  REQUIRE(etlProgramLoadFile(ctx, path.c_str(), &prog) == ETL_SUCCESS);
  std::string profile = std::string(ETL_TEST_BINARY_DIR) + "/sim_dynamic_queue.profile.json";
  REQUIRE(etlProgramSetProfile(prog, profile.c_str()) == ETL_SUCCESS);
  std::vector<int32_t> count = {3, 0, 4, 1, 9}; // blocks: 3, 0, 4, 1, 4 (clamped to T / TM)
  std::vector<float> x(size_t(E * T), 1.f), y(size_t(E * T), 0.f), total(size_t(E * TM)),
      total2(size_t(E * TM));
  bind_and_run_data_range(prog, E, T, TM, count, x, y, total, total2);
  std::string json = slurp(profile);
  const long long blocks = 3 + 0 + 4 + 1 + 4, nonempty = 4;
  const long long pushes = profile_sum(json, "queue_pushes");
  CHECK(pushes == 2 * E + blocks);
  CHECK(profile_sum(json, "queue_push_claims") == 1 + E + nonempty);
  const long long pops = profile_sum(json, "queue_pops");
  CHECK(pops >= pushes);
  CHECK(pops <= pushes + workers);
  CHECK(total2[0] == 6.f); // e = 0: 3 blocks, each adds 2 * x = 2 to every lane
  CHECK(total2[size_t(TM)] == 0.f); // e = 1: an empty range
  etlProgramDestroy(prog);
  etlContextDestroy(ctx);
}

/// The per-CTA counters of a profile: column name -> the CTAs' counts.
static std::map<std::string, std::vector<long long>> profile_per_cta(const std::string &json) {
  std::map<std::string, std::vector<long long>> out;
  size_t at = json.find("\"per_cta\"");
  REQUIRE(at != std::string::npos);
  size_t c0 = json.find('[', at), c1 = json.find(']', c0);
  std::vector<std::string> cols;
  for (size_t q = json.find('"', c0); q < c1; q = json.find('"', json.find('"', q + 1) + 1)) {
    size_t e = json.find('"', q + 1);
    cols.push_back(json.substr(q + 1, e - q - 1));
  }
  size_t v = json.find('[', json.find("\"values\"", c1)) + 1;
  for (size_t r = json.find('[', v); r != std::string::npos && r < json.find("]}", v);
       r = json.find('[', r + 1)) {
    size_t end = json.find(']', r);
    std::string row = json.substr(r + 1, end - r - 1);
    size_t k = 0;
    for (size_t p = 0; k < cols.size(); ++k) {
      out[cols[k]].push_back(std::stoll(row.substr(p)));
      p = row.find(',', p);
      if (p == std::string::npos)
        break;
      ++p;
    }
    CHECK(k + 1 == cols.size());
  }
  return out;
}

// programs/queue_counts.etl on one CTA, where the order is known: the static
// queue deals a[0 .. NB) then fin; each a notifies E[i] (an add that fires
// it: b[i]'s dependency counter, a claim of tail, the slot's store: 4 round
// trips, 1 push); fin's wait finds D[0] not ready NB times (one wait that
// spun) and each time looks at the queue (head, tail), takes a ticket, reads
// its slot and runs b[i] (its notify, then `remaining` decremented): 6 round
// trips a round; the look that finds D[0] done and the dynamic loop's read
// of `remaining` (0: the CTA leaves) are the last 2. Nothing spins.
TEST_CASE("dynamic: the profile counts the task switch per CTA (programs/queue_counts.etl)") {
  std::string path = etl::testartifacts::built("queue_counts");
  if (path.empty())
    return;
  for (int64_t NB : {1, 3, 6}) {
    CAPTURE(NB);
    etlContextParams params = etlContextDefaultParams();
    params.sim_workers = 1;
    params.watchdog_ms = 10000;
    etlContext ctx = nullptr;
    REQUIRE(etlContextCreate(&ctx, "sim", &params) == ETL_SUCCESS);
    etlProgram prog = nullptr;
    REQUIRE(etlProgramLoadFile(ctx, path.c_str(), &prog) == ETL_SUCCESS);
    std::string profile = std::string(ETL_TEST_BINARY_DIR) + "/sim_queue_counts.profile.json";
    REQUIRE(etlProgramSetProfile(prog, profile.c_str()) == ETL_SUCCESS);
    std::vector<float> x(static_cast<size_t>(NB * TM)), y(x.size()), z(x.size()),
        o(static_cast<size_t>(TM));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(i % 7);
    int64_t sx[1] = {NB * TM}, so[1] = {TM};
    CHECK(etlBindDim(prog, "NB", NB) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "x", x.data(), ETL_F32, 1, sx) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "y", y.data(), ETL_F32, 1, sx) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "z", z.data(), ETL_F32, 1, sx) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "o", o.data(), ETL_F32, 1, so) == ETL_SUCCESS);
    REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
    for (int64_t e = 0; e < TM; ++e)
      CHECK(o[size_t(e)] == (x[size_t(e)] * 2.f + 1.f) * 0.5f);
    std::string json = slurp(profile);
    std::map<std::string, std::vector<long long>> per = profile_per_cta(json);
    auto one = [&](const char *k) {
      REQUIRE(per[k].size() == 1);
      return per[k][0];
    };
    CHECK(one("tasks") == 2 * NB + 1); // fin resumed after each item counts once
    CHECK(one("queue_pops") == NB);
    CHECK(one("queue_empty_looks") == 0);
    CHECK(one("queue_retries") == 0);
    CHECK(one("queue_pushes") == NB);
    CHECK(one("queue_push_claims") == NB);
    CHECK(one("event_notifies") == 2 * NB);
    CHECK(one("event_not_ready") == NB);
    CHECK(one("waits_spun") == 1);
    CHECK(one("spin_iterations") == 0);
    CHECK(one("round_trips") == 10 * NB + 2);
    // The groups' counters add up to the CTA's.
    CHECK(profile_sum(json, "round_trips") == 10 * NB + 2);
    CHECK(profile_sum(json, "queue_pops") == NB);
    etlProgramDestroy(prog);
    etlContextDestroy(ctx);
  }
}

// programs/queue_batch.etl on one CTA: `a` notifies E[0 .. NB), each notify
// firing b[i] (the notify and b[i]'s dependency counter: 2 round trips an
// item); the NB ready items wait in thread 0's batch and are pushed with one
// claim of tail per 8 (ceil(NB / 8) claims, one slot store an item: 3 NB +
// ceil(NB / 8)). Then the dynamic loop: the first round reads `remaining`
// and takes a ticket; every item takes the CTA's next ticket before its
// epilogue (emit_early_ticket), so each round reads only its slot: a ticket,
// the slot and `remaining` decremented after the item, 3 an item; the last
// item's ticket has no slot, and the read of `remaining` that finds 0 ends
// the loop (2 + 1 more): 6 NB + ceil(NB / 8) + 3 in all. Before batching
// and the early ticket (a claim an item, and each round reading
// `remaining` before its ticket): 8 NB + 1, so 25 -> 22 at NB 3, 161 -> 126
// at NB 20; at NB 1, 9 -> 10 (the last ticket, taken for nothing).
TEST_CASE("dynamic: batched pushes and the early ticket (programs/queue_batch.etl)") {
  std::string path = etl::testartifacts::built("queue_batch");
  if (path.empty())
    return;
  for (int64_t NB : {1, 3, 8, 9, 20}) {
    CAPTURE(NB);
    etlContextParams params = etlContextDefaultParams();
    params.sim_workers = 1;
    params.watchdog_ms = 10000;
    etlContext ctx = nullptr;
    REQUIRE(etlContextCreate(&ctx, "sim", &params) == ETL_SUCCESS);
    etlProgram prog = nullptr;
    REQUIRE(etlProgramLoadFile(ctx, path.c_str(), &prog) == ETL_SUCCESS);
    std::string profile = std::string(ETL_TEST_BINARY_DIR) + "/sim_queue_batch.profile.json";
    REQUIRE(etlProgramSetProfile(prog, profile.c_str()) == ETL_SUCCESS);
    std::vector<float> x(static_cast<size_t>(NB * TM)), y(static_cast<size_t>(TM)), z(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(i % 5);
    int64_t sx[1] = {NB * TM}, sy[1] = {TM};
    CHECK(etlBindDim(prog, "NB", NB) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "x", x.data(), ETL_F32, 1, sx) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "y", y.data(), ETL_F32, 1, sy) == ETL_SUCCESS);
    CHECK(etlBindTensor(prog, "z", z.data(), ETL_F32, 1, sx) == ETL_SUCCESS);
    REQUIRE_MESSAGE(etlRun(prog) == ETL_SUCCESS, etlGetLastErrorMessage());
    for (size_t e = 0; e < z.size(); ++e)
      CHECK(z[e] == x[e] + x[e % size_t(TM)] * 2.f);
    std::map<std::string, std::vector<long long>> per = profile_per_cta(slurp(profile));
    auto one = [&](const char *k) {
      REQUIRE(per[k].size() == 1);
      return per[k][0];
    };
    const long long claims = (NB + 7) / 8;
    CHECK(one("tasks") == NB + 1);
    CHECK(one("queue_pushes") == NB);
    CHECK(one("queue_push_claims") == claims);
    CHECK(one("queue_pops") == NB + 1); // the last item's early ticket finds none
    CHECK(one("event_notifies") == NB);
    CHECK(one("spin_iterations") == 0);
    CHECK(one("round_trips") == 6 * NB + claims + 3);
    etlProgramDestroy(prog);
    etlContextDestroy(ctx);
  }
}
