//===- Wgmma.cpp - Hopper warpgroup MMAs for the pa kernels ---------------===//
//
// WgmmaOps (KernelBuilder.h): matrix descriptors, wgmma.mma_async as inline
// PTX, and the fences around it.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::pa::gpukernel;

Value WgmmaOps::address(Value memref) {
  return arith::IndexCastOp::create(
      em.b, em.loc, em.b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(em.b, em.loc, memref));
}

Value WgmmaOps::descriptor(Value addr, int64_t leadingBytes) {
  // PTX ISA, "Matrix Descriptor Format": start address >> 4 in bits 0-13,
  // leading byte offset >> 4 in bits 16-29, stride byte offset >> 4 in
  // bits 32-45 (1024: 8 rows of 128 bytes, wgmmaIndex), base offset 0 in
  // bits 49-51 (every tile starts on a 1024-byte boundary of shared memory
  // aligned to 1024), layout 1 (128-byte swizzle) in bits 62-63.
  OpBuilder &b = em.b;
  Type i64 = b.getI64Type();
  auto c64 = [&](uint64_t v) -> Value {
    return arith::ConstantOp::create(b, em.loc, b.getIntegerAttr(i64, v));
  };
  Value start = arith::AndIOp::create(
      b, em.loc, arith::ShRUIOp::create(b, em.loc, addr, c64(4)),
      c64(0x3FFF));
  uint64_t fields = (uint64_t(leadingBytes >> 4) << 16) |
                    (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
  return arith::OrIOp::create(b, em.loc, start, c64(fields));
}

Value WgmmaOps::advance(Value desc, int64_t bytes) {
  // The start address field holds addresses below 256 KB: adding to the
  // descriptor never carries out of it (CUTLASS's DescriptorIterator).
  if (bytes == 0)
    return desc;
  return em.add(desc, arith::ConstantOp::create(
                          em.b, em.loc,
                          em.b.getIntegerAttr(em.b.getI64Type(), bytes / 16)));
}

SmallVector<Value> WgmmaOps::fenceOperands(ArrayRef<Value> vs) {
  std::string cons;
  SmallVector<Type> types;
  for (Value v : vs) {
    cons += v.getType().isF32() ? "=f," : "=r,";
    types.push_back(v.getType());
  }
  for (size_t i = 0; i < vs.size(); ++i)
    cons += std::to_string(i) + (i + 1 < vs.size() ? "," : "");
  return em.inlineAsm("", cons, types, vs, /*sideEffects=*/true);
}

SmallVector<Value> WgmmaOps::mmaAsync(int64_t n, ArrayRef<Value> acc,
                                      Value aDesc, ArrayRef<Value> aRegs,
                                      Value bDesc, bool transB) {
  int64_t regs = n / 2;
  StringRef t = elemType.isBF16() ? "bf16" : "f16";
  SmallVector<Value> operands(acc.begin(), acc.end());
  std::string cons;
  for (int64_t i = 0; i < regs; ++i)
    cons += "=f,";
  for (int64_t i = 0; i < static_cast<int64_t>(acc.size()); ++i)
    cons += std::to_string(i) + ",";
  int64_t aIdx = regs + acc.size();
  if (aDesc) {
    operands.push_back(aDesc);
    cons += "l,";
  } else {
    operands.append(aRegs.begin(), aRegs.end());
    cons += "r,r,r,r,";
  }
  int64_t bIdx = aIdx + (aDesc ? 1 : 4);
  operands.push_back(bDesc);
  operands.push_back(em.i32(acc.empty() ? 0 : 1));
  cons += "l,r";
  std::string text;
  llvm::raw_string_ostream os(text);
  // scale-d is a predicate: D = A B + D when the last operand is 1.
  os << "{\n.reg .pred p;\nsetp.ne.b32 p, $" << bIdx + 1 << ", 0;\n"
     << "wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << t << "."
     << t << " {";
  for (int64_t i = 0; i < regs; ++i)
    os << (i ? ", $" : "$") << i;
  os << "}, ";
  if (aDesc)
    os << "$" << aIdx;
  else
    os << "{$" << aIdx << ", $" << aIdx + 1 << ", $" << aIdx + 2 << ", $"
       << aIdx + 3 << "}";
  // Then B, scale-d, scale-a, scale-b, [transpose-a,] transpose-b.
  os << ", $" << bIdx << ", p, 1, 1, " << (aDesc ? "0, " : "")
     << (transB ? 1 : 0) << ";\n}";
  return em.inlineAsm(text, cons,
                      SmallVector<Type>(regs, em.b.getF32Type()), operands,
                      /*sideEffects=*/true);
}

void WgmmaOps::fence() { NVVM::WgmmaFenceAlignedOp::create(em.b, em.loc); }

void WgmmaOps::commit() { NVVM::WgmmaGroupSyncAlignedOp::create(em.b, em.loc); }

void WgmmaOps::wait(int64_t pending) {
  NVVM::WgmmaWaitGroupSyncOp::create(em.b, em.loc, pending);
}

void WgmmaOps::fenceProxyAsync() {
  MLIRContext *ctx = em.b.getContext();
  NVVM::FenceProxyOp::create(
      em.b, em.loc, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
}
