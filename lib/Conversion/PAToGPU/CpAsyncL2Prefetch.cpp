//===- CpAsyncL2Prefetch.cpp - an L2 prefetch size on cp.async -------------===//
//
// pa-cp-async-l2-prefetch: see the pass description.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::pa {
#define GEN_PASS_DEF_PACPASYNCL2PREFETCH
#include "PagedAttn/Conversion/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;
using mlir::pa::gpukernel::KernelEmitter;

namespace {

/// nvvm.cp.async.shared.global -> the same copy as inline PTX with
/// `.L2::<bytes>B` (LLVM's cp.async intrinsics have no prefetch size).
struct CpAsyncPrefetch final : OpRewritePattern<NVVM::CpAsyncOp> {
  CpAsyncPrefetch(MLIRContext *ctx, int64_t bytes)
      : OpRewritePattern(ctx), bytes(bytes) {}

  LogicalResult matchAndRewrite(NVVM::CpAsyncOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    // The op's verifier admits .ca (4, 8 or 16 bytes) and .cg (16).
    StringRef cache =
        op.getModifier() == NVVM::LoadCacheModifierKind::CG ? "cg" : "ca";
    // The shared address as the 32-bit window offset ("r"), the global one
    // as a 64-bit generic-width integer ("l"); the source size, when the
    // copy zero-fills, as a 32-bit register.
    Value dst = LLVM::PtrToIntOp::create(rw, loc, rw.getI32Type(), op.getDst());
    Value src = LLVM::PtrToIntOp::create(rw, loc, rw.getI64Type(), op.getSrc());
    SmallVector<Value> operands{dst, src};
    std::string text = llvm::formatv("cp.async.{0}.shared.global.L2::{1}B "
                                     "[$0], [$1], {2}",
                                     cache, bytes, op.getSize())
                           .str();
    std::string constraints = "r,l";
    if (Value n = op.getCpSize()) {
      operands.push_back(n);
      text += ", $2";
      constraints += ",r";
    }
    text += ";";
    KernelEmitter{{rw, loc}}.inlineAsm(text, constraints, {}, operands,
                                       /*sideEffects=*/true);
    rw.eraseOp(op);
    return success();
  }

  int64_t bytes;
};

struct PACpAsyncL2Prefetch final
    : pa::impl::PACpAsyncL2PrefetchBase<PACpAsyncL2Prefetch> {
  using Base::Base;

  void runOnOperation() override {
    if (bytes == 0)
      return;
    if (bytes != 64 && bytes != 128 && bytes != 256) {
      getOperation()->emitError()
          << "pa-cp-async-l2-prefetch: bytes must be 0, 64, 128 or 256, got "
          << bytes.getValue();
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<CpAsyncPrefetch>(&getContext(), bytes);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
