//===- inline/barrier.cpp - Event edges as whole-group barriers -----------===//
//
// See barrier.h. Works on event and task names only (sema has not run), so
// it sees exactly the clauses the program wrote.
//
//===----------------------------------------------------------------------===//
#include "inline/barrier.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace etl {
namespace {

ExprPtr int_lit(int64_t v, SourceRange r) {
  auto e = std::make_unique<Expr>(ExprKind::IntLit, r);
  e->int_value = v;
  return e;
}

EventRef all_ref(const std::string &group, SourceRange r) {
  EventRef ref;
  ref.event = group + ".all";
  ref.event_range = r;
  ref.range = r;
  ref.indices.push_back(int_lit(0, r));
  return ref;
}

int rewrite(KernelDecl &k) {
  // Which groups notify each event.
  std::map<std::string, std::vector<size_t>> producers;
  for (size_t t = 0; t < k.tasks.size(); ++t)
    for (const EventRef &n : k.tasks[t].notifies) {
      std::vector<size_t> &ps = producers[n.event];
      if (std::find(ps.begin(), ps.end(), t) == ps.end())
        ps.push_back(t);
    }
  std::set<size_t> barriers;           // groups whose `.all` event is waited on
  std::set<std::string> dropped, kept; // events waited on before, and now
  int replaced = 0;
  for (size_t c = 0; c < k.tasks.size(); ++c) {
    TaskDecl &task = k.tasks[c];
    std::vector<EventRef> waits;
    std::set<size_t> on; // groups this one already waits for
    for (EventRef &w : task.waits) {
      auto it = producers.find(w.event);
      bool self = it != producers.end() &&
                  std::find(it->second.begin(), it->second.end(), c) != it->second.end();
      if (it == producers.end() || self) { // unknown (sema reports it) or a chain
        kept.insert(w.event);
        waits.push_back(std::move(w));
        continue;
      }
      dropped.insert(w.event);
      for (size_t p : it->second) {
        barriers.insert(p);
        if (on.insert(p).second)
          waits.push_back(all_ref(k.tasks[p].name, w.range));
      }
      ++replaced;
    }
    task.waits = std::move(waits);
  }
  // Events nothing waits on any more are gone, with their notifies: the
  // baseline synchronises through the barriers only.
  auto gone = [&](const std::string &e) { return dropped.count(e) && !kept.count(e); };
  for (TaskDecl &task : k.tasks)
    task.notifies.erase(std::remove_if(task.notifies.begin(), task.notifies.end(),
                                       [&](const EventRef &n) { return gone(n.event); }),
                        task.notifies.end());
  k.events.erase(std::remove_if(k.events.begin(), k.events.end(),
                                [&](const EventDecl &e) { return gone(e.name); }),
                 k.events.end());
  for (size_t p : barriers) {
    TaskDecl &task = k.tasks[p];
    task.notifies.push_back(all_ref(task.name, task.name_range));
    EventDecl ev;
    ev.name = task.name + ".all";
    ev.name_range = task.name_range;
    ev.range = task.name_range;
    ev.shape.push_back(int_lit(1, task.name_range));
    k.events.push_back(std::move(ev));
  }
  return replaced;
}

} // namespace

int make_barrier_events(Program &p) {
  int replaced = 0;
  for (KernelDecl &k : p.kernels)
    replaced += rewrite(k);
  return replaced;
}

} // namespace etl
