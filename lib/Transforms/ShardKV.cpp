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
    SmallVector<DecodeOp> decodes;
    getOperation().walk([&](DecodeOp op) { decodes.push_back(op); });
    for (DecodeOp op : decodes)
      if (failed(shard(op)))
        return signalPassFailure();
  }

  LogicalResult shard(DecodeOp op) {
    if (!isa<RankedTensorType>(op.getQ().getType()))
      return op.emitOpError()
             << "pa-shard-kv runs on the tensor form (before bufferization)";
    // A shard renumbers its keys from 0: position-dependent attention
    // cannot run on one.
    if (op.getWindow())
      return op.emitOpError()
             << "pa-shard-kv: a sliding window needs the keys' positions, "
                "which a device's share of the pages renumbers";
    if (op.getAlibiSlopes())
      return op.emitOpError()
             << "pa-shard-kv: ALiBi needs the keys' positions, which a "
                "device's share of the pages renumbers";
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
