//===- lower/lower_tile_dot.cpp - The tile IR path: Contraction (FMA dot) -===//
//
// What this owns: `dot` on the exact FMA path (the default `precision =
// ieee`): of f32 tiles, of f16/bf16 ones that tensor cores cannot tile
// (tile/mma.cpp fma_dot: one row, or a shape off m16n8k16), and of f32 ones
// with `precision = tf32` off m16n8k8 (or one row); for the last two the
// DotFmaPath remark says why.
// Their registers hold the elements as f32 values: staged and multiplied
// as f32. Tensor-core dots are lower_tile_mma.cpp's.
//
// b [K, N] arrives in its producer's layout (a load's coalesced one,
// usually) and is written once to the shared scratch with tile_convert's
// scheme (tile_scratch_write: row-major, each 16-byte chunk XORed with its
// 128-byte line's number mod 8). a [M, K] arrives either in
// dot_operand_layout (the layout pass's choice when its rows fit in
// kDotRegsA registers per thread: each thread holds the whole K of the rows
// of its outputs, read from registers with k a constant of the fully
// unrolled K loop) or, larger or one row ([K]), in any layout, staged like
// b (at element 0, b at the next whole line). The CTA meets at a barrier,
// and every thread runs the K loop over its own outputs in the result's
// layout (tile/layout.h fma_dot_layout: up to 4 consecutive columns per
// thread). Per k it reads one b vector per run of consecutive columns (up
// to 128 bits; the warp's runs of a row fill distinct banks) and, when a
// is staged, one a element per distinct row among its registers (lanes of
// one row share the word; rows of a warp fall in different banks by the
// XOR), then adds a product into each output register. The sums are SSA values: `acc += dot(..)` in
// a `for` adds them to the loop's iter_arg, which stays in registers across the loop. A second
// barrier frees the scratch for the next user (scratch_release: only where
// tile/smem.cpp's plan keeps it; the operands sit at the op's buffer).
//
// Numerics: per output, the products are added in the order of k from 0.0
// (mul and add; `--fmad` decides whether the target fuses them), then the
// IR's `map.add` adds the sum to the accumulator. Products of f16 or bf16
// values are exact in f32, so fused or not, the sums are the same bits.
//
//===----------------------------------------------------------------------===//
#include "lower/body_lowerer.h"

#include "tile/layout.h"
#include "tile/passes.h"

#include <llvm/IR/Constants.h>

#include <map>

namespace etl {

void BodyLowerer::tile_dot(const TOp &op) {
  if (mma_dot(*tf, op))
    return tile_mma_dot(op);
  const int ia = op.operands.at(0), ib = op.operands.at(1), ir = op.results.at(0);
  const TValue &av = tf->values[size_t(ia)], &bv = tf->values[size_t(ib)];
  const TValue &rv = tf->values[size_t(ir)];
  std::string why;
  if (!fma_dot(*tf, op, &why) || rv.shape.size() != av.shape.size())
    throw LowerError("tile IR dot needs f32, f16 or bf16 [M, K] (or [K]) and [K, N] tiles");
  if (!why.empty()) { // 16-bit or tf32 operands off tensor cores: say why
    auto type = [](const TValue &v) {
      std::string s = std::string(spelling(v.elem)) + "[";
      for (size_t i = 0; i < v.shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(v.shape[i]);
      return s + "]";
    };
    remarks.push_back({op.loc, {type(av), type(bv), why}});
  }
  const Layout &la = layout_of(ia), &lb = layout_of(ib), &lr = layout_of(ir);
  const bool gemv = av.shape.size() == 1;
  const int64_t K = bv.shape[0], N = bv.shape[1], M = gemv ? 1 : av.shape[0];
  // a in registers when the layout pass gave it dot_operand_layout and
  // every (row, k) a thread needs is one of its registers; else staged
  // like b.
  std::map<uint32_t, uint32_t> a_reg;
  bool a_regs = !gemv && la == dot_operand_layout(lr, 0, av.shape) && K <= 64;
  for (uint32_t i = 0; a_regs && i < la.num_regs(); ++i)
    a_reg.emplace(la.apply(i, 0, 0), i);

  // Per output register: its column (b) and the slot of its row (a); a
  // padded row or column reads element 0 (its sum is never stored).
  const unsigned nregs = lr.num_regs();
  const unsigned w = scratch_vec(lr, rv.shape, 4); // columns per b read
  auto clamp = [&](llvm::Value *c, int64_t n, unsigned d) -> llvm::Value * {
    if ((int64_t(1) << lr.lg[d]) == n)
      return c;
    return b.CreateSelect(b.CreateICmpULT(c, b.getInt64(uint64_t(n))), c, b.getInt64(0));
  };
  std::vector<llvm::Value *> col(nregs);
  std::vector<size_t> slot(nregs, 0);
  std::vector<llvm::Value *> rows; // distinct rows of this thread's outputs
  std::map<uint32_t, size_t> row_of;
  std::vector<uint32_t> row_keys; // the row's field of the register pattern
  const unsigned last = lr.rank() - 1;
  for (uint32_t r = 0; r < nregs; ++r) {
    std::vector<llvm::Value *> c = reg_coords(lr, r);
    col[r] = clamp(c[last], N, last);
    if (gemv)
      continue;
    uint32_t key = lr.apply(r, 0, 0) >> lr.field_offset(0) & ((1u << lr.lg[0]) - 1u);
    auto [it, fresh] = row_of.emplace(key, rows.size());
    if (fresh) {
      rows.push_back(clamp(c[0], M, 0));
      row_keys.push_back(key);
    }
    slot[r] = it->second;
  }

  // a[row, k] of row slot j from registers (k a constant), or nullptr.
  auto a_at = [&](size_t j, int64_t k) -> llvm::Value * {
    auto it = a_reg.find(la.pack({int64_t(row_keys[j]), k}));
    return it == a_reg.end() ? nullptr : tregs[size_t(ia)].at(it->second);
  };
  for (size_t j = 0; a_regs && j < rows.size(); ++j)
    for (int64_t k = 0; a_regs && k < K; ++k)
      a_regs = a_at(j, k) != nullptr;

  const int64_t line = 32; // f32 words per 128-byte line
  const int64_t b_base = a_regs ? 0 : (av.numel() + line - 1) / line * line;
  note_scratch(b_base + (bv.numel() + line - 1) / line * line);
  if (!a_regs)
    tile_scratch_write(la, tregs[size_t(ia)], ElemType::F32, av.shape, 0);
  tile_scratch_write(lb, tregs[size_t(ib)], ElemType::F32, bv.shape, b_base);
  m.barrier(b);
  llvm::Type *vty = llvm::FixedVectorType::get(f32, w);
  auto step = [&](std::vector<llvm::Value *> &acc, llvm::Value *k) {
    std::vector<llvm::Value *> x;
    if (gemv)
      x.push_back(scratch_load(f32, tile_scratch_index({k}, av.shape, 4, 0)));
    for (size_t j = 0; j < rows.size(); ++j)
      x.push_back(a_regs ? a_at(j, int64_t(llvm::cast<llvm::ConstantInt>(k)->getZExtValue()))
                         : scratch_load(f32, tile_scratch_index({rows[j], k}, av.shape, 4, 0)));
    for (uint32_t r = 0; r < nregs; r += w) {
      llvm::Value *at = tile_scratch_index({k, col[r]}, bv.shape, 4, b_base);
      std::vector<llvm::Value *> y;
      if (w == 1) {
        y.push_back(scratch_load(f32, at));
      } else {
        llvm::Value *v = scratch_load(vty, at);
        for (unsigned j = 0; j < w; ++j)
          y.push_back(b.CreateExtractElement(v, uint64_t(j)));
      }
      for (unsigned j = 0; j < w; ++j)
        acc[r + j] = b.CreateFAdd(acc[r + j], b.CreateFMul(x[slot[r + j]], y[j]));
    }
  };

  std::vector<llvm::Value *> acc(nregs, llvm::ConstantFP::get(f32, 0.0));
  // K steps per loop iteration: all of a short K (straight-line code), else
  // the largest power of two up to 8 that divides it.
  // a in registers needs k constant: all of K (at most kDotRegsA).
  int64_t unroll = K <= 16 || a_regs ? K : K % 8 == 0 ? 8 : K % 4 == 0 ? 4 : K % 2 == 0 ? 2 : 1;
  if (unroll == K) {
    for (int64_t k = 0; k < K; ++k)
      step(acc, b.getInt64(uint64_t(k)));
  } else {
    llvm::BasicBlock *pre = b.GetInsertBlock();
    auto *head = llvm::BasicBlock::Create(ctx, "tdot.head", fn);
    auto *body = llvm::BasicBlock::Create(ctx, "tdot.body", fn);
    auto *done = llvm::BasicBlock::Create(ctx, "tdot.end", fn);
    b.CreateBr(head);
    b.SetInsertPoint(head);
    llvm::PHINode *iv = b.CreatePHI(i64, 2, "tdot.k");
    iv->addIncoming(b.getInt64(0), pre);
    std::vector<llvm::PHINode *> phis;
    for (llvm::Value *a0 : acc) {
      llvm::PHINode *p = b.CreatePHI(f32, 2);
      p->addIncoming(a0, pre);
      phis.push_back(p);
    }
    b.CreateCondBr(b.CreateICmpSLT(iv, b.getInt64(uint64_t(K))), body, done);
    b.SetInsertPoint(body);
    std::vector<llvm::Value *> cur(phis.begin(), phis.end());
    for (int64_t j = 0; j < unroll; ++j)
      step(cur, b.CreateAdd(iv, b.getInt64(uint64_t(j))));
    llvm::BasicBlock *latch = b.GetInsertBlock();
    for (size_t r = 0; r < phis.size(); ++r)
      phis[r]->addIncoming(cur[r], latch);
    iv->addIncoming(b.CreateAdd(iv, b.getInt64(uint64_t(unroll))), latch);
    b.CreateBr(head);
    b.SetInsertPoint(done);
    acc.assign(phis.begin(), phis.end());
  }
  scratch_release();
  tregs[size_t(ir)] = acc;
}

} // namespace etl
