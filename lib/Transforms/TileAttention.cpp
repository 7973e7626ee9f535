//===- TileAttention.cpp - pa.prefill -> tile-level pa.tile ops -----------===//
//
// pa-tile-attention: see the pass description for the loop nest it emits.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/PrefillTiling.h"
#include "PagedAttn/Transforms/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::pa {
#define GEN_PASS_DEF_PATILEATTENTION
#include "PagedAttn/Transforms/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;
using namespace mlir::pa;

using Pred = arith::CmpIPredicate;

namespace {

/// Checks what the tiling needs, before any IR changes.
LogicalResult checkTileable(const PrefillOperands &p, int64_t tileQ,
                            int64_t tileKV) {
  Operation *op = p.op;
  if (!hasMemRefSemantics(op))
    return op->emitOpError()
           << "pa-tile-attention expects the memref form; run "
              "one-shot-bufferize first";
  auto qt = cast<MemRefType>(p.q.getType());
  if (qt.isDynamicDim(1) || qt.isDynamicDim(2))
    return op->emitOpError()
           << "pa-tile-attention needs static query heads and head dim";
  int64_t group = p.group();
  if (tileQ < 1 || tileKV < 1 || tileQ % group != 0)
    return op->emitOpError() << "tile-q (" << tileQ
                             << ") must be a positive multiple of the group ("
                             << group << ") and tile-kv (" << tileKV
                             << ") positive";
  return success();
}

/// The f32 tile buffers of `op`'s tiling, in the function's entry block so
/// that an op inside a loop does not grow the stack at each iteration.
PrefillTiles allocTiles(Operation *op, int64_t tileQ, int64_t tileKV,
                        int64_t d) {
  OpBuilder entry(op->getContext());
  entry.setInsertionPointToStart(
      &op->getParentOfType<FunctionOpInterface>().getFunctionBody().front());
  return PrefillTiles::alloc(entry, op->getLoc(), tileQ, tileKV, d);
}

/// Asserts that an fp8 cache's scales are finite and > 0 (as the loops
/// lowering does).
void emitScaleChecks(Emitter &e, const PrefillOperands &p) {
  Cache{p.cache, SmallVector<Value, 2>(p.kvCache.begin(), p.kvCache.end()),
        p.scales}
      .emitScaleChecks(e);
}

/// Rewrites one pa.decode or pa.decode_partial into the tiled loop nest:
/// per request (or work item: its keys, row w of the partial states) and
/// KV head, one query tile holding the request's query (position kv_len -
/// 1) for the group's heads (the tensor-core decode's tiling, on the CPU).
void tileDecode(const PrefillOperands &p, int64_t tileQ, int64_t tileKV) {
  Operation *op = p.op;
  OpBuilder b(op);
  Emitter e{b, op->getLoc()};
  PrefillTiles tiles = allocTiles(op, tileQ, tileKV, p.cache.getHeadDim());
  PageTable pt = pageTableOf(cast<PagedOpInterface>(op));
  emitScaleChecks(e, p);
  // A query tile per KV head.
  auto perKVHead = [&](function_ref<QueryTileCoords(Value)> tileOf) {
    e.forEach(e.idx(0), e.idx(p.cache.getNumKVHeads()), [&](Value hk) {
      emitPrefillQueryTile(e, p, IRMapping(), pt, tileOf(hk), tiles);
    });
  };
  if (auto partial = dyn_cast<DecodePartialOp>(op)) {
    pt.emitChecks(e);
    Value used =
        DecodeWorkItem::emitWorkListChecks(e, partial, e.dim(p.o, 0));
    e.forEach(e.idx(0), used, [&](Value w) {
      DecodeWorkItem item = DecodeWorkItem::loadChecked(e, partial, pt, w);
      perKVHead([&](Value hk) { return item.tile(e, w, hk, item.kvLen); });
    });
  } else {
    Value batch = e.dim(p.q, 0);
    pt.emitDecodeChecks(e, batch);
    e.forEach(e.idx(0), batch, [&](Value req) {
      Value kvLen = pt.kvLen(e, req);
      perKVHead([&](Value hk) {
        return QueryTileCoords::decode(e, req, hk, kvLen);
      });
    });
  }
  op->erase();
}

/// Rewrites one pa.prefill or pa.prefill_partial into the tiled loop nest.
void tilePrefill(const PrefillOperands &p, int64_t tileQ, int64_t tileKV) {
  Operation *op = p.op;
  OpBuilder b(op);
  Location loc = op->getLoc();
  Emitter e{b, loc};
  int64_t hkv = p.cache.getNumKVHeads();
  int64_t queriesPerTile = tileQ / p.group();
  PrefillTiles tiles = allocTiles(op, tileQ, tileKV, p.cache.getHeadDim());

  PageTable pt = pageTableOf(cast<PagedOpInterface>(op));
  emitScaleChecks(e, p);
  Value qoIndptr = p.qoIndptr;
  pt.emitRaggedChecks(e, qoIndptr, "qo_indptr", e.dim(p.q, 0), "q");
  PackedMask mask{p.customMask, p.maskIndptr};
  if (mask.bits)
    mask.emitChecks(e, qoIndptr);
  bool explicitPositions = bool(p.qPositions);
  bool positionsMatter =
      p.causal || p.options.window || p.alibiSlopes;
  // The query tiles of queries [q0, q1) of request `req` (request-local);
  // `item` adds a work item's keys and partial rows.
  auto tileQueries = [&](Value req, Value q0, Value q1,
                         std::optional<PrefillWorkItem> item) {
    Value qs = e.loadIdx(qoIndptr, req);
    Value qoLen = e.sub(e.loadIdx(qoIndptr, e.add(req, e.idx(1))), qs);
    Value kvLen = pt.kvLen(e, req);
    if (!explicitPositions && positionsMatter)
      emitQueriesAreLastTokens(e, qoLen, kvLen);
    Value maskByte0 = mask.bits ? mask.segmentBase(e, req, qoLen, kvLen)
                                : Value();
    if (item)
      item->emitChecks(e, qoLen, kvLen, e.dim(p.o, 0));
    e.forEach(e.idx(0), e.idx(hkv), [&](Value hk) {
      scf::ForOp::create(
          b, loc, q0, q1, e.idx(queriesPerTile), ValueRange{},
          [&](OpBuilder &, Location, Value i0, ValueRange) {
            Value rows = arith::MinSIOp::create(
                b, loc, e.idx(queriesPerTile), e.sub(q1, i0));
            QueryTileCoords t{req, hk, qs, i0, rows, qoLen, kvLen, maskByte0};
            if (item) {
              t.kvBegin = item->kvStart;
              t.kvEnd = item->kvEnd;
              t.outRow0 = item->rowOf(e, i0);
              t.outStride = item->partialStride;
            }
            emitPrefillQueryTile(e, p, IRMapping(), pt, t, tiles);
            scf::YieldOp::create(b, loc);
          });
    });
  };
  if (auto partial = dyn_cast<PrefillPartialOp>(op)) {
    Value items = PrefillWorkItem::emitWorkListChecks(e, partial);
    e.forEach(e.idx(0), items, [&](Value w) {
      PrefillWorkItem item = PrefillWorkItem::load(e, partial, w);
      item.emitRequestCheck(e, e.sub(e.dim(qoIndptr, 0), e.idx(1)));
      tileQueries(item.request, item.qoStart, item.qoEnd, item);
    });
  } else {
    Value batch = e.sub(e.dim(qoIndptr, 0), e.idx(1));
    e.forEach(e.idx(0), batch, [&](Value req) {
      Value qoLen = e.sub(e.loadIdx(qoIndptr, e.add(req, e.idx(1))),
                          e.loadIdx(qoIndptr, req));
      tileQueries(req, e.idx(0), qoLen, std::nullopt);
    });
  }
  op->erase();
}

struct PATileAttention final
    : pa::impl::PATileAttentionBase<PATileAttention> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<PrefillOperands> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<PrefillOp, PrefillPartialOp, DecodeOp, DecodePartialOp>(op))
        ops.emplace_back(op);
    });
    for (const PrefillOperands &p : ops)
      if (failed(checkTileable(p, tileQ, tileKV)))
        return signalPassFailure();
    for (const PrefillOperands &p : ops) {
      if (isa<DecodeOp, DecodePartialOp>(p.op))
        tileDecode(p, tileQ, tileKV);
      else
        tilePrefill(p, tileQ, tileKV);
    }
  }
};
} // namespace
