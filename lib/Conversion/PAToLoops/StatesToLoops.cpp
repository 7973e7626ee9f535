//===- StatesToLoops.cpp - merge / merge_states / merge_segments -> loops --===//
//
// The merge operator over any number of states, per element:
//
//   m = max_i lse_i;  m == -inf -> (0, -inf)
//   w_i = exp(lse_i - m);  o = sum_i w_i o_i / sum_i w_i;  lse = m + ln(sum w)
//
// (StateMerge in PagedAttention.h, shared with the GPU kernels.) States with
// w_i == 0 are skipped (their o never reaches the result, even if it is not
// finite). With lse_base2 every lse is converted to base e and back.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/PagedAttention.h"
#include "PagedAttn/Conversion/Passes.h"

#include <cmath>

using namespace mlir;
using namespace mlir::pa;

namespace {

/// Nested loops over every index of `shape` dims of `ref`.
void forEachIndex(Emitter &e, Value ref, int64_t rank,
                  function_ref<void(SmallVector<Value>)> body,
                  SmallVector<Value> prefix = {}) {
  if ((int64_t)prefix.size() == rank)
    return body(prefix);
  e.forEach(e.idx(0), e.dim(ref, prefix.size()), [&](Value iv) {
    SmallVector<Value> next = prefix;
    next.push_back(iv);
    forEachIndex(e, ref, rank, body, next);
  });
}

/// Merges states [begin, end) (lse in base e, o) into oOut[at, :] and
/// lseOut[at] with the shared merge operator.
void emitMerge(Emitter &e, Value begin, Value end,
               function_ref<Value(Value)> lse,
               function_ref<Value(Value, Value)> o, Value d, bool base2,
               Value oOut, Value lseOut, SmallVector<Value> at) {
  Type oElem = cast<MemRefType>(oOut.getType()).getElementType();
  auto exp = [&](Value x) { return e.exp(x); };
  auto log = [&](Value x) { return e.log(x); };
  StateMerge merge(e, ExpBase{/*base2=*/false, exp, log},
                   StateSet{begin, end, lse, /*l=*/nullptr, o});
  e.forEach(e.idx(0), d, [&](Value k) {
    SmallVector<Value> oIdx = at;
    oIdx.push_back(k);
    e.store(e.fromF32(merge.element(k), oElem), oOut, oIdx);
  });
  e.store(merge.lse(base2), lseOut, at);
}

Value toBaseE(Emitter &e, Value lse, bool base2) {
  return base2 ? e.mul(lse, e.f32(std::log(2.0))) : lse;
}

struct MergeToLoops final : OpRewritePattern<MergeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasMemRefSemantics(op))
      return rewriter.notifyMatchFailure(op, "expects the memref form");
    Emitter e{rewriter, op.getLoc()};
    Value oOut = op.getOuts()[0], lseOut = op.getOuts()[1];
    int64_t rank = cast<MemRefType>(lseOut.getType()).getRank();
    int64_t n = op.getNumStates();
    bool base2 = op.getLseBase2();
    Value d = e.dim(oOut, rank);
    forEachIndex(e, lseOut, rank, [&](SmallVector<Value> at) {
      // The states are distinct SSA values: select among them by index.
      auto pick = [&](Value i, function_ref<Value(int64_t)> get) {
        Value v = get(n - 1);
        for (int64_t s = n - 2; s >= 0; --s)
          v = e.select(e.cmpi(arith::CmpIPredicate::eq, i, e.idx(s)), get(s),
                       v);
        return v;
      };
      auto lse = [&](Value i) {
        return pick(i, [&](int64_t s) {
          return toBaseE(e, e.load(op.getStateLse(s), at), base2);
        });
      };
      auto o = [&](Value i, Value k) {
        SmallVector<Value> oi = at;
        oi.push_back(k);
        return pick(i, [&](int64_t s) {
          return e.toF32(e.load(op.getStateO(s), oi));
        });
      };
      emitMerge(e, e.idx(0), e.idx(n), lse, o, d, base2, oOut, lseOut, at);
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct MergeStatesToLoops final : OpRewritePattern<MergeStatesOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeStatesOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasMemRefSemantics(op))
      return rewriter.notifyMatchFailure(op, "expects the memref form");
    Emitter e{rewriter, op.getLoc()};
    Value os = op.getOStates(), ls = op.getLseStates();
    Value oOut = op.getOuts()[0], lseOut = op.getOuts()[1];
    bool base2 = op.getLseBase2();
    Value d = e.dim(oOut, 2);
    forEachIndex(e, lseOut, 2, [&](SmallVector<Value> at) {
      Value s = at[0], h = at[1];
      auto lse = [&](Value i) {
        return toBaseE(e, e.load(ls, {s, i, h}), base2);
      };
      auto o = [&](Value i, Value k) { return e.toF32(e.load(os, {s, i, h, k})); };
      emitMerge(e, e.idx(0), e.dim(os, 1), lse, o, d, base2, oOut, lseOut,
                at);
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct MergeSegmentsToLoops final : OpRewritePattern<MergeSegmentsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeSegmentsOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasMemRefSemantics(op))
      return rewriter.notifyMatchFailure(op, "expects the memref form");
    Emitter e{rewriter, op.getLoc()};
    Value os = op.getOPart(), ls = op.getLsePart(), seg = op.getSegments();
    Value oOut = op.getOuts()[0], lseOut = op.getOuts()[1];
    bool base2 = op.getLseBase2();
    Value d = e.dim(oOut, 2);
    Value items = e.dim(os, 0);
    emitIndptrChecks(e, seg, "segments", items, "the partial states");
    emitEntryCount(e, seg, "segments", e.add(e.dim(oOut, 0), e.idx(1)),
                   "one more than the rows of o");
    forEachIndex(e, lseOut, 2, [&](SmallVector<Value> at) {
      Value s = at[0], h = at[1];
      Value begin = e.loadIdx(seg, s);
      Value end = e.loadIdx(seg, e.add(s, e.idx(1)));
      auto lse = [&](Value i) { return toBaseE(e, e.load(ls, {i, h}), base2); };
      auto o = [&](Value i, Value k) { return e.toF32(e.load(os, {i, h, k})); };
      emitMerge(e, begin, end, lse, o, d, base2, oOut, lseOut, at);
    });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::pa::populatePAStatesToLoopsPatterns(RewritePatternSet &patterns) {
  patterns.add<MergeToLoops, MergeStatesToLoops, MergeSegmentsToLoops>(
      patterns.getContext());
}
