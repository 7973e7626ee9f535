//===- ShardKV.cpp - pa.decode -> per-device shards + a merge --------------===//
//
// pa-shard-kv (docs/ContextParallel.md): every tensor-form pa.decode of a
// function becomes `devices` decodes, device d's over its share of every
// request's pages (pa.shard_pages, contiguous ranges or round robin), each
// tagged `pa.device = d`, and a pa.merge of their (o, lse) states into the
// decode's outs. Since the merge is commutative and associative with the
// identity (0, -inf) of a request without pages on a device, the result is
// the decode's; the partial states are in the decode's output type (what a
// device would send), so the sharded result agrees to that precision.
//
// Every pa.prefill becomes `devices` pa.prefill_partial over work lists
// that keep the keys' positions (pa.shard_work: all of a request's queries
// over the keys of the device's contiguous page range, read through the
// whole page table), f32 partial states with a row per query, merged by a
// pa.merge into the prefill's outs: causal, window, custom-mask and ALiBi
// prefill shard as well (round-robin ownership is rejected there: it would
// take an item per page).
//
//===----------------------------------------------------------------------===//

#include "TensorUtils.h"

#include "PagedAttn/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::pa {
#define GEN_PASS_DEF_PASHARDKV
#include "PagedAttn/Transforms/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;
using namespace mlir::pa;

namespace {

struct PAShardKV final : pa::impl::PAShardKVBase<PAShardKV> {
  using Base::Base;

  void runOnOperation() override {
    if (devices < 1) {
      getOperation().emitError()
          << "pa-shard-kv: devices must be >= 1, got "
          << static_cast<int64_t>(devices);
      return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    WalkResult cascade = getOperation().walk([&](Operation *op) {
      if (isa<CascadeOp>(op)) {
        op->emitOpError() << "pa-shard-kv shards a cascade's levels: run "
                             "pa-cascade-decompose first";
        return WalkResult::interrupt();
      }
      if (isa<DecodeOp, PrefillOp>(op))
        ops.push_back(op);
      return WalkResult::advance();
    });
    if (cascade.wasInterrupted())
      return signalPassFailure();
    for (Operation *op : ops) {
      LogicalResult done = isa<DecodeOp>(op) ? shard(cast<DecodeOp>(op))
                                             : shard(cast<PrefillOp>(op));
      if (failed(done))
        return signalPassFailure();
    }
  }

  /// The positional sharding shared by prefill and by decode with a window
  /// or ALiBi: per device d, pa.shard_work's list (the prefill form when
  /// `qoIndptr` is given, else the decode form) and the partial op that
  /// `makePart(work, oPart, lsePart)` builds over it with f32 states, tagged
  /// pa.device = d; a pa.merge of the states replaces `op`.
  LogicalResult shardPositionally(
      Operation *op, Value qoIndptr, const PageTableOperands &table,
      int64_t pageSize, ValueRange outs, UnitAttr lseBase2,
      function_ref<Operation *(IRRewriter &, ValueRange, Value, Value)>
          makePart) {
    if (roundRobin)
      return op->emitOpError()
             << "pa-shard-kv shards " << (qoIndptr ? "pa.prefill" : "a decode "
                "with a window or ALiBi")
             << " by contiguous page ranges only (each device's keys are one "
                "range of the request's positions, one work item; round robin "
                "would take an item per page)";
    IRRewriter rewriter(op);
    Location loc = op->getLoc();
    SmallVector<Value> states;
    for (int64_t d = 0; d < devices; ++d) {
      // The decode form's work_indptr has B + 1 entries, like kv_indptr.
      SmallVector<Value> workOuts;
      for (int i = 0; i < (qoIndptr ? 7 : 4); ++i)
        workOuts.push_back(emptyLike(
            rewriter, loc, !qoIndptr && i == 0 ? table.indptr
                                               : table.lastPageLen));
      auto work = ShardWorkOp::create(
          rewriter, loc, ValueRange(workOuts).getTypes(), table.indptr,
          table.indices, table.lastPageLen, qoIndptr, workOuts,
          rewriter.getI64IntegerAttr(pageSize),
          rewriter.getI64IntegerAttr(devices), rewriter.getI64IntegerAttr(d));
      Value oPart = emptyLike(rewriter, loc, outs[0], rewriter.getF32Type());
      Value lsePart = emptyLike(rewriter, loc, outs[1]);
      Operation *part = makePart(rewriter, work.getResults(), oPart, lsePart);
      part->setAttr("pa.device", rewriter.getI64IntegerAttr(d));
      states.append(part->result_begin(), part->result_end());
    }
    auto merge = MergeOp::create(rewriter, loc, op->getResultTypes(), states,
                                 outs, lseBase2);
    rewriter.replaceOp(op, merge);
    return success();
  }

  /// A decode with a window or ALiBi: a pa.decode_partial per device.
  LogicalResult shardPositional(DecodeOp op) {
    PageTableOperands table = op.getPageTable();
    return shardPositionally(
        op, Value(), table, op.getCache().getPageSize(), op.getOuts(),
        op.getLseBase2Attr(),
        [&](IRRewriter &b, ValueRange w, Value oPart, Value lsePart) {
          return DecodePartialOp::create(b, op.getLoc(), op, table,
                                         WorkListOperands::get(w),
                                         ValueRange{oPart, lsePart})
              .getOperation();
        });
  }

  LogicalResult shard(PrefillOp op) {
    if (!isa<RankedTensorType>(op.getQ().getType()))
      return op.emitOpError()
             << "pa-shard-kv runs on the tensor form (before bufferization)";
    PageTableOperands table = op.getPageTable();
    return shardPositionally(
        op, op.getQoIndptr(), table, op.getCache().getPageSize(),
        op.getOuts(), op.getLseBase2Attr(),
        [&](IRRewriter &b, ValueRange w, Value oPart, Value lsePart) {
          return PrefillPartialOp::create(
                     b, op.getLoc(),
                     TypeRange{oPart.getType(), lsePart.getType()},
                     op.getQ(), op.getQoIndptr(), op.getKvCache(),
                     op.getKScale(), op.getVScale(), table.indptr,
                     table.indices, table.lastPageLen, w[0], w[1], w[2], w[3],
                     w[4], w[5], w[6], op.getQPositions(), op.getCustomMask(),
                     op.getMaskIndptr(), op.getAlibiSlopes(),
                     ValueRange{oPart, lsePart}, op.getCacheAttr(),
                     op.getCausalAttr(), op.getSmScaleAttr(),
                     op.getLogitsSoftCapAttr(), op.getWindowAttr(),
                     op.getLseBase2Attr())
              .getOperation();
        });
  }

  LogicalResult shard(DecodeOp op) {
    if (!isa<RankedTensorType>(op.getQ().getType()))
      return op.emitOpError()
             << "pa-shard-kv runs on the tensor form (before bufferization)";
    // A shard renumbers its keys from 0: position-dependent attention runs
    // on work lists in the request's own positions instead.
    if (op.getWindow() || op.getAlibiSlopes())
      return shardPositional(op);
    IRRewriter rewriter(op);
    Location loc = op.getLoc();
    PageTableOperands table = op.getPageTable();
    SmallVector<Value> states;
    for (int64_t d = 0; d < devices; ++d) {
      SmallVector<Value> tableOuts{emptyLike(rewriter, loc, table.indptr),
                                   emptyLike(rewriter, loc, table.indices),
                                   emptyLike(rewriter, loc, table.lastPageLen)};
      auto sharded = ShardPagesOp::create(
          rewriter, loc, ValueRange(tableOuts).getTypes(), table.indptr,
          table.indices, table.lastPageLen, tableOuts,
          rewriter.getI64IntegerAttr(op.getCache().getPageSize()),
          rewriter.getI64IntegerAttr(devices), rewriter.getI64IntegerAttr(d),
          roundRobin ? rewriter.getUnitAttr() : UnitAttr());
      SmallVector<Value> outs;
      for (Value out : op.getOuts())
        outs.push_back(emptyLike(rewriter, loc, out));
      auto part = cast<DecodeOp>(rewriter.clone(*op));
      part.getKvIndptrMutable().assign(sharded.getResult(0));
      part.getKvIndicesMutable().assign(sharded.getResult(1));
      part.getKvLastPageLenMutable().assign(sharded.getResult(2));
      part.getOutsMutable().assign(outs);
      part->setAttr("pa.device", rewriter.getI64IntegerAttr(d));
      states.append(part->result_begin(), part->result_end());
    }
    auto merge = MergeOp::create(rewriter, loc, op.getResultTypes(), states,
                                 op.getOuts(), op.getLseBase2Attr());
    rewriter.replaceOp(op, merge);
    return success();
  }
};

} // namespace
