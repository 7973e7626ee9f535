//===- TileToLoops.cpp - tile-level pa.tile ops -> loops ------------------===//
//
// The CPU semantics of the tile ops that pa-tile-attention produces, so that
// a tiled prefill runs (and is checked against the reference) on the CPU:
// each op becomes plain loops over its tile. Rows and keys outside the
// tile's valid range are never read from q or the cache.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/PagedAttention.h"
#include "PagedAttn/Conversion/Passes.h"

#include <cmath>
#include <tuple>

using namespace mlir;
using namespace mlir::pa;

using Pred = arith::CmpIPredicate;

namespace {

Value tileDim(Emitter &e, Value tile, int64_t d) { return e.dim(tile, d); }

/// The GQA packing of a tile's rows: row r is query r / g of the tile and
/// query head kvHead * g + r % g.
std::pair<Value, Value> packedRow(Emitter &e, Value r, Value g, Value kvHead) {
  return {e.divui(r, g), e.add(e.mul(kvHead, g), e.remui(r, g))};
}

struct LoadQToLoops final : OpRewritePattern<TileLoadQOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileLoadQOp op,
                                PatternRewriter &rewriter) const override {
    Emitter e{rewriter, op.getLoc()};
    Value g = e.idx(op.getGroup());
    Value scale = e.f32(op.getScale().convertToDouble());
    Value tile = op.getTile();
    e.forEach(e.idx(0), tileDim(e, tile, 0), [&](Value r) {
      Value i, h;
      std::tie(i, h) = packedRow(e, r, g, op.getKvHead());
      Value valid = e.cmpi(Pred::slt, i, op.getRows());
      e.forEach(e.idx(0), tileDim(e, tile, 1), [&](Value d) {
        Value v = e.ifThenElse(
            valid, {e.b.getF32Type()},
            [&]() -> SmallVector<Value> {
              Value x = e.toF32(e.load(op.getQ(), {e.add(op.getRow0(), i), h, d}));
              return {e.mul(x, scale)};
            },
            [&]() -> SmallVector<Value> { return {e.f32(0)}; })[0];
        e.store(v, tile, {r, d});
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct GatherKVToLoops final : OpRewritePattern<TileGatherKVOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileGatherKVOp op,
                                PatternRewriter &rewriter) const override {
    Emitter e{rewriter, op.getLoc()};
    Cache cache{op.getCache(), SmallVector<Value, 2>(op.getKvCache())};
    PageTable pt{op.getKvIndptr(), op.getKvIndices(), Value(),
                 op.getCache().getPageSize()};
    Value numPages = cache.numPages(e);
    Value base = pt.pageBase(e, op.getRequest());
    Value kt = op.getKTile(), vt = op.getVTile();
    e.forEach(e.idx(0), tileDim(e, kt, 0), [&](Value n) {
      Value t = e.add(op.getT0(), n);
      Value valid = e.cmpi(Pred::slt, t, op.getEnd());
      Value dims = tileDim(e, kt, 1);
      auto zero = [&]() {
        e.forEach(e.idx(0), dims, [&](Value d) {
          e.store(e.f32(0), kt, {n, d});
          e.store(e.f32(0), vt, {n, d});
        });
      };
      auto ifOp = scf::IfOp::create(e.b, e.loc, TypeRange(), valid,
                                    /*withElse=*/true);
      {
        OpBuilder::InsertionGuard guard(e.b);
        e.b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
        auto [page, slot] = pt.locate(e, base, t, numPages);
        e.forEach(e.idx(0), dims, [&](Value d) {
          e.store(e.toF32(cache.load(e, false, page, slot, op.getKvHead(), d)),
                  kt, {n, d});
          e.store(e.toF32(cache.load(e, true, page, slot, op.getKvHead(), d)),
                  vt, {n, d});
        });
        e.b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
        zero();
      }
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// out[r, c] = (accumulate ? out[r, c] : 0) + sum_k a(r, k) * b(k, c) over
/// every element of the 2-D tile `out` and k in [0, kLen): the tile matmul
/// of pa.tile.qk and pa.tile.pv.
void emitTileMatmul(Emitter &e, Value out, Value kLen, bool accumulate,
                    function_ref<Value(Value, Value)> a,
                    function_ref<Value(Value, Value)> b,
                    bool skipZeroA = false) {
  e.forEach(e.idx(0), tileDim(e, out, 0), [&](Value r) {
    e.forEach(e.idx(0), tileDim(e, out, 1), [&](Value c) {
      Value init = accumulate ? e.load(out, {r, c}) : e.f32(0);
      Value sum = e.forLoop(e.idx(0), kLen, {init},
                            [&](Value k, ValueRange acc) {
                              Value x = a(r, k);
                              Value prod = e.mul(x, b(k, c));
                              if (skipZeroA)
                                prod = e.select(
                                    e.cmpf(arith::CmpFPredicate::ONE, x,
                                           e.f32(0)),
                                    prod, e.f32(0));
                              return SmallVector<Value>{e.add(acc[0], prod)};
                            })
                      .getResult(0);
      e.store(sum, out, {r, c});
    });
  });
}

struct QKToLoops final : OpRewritePattern<TileQKOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileQKOp op,
                                PatternRewriter &rewriter) const override {
    Emitter e{rewriter, op.getLoc()};
    Value q = op.getQ(), k = op.getK();
    // The scale (times the K scale) multiplies Q's elements (in f32) as
    // they are read.
    std::optional<Value> scale;
    if (auto sc = op.getScale())
      scale = e.f32(sc->convertToDouble());
    if (Value ks = op.getKScale())
      scale = scale ? e.mul(*scale, ks) : ks;
    emitTileMatmul(
        e, op.getS(), tileDim(e, q, 1), /*accumulate=*/false,
        [&](Value r, Value d) {
          Value x = e.toF32(e.load(q, {r, d}));
          return scale ? e.mul(x, *scale) : x;
        },
        [&](Value d, Value n) { return e.toF32(e.load(k, {n, d})); });
    rewriter.eraseOp(op);
    return success();
  }
};

struct MaskToLoops final : OpRewritePattern<TileMaskOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileMaskOp op,
                                PatternRewriter &rewriter) const override {
    Emitter e{rewriter, op.getLoc()};
    Value g = e.idx(op.getGroup());
    Value s = op.getS();
    Type i1 = e.b.getI1Type(), idx = e.b.getIndexType();
    e.forEach(e.idx(0), tileDim(e, s, 0), [&](Value r) {
      Value i, h;
      std::tie(i, h) = packedRow(e, r, g, op.getKvHead());
      Value rowValid = e.cmpi(Pred::slt, i, op.getRows());
      Value pos = e.add(op.getPos0(), i);
      if (Value qpos = op.getQPositions())
        pos = e.ifThenElse(
            rowValid, {idx},
            [&]() -> SmallVector<Value> {
              return {e.loadIdx(qpos, e.add(op.getRow0(), i))};
            },
            [&]() -> SmallVector<Value> { return {e.idx(0)}; })[0];
      e.forEach(e.idx(0), tileDim(e, s, 1), [&](Value n) {
        Value t = e.add(op.getT0(), n);
        Value vis = e.andi(rowValid, e.cmpi(Pred::slt, t, op.getEnd()));
        if (op.getCausal())
          vis = e.andi(vis, e.cmpi(Pred::sle, t, pos));
        if (auto w = op.getWindow())
          vis = e.andi(vis, emitInSlidingWindow(
                                e, t, pos, static_cast<int64_t>(*w)));
        if (Value bits = op.getCustomMask()) {
          // Only valid rows and keys have a bit in the segment.
          PackedMask mask{bits, Value()};
          vis = e.ifThenElse(
              vis, {i1},
              [&]() -> SmallVector<Value> {
                Value bit = e.add(
                    e.mul(e.add(op.getMaskQrow0(), i), op.getMaskKvLen()), t);
                return {mask.emitBit(e, op.getMaskByte0(), bit)};
              },
              [&]() -> SmallVector<Value> { return {vis}; })[0];
        }
        // A tile the producer declared fully visible skips the masks (so a
        // wrong declaration shows up as a wrong result in the CPU tests).
        if (Value check = op.getMaskedIf())
          vis = e.select(check, vis, arith::ConstantIntOp::create(
                                         e.b, e.loc, 1, 1));
        Value x = e.load(s, {r, n});
        if (auto c = op.getLogitsSoftCap()) {
          Value cap = e.f32(c->convertToDouble());
          x = e.mul(cap, e.tanh(e.divf(x, cap)));
        }
        if (Value slopes = op.getAlibiSlopes()) {
          // The slope of a row past the tile's queries is never used.
          Value hSafe = e.select(rowValid, h, e.mul(op.getKvHead(), g));
          x = e.add(x, e.mul(e.load(slopes, {hSafe}),
                             e.indexToF32(e.sub(t, pos))));
        }
        e.store(e.select(vis, x, e.negInf()), s, {r, n});
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct InitStateToLoops final : OpRewritePattern<TileInitStateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileInitStateOp op,
                                PatternRewriter &rewriter) const override {
    Emitter e{rewriter, op.getLoc()};
    Value acc = op.getAcc();
    e.forEach(e.idx(0), tileDim(e, acc, 0), [&](Value r) {
      e.store(e.negInf(), op.getM(), {r});
      e.store(e.f32(0), op.getL(), {r});
      e.forEach(e.idx(0), tileDim(e, acc, 1),
                [&](Value d) { e.store(e.f32(0), acc, {r, d}); });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct SoftmaxUpdateToLoops final : OpRewritePattern<TileSoftmaxUpdateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileSoftmaxUpdateOp op,
                                PatternRewriter &rewriter) const override {
    Emitter e{rewriter, op.getLoc()};
    Value s = op.getS(), acc = op.getAcc();
    e.forEach(e.idx(0), tileDim(e, s, 0), [&](Value r) {
      Value m = e.load(op.getM(), {r});
      Value mNew = e.forLoop(e.idx(0), tileDim(e, s, 1), {m},
                             [&](Value n, ValueRange mx) {
                               return SmallVector<Value>{
                                   e.maxf(mx[0], e.load(s, {r, n}))};
                             })
                       .getResult(0);
      // With no visible score yet, m' = -inf: subtract 0 instead, so that
      // exp(-inf) = 0 and nothing is NaN.
      Value mSafe = e.select(e.cmpf(arith::CmpFPredicate::OEQ, mNew,
                                    e.negInf()),
                             e.f32(0), mNew);
      Value alpha = e.exp(e.sub(m, mSafe));
      Value sum = e.forLoop(e.idx(0), tileDim(e, s, 1), {e.f32(0)},
                            [&](Value n, ValueRange acc0) {
                              Value p = e.exp(e.sub(e.load(s, {r, n}), mSafe));
                              e.store(p, s, {r, n});
                              return SmallVector<Value>{e.add(acc0[0], p)};
                            })
                      .getResult(0);
      e.store(e.add(e.mul(e.load(op.getL(), {r}), alpha), sum), op.getL(),
              {r});
      e.forEach(e.idx(0), tileDim(e, acc, 1), [&](Value d) {
        e.store(e.mul(e.load(acc, {r, d}), alpha), acc, {r, d});
      });
      e.store(mNew, op.getM(), {r});
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct PVToLoops final : OpRewritePattern<TilePVOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TilePVOp op,
                                PatternRewriter &rewriter) const override {
    Emitter e{rewriter, op.getLoc()};
    Value p = op.getP(), v = op.getV();
    // A masked key (P = 0) contributes nothing, even if its V row is not
    // finite: the product is selected away, not computed as 0 * v.
    emitTileMatmul(
        e, op.getAcc(), tileDim(e, p, 1), /*accumulate=*/true,
        [&](Value r, Value n) { return e.load(p, {r, n}); },
        [&](Value n, Value d) { return e.toF32(e.load(v, {n, d})); },
        /*skipZeroA=*/true);
    rewriter.eraseOp(op);
    return success();
  }
};

struct StoreToLoops final : OpRewritePattern<TileStoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileStoreOp op,
                                PatternRewriter &rewriter) const override {
    Emitter e{rewriter, op.getLoc()};
    Value g = e.idx(op.getGroup());
    Value acc = op.getAcc();
    Type oElem = cast<MemRefType>(op.getO().getType()).getElementType();
    e.forEach(e.idx(0), tileDim(e, acc, 0), [&](Value r) {
      Value i, h;
      std::tie(i, h) = packedRow(e, r, g, op.getKvHead());
      e.ifThen(e.cmpi(Pred::slt, i, op.getRows()), [&]() {
        Value row = e.add(op.getRow0(), op.getRowStride()
                                            ? e.mul(i, op.getRowStride())
                                            : i);
        Value l = e.load(op.getL(), {r});
        Value nonEmpty = e.cmpf(arith::CmpFPredicate::OGT, l, e.f32(0));
        Value one = op.getVScale() ? op.getVScale() : e.f32(1);
        Value inv = e.select(nonEmpty, e.divf(one, l), e.f32(0));
        e.forEach(e.idx(0), tileDim(e, acc, 1), [&](Value d) {
          e.store(e.fromF32(e.mul(e.load(acc, {r, d}), inv), oElem),
                  op.getO(), {row, h, d});
        });
        Value lse = e.add(e.load(op.getM(), {r}), e.log(l));
        if (op.getLseBase2())
          lse = e.mul(lse, e.f32(1.0 / std::log(2.0)));
        e.store(e.select(nonEmpty, lse, e.negInf()), op.getLse(), {row, h});
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::pa::populatePATileToLoopsPatterns(RewritePatternSet &patterns) {
  patterns.add<LoadQToLoops, GatherKVToLoops, QKToLoops, MaskToLoops,
               InitStateToLoops, SoftmaxUpdateToLoops, PVToLoops, StoreToLoops>(
      patterns.getContext());
}
