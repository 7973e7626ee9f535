//===- Planner.cpp - host-side split-KV work planner ----------------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// Page-table validation, kv_len computation, chunk-size choice and the
// fixed-chunk work list of split-KV decode. See Planner.h for the rules.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Runtime/Planner.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <string>

using namespace pa::rt;

namespace {

/// ceil(a / b) for a >= 0, b >= 1.
int64_t ceilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/// The smallest multiple of m (m >= 1) that is >= a (a >= 0).
int64_t roundUp(int64_t a, int64_t m) { return ceilDiv(a, m) * m; }

/// The chunk of one item a request: the longest, rounded up to the page
/// size (at least one page).
int64_t noSplitChunk(int64_t maxLen, int64_t pageSize) {
  return roundUp(std::max<int64_t>(maxLen, 1), pageSize);
}

/// numKVHeads * sum_b ceil(kvLens[b] / chunk).
int64_t countCTAs(const std::vector<int64_t> &kvLens, int64_t numKVHeads,
                  int64_t chunk) {
  int64_t items = 0;
  for (int64_t len : kvLens)
    items += ceilDiv(std::max<int64_t>(len, 0), chunk);
  return items * numKVHeads;
}

/// Checks that array `name` has a non-negative length and data behind it.
Status checkData(I32Span a, const char *name) {
  if (a.size < 0)
    return fail(name, " has a negative length ", a.size);
  if (a.size > 0 && !a.data)
    return fail(name, " is null but has length ", a.size);
  return Status::success();
}

/// Checks that array `name` has exactly `expected` entries, spelled `what`
/// in the message ("batch + 1"), and data behind them.
Status checkLength(I32Span a, const char *name, int64_t expected,
                   const char *what) {
  if (Status s = checkData(a, name); !s)
    return s;
  if (a.size != expected)
    return fail(name, " has ", a.size, " entries, expected ", what, " = ",
                expected);
  return Status::success();
}

/// Checks the common arguments of kvLengths() / validatePageTable().
Status checkArgs(I32Span kvIndptr, I32Span lastPageLen, int64_t batch,
                 int64_t pageSize) {
  if (batch < 0)
    return fail("batch = ", batch, " is negative");
  if (pageSize <= 0)
    return fail("page_size = ", pageSize, " must be positive");
  if (pageSize > std::numeric_limits<int32_t>::max())
    return fail("page_size = ", pageSize, " exceeds INT32_MAX");
  if (Status s = checkLength(kvIndptr, "kv_indptr", batch + 1, "batch + 1"); !s)
    return s;
  return checkLength(lastPageLen, "kv_last_page_len", batch, "batch");
}


/// The query count of request `b` (qo_indptr[b + 1] - qo_indptr[b]), or an
/// error where qo_indptr decreases.
Status queryCount(I32Span qoIndptr, int64_t b, int64_t &len) {
  len = static_cast<int64_t>(qoIndptr[b + 1]) - qoIndptr[b];
  if (len < 0)
    return fail("qo_indptr not non-decreasing at b = ", b, ": qo_indptr[", b,
                "] = ", qoIndptr[b], " > qo_indptr[", b + 1,
                "] = ", qoIndptr[b + 1]);
  return Status::success();
}
} // namespace

int64_t pa::rt::maxLength(const std::vector<int64_t> &kvLens) {
  int64_t maxLen = 0;
  for (int64_t len : kvLens)
    maxLen = std::max(maxLen, len);
  return maxLen;
}

Status pa::rt::kvLengths(I32Span kvIndptr, I32Span lastPageLen, int64_t batch,
                         int64_t pageSize, std::vector<int64_t> &out) {
  out.clear();
  if (Status s = checkArgs(kvIndptr, lastPageLen, batch, pageSize); !s)
    return s;
  if (kvIndptr[0] != 0)
    return fail("kv_indptr[0] = ", kvIndptr[0], ", expected 0");
  std::vector<int64_t> lens(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    int64_t lo = kvIndptr[b], hi = kvIndptr[b + 1];
    if (hi < lo)
      return fail("kv_indptr not non-decreasing at b = ", b, ": kv_indptr[", b,
                  "] = ", lo, " > kv_indptr[", b + 1, "] = ", hi);
    int64_t numPages = hi - lo;
    if (numPages == 0)
      continue;
    int64_t last = lastPageLen[b];
    if (last < 1 || last > pageSize)
      return fail("kv_last_page_len[", b, "] = ", last, " not in [1, ",
                  pageSize, "]");
    lens[b] = (numPages - 1) * pageSize + last;
  }
  out = std::move(lens);
  return Status::success();
}

Status pa::rt::validatePageTable(I32Span kvIndptr, I32Span kvIndices,
                                 I32Span lastPageLen, int64_t batch,
                                 int64_t pageSize, int64_t numPages) {
  std::vector<int64_t> lens;
  if (Status s = kvLengths(kvIndptr, lastPageLen, batch, pageSize, lens); !s)
    return s;
  if (numPages < 0)
    return fail("num_pages = ", numPages, " is negative");
  if (Status s = checkData(kvIndices, "kv_indices"); !s)
    return s;
  int64_t used = kvIndptr[batch];
  if (used > kvIndices.size)
    return fail("kv_indptr[", batch, "] = ", used, " exceeds the ",
                kvIndices.size, " entries of kv_indices");
  for (int64_t i = 0; i < used; ++i) {
    int64_t page = kvIndices[i];
    if (page < 0 || page >= numPages)
      return fail("kv_indices[", i, "] = ", page, " out of range [0, ",
                  numPages, ")");
  }
  return Status::success();
}

Status pa::rt::validatePageTable(I32Span kvIndptr, I32Span kvIndices,
                                 I32Span lastPageLen, int64_t batch,
                                 int64_t pageSize, int64_t numPages,
                                 std::vector<int64_t> &kvLens) {
  kvLens.clear();
  if (Status s = validatePageTable(kvIndptr, kvIndices, lastPageLen, batch,
                                   pageSize, numPages);
      !s)
    return s;
  return kvLengths(kvIndptr, lastPageLen, batch, pageSize, kvLens);
}

Status pa::rt::validateQueries(I32Span qoIndptr, int64_t batch,
                               int64_t numQueryRows,
                               const std::vector<int64_t> &kvLens,
                               bool explicitPositions) {
  if (batch < 0)
    return fail("batch = ", batch, " is negative");
  if (Status s = checkLength(qoIndptr, "qo_indptr", batch + 1, "batch + 1");
      !s)
    return s;
  if (static_cast<int64_t>(kvLens.size()) != batch)
    return fail("kv lengths: ", kvLens.size(), " entries, expected batch = ",
                batch);
  if (qoIndptr[0] != 0)
    return fail("qo_indptr[0] = ", qoIndptr[0], ", expected 0");
  for (int64_t b = 0; b < batch; ++b) {
    int64_t len = 0;
    if (Status s = queryCount(qoIndptr, b, len); !s)
      return s;
    if (!explicitPositions && len > kvLens[b])
      return fail("request ", b, ": qo_len = ", len, " > kv_len = ",
                  kvLens[b],
                  " (without q_positions the queries are the request's "
                  "last qo_len tokens)");
  }
  if (qoIndptr[batch] != numQueryRows)
    return fail("qo_indptr[", batch, "] = ", qoIndptr[batch],
                ", expected the ", numQueryRows, " rows of q");
  return Status::success();
}

Status pa::rt::prefillQueryTiles(I32Span qoIndptr, int64_t batch,
                                 int64_t queriesPerTile, int64_t &out) {
  if (batch < 0)
    return fail("batch = ", batch, " is negative");
  if (queriesPerTile <= 0)
    return fail("queries_per_tile = ", queriesPerTile, " must be positive");
  if (Status s = checkLength(qoIndptr, "qo_indptr", batch + 1, "batch + 1");
      !s)
    return s;
  int64_t tiles = 0;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t len = 0;
    if (Status s = queryCount(qoIndptr, b, len); !s)
      return s;
    tiles = std::max(tiles, ceilDiv(len, queriesPerTile));
  }
  out = tiles;
  return Status::success();
}

Status pa::rt::preferSmallerSplitTiles(I32Span qoIndptr, int64_t batch,
                                       int64_t unsplitQueriesPerTile,
                                       int64_t partialQueriesPerTile,
                                       int64_t numKVHeads, int64_t slots,
                                       bool &useSplit) {
  if (unsplitQueriesPerTile <= 0 || partialQueriesPerTile <= 0 ||
      numKVHeads <= 0 || slots <= 0)
    return fail("queries per tile (", unsplitQueriesPerTile, ", ",
                partialQueriesPerTile, "), num_kv_heads (", numKVHeads,
                ") and slots (", slots, ") must be positive");
  if (batch < 0)
    return fail("batch = ", batch, " is negative");
  if (Status s = checkLength(qoIndptr, "qo_indptr", batch + 1, "batch + 1");
      !s)
    return s;
  int64_t ctas = 0;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t len = 0;
    if (Status s = queryCount(qoIndptr, b, len); !s)
      return s;
    ctas += ceilDiv(len, unsplitQueriesPerTile) * numKVHeads;
  }
  useSplit = partialQueriesPerTile < unsplitQueriesPerTile && ctas < slots;
  return Status::success();
}

Status pa::rt::choosePrefillShort(I32Span qoIndptr,
                                  const std::vector<int64_t> &kvLens,
                                  int64_t batch, bool &useShort,
                                  int64_t maxMeanKeys) {
  if (batch < 0)
    return fail("batch = ", batch, " is negative");
  if (maxMeanKeys < 0)
    return fail("max mean keys = ", maxMeanKeys, " is negative");
  if (Status s = checkLength(qoIndptr, "qo_indptr", batch + 1, "batch + 1");
      !s)
    return s;
  if (static_cast<int64_t>(kvLens.size()) != batch)
    return fail("kv lengths have ", kvLens.size(), " entries, expected batch = ",
                batch);
  // sum qo * kv <= maxMeanKeys * sum qo, exactly: the int32 qo_indptr
  // keeps sum qo below 2^32, and kv_len and maxMeanKeys are below 2^63, so
  // both sides stay below 2^95.
  unsigned __int128 pairs = 0, queries = 0;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t len = 0;
    if (Status s = queryCount(qoIndptr, b, len); !s)
      return s;
    if (kvLens[b] < 0)
      return fail("kv_len[", b, "] = ", kvLens[b], " is negative");
    pairs += static_cast<unsigned __int128>(len) *
             static_cast<unsigned __int128>(kvLens[b]);
    queries += static_cast<unsigned __int128>(len);
  }
  useShort = queries > 0 &&
             pairs <= static_cast<unsigned __int128>(maxMeanKeys) * queries;
  return Status::success();
}

Status pa::rt::validateMask(I32Span maskIndptr, I32Span qoIndptr,
                            int64_t batch, const std::vector<int64_t> &kvLens,
                            int64_t maskBytes) {
  if (batch < 0)
    return fail("batch = ", batch, " is negative");
  if (maskBytes < 0)
    return fail("mask_bytes = ", maskBytes, " is negative");
  if (Status s =
          checkLength(maskIndptr, "mask_indptr", batch + 1, "batch + 1");
      !s)
    return s;
  if (Status s = checkLength(qoIndptr, "qo_indptr", batch + 1, "batch + 1");
      !s)
    return s;
  if (static_cast<int64_t>(kvLens.size()) != batch)
    return fail("kv lengths: ", kvLens.size(), " entries, expected batch = ",
                batch);
  if (maskIndptr[0] < 0)
    return fail("mask_indptr[0] = ", maskIndptr[0], " is negative");
  for (int64_t b = 0; b < batch; ++b) {
    int64_t lo = maskIndptr[b], hi = maskIndptr[b + 1];
    if (hi < lo)
      return fail("mask_indptr not non-decreasing at b = ", b,
                  ": mask_indptr[", b, "] = ", lo, " > mask_indptr[", b + 1,
                  "] = ", hi);
    int64_t qoLen = static_cast<int64_t>(qoIndptr[b + 1]) - qoIndptr[b];
    int64_t need = ceilDiv(qoLen * kvLens[b], 8);
    if (hi - lo < need)
      return fail("mask segment ", b, " has ", hi - lo, " bytes (mask_indptr[",
                  b, "] = ", lo, " .. mask_indptr[", b + 1, "] = ", hi,
                  "), request ", b, " needs ceil(qo_len ", qoLen,
                  " * kv_len ", kvLens[b], " / 8) = ", need);
  }
  if (maskIndptr[batch] > maskBytes)
    return fail("mask_indptr[", batch, "] = ", maskIndptr[batch],
                " exceeds the ", maskBytes, " bytes of custom_mask (mask_bytes)");
  return Status::success();
}

WorkList pa::rt::planFixedChunks(const std::vector<int64_t> &kvLens,
                                 int64_t chunkSize) {
  assert(chunkSize >= 1 && "planFixedChunks needs chunkSize >= 1");
  WorkList work;
  int64_t batch = static_cast<int64_t>(kvLens.size());
  int64_t total = 0;
  for (int64_t len : kvLens) {
    assert(len >= 0 && len <= std::numeric_limits<int32_t>::max() &&
           "kv_len out of range");
    total += ceilDiv(len, chunkSize);
  }
  work.indptr.reserve(static_cast<size_t>(batch + 1));
  work.request.reserve(static_cast<size_t>(total));
  work.start.reserve(static_cast<size_t>(total));
  work.end.reserve(static_cast<size_t>(total));
  work.indptr.push_back(0);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t len = kvLens[b];
    for (int64_t c = 0, n = ceilDiv(len, chunkSize); c < n; ++c) {
      work.request.push_back(static_cast<int32_t>(b));
      work.start.push_back(static_cast<int32_t>(c * chunkSize));
      work.end.push_back(
          static_cast<int32_t>(std::min((c + 1) * chunkSize, len)));
    }
    work.indptr.push_back(static_cast<int32_t>(work.request.size()));
  }
  return work;
}

Status pa::rt::planPrefill(I32Span qoIndptr, I32Span kvIndptr,
                           I32Span lastPageLen, int64_t batch,
                           int64_t numQueryRows, int64_t pageSize,
                           int64_t numKVHeads, int64_t queriesPerTile,
                           bool causal, bool explicitPositions,
                           int64_t numSMs, int64_t ctasPerSM,
                           PrefillPlan &plan, int64_t minChunk,
                           int64_t forceChunk, bool forcePartial) {
  if (forceChunk < 0)
    return fail("forced chunk = ", forceChunk, " is negative");
  if (numKVHeads <= 0 || queriesPerTile <= 0 || numSMs <= 0 || ctasPerSM <= 0)
    return fail("num_kv_heads (", numKVHeads, "), queries_per_tile (",
                queriesPerTile, "), num_sms (", numSMs, ") and ctas_per_sm (",
                ctasPerSM, ") must be positive");
  std::vector<int64_t> lens;
  if (Status s = kvLengths(kvIndptr, lastPageLen, batch, pageSize, lens); !s)
    return s;
  if (Status s = validateQueries(qoIndptr, batch, numQueryRows, lens,
                                 explicitPositions);
      !s)
    return s;
  for (int64_t b = 0; b < batch; ++b)
    if (lens[b] > std::numeric_limits<int32_t>::max())
      return fail("kv_len[", b, "] = ", lens[b], " exceeds INT32_MAX");

  // A plan lists its tiles (and split items and partial rows) on the host
  // and uploads them: more than kMaxPrefillPlanEntries of any would be a
  // batch no GPU holds the queries of, and host memory the planner must
  // not exhaust (found by pa-runtime-fuzz, 2026-11-26).
  int64_t tileCount = 0;
  for (int64_t b = 0; b < batch; ++b)
    tileCount += ceilDiv(qoIndptr[b + 1] - qoIndptr[b], queriesPerTile);
  if (tileCount > kMaxPrefillPlanEntries)
    return fail("the batch has ", tileCount, " query tiles of ",
                queriesPerTile, " queries, more than the ",
                kMaxPrefillPlanEntries, " a prefill plan holds");

  // The tiles and the keys each can see.
  struct Tile {
    int64_t request, q0, q1, keys;
  };
  std::vector<Tile> tiles;
  int64_t maxKeys = 0;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t qoLen = qoIndptr[b + 1] - qoIndptr[b];
    for (int64_t q0 = 0; q0 < qoLen; q0 += queriesPerTile) {
      int64_t q1 = std::min(q0 + queriesPerTile, qoLen);
      // Query i sits at kv_len - qo_len + i; causal: keys t <= position.
      int64_t keys =
          causal && !explicitPositions ? lens[b] - qoLen + q1 : lens[b];
      tiles.push_back({b, q0, q1, keys});
      maxKeys = std::max(maxKeys, keys);
    }
  }
  PrefillPlan result;
  result.queriesPerTile = queriesPerTile;
  int64_t slots = numSMs * ctasPerSM;
  int64_t minC = roundUp(std::max<int64_t>(minChunk, 1), pageSize);
  int64_t chunk = roundUp(std::max<int64_t>(maxKeys, 1), pageSize);
  int64_t tileCTAs = static_cast<int64_t>(tiles.size()) * numKVHeads;
  if (forceChunk > 0) {
    chunk = roundUp(forceChunk, pageSize);
  } else if (tileCTAs > 0 && tileCTAs < slots && maxKeys > minC) {
    // The chunk with the least modelled time: the CTAs run in waves of
    // `slots`, and a wave lasts as long as its longest item, about the
    // chunk plus a fixed cost per item (the Q tile, the pipeline's
    // prologue, the partial state and its merge) worth
    // kPrefillItemOverheadKeys keys. Candidates cut the longest tile into
    // n = 1, 2, ... chunks (n = 1: no split), down to the minimum chunk;
    // ties go to the larger chunk. H200, 2026-11-23
    // (bench/results/prefill-split-chunk-sweep_*): GQA-4 1 x 128 queries
    // over 16384 keys, 36 items x 8 heads on 264 slots (two waves) 151 us,
    // 32 items (one) 132 us; 1 x 512 over 32768, 2 waves of 8192-key items
    // 925 us, 32 waves of 512 1155 us, 128 waves of 128 2227 us.
    int64_t bestCost = std::numeric_limits<int64_t>::max();
    for (int64_t n = 1;; ++n) {
      int64_t c = roundUp(ceilDiv(maxKeys, n), pageSize);
      if (n > 1 && c < minC)
        break;
      int64_t items = 0;
      for (const Tile &t : tiles)
        items += std::max<int64_t>(ceilDiv(t.keys, c), 1);
      int64_t cost = ceilDiv(items * numKVHeads, slots) *
                     (std::min(c, maxKeys) + kPrefillItemOverheadKeys);
      if (cost < bestCost) {
        bestCost = cost;
        chunk = c;
      }
      if (c <= pageSize)
        break;
    }
  }
  result.kvChunk = chunk;
  result.split = forcePartial && !tiles.empty();
  for (const Tile &t : tiles)
    result.split |= t.keys > chunk;
  int64_t items = 0, partialRows = 0;
  for (const Tile &t : tiles) {
    int64_t chunks = std::max<int64_t>(ceilDiv(t.keys, chunk), 1);
    items += chunks;
    partialRows += result.split ? (t.q1 - t.q0) * chunks : 0;
  }
  if (items > kMaxPrefillPlanEntries || partialRows > kMaxPrefillPlanEntries)
    return fail("the plan needs ", items, " work items and ", partialRows,
                " partial rows (KV chunk ", chunk, "), more than the ",
                kMaxPrefillPlanEntries, " a prefill plan holds");

  // The items in tile order: partial rows are numbered in query-row order,
  // as the merge segments (mergeIndptr, a CSR over the rows) need.
  struct Item {
    int64_t request, q0, q1, kv0, kv1, partialRow, partialStride;
  };
  std::vector<Item> list;
  list.reserve(static_cast<size_t>(items));
  PrefillWorkList &w = result.work;
  if (result.split)
    w.mergeIndptr.assign(static_cast<size_t>(numQueryRows + 1), 0);
  int64_t partial = 0;
  for (const Tile &t : tiles) {
    int64_t chunks = std::max<int64_t>(ceilDiv(t.keys, chunk), 1);
    int64_t rowBase = qoIndptr[t.request];
    for (int64_t c = 0; c < chunks; ++c)
      list.push_back({t.request, t.q0, t.q1, std::min(c * chunk, t.keys),
                      std::min((c + 1) * chunk, t.keys),
                      result.split ? partial + c : 0,
                      result.split ? chunks : 0});
    if (result.split)
      for (int64_t i = t.q0; i < t.q1; ++i) {
        partial += chunks;
        w.mergeIndptr[static_cast<size_t>(rowBase + i + 1)] =
            static_cast<int32_t>(partial);
      }
  }
  result.numPartialRows = partial;
  if (partial > std::numeric_limits<int32_t>::max() ||
      static_cast<int64_t>(list.size()) > std::numeric_limits<int32_t>::max())
    return fail("the plan needs ", partial, " partial rows and ", list.size(),
                " items, more than int32 offsets hold");
  // Launch order: the items with the most keys first (then the most
  // queries; ties keep tile order). CTAs start in block order and a slot
  // takes the next item when one ends, so the last wave holds the
  // shortest items instead of a causal request's longest, last tile
  // (FlashAttention-2 reverses its causal query blocks for the same reason).
  std::stable_sort(list.begin(), list.end(), [](const Item &a, const Item &b) {
    if (a.kv1 - a.kv0 != b.kv1 - b.kv0)
      return a.kv1 - a.kv0 > b.kv1 - b.kv0;
    return a.q1 - a.q0 > b.q1 - b.q0;
  });
  for (const Item &it : list) {
    w.request.push_back(static_cast<int32_t>(it.request));
    w.qoStart.push_back(static_cast<int32_t>(it.q0));
    w.qoEnd.push_back(static_cast<int32_t>(it.q1));
    w.kvStart.push_back(static_cast<int32_t>(it.kv0));
    w.kvEnd.push_back(static_cast<int32_t>(it.kv1));
    if (result.split) {
      w.partialRow.push_back(static_cast<int32_t>(it.partialRow));
      w.partialStride.push_back(static_cast<int32_t>(it.partialStride));
    }
  }
  plan = std::move(result);
  return Status::success();
}

int64_t pa::rt::chooseChunkSize(const std::vector<int64_t> &kvLens,
                                int64_t numKVHeads, int64_t maxCTAs,
                                int64_t pageSize, int64_t minChunk) {
  pageSize = std::max<int64_t>(pageSize, 1);
  int64_t batch = static_cast<int64_t>(kvLens.size());
  int64_t maxLen = maxLength(kvLens);
  int64_t noSplit = noSplitChunk(maxLen, pageSize);
  int64_t minC = roundUp(std::max<int64_t>(minChunk, 1), pageSize);
  if (numKVHeads <= 0 || maxCTAs <= 0 || batch * numKVHeads >= maxCTAs ||
      maxLen <= minC)
    return noSplit;
  // The no-split chunk always fits here: every request has at most one
  // item and batch * numKVHeads < maxCTAs.
  return smallestFittingChunk(kvLens, numKVHeads, maxCTAs, pageSize, minC);
}

int64_t pa::rt::smallestFittingChunk(const std::vector<int64_t> &kvLens,
                                     int64_t numKVHeads, int64_t maxCTAs,
                                     int64_t pageSize, int64_t minChunk) {
  pageSize = std::max<int64_t>(pageSize, 1);
  int64_t maxLen = maxLength(kvLens);
  // Smallest k in [lo, hi] with countCTAs(k * pageSize) <= maxCTAs (ctas
  // is non-increasing in the chunk), hi = the no-split chunk's.
  int64_t hi = noSplitChunk(maxLen, pageSize) / pageSize;
  int64_t lo = std::min(roundUp(std::max<int64_t>(minChunk, 1), pageSize) /
                            pageSize,
                        hi);
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (countCTAs(kvLens, numKVHeads, mid * pageSize) <= maxCTAs)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo * pageSize;
}

int64_t pa::rt::balanceWaves(const std::vector<int64_t> &kvLens,
                             int64_t numKVHeads, int64_t maxCTAs,
                             int64_t pageSize, int64_t minChunk) {
  pageSize = std::max<int64_t>(pageSize, 1);
  int64_t batch = static_cast<int64_t>(kvLens.size());
  int64_t maxLen = maxLength(kvLens);
  int64_t noSplit = noSplitChunk(maxLen, pageSize);
  if (numKVHeads <= 0 || maxCTAs <= 0 || batch * numKVHeads < maxCTAs)
    return noSplit;
  int64_t minC = roundUp(std::max<int64_t>(minChunk, 1), pageSize);
  auto modelled = [&](int64_t c) {
    int64_t waves = ceilDiv(countCTAs(kvLens, numKVHeads, c), maxCTAs);
    return waves * (c + kWaveItemCost) + (c < maxLen ? kWaveMergeCost : 0);
  };
  int64_t best = noSplit, bestTime = std::numeric_limits<int64_t>::max();
  for (int64_t s = 2; s <= kWaveMaxSplit; ++s) {
    int64_t c = roundUp(ceilDiv(maxLen, s), pageSize);
    if (c < minC || c >= noSplit)
      continue;
    if (int64_t t = modelled(c); t < bestTime) {
      best = c;
      bestTime = t;
    }
  }
  // A split must model at least kWaveMinGainPercent faster.
  int64_t noSplitTime = modelled(noSplit);
  if (best != noSplit &&
      bestTime * 100 <= noSplitTime * (100 - kWaveMinGainPercent))
    return best;
  return noSplit;
}

int64_t pa::rt::decodeCTAsPerSM(int64_t gridCTAs, int64_t numSMs,
                                int64_t maxCTAs, bool fp8Requests,
                                int64_t maxKVLen) {
  if (maxCTAs <= 2 || numSMs <= 0)
    return maxCTAs;
  if (gridCTAs < numSMs * (maxCTAs - 1))
    return maxCTAs == 3 && !fp8Requests ? 2 : maxCTAs;
  if (gridCTAs < numSMs * maxCTAs ||
      (fp8Requests && maxKVLen >= kFP8FullWaveMinKeys))
    return maxCTAs;
  auto idle = [&](int64_t c) {
    int64_t slots = numSMs * c * ceilDiv(gridCTAs, numSMs * c);
    return static_cast<double>(slots - gridCTAs) / static_cast<double>(slots);
  };
  if (idle(maxCTAs) > kMaxIdleWaveShare && idle(maxCTAs - 1) < idle(maxCTAs))
    return maxCTAs - 1;
  return maxCTAs;
}

int64_t pa::rt::fewerMerges(const std::vector<int64_t> &kvLens,
                            int64_t chunk, int64_t pageSize) {
  pageSize = std::max<int64_t>(pageSize, 1);
  int64_t maxLen = maxLength(kvLens);
  int64_t noSplit = noSplitChunk(maxLen, pageSize);
  if (chunk <= 0 || chunk >= noSplit)
    return chunk;
  auto modelled = [&](int64_t c) {
    int64_t n = ceilDiv(maxLen, c);
    return c + n * n / kMergeCostDivisor;
  };
  int64_t best = chunk, bestTime = modelled(chunk);
  for (int64_t c : {2 * chunk, 4 * chunk}) {
    c = std::min(c, noSplit);
    if (int64_t t = modelled(c); t < bestTime) {
      best = c;
      bestTime = t;
    }
  }
  return best;
}

int64_t pa::rt::fewerTogetherItems(const std::vector<int64_t> &kvLens,
                                   int64_t chunk, int64_t pageSize) {
  pageSize = std::max<int64_t>(pageSize, 1);
  int64_t maxLen = maxLength(kvLens);
  int64_t noSplit = noSplitChunk(maxLen, pageSize);
  if (chunk <= 0 || chunk >= noSplit)
    return chunk;
  int64_t capped = roundUp(ceilDiv(maxLen, kMergeTogetherMaxItems), pageSize);
  return std::min(std::max(chunk, capped), noSplit);
}

bool pa::rt::preferMergeTogether(int64_t batch, int64_t maxItems,
                                 int64_t chunk, int64_t slotsPerThread) {
  if (maxItems <= 1)
    return false;
  int64_t steps = ceilDiv(maxItems, 8) * std::max<int64_t>(slotsPerThread, 1);
  return steps >= kMergeTogetherMinSteps ||
         (batch == 1 && maxItems >= kMergeTogetherMinItems &&
          chunk >= kMergeTogetherMinChunk);
}

Status pa::rt::planDecode(I32Span kvIndptr, I32Span lastPageLen, int64_t batch,
                          int64_t pageSize, int64_t numKVHeads, int64_t numSMs,
                          int64_t ctasPerSM, DecodePlan &plan,
                          int64_t minChunk, bool mergeTogether) {
  if (numKVHeads <= 0)
    return fail("num_kv_heads = ", numKVHeads, " must be positive");
  if (numSMs <= 0)
    return fail("num_sms = ", numSMs, " must be positive");
  if (ctasPerSM <= 0)
    return fail("ctas_per_sm = ", ctasPerSM, " must be positive");
  std::vector<int64_t> lens;
  if (Status s = kvLengths(kvIndptr, lastPageLen, batch, pageSize, lens); !s)
    return s;

  for (int64_t b = 0; b < batch; ++b)
    if (lens[b] > std::numeric_limits<int32_t>::max())
      return fail("kv_len[", b, "] = ", lens[b],
                  " exceeds INT32_MAX (work items hold int32 token offsets)");

  DecodePlan result;
  result.chunkSize =
      chooseChunkSize(lens, numKVHeads, numSMs * ctasPerSM, pageSize, minChunk);
  if (batch * numKVHeads >= numSMs * ctasPerSM)
    result.chunkSize = balanceWaves(lens, numKVHeads, numSMs * ctasPerSM,
                                    pageSize, minChunk);
  else if (!mergeTogether)
    result.chunkSize = fewerMerges(lens, result.chunkSize, pageSize);
  else
    result.chunkSize = fewerTogetherItems(lens, result.chunkSize, pageSize);
  result.work = planFixedChunks(lens, result.chunkSize);
  int64_t totalTokens = 0;
  for (int64_t b = 0; b < batch; ++b) {
    totalTokens += lens[b];
    if (result.work.indptr[b + 1] - result.work.indptr[b] > 1)
      result.split = true;
  }
  result.maxItemsBound = batch + ceilDiv(totalTokens, result.chunkSize);
  plan = std::move(result);
  return Status::success();
}

int64_t pa::rt::workListBound(int64_t batch, int64_t numPagesUsed,
                              int64_t pageSize, int64_t chunkSize) {
  assert(chunkSize >= 1 && "workListBound needs chunkSize >= 1");
  return batch + ceilDiv(numPagesUsed * pageSize, chunkSize);
}

int64_t pa::rt::mlaSplits(int64_t batch, int64_t headBlocks, int64_t slots,
                          int64_t maxKVLen, bool together) {
  if (batch <= 0 || headBlocks <= 0 || slots <= 0)
    return 1;
  int64_t s = std::max<int64_t>(1, slots / (batch * headBlocks));
  if (together) {
    s = std::min(s, kMaxMLASplitsTogether);
    if (maxKVLen > 0)
      s = std::min(s, std::max(kMLATogetherSplitsAtMinTokens,
                               ceilDiv(maxKVLen, kMLATogetherSplitTokens)));
    return s;
  }
  s = std::min(s, kMaxMLASplits);
  if (maxKVLen > 0) {
    s = std::min(s, std::max<int64_t>(1, ceilDiv(maxKVLen,
                                                 kMinMLASplitTokens)));
    s = std::min(s, std::max(kMLASplitsAtMinTokens,
                             ceilDiv(maxKVLen, kMLASplitTokens)));
  }
  return s;
}

bool pa::rt::mlaPrefersTogether(int64_t splits) {
  return splits >= kMLATogetherMinSplits;
}

bool pa::rt::chooseMLASmall(int64_t batch, int64_t maxKVLen) {
  return batch >= 1 && batch <= kMLASmallMaxBatch && maxKVLen > 0 &&
         maxKVLen <= kMLASmallMaxKeys;
}

pa::rt::MLAWorkspace pa::rt::mlaWorkspace(int64_t batch, int64_t heads,
                                          int64_t ckv, int64_t splits) {
  MLAWorkspace w;
  if (splits <= 1 || batch <= 0)
    return w;
  auto align = [](int64_t x) { return (x + 255) / 256 * 256; };
  int64_t rows = batch * splits;
  w.oPart = 0;
  w.lsePart = align(rows * heads * ckv * 4);
  w.counters = w.lsePart + align(rows * heads * 4);
  w.bytes = w.counters + align(batch * heads * 4);
  return w;
}
