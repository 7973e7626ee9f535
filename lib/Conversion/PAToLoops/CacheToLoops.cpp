//===- CacheToLoops.cpp - KV cache writes and the split-KV planner -> loops ===//
//
// append_kv, append_kv_slots, scatter_kv copy [Hkv, D] rows into the paged
// cache through the page table (or the slot mapping), quantizing them into an
// fp8 cache; plan_split_kv fills the CSR work list of fixed-size chunks.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/PagedAttention.h"
#include "PagedAttn/Conversion/Passes.h"

using namespace mlir;
using namespace mlir::pa;

namespace {

/// Copies row `r` of k/v rows [N, Hkv, D] into cache token (page, slot),
/// quantized with the head's scales into an fp8 cache.
void copyRow(Emitter &e, const Cache &cache, Value kRows, Value vRows, Value r,
             Value page, Value slot) {
  Value hkv = e.idx(cache.attr.getNumKVHeads());
  Value d = e.idx(cache.attr.getHeadDim());
  e.forEach(e.idx(0), hkv, [&](Value h) {
    Value kScale = cache.scale(e, false, h), vScale = cache.scale(e, true, h);
    e.forEach(e.idx(0), d, [&](Value k) {
      cache.storeRow(e, false, e.load(kRows, {r, h, k}), page, slot, h, k,
                     kScale);
      cache.storeRow(e, true, e.load(vRows, {r, h, k}), page, slot, h, k,
                     vScale);
    });
  });
}

/// The cache outs of a cache-writing op, with its scales; asserts that the
/// scales of an fp8 cache are finite and > 0.
template <typename OpTy> Cache cacheOuts(Emitter &e, OpTy op) {
  Cache cache{op.getCache(), SmallVector<Value, 2>(op.getOuts()),
              KVScales{op.getKScale(), op.getVScale()}};
  cache.emitScaleChecks(e);
  return cache;
}

struct AppendKVToLoops final : OpRewritePattern<AppendKVOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AppendKVOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasMemRefSemantics(op))
      return rewriter.notifyMatchFailure(op, "expects the memref form");
    Emitter e{rewriter, op.getLoc()};
    Cache cache = cacheOuts(e, op);
    PageTable pt = pageTableOf(op);
    Value numPages = cache.numPages(e);
    Value ai = op.getAppendIndptr();
    pt.emitRaggedChecks(e, ai, "append_indptr", e.dim(op.getKNew(), 0),
                        "the new rows");
    Value batch = e.sub(e.dim(ai, 0), e.idx(1));
    e.forEach(e.idx(0), batch, [&](Value b) {
      Value as = e.loadIdx(ai, b);
      Value alen = e.sub(e.loadIdx(ai, e.add(b, e.idx(1))), as);
      Value kvLen = pt.kvLen(e, b);
      e.assertTrue(
          e.andi(e.cmpi(arith::CmpIPredicate::sge, alen, e.idx(0)),
                 e.cmpi(arith::CmpIPredicate::sle, alen, kvLen)),
          "append_len must be in [0, kv_len] (the page table describes the "
          "cache after the append)");
      Value base = pt.pageBase(e, b);
      Value first = e.sub(kvLen, alen);
      e.forEach(e.idx(0), alen, [&](Value j) {
        auto [page, slot] = pt.locate(e, base, e.add(first, j), numPages);
        copyRow(e, cache, op.getKNew(), op.getVNew(), e.add(as, j), page,
                slot);
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct AppendKVSlotsToLoops final : OpRewritePattern<AppendKVSlotsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AppendKVSlotsOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasMemRefSemantics(op))
      return rewriter.notifyMatchFailure(op, "expects the memref form");
    Emitter e{rewriter, op.getLoc()};
    Cache cache = cacheOuts(e, op);
    int64_t pageSize = op.getCache().getPageSize();
    Value slots = e.mul(cache.numPages(e), e.idx(pageSize));
    Value n = e.dim(op.getSlotMapping(), 0);
    e.forEach(e.idx(0), n, [&](Value r) {
      Value slot = e.loadIdx(op.getSlotMapping(), r);
      Value valid = e.cmpi(arith::CmpIPredicate::sge, slot, e.idx(0));
      e.ifThen(valid, [&]() {
        e.assertTrue(e.cmpi(arith::CmpIPredicate::slt, slot, slots),
                     "slot_mapping entry out of range [0, num_pages * P)");
        copyRow(e, cache, op.getKNew(), op.getVNew(), r,
                e.divui(slot, e.idx(pageSize)), e.remui(slot, e.idx(pageSize)));
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct ScatterKVToLoops final : OpRewritePattern<ScatterKVOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScatterKVOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasMemRefSemantics(op))
      return rewriter.notifyMatchFailure(op, "expects the memref form");
    Emitter e{rewriter, op.getLoc()};
    Cache cache = cacheOuts(e, op);
    PageTable pt = pageTableOf(op);
    Value numPages = cache.numPages(e);
    Value ri = op.getRowsIndptr();
    pt.emitRaggedChecks(e, ri, "rows_indptr", e.dim(op.getKRows(), 0),
                        "the rows");
    Value batch = e.sub(e.dim(ri, 0), e.idx(1));
    e.forEach(e.idx(0), batch, [&](Value b) {
      Value rs = e.loadIdx(ri, b);
      Value re = e.loadIdx(ri, e.add(b, e.idx(1)));
      Value kvLen = pt.kvLen(e, b);
      Value base = pt.pageBase(e, b);
      e.forEach(rs, re, [&](Value r) {
        Value t = e.loadIdx(op.getPositions(), r);
        e.assertTrue(
            e.andi(e.cmpi(arith::CmpIPredicate::sge, t, e.idx(0)),
                   e.cmpi(arith::CmpIPredicate::slt, t, kvLen)),
            "scatter position out of [0, kv_len)");
        auto [page, slot] = pt.locate(e, base, t, numPages);
        copyRow(e, cache, op.getKRows(), op.getVRows(), r, page, slot);
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct PlanSplitKVToLoops final : OpRewritePattern<PlanSplitKVOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PlanSplitKVOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasMemRefSemantics(op))
      return rewriter.notifyMatchFailure(op, "expects the memref form");
    Emitter e{rewriter, op.getLoc()};
    PageTable pt{op.getKvIndptr(), Value(), op.getKvLastPageLen(),
                 static_cast<int64_t>(op.getPageSize())};
    Value wi = op.getOuts()[0], wr = op.getOuts()[1], ws = op.getOuts()[2],
          we = op.getOuts()[3];
    Value capacity = e.dim(wr, 0);
    Value chunk = e.idx(op.getChunkSize());
    pt.emitChecks(e);
    Value batch = e.sub(e.dim(op.getKvIndptr(), 0), e.idx(1));
    Value total = e.forLoop(e.idx(0), batch, {e.idx(0)}, [&](Value b,
                                                              ValueRange w) {
      e.store(e.toI32(w[0]), wi, {b});
      Value len = pt.kvLen(e, b);
      Value chunks =
          e.divui(e.add(len, e.sub(chunk, e.idx(1))), chunk);
      scf::ForOp next = e.forLoop(e.idx(0), chunks, {w[0]}, [&](Value c,
                                                            ValueRange cw) {
        e.assertTrue(e.cmpi(arith::CmpIPredicate::slt, cw[0], capacity),
                     "split-KV work list longer than its outs");
        Value start = e.mul(c, chunk);
        Value end = arith::MinUIOp::create(e.b, e.loc, e.add(start, chunk), len);
        e.store(e.toI32(b), wr, {cw[0]});
        e.store(e.toI32(start), ws, {cw[0]});
        e.store(e.toI32(end), we, {cw[0]});
        return SmallVector<Value>{e.add(cw[0], e.idx(1))};
      });
      return SmallVector<Value>{next.getResult(0)};
    }).getResult(0);
    e.store(e.toI32(total), wi, {batch});
    rewriter.eraseOp(op);
    return success();
  }
};

/// The pages [floor(n d / N), floor(n (d + 1) / N)) of a request's `pages`
/// that device `d` of `N` owns with contiguous ownership (pa.shard_pages,
/// pa.shard_work).
std::pair<Value, Value> ownedPages(Emitter &e, Value pages, Value d, Value n) {
  return {e.divui(e.mul(pages, d), n),
          e.divui(e.mul(pages, e.add(d, e.idx(1))), n)};
}

/// pa.shard_pages: one pass over the requests, each copying the entries of
/// the pages the device owns (a strided range: [n d / N, n (d + 1) / N)
/// step 1, or [d, n) step N round robin), then zeros past them.
struct ShardPagesToLoops final : OpRewritePattern<ShardPagesOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ShardPagesOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasMemRefSemantics(op))
      return rewriter.notifyMatchFailure(op, "expects the memref form");
    Emitter e{rewriter, op.getLoc()};
    using Pred = arith::CmpIPredicate;
    int64_t pageSize = op.getPageSize();
    PageTable pt{op.getKvIndptr(), op.getKvIndices(), op.getKvLastPageLen(),
                 pageSize};
    Value ip = op.getOuts()[0], ix = op.getOuts()[1], lp = op.getOuts()[2];
    pt.emitChecks(e);
    Value n = e.idx(op.getDevices()), d = e.idx(op.getDevice());
    Value batch = e.sub(e.dim(op.getKvIndptr(), 0), e.idx(1));
    Value total = e.forLoop(e.idx(0), batch, {e.idx(0)}, [&](Value b,
                                                              ValueRange w) {
      e.store(e.toI32(w[0]), ip, {b});
      Value base = pt.pageBase(e, b);
      Value pages = e.sub(e.loadIdx(op.getKvIndptr(), e.add(b, e.idx(1))),
                          base);
      Value lo, hi, step;
      if (op.getRoundRobin()) {
        lo = d;
        hi = pages;
        step = n;
      } else {
        std::tie(lo, hi) = ownedPages(e, pages, d, n);
        step = e.idx(1);
      }
      // The request's last page (pages - 1) is the device's: its
      // last_page_len; every other page of the device is full.
      Value lastPage = e.sub(pages, e.idx(1));
      Value ownsLast =
          op.getRoundRobin()
              ? e.cmpi(Pred::eq, e.remui(lastPage, n), d)
              : e.andi(e.cmpi(Pred::ult, lo, hi), e.cmpi(Pred::eq, hi, pages));
      ownsLast = e.andi(e.cmpi(Pred::ugt, pages, e.idx(0)), ownsLast);
      Value last = e.load(op.getKvLastPageLen(), {b});
      e.store(e.select(ownsLast, last, e.i32(pageSize)), lp, {b});
      scf::ForOp copy = e.forLoop(lo, hi, step, {w[0]}, [&](Value j,
                                                        ValueRange cw) {
        e.store(e.load(op.getKvIndices(), {e.add(base, j)}), ix, {cw[0]});
        return SmallVector<Value>{e.add(cw[0], e.idx(1))};
      });
      return SmallVector<Value>{copy.getResult(0)};
    }).getResult(0);
    e.store(e.toI32(total), ip, {batch});
    e.forEach(total, e.dim(ix, 0), [&](Value k) { e.store(e.i32(0), ix, {k}); });
    rewriter.eraseOp(op);
    return success();
  }
};

struct ShardWorkToLoops final : OpRewritePattern<ShardWorkOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ShardWorkOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasMemRefSemantics(op))
      return rewriter.notifyMatchFailure(op, "expects the memref form");
    Emitter e{rewriter, op.getLoc()};
    int64_t pageSize = op.getPageSize();
    PageTable pt{op.getKvIndptr(), op.getKvIndices(), op.getKvLastPageLen(),
                 pageSize};
    pt.emitChecks(e);
    Value qo = op.getQoIndptr();
    Value batch = e.sub(e.dim(op.getKvIndptr(), 0), e.idx(1));
    if (qo)
      emitEntryCount(e, qo, "qo_indptr", e.add(batch, e.idx(1)),
                     "batch + 1 (kv_indptr's entries)");
    Value n = e.idx(op.getDevices()), d = e.idx(op.getDevice());
    ValueRange w = op.getOuts();
    e.forEach(e.idx(0), batch, [&](Value b) {
      Value base = pt.pageBase(e, b);
      Value pages =
          e.sub(e.loadIdx(op.getKvIndptr(), e.add(b, e.idx(1))), base);
      Value len = pt.kvLen(e, b);
      Value p = e.idx(pageSize);
      auto minIdx = [&](Value x, Value y) {
        return e.select(e.cmpi(arith::CmpIPredicate::ult, x, y), x, y);
      };
      // Tokens of pages [floor(n d / N), floor(n (d + 1) / N)), clipped
      // to the request's length (its last page may be partial).
      auto [first, end] = ownedPages(e, pages, d, n);
      Value lo = minIdx(e.mul(first, p), len);
      Value hi = minIdx(e.mul(end, p), len);
      if (!qo) {
        // decode_partial's list: item b is request b.
        Value vals[4] = {b, b, lo, hi};
        for (auto [out, v] : llvm::zip(w, vals))
          e.store(e.toI32(v), out, {b});
        return;
      }
      Value q0 = e.loadIdx(qo, b), q1 = e.loadIdx(qo, e.add(b, e.idx(1)));
      Value vals[7] = {b,  e.idx(0), e.sub(q1, q0), lo,
                       hi, q0,       e.idx(1)};
      for (auto [out, v] : llvm::zip(w, vals))
        e.store(e.toI32(v), out, {b});
    });
    if (!qo)
      e.store(e.toI32(batch), w[0], {batch});
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::pa::populatePACacheToLoopsPatterns(RewritePatternSet &patterns) {
  patterns.add<AppendKVToLoops, AppendKVSlotsToLoops, ScatterKVToLoops,
               PlanSplitKVToLoops, ShardPagesToLoops, ShardWorkToLoops>(
      patterns.getContext());
}
