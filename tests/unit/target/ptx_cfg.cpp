//===- tests/unit/target/ptx_cfg.cpp - Just enough PTX to check orderings ===//
//
// The reader declared in ptx_cfg.h: tokenises the kernel body, splits it into
// basic blocks at labels and after branches/returns, links the edges, and
// answers dataflow and path questions over the result.
//
//===----------------------------------------------------------------------===//
#include "ptx_cfg.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace etl::ptxcheck {

namespace {

std::string trim(const std::string &s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

bool starts_with(const std::string &s, const char *p) { return s.rfind(p, 0) == 0; }

/// Operands split at top-level commas ("{%r1, %r2}" stays one operand).
std::vector<std::string> split_operands(const std::string &s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '{' || c == '[')
      depth++;
    if (c == '}' || c == ']')
      depth--;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!trim(cur).empty())
    out.push_back(trim(cur));
  return out;
}

/// Every %register named in an operand.
void registers_in(const std::string &s, std::vector<std::string> &out) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%')
      continue;
    size_t j = i + 1;
    while (j < s.size() && (isalnum((unsigned char)s[j]) || s[j] == '_' || s[j] == '.'))
      ++j;
    std::string r = s.substr(i, j - i);
    // special registers (%tid.x, %ctaid.x, %globaltimer, ...) are not defined in the body
    if (r.find('.') == std::string::npos && r != "%globaltimer" && r != "%smid")
      out.push_back(r);
    i = j - 1;
  }
}

bool is_branch(const Insn &i) { return starts_with(i.op, "bra"); }
bool is_exit(const Insn &i) { return i.op == "ret" || i.op == "exit" || i.op == "trap"; }

} // namespace

std::vector<std::string> Kernel::dests(const Insn &i) {
  std::vector<std::string> out;
  if (i.operands.empty() || starts_with(i.op, "st.") || is_branch(i) || is_exit(i) ||
      starts_with(i.op, "bar.") || starts_with(i.op, "fence") || starts_with(i.op, "nanosleep") ||
      starts_with(i.op, "red."))
    return out;
  const std::string &d = i.operands[0];
  if (d.empty() || (d[0] != '%' && d[0] != '{'))
    return out;
  registers_in(d, out);
  // setp's second destination: `setp.lt.s32 %p1|%p2, ...`
  return out;
}

std::vector<std::string> Kernel::uses(const Insn &i) const {
  std::vector<std::string> out;
  size_t first = dests(i).empty() ? 0 : 1;
  for (size_t k = first; k < i.operands.size(); ++k)
    registers_in(i.operands[k], out);
  if (!i.guard.empty())
    out.push_back(i.guard);
  return out;
}

std::string Kernel::address_reg(const std::string &operand, long *offset) {
  if (offset)
    *offset = 0;
  if (operand.size() < 3 || operand.front() != '[' || operand.back() != ']')
    return "";
  std::string in = operand.substr(1, operand.size() - 2);
  size_t plus = in.find('+');
  std::string base = trim(in.substr(0, plus));
  if (offset && plus != std::string::npos)
    *offset = std::stol(trim(in.substr(plus + 1)));
  return base;
}

bool Kernel::is_args_pointer(const std::string &reg) const {
  auto it = defs.find(reg);
  if (it == defs.end() || it->second.size() != 1)
    return false;
  const Insn &d = insns[size_t(it->second[0])];
  if (starts_with(d.op, "ld.param.u64"))
    return true;
  if ((starts_with(d.op, "cvta.to.global") || starts_with(d.op, "mov.")) && d.operands.size() == 2)
    return is_args_pointer(d.operands[1]);
  return false;
}

std::set<long> Kernel::slots_of(const std::string &reg) const {
  std::set<long> out;
  std::set<std::string> seen;
  std::vector<std::string> work{reg};
  while (!work.empty()) {
    std::string r = work.back();
    work.pop_back();
    if (!seen.insert(r).second)
      continue;
    auto it = defs.find(r);
    if (it == defs.end())
      continue;
    for (int di : it->second) {
      const Insn &d = insns[size_t(di)];
      if (starts_with(d.op, "ld.") && d.op.find(".u64") != std::string::npos &&
          d.operands.size() == 2) {
        long off = 0;
        std::string base = address_reg(d.operands[1], &off);
        // LLVM may compute a slot's address ahead of the load, out of a loop
        // (`add.s64 %rd8, %rd1, 24` ... `ld.global.u64 %rd9, [%rd8]`).
        for (int hop = 0; hop < 4 && !is_args_pointer(base); ++hop) {
          auto bd = defs.find(base);
          if (bd == defs.end() || bd->second.size() != 1)
            break;
          const Insn &a = insns[size_t(bd->second[0])];
          if (!starts_with(a.op, "add.") || a.operands.size() != 3)
            break;
          char *end = nullptr;
          long imm = std::strtol(a.operands[2].c_str(), &end, 10);
          if (end == a.operands[2].c_str() || *end)
            break;
          off += imm;
          base = a.operands[1];
        }
        if (is_args_pointer(base)) {
          out.insert(off / 8);
          continue; // a pointer (or value) read from the slot: stop here
        }
      }
      for (const std::string &u : uses(d))
        work.push_back(u);
    }
  }
  return out;
}

std::vector<std::set<int>> Kernel::loops() const {
  size_t n = blocks.size();
  // iterative dominators over bitsets-as-sets (kernels have a few hundred blocks)
  std::vector<std::set<int>> dom(n);
  std::set<int> all;
  for (size_t b = 0; b < n; ++b)
    all.insert(int(b));
  for (size_t b = 0; b < n; ++b)
    dom[b] = b == 0 ? std::set<int>{0} : all;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = 1; b < n; ++b) {
      std::set<int> d;
      bool first = true;
      for (int p : blocks[b].preds) {
        if (first) {
          d = dom[size_t(p)];
          first = false;
        } else {
          std::set<int> x;
          std::set_intersection(d.begin(), d.end(), dom[size_t(p)].begin(), dom[size_t(p)].end(),
                                std::inserter(x, x.begin()));
          d = x;
        }
      }
      d.insert(int(b));
      if (d != dom[b]) {
        dom[b] = d;
        changed = true;
      }
    }
  }
  std::vector<std::set<int>> out;
  for (size_t t = 0; t < n; ++t)
    for (int h : blocks[t].succs)
      if (dom[t].count(h)) {
        std::set<int> body{h, int(t)};
        std::vector<int> work{int(t)};
        while (!work.empty()) {
          int x = work.back();
          work.pop_back();
          if (x == h)
            continue;
          for (int p : blocks[size_t(x)].preds)
            if (body.insert(p).second)
              work.push_back(p);
        }
        out.push_back(body);
      }
  return out;
}

bool Kernel::every_path_back(int at, const std::function<bool(const Insn &)> &ok,
                             const std::function<bool(const Insn &)> &fail,
                             std::string &why) const {
  // Scan the rest of `at`'s block backwards, then whole predecessor blocks.
  std::set<int> seen;
  std::deque<std::pair<int, int>> work; // (block, scan from this position down)
  const Insn &start = insns[size_t(at)];
  const auto &first = blocks[size_t(start.block)].insns;
  int pos = int(std::find(first.begin(), first.end(), at) - first.begin());
  work.push_back({start.block, pos - 1});
  while (!work.empty()) {
    auto [b, p] = work.front();
    work.pop_front();
    bool stopped = false;
    for (int k = p; k >= 0 && !stopped; --k) {
      const Insn &i = insns[size_t(blocks[size_t(b)].insns[size_t(k)])];
      if (ok(i))
        stopped = true;
      else if (fail(i)) {
        why = "line " + std::to_string(i.line) + ": " + i.text;
        return false;
      }
    }
    if (stopped)
      continue;
    if (b == 0) {
      why = "the kernel's entry";
      return false;
    }
    for (int pr : blocks[size_t(b)].preds)
      if (seen.insert(pr).second)
        work.push_back({pr, int(blocks[size_t(pr)].insns.size()) - 1});
  }
  return true;
}

bool Kernel::every_path_forward(int at, const std::function<bool(const Insn &)> &ok,
                                const std::function<bool(const Insn &)> &fail,
                                std::string &why) const {
  std::set<int> seen;
  std::deque<std::pair<int, int>> work;
  const Insn &start = insns[size_t(at)];
  const auto &first = blocks[size_t(start.block)].insns;
  int pos = int(std::find(first.begin(), first.end(), at) - first.begin());
  work.push_back({start.block, pos + 1});
  while (!work.empty()) {
    auto [b, p] = work.front();
    work.pop_front();
    const auto &list = blocks[size_t(b)].insns;
    bool stopped = false;
    for (size_t k = size_t(p); k < list.size() && !stopped; ++k) {
      const Insn &i = insns[size_t(list[k])];
      if (ok(i))
        stopped = true;
      else if (fail(i) || is_exit(i)) {
        why = "line " + std::to_string(i.line) + ": " + i.text;
        return false;
      }
    }
    if (stopped)
      continue;
    for (int s : blocks[size_t(b)].succs)
      if (seen.insert(s).second)
        work.push_back({s, 0});
  }
  return true;
}

namespace {

/// Builds one function's instructions and blocks line by line (its body,
/// between the braces), then its control-flow edges (finish).
struct FunctionReader {
  Kernel k;
  std::string pending; // an instruction continued over lines
  int pending_line = 0;

  FunctionReader(std::string name, bool entry) {
    k.name = std::move(name);
    k.entry = entry;
    k.blocks.push_back(Block{});
  }
  void add_insn(std::string text, int at) {
    text = trim(text);
    if (text.empty() || text[0] == '.') // declarations: .reg, .shared, ...
      return;
    Insn i;
    i.line = at;
    i.text = text + ";";
    if (text[0] == '@') {
      size_t sp = text.find_first_of(" \t");
      i.guard = text.substr(1, sp - 1);
      if (!i.guard.empty() && i.guard[0] == '!') {
        i.negated = true;
        i.guard = i.guard.substr(1);
      }
      text = trim(text.substr(sp));
    }
    size_t sp = text.find_first_of(" \t");
    i.op = text.substr(0, sp);
    if (sp != std::string::npos)
      i.operands = split_operands(text.substr(sp));
    // a branch or an exit ends the block
    Block &cur = k.blocks.back();
    i.block = int(k.blocks.size() - 1);
    cur.insns.push_back(int(k.insns.size()));
    for (const std::string &d : Kernel::dests(i))
      k.defs[d].push_back(int(k.insns.size()));
    bool ends = is_branch(i) || is_exit(i);
    k.insns.push_back(i);
    if (ends)
      k.blocks.push_back(Block{});
  }

  /// One trimmed line of the body (not a brace of its own).
  void line(const std::string &t, int lineno) {
    if (t.back() == ':' && t[0] == '$') { // a label starts a block
      std::string label = t.substr(0, t.size() - 1);
      if (!k.blocks.back().insns.empty() || !k.blocks.back().label.empty() || k.blocks.size() == 1)
        k.blocks.push_back(Block{});
      k.blocks.back().label = label;
      return;
    }
    if (pending.empty())
      pending_line = lineno;
    pending += " " + t;
    size_t semi;
    while ((semi = pending.find(';')) != std::string::npos) {
      add_insn(pending.substr(0, semi), pending_line);
      pending = pending.substr(semi + 1);
      pending_line = lineno;
    }
    if (trim(pending).empty())
      pending.clear();
  }

  Kernel finish() {
    // drop empty unlabelled blocks (after a final branch), keeping block 0
    std::vector<Block> blocks;
    std::vector<int> remap(k.blocks.size(), -1);
    for (size_t b = 0; b < k.blocks.size(); ++b)
      if (b == 0 || !k.blocks[b].insns.empty() || !k.blocks[b].label.empty()) {
        remap[b] = int(blocks.size());
        blocks.push_back(k.blocks[b]);
      }
    k.blocks = blocks;
    for (Insn &i : k.insns)
      i.block = remap[size_t(i.block)];
    std::map<std::string, int> by_label;
    for (size_t b = 0; b < k.blocks.size(); ++b)
      if (!k.blocks[b].label.empty())
        by_label[k.blocks[b].label] = int(b);
    for (size_t b = 0; b < k.blocks.size(); ++b) {
      Block &blk = k.blocks[b];
      bool falls = true;
      if (!blk.insns.empty()) {
        const Insn &last = k.insns[size_t(blk.insns.back())];
        if (is_branch(last)) {
          auto it = by_label.find(last.operands.empty() ? "" : last.operands[0]);
          if (it == by_label.end())
            throw std::runtime_error("branch to an unknown label: " + last.text);
          blk.succs.push_back(it->second);
          falls = !last.guard.empty();
        } else if (is_exit(last)) {
          falls = !last.guard.empty();
        }
      }
      if (falls && b + 1 < k.blocks.size())
        blk.succs.push_back(int(b + 1));
    }
    for (size_t b = 0; b < k.blocks.size(); ++b)
      for (int s : k.blocks[b].succs)
        k.blocks[size_t(s)].preds.push_back(int(b));
    return k;
  }
};

} // namespace

std::vector<Kernel> parse_functions(const std::string &ptx) {
  std::vector<Kernel> out;
  std::istringstream in(ptx);
  std::string line;
  int lineno = 0, depth = 0;
  std::optional<FunctionReader> fn; // the function whose header or body is being read
  while (std::getline(in, line)) {
    ++lineno;
    size_t c = line.find("//");
    if (c != std::string::npos)
      line = line.substr(0, c);
    std::string t = trim(line);
    if (t.empty())
      continue;
    if (!fn) {
      for (const char *kw : {".entry", ".func"}) {
        size_t at = t.find(kw);
        if (at == std::string::npos || (at > 0 && t[at - 1] != ' ' && t[at - 1] != '\t'))
          continue;
        size_t a = at + std::string(kw).size(), b = t.find('(');
        std::string name = trim(t.substr(a, b == std::string::npos ? std::string::npos : b - a));
        if (name.find(' ') != std::string::npos) // `.func (.param .b32 r) name(`: a result
          name = trim(name.substr(name.rfind(' ') + 1));
        fn.emplace(name, std::string(kw) == ".entry");
        break;
      }
      if (fn && t.back() == ';') // a one-line prototype
        fn.reset();
      continue;
    }
    if (t == "{") { // scopes: only whole-line braces (`{%r1, %r2}` is an operand)
      depth++;
      continue;
    }
    if (depth == 0) {
      if (t.back() == ';') // the header ends in `;`: a declaration, no body
        fn.reset();
      continue; // parameters and directives before the body
    }
    if (t == "}") {
      if (--depth == 0) {
        out.push_back(fn->finish());
        fn.reset();
      }
      continue;
    }
    fn->line(t, lineno);
  }
  if (fn)
    throw std::runtime_error("an incomplete function in the PTX: " + fn->k.name);
  return out;
}

Kernel parse_kernel(const std::string &ptx) {
  for (Kernel &k : parse_functions(ptx))
    if (k.entry)
      return k;
  throw std::runtime_error("no complete .entry in the PTX");
}

bool Kernel::is_tid(const std::string &reg) const {
  auto it = defs.find(reg);
  if (it == defs.end() || it->second.size() != 1)
    return false;
  const Insn &d = insns[size_t(it->second[0])];
  if (d.operands.size() != 2)
    return false;
  if (starts_with(d.op, "mov.") || starts_with(d.op, "cvt."))
    return d.operands[1] == "%tid.x" || is_tid(d.operands[1]);
  // the thread id parameter of the functions etlc makes (lower_kernel.cpp,
  // lower_dynamic.cpp): etl.task.NAME(args, linear, tid, ..),
  // etl.expand.NAME(args, item, tid, ..), etl.dyn.run(args, tid, ..)
  if (entry || !starts_with(d.op, "ld.param."))
    return false;
  int param = name.rfind("etl_$_task_$_", 0) == 0 || name.rfind("etl_$_expand_$_", 0) == 0 ? 2
              : name == "etl_$_dyn_$_run"                                                  ? 1
                                                                                           : -1;
  return param >= 0 && d.operands[1] == "[" + name + "_param_" + std::to_string(param) + "]";
}

} // namespace etl::ptxcheck
