//===- CacheBlendToLoops.cpp - pack_mask, kv_deviation, select_topk -> loops ===//

#include "PagedAttn/Conversion/PagedAttention.h"
#include "PagedAttn/Conversion/Passes.h"

using namespace mlir;
using namespace mlir::pa;

namespace {

/// Segmented packbits, little-endian: bit j of byte k is element 8k + j.
struct PackMaskToLoops final : OpRewritePattern<PackMaskOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PackMaskOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasMemRefSemantics(op))
      return rewriter.notifyMatchFailure(op, "expects the memref form");
    Emitter e{rewriter, op.getLoc()};
    Value mask = op.getMask(), indptr = op.getIndptr();
    Value packed = op.getOuts()[0], packedIndptr = op.getOuts()[1];
    Type maskElem = cast<MemRefType>(mask.getType()).getElementType();
    Value capacity = e.dim(packed, 0);
    emitIndptrChecks(e, indptr, "mask indptr", e.dim(mask, 0), "the mask");
    Value batch = e.sub(e.dim(indptr, 0), e.idx(1));
    Value total = e.forLoop(e.idx(0), batch, {e.idx(0)}, [&](Value b,
                                                              ValueRange base) {
      e.store(e.toI32(base[0]), packedIndptr, {b});
      Value start = e.loadIdx(indptr, b);
      Value n = e.sub(e.loadIdx(indptr, e.add(b, e.idx(1))), start);
      Value bytes = e.divui(e.add(n, e.idx(7)), e.idx(8));
      e.assertTrue(e.cmpi(arith::CmpIPredicate::sle, e.add(base[0], bytes),
                          capacity),
                   "packed mask out too small");
      e.forEach(e.idx(0), bytes, [&](Value k) {
        Value byte = e.forLoop(e.idx(0), e.idx(8), {e.i32(0)}, [&](Value j,
                                                                   ValueRange acc) {
          Value i = e.add(e.mul(k, e.idx(8)), j);
          Value inRange = e.cmpi(arith::CmpIPredicate::slt, i, n);
          Value bit = e.ifThenElse(
              inRange, {e.b.getI32Type()},
              [&]() -> SmallVector<Value> {
                Value m = e.load(mask, {e.add(start, i)});
                Value zero = arith::ConstantOp::create(
                    e.b, e.loc, e.b.getIntegerAttr(maskElem, 0));
                Value set = e.cmpi(arith::CmpIPredicate::ne, m, zero);
                return {arith::ExtUIOp::create(e.b, e.loc, e.b.getI32Type(),
                                               set)};
              },
              [&]() -> SmallVector<Value> { return {e.i32(0)}; })[0];
          Value shifted = arith::ShLIOp::create(e.b, e.loc, bit, e.toI32(j));
          return SmallVector<Value>{
              arith::OrIOp::create(e.b, e.loc, acc[0], shifted)};
        }).getResult(0);
        Value b8 = arith::TruncIOp::create(e.b, e.loc, e.b.getI8Type(), byte);
        e.store(b8, packed, {e.add(base[0], k)});
      });
      return SmallVector<Value>{e.add(base[0], bytes)};
    }).getResult(0);
    e.store(e.toI32(total), packedIndptr, {batch});
    rewriter.eraseOp(op);
    return success();
  }
};

/// dev[t] = sqrt(sum_{h,d} (new - cached)^2), accumulated in f32.
struct KVDeviationToLoops final : OpRewritePattern<KVDeviationOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KVDeviationOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasMemRefSemantics(op))
      return rewriter.notifyMatchFailure(op, "expects the memref form");
    Emitter e{rewriter, op.getLoc()};
    Value n = op.getNewRows(), c = op.getCachedRows(), dev = op.getOuts()[0];
    e.forEach(e.idx(0), e.dim(n, 0), [&](Value t) {
      Value sum = e.forLoop(e.idx(0), e.dim(n, 1), {e.f32(0)}, [&](Value h,
                                                                   ValueRange a) {
        scf::ForOp s = e.forLoop(e.idx(0), e.dim(n, 2), {a[0]}, [&](Value k,
                                                               ValueRange a2) {
          Value diff = e.sub(e.toF32(e.load(n, {t, h, k})),
                             e.toF32(e.load(c, {t, h, k})));
          return SmallVector<Value>{e.add(a2[0], e.mul(diff, diff))};
        });
        return SmallVector<Value>{s.getResult(0)};
      }).getResult(0);
      e.store(e.sqrt(sum), dev, {t});
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// Per request: token i is selected iff fewer than k = ceil(ratio * n) tokens
/// rank before it (larger deviation, or equal deviation and lower index).
/// Selected positions are written in increasing order.
struct SelectTopKToLoops final : OpRewritePattern<SelectTopKOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SelectTopKOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasMemRefSemantics(op))
      return rewriter.notifyMatchFailure(op, "expects the memref form");
    Emitter e{rewriter, op.getLoc()};
    Value dev = op.getDeviation(), indptr = op.getIndptr();
    Value positions = op.getOuts()[0], outIndptr = op.getOuts()[1];
    Value capacity = e.dim(positions, 0);
    Value ratio = arith::ConstantOp::create(e.b, e.loc, op.getRatioAttr());
    emitIndptrChecks(e, indptr, "indptr", e.dim(dev, 0), "deviation");
    Value batch = e.sub(e.dim(indptr, 0), e.idx(1));
    Value total = e.forLoop(e.idx(0), batch, {e.idx(0)}, [&](Value b,
                                                              ValueRange base) {
      e.store(e.toI32(base[0]), outIndptr, {b});
      Value start = e.loadIdx(indptr, b);
      Value n = e.sub(e.loadIdx(indptr, e.add(b, e.idx(1))), start);
      Value nI64 = arith::IndexCastOp::create(e.b, e.loc, e.b.getI64Type(), n);
      Value nF = arith::SIToFPOp::create(e.b, e.loc, e.b.getF64Type(), nI64);
      Value kF = math::CeilOp::create(e.b, e.loc, e.mul(ratio, nF));
      Value kI = arith::FPToSIOp::create(e.b, e.loc, e.b.getI64Type(), kF);
      Value k = arith::IndexCastOp::create(e.b, e.loc, e.b.getIndexType(), kI);
      e.assertTrue(e.cmpi(arith::CmpIPredicate::sle, e.add(base[0], k),
                          capacity),
                   "select_topk positions out too small");
      scf::ForOp next = e.forLoop(e.idx(0), n, {base[0]}, [&](Value i,
                                                         ValueRange w) {
        Value di = e.load(dev, {e.add(start, i)});
        e.assertTrue(e.cmpf(arith::CmpFPredicate::ORD, di, di),
                     "deviation is NaN");
        Value rank = e.forLoop(e.idx(0), n, {e.idx(0)}, [&](Value j,
                                                            ValueRange r) {
          Value dj = e.load(dev, {e.add(start, j)});
          Value before = arith::OrIOp::create(
              e.b, e.loc, e.cmpf(arith::CmpFPredicate::OGT, dj, di),
              e.andi(e.cmpf(arith::CmpFPredicate::OEQ, dj, di),
                     e.cmpi(arith::CmpIPredicate::ult, j, i)));
          return SmallVector<Value>{
              e.select(before, e.add(r[0], e.idx(1)), r[0])};
        }).getResult(0);
        Value selected = e.cmpi(arith::CmpIPredicate::ult, rank, k);
        return e.ifThenElse(
            selected, {e.b.getIndexType()},
            [&]() -> SmallVector<Value> {
              e.store(e.toI32(i), positions, {w[0]});
              return {e.add(w[0], e.idx(1))};
            },
            [&]() -> SmallVector<Value> { return {w[0]}; });
      });
      return SmallVector<Value>{next.getResult(0)};
    }).getResult(0);
    e.store(e.toI32(total), outIndptr, {batch});
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::pa::populatePACacheBlendToLoopsPatterns(RewritePatternSet &patterns) {
  patterns.add<PackMaskToLoops, KVDeviationToLoops, SelectTopKToLoops>(
      patterns.getContext());
}
