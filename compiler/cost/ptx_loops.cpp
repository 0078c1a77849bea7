//===- cost/ptx_loops.cpp - Instructions per loop step, read from the PTX -===//
//
// What this owns: analyse_ptx (see cost/ptx_loops.h). Each instruction is
// read once into its block's tally; the loops, paths and regions then work
// on blocks. The rules are kloop_stats.py's, function for function (parse,
// cfg, dominators, natural loops, classify, tally, trip count, interior
// path, dispatch entries), so the Python and this agree on every count.
//
//===----------------------------------------------------------------------===//
#include "cost/ptx_loops.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

namespace etl {

const char *ptx_class_name(PtxClass c) {
  static const char *names[kPtxClasses] = {"args", "gmem", "bar",  "mma",
                                           "i64",  "pred", "smem", "other"};
  return names[int(c)];
}

double PtxTally::total() const {
  double t = 0;
  for (double v : cls)
    t += v;
  return t;
}

void PtxTally::add(const PtxTally &o) {
  for (int i = 0; i < kPtxClasses; ++i)
    cls[size_t(i)] += o.cls[size_t(i)];
  mma += o.mma, mma_flops += o.mma_flops, tf32 += o.tf32, gbytes += o.gbytes, ldg += o.ldg;
  fp += o.fp;
  wait = std::max(wait, o.wait);
}

PtxTally PtxTally::scaled(double t) const {
  PtxTally r = *this;
  for (double &v : r.cls)
    v *= t;
  r.mma *= t, r.mma_flops *= t, r.tf32 *= t, r.gbytes *= t, r.ldg *= t, r.fp *= t;
  return r;
}

int PtxTally::ring_depth() const {
  if (wait >= 0)
    return wait + 2;
  return gbytes > 0 ? 1 : 0;
}

namespace {

bool starts(const std::string &s, const char *p) { return s.rfind(p, 0) == 0; }

std::vector<std::string> split(const std::string &s, char c) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == c) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

bool has(const std::vector<std::string> &v, const char *x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool is_word(const std::string &s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

/// The instruction without its guard `@%p1 ` / `@!%p1 `.
std::string unguarded(const std::string &ins) {
  static const std::regex guard(R"(^@!?%p\w+\s+)");
  if (ins.empty() || ins[0] != '@')
    return ins;
  return std::regex_replace(ins, guard, "", std::regex_constants::format_first_only);
}

std::string opcode(const std::string &body) {
  size_t e = body.find_first_of(" \t");
  return body.substr(0, e);
}

const std::regex kBranch(R"(^(@!?%p\w+\s+)?bra(\.uni)?\s+(\S+?);)");

struct Block {
  std::string label; ///< "" for an unnamed fall-through block
  bool named = false;
  std::vector<std::string> ins;
  // read once the function's argument registers are known
  PtxTally tally;
  bool narrow = false, scheduler = false, touches = false;
};

struct Func {
  std::string name;
  std::vector<Block> blocks;
};

std::vector<Func> parse_funcs(const std::string &ptx) {
  static const std::regex func(R"(^\.(visible\s+)?(\.entry|\.func)\s+(?:\([^)]*\)\s*)?([\w.$]+))");
  static const std::regex label(R"(^(\$?[A-Za-z_.$][\w$.]*):\s*$)");
  std::vector<Func> funcs;
  std::optional<Func> cur, pending;
  int depth = 0;
  std::string carry;
  std::istringstream in(ptx);
  for (std::string raw; std::getline(in, raw);) {
    std::string line = raw.substr(0, raw.find("//"));
    size_t a = line.find_first_not_of(" \t\r"), b = line.find_last_not_of(" \t\r");
    if (a == std::string::npos)
      continue;
    line = line.substr(a, b - a + 1);
    std::smatch m;
    if (!cur && line[0] == '.' && std::regex_search(line, m, func)) {
      pending = Func{m[3].str(), {}};
      continue;
    }
    if (pending && !cur) {
      if (line[0] == '{') {
        cur = std::move(*pending);
        pending.reset();
        depth = 1;
        cur->blocks.push_back(Block{"<entry>", true, {}, {}, false, false, false});
      }
      continue;
    }
    if (!cur)
      continue;
    if (line == "{") {
      ++depth;
      continue;
    }
    if (line == "}") {
      if (--depth == 0) {
        funcs.push_back(std::move(*cur));
        cur.reset();
      }
      continue;
    }
    if (line.back() == ':' && std::regex_search(line, m, label)) {
      cur->blocks.push_back(Block{m[1].str(), true, {}, {}, false, false, false});
      continue;
    }
    if (starts(line, ".reg") || starts(line, ".local") || starts(line, ".shared") ||
        starts(line, ".pragma") || starts(line, ".loc"))
      continue;
    carry += (carry.empty() ? "" : " ") + line;
    if (carry.back() != ';')
      continue;
    for (std::string s : split(carry, ';')) {
      size_t x = s.find_first_not_of(" \t"), y = s.find_last_not_of(" \t");
      if (x == std::string::npos)
        continue;
      std::string ins = s.substr(x, y - x + 1) + ";";
      cur->blocks.back().ins.push_back(ins);
      if (std::regex_search(ins, kBranch) || starts(ins, "ret") || starts(ins, "exit"))
        cur->blocks.push_back(Block{}); // an unnamed fall-through block
    }
    carry.clear();
  }
  for (Func &f : funcs)
    f.blocks.erase(std::remove_if(f.blocks.begin(), f.blocks.end(),
                                  [](const Block &b) { return b.ins.empty() && !b.named; }),
                   f.blocks.end());
  return funcs;
}

PtxClass classify(const std::string &ins, const std::set<std::string> &args_regs) {
  std::string body = unguarded(ins);
  std::string op = opcode(body);
  std::vector<std::string> parts = split(op, '.');
  if (starts(op, "ld.") && (has(parts, "global") || has(parts, "param") || parts.size() <= 3)) {
    if (has(parts, "param"))
      return PtxClass::Args;
    size_t at = body.find("[%rd");
    if (at != std::string::npos) {
      size_t e = at + 4;
      while (e < body.size() && std::isdigit(static_cast<unsigned char>(body[e])))
        ++e;
      if (e > at + 4 && args_regs.count(body.substr(at + 1, e - at - 1)))
        return PtxClass::Args;
    }
  }
  if (starts(op, "ld.global") || starts(op, "st.global") || starts(op, "cp.async.c") ||
      starts(op, "atom.global") || starts(op, "red.global"))
    return PtxClass::Gmem;
  if (starts(op, "bar") || starts(op, "cp.async.wait") || starts(op, "cp.async.commit"))
    return PtxClass::Bar;
  const std::string &p0 = parts[0];
  if (p0 == "mma" || p0 == "wgmma" || p0 == "fma" || p0 == "ldmatrix")
    return PtxClass::Mma;
  static const std::set<std::string> int64_ops = {"add", "sub", "mul", "mad", "shl", "shr",
                                                  "and", "or",  "xor", "min", "max", "neg",
                                                  "div", "rem", "not", "abs"};
  if (int64_ops.count(p0) && (has(parts, "s64") || has(parts, "u64") || has(parts, "b64")) &&
      !has(parts, "f64"))
    return PtxClass::I64;
  if (starts(op, "mul.wide") || starts(op, "mad.wide"))
    return PtxClass::I64;
  if (p0 == "cvt" && parts.size() > 1 &&
      (parts[parts.size() - 2] == "u64" || parts[parts.size() - 2] == "s64"))
    return PtxClass::I64;
  if (p0 == "setp" || p0 == "selp" || (ins[0] == '@' && p0 != "bra"))
    return PtxClass::Pred;
  if (starts(op, "ld.shared") || starts(op, "st.shared"))
    return PtxClass::Smem;
  return PtxClass::Other;
}

/// Bytes per thread of a global load or store (kloop_stats' GBYTES): the
/// vector width times the element's bits / 8; 0 when the form is unknown.
double global_bytes(const std::string &op) {
  std::vector<std::string> parts = split(op, '.');
  size_t first = 1;
  if (parts[0] == "cp" && parts.size() > 2 && parts[1] == "async" &&
      (parts[2] == "ca" || parts[2] == "cg"))
    first = 3;
  else if (parts[0] != "ld" && parts[0] != "st")
    return 0;
  size_t g = parts.size();
  for (size_t i = first; i < parts.size(); ++i) {
    if (!is_word(parts[i]))
      return 0;
    if (parts[i] == "global" && g == parts.size())
      g = i;
  }
  if (g + 1 >= parts.size())
    return 0;
  const std::string &last = parts.back();
  size_t d = last.find_first_of("0123456789");
  if (d == 0 || d == std::string::npos ||
      !std::all_of(last.begin(), last.begin() + long(d), [](char c) { return c >= 'a' && c <= 'z'; }) ||
      !std::all_of(last.begin() + long(d), last.end(), [](char c) { return std::isdigit(c); }))
    return 0;
  double vec = 1;
  const std::string &before = parts[parts.size() - 2];
  if (parts.size() - 2 > g && before.size() == 2 && before[0] == 'v' && std::isdigit(before[1]))
    vec = before[1] - '0';
  return vec * std::stod(last.substr(d)) / 8;
}

PtxTally tally(const std::string &ins, const std::set<std::string> &args_regs) {
  PtxTally t;
  PtxClass cls = classify(ins, args_regs);
  t.cls[size_t(cls)] = 1;
  std::string body = unguarded(ins);
  std::string op = opcode(body);
  static const std::regex mma(R"(^mma\.sync\.aligned\.m(\d+)n(\d+)k(\d+)\.)");
  static const std::regex cp_size(
      R"(^cp\.async\.c[ag]\.shared(?:::cta)?\.global\S*\s+\[[^\]]*\],\s*\[[^\]]*\],\s*(\d+))");
  std::smatch m;
  if (starts(body, "mma.sync") && std::regex_search(body, m, mma)) {
    t.mma = 1;
    t.mma_flops = 2.0 * std::stod(m[1]) * std::stod(m[2]) * std::stod(m[3]);
    if (body.find(".tf32") != std::string::npos)
      t.tf32 = 1;
  }
  if (starts(body, "cp.async.c") && std::regex_search(body, m, cp_size)) {
    t.gbytes = std::stod(m[1]);
  } else if (cls == PtxClass::Gmem) {
    if (body.size() > op.size() && std::isspace(static_cast<unsigned char>(body[op.size()])))
      t.gbytes = global_bytes(op);
    if (starts(body, "ld.") && body.find("acquire") == std::string::npos &&
        body.find("volatile") == std::string::npos)
      t.ldg = 1;
  }
  std::vector<std::string> parts = split(op, '.');
  static const std::set<std::string> fp_ops = {"add", "sub", "mul",  "fma",   "mad",  "max",
                                               "min", "ex2", "lg2",  "rcp",   "rsqrt", "sqrt",
                                               "div", "neg", "abs",  "tanh",  "sin",  "cos"};
  static const std::set<std::string> fp_types = {"f32", "f16", "bf16", "f16x2", "bf16x2", "f64"};
  if (fp_ops.count(parts[0]) &&
      std::any_of(parts.begin() + 1, parts.end(), [](const std::string &p) { return fp_types.count(p); }))
    t.fp = 1;
  if (starts(body, "cp.async.wait_group")) {
    size_t d = body.find_first_of("0123456789", 19);
    if (d != std::string::npos && std::isspace(static_cast<unsigned char>(body[19])))
      t.wait = std::stoi(body.substr(d));
  }
  return t;
}

std::set<std::string> args_registers(const Func &f) {
  static const std::regex param(R"(^ld\.param\.u64\s+(%rd\d+),\s*\[\w*param_0\])");
  static const std::regex move(R"(^(?:mov\.u64|mov\.b64|cvta\.to\.global\.u64)\s+(%rd\d+),\s*(%rd\d+))");
  std::set<std::string> regs;
  std::smatch m;
  for (const Block &b : f.blocks)
    for (const std::string &i : b.ins) {
      if (starts(i, "ld.param") && std::regex_search(i, m, param))
        regs.insert(m[1]);
      if ((starts(i, "mov") || starts(i, "cvta")) && std::regex_search(i, m, move) &&
          regs.count(m[2]))
        regs.insert(m[1]);
    }
  return regs;
}

struct Cfg {
  std::vector<std::vector<int>> succ, pred;
  std::map<int, int> idom; ///< reachable blocks only
  bool dominates(int a, int b) const {
    for (;;) {
      if (a == b)
        return true;
      auto it = idom.find(b);
      if (b == 0 || it == idom.end())
        return false;
      b = it->second;
    }
  }
};

Cfg build_cfg(const std::vector<Block> &blocks) {
  Cfg g;
  std::map<std::string, int> index;
  for (size_t i = 0; i < blocks.size(); ++i)
    if (blocks[i].named)
      index.emplace(blocks[i].label, int(i));
  int n = int(blocks.size());
  g.succ.resize(size_t(n));
  g.pred.resize(size_t(n));
  for (int i = 0; i < n; ++i) {
    const std::string last = blocks[size_t(i)].ins.empty() ? "" : blocks[size_t(i)].ins.back();
    std::vector<int> s;
    std::smatch m;
    if (std::regex_search(last, m, kBranch)) {
      auto it = index.find(m[3].str());
      if (it != index.end())
        s.push_back(it->second);
      if (m[1].matched)
        s.push_back(i + 1);
    } else if (!starts(last, "ret") && !starts(last, "exit")) {
      s.push_back(i + 1);
    }
    for (int x : s)
      if (x < n)
        g.succ[size_t(i)].push_back(x);
  }
  for (int i = 0; i < n; ++i)
    for (int s : g.succ[size_t(i)])
      g.pred[size_t(s)].push_back(i);
  if (n == 0)
    return g;
  // reverse postorder from block 0, then the iterative dominator algorithm
  std::vector<int> order;
  std::vector<bool> seen(size_t(n), false);
  std::vector<std::pair<int, size_t>> stack = {{0, 0}};
  seen[0] = true;
  while (!stack.empty()) {
    auto &[node, k] = stack.back();
    if (k == g.succ[size_t(node)].size()) {
      order.push_back(node);
      stack.pop_back();
      continue;
    }
    int nxt = g.succ[size_t(node)][k++];
    if (!seen[size_t(nxt)]) {
      seen[size_t(nxt)] = true;
      stack.push_back({nxt, 0});
    }
  }
  std::vector<int> rpo(order.rbegin(), order.rend());
  std::vector<int> pos(size_t(n), -1);
  for (size_t i = 0; i < rpo.size(); ++i)
    pos[size_t(rpo[i])] = int(i);
  g.idom[0] = 0;
  auto meet = [&](int a, int b) {
    while (a != b) {
      while (pos[size_t(a)] > pos[size_t(b)])
        a = g.idom[a];
      while (pos[size_t(b)] > pos[size_t(a)])
        b = g.idom[b];
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 1; i < rpo.size(); ++i) {
      int b = rpo[i], d = -1;
      for (int p : g.pred[size_t(b)])
        if (g.idom.count(p))
          d = d < 0 ? p : meet(d, p);
      if (d < 0)
        continue;
      auto it = g.idom.find(b);
      if (it == g.idom.end() || it->second != d) {
        g.idom[b] = d;
        changed = true;
      }
    }
  }
  return g;
}

struct Loop {
  int header = 0;
  std::vector<int> latches;
  std::set<int> blocks;
  Loop *parent = nullptr;
  std::vector<Loop *> children;
};

std::vector<std::unique_ptr<Loop>> natural_loops(const Cfg &g) {
  std::map<int, std::unique_ptr<Loop>> by_header;
  std::vector<int> first_seen;
  for (size_t u = 0; u < g.succ.size(); ++u)
    for (int h : g.succ[u]) {
      if (!g.idom.count(int(u)) || !g.dominates(h, int(u)))
        continue;
      auto &l = by_header[h];
      if (!l) {
        l = std::make_unique<Loop>();
        l->header = h;
        l->blocks.insert(h);
        first_seen.push_back(h);
      }
      l->latches.push_back(int(u));
      std::vector<int> stack = {int(u)};
      while (!stack.empty()) {
        int x = stack.back();
        stack.pop_back();
        if (l->blocks.insert(x).second)
          stack.insert(stack.end(), g.pred[size_t(x)].begin(), g.pred[size_t(x)].end());
      }
    }
  std::vector<std::unique_ptr<Loop>> ls;
  for (int h : first_seen)
    ls.push_back(std::move(by_header[h]));
  std::stable_sort(ls.begin(), ls.end(), [](const auto &a, const auto &b) {
    return a->blocks.size() < b->blocks.size();
  });
  for (auto &l : ls)
    for (auto &o : ls)
      if (o != l && o->blocks.count(l->header) && o->blocks.size() > l->blocks.size()) {
        l->parent = o.get();
        break;
      }
  for (auto &l : ls)
    if (l->parent)
      l->parent->children.push_back(l.get());
  return ls;
}

std::optional<double> trip_count(const Loop &l, const std::vector<Block> &blocks) {
  static const std::regex setp(R"(^setp\.\w+\.[us](?:32|64)\s+%p\w+,\s*(%r\w+),\s*(\d+);)");
  std::smatch m, s;
  for (int lt : l.latches) {
    const auto &ins = blocks[size_t(lt)].ins;
    for (auto it = ins.rbegin(); it != ins.rend(); ++it) {
      if (!starts(*it, "setp") || !std::regex_search(*it, m, setp))
        continue;
      std::string reg = m[1];
      double bound = std::stod(m[2]);
      const std::regex add("^add\\.[su](?:32|64)\\s+" + reg + ",\\s*%r\\w+,\\s*(\\d+);");
      for (int b : l.blocks)
        for (const std::string &j : blocks[size_t(b)].ins)
          if (starts(j, "add.") && std::regex_search(j, s, add) && std::stod(s[1]) > 0)
            return std::max(1.0, bound / std::stod(s[1]));
    }
  }
  return std::nullopt;
}

/// Every instruction of the loop once (inner loops times their trips).
double static_count(const Loop &l, const std::vector<Block> &blocks) {
  double c = 0;
  std::set<int> inner;
  for (const Loop *ch : l.children) {
    inner.insert(ch->blocks.begin(), ch->blocks.end());
    c += static_count(*ch, blocks) * trip_count(*ch, blocks).value_or(1.0);
  }
  for (int b : l.blocks)
    if (!inner.count(b))
      c += double(blocks[size_t(b)].ins.size());
  return c;
}

/// The interior path of one iteration (kloop_stats' hot_counts).
std::pair<PtxTally, bool> hot_counts(const Loop &l, const std::vector<Block> &blocks, const Cfg &g) {
  std::map<int, const Loop *> owner;
  for (const Loop *ch : l.children)
    for (int b : ch->blocks)
      owner[b] = ch;
  // a node: (0, block) or (1, inner loop header), ordered as ("B", b) < ("L", h)
  using Node = std::pair<int, int>;
  auto node = [&](int b) { return owner.count(b) ? Node{1, owner[b]->header} : Node{0, b}; };
  std::map<Node, std::pair<PtxTally, bool>> weight;
  std::map<Node, bool> ok;
  for (int b : l.blocks) {
    Node n = node(b);
    if (weight.count(n))
      continue;
    if (owner.count(b)) {
      const Loop *ch = owner[b];
      auto [cc, cu] = hot_counts(*ch, blocks, g);
      auto t = trip_count(*ch, blocks);
      weight[n] = {cc.scaled(t.value_or(1.0)), cu || !t};
      ok[n] = true;
    } else {
      weight[n] = {blocks[size_t(b)].tally, false};
      ok[n] = !blocks[size_t(b)].narrow;
    }
  }
  std::map<Node, std::set<Node>> edges;
  for (int b : l.blocks)
    for (int s : g.succ[size_t(b)])
      if (l.blocks.count(s) && s != l.header && node(s) != node(b))
        edges[node(b)].insert(node(s));
  std::set<Node> latches;
  for (int lt : l.latches)
    latches.insert(node(lt));
  auto key_less = [](const PtxTally &a, const PtxTally &b) {
    // the most global loads and copies, then the most mma (a dot's tiles
    // dealt unevenly over the warps branch on the warp: the busiest warp's
    // path), then the fewest instructions (kloop_stats.py's hot_counts)
    double ga = a.cls[size_t(PtxClass::Gmem)], gb = b.cls[size_t(PtxClass::Gmem)];
    double ma = a.cls[size_t(PtxClass::Mma)], mb = b.cls[size_t(PtxClass::Mma)];
    if (ga != gb)
      return ga < gb;
    if (ma != mb)
      return ma < mb;
    return -a.total() < -b.total();
  };
  std::map<Node, std::optional<std::pair<PtxTally, bool>>> best;
  std::set<Node> onpath;
  std::function<std::optional<std::pair<PtxTally, bool>>(Node)> visit = [&](Node n) {
    auto it = best.find(n);
    if (it != best.end())
      return it->second;
    if (!ok[n] || onpath.count(n))
      return std::optional<std::pair<PtxTally, bool>>();
    onpath.insert(n);
    const auto &[w, u] = weight[n];
    std::optional<std::pair<PtxTally, bool>> tail;
    for (Node m : edges[n])
      if (auto t = visit(m); t && (!tail || key_less(tail->first, t->first)))
        tail = t;
    onpath.erase(n);
    std::optional<std::pair<PtxTally, bool>> r;
    if (tail) {
      PtxTally sum = w;
      sum.add(tail->first);
      r = std::make_pair(sum, u || tail->second);
    }
    if (latches.count(n) && (!r || key_less(r->first, w)))
      r = std::make_pair(w, u);
    best[n] = r;
    return r;
  };
  auto r = visit(node(l.header));
  return r ? *r : std::make_pair(PtxTally{}, true);
}

/// Group name -> entry block of the task loop's dispatch (kloop_stats'
/// group_entries), in the order the group numbers first appear.
std::vector<std::pair<std::string, int>> group_entries(const std::vector<Block> &blocks,
                                                       const std::vector<std::string> &names) {
  static const std::regex setp(R"(^setp\.eq\.s32\s+(%p\w+),\s*(%r\d+),\s*(\d+);)");
  std::map<std::string, int> index;
  for (size_t i = 0; i < blocks.size(); ++i)
    if (blocks[i].named)
      index.emplace(blocks[i].label, int(i));
  std::vector<std::string> regs; // first-seen order
  std::map<std::string, std::vector<std::pair<int, int>>> per_reg;
  std::smatch m, bm;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto &ins = blocks[i].ins;
    for (size_t k = 0; k < ins.size(); ++k) {
      if (!starts(ins[k], "setp.eq.s32") || !std::regex_search(ins[k], m, setp))
        continue;
      for (size_t y = k + 1; y < ins.size(); ++y) {
        if (!std::regex_search(ins[y], bm, kBranch) || !bm[1].matched ||
            bm[1].str().find(m[1].str()) == std::string::npos)
          continue;
        int tgt = bm[1].str().find('!') == std::string::npos ? index.at(bm[3].str()) : int(i) + 1;
        auto &cases = per_reg[m[2]];
        if (cases.empty())
          regs.push_back(m[2]);
        int gnum = std::stoi(m[3]);
        auto at = std::find_if(cases.begin(), cases.end(), [&](auto &c) { return c.first == gnum; });
        if (at != cases.end())
          at->second = tgt;
        else
          cases.push_back({gnum, tgt});
        break;
      }
    }
  }
  const std::vector<std::pair<int, int>> *cases = nullptr;
  for (const std::string &r : regs)
    if (!cases || per_reg[r].size() > cases->size())
      cases = &per_reg[r];
  std::vector<std::pair<std::string, int>> out;
  if (names.size() < 2 || !cases || cases->size() < 2)
    return out;
  for (auto [gnum, blk] : *cases)
    out.push_back({size_t(gnum) < names.size() ? names[size_t(gnum)] : "group" + std::to_string(gnum), blk});
  return out;
}

} // namespace

double expanded_ptx(const std::string &ptx) {
  double n = 0;
  for (const Func &f : parse_funcs(ptx)) {
    std::set<std::string> args = args_registers(f);
    for (const Block &b : f.blocks)
      for (const std::string &i : b.ins)
        n += classify(i, args) == PtxClass::I64 ? 2.0 : 1.0;
  }
  return n;
}

PtxAnalysis analyse_ptx(const std::string &ptx, const std::vector<std::string> &groups) {
  PtxAnalysis out;
  static const std::regex maxntid(R"(\.maxntid\s+(\d+))");
  std::smatch mt;
  if (std::regex_search(ptx, mt, maxntid))
    out.threads = unsigned(std::stoul(mt[1]));
  static const std::regex scheduler(
      R"(^(@!?%p\w+\s+)?(ld\.volatile|ld\.acquire|atom\.|fence|membar|nanosleep|red\.release))");
  static const std::regex narrow(R"(ld\.global(\.nc)?\.(u8|s8|b8|u16|s16|b16)\s)");
  for (Func &f : parse_funcs(ptx)) {
    std::set<std::string> args = args_registers(f);
    for (Block &b : f.blocks)
      for (const std::string &i : b.ins) {
        b.tally.add(tally(i, args));
        std::string body = unguarded(i);
        b.narrow = b.narrow || (starts(body, "ld.global") &&
                                std::regex_search(body, narrow, std::regex_constants::match_continuous));
        b.scheduler = b.scheduler || std::regex_search(i, scheduler);
        b.touches = b.touches || (classify(i, args) == PtxClass::Gmem &&
                                  i.find("acquire") == std::string::npos &&
                                  i.find("volatile") == std::string::npos && !starts(i, "atom"));
      }
    Cfg g = build_cfg(f.blocks);
    auto loops = natural_loops(g);
    std::vector<std::pair<std::string, int>> owners;
    if (starts(f.name, "etl.task."))
      owners = {{f.name.substr(9), 0}};
    else
      owners = group_entries(f.blocks, groups);
    if (owners.empty() && groups.size() == 1)
      owners = {{groups[0], 0}};
    auto owner = [&](int h) -> const std::string * {
      for (const auto &o : owners)
        if (g.dominates(o.second, h))
          return &o.first;
      return nullptr;
    };
    auto sched = [&](const Loop &l) {
      return std::any_of(l.blocks.begin(), l.blocks.end(),
                         [&](int b) { return f.blocks[size_t(b)].scheduler; });
    };
    std::set<int> in_rows;
    for (const auto &l : loops) {
      const std::string *grp = owner(l->header);
      if (!grp || sched(*l))
        continue;
      if (!std::any_of(l->blocks.begin(), l->blocks.end(),
                       [&](int b) { return f.blocks[size_t(b)].touches; }))
        continue;
      PtxLoop row;
      row.group = *grp;
      row.static_count = static_count(*l, f.blocks);
      std::tie(row.step, row.unknown) = hot_counts(*l, f.blocks, g);
      for (const Loop *p = l->parent; p && owner(p->header) && *owner(p->header) == *grp && !sched(*p);
           p = p->parent)
        ++row.depth;
      in_rows.insert(l->blocks.begin(), l->blocks.end());
      const Block &h = f.blocks[size_t(l->header)];
      row.label = h.named ? h.label : "?";
      row.trips = trip_count(*l, f.blocks);
      out.loops.push_back(std::move(row));
    }
    for (size_t b = 0; b < f.blocks.size(); ++b) {
      if (!g.idom.count(int(b)) || in_rows.count(int(b)))
        continue;
      if (const std::string *grp = owner(int(b)))
        out.regions[*grp].add(f.blocks[b].tally);
    }
  }
  return out;
}

} // namespace etl
