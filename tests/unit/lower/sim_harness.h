//===- tests/unit/lower/sim_harness.h - Run a sim .so in-process ----------===//
//
// What this owns: a tiny stand-in for the runtime's simulator, for back-end
// unit tests: it dlopens a sim shared object, installs its own etl_sim_ops
// (one OS thread per simulated GPU thread, a pthread barrier and a shared
// buffer per CTA, a pthread barrier per warp for shuffles, bounds checks
// against registered buffers, cp.async copied at once) and runs
// etl_main on `ctas` x `threads` threads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "etl_abi.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <string>
#include <thread>
#include <time.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace etl::testing {

struct SimState {
  struct Cta {
    pthread_barrier_t bar;
    std::vector<uint64_t> smem; // 8-byte aligned
    struct Warp {
      pthread_barrier_t bar;
      uint32_t in[32];
    };
    std::vector<Warp> warps;
  };
  std::vector<Cta> ctas;
  std::vector<std::pair<const char *, size_t>> buffers; // allowed [ptr, ptr+bytes)
  std::atomic<int> violations{0};
  std::atomic<int> tasks{0};
};

inline SimState *g_sim = nullptr;
inline thread_local uint32_t t_tid = 0, t_cta = 0;

inline uint32_t sim_tid() { return t_tid; }
inline uint32_t sim_ctaid() { return t_cta; }
inline void sim_barrier() { pthread_barrier_wait(&g_sim->ctas[t_cta].bar); }
inline void *sim_shared_base() { return g_sim->ctas[t_cta].smem.data(); }
inline void sim_check_access(const void *p, uint64_t bytes, uint32_t) {
  const char *c = static_cast<const char *>(p);
  for (auto &b : g_sim->buffers)
    if (c >= b.first && c + bytes <= b.first + b.second)
      return;
  g_sim->violations++;
}
inline uint32_t sim_atomic_add_release(uint32_t *p, uint32_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELEASE);
}
inline uint32_t sim_load_acquire(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
inline void sim_fence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void sim_spin_pause() { sched_yield(); }
inline void sim_task_begin(uint32_t, uint32_t) {
  if (t_tid == 0)
    g_sim->tasks++;
}
inline void sim_task_end() {}

inline uint32_t sim_atomic_add_acq_rel(uint32_t *p, uint32_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}
inline uint32_t sim_atomic_cas(uint32_t *p, uint32_t e, uint32_t d) {
  __atomic_compare_exchange_n(p, &e, d, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return e;
}

inline void sim_shared_access(const void *, uint64_t, uint32_t) {}
/// The task loop reads the clock to poll the control block (lower_kernel.cpp).
inline uint64_t sim_clock_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

/// shfl.sync (etl_abi.h's rule) with the whole warp: every lane publishes
/// its value, meets the others, reads its source, meets them again.
inline uint32_t sim_shuffle(uint32_t v, uint32_t mode, uint32_t b, uint32_t c, uint32_t, uint32_t) {
  SimState::Cta::Warp &w = g_sim->ctas[t_cta].warps[t_tid / 32];
  uint32_t lane = t_tid % 32, seg = (c >> 8) & 31u;
  uint32_t max_lane = (lane & seg) | (c & 31u & ~seg);
  int64_t j = mode == ETL_SHFL_UP     ? int64_t(lane) - b
              : mode == ETL_SHFL_DOWN ? int64_t(lane) + b
              : mode == ETL_SHFL_BFLY ? int64_t(lane ^ b)
                                      : int64_t((lane & seg) | (b & 31u & ~seg));
  bool ok = mode == ETL_SHFL_UP ? j >= int64_t(max_lane) : j <= int64_t(max_lane);
  w.in[lane] = v;
  pthread_barrier_wait(&w.bar);
  uint32_t r = ok && j >= 0 && j < 32 ? w.in[j] : v;
  pthread_barrier_wait(&w.bar);
  return r;
}

/// cp.async (tile/pipeline.cpp's rings): copied at once, which a copy may
/// do (it lands by the wait_group that covers it at the latest); the
/// runtime's sim defers it to that wait and checks the reads in between.
inline void sim_async_copy(void *dst, const void *src, uint32_t bytes) {
  sim_check_access(src, bytes, 0);
  std::memcpy(dst, src, bytes);
}
inline void sim_async_commit() {}
inline void sim_async_wait(uint32_t) {}

inline const etl_sim_ops g_test_ops = {.tid = sim_tid,
                                       .ctaid = sim_ctaid,
                                       .barrier = sim_barrier,
                                       .shared_base = sim_shared_base,
                                       .check_access = sim_check_access,
                                       .atomic_add_release = sim_atomic_add_release,
                                       .load_acquire = sim_load_acquire,
                                       .fence = sim_fence,
                                       .spin_pause = sim_spin_pause,
                                       .task_begin = sim_task_begin,
                                       .task_end = sim_task_end,
                                       .clock_ns = sim_clock_ns,
                                       .atomic_add_acq_rel = sim_atomic_add_acq_rel,
                                       .atomic_cas = sim_atomic_cas,
                                       .shared_access = sim_shared_access,
                                       .shuffle = sim_shuffle,
                                       .async_copy = sim_async_copy,
                                       .async_commit = sim_async_commit,
                                       .async_wait = sim_async_wait};

/// Static queues: the tasks of each (group, count), in order, dealt
/// round-robin over `ctas` CTAs, continuing across groups (as the runtime's
/// plan does).
struct Queue {
  std::vector<uint32_t> entries, offs;
};
inline Queue make_queue(const std::vector<std::pair<uint32_t, uint32_t>> &group_counts,
                        unsigned ctas) {
  std::vector<std::vector<uint32_t>> per(ctas);
  unsigned next = 0;
  for (auto [g, n] : group_counts)
    for (uint32_t l = 0; l < n; ++l) {
      per[next].push_back(g);
      per[next].push_back(l);
      next = (next + 1) % ctas;
    }
  Queue q;
  q.offs.push_back(0);
  for (auto &p : per) {
    q.entries.insert(q.entries.end(), p.begin(), p.end());
    q.offs.push_back(uint32_t(q.entries.size() / 2));
  }
  return q;
}

/// What a sim launch needs besides the program's own slots: the static
/// queues, the control block (abort flag, then a progress word per CTA;
/// etl_abi.h) and the fixed argument slots.
struct SimLaunch {
  Queue queue;
  unsigned ctas;
  std::vector<uint32_t> control = std::vector<uint32_t>(ETL_CONTROL_BYTES(64) / 4, 0);
  SimLaunch(const std::vector<std::pair<uint32_t, uint32_t>> &group_counts, unsigned n_ctas)
      : queue(make_queue(group_counts, n_ctas)), ctas(n_ctas) {}
  uint32_t &abort_flag() { return control[0]; }
  /// Fills the fixed slots of `args`; `events` is the counter array.
  void fill(uint64_t *args, void *events) {
    args[ETL_SLOT_EVENTS] = uint64_t(uintptr_t(events));
    args[ETL_SLOT_QUEUE] = uint64_t(uintptr_t(queue.entries.data()));
    args[ETL_SLOT_QUEUE_OFFS] = uint64_t(uintptr_t(queue.offs.data()));
    args[ETL_SLOT_ABORT] = uint64_t(uintptr_t(control.data()));
    args[ETL_SLOT_NUM_CTAS] = ctas;
  }
};

/// Loads `so_bytes` and runs it. Returns an error text, empty on success.
inline std::string run_sim(const std::string &so_bytes, uint64_t *args, unsigned ctas,
                           unsigned threads, unsigned smem_bytes, SimState &st) {
  char path[] = "/tmp/etl-test-sim-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return "mkstemp failed";
  if (write(fd, so_bytes.data(), so_bytes.size()) != ssize_t(so_bytes.size()))
    return "write failed";
  close(fd);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  unlink(path);
  if (!h)
    return std::string("dlopen: ") + dlerror();
  auto **ops = static_cast<const etl_sim_ops **>(dlsym(h, ETL_SIM_OPS_SYMBOL));
  auto entry = reinterpret_cast<void (*)(uint64_t *)>(dlsym(h, ETL_KERNEL_ENTRY));
  if (!ops || !entry)
    return "missing " ETL_SIM_OPS_SYMBOL " or " ETL_KERNEL_ENTRY;
  *ops = &g_test_ops;
  g_sim = &st;
  st.ctas = std::vector<SimState::Cta>(ctas);
  for (auto &c : st.ctas) {
    pthread_barrier_init(&c.bar, nullptr, threads);
    c.smem.assign(smem_bytes / 8 + 1, 0);
    c.warps = std::vector<SimState::Cta::Warp>((threads + 31) / 32);
    for (unsigned w = 0; w < c.warps.size(); ++w)
      pthread_barrier_init(&c.warps[w].bar, nullptr, std::min(32u, threads - w * 32));
  }
  std::vector<std::thread> pool;
  for (unsigned c = 0; c < ctas; ++c)
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([=] {
        t_cta = c;
        t_tid = t;
        entry(args);
      });
  for (auto &t : pool)
    t.join();
  for (auto &c : st.ctas) {
    pthread_barrier_destroy(&c.bar);
    for (auto &w : c.warps)
      pthread_barrier_destroy(&w.bar);
  }
  g_sim = nullptr;
  dlclose(h);
  return "";
}

} // namespace etl::testing
