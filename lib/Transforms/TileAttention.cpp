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
LogicalResult checkTileable(PrefillOp op, int64_t tileQ, int64_t tileKV) {
  if (!hasMemRefSemantics(op))
    return op.emitOpError()
           << "pa-tile-attention expects the memref form; run "
              "one-shot-bufferize first";
  auto qt = cast<MemRefType>(op.getQ().getType());
  if (qt.isDynamicDim(1) || qt.isDynamicDim(2))
    return op.emitOpError()
           << "pa-tile-attention needs static query heads and head dim";
  if (Type elem = cast<ShapedType>(op.getKvCache()[0].getType())
                      .getElementType();
      isFP8CacheType(elem))
    return op.emitOpError()
           << "pa-tile-attention: FP8 KV caches (" << elem
           << ") are not supported by the tile ops yet (their K/V scales "
              "have no operand there)";
  int64_t group = qt.getDimSize(1) / op.getCache().getNumKVHeads();
  if (tileQ < 1 || tileKV < 1 || tileQ % group != 0)
    return op.emitOpError() << "tile-q (" << tileQ
                            << ") must be a positive multiple of the group ("
                            << group << ") and tile-kv (" << tileKV
                            << ") positive";
  return success();
}

/// Rewrites one pa.prefill into the tiled loop nest.
void tilePrefill(PrefillOp op, int64_t tileQ, int64_t tileKV) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Emitter e{b, loc};
  PagedKVAttr cache = op.getCache();
  auto qt = cast<MemRefType>(op.getQ().getType());
  int64_t hkv = cache.getNumKVHeads(), d = cache.getHeadDim();
  int64_t group = qt.getDimSize(1) / hkv;
  int64_t queriesPerTile = tileQ / group;
  AttentionOptions opts = cast<AttentionOpInterface>(op.getOperation())
                              .getAttentionOptions();
  Type f32 = b.getF32Type();
  // The tiles live in the function's entry block, so that a prefill inside
  // a loop does not grow the stack at each iteration.
  OpBuilder entry(op->getContext());
  entry.setInsertionPointToStart(
      &op->getParentOfType<FunctionOpInterface>().getFunctionBody().front());
  auto tile2 = [&](int64_t r, int64_t c) {
    return memref::AllocaOp::create(entry, loc, MemRefType::get({r, c}, f32));
  };
  auto tile1 = [&](int64_t r) {
    return memref::AllocaOp::create(entry, loc, MemRefType::get({r}, f32));
  };
  PrefillTiles tiles{tile2(tileQ, d),      tile2(tileKV, d), tile2(tileKV, d),
                     tile2(tileQ, tileKV), tile1(tileQ),     tile1(tileQ),
                     tile2(tileQ, d)};

  PageTable pt = pageTableOf(op);
  Value qoIndptr = op.getQoIndptr();
  pt.emitRaggedChecks(e, qoIndptr, "qo_indptr", e.dim(op.getQ(), 0), "q");
  PackedMask mask{op.getCustomMask(), op.getMaskIndptr()};
  if (mask.bits)
    mask.emitChecks(e, qoIndptr);
  Value batch = e.sub(e.dim(qoIndptr, 0), e.idx(1));
  bool explicitPositions = bool(op.getQPositions());
  bool positionsMatter = op.getCausal() || opts.window || op.getAlibiSlopes();
  e.forEach(e.idx(0), batch, [&](Value req) {
    Value qs = e.loadIdx(qoIndptr, req);
    Value qoLen = e.sub(e.loadIdx(qoIndptr, e.add(req, e.idx(1))), qs);
    Value kvLen = pt.kvLen(e, req);
    if (!explicitPositions && positionsMatter)
      emitQueriesAreLastTokens(e, qoLen, kvLen);
    Value maskByte0 = mask.bits ? mask.segmentBase(e, req, qoLen, kvLen)
                                : Value();
    e.forEach(e.idx(0), e.idx(hkv), [&](Value hk) {
      scf::ForOp::create(
          b, loc, e.idx(0), qoLen, e.idx(queriesPerTile), ValueRange{},
          [&](OpBuilder &, Location, Value i0, ValueRange) {
            Value rows = arith::MinSIOp::create(
                b, loc, e.idx(queriesPerTile), e.sub(qoLen, i0));
            emitPrefillQueryTile(
                e, op, IRMapping(), pt,
                QueryTileCoords{req, hk, qs, i0, rows, qoLen, kvLen, maskByte0},
                tiles);
            scf::YieldOp::create(b, loc);
          });
    });
  });
  op.erase();
}

struct PATileAttention final
    : pa::impl::PATileAttentionBase<PATileAttention> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<PrefillOp> ops;
    getOperation().walk([&](PrefillOp op) { ops.push_back(op); });
    for (PrefillOp op : ops)
      if (failed(checkTileable(op, tileQ, tileKV)))
        return signalPassFailure();
    for (PrefillOp op : ops)
      tilePrefill(op, tileQ, tileKV);
  }
};
} // namespace
