// etl_profile_check FILE: exits 0 when FILE is a sim profile (docs/PROFILE.md,
// schema etl-sim-profile-1) whose numbers are consistent; else prints what
// is wrong and exits 1. Run by ctest after each example host's --profile.
#include <llvm/Support/JSON.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace {

int errors = 0;

void fail(const std::string &what) {
  std::fprintf(stderr, "profile: %s\n", what.c_str());
  ++errors;
}

void check_global(const llvm::json::Object *g, const std::string &where) {
  if (!g)
    return fail(where + ": no \"global\" object");
  for (const char *k : {"requests", "bytes_requested", "sectors"})
    if (!g->getInteger(k) || *g->getInteger(k) < 0)
      fail(where + ": \"" + k + "\" is not a non-negative integer");
  for (const char *k : {"sectors_per_request", "efficiency", "lane_utilization"})
    if (!g->getNumber(k))
      fail(where + ": \"" + k + "\" is not a number");
  if (errors)
    return;
  int64_t req = *g->getInteger("requests"), sec = *g->getInteger("sectors");
  int64_t bytes = *g->getInteger("bytes_requested");
  if (req && (sec < req || sec > 64 * req))
    fail(where + ": sectors outside [requests, 64 * requests]");
  if (*g->getNumber("efficiency") > 1.0 || *g->getNumber("lane_utilization") > 1.0)
    fail(where + ": a ratio above 1");
  if (bytes > sec * 32)
    fail(where + ": more bytes requested than the sectors hold");
}

void check_shared(const llvm::json::Object *g, const std::string &where) {
  if (!g)
    return fail(where + ": no \"shared\" object");
  for (const char *k : {"requests", "bytes_requested", "wavefronts"})
    if (!g->getInteger(k) || *g->getInteger(k) < 0)
      return fail(where + ": \"" + k + "\" is not a non-negative integer");
  for (const char *k : {"bank_conflict_factor", "lane_utilization"})
    if (!g->getNumber(k))
      return fail(where + ": \"" + k + "\" is not a number");
  int64_t req = *g->getInteger("requests"), wf = *g->getInteger("wavefronts");
  if (req && (wf < req || wf > 64 * req))
    fail(where + ": wavefronts outside [requests, 64 * requests]");
  if (*g->getNumber("lane_utilization") > 1.0)
    fail(where + ": lane utilisation above 1");
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: etl_profile_check FILE\n");
    return 2;
  }
  std::ifstream f(argv[1]);
  std::stringstream ss;
  ss << f.rdbuf();
  auto v = llvm::json::parse(ss.str());
  if (!v) {
    fail(std::string(argv[1]) + " is not JSON: " + llvm::toString(v.takeError()));
    return 1;
  }
  const llvm::json::Object *root = v->getAsObject();
  if (!root || root->getString("schema") != "etl-sim-profile-1")
    fail("not an etl-sim-profile-1 document");
  else {
    for (const char *k : {"ctas", "threads_per_cta", "unique_dram_bytes"})
      if (!root->getInteger(k))
        fail(std::string("\"") + k + "\" missing");
    check_global(root->getObject("global"), "launch");
    check_shared(root->getObject("shared"), "launch");
    const llvm::json::Array *groups = root->getArray("groups");
    if (!groups || groups->empty())
      fail("no groups");
    for (size_t i = 0; groups && i < groups->size(); ++i) {
      const llvm::json::Object *g = (*groups)[i].getAsObject();
      std::string where = "group " + std::to_string(i);
      if (!g || !g->getString("name"))
        return fail(where + ": no name"), 1;
      where = "group '" + g->getString("name")->str() + "'";
      check_global(g->getObject("global"), where);
      check_shared(g->getObject("shared"), where);
      const llvm::json::Object *sync = g->getObject("sync");
      for (const char *k :
           {"barriers", "atomics", "fences", "spin_iterations", "wait_ns", "tasks", "shuffles",
            "mma", "ldmatrix", "tensor_flops", "ldmatrix_phases", "ldmatrix_wavefronts",
            "queue_pops", "queue_retries", "queue_pushes", "queue_push_claims",
            "queue_empty_looks", "event_notifies", "event_not_ready", "waits_spun",
            "round_trips", "wgmma"})
        if (!sync || !sync->getInteger(k))
          fail(where + ": sync.\"" + k + "\" missing");
      const llvm::json::Array *sites = g->getArray("sites");
      if (!sites)
        fail(where + ": no sites");
      for (size_t s = 0; sites && s < sites->size(); ++s) {
        const llvm::json::Object *so = (*sites)[s].getAsObject();
        std::string sw = where + " site " + std::to_string(s);
        if (!so || !so->getString("site") || !so->getString("kind") ||
            (so->getString("kind") != "load" && so->getString("kind") != "store"))
          fail(sw + ": no site/kind");
        else if (so->getString("space") == "shared")
          check_shared(so->getObject("shared"), sw);
        else if (so->getString("space") == "global")
          check_global(so->getObject("global"), sw);
        else
          fail(sw + ": \"space\" is neither global nor shared");
      }
    }
  }
  // The task switch per CTA: named columns, one row of counts per CTA.
  const llvm::json::Object *per = root ? root->getObject("per_cta") : nullptr;
  const llvm::json::Array *cols = per ? per->getArray("counters") : nullptr;
  const llvm::json::Array *rows = per ? per->getArray("values") : nullptr;
  if (!cols || !rows || cols->empty())
    fail("\"per_cta\" missing or without counters/values");
  else if (root->getInteger("ctas") && rows->size() != size_t(*root->getInteger("ctas")))
    fail("\"per_cta\": " + std::to_string(rows->size()) + " rows for " +
         std::to_string(*root->getInteger("ctas")) + " CTAs");
  for (size_t i = 0; cols && rows && i < rows->size(); ++i) {
    const llvm::json::Array *r = (*rows)[i].getAsArray();
    if (!r || r->size() != cols->size())
      fail("\"per_cta\" row " + std::to_string(i) + ": not one count per counter");
    for (size_t k = 0; r && k < r->size(); ++k)
      if (!(*r)[k].getAsInteger() || *(*r)[k].getAsInteger() < 0)
        fail("\"per_cta\" row " + std::to_string(i) + ": not a count");
  }
  if (errors)
    return 1;
  std::printf("profile %s: valid etl-sim-profile-1\n", argv[1]);
  return 0;
}
