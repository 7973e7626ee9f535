//===- WarpShuffleReduce.cpp - subgroup_reduce -> butterfly shuffles -------===//

#include "PagedAttn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::pa {
#define GEN_PASS_DEF_PAWARPSHUFFLEREDUCE
#include "PagedAttn/Transforms/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;

namespace {
/// The binary op combining two partial results of `kind`, or null.
Value combine(OpBuilder &b, Location loc, gpu::AllReduceOperation kind,
              Value x, Value y) {
  bool isFloat = isa<FloatType>(x.getType());
  switch (kind) {
  case gpu::AllReduceOperation::ADD:
    return isFloat ? arith::AddFOp::create(b, loc, x, y).getResult()
                   : arith::AddIOp::create(b, loc, x, y).getResult();
  case gpu::AllReduceOperation::MUL:
    return isFloat ? arith::MulFOp::create(b, loc, x, y).getResult()
                   : arith::MulIOp::create(b, loc, x, y).getResult();
  case gpu::AllReduceOperation::MAXNUMF:
    return arith::MaxNumFOp::create(b, loc, x, y);
  case gpu::AllReduceOperation::MAXIMUMF:
    return arith::MaximumFOp::create(b, loc, x, y);
  case gpu::AllReduceOperation::MINNUMF:
    return arith::MinNumFOp::create(b, loc, x, y);
  case gpu::AllReduceOperation::MINIMUMF:
    return arith::MinimumFOp::create(b, loc, x, y);
  default:
    return Value();
  }
}

/// gpu.subgroup_reduce (cluster of N contiguous lanes) -> log2(N) xor
/// shuffles.
struct SubgroupReduceToShuffles final
    : OpRewritePattern<gpu::SubgroupReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(gpu::SubgroupReduceOp op,
                                PatternRewriter &rewriter) const override {
    Type t = op.getValue().getType();
    if (!t.isF32() && !t.isSignlessInteger(32))
      return rewriter.notifyMatchFailure(op, "expects a 32-bit scalar");
    uint32_t size = op.getClusterSize().value_or(32);
    if (op.getClusterStride() != 1 || !llvm::isPowerOf2_32(size) || size > 32)
      return rewriter.notifyMatchFailure(op, "unsupported cluster");
    Location loc = op.getLoc();
    Value acc = op.getValue();
    for (uint32_t offset = size / 2; offset >= 1; offset /= 2) {
      auto shuffle = gpu::ShuffleOp::create(rewriter, loc, acc, offset,
                                            /*width=*/32,
                                            gpu::ShuffleMode::XOR);
      Value next = combine(rewriter, loc, op.getOp(), acc,
                           shuffle.getShuffleResult());
      if (!next)
        return rewriter.notifyMatchFailure(op, "unsupported reduction");
      acc = next;
    }
    rewriter.replaceOp(op, acc);
    return success();
  }
};

struct PAWarpShuffleReduce final
    : pa::impl::PAWarpShuffleReduceBase<PAWarpShuffleReduce> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SubgroupReduceToShuffles>(&getContext());
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};
} // namespace
