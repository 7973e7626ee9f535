//===- WarpShuffleReduce.cpp - subgroup_reduce -> butterfly shuffles -------===//
//
// Upstream's subgroup-reduce lowerings, as a pass of the pa GPU pipeline.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::pa {
#define GEN_PASS_DEF_PAWARPSHUFFLEREDUCE
#include "PagedAttn/Transforms/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;

namespace {
struct PAWarpShuffleReduce final
    : pa::impl::PAWarpShuffleReduceBase<PAWarpShuffleReduce> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGpuLowerClusteredSubgroupReduceToShufflePatterns(
        patterns, /*subgroupSize=*/32, /*shuffleBitwidth=*/32);
    populateGpuLowerSubgroupReduceToShufflePatterns(
        patterns, /*subgroupSize=*/32, /*shuffleBitwidth=*/32);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
