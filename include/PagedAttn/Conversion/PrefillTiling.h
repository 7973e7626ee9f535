//===- PrefillTiling.h - one query tile of pa.prefill as tile ops -*- C++ -*-===//
//
// The tiling of a memref-form pa.prefill into the tile-level ops
// (PATileOps.td), shared by the CPU tiling (pa-tile-attention, loops over the
// query tiles) and the GPU tiling (convert-pa-to-gpu, a CTA per query tile),
// so that what the CPU differential suite proves (the key range a tile
// visits, which KV tiles need their masks) is what the GPU kernel runs.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_CONVERSION_PREFILLTILING_H
#define PAGEDATTN_CONVERSION_PREFILLTILING_H

#include "PagedAttn/Conversion/PagedAttention.h"

#include "mlir/IR/IRMapping.h"

namespace mlir::pa {

/// The tile buffers of a query tile: Q [BM, D], K and V [BN, D], the scores
/// S [BM, BN] and the state m [BM], l [BM], acc [BM, D], all f32 memrefs.
struct PrefillTiles {
  Value q, k, v, s, m, l, acc;

  /// The tiles of a query tile of `rows` rows over KV tiles of `keys` keys
  /// at head dim `headDim`, as memref.alloca at `b`'s insertion point.
  static PrefillTiles alloc(OpBuilder &b, Location loc, int64_t rows,
                            int64_t keys, int64_t headDim);
};

/// Where a query tile sits: request `request`, KV head `kvHead`, queries
/// [i0, i0 + rows) of the request (its rows start at `qoStart` in q), the
/// request's query and key counts, and (with a custom mask) the first byte
/// of its mask segment. A pa.prefill_partial work item also gives its keys
/// [kvBegin, kvEnd) and the rows its states go to: query i0 + i writes row
/// outRow0 + i * outStride of the partial states (null: every key, and row
/// qoStart + i0 + i of o).
///
/// A tile may hold a chunk of h query heads of the GQA group (h dividing
/// g; the CUDA-core decode's heads per CTA): with `group` = h its rows are
/// those of a group of h heads whose "KV head" is `kvHead` (chunk z of KV
/// head y is y * g / h + z: query heads kvHead * h + r % h), and K / V come
/// from the cache's KV head `cacheHead`. 0 / null: the op's group, and
/// `kvHead`.
struct QueryTileCoords {
  Value request, kvHead, qoStart, i0, rows, qoLen, kvLen, maskByte0;
  Value kvBegin = {}, kvEnd = {}, outRow0 = {}, outStride = {};
  Value cacheHead = {};
  int64_t group = 0;

  /// The query tile of a decode: request `request`'s one query (row
  /// `request` of q, at position kv_len - 1) for KV head `kvHead`.
  static QueryTileCoords decode(Emitter &e, Value request, Value kvHead,
                                Value kvLen);
};

/// What the tiling reads of a pa.prefill or a pa.prefill_partial (which
/// share their query, cache, mask and option operands), or of a pa.decode /
/// pa.decode_partial: a decode is the prefill of one query per request
/// (query b is row b of q, at position kv_len - 1), so it has no qoIndptr,
/// positions, custom mask or causal flag.
struct PrefillOperands {
  Operation *op = nullptr;
  Value q, qoIndptr, qPositions, customMask, maskIndptr, alibiSlopes, o, lse;
  SmallVector<Value> kvCache;
  /// The K / V scales of an fp8 cache (null otherwise).
  KVScales scales;
  PagedKVAttr cache;
  bool causal = false;
  AttentionOptions options;

  explicit PrefillOperands(Operation *prefillOrPartial);
  /// The GQA group: query heads per KV head.
  int64_t group() const;
};

/// Work item `w` of a pa.prefill_partial, its seven i32 entries loaded as
/// index values: request, queries [qoStart, qoEnd), keys [kvStart, kvEnd),
/// the partial row of its first query and the row stride.
struct PrefillWorkItem {
  Value request, qoStart, qoEnd, kvStart, kvEnd, partialRow, partialStride;

  /// Asserts (cf.assert) that the op's work arrays all have as many
  /// entries as work_request; returns that count W.
  static Value emitWorkListChecks(Emitter &e, PrefillPartialOp op);
  /// Loads item `w` (the op's work arrays read through `map`).
  static PrefillWorkItem load(Emitter &e, PrefillPartialOp op, Value w,
                              const IRMapping &map = IRMapping());
  /// The partial row of the item's (request-local) query `i`.
  Value rowOf(Emitter &e, Value i) const;
  /// Asserts (cf.assert) that the request is in [0, batch), before its
  /// counts are read.
  void emitRequestCheck(Emitter &e, Value batch) const;
  /// Asserts the item's invariants given its request's query and key
  /// counts and the rows of the partial states: 0 <= qoStart <= qoEnd <=
  /// qoLen, 0 <= kvStart <= kvEnd <= kvLen, and the rows of its first and
  /// last queries inside [0, partialRows).
  void emitChecks(Emitter &e, Value qoLen, Value kvLen,
                  Value partialRows) const;
};

/// Work item `w` of a pa.decode_partial: its request and keys
/// [kvStart, kvEnd), and the request's key count.
struct DecodeWorkItem {
  Value request, kvStart, kvEnd, kvLen;

  /// Loads item `w` (the op's work arrays read through `map`), unchecked;
  /// kvLen is left null.
  static DecodeWorkItem load(Emitter &e, DecodePartialOp op, Value w,
                             const IRMapping &map = IRMapping());
  /// The query tile of item `w` (its request's query over the item's keys,
  /// stored to row `w` of the partial states) for KV head `kvHead`.
  QueryTileCoords tile(Emitter &e, Value w, Value kvHead, Value kvLen) const;

  /// Asserts the work list's invariants (work_indptr a CSR over
  /// work_request, work_start / work_end as many entries, at most
  /// `capacity` items in use); returns the items in use, work_indptr[B].
  static Value emitWorkListChecks(Emitter &e, DecodePartialOp op,
                                  Value capacity);
  /// Loads item `w`, asserting its request in [0, B) and its keys in
  /// [0, kv_len].
  static DecodeWorkItem loadChecked(Emitter &e, DecodePartialOp op,
                                    const PageTable &pt, Value w);
};

/// Emits, for one query tile of `op`: pa.tile.load_q, pa.tile.init_state,
/// the loop over the KV tiles of `tiles.k`'s rows that the tile can see
/// (`scf.for %t0 = lo to hi step BN`: without q_positions, none above the
/// causal diagonal and none wholly left of the sliding window; within
/// [kvBegin, kvEnd) for a work item) with gather_kv / qk / mask /
/// softmax_update / pv, the mask marked `masked_if` with the test of
/// whether the KV tile needs it, and pa.tile.store. K/V rows past `hi` are
/// zero-filled. Over an fp8 cache the tiles hold the stored fp8 values and
/// the KV head's scales (loaded once) go to pa.tile.qk (k_scale) and
/// pa.tile.store (v_scale). The op's operands are read through `map` (a kernel's
/// arguments; identity when empty), its page table is `pages` (already
/// mapped).
void emitPrefillQueryTile(Emitter &e, const PrefillOperands &op,
                          const IRMapping &map, const PageTable &pages,
                          const QueryTileCoords &t, const PrefillTiles &tiles);

} // namespace mlir::pa

#endif // PAGEDATTN_CONVERSION_PREFILLTILING_H
