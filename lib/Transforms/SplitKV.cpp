//===- SplitKV.cpp - pa.decode -> decode_partial over chunks + merge -------===//

#include "PagedAttn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::pa {
#define GEN_PASS_DEF_PASPLITKV
#include "PagedAttn/Transforms/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;
using namespace mlir::pa;

namespace {
Value dimOf(OpBuilder &b, Location loc, Value t, int64_t d) {
  return tensor::DimOp::create(b, loc, t, d);
}

Value emptyI32(OpBuilder &b, Location loc, Value size) {
  return tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{ShapedType::kDynamic},
                                 b.getI32Type(), ValueRange{size});
}

struct PASplitKV final : pa::impl::PASplitKVBase<PASplitKV> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (chunkSize <= 0) {
      func.emitError() << "pa-split-kv: chunk-size must be > 0";
      return signalPassFailure();
    }
    SmallVector<DecodeOp> decodes;
    func.walk([&](DecodeOp op) {
      if (op.getNumResults() == 2)
        decodes.push_back(op);
    });
    for (DecodeOp op : decodes)
      if (failed(rewrite(op)))
        return signalPassFailure();
  }

  /// The four work-list values for `op`: new function arguments, or a
  /// pa.plan_split_kv computing them.
  SmallVector<Value> workListFor(IRRewriter &rewriter, DecodeOp op) {
    Location loc = op.getLoc();
    MLIRContext *ctx = &getContext();
    if (workList) {
      func::FuncOp func = getOperation();
      auto dynI32 =
          RankedTensorType::get({ShapedType::kDynamic}, rewriter.getI32Type());
      SmallVector<Value> args;
      for (StringRef role : {"indptr", "request", "start", "end"}) {
        unsigned idx = func.getNumArguments();
        if (failed(func.insertArgument(
                idx, dynI32,
                DictionaryAttr::get(ctx, {NamedAttribute(
                                             StringAttr::get(ctx, "pa.work_list"),
                                             StringAttr::get(ctx, role))}),
                loc)))
          return {};
        args.push_back(func.getArgument(idx));
      }
      return args;
    }
    // capacity = B + ceil(num_pages_in_table * P / C) >= sum ceil(len / C).
    Value batchPlus1 = dimOf(rewriter, loc, op.getKvIndptr(), 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value batch = arith::SubIOp::create(rewriter, loc, batchPlus1, one);
    Value pages = dimOf(rewriter, loc, op.getKvIndices(), 0);
    int64_t p = op.getCache().getPageSize();
    Value tokens = arith::MulIOp::create(
        rewriter, loc, pages, arith::ConstantIndexOp::create(rewriter, loc, p));
    Value chunks = arith::CeilDivUIOp::create(
        rewriter, loc, tokens,
        arith::ConstantIndexOp::create(rewriter, loc, chunkSize));
    Value cap = arith::AddIOp::create(rewriter, loc, batch, chunks);
    SmallVector<Value> outs{emptyI32(rewriter, loc, batchPlus1),
                            emptyI32(rewriter, loc, cap),
                            emptyI32(rewriter, loc, cap),
                            emptyI32(rewriter, loc, cap)};
    auto plan = PlanSplitKVOp::create(
        rewriter, loc, ValueRange(outs).getTypes(), op.getKvIndptr(),
        op.getKvLastPageLen(), outs, rewriter.getI64IntegerAttr(p),
        rewriter.getI64IntegerAttr(chunkSize));
    return SmallVector<Value>(plan.getResults());
  }

  LogicalResult rewrite(DecodeOp op) {
    IRRewriter rewriter(op);
    Location loc = op.getLoc();
    SmallVector<Value> work = workListFor(rewriter, op);
    if (work.size() != 4)
      return op.emitOpError() << "pa-split-kv could not add the work list";
    // Partial states: [W, Hq, D] f32 and [W, Hq] f32.
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    Value items = dimOf(rewriter, loc, work[1], 0);
    SmallVector<int64_t> oShape{ShapedType::kDynamic, qType.getDimSize(1),
                                qType.getDimSize(2)};
    SmallVector<Value> oDyn{items}, lDyn{items};
    if (qType.isDynamicDim(1)) {
      Value hq = dimOf(rewriter, loc, op.getQ(), 1);
      oDyn.push_back(hq);
      lDyn.push_back(hq);
    }
    if (qType.isDynamicDim(2))
      oDyn.push_back(dimOf(rewriter, loc, op.getQ(), 2));
    Type f32 = rewriter.getF32Type();
    Value oPart = tensor::EmptyOp::create(rewriter, loc, oShape, f32, oDyn);
    Value lPart = tensor::EmptyOp::create(
        rewriter, loc, ArrayRef<int64_t>(oShape).drop_back(), f32, lDyn);
    auto partial = DecodePartialOp::create(
        rewriter, loc, op, op.getPageTable(), WorkListOperands::get(work),
        ValueRange{oPart, lPart});
    auto merge = MergeSegmentsOp::create(
        rewriter, loc, op.getResultTypes(), partial.getResult(0),
        partial.getResult(1), work[0], op.getOuts(), op.getLseBase2Attr());
    rewriter.replaceOp(op, merge);
    return success();
  }
};
} // namespace
