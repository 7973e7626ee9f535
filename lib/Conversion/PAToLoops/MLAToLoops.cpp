//===- MLAToLoops.cpp - pa.mla_decode -> loops ----------------------------===//
//
// Multi-head latent attention decode over the paged latent cache
// `[num_pages, P, D_ckv + D_kpe]`: every (request, head) folds the request's
// tokens into an f32 running state (online softmax), with one scratch
// accumulator acc[D_ckv] reused by every (request, head):
//
//   for b < B: kv_len = ..., base = kv_indptr[b]
//     for h < H:
//       acc[:] = 0
//       m, l = for t < kv_len iter (m = -inf, l = 0):
//         (page, slot) = locate(t)
//         s = sm_scale * (sum_d<D_ckv q_nope[b,h,d] * row[d]
//                       + sum_d<D_kpe q_pe[b,h,d] * row[D_ckv + d])
//         s = cap * tanh(s / cap)                       // logits_soft_cap
//         m' = max(m, s); a = exp(m - m'); p = exp(s - m')
//         acc[d] = acc[d] * a + p * row[d]   (d < D_ckv)
//         yield m', l * a + p
//       o[b,h,:] = l > 0 ? acc / l : 0
//       lse[b,h] = l > 0 ? m + ln l (/ ln 2 with lse_base2) : -inf
//
// Before the loops, the run-time sizes are asserted against each other (the
// verifier checks the static ones) and the page table against its
// invariants, as for pa.decode.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/PagedAttention.h"
#include "PagedAttn/Conversion/Passes.h"

#include <cmath>

using namespace mlir;
using namespace mlir::pa;

namespace {

using Pred = arith::CmpIPredicate;

/// Asserts dim `d` of `v` == `expected` with message `msg`.
void assertDim(Emitter &e, Value v, int64_t d, Value expected, StringRef msg) {
  e.assertTrue(e.cmpi(Pred::eq, e.dim(v, d), expected), msg);
}

struct MLADecodeToLoops final : OpRewritePattern<MLADecodeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MLADecodeOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasMemRefSemantics(op))
      return rewriter.notifyMatchFailure(op, "expects the memref form");
    Emitter e{rewriter, op.getLoc()};
    PagedMLAAttr cache = op.getCache();
    const int64_t ckv = cache.getCkvDim(), kpe = cache.getKpeDim();
    Value qNope = op.getQNope(), qPe = op.getQPe(), kv = op.getKvCache();
    Value o = op.getO(), lse = op.getLse();
    PageTable pt = pageTableOf(op);
    AttentionOptions opts = op.getAttentionOptions();

    // Run-time sizes (static ones fold away).
    Value batch = e.dim(qNope, 0), heads = e.dim(qNope, 1);
    assertDim(e, qNope, 2, e.idx(ckv), "q_nope dim 2 must be D_ckv");
    assertDim(e, qPe, 0, batch, "q_pe must have as many rows (B) as q_nope");
    assertDim(e, qPe, 1, heads, "q_pe must have as many heads (H) as q_nope");
    assertDim(e, qPe, 2, e.idx(kpe), "q_pe dim 2 must be D_kpe");
    assertDim(e, kv, 1, e.idx(cache.getPageSize()),
              "MLA cache dim 1 must be the page size P");
    assertDim(e, kv, 2, e.idx(ckv + kpe),
              "MLA cache dim 2 must be D_ckv + D_kpe");
    for (int64_t d = 0; d < 3; ++d)
      assertDim(e, o, d, e.dim(qNope, d), "o must have q_nope's shape");
    assertDim(e, lse, 0, batch, "lse must have B rows");
    assertDim(e, lse, 1, heads, "lse must have H columns");
    pt.emitChecks(e);
    assertDim(e, pt.indptr, 0, e.add(batch, e.idx(1)),
              "kv_indptr must have B + 1 entries (B = rows of q_nope)");

    Type f32 = e.b.getF32Type();
    Type oElem = cast<MemRefType>(o.getType()).getElementType();
    Value numPages = e.dim(kv, 0);
    Value dCkv = e.idx(ckv), dKpe = e.idx(kpe), zero = e.idx(0);
    Value acc = e.alloc(f32, {dCkv});
    e.forEach(zero, batch, [&](Value b) {
      Value kvLen = pt.kvLen(e, b);
      Value base = pt.pageBase(e, b);
      e.forEach(zero, heads, [&](Value h) {
        e.forEach(zero, dCkv, [&](Value d) { e.store(e.f32(0), acc, {d}); });
        auto loop = e.forLoop(
            zero, kvLen, {e.negInf(), e.f32(0)},
            [&](Value t, ValueRange ml) -> SmallVector<Value> {
              Value m = ml[0], l = ml[1];
              std::pair<Value, Value> loc = pt.locate(e, base, t, numPages);
              Value page = loc.first, slot = loc.second;
              auto dot = [&](Value q, Value width, int64_t offset, Value init) {
                return e
                    .forLoop(zero, width, {init},
                             [&](Value d, ValueRange sum) {
                               Value qv = e.toF32(e.load(q, {b, h, d}));
                               Value kvv = e.toF32(e.load(
                                   kv, {page, slot, e.add(d, e.idx(offset))}));
                               return SmallVector<Value>{
                                   e.add(sum[0], e.mul(qv, kvv))};
                             })
                    .getResult(0);
              };
              Value s = dot(qPe, dKpe, ckv, dot(qNope, dCkv, 0, e.f32(0)));
              s = e.mul(s, e.f32(*opts.smScale));
              if (opts.softCap) {
                Value c = e.f32(*opts.softCap);
                s = e.mul(c, e.tanh(e.divf(s, c)));
              }
              Value mNew = e.maxf(m, s);
              Value alpha = e.exp(e.sub(m, mNew));
              Value p = e.exp(e.sub(s, mNew));
              e.forEach(zero, dCkv, [&](Value d) {
                Value a = e.load(acc, {d});
                Value v = e.toF32(e.load(kv, {page, slot, d}));
                e.store(e.add(e.mul(a, alpha), e.mul(p, v)), acc, {d});
              });
              return {mNew, e.add(e.mul(l, alpha), p)};
            });
        Value m = loop.getResult(0), l = loop.getResult(1);
        Value nonEmpty = e.cmpf(arith::CmpFPredicate::OGT, l, e.f32(0));
        Value inv = e.select(nonEmpty, e.divf(e.f32(1), l), e.f32(0));
        e.forEach(zero, dCkv, [&](Value d) {
          Value a = e.load(acc, {d});
          e.store(e.fromF32(e.mul(a, inv), oElem), o, {b, h, d});
        });
        Value lseV = e.add(m, e.log(l));
        if (opts.lseBase2)
          lseV = e.mul(lseV, e.f32(1.0 / std::log(2.0)));
        e.store(e.select(nonEmpty, lseV, e.negInf()), lse, {b, h});
      });
    });
    e.dealloc(acc);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::pa::populatePAMLAToLoopsPatterns(RewritePatternSet &patterns) {
  patterns.add<MLADecodeToLoops>(patterns.getContext());
}
