//===- PACanonicalize.cpp - canonicalizations from the merge algebra -------===//
//
// The merge operator is commutative and associative with identity (0, -inf);
// a cascade of one level is plain attention. The patterns below follow from
// that algebra and only apply to the tensor (value) form.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Dialect/PA.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::pa;

static bool isSplatConstant(Value v, function_ref<bool(APFloat)> pred) {
  DenseFPElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return false;
  return pred(attr.getSplatValue<APFloat>());
}

bool mlir::pa::isIdentityState(Value o, Value lse) {
  return isSplatConstant(lse,
                         [](APFloat f) { return f.isInfinity() && f.isNegative(); }) &&
         isSplatConstant(o, [](APFloat f) { return f.isZero(); });
}

static bool hasTensorSemantics(Operation *op) {
  return llvm::all_of(op->getOperandTypes(),
                      [](Type t) { return isa<RankedTensorType>(t); });
}

namespace {
/// merge(..., (0, -inf), ...) -> merge(...): the identity state contributes
/// nothing. Keeps at least one state.
///
///   %r:2 = pa.merge states(%o, %l, %zero, %ninf) outs(...)
///   ==> %r:2 = pa.merge states(%o, %l) outs(...)
struct DropIdentityStates final : OpRewritePattern<MergeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasTensorSemantics(op))
      return failure();
    SmallVector<Value> kept;
    for (int64_t i = 0, e = op.getNumStates(); i < e; ++i)
      if (!isIdentityState(op.getStateO(i), op.getStateLse(i)))
        kept.append({op.getStateO(i), op.getStateLse(i)});
    if (kept.empty())
      kept.append({op.getStateO(0), op.getStateLse(0)});
    if ((int64_t)kept.size() == 2 * op.getNumStates())
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.getStatesMutable().assign(kept); });
    return success();
  }
};

/// merge(merge(a, b), c) -> merge(a, b, c): associativity. The inner merge
/// stays if it has other users.
struct FlattenNestedMerges final : OpRewritePattern<MergeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasTensorSemantics(op))
      return failure();
    SmallVector<Value> states;
    bool changed = false;
    for (int64_t i = 0, e = op.getNumStates(); i < e; ++i) {
      Value o = op.getStateO(i), lse = op.getStateLse(i);
      auto inner = o.getDefiningOp<MergeOp>();
      if (inner && lse.getDefiningOp() == inner && inner.getNumResults() == 2 &&
          o == inner.getResult(0) && lse == inner.getResult(1) &&
          inner.getLseBase2() == op.getLseBase2()) {
        llvm::append_range(states, inner.getStates());
        changed = true;
        continue;
      }
      states.append({o, lse});
    }
    if (!changed)
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.getStatesMutable().assign(states); });
    return success();
  }
};

/// merge(a) -> a.
struct FoldSingleStateMerge final : OpRewritePattern<MergeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasTensorSemantics(op) || op.getNumStates() != 1 ||
        op.getStateO(0).getType() != op.getResult(0).getType())
      return failure();
    rewriter.replaceOp(op, {op.getStateO(0), op.getStateLse(0)});
    return success();
  }
};

/// A cascade of one level is plain prefill attention over that level.
///
///   pa.cascade q(%q) kv(%kv) qo_indptrs(%qo) kv_indptrs(%ip) ...
///   ==> pa.prefill q(%q, %qo) kv(%kv) pages(%ip, %ix, %lp) ...
struct OneLevelCascadeToPrefill final : OpRewritePattern<CascadeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CascadeOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getNumLevels() != 1)
      return failure();
    PrefillMasking masking;
    masking.causal = op.getCausal();
    auto prefill =
        PrefillOp::create(rewriter, op.getLoc(), op, op.getQoIndptrs()[0],
                          op.getPageTable(0), op.getOuts(), masking);
    rewriter.replaceOp(op, prefill);
    return success();
  }
};
} // namespace

void MergeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<DropIdentityStates, FlattenNestedMerges, FoldSingleStateMerge>(
      context);
}

void CascadeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<OneLevelCascadeToPrefill>(context);
}
