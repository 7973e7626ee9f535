//===- AttentionToLoops.cpp - decode/prefill/cascade/decode_partial -> loops ===//
//
// Every attention op keeps an f32 running state per (state row, head) in
// scratch buffers m[R, Hq], l[R, Hq], acc[R, Hq, D] and folds keys into it one
// at a time (online softmax):
//
//   for each (query row, head):              // per op: requests, levels, items
//     for t in keys: if visible(t):         // fp8: k[t], v[t] = scale * elem
//       s = scale * <q, k[t]>; s = cap * tanh(s / cap); s += slope * (t - pos)
//       m' = max(m, s); a = exp(m - m'); p = exp(s - m')
//       acc = acc * a + p * v[t]; l = l * a + p; m = m'
//   o = l > 0 ? acc / l : 0;  lse = l > 0 ? m + ln(l) : -inf
//
// A cascade continues the same state across its levels: attention over a
// union of disjoint key sets is the merge of the parts.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/PagedAttention.h"
#include "PagedAttn/Conversion/Passes.h"
#include "PagedAttn/Conversion/PrefillTiling.h"

#include <cmath>

using namespace mlir;
using namespace mlir::pa;

namespace {

/// Options and operands shared by every attention op.
struct AttnSpec {
  Cache cache;
  Value q, alibi;
  double smScale = 1.0;
  std::optional<double> softCap;
  std::optional<int64_t> window;
  bool lseBase2 = false;
  // Custom mask (prefill only).
  PackedMask mask;
  // Scratch state.
  Value m, l, acc;
  Value group, numPages;
};

AttnSpec makeSpec(Emitter &e, AttentionOpInterface op) {
  AttnSpec s;
  s.cache = Cache{op.getCache(), SmallVector<Value, 2>(op.getKvCache()),
                  op.getKVScales()};
  s.q = op.getQ();
  s.alibi = op.getAlibiSlopes();
  AttentionOptions opts = op.getAttentionOptions();
  s.smScale = opts.getSmScaleOr(op.getCache().getHeadDim());
  s.softCap = opts.softCap;
  s.window = opts.window;
  s.lseBase2 = opts.lseBase2;
  Value hq = e.dim(s.q, 1);
  s.group = e.divui(hq, e.idx(op.getCache().getNumKVHeads()));
  s.numPages = s.cache.numPages(e);
  return s;
}

/// Allocates the state of `rows` x Hq and sets it to the identity
/// (m = -inf, l = 0, acc = 0).
void initState(Emitter &e, AttnSpec &s, Value rows) {
  Value hq = e.dim(s.q, 1);
  Value d = e.idx(s.cache.attr.getHeadDim());
  Type f32 = e.b.getF32Type();
  s.m = e.alloc(f32, {rows, hq});
  s.l = e.alloc(f32, {rows, hq});
  s.acc = e.alloc(f32, {rows, hq, d});
  e.forEach(e.idx(0), rows, [&](Value r) {
    e.forEach(e.idx(0), hq, [&](Value h) {
      e.store(e.negInf(), s.m, {r, h});
      e.store(e.f32(0), s.l, {r, h});
      e.forEach(e.idx(0), d,
                [&](Value k) { e.store(e.f32(0), s.acc, {r, h, k}); });
    });
  });
}

/// Writes o / lse of state rows [0, rows) and frees the scratch state.
void finishState(Emitter &e, AttnSpec &s, Value rows, Value o, Value lse) {
  Value hq = e.dim(s.q, 1);
  Value d = e.idx(s.cache.attr.getHeadDim());
  Type oElem = cast<MemRefType>(o.getType()).getElementType();
  e.forEach(e.idx(0), rows, [&](Value r) {
    e.forEach(e.idx(0), hq, [&](Value h) {
      Value l = e.load(s.l, {r, h});
      Value m = e.load(s.m, {r, h});
      Value nonEmpty = e.cmpf(arith::CmpFPredicate::OGT, l, e.f32(0));
      Value inv = e.select(nonEmpty, e.divf(e.f32(1), l), e.f32(0));
      e.forEach(e.idx(0), d, [&](Value k) {
        Value a = e.load(s.acc, {r, h, k});
        e.store(e.fromF32(e.mul(a, inv), oElem), o, {r, h, k});
      });
      Value lseV = e.add(m, e.log(l));
      if (s.lseBase2)
        lseV = e.mul(lseV, e.f32(1.0 / std::log(2.0)));
      e.store(e.select(nonEmpty, lseV, e.negInf()), lse, {r, h});
    });
  });
  e.dealloc(s.m);
  e.dealloc(s.l);
  e.dealloc(s.acc);
}

/// Where a query row's keys come from and which of them it sees.
struct KeyRange {
  Value qRow, stateRow, pageBase, pos, begin, end;
  bool causal = false;
  Value maskByteBase, maskRowBit; // custom mask only
};

/// Folds keys [begin, end) of one request into the state of (stateRow, h).
void emitKeyLoop(Emitter &e, const AttnSpec &s, const PageTable &pt,
                 const KeyRange &kr, Value h) {
  Value hk = e.divui(h, s.group);
  int64_t headDim = s.cache.attr.getHeadDim();
  Value d = e.idx(headDim);
  Value m0 = e.load(s.m, {kr.stateRow, h});
  Value l0 = e.load(s.l, {kr.stateRow, h});
  // An fp8 cache's K/V scales of this KV head (1 otherwise).
  Value kScale = s.cache.scale(e, false, hk);
  Value vScale = s.cache.scale(e, true, hk);
  Type f32 = e.b.getF32Type();
  auto loop = e.forLoop(kr.begin, kr.end, {m0, l0}, [&](Value t,
                                                         ValueRange ml) {
    Value m = ml[0], l = ml[1];
    Value vis = arith::ConstantOp::create(e.b, e.loc, e.b.getBoolAttr(true));
    if (kr.causal)
      vis = e.andi(vis, e.cmpi(arith::CmpIPredicate::sle, t, kr.pos));
    if (s.window)
      vis = e.andi(vis, emitInSlidingWindow(e, t, kr.pos, *s.window));
    if (s.mask.bits)
      vis = e.andi(vis, s.mask.emitBit(e, kr.maskByteBase,
                                       e.add(kr.maskRowBit, t)));
    return e.ifThenElse(
        vis, {f32, f32},
        [&]() -> SmallVector<Value> {
          auto [page, slot] = pt.locate(e, kr.pageBase, t, s.numPages);
          Value dot = e.forLoop(e.idx(0), d, {e.f32(0)},
                                [&](Value k, ValueRange acc) {
                                  Value qv = e.toF32(e.load(s.q, {kr.qRow, h, k}));
                                  Value kv = s.cache.loadF32(
                                      e, false, page, slot, hk, k, kScale);
                                  return SmallVector<Value>{
                                      e.add(acc[0], e.mul(qv, kv))};
                                })
                          .getResult(0);
          Value sc = e.mul(dot, e.f32(s.smScale));
          if (s.softCap) {
            Value c = e.f32(*s.softCap);
            sc = e.mul(c, e.tanh(e.divf(sc, c)));
          }
          if (s.alibi) {
            Value slope = e.load(s.alibi, {h});
            sc = e.add(sc, e.mul(slope, e.indexToF32(e.sub(t, kr.pos))));
          }
          Value mNew = e.maxf(m, sc);
          Value alpha = e.exp(e.sub(m, mNew));
          Value p = e.exp(e.sub(sc, mNew));
          e.forEach(e.idx(0), d, [&](Value k) {
            Value a = e.load(s.acc, {kr.stateRow, h, k});
            Value v = s.cache.loadF32(e, true, page, slot, hk, k, vScale);
            e.store(e.add(e.mul(a, alpha), e.mul(p, v)), s.acc,
                    {kr.stateRow, h, k});
          });
          return {mNew, e.add(e.mul(l, alpha), p)};
        },
        [&]() -> SmallVector<Value> { return {m, l}; });
  });
  e.store(loop.getResult(0), s.m, {kr.stateRow, h});
  e.store(loop.getResult(1), s.l, {kr.stateRow, h});
}

/// The keys of query i of a request (row qRow of q): its position
/// (q_positions, or kv_len - qo_len + i), all kv_len keys, the causal flag
/// and the custom mask's bit row.
KeyRange raggedQueryKeys(Emitter &e, const AttnSpec &s, Value base, Value qRow,
                         Value i, Value qoLen, Value kvLen, Value qPositions,
                         bool causal, Value maskByteBase) {
  KeyRange kr;
  kr.qRow = kr.stateRow = qRow;
  kr.pageBase = base;
  kr.pos = qPositions ? e.loadIdx(qPositions, qRow)
                      : e.add(e.sub(kvLen, qoLen), i);
  kr.begin = e.idx(0);
  kr.end = kvLen;
  kr.causal = causal;
  if (s.mask.bits) {
    kr.maskByteBase = maskByteBase;
    kr.maskRowBit = e.mul(i, kvLen);
  }
  return kr;
}

/// Ragged queries of one request group (prefill or a cascade level): request
/// b's queries qo_indptr[b] .. qo_indptr[b+1]-1 attend to its pages.
void emitRaggedQueries(Emitter &e, AttnSpec &s, const PageTable &pt,
                       Value qoIndptr, Value qPositions, bool causal,
                       bool requireQoLeKv, StringRef suffix = "") {
  pt.emitRaggedChecks(e, qoIndptr, "qo_indptr", e.dim(s.q, 0), "q", suffix);
  if (s.mask.bits)
    s.mask.emitChecks(e, qoIndptr);
  Value batch = e.sub(e.dim(qoIndptr, 0), e.idx(1));
  Value hq = e.dim(s.q, 1);
  e.forEach(e.idx(0), batch, [&](Value b) {
    Value qs = e.loadIdx(qoIndptr, b);
    Value qe = e.loadIdx(qoIndptr, e.add(b, e.idx(1)));
    Value qoLen = e.sub(qe, qs);
    Value kvLen = pt.kvLen(e, b);
    if (requireQoLeKv)
      emitQueriesAreLastTokens(e, qoLen, kvLen);
    Value base = pt.pageBase(e, b);
    Value maskByteBase;
    if (s.mask.bits)
      maskByteBase = s.mask.segmentBase(e, b, qoLen, kvLen);
    e.forEach(e.idx(0), qoLen, [&](Value i) {
      KeyRange kr = raggedQueryKeys(e, s, base, e.add(qs, i), i, qoLen, kvLen,
                                    qPositions, causal, maskByteBase);
      e.forEach(e.idx(0), hq, [&](Value h) { emitKeyLoop(e, s, pt, kr, h); });
    });
  });
}

/// The frame every attention lowering shares: the spec of `op`, a state of
/// `stateRows(e, s)` rows set to the identity, the op's loops (`body`, which
/// returns how many state rows it filled), then o / lse of those rows.
LogicalResult
lowerAttention(PatternRewriter &rewriter, AttentionOpInterface op,
               function_ref<Value(Emitter &, AttnSpec &)> stateRows,
               function_ref<Value(Emitter &, AttnSpec &, Value)> body) {
  if (!hasMemRefSemantics(op))
    return rewriter.notifyMatchFailure(op, "expects the memref form");
  Emitter e{rewriter, op.getLoc()};
  AttnSpec s = makeSpec(e, op);
  s.cache.emitScaleChecks(e);
  Value rows = stateRows(e, s);
  initState(e, s, rows);
  Value filled = body(e, s, rows);
  finishState(e, s, filled, op.getO(), op.getLse());
  rewriter.eraseOp(op);
  return success();
}

/// A query row `r` at position kv_len - 1 over the request's keys
/// [begin, end) (decode and its split-KV parts).
KeyRange decodeKeys(Emitter &e, const PageTable &pt, Value b, Value stateRow,
                    Value kvLen, Value begin, Value end) {
  KeyRange kr;
  kr.qRow = b;
  kr.stateRow = stateRow;
  kr.pageBase = pt.pageBase(e, b);
  kr.pos = e.sub(kvLen, e.idx(1));
  kr.begin = begin;
  kr.end = end;
  return kr;
}

struct DecodeToLoops final : OpRewritePattern<DecodeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DecodeOp op,
                                PatternRewriter &rewriter) const override {
    PageTable pt = pageTableOf(op);
    return lowerAttention(
        rewriter, op, [&](Emitter &e, AttnSpec &) { return e.dim(op.getQ(), 0); },
        [&](Emitter &e, AttnSpec &s, Value batch) {
          pt.emitDecodeChecks(e, batch);
          Value hq = e.dim(s.q, 1);
          e.forEach(e.idx(0), batch, [&](Value b) {
            Value kvLen = pt.kvLen(e, b);
            KeyRange kr = decodeKeys(e, pt, b, b, kvLen, e.idx(0), kvLen);
            e.forEach(e.idx(0), hq,
                      [&](Value h) { emitKeyLoop(e, s, pt, kr, h); });
          });
          return batch;
        });
  }
};

struct PrefillToLoops final : OpRewritePattern<PrefillOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PrefillOp op,
                                PatternRewriter &rewriter) const override {
    return lowerAttention(
        rewriter, op, [&](Emitter &e, AttnSpec &) { return e.dim(op.getQ(), 0); },
        [&](Emitter &e, AttnSpec &s, Value rows) {
          s.mask = PackedMask{op.getCustomMask(), op.getMaskIndptr()};
          // Without explicit positions, a query's position
          // kv_len - qo_len + i must not be negative where positions matter.
          bool positionsMatter = op.getCausal() || s.window || s.alibi;
          emitRaggedQueries(e, s, pageTableOf(op), op.getQoIndptr(),
                            op.getQPositions(), op.getCausal(),
                            /*requireQoLeKv=*/!op.getQPositions() &&
                                positionsMatter);
          return rows;
        });
  }
};

struct CascadeToLoops final : OpRewritePattern<CascadeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CascadeOp op,
                                PatternRewriter &rewriter) const override {
    return lowerAttention(
        rewriter, op, [&](Emitter &e, AttnSpec &) { return e.dim(op.getQ(), 0); },
        [&](Emitter &e, AttnSpec &s, Value rows) {
          int64_t levels = op.getNumLevels();
          for (int64_t l = 0; l < levels; ++l) {
            PageTable pt{op.getKvIndptrs()[l], op.getKvIndices()[l],
                         op.getKvLastPageLens()[l],
                         op.getCache().getPageSize()};
            bool causal = op.getCausal() && l == levels - 1;
            // Positions only matter with a causal mask, a window or ALiBi; a
            // shared prefix may hold fewer tokens than its queries otherwise.
            bool positionsMatter = causal || s.window || s.alibi;
            emitRaggedQueries(e, s, pt, op.getQoIndptrs()[l], Value(), causal,
                              positionsMatter, ("[" + Twine(l) + "]").str());
          }
          return rows;
        });
  }
};

struct DecodePartialToLoops final : OpRewritePattern<DecodePartialOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DecodePartialOp op,
                                PatternRewriter &rewriter) const override {
    PageTable pt = pageTableOf(op);
    return lowerAttention(
        rewriter, op,
        [&](Emitter &e, AttnSpec &) { return e.dim(op.getO(), 0); },
        [&](Emitter &e, AttnSpec &s, Value capacity) {
          pt.emitChecks(e);
          Value used = DecodeWorkItem::emitWorkListChecks(e, op, capacity);
          Value hq = e.dim(s.q, 1);
          e.forEach(e.idx(0), used, [&](Value w) {
            DecodeWorkItem item = DecodeWorkItem::loadChecked(e, op, pt, w);
            KeyRange kr = decodeKeys(e, pt, item.request, w, item.kvLen,
                                     item.kvStart, item.kvEnd);
            e.forEach(e.idx(0), hq,
                      [&](Value h) { emitKeyLoop(e, s, pt, kr, h); });
          });
          return used;
        });
  }
};

/// pa.prefill_partial: a state row per partial row; every work item's
/// queries fold the item's keys into their rows (prefill's masks at the
/// query's position in the whole request). Rows no item writes get the
/// identity (0, -inf).
struct PrefillPartialToLoops final : OpRewritePattern<PrefillPartialOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PrefillPartialOp op,
                                PatternRewriter &rewriter) const override {
    PageTable pt = pageTableOf(op);
    return lowerAttention(
        rewriter, op,
        [&](Emitter &e, AttnSpec &) { return e.dim(op.getO(), 0); },
        [&](Emitter &e, AttnSpec &s, Value rows) {
          s.mask = PackedMask{op.getCustomMask(), op.getMaskIndptr()};
          Value qoIndptr = op.getQoIndptr();
          pt.emitRaggedChecks(e, qoIndptr, "qo_indptr", e.dim(s.q, 0), "q");
          if (s.mask.bits)
            s.mask.emitChecks(e, qoIndptr);
          Value items = PrefillWorkItem::emitWorkListChecks(e, op);
          Value batch = e.sub(e.dim(qoIndptr, 0), e.idx(1));
          bool positionsMatter = op.getCausal() || s.window || s.alibi;
          Value hq = e.dim(s.q, 1);
          e.forEach(e.idx(0), items, [&](Value w) {
            PrefillWorkItem item = PrefillWorkItem::load(e, op, w);
            item.emitRequestCheck(e, batch);
            Value b = item.request;
            Value qs = e.loadIdx(qoIndptr, b);
            Value qoLen = e.sub(e.loadIdx(qoIndptr, e.add(b, e.idx(1))), qs);
            Value kvLen = pt.kvLen(e, b);
            item.emitChecks(e, qoLen, kvLen, rows);
            if (!op.getQPositions() && positionsMatter)
              emitQueriesAreLastTokens(e, qoLen, kvLen);
            Value base = pt.pageBase(e, b);
            Value maskByteBase =
                s.mask.bits ? s.mask.segmentBase(e, b, qoLen, kvLen) : Value();
            e.forEach(item.qoStart, item.qoEnd, [&](Value i) {
              KeyRange kr = raggedQueryKeys(e, s, base, e.add(qs, i), i, qoLen,
                                            kvLen, op.getQPositions(),
                                            op.getCausal(), maskByteBase);
              kr.stateRow = item.rowOf(e, i);
              kr.begin = item.kvStart;
              kr.end = item.kvEnd;
              e.forEach(e.idx(0), hq,
                        [&](Value h) { emitKeyLoop(e, s, pt, kr, h); });
            });
          });
          return rows;
        });
  }
};

} // namespace

void mlir::pa::populatePAAttentionToLoopsPatterns(RewritePatternSet &patterns) {
  patterns.add<DecodeToLoops, PrefillToLoops, CascadeToLoops,
               DecodePartialToLoops, PrefillPartialToLoops>(
      patterns.getContext());
}
