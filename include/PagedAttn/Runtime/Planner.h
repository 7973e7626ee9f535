//===- Planner.h - host-side split-KV work planner --------------*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The host half of split-KV (like FlashInfer's plan()): from a CSR page table
// it computes each request's kv_len, picks a KV chunk size and writes the work
// list that the split-KV kernels consume. Each work item computes the
// attention state of one request over one chunk of its tokens; the partial
// states of a request are then merged (docs/Semantics.md, "The merge
// operator" and "Split-KV": attention over a union of disjoint key sets is
// the merge of the parts).
//
// Also the runtime's checked mode: validatePageTable() checks a page table
// against a cache before a launch. No MLIR dependency, no exceptions: bad
// input is reported through a returned Status whose message names the array
// and the offending index.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_RUNTIME_PLANNER_H
#define PAGEDATTN_RUNTIME_PLANNER_H

#include "PagedAttn/Runtime/Status.h"

#include <cstdint>
#include <vector>

namespace pa::rt {

/// CSR work list: items of request b are indptr[b] .. indptr[b+1]-1; item w
/// covers tokens [start[w], end[w]) of request request[w]. Requests with
/// kv_len 0 get no item (their merged state is the identity (o = 0,
/// lse = -inf)). indptr has batch+1 entries, indptr[0] == 0 and
/// indptr[batch] == size().
struct WorkList {
  std::vector<int32_t> indptr, request, start, end;

  /// Number of work items.
  int64_t size() const { return static_cast<int64_t>(request.size()); }
};

/// A read-only view of a host int32 array with its length. The page-table
/// checks take one per array they read, so that an array shorter than the
/// table claims is an error, not a read past its end. Converts implicitly
/// from a std::vector (the whole vector).
struct I32Span {
  const int32_t *data = nullptr;
  int64_t size = 0;

  I32Span() = default;
  I32Span(const int32_t *data, int64_t size) : data(data), size(size) {}
  I32Span(const std::vector<int32_t> &v)
      : data(v.data()), size(static_cast<int64_t>(v.size())) {}

  int32_t operator[](int64_t i) const { return data[i]; }
};

/// Computes kv_len[b] = 0 if request b has no pages, else
/// (npages-1)*pageSize + lastPageLen[b], into `out` (resized to `batch`).
/// Checks batch >= 0, 0 < pageSize <= INT32_MAX, kvIndptr.size == batch + 1,
/// lastPageLen.size == batch, no null data behind a non-zero size,
/// kvIndptr[0] == 0, kvIndptr non-decreasing, and lastPageLen[b] in
/// [1, pageSize] for every request that owns pages (ignored for requests
/// without pages). Messages name the array and the index, e.g.
/// "kv_indptr has 3 entries, expected batch + 1 = 4",
/// "kv_last_page_len[2] = 0 not in [1, 16]". On error `out` is left empty.
Status kvLengths(I32Span kvIndptr, I32Span lastPageLen, int64_t batch,
                 int64_t pageSize, std::vector<int64_t> &out);

/// The runtime's checked mode: everything kvLengths() checks, plus
/// numPages >= 0, kvIndptr[batch] <= kvIndices.size (e.g. "kv_indptr[3] = 7
/// exceeds the 6 entries of kv_indices") and every kvIndices[i],
/// i < kvIndptr[batch], in [0, numPages). kvIndices may be longer than
/// kvIndptr[batch] (the rest is not read) and empty when it is 0.
Status validatePageTable(I32Span kvIndptr, I32Span kvIndices,
                         I32Span lastPageLen, int64_t batch, int64_t pageSize,
                         int64_t numPages);

/// validatePageTable() that also gives the table's lengths (kvLengths()) in
/// `kvLens` (resized to `batch`; left empty on error).
Status validatePageTable(I32Span kvIndptr, I32Span kvIndices,
                         I32Span lastPageLen, int64_t batch, int64_t pageSize,
                         int64_t numPages, std::vector<int64_t> &kvLens);

/// Checked mode for prefill / append (docs/Semantics.md, "Prefill /
/// append"): `qoIndptr` (batch + 1 entries) must start at 0, be
/// non-decreasing and end at `numQueryRows` (the rows of q); without
/// explicit query positions every request needs qo_len <= kv_len (its
/// queries are its last tokens), `kvLens` being the page table's lengths
/// (kvLengths). Errors name the array, the request and the values.
Status validateQueries(I32Span qoIndptr, int64_t batch, int64_t numQueryRows,
                       const std::vector<int64_t> &kvLens,
                       bool explicitPositions);

/// The prefill grid symbol q_tiles: max over requests b of
/// ceil(qo_len_b / queriesPerTile), qo_len_b = qoIndptr[b+1] - qoIndptr[b]
/// (0 when every request is empty: nothing to launch). Checks
/// queriesPerTile >= 1, batch >= 0, qoIndptr.size == batch + 1 and
/// qoIndptr non-decreasing; `out` is only written on success.
Status prefillQueryTiles(I32Span qoIndptr, int64_t batch,
                         int64_t queriesPerTile, int64_t &out);

/// The largest mean keys per query at which the prefill planner prefers
/// the short-tile kernel (prefill_short). Measured on an H200, causal fp16
/// D128, 2026-11-26 (docs/PERFORMANCE.md, "Prefill over 64-key tiles"):
/// the 128-row tile (4 warps, 32-key tiles, 2 CTAs per SM) beats the
/// 256-row tile (8 warps, 64-key tiles, 1 CTA per SM) at 512 keys per
/// query (GQA 4: 226 vs 211 TFLOP/s; MHA: 194 vs 165) and loses at 2048
/// (GQA 4: 287 vs 307.5; MHA: 273 vs 275.5) and beyond; 1024 lies between
/// the measured sides.
inline constexpr int64_t kShortPrefillMaxMeanKeys = 1024;

/// The prefill planner's kernel choice: true (prefill_short) iff the batch
/// has queries and its mean keys per query,
///   sum_b qo_len_b * kv_len_b / sum_b qo_len_b,
/// is at most `maxMeanKeys` (computed exactly, in 128-bit integers); false
/// (prefill, the large tile) otherwise, in particular for a batch without
/// queries. The caller picks prefill whenever the bundle has no
/// prefill_short. Checks batch >= 0, qoIndptr.size == batch + 1, qoIndptr
/// non-decreasing, kvLens.size() == batch, every kv_len >= 0 and
/// maxMeanKeys >= 0; `useShort` is only written on success.
Status choosePrefillShort(I32Span qoIndptr, const std::vector<int64_t> &kvLens,
                          int64_t batch, bool &useShort,
                          int64_t maxMeanKeys = kShortPrefillMaxMeanKeys);

/// Whether the prefill planner should run the split kernel although no key
/// needs splitting: true iff its query tile is smaller than the unsplit
/// kernel's (`partialQueriesPerTile` < `unsplitQueriesPerTile`) and the
/// unsplit grid, sum_b ceil(qo_len_b / unsplitQueriesPerTile) x numKVHeads
/// CTAs, leaves some of the `slots` CTA slots idle (the smaller tiles alone
/// then fill more of them). Checks batch >= 0, qoIndptr.size == batch + 1,
/// qoIndptr non-decreasing and positive tile sizes, heads and slots;
/// `useSplit` is only written on success.
Status preferSmallerSplitTiles(I32Span qoIndptr, int64_t batch,
                               int64_t unsplitQueriesPerTile,
                               int64_t partialQueriesPerTile,
                               int64_t numKVHeads, int64_t slots,
                               bool &useSplit);

/// Checked mode for a prefill's custom mask (docs/Semantics.md, "Prefill /
/// append"): `maskIndptr` (batch + 1 entries) must be non-decreasing from
/// mask_indptr[0] >= 0, request b's segment [maskIndptr[b],
/// maskIndptr[b+1]) must hold its ceil(qo_len_b * kv_len_b / 8) bytes, and
/// maskIndptr[batch] must not exceed `maskBytes`, the bytes of the packed
/// mask. `qoIndptr` is a validated one (validateQueries), `kvLens` the page
/// table's lengths. Errors name the request and the values.
Status validateMask(I32Span maskIndptr, I32Span qoIndptr, int64_t batch,
                    const std::vector<int64_t> &kvLens, int64_t maskBytes);

/// Fixed-size chunking: chunk c of request b covers tokens
/// [c*chunkSize, min((c+1)*chunkSize, kvLens[b])), for
/// c = 0 .. ceil(kvLens[b] / chunkSize) - 1; requests of length 0 get no item.
/// The compiler's in-IR planner op computes exactly this list; keep the two in
/// sync. Preconditions: chunkSize >= 1, every kvLens[b] in [0, INT32_MAX].
WorkList planFixedChunks(const std::vector<int64_t> &kvLens, int64_t chunkSize);

/// Chooses the split-KV chunk size, FlashInfer style. With
///   B = kvLens.size(), maxLen = max_b kvLens[b],
///   minC = minChunk rounded up to a multiple of pageSize (at least pageSize),
///   ctas(C) = numKVHeads * sum_b ceil(kvLens[b] / C):
/// * no split: if B * numKVHeads >= maxCTAs (the batch alone fills the GPU),
///   or maxLen <= minC (every request fits one minimal chunk), returns
///   max(maxLen, 1) rounded up to a multiple of pageSize, i.e. one item per
///   non-empty request;
/// * split: otherwise returns the smallest C, a multiple of pageSize with
///   C >= minC, such that ctas(C) <= maxCTAs (binary search; ctas is
///   non-increasing in C, and C = maxLen rounded up satisfies it since then
///   ctas <= B * numKVHeads < maxCTAs).
/// The result is always >= 1 and a multiple of pageSize, and never grows when
/// maxCTAs grows. Non-positive numKVHeads / maxCTAs mean "no split";
/// a non-positive pageSize is treated as 1.
int64_t chooseChunkSize(const std::vector<int64_t> &kvLens, int64_t numKVHeads,
                        int64_t maxCTAs, int64_t pageSize,
                        int64_t minChunk = 256);

/// The smallest chunk C, a multiple of pageSize in [minChunk rounded up,
/// maxLen rounded up], with numKVHeads * sum_b ceil(kvLens[b] / C) <=
/// maxCTAs; the upper end (one item a non-empty request) when no smaller
/// chunk fits, whether or not it fits itself (binary search: the count is
/// non-increasing in C). chooseChunkSize's split rule, and the chunk of a
/// CUDA-graph plan (numKVHeads 1, maxCTAs its work capacity).
int64_t smallestFittingChunk(const std::vector<int64_t> &kvLens,
                             int64_t numKVHeads, int64_t maxCTAs,
                             int64_t pageSize, int64_t minChunk);

/// The cost model of balanceWaves(), in tokens of one work item's stream:
/// a fixed cost per item (its setup, query load, store) and the cost of
/// the merge that a split adds (the merge_segments launch and the partial
/// states it reads).
inline constexpr int64_t kWaveItemCost = 64, kWaveMergeCost = 256;
/// Splits considered by balanceWaves(): up to this many items a request;
/// a split must model this much faster than no split (on an H100,
/// 2026-11-25, the fp8 decode: splits that modelled 3-10% faster ran 3-7%
/// slower at 2.6-5.2 waves, those that modelled 30% faster at 1.29 waves
/// ran 22-27% faster: docs/PERFORMANCE.md).
inline constexpr int64_t kWaveMaxSplit = 8, kWaveMinGainPercent = 15;

/// The wave refinement of a no-split choice. When the batch alone fills
/// the CTA slots (B * numKVHeads >= maxCTAs) but not a whole number of
/// times, the last wave leaves slots idle (B = 64 x 8 KV heads on 396
/// slots: 512 items, 1.29 waves, 35% idle). Models the time of a chunk C
/// as waves(C) * (C + kWaveItemCost), plus kWaveMergeCost when C < maxLen,
/// with waves(C) = ceil(ctas(C) / maxCTAs) (exact for equal lengths), and
/// returns the chunk of least modelled time among ceil(maxLen / s) rounded
/// up to pageSize, s = 2..kWaveMaxSplit, at least minChunk (rounded up),
/// if it models at least kWaveMinGainPercent faster than C = maxLen
/// rounded up (no split), else that no-split chunk. Returns the no-split
/// chunk
/// whenever B * numKVHeads < maxCTAs or maxCTAs <= 0 (chooseChunkSize's
/// split rule applies there).
int64_t balanceWaves(const std::vector<int64_t> &kvLens, int64_t numKVHeads,
                     int64_t maxCTAs, int64_t pageSize, int64_t minChunk);

/// The idle share of its waves' slot time above which decodeCTAsPerSM()
/// runs a one-pass grid at one CTA per SM fewer.
inline constexpr double kMaxIdleWaveShare = 0.25;

/// CTAs per SM a decode plan assumes, from the kernel's occupancy
/// `maxCTAs` (kernels of at most 2 CTAs per SM keep theirs):
/// - a one-pass grid of `gridCTAs` CTAs (batch x KV heads) below one wave
///   of numSMs x (maxCTAs - 1) (a split plan at either) of a kernel of 3
///   CTAs per SM assumes 2: fewer, longer work items (for the 4-CTA
///   CUDA-core MHA decode, plans for 3 ran 2.5-5% slower than for 4);
/// - a grid of at least one wave whose waves leave more than
///   kMaxIdleWaveShare of their slot time idle (the empty slots of the
///   last wave over all waves' slots) runs at maxCTAs - 1 when that idles
///   less (the runtime holds the kernels there with dynamic shared memory);
/// - otherwise maxCTAs.
/// H200, 2026-11-27, the tensor-core decode of GQA 4 at 3 CTAs per SM: 64 x
/// 8 = 512 CTAs on 396 slots (2 waves, 35% idle) ran 64 x 2048 in 142.4 µs
/// one pass and 148.1 split in three, against 137.7 at 2 CTAs per SM (1.94
/// waves, 3% idle); 256 x 8 (6 waves, 14% idle) ran 1-2.5% faster at 3 on
/// three of four machines; split plans for 396 slots (1 x 32768: 49 items)
/// ran 1-4% slower than those for 264 (33 items) (docs/PERFORMANCE.md).
/// With `fp8Requests` (the fp8 decode of more than one request) a grid
/// below one wave of numSMs x (maxCTAs - 1) keeps maxCTAs: each fp8 CTA
/// streams half the bytes per instruction, and more of them in flight ran
/// 4-5.5% faster (H200, 2026-11-27, GQA 4 e4m3, two calls: 16 x 32768 253.4
/// µs in 48 items at 3 CTAs per SM against 268.0 in 32 at 2, 93.6% of the
/// read roof in bytes against 88.5%; 16 x 8192 72.3 against 75.4) where
/// f16 ran equal or up to 0.8% slower; one request stays at 2 (1 x 8192 in
/// 47 items ran 16.4 µs against 15.7). With `fp8Requests` and requests of
/// at least kFP8FullWaveMinKeys keys (`maxKVLen`) the idle-wave rule keeps
/// maxCTAs too, and balanceWaves splits the requests over the fuller waves
/// (64 x 32768 at 3 per SM in 192 items ran 988 µs, 96.0%, against 1040 one
/// pass held to 2, 91.2%; 64 x 8192 equal; 64 x 2048 16% slower, hence the
/// length).
int64_t decodeCTAsPerSM(int64_t gridCTAs, int64_t numSMs, int64_t maxCTAs,
                        bool fp8Requests = false, int64_t maxKVLen = 0);
inline constexpr int64_t kFP8FullWaveMinKeys = 16384;

/// The merge cost of a split below one wave, in tokens of one work item's
/// stream: n^2 / kMergeCostDivisor for a request of n items (the last CTA
/// of a request reads every partial state and merges them alone, while
/// the n CTAs' partial states and arrivals contend); fewerMerges() weighs
/// it.
inline constexpr int64_t kMergeCostDivisor = 2;

/// The merge refinement of a split chosen by chooseChunkSize() (one wave,
/// B * numKVHeads < maxCTAs): a request of n items runs in one wave in
/// about C + n^2 / kMergeCostDivisor, so a chunk of a tile or two (many
/// items, a long merge) loses to a larger one. Returns the chunk of least
/// modelled time among `chunk`, 2 `chunk` and 4 `chunk` (n = ceil(maxLen /
/// C), ties to the smaller chunk), never past the no-split chunk. Fit to
/// a sweep of forced chunks (H200, 2026-11-27,
/// bench/sweep_decode_b1_chunk.sh, f16 and fp8, GQA 4 and 8, B 1 and 16):
/// it picks the fastest chunk or one within 2% at every B = 1 row (GQA 8
/// 1 x 32768: 1024 tokens, 38.3 µs, where the linear C + 8 n of
/// 2026-11-26 took 512, 42.0; 1 x 2048 at GQA 4: 128 tokens, 13.8 µs,
/// against 15.3 with 64) and keeps the B = 16 choices.
int64_t fewerMerges(const std::vector<int64_t> &kvLens, int64_t chunk,
                    int64_t pageSize);

/// The split of a one-wave grid that merges together, its items capped: a
/// request in more than kMergeTogetherMaxItems items gets the smallest
/// chunk (a multiple of the page size) that splits it into at most that
/// many, never past the no-split chunk. chooseChunkSize fills the wave with
/// the smallest chunk, which for a few KV heads (GQA 16: Hkv 2) means 128
/// items of 64 tokens at one request of 8192; the merge's wait for them all
/// and its rows cost more than the wave's streaming gains. H200,
/// 2026-11-28 (bench/exp_large_group_chunks.sh, docs/PERFORMANCE.md): GQA
/// 16 1 x 8192 in 64 items of 128 tokens 14.8-15.1 µs against 16.1-16.2 in
/// 128, 1 x 32768 in 64 items 20.7-20.9 against 21.2-21.4 (32 items: 26.1);
/// GQA 8's 64 items at 1 x 8192 / 32768 were faster than 32 (15.7 against
/// 16.1, 26.7 against 28.4).
int64_t fewerTogetherItems(const std::vector<int64_t> &kvLens, int64_t chunk,
                           int64_t pageSize);
inline constexpr int64_t kMergeTogetherMaxItems = 64;

/// Whether a split decode plan whose grid fits on the device at once merges
/// together (pa_plan_options.split_merge AUTO; docs/Runtime.md, "The merge
/// together"). The last CTA of a request merges its S = `maxItems` rows in
/// ceil(S / 8) steps of `slotsPerThread` output slots a thread, after the
/// request's slowest CTA; the merge together costs about the wait for the
/// other CTAs' arrival, a step or two. Together where the last CTA's merge
/// takes at least kMergeTogetherMinSteps steps, or for one request split
/// into at least kMergeTogetherMinItems items of at least
/// kMergeTogetherMinChunk tokens (fit to one H200 call, 2026-11-27 15:28
/// UTC, docs/PERFORMANCE.md: with the same plans, 2 to 16 items a request
/// of GQA 4, MHA and fp8 ran 0.2-1.0 µs slower together; one request in 32
/// or 33 items of 256+ tokens 0.7-1.8 µs faster, GQA 8's 32 and 64 items
/// 0.9-4.6 µs).
bool preferMergeTogether(int64_t batch, int64_t maxItems, int64_t chunk,
                         int64_t slotsPerThread);
inline constexpr int64_t kMergeTogetherMinSteps = 5;
inline constexpr int64_t kMergeTogetherMinItems = 32;
inline constexpr int64_t kMergeTogetherMinChunk = 256;

/// The longest of `kvLens` (0 for none).
int64_t maxLength(const std::vector<int64_t> &kvLens);

/// The result of planDecode().
struct DecodePlan {
  /// KV tokens per work item (the last item of a request may be shorter).
  int64_t chunkSize = 0;
  /// True iff some request has more than one work item (a merge is needed).
  bool split = false;
  /// planFixedChunks(kv_len, chunkSize).
  WorkList work;
  /// batch + ceil(totalTokens / chunkSize) >= work.size(): sizes the
  /// per-item buffers (partial o / lse) for this batch.
  int64_t maxItemsBound = 0;
};

/// Default smallest chunk of planDecode: a work item of 64 tokens still
/// streams 64 x 2 x D x 2 bytes per KV head, and short requests at small
/// batch need many items to fill the GPU (B = 1 x 512 tokens: 8 items).
inline constexpr int64_t kDefaultMinChunk = 64;

/// Plans a split-KV decode step: kvLengths(), then
/// chooseChunkSize(kv_len, numKVHeads, numSMs * ctasPerSM, pageSize,
/// minChunk) (refined by fewerMerges() where it splits, by balanceWaves()
/// where it does not), then planFixedChunks(). With `mergeTogether` (the
/// splits of a one-wave grid merge together, every CTA a share: a merge
/// about as fast at 64 splits as at 2) the split chunk is
/// chooseChunkSize's, which fills the wave, without fewerMerges' weight,
/// its items capped by fewerTogetherItems().
/// Fails on an invalid page table (see kvLengths()), on a kv_len above
/// INT32_MAX, or on non-positive numKVHeads, numSMs or ctasPerSM; `plan` is
/// only written on success.
Status planDecode(I32Span kvIndptr, I32Span lastPageLen, int64_t batch,
                  int64_t pageSize, int64_t numKVHeads, int64_t numSMs,
                  int64_t ctasPerSM, DecodePlan &plan,
                  int64_t minChunk = kDefaultMinChunk,
                  bool mergeTogether = false);

/// The work of a batch prefill / append on the tile grid of
/// pa-tile-attention: one item per (request, query tile[, KV chunk]); the
/// kernel runs an item for every KV head. Query and KV offsets are
/// request-local.
struct PrefillWorkList {
  /// Per item: the request, its queries [qoStart, qoEnd) and keys
  /// [kvStart, kvEnd).
  std::vector<int32_t> request, qoStart, qoEnd, kvStart, kvEnd;
  /// Split plans only: query qoStart + i of the item writes its partial
  /// state to row partialRow + i * partialStride (a tile's chunks
  /// interleave, so each query's partial states are contiguous rows).
  std::vector<int32_t> partialRow, partialStride;
  /// Split plans only: the merge_segments segments over the partial rows,
  /// one per query row of q (numQueryRows + 1 entries).
  std::vector<int32_t> mergeIndptr;

  int64_t size() const { return static_cast<int64_t>(request.size()); }
};

struct PrefillPlan {
  /// Queries per tile (the pass's tile-q / group) and KV tokens per chunk.
  int64_t queriesPerTile = 0, kvChunk = 0;
  /// True iff some tile has more than one item (partial states + merge).
  bool split = false;
  PrefillWorkList work;
  /// Split plans: rows of the partial-state buffers (o_part, lse_part).
  int64_t numPartialRows = 0;
};

/// The most query tiles, work items or partial rows one prefill plan
/// holds (2^24: far past what a GPU holds the queries of).
inline constexpr int64_t kMaxPrefillPlanEntries = int64_t(1) << 24;

/// Plans a batch prefill (FlashInfer's BatchPrefillWithPagedKVCache plan):
/// validates qo_indptr against the page table (validateQueries), cuts every
/// request's queries into tiles of `queriesPerTile`, gives each tile the
/// keys it can see (with `causal`, none past the tile's last query
/// position), and, when the tiles times `numKVHeads` leave the
/// `numSMs * ctasPerSM` CTA slots idle, splits the tiles' key ranges into
/// chunks (a multiple of `pageSize`, at least `minChunk`) whose partial
/// states a merge combines: the chunk that cuts the longest tile into n
/// pieces for the n with the least modelled time, waves of CTA slots x
/// (the chunk + kPrefillItemOverheadKeys) (ties to the larger chunk; n = 1
/// is no split). A tile with no
/// visible key still gets one item (it writes o = 0, lse = -inf). The
/// items are listed heaviest first (most keys, then most queries; ties in
/// tile order), the order their CTAs start in, so that the last wave holds
/// the shortest. With `explicitPositions` (q_positions)
/// qo_len may exceed kv_len and every tile sees all keys. `forceChunk` > 0
/// fixes the chunk (rounded up to the page size) instead of the choice
/// above; `forcePartial` makes the plan a split plan (partial rows and merge
/// segments) even when no tile has more than one chunk. A plan holds at
/// most kMaxPrefillPlanEntries tiles, work items and partial rows each
/// (an error names the count otherwise).
Status planPrefill(I32Span qoIndptr, I32Span kvIndptr, I32Span lastPageLen,
                   int64_t batch, int64_t numQueryRows, int64_t pageSize,
                   int64_t numKVHeads, int64_t queriesPerTile, bool causal,
                   bool explicitPositions, int64_t numSMs, int64_t ctasPerSM,
                   PrefillPlan &plan, int64_t minChunk = kDefaultMinChunk,
                   int64_t forceChunk = 0, bool forcePartial = false);

/// The fixed cost of a split-prefill work item in the planner's model, in
/// keys streamed (fit to an H200 sweep of chunk sizes: a wave of items of
/// C keys takes about C + 187 keys' time; rounded up).
inline constexpr int64_t kPrefillItemOverheadKeys = 256;

/// Smallest KV chunk of a split prefill in the runtime: a work item streams
/// at least this many keys per query tile, so that the partial states and
/// their merge stay small beside the K/V reads.
inline constexpr int64_t kPrefillMinChunk = 512;

/// Upper bound on the work items of any batch of `batch` requests owning
/// `numPagesUsed` (= kv_indptr[batch]) pages in total, chunked by
/// planFixedChunks(.., chunkSize): batch + ceil(numPagesUsed*pageSize /
/// chunkSize). Each request has at most floor(len/C) + 1 items and the lengths
/// sum to at most numPagesUsed*pageSize. The compiler sizes the work list
/// with this from static information. Precondition: chunkSize >= 1, other
/// arguments >= 0.
int64_t workListBound(int64_t batch, int64_t numPagesUsed, int64_t pageSize,
                      int64_t chunkSize);

//===----------------------------------------------------------------------===//
// MLA decode split-KV (pa_mla_decode)
//===----------------------------------------------------------------------===//

/// The most splits of a request's keys pa_mla_decode picks by itself when
/// the last CTA of a request merges its splits alone. 16 on 2026-11-26,
/// when that merge paid an L2 round trip per output slot and split; with
/// the merge's loads in flight together (MLAKernelBase::mergeSplits) 32
/// splits ran faster at B = 1 (H200 2026-11-27, 128 heads 1 x 32768: 125.7
/// -> 99.5 us on wgmma, 129.6 -> 86.0 on mma.sync; 16 heads 94.4 -> 64.5;
/// wgmma 1 x 8192 58.6 -> 66.7 the one row slower,
/// bench/results/mla-merge-splits_2026-11-27_h200.md).
constexpr int64_t kMaxMLASplits = 32;
/// The fewest keys per split pa_mla_decode picks with that merge when it
/// knows the longest request (1 x 1024 ran fastest with 8 splits of 128
/// keys).
constexpr int64_t kMinMLASplitTokens = 128;
/// Beyond kMLASplitsAtMinTokens splits, at least kMLASplitTokens keys a
/// split: at B = 1 (H200 2026-11-27, 128 heads) 1 x 4096 ran 47.2 us with
/// 16 splits and 60.8 with 32 on wgmma (35.3 / 39.9 on mma.sync), 1 x
/// 32768 fastest with 32 (bench/results/mla-merge-splits_2026-11-27_h200.md,
/// mla-page-per-tile_2026-11-27_h200.md).
constexpr int64_t kMLASplitsAtMinTokens = 8;
constexpr int64_t kMLASplitTokens = 256;

/// When the splits merge together (each CTA a share, after a cooperative
/// launch), a split's cost is its keys and the merge's is spread over the
/// GPU: the most splits is what one wave holds up to this, and with
/// max_kv_len known at most max(kMLATogetherSplitsAtMinTokens,
/// ceil(max_kv_len / kMLATogetherSplitTokens)). Fit to forced splits (H200
/// 2026-11-27 12:28 UTC, 128 heads, bench/sweep_mla_together_splits.sh,
/// bench/results/mla-together-splits_2026-11-27_h200.md), µs wgmma at
/// S = 16 / 32 / 64: 1 x 1024 17.9 / 17.3 / 20.2; 1 x 4096 25.8 / 20.9 /
/// 23.6; 1 x 8192 36.1 / 26.1 / 26.1; 1 x 32768 100.0 / 56.9 / 41.6; 1 x
/// 65536 179.6 / 97.7 / 62.9; mma.sync 1 x 1024 15.4 / 17.7 (S = 16 /
/// 32).
constexpr int64_t kMaxMLASplitsTogether = 64;
constexpr int64_t kMLATogetherSplitsAtMinTokens = 16;
constexpr int64_t kMLATogetherSplitTokens = 128;

/// The splits of each request's keys for an MLA decode of `batch` requests
/// whose kernel has `headBlocks` CTAs per request (grid y) on `slots` CTA
/// slots: as many as fill one wave, S = max(1, floor(slots / (batch x
/// headBlocks))). With `together` (the splits merge together) at most
/// kMaxMLASplitsTogether and, with maxKVLen > 0, at most
/// max(kMLATogetherSplitsAtMinTokens, ceil(maxKVLen /
/// kMLATogetherSplitTokens)); else at most kMaxMLASplits and, with
/// maxKVLen > 0, at most ceil(maxKVLen / kMinMLASplitTokens) and
/// max(kMLASplitsAtMinTokens, ceil(maxKVLen / kMLASplitTokens)). 1 for
/// batch <= 0.
int64_t mlaSplits(int64_t batch, int64_t headBlocks, int64_t slots,
                  int64_t maxKVLen, bool together);

/// Whether automatic MLA splits (mlaSplits with together) merge together
/// rather than by each request's last CTA: from kMLATogetherMinSplits
/// splits. Fit to forced splits once both merges issued their loads a step
/// of rows together (H200 2026-11-27 21:12 UTC, 128 heads, wgmma kernel,
/// bench/run_mla_merge_loads.sh, bench/results/
/// mla-merge-loads_2026-11-27_h200.md section 1), µs together / last: S = 2
/// at 8 / 16 / 24 / 32 requests x 1024 keys 33.4 / 35.5, 35.2 / 37.2, 38.2
/// / 40.2, 40.9 / 42.6 (x 8192 0.6-2.2 µs apart the same way); S = 3 5
/// µs apart at 8 and 16 requests; S = 4 at 8 x 1024 25.6 / 31.7. (With
/// the merges before, 2 splits merged by the last CTA were 3-11% faster:
/// the rule was 4.)
constexpr int64_t kMLATogetherMinSplits = 2;
bool mlaPrefersTogether(int64_t splits);

/// The MLA decode runs on mla_decode_small (mma.sync, 32 heads a CTA at
/// 128 heads) rather than on mla_decode's wgmma kernel (64 heads a CTA)
/// only at short contexts of few requests: batch <= kMLASmallMaxBatch and
/// 0 < maxKVLen <= kMLASmallMaxKeys. With the splits merged together the
/// wgmma kernel's 64 splits fill the GPU at one request, and it is faster
/// from 4096 keys on: H200 2026-11-27 12:28 UTC, 128 heads, best forced
/// splits, µs mma.sync / wgmma (bench/sweep_mla_together_splits.sh): 1 x
/// 1024 15.4 / 17.3, 1 x 4096 22.0 / 20.9, 1 x 32768 65.6 / 41.6; 2 x 1024
/// 18.3 / 19.1, 2 x 4096 27.7 / 25.2; 4 x 1024 21.5 / 22.7, 4 x 4096 40.7 /
/// 30.4; 8 x 1024 30.5 / 26.8.
constexpr int64_t kMLASmallMaxKeys = 2048;
constexpr int64_t kMLASmallMaxBatch = 4;

/// True when an MLA decode of `batch` requests of at most `maxKVLen` keys
/// (0: unknown) should run on mla_decode_small: 1 <= batch <=
/// kMLASmallMaxBatch and 0 < maxKVLen <= kMLASmallMaxKeys.
bool chooseMLASmall(int64_t batch, int64_t maxKVLen);

/// pa_mla_decode's workspace for `splits` splits: byte offsets of o_part
/// [batch x splits, heads, ckv] f32, lse_part [batch x splits, heads] f32
/// and the arrival counters [batch, heads] i32, each 256-byte aligned, and
/// the total. Zero bytes for splits <= 1 (nothing is used).
struct MLAWorkspace {
  int64_t oPart = 0, lsePart = 0, counters = 0, bytes = 0;
};
MLAWorkspace mlaWorkspace(int64_t batch, int64_t heads, int64_t ckv,
                          int64_t splits);

} // namespace pa::rt

#endif // PAGEDATTN_RUNTIME_PLANNER_H
