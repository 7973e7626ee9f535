//===- PagedAttention.h - paged addressing and the merge algebra -*- C++ -*-===//
//
// The IR building blocks that every lowering of pa shares, so that the CPU
// loops and the GPU kernels cannot drift apart (docs/Semantics.md gives the
// rules they implement):
//
//   * PageTable: kv_len of a request, token -> (page, slot) through the CSR
//     page table, and the run-time checks of the table's invariants;
//   * Cache: element addressing of a paged cache (NHD / HND, joint / split);
//   * emitIndptrChecks: the invariants of a ragged array's indptr;
//   * emitInSlidingWindow: the overflow-free sliding-window test;
//   * StateMerge: the merge operator over any set of attention states,
//     normalized (o, lse) or running (m, l, acc), in base e or base 2.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_CONVERSION_PAGEDATTENTION_H
#define PAGEDATTN_CONVERSION_PAGEDATTENTION_H

#include "PagedAttn/Conversion/Emitter.h"

namespace mlir::pa {

/// True when no operand of `op` is a tensor: every array is a memref (the
/// form the lowerings accept; the tile ops also take index scalars).
inline bool hasMemRefSemantics(Operation *op) {
  return llvm::none_of(op->getOperandTypes(),
                       [](Type t) { return isa<TensorType>(t); });
}

/// Asserts (cf.assert) the invariants of the ragged-array index `indptr`
/// named `name`: at least one entry, indptr[0] == 0, non-decreasing, and
/// indptr[B] <= `length` (the rows of the array it indexes) when `length` is
/// given. The CPU lowering calls it for every indptr it reads.
void emitIndptrChecks(Emitter &e, Value indptr, StringRef name,
                      Value length = Value(), StringRef lengthName = "");

/// Asserts that the 1-D `array` named `name` has `entries` entries (`what`
/// says which, e.g. "B + 1").
void emitEntryCount(Emitter &e, Value array, StringRef name, Value entries,
                    StringRef what);

/// A CSR page table `(kv_indptr, kv_indices, kv_last_page_len)` with page
/// size P: kv lengths and token locations. With `checked`, the values read
/// are asserted (cf.assert) against the table's invariants; the GPU kernels
/// leave that to the runtime's checked mode.
struct PageTable {
  Value indptr, indices, last;
  int64_t pageSize;
  bool checked = true;

  /// Asserts the invariants of kv_indptr (against kv_indices when the op has
  /// them) and that kv_last_page_len has B entries; a no-op when unchecked.
  void emitChecks(Emitter &e, StringRef suffix = "") const;
  /// emitChecks, plus the invariants of a ragged array over the same
  /// requests: `rowsIndptr` (named `name` + `suffix`) indexes `rows` rows of
  /// `rowsName` and has as many entries as kv_indptr.
  void emitRaggedChecks(Emitter &e, Value rowsIndptr, StringRef name,
                        Value rows, StringRef rowsName,
                        StringRef suffix = "") const;
  /// emitChecks, plus: kv_indptr has B + 1 entries for the `batch` rows of
  /// a decode's q.
  void emitDecodeChecks(Emitter &e, Value batch) const;
  /// Index of the request's first page in kv_indices.
  Value pageBase(Emitter &e, Value b) const { return e.loadIdx(indptr, b); }
  /// kv_len[b] = 0 without pages, else (npages - 1) * P + last_page_len[b];
  /// checked: asserts 1 <= last_page_len <= P for requests with pages.
  Value kvLen(Emitter &e, Value b) const;
  /// The kv_indices entry (i32, unchecked) of the page holding token t given
  /// the request's page base.
  Value pageEntry(Emitter &e, Value base, Value t) const;
  /// (page, slot) of token t given the request's page base; checked: asserts
  /// the page index is within [0, numPages).
  std::pair<Value, Value> locate(Emitter &e, Value base, Value t,
                                 Value numPages = Value()) const;
};

/// The page table `pages(...)` of an op with one (decode, prefill, append,
/// scatter, decode_partial).
inline PageTable pageTableOf(PagedOpInterface op, bool checked = true) {
  PageTableOperands t = op.getPageTable();
  return PageTable{t.indptr, t.indices, t.lastPageLen, op.getPageSize(),
                   checked};
}

/// A paged KV cache (joint `[N, 2, ...]` or split K and V) of a layout, and
/// the K/V scales of an fp8 cache (docs/Semantics.md, "FP8 KV caches").
struct Cache {
  PagedKVAttr attr;
  SmallVector<Value, 2> tensors;
  /// `[1]` or `[Hkv]` f32 scales; null unless the cache is fp8.
  KVScales scales = {};

  /// True for an f8E4M3FN / f8E5M2 cache (whose values are scale * element).
  bool fp8() const { return isFP8CacheType(elementType()); }
  /// The f32 scale of K (or V) of KV head `head` (1 for a non-fp8 cache):
  /// `scale[0]` per tensor, `scale[head]` per head.
  Value scale(Emitter &e, bool isV, Value head) const;
  /// Element (page, k or v, slot, head, d) as an f32 value: dequantized with
  /// `scale` (from scale()) for an fp8 cache, extended otherwise.
  Value loadF32(Emitter &e, bool isV, Value page, Value slot, Value head,
                Value d, Value scale) const;
  /// Writes the row value `x` (of the rows' element type) to (page, k or v,
  /// slot, head, d): quantized with `scale` for an fp8 cache (emitQuantize),
  /// stored as is otherwise (x then has the cache's element type).
  void storeRow(Emitter &e, bool isV, Value x, Value page, Value slot,
                Value head, Value d, Value scale) const;
  /// Asserts (cf.assert) that every scale is finite and > 0.
  void emitScaleChecks(Emitter &e) const;

  bool joint() const { return tensors.size() == 1; }
  Value numPages(Emitter &e) const { return e.dim(tensors[0], 0); }
  Type elementType() const {
    return cast<MemRefType>(tensors[0].getType()).getElementType();
  }
  /// Indices of element (page, k or v, slot, head, d) in memref(isV); `d`
  /// may be the first element of a vector access.
  SmallVector<Value> indices(Emitter &e, bool isV, Value page, Value slot,
                             Value head, Value d) const;
  /// Elements of one page of memref(isV) (the product of its dims past the
  /// first), or ShapedType::kDynamic when one of those is dynamic or the
  /// memref's layout is not the identity (row-major, contiguous).
  int64_t pageElems(bool isV) const;
  /// The offset in elements of (k or v, slot, head, d) from its page's first
  /// element in memref(isV), whose page must be static (pageElems). With
  /// memref(isV) viewed as 1-D, the element is at page * pageElems() plus
  /// this, which does not change with the page.
  Value offsetInPage(Emitter &e, bool isV, Value slot, Value head,
                     Value d) const;
  Value memref(bool isV) const {
    return joint() ? tensors[0] : tensors[isV ? 1 : 0];
  }
  Value load(Emitter &e, bool isV, Value page, Value slot, Value head,
             Value d) const {
    return e.load(memref(isV), indices(e, isV, page, slot, head, d));
  }
  void store(Emitter &e, bool isV, Value v, Value page, Value slot, Value head,
             Value d) const {
    e.store(v, memref(isV), indices(e, isV, page, slot, head, d));
  }
};

/// The fp8 value of element type `fp8` (f8E4M3FN or f8E5M2) that stores `x`
/// (any float) under `scale` (f32): x / scale in f32, clamped to the format's
/// largest finite magnitude (NaN stays NaN), rounded to nearest even by
/// arith.truncf. `x` may be a vector (the result is then a vector of
/// `fp8`); `scale` is a scalar.
Value emitQuantize(Emitter &e, Value x, Value scale, Type fp8);

/// Asserts qo_len <= kv_len: without explicit positions a request's queries
/// are its last qo_len tokens (positions kv_len - qo_len + i).
void emitQueriesAreLastTokens(Emitter &e, Value qoLen, Value kvLen);

/// A custom mask `mask(%packed, %mask_indptr)`: per request a row-major
/// [qo_len, kv_len] bit matrix, packed little-endian 8 per byte, starting at
/// byte mask_indptr[b] (docs/Semantics.md, "Prefill / append").
struct PackedMask {
  Value bits, indptr;

  /// Asserts mask_indptr's invariants against the mask and qo_indptr.
  void emitChecks(Emitter &e, Value qoIndptr) const;
  /// The first byte of request b's segment; asserts that the segment holds
  /// ceil(qo_len * kv_len / 8) bytes.
  Value segmentBase(Emitter &e, Value b, Value qoLen, Value kvLen) const;
  /// i1: bit `bit` of the segment starting at byte `base`.
  Value emitBit(Emitter &e, Value base, Value bit) const;
};

/// i1: key `t` is inside the sliding window of `window` keys that ends at the
/// query position `pos`, i.e. t > pos - window, evaluated as
/// pos - t < window so that any window up to INT64_MAX (no window) is exact.
Value emitInSlidingWindow(Emitter &e, Value t, Value pos, int64_t window);

/// How a lowering evaluates exponentials: base e (math.exp / math.log, the
/// CPU loops) or base 2 (ex2 / lg2, the GPU kernels). `exp(x)` is base^x and
/// `log(x)` is log_base(x).
struct ExpBase {
  bool base2 = false;
  function_ref<Value(Value)> exp;
  function_ref<Value(Value)> log;
};

/// The states a merge reads, all f32: state i in [begin, end) has its maximum
/// score (or its lse) `m(i)` in the ExpBase's base, its sum of weights `l(i)`
/// (normalized states (o, lse) have l = 1: leave `l` null) and element d of
/// its output `acc(i, d)` (o, or the unnormalized accumulator).
struct StateSet {
  Value begin, end;
  function_ref<Value(Value)> m;
  function_ref<Value(Value)> l;
  function_ref<Value(Value, Value)> acc;
};

/// The merge operator over a StateSet. Construction emits m* = max_i m(i)
/// and the total weight L = sum_i w_i l(i) with w_i = base^(m(i) - m*)
/// (m* = -inf counts as 0, so no weight is NaN); element(d) and lse() emit
/// the merged values. An empty merge (no state, or all with m = -inf or
/// l = 0) gives o = 0, lse = -inf; a state of weight 0 never reaches the
/// result, even if its acc is not finite.
class StateMerge {
public:
  StateMerge(Emitter &e, const ExpBase &base, const StateSet &states);

  /// Merged element d: sum_i w_i acc(i, d) / L (f32), 0 when empty. With
  /// `width` > 1, `acc(i, d)` returns elements [d, d + width) as a
  /// vector<width x f32> and so does element(d).
  Value element(Value d, int64_t width = 1);
  /// Merged lse in base 2 or e: m* + log(L), -inf when empty.
  Value lse(bool base2);
  /// i1: the merge saw some weight.
  Value nonEmpty() const { return hasWeight; }
  /// m* with -inf as 0 (each weight is base^(m(i) - shift())), and the
  /// total weight L: what a merge of the elements outside this class
  /// (the GPU MLA merge's many slots at once) needs.
  Value shift() const { return mSafe; }
  Value weight() const { return total; }

private:
  Emitter &e;
  ExpBase base;
  StateSet states;
  Value mMax, mSafe, total, hasWeight;
};

} // namespace mlir::pa

#endif // PAGEDATTN_CONVERSION_PAGEDATTENTION_H
