//===- target/wgmma.h - wgmma's NVPTX forms (inline PTX) -----------------===//
//
// What this owns: the inline-PTX builders target/nvptx.cpp's machine calls
// for Machine's wgmma family (target/machine.h; target/wgmma.cpp says how).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "target/machine.h"

namespace etl {

llvm::Value *nvptx_wgmma_smem_addr(Builder &b, llvm::Value *p);
void nvptx_wgmma_fence(Builder &b);
void nvptx_wgmma_commit(Builder &b);
std::vector<llvm::Value *> nvptx_wgmma_mma(Builder &b, unsigned n, bool bf16, bool trans_b,
                                           llvm::Value *desc_a, llvm::Value *desc_b,
                                           const std::vector<llvm::Value *> &acc);
std::vector<llvm::Value *> nvptx_wgmma_wait(Builder &b, unsigned pending,
                                            const std::vector<llvm::Value *> &acc);

} // namespace etl
