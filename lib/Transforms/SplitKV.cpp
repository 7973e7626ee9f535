//===- SplitKV.cpp - pa.decode -> decode_partial over chunks + merge -------===//
//
// pa-split-kv: every tensor-form pa.decode of a function becomes
// pa.decode_partial over a split-KV work list plus pa.merge_segments. The
// work list is planned in the IR (pa.plan_split_kv) or, with work-list=true,
// taken from four new arguments of the function, which is then only legal
// for a function that nothing in its module refers to.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"

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

  /// The pass runs on the module (not on each function): with work-list=true
  /// it must see a function's callers, which a function pass may not read
  /// while other threads rewrite them.
  void runOnOperation() override {
    if (chunkSize <= 0) {
      getOperation().emitError() << "pa-split-kv: chunk-size must be > 0";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    getOperation().walk([&](func::FuncOp f) { funcs.push_back(f); });
    for (func::FuncOp func : funcs)
      if (failed(splitFunction(func)))
        return signalPassFailure();
  }

  LogicalResult splitFunction(func::FuncOp func) {
    SmallVector<DecodeOp> decodes;
    func.walk([&](DecodeOp op) {
      if (op.getNumResults() == 2)
        decodes.push_back(op);
    });
    if (decodes.empty())
      return success();
    if (workList && failed(checkNoUses(func)))
      return failure();
    for (DecodeOp op : decodes)
      if (failed(rewrite(op)))
        return failure();
    return success();
  }

  /// work-list=true appends four arguments to `func`, which its callers would
  /// then no longer match, so a function that is referred to from its symbol
  /// table (a call, or any other symbol use) is rejected: an error at the
  /// function naming the functions that use it, and a note at every use.
  LogicalResult checkNoUses(func::FuncOp func) {
    Operation *parent = func->getParentOp();
    Operation *symbolTable =
        parent ? SymbolTable::getNearestSymbolTable(parent) : nullptr;
    if (!symbolTable || SymbolTable::symbolKnownUseEmpty(func, symbolTable))
      return success();
    InFlightDiagnostic diag = func.emitError()
                              << "pa-split-kv{work-list=true} would add the "
                                 "work list to the arguments of @"
                              << func.getSymName() << ", but ";
    std::optional<SymbolTable::UseRange> uses =
        SymbolTable::getSymbolUses(func, symbolTable);
    if (!uses) {
      diag << "its uses cannot be enumerated (unknown symbol tables); only a "
              "function without uses can take the work list";
      return failure();
    }
    // The users by name, sorted (the symbol walk is not in source order).
    SmallVector<StringRef> users;
    for (const SymbolTable::SymbolUse &use : *uses) {
      auto user = use.getUser()->getParentOfType<func::FuncOp>();
      users.push_back(user ? user.getSymName() : StringRef("<module>"));
    }
    llvm::sort(users);
    users.erase(llvm::unique(users), users.end());
    diag << "it is used by ";
    llvm::interleaveComma(users, diag,
                          [&](StringRef name) { diag << "@" << name; });
    diag << " and those uses would no longer match its signature; only a "
            "function without uses (an entry point) can take the work list";
    for (const SymbolTable::SymbolUse &use : *uses)
      diag.attachNote(use.getUser()->getLoc())
          << "@" << func.getSymName() << " is used here";
    return failure();
  }

  /// The four work-list values for `op`: new function arguments, or a
  /// pa.plan_split_kv computing them.
  SmallVector<Value> workListFor(IRRewriter &rewriter, DecodeOp op) {
    Location loc = op.getLoc();
    MLIRContext *ctx = &getContext();
    if (workList) {
      auto func = op->getParentOfType<func::FuncOp>();
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
