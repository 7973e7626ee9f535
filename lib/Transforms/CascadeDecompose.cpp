//===- CascadeDecompose.cpp - pa.cascade -> per-level attention + merge ----===//

#include "TensorUtils.h"

#include "PagedAttn/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::pa {
#define GEN_PASS_DEF_PACASCADEDECOMPOSE
#include "PagedAttn/Transforms/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;
using namespace mlir::pa;

namespace {
/// pa.cascade (L levels) -> L x pa.prefill + pa.merge (tensor form).
struct DecomposeCascade final : OpRewritePattern<CascadeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CascadeOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getNumResults() != 2)
      return rewriter.notifyMatchFailure(op, "expects the tensor form");
    Location loc = op.getLoc();
    int64_t levels = op.getNumLevels();
    SmallVector<Value> states;
    for (int64_t l = 0; l < levels; ++l) {
      Value o0 = emptyLike(rewriter, loc, op.getOuts()[0]);
      Value l0 = emptyLike(rewriter, loc, op.getOuts()[1]);
      PrefillMasking masking;
      masking.causal = op.getCausal() && l == levels - 1;
      auto prefill = PrefillOp::create(rewriter, loc, op, op.getQoIndptrs()[l],
                                       op.getPageTable(l), ValueRange{o0, l0},
                                       masking);
      states.append({prefill.getResult(0), prefill.getResult(1)});
    }
    auto merge = MergeOp::create(rewriter, loc, op.getResultTypes(), states,
                                 op.getOuts(), op.getLseBase2Attr());
    rewriter.replaceOp(op, merge);
    return success();
  }
};

struct PACascadeDecompose final
    : pa::impl::PACascadeDecomposeBase<PACascadeDecompose> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeCascade>(&getContext());
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};
} // namespace
