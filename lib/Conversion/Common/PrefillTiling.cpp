//===- PrefillTiling.cpp - one query tile of pa.prefill as tile ops -------===//

#include "PagedAttn/Conversion/PrefillTiling.h"

#include <limits>

#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::pa;

using Pred = arith::CmpIPredicate;

PrefillOperands::PrefillOperands(Operation *prefillOrPartial)
    : op(prefillOrPartial) {
  auto read = [&](auto p) {
    q = p.getQ();
    qoIndptr = p.getQoIndptr();
    qPositions = p.getQPositions();
    customMask = p.getCustomMask();
    maskIndptr = p.getMaskIndptr();
    alibiSlopes = p.getAlibiSlopes();
    o = p.getOuts()[0];
    lse = p.getOuts()[1];
    kvCache.assign(p.getKvCache().begin(), p.getKvCache().end());
    scales = {p.getKScale(), p.getVScale()};
    cache = p.getCache();
    causal = p.getCausal();
    options = cast<AttentionOpInterface>(p.getOperation())
                  .getAttentionOptions();
  };
  // A decode is a prefill of one query per request (at position kv_len - 1,
  // seeing every key): no query indptr, positions, custom mask or causal.
  auto readDecode = [&](AttentionOpInterface d) {
    q = d.getQ();
    alibiSlopes = d.getAlibiSlopes();
    o = d.getOuts()[0];
    lse = d.getOuts()[1];
    kvCache.assign(d.getKvCache().begin(), d.getKvCache().end());
    scales = {d.getKScale(), d.getVScale()};
    cache = d.getCache();
    options = d.getAttentionOptions();
  };
  llvm::TypeSwitch<Operation *>(prefillOrPartial)
      .Case([&](PrefillOp p) { read(p); })
      .Case([&](PrefillPartialOp p) { read(p); })
      .Case([&](DecodeOp d) { readDecode(d); })
      .Case([&](DecodePartialOp d) { readDecode(d); })
      .DefaultUnreachable("a prefill or decode op expected");
}

PrefillTiles PrefillTiles::alloc(OpBuilder &b, Location loc, int64_t rows,
                                 int64_t keys, int64_t headDim) {
  auto tile = [&](ArrayRef<int64_t> shape) -> Value {
    return memref::AllocaOp::create(b, loc,
                                    MemRefType::get(shape, b.getF32Type()));
  };
  return PrefillTiles{tile({rows, headDim}), tile({keys, headDim}),
                      tile({keys, headDim}), tile({rows, keys}),
                      tile({rows}),          tile({rows}),
                      tile({rows, headDim})};
}

QueryTileCoords QueryTileCoords::decode(Emitter &e, Value request,
                                        Value kvHead, Value kvLen) {
  return QueryTileCoords{request,  kvHead,   request, e.idx(0),
                         e.idx(1), e.idx(1), kvLen,   Value()};
}

int64_t PrefillOperands::group() const {
  return cast<ShapedType>(q.getType()).getDimSize(1) / cache.getNumKVHeads();
}

Value PrefillWorkItem::emitWorkListChecks(Emitter &e, PrefillPartialOp op) {
  SmallVector<Value, 7> work = op.getWorkList();
  Value items = e.dim(work[0], 0);
  for (auto [array, name] :
       llvm::zip_equal(ArrayRef(work).drop_front(),
                       ArrayRef(PrefillPartialOp::kWorkListNames).drop_front()))
    emitEntryCount(e, array, name, items, "as many as work_request");
  return items;
}

PrefillWorkItem PrefillWorkItem::load(Emitter &e, PrefillPartialOp op,
                                      Value w, const IRMapping &map) {
  SmallVector<Value, 7> v;
  for (Value array : op.getWorkList())
    v.push_back(e.loadIdx(map.lookupOrDefault(array), w));
  return {v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
}

Value PrefillWorkItem::rowOf(Emitter &e, Value i) const {
  return e.add(partialRow, e.mul(e.sub(i, qoStart), partialStride));
}

void PrefillWorkItem::emitRequestCheck(Emitter &e, Value batch) const {
  e.assertTrue(arith::AndIOp::create(e.b, e.loc,
                                     e.cmpi(Pred::sge, request, e.idx(0)),
                                     e.cmpi(Pred::slt, request, batch)),
               "pa.prefill_partial: work_request[w] must be in [0, batch)");
}

void PrefillWorkItem::emitChecks(Emitter &e, Value qoLen, Value kvLen,
                                 Value partialRows) const {
  auto inOrder = [&](Value a, Value b, Value c) {
    return arith::AndIOp::create(e.b, e.loc, e.cmpi(Pred::sle, a, b),
                                 e.cmpi(Pred::sle, b, c));
  };
  e.assertTrue(arith::AndIOp::create(e.b, e.loc,
                                     e.cmpi(Pred::sge, qoStart, e.idx(0)),
                                     inOrder(qoStart, qoEnd, qoLen)),
               "pa.prefill_partial: work item queries must satisfy 0 <= "
               "qo_start <= qo_end <= qo_len");
  e.assertTrue(arith::AndIOp::create(e.b, e.loc,
                                     e.cmpi(Pred::sge, kvStart, e.idx(0)),
                                     inOrder(kvStart, kvEnd, kvLen)),
               "pa.prefill_partial: work item keys must satisfy 0 <= "
               "kv_start <= kv_end <= kv_len");
  // Rows are linear in the query: the first and last in range is enough.
  Value none = e.cmpi(Pred::eq, qoStart, qoEnd);
  auto inRows = [&](Value r) {
    return arith::AndIOp::create(e.b, e.loc, e.cmpi(Pred::sge, r, e.idx(0)),
                                 e.cmpi(Pred::slt, r, partialRows));
  };
  Value first = rowOf(e, qoStart);
  Value last = rowOf(e, e.sub(qoEnd, e.idx(1)));
  e.assertTrue(
      arith::OrIOp::create(
          e.b, e.loc, none,
          arith::AndIOp::create(e.b, e.loc, inRows(first), inRows(last))),
      "pa.prefill_partial: a work item's partial rows must lie in [0, rows "
      "of o_part)");
}

Value DecodeWorkItem::emitWorkListChecks(Emitter &e, DecodePartialOp op,
                                         Value capacity) {
  Value items = e.dim(op.getWorkRequest(), 0);
  emitIndptrChecks(e, op.getWorkIndptr(), "work_indptr", items,
                   "work_request");
  emitEntryCount(e, op.getWorkStart(), "work_start", items,
                 "as many as work_request");
  emitEntryCount(e, op.getWorkEnd(), "work_end", items,
                 "as many as work_request");
  Value batch = e.sub(e.dim(op.getWorkIndptr(), 0), e.idx(1));
  Value used = e.loadIdx(op.getWorkIndptr(), batch);
  e.assertTrue(e.cmpi(Pred::sle, used, capacity),
               "work list longer than the partial-state outs");
  return used;
}

DecodeWorkItem DecodeWorkItem::load(Emitter &e, DecodePartialOp op, Value w,
                                    const IRMapping &map) {
  DecodeWorkItem item;
  item.request = e.loadIdx(map.lookupOrDefault(op.getWorkRequest()), w);
  item.kvStart = e.loadIdx(map.lookupOrDefault(op.getWorkStart()), w);
  item.kvEnd = e.loadIdx(map.lookupOrDefault(op.getWorkEnd()), w);
  return item;
}

QueryTileCoords DecodeWorkItem::tile(Emitter &e, Value w, Value kvHead,
                                     Value kvLen) const {
  QueryTileCoords t = QueryTileCoords::decode(e, request, kvHead, kvLen);
  t.kvBegin = kvStart;
  t.kvEnd = kvEnd;
  t.outRow0 = w;
  return t;
}

DecodeWorkItem DecodeWorkItem::loadChecked(Emitter &e, DecodePartialOp op,
                                           const PageTable &pt, Value w) {
  Value requests = e.sub(e.dim(pt.indptr, 0), e.idx(1));
  DecodeWorkItem item = load(e, op, w);
  e.assertTrue(e.andi(e.cmpi(Pred::sge, item.request, e.idx(0)),
                      e.cmpi(Pred::slt, item.request, requests)),
               "work_request entry out of range [0, B)");
  item.kvLen = pt.kvLen(e, item.request);
  Value ok = e.andi(e.andi(e.cmpi(Pred::sge, item.kvStart, e.idx(0)),
                           e.cmpi(Pred::sle, item.kvStart, item.kvEnd)),
                    e.cmpi(Pred::sle, item.kvEnd, item.kvLen));
  e.assertTrue(ok, "work item chunk out of [0, kv_len]");
  return item;
}

void mlir::pa::emitPrefillQueryTile(Emitter &e, const PrefillOperands &op,
                                    const IRMapping &map,
                                    const PageTable &pages,
                                    const QueryTileCoords &t,
                                    const PrefillTiles &tiles) {
  auto arg = [&](Value v) { return v ? map.lookupOrDefault(v) : v; };
  OpBuilder &b = e.b;
  Location loc = e.loc;
  PagedKVAttr cache = op.cache;
  int64_t group = t.group ? t.group : op.group();
  Value cacheHead = t.cacheHead ? t.cacheHead : t.kvHead;
  int64_t tileKV = cast<MemRefType>(tiles.k.getType()).getDimSize(0);
  const AttentionOptions &opts = op.options;
  bool positions = bool(op.qPositions);
  bool causal = op.causal;
  Value row0 = e.add(t.qoStart, t.i0);
  // Without explicit positions, query i of the request sits at
  // kv_len - qo_len + i: the tile's queries span [pos0, lastPos].
  Value pos0 = e.sub(e.add(t.kvLen, t.i0), t.qoLen);
  Value lastPos = e.sub(e.add(pos0, t.rows), e.idx(1));

  TileLoadQOp::create(b, loc, arg(op.q), row0, t.rows, t.kvHead, tiles.q,
                      b.getI64IntegerAttr(group),
                      b.getF32FloatAttr(opts.getSmScaleOr(cache.getHeadDim())));
  TileInitStateOp::create(b, loc, tiles.m, tiles.l, tiles.acc);

  // With explicit positions under causal / window, the tile's queries span
  // [min, max] of their q_positions (CacheBlend's recomputed tokens, ...):
  // one pass over the tile's rows bounds the keys as the implicit
  // positions do.
  if (positions && (causal || opts.window)) {
    Value qPos = arg(op.qPositions);
    Value big = e.idx(std::numeric_limits<int32_t>::max());
    scf::ForOp span = e.forLoop(
        e.idx(0), t.rows, {big, e.idx(-1)},
        [&](Value i, ValueRange r) -> SmallVector<Value> {
          Value p = e.loadIdx(qPos, e.add(row0, i));
          Value lowest = arith::MinSIOp::create(b, loc, r[0], p);
          Value highest = arith::MaxSIOp::create(b, loc, r[1], p);
          return {lowest, highest};
        });
    pos0 = span.getResult(0);
    lastPos = span.getResult(1);
  }
  // The keys the tile can see: [lo, hi), lo a multiple of the KV tile.
  Value lo = e.idx(0), hi = t.kvLen;
  if (causal)
    hi = arith::MinSIOp::create(b, loc, t.kvLen, e.add(lastPos, e.idx(1)));
  if (opts.window) {
    Value start = arith::MaxSIOp::create(
        b, loc, e.idx(0),
        e.add(e.sub(pos0, e.idx(*opts.window)), e.idx(1)));
    lo = e.mul(e.divui(start, e.idx(tileKV)), e.idx(tileKV));
  }
  // A work item's chunk: its keys only. `end` bounds the keys the masks let
  // through (keys past it in the last KV tile are zero-filled, not absent).
  Value end = t.kvLen;
  if (t.kvBegin) {
    lo = arith::MaxSIOp::create(b, loc, lo, t.kvBegin);
    hi = arith::MinSIOp::create(b, loc, hi, t.kvEnd);
    end = arith::MinSIOp::create(b, loc, end, t.kvEnd);
  }
  // Every KV tile needs its masks with a custom mask, or with explicit
  // positions under causal / window; otherwise only the last tile (keys
  // past kv_len), the tiles crossing the causal diagonal of the first query
  // and those reaching left of the last query's window.
  bool alwaysMask = op.customMask || (positions && (causal || opts.window));
  Value maskBits = arg(op.customMask);
  SmallVector<Value> kvCache;
  for (Value v : op.kvCache)
    kvCache.push_back(arg(v));
  // An fp8 cache's scales of this KV head: K's on the scores, V's on the
  // output (null without).
  Value kScale, vScale;
  if (op.scales) {
    Cache c{cache, SmallVector<Value, 2>(kvCache.begin(), kvCache.end()),
            KVScales{arg(op.scales.k), arg(op.scales.v)}};
    kScale = c.scale(e, /*isV=*/false, cacheHead);
    vScale = c.scale(e, /*isV=*/true, cacheHead);
  }
  scf::ForOp::create(
      b, loc, lo, hi, e.idx(tileKV), ValueRange{},
      [&](OpBuilder &, Location, Value t0, ValueRange) {
        TileGatherKVOp::create(b, loc, kvCache, pages.indptr,
                               pages.indices, t.request, t0, hi, cacheHead,
                               tiles.k, tiles.v, cache);
        TileQKOp::create(b, loc, tiles.q, tiles.k, kScale, tiles.s,
                         FloatAttr());
        Value need;
        if (!alwaysMask) {
          Value tileEnd = e.add(t0, e.idx(tileKV));
          need = e.cmpi(Pred::ugt, tileEnd, end);
          if (causal)
            need = arith::OrIOp::create(
                b, loc, need, e.cmpi(Pred::sgt, tileEnd, e.add(pos0, e.idx(1))));
          if (opts.window)
            need = arith::OrIOp::create(
                b, loc, need,
                e.cmpi(Pred::sge, e.sub(lastPos, t0), e.idx(*opts.window)));
        }
        TileMaskOp::create(
            b, loc, tiles.s, row0, t.rows, pos0, t0, end, t.kvHead,
            arg(op.qPositions), arg(op.alibiSlopes), maskBits,
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
  TileStoreOp::create(b, loc, tiles.m, tiles.l, tiles.acc,
                      t.outRow0 ? t.outRow0 : row0, t.rows, t.outStride,
                      t.kvHead, arg(op.o), arg(op.lse), vScale,
                      b.getI64IntegerAttr(group),
                      opts.lseBase2 ? b.getUnitAttr() : UnitAttr());
}
