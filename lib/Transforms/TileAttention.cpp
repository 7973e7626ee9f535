//===- TileAttention.cpp - pa.prefill -> tile-level pa.tile ops -----------===//
//
// pa-tile-attention: see the pass description for the loop nest it emits.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/PagedAttention.h"
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
  Value qTile = tile2(tileQ, d), kTile = tile2(tileKV, d),
        vTile = tile2(tileKV, d), sTile = tile2(tileQ, tileKV);
  Value mTile = tile1(tileQ), lTile = tile1(tileQ), accTile = tile2(tileQ, d);

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
    // Query i of the request sits at kv_len - qo_len + i.
    Value posBase = e.sub(kvLen, qoLen);
    Value maskByte0 = mask.bits ? mask.segmentBase(e, req, qoLen, kvLen)
                                : Value();
    e.forEach(e.idx(0), e.idx(hkv), [&](Value hk) {
      scf::ForOp::create(
          b, loc, e.idx(0), qoLen, e.idx(queriesPerTile), ValueRange{},
          [&](OpBuilder &, Location, Value i0, ValueRange) {
            Value rows = arith::MinSIOp::create(
                b, loc, e.idx(queriesPerTile), e.sub(qoLen, i0));
            Value row0 = e.add(qs, i0);
            Value pos0 = e.add(posBase, i0);
            TileLoadQOp::create(b, loc, op.getQ(), row0, rows, hk, qTile,
                                b.getI64IntegerAttr(group),
                                b.getF32FloatAttr(opts.getSmScaleOr(d)));
            e.forEach(e.idx(0), e.idx(tileQ), [&](Value r) {
              e.store(e.negInf(), mTile, {r});
              e.store(e.f32(0), lTile, {r});
              e.forEach(e.idx(0), e.idx(d),
                        [&](Value c) { e.store(e.f32(0), accTile, {r, c}); });
            });
            // The KV tiles the query tile can see: without explicit
            // positions, none above the causal diagonal and none wholly left
            // of the sliding window.
            Value first = e.idx(0), last = kvLen;
            if (!explicitPositions && op.getCausal())
              last = arith::MinSIOp::create(b, loc, kvLen,
                                            e.add(pos0, rows));
            if (!explicitPositions && opts.window) {
              Value w = e.idx(*opts.window);
              Value start = e.select(e.cmpi(Pred::sge, pos0, w),
                                     e.add(e.sub(pos0, w), e.idx(1)),
                                     e.idx(0));
              first = e.mul(e.divui(start, e.idx(tileKV)), e.idx(tileKV));
            }
            scf::ForOp::create(
                b, loc, first, last, e.idx(tileKV), ValueRange{},
                [&](OpBuilder &, Location, Value t0, ValueRange) {
                  TileGatherKVOp::create(b, loc, op.getKvCache(),
                                         pt.indptr, pt.indices, req, t0,
                                         kvLen, hk, kTile, vTile, cache);
                  TileQKOp::create(b, loc, qTile, kTile, sTile);
                  TileMaskOp::create(
                      b, loc, sTile, row0, rows, pos0, t0, kvLen, hk,
                      op.getQPositions(), op.getAlibiSlopes(), mask.bits,
                      maskByte0, mask.bits ? i0 : Value(),
                      mask.bits ? kvLen : Value(),
                      b.getI64IntegerAttr(group),
                      op.getCausal() ? b.getUnitAttr() : UnitAttr(),
                      opts.window ? b.getI64IntegerAttr(*opts.window)
                                  : IntegerAttr(),
                      opts.getSoftCapAttr(b));
                  TileSoftmaxUpdateOp::create(b, loc, sTile, mTile, lTile,
                                              accTile);
                  TilePVOp::create(b, loc, sTile, vTile, accTile);
                  scf::YieldOp::create(b, loc);
                });
            TileStoreOp::create(b, loc, mTile, lTile, accTile, row0, rows, hk,
                                op.getOuts()[0], op.getOuts()[1],
                                b.getI64IntegerAttr(group),
                                opts.lseBase2 ? b.getUnitAttr() : UnitAttr());
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
