//===- PrefillTiling.cpp - one query tile of pa.prefill as tile ops -------===//

#include "PagedAttn/Conversion/PrefillTiling.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::pa;

using Pred = arith::CmpIPredicate;

void mlir::pa::emitPrefillQueryTile(Emitter &e, PrefillOp op,
                                    const IRMapping &map,
                                    const PageTable &pages,
                                    const QueryTileCoords &t,
                                    const PrefillTiles &tiles) {
  auto arg = [&](Value v) { return v ? map.lookupOrDefault(v) : v; };
  OpBuilder &b = e.b;
  Location loc = e.loc;
  auto qt = cast<MemRefType>(op.getQ().getType());
  PagedKVAttr cache = op.getCache();
  int64_t group = qt.getDimSize(1) / cache.getNumKVHeads();
  int64_t tileKV = cast<MemRefType>(tiles.k.getType()).getDimSize(0);
  AttentionOptions opts =
      cast<AttentionOpInterface>(op.getOperation()).getAttentionOptions();
  bool positions = bool(op.getQPositions());
  bool causal = op.getCausal();
  Value row0 = e.add(t.qoStart, t.i0);
  // Without explicit positions, query i of the request sits at
  // kv_len - qo_len + i: the tile's queries span [pos0, lastPos].
  Value pos0 = e.sub(e.add(t.kvLen, t.i0), t.qoLen);
  Value lastPos = e.sub(e.add(pos0, t.rows), e.idx(1));

  TileLoadQOp::create(b, loc, arg(op.getQ()), row0, t.rows, t.kvHead, tiles.q,
                      b.getI64IntegerAttr(group),
                      b.getF32FloatAttr(opts.getSmScaleOr(cache.getHeadDim())));
  TileInitStateOp::create(b, loc, tiles.m, tiles.l, tiles.acc);

  // The keys the tile can see: [lo, hi), lo a multiple of the KV tile.
  Value lo = e.idx(0), hi = t.kvLen;
  if (!positions && causal)
    hi = arith::MinSIOp::create(b, loc, t.kvLen, e.add(lastPos, e.idx(1)));
  if (!positions && opts.window) {
    Value start = arith::MaxSIOp::create(
        b, loc, e.idx(0),
        e.add(e.sub(pos0, e.idx(*opts.window)), e.idx(1)));
    lo = e.mul(e.divui(start, e.idx(tileKV)), e.idx(tileKV));
  }
  // Every KV tile needs its masks with a custom mask, or with explicit
  // positions under causal / window; otherwise only the last tile (keys
  // past kv_len), the tiles crossing the causal diagonal of the first query
  // and those reaching left of the last query's window.
  bool alwaysMask = op.getCustomMask() || (positions && (causal || opts.window));
  Value maskBits = arg(op.getCustomMask());
  SmallVector<Value> kvCache;
  for (Value v : op.getKvCache())
    kvCache.push_back(arg(v));
  scf::ForOp::create(
      b, loc, lo, hi, e.idx(tileKV), ValueRange{},
      [&](OpBuilder &, Location, Value t0, ValueRange) {
        TileGatherKVOp::create(b, loc, kvCache, pages.indptr,
                               pages.indices, t.request, t0, hi, t.kvHead,
                               tiles.k, tiles.v, cache);
        TileQKOp::create(b, loc, tiles.q, tiles.k, tiles.s, FloatAttr());
        Value need;
        if (!alwaysMask) {
          Value tileEnd = e.add(t0, e.idx(tileKV));
          need = e.cmpi(Pred::ugt, tileEnd, t.kvLen);
          if (causal)
            need = arith::OrIOp::create(
                b, loc, need, e.cmpi(Pred::sgt, tileEnd, e.add(pos0, e.idx(1))));
          if (opts.window)
            need = arith::OrIOp::create(
                b, loc, need,
                e.cmpi(Pred::sge, e.sub(lastPos, t0), e.idx(*opts.window)));
        }
        TileMaskOp::create(
            b, loc, tiles.s, row0, t.rows, pos0, t0, t.kvLen, t.kvHead,
            arg(op.getQPositions()), arg(op.getAlibiSlopes()), maskBits,
            maskBits ? t.maskByte0 : Value(), maskBits ? t.i0 : Value(),
            maskBits ? t.kvLen : Value(), need, b.getI64IntegerAttr(group),
            causal ? b.getUnitAttr() : UnitAttr(),
            opts.window ? b.getI64IntegerAttr(*opts.window) : IntegerAttr(),
            opts.getSoftCapAttr(b));
        TileSoftmaxUpdateOp::create(b, loc, tiles.s, tiles.m, tiles.l,
                                    tiles.acc);
        TilePVOp::create(b, loc, tiles.s, tiles.v, tiles.acc);
        scf::YieldOp::create(b, loc);
      });
  TileStoreOp::create(b, loc, tiles.m, tiles.l, tiles.acc, row0, t.rows,
                      t.kvHead, arg(op.getOuts()[0]), arg(op.getOuts()[1]),
                      b.getI64IntegerAttr(group),
                      opts.lseBase2 ? b.getUnitAttr() : UnitAttr());
}
