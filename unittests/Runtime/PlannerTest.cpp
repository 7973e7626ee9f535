//===- PlannerTest.cpp - tests of the host-side split-KV planner ----------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// Page-table validation messages (every invariant, array lengths included),
// the exact-cover property of the fixed-chunk work list over thousands of
// random batches, the chunk-size rule, and planDecode end to end. Random
// cases (pa::test, PATestSupport) print their seed through SCOPED_TRACE so a
// failure can be replayed.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Runtime/Planner.h"
#include "PagedAttn/TestSupport/Random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

using namespace pa::rt;
using pa::test::Rng;

namespace {

/// ceil(a / b) for a >= 0, b >= 1.
int64_t ceilDiv(int64_t a, int64_t b) { return pa::test::pagesFor(a, b); }

/// A page table with kv_len[b] == lens[b] over exactly the pages it uses
/// (in a random order).
pa::ref::PageTable makeTable(Rng &rng, const std::vector<int64_t> &lens,
                             int64_t pageSize) {
  pa::test::PagePool pool(rng, pa::test::totalPages(lens, pageSize));
  return pa::test::makePageTable(rng, pageSize, lens, pool);
}

/// Random kv lengths: batch in [0, maxBatch], lengths in [0, maxLen] with
/// plenty of zeros and exact multiples of `unit`.
std::vector<int64_t> randomBatch(Rng &rng, int64_t maxBatch, int64_t maxLen,
                                 int64_t unit) {
  return pa::test::randomLens(rng, rng.uniformInt(0, maxBatch), unit, maxLen);
}

/// Checks that `work` is planFixedChunks(lens, chunk): CSR well formed,
/// items of each request contiguous, in order, non-empty, at most `chunk`
/// tokens, starting at multiples of `chunk`, every token covered exactly once.
::testing::AssertionResult checkWorkList(const WorkList &work,
                                         const std::vector<int64_t> &lens,
                                         int64_t chunk) {
  int64_t batch = static_cast<int64_t>(lens.size());
  int64_t n = work.size();
  if (static_cast<int64_t>(work.indptr.size()) != batch + 1)
    return ::testing::AssertionFailure() << "indptr has " << work.indptr.size()
                                         << " entries, batch " << batch;
  if (static_cast<int64_t>(work.start.size()) != n ||
      static_cast<int64_t>(work.end.size()) != n)
    return ::testing::AssertionFailure() << "request/start/end sizes differ";
  if (work.indptr[0] != 0 || work.indptr[batch] != n)
    return ::testing::AssertionFailure()
           << "indptr[0] = " << work.indptr[0]
           << ", indptr[B] = " << work.indptr[batch] << ", size " << n;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t lo = work.indptr[b], hi = work.indptr[b + 1];
    if (hi < lo)
      return ::testing::AssertionFailure() << "indptr decreases at " << b;
    if (hi - lo != ceilDiv(lens[b], chunk))
      return ::testing::AssertionFailure()
             << "request " << b << " has " << hi - lo << " items, expected "
             << ceilDiv(lens[b], chunk);
    std::vector<int> covered(static_cast<size_t>(lens[b]), 0);
    int64_t prevEnd = 0;
    for (int64_t w = lo; w < hi; ++w) {
      int64_t s = work.start[w], e = work.end[w];
      if (work.request[w] != b)
        return ::testing::AssertionFailure()
               << "item " << w << " names request " << work.request[w]
               << ", expected " << b;
      if (s != prevEnd)
        return ::testing::AssertionFailure()
               << "item " << w << " starts at " << s << ", previous ended at "
               << prevEnd;
      if (s % chunk != 0 || e <= s || e - s > chunk || e > lens[b])
        return ::testing::AssertionFailure()
               << "item " << w << " = [" << s << ", " << e << ") bad for chunk "
               << chunk << ", len " << lens[b];
      for (int64_t t = s; t < e; ++t)
        ++covered[static_cast<size_t>(t)];
      prevEnd = e;
    }
    for (int64_t t = 0; t < lens[b]; ++t)
      if (covered[static_cast<size_t>(t)] != 1)
        return ::testing::AssertionFailure()
               << "token " << t << " of request " << b << " covered "
               << covered[static_cast<size_t>(t)] << " times";
  }
  return ::testing::AssertionSuccess();
}

/// numKVHeads * sum_b ceil(lens[b] / chunk).
int64_t ctas(const std::vector<int64_t> &lens, int64_t numKVHeads,
             int64_t chunk) {
  int64_t items = 0;
  for (int64_t len : lens)
    items += ceilDiv(len, chunk);
  return items * numKVHeads;
}

//===----------------------------------------------------------------------===//
// kvLengths / validatePageTable
//===----------------------------------------------------------------------===//

// Page size 4: request 0 owns 3 pages (10 tokens), request 1 none, request 2
// one full page; 10 pages in the cache.
const std::vector<int32_t> kIndptr = {0, 3, 3, 4};
const std::vector<int32_t> kIndices = {7, 0, 9, 2};
const std::vector<int32_t> kLast = {2, 0, 4};

TEST(PageTable, ValidTablePasses) {
  std::vector<int64_t> lens;
  Status s = kvLengths(kIndptr, kLast, 3, 4, lens);
  ASSERT_TRUE(s) << s.message;
  EXPECT_EQ(lens, (std::vector<int64_t>{10, 0, 4}));
  s = validatePageTable(kIndptr, kIndices, kLast, 3, 4, 10);
  EXPECT_TRUE(s) << s.message;
  EXPECT_TRUE(s.message.empty());
}

TEST(PageTable, EmptyBatchPasses) {
  int32_t indptr = 0;
  std::vector<int64_t> lens = {5};
  Status s = kvLengths(I32Span(&indptr, 1), I32Span(), 0, 16, lens);
  ASSERT_TRUE(s) << s.message;
  EXPECT_TRUE(lens.empty());
  EXPECT_TRUE(
      validatePageTable(I32Span(&indptr, 1), I32Span(), I32Span(), 0, 16, 0));
}

TEST(PageTable, RandomTablesMatchLengths) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    int64_t pageSize = rng.uniformInt(1, 64);
    std::vector<int64_t> lens = randomBatch(rng, 64, 5000, pageSize);
    pa::ref::PageTable t = makeTable(rng, lens, pageSize);
    std::vector<int64_t> got;
    int64_t batch = static_cast<int64_t>(lens.size());
    Status s = kvLengths(t.indptr, t.lastPageLen, batch, pageSize, got);
    ASSERT_TRUE(s) << s.message;
    EXPECT_EQ(got, lens);
    int64_t numPages = static_cast<int64_t>(t.indices.size());
    s = validatePageTable(t.indptr, t.indices, t.lastPageLen, batch, pageSize,
                          numPages);
    EXPECT_TRUE(s) << s.message;
    if (numPages == 0)
      continue;
    // Regression: kv_indices one or more entries short of kv_indptr[B] is
    // rejected, naming both arrays, not read past its end.
    int64_t shortBy = rng.uniformInt(1, numPages);
    s = validatePageTable(t.indptr,
                          I32Span(t.indices.data(), numPages - shortBy),
                          t.lastPageLen, batch, pageSize, numPages);
    EXPECT_FALSE(s);
    EXPECT_EQ(s.message, "kv_indptr[" + std::to_string(batch) + "] = " +
                             std::to_string(numPages) + " exceeds the " +
                             std::to_string(numPages - shortBy) +
                             " entries of kv_indices");
  }
}

/// Expects `s` to be an error whose message contains `what`.
void expectError(const Status &s, const std::string &what) {
  EXPECT_FALSE(s);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find(what), std::string::npos)
      << "message: \"" << s.message << "\", expected to contain \"" << what
      << "\"";
}

TEST(PageTable, KVIndicesShorterThanIndptrSays) {
  // kv_indptr[3] = 4 pages, but only 3 (or 0) entries of kv_indices.
  expectError(
      validatePageTable(kIndptr, I32Span(kIndices.data(), 3), kLast, 3, 4, 10),
      "kv_indptr[3] = 4 exceeds the 3 entries of kv_indices");
  expectError(validatePageTable(kIndptr, I32Span(), kLast, 3, 4, 10),
              "kv_indptr[3] = 4 exceeds the 0 entries of kv_indices");
  // Entries past kv_indptr[B] are not read: a longer array is fine.
  std::vector<int32_t> longer = kIndices;
  longer.push_back(-5);
  longer.push_back(1000);
  EXPECT_TRUE(validatePageTable(kIndptr, longer, kLast, 3, 4, 10));
}

//===----------------------------------------------------------------------===//
// validateQueries (prefill checked mode)
//===----------------------------------------------------------------------===//

TEST(Queries, ValidPasses) {
  // kv_len 5, 0, 3; qo_len 2, 0, 3 (the last request is a full prefill).
  std::vector<int32_t> qo = {0, 2, 2, 5};
  EXPECT_TRUE(validateQueries(qo, 3, 5, {5, 0, 3}, false));
  // An empty batch has one qo_indptr entry, 0, and no rows.
  EXPECT_TRUE(validateQueries(std::vector<int32_t>{0}, 0, 0, {}, false));
}

TEST(Queries, QoLenAboveKvLenNeedsPositions) {
  std::vector<int32_t> qo = {0, 2, 6};
  expectError(validateQueries(qo, 2, 6, {5, 3}, false),
              "request 1: qo_len = 4 > kv_len = 3");
  // With explicit positions the queries may be anywhere.
  EXPECT_TRUE(validateQueries(qo, 2, 6, {5, 3}, true));
}

TEST(Queries, IndptrInvariants) {
  expectError(validateQueries(std::vector<int32_t>{1, 2, 3}, 2, 3, {5, 5},
                              false),
              "qo_indptr[0] = 1, expected 0");
  expectError(validateQueries(std::vector<int32_t>{0, 3, 2}, 2, 2, {5, 5},
                              false),
              "qo_indptr not non-decreasing at b = 1: qo_indptr[1] = 3 > "
              "qo_indptr[2] = 2");
  expectError(validateQueries(std::vector<int32_t>{0, 1, 2}, 2, 3, {5, 5},
                              false),
              "qo_indptr[2] = 2, expected the 3 rows of q");
  expectError(validateQueries(std::vector<int32_t>{0, 1}, 2, 1, {5, 5}, false),
              "qo_indptr has 2 entries, expected batch + 1 = 3");
  expectError(validateQueries(std::vector<int32_t>{0, 1, 2}, 2, 2, {5}, false),
              "kv lengths: 1 entries, expected batch = 2");
  expectError(validateQueries(I32Span(nullptr, 3), 2, 2, {5, 5}, false),
              "qo_indptr is null");
}

//===----------------------------------------------------------------------===//
// prefillQueryTiles (the q_tiles grid symbol) and validateMask
//===----------------------------------------------------------------------===//

TEST(QueryTiles, HandComputed) {
  int64_t tiles = -1;
  // qo_len 5, 0, 16, 17 with 16 queries per tile: 1, 0, 1, 2 tiles.
  std::vector<int32_t> qo = {0, 5, 5, 21, 38};
  ASSERT_TRUE(prefillQueryTiles(qo, 4, 16, tiles));
  EXPECT_EQ(tiles, 2);
  ASSERT_TRUE(prefillQueryTiles(qo, 4, 17, tiles));
  EXPECT_EQ(tiles, 1);
  ASSERT_TRUE(prefillQueryTiles(qo, 4, 1, tiles));
  EXPECT_EQ(tiles, 17);
  // All empty, and no request at all: nothing to launch.
  ASSERT_TRUE(prefillQueryTiles(std::vector<int32_t>{0, 0, 0}, 2, 16, tiles));
  EXPECT_EQ(tiles, 0);
  ASSERT_TRUE(prefillQueryTiles(std::vector<int32_t>{0}, 0, 16, tiles));
  EXPECT_EQ(tiles, 0);
  // qo_len == queries_per_tile: exactly one tile.
  ASSERT_TRUE(prefillQueryTiles(std::vector<int32_t>{0, 64}, 1, 64, tiles));
  EXPECT_EQ(tiles, 1);
}

TEST(QueryTiles, Errors) {
  int64_t tiles = 42;
  std::vector<int32_t> qo = {0, 5, 3};
  expectError(prefillQueryTiles(qo, 2, 16, tiles),
              "qo_indptr not non-decreasing at b = 1: qo_indptr[1] = 5 > "
              "qo_indptr[2] = 3");
  expectError(prefillQueryTiles(qo, 2, 0, tiles),
              "queries_per_tile = 0 must be positive");
  expectError(prefillQueryTiles(qo, 3, 16, tiles),
              "qo_indptr has 3 entries, expected batch + 1 = 4");
  expectError(prefillQueryTiles(qo, -1, 16, tiles), "batch = -1 is negative");
  expectError(prefillQueryTiles(I32Span(nullptr, 3), 2, 16, tiles),
              "qo_indptr is null");
  EXPECT_EQ(tiles, 42) << "out must be untouched on failure";
}

TEST(QueryTiles, RandomMatchesTheDefinition) {
  uint64_t seed = pa::test::baseSeed("QueryTiles.Random", 7);
  SCOPED_TRACE("seed " + std::to_string(seed) + " (PA_SEED replays)");
  Rng rng(seed);
  for (int iter = 0; iter < 500; ++iter) {
    std::vector<int64_t> qoLens = randomBatch(rng, 40, 600, 16);
    int64_t qpt = rng.uniformInt(1, 128);
    std::vector<int32_t> qo = pa::test::indptrOf(qoLens);
    int64_t tiles = -1;
    ASSERT_TRUE(prefillQueryTiles(qo, static_cast<int64_t>(qoLens.size()), qpt,
                                  tiles));
    // Every request fits in q_tiles tiles, and the longest needs them all.
    int64_t maxLen = 0;
    for (int64_t len : qoLens) {
      EXPECT_LE(len, tiles * qpt);
      maxLen = std::max(maxLen, len);
    }
    if (tiles > 0)
      EXPECT_GT(maxLen, (tiles - 1) * qpt);
    else
      EXPECT_EQ(maxLen, 0);
  }
}

TEST(Mask, ValidPasses) {
  // qo_len 2, 0, 3 over kv_len 5, 4, 3: 10 bits (2 bytes), 0, 9 bits (2).
  std::vector<int32_t> qo = {0, 2, 2, 5};
  std::vector<int64_t> kv = {5, 4, 3};
  EXPECT_TRUE(validateMask(std::vector<int32_t>{0, 2, 2, 4}, qo, 3, kv, 4));
  // Larger segments, a non-zero start and spare bytes are fine.
  EXPECT_TRUE(validateMask(std::vector<int32_t>{3, 6, 7, 9}, qo, 3, kv, 12));
  EXPECT_TRUE(validateMask(std::vector<int32_t>{0}, std::vector<int32_t>{0}, 0,
                           {}, 0));
}

TEST(Mask, Errors) {
  std::vector<int32_t> qo = {0, 2, 2, 5};
  std::vector<int64_t> kv = {5, 4, 3};
  expectError(validateMask(std::vector<int32_t>{0, 1, 1, 3}, qo, 3, kv, 4),
              "mask segment 0 has 1 bytes (mask_indptr[0] = 0 .. "
              "mask_indptr[1] = 1), request 0 needs ceil(qo_len 2 * kv_len 5 "
              "/ 8) = 2");
  expectError(validateMask(std::vector<int32_t>{0, 2, 1, 3}, qo, 3, kv, 4),
              "mask_indptr not non-decreasing at b = 1: mask_indptr[1] = 2 > "
              "mask_indptr[2] = 1");
  expectError(validateMask(std::vector<int32_t>{0, 2, 2, 4}, qo, 3, kv, 3),
              "mask_indptr[3] = 4 exceeds the 3 bytes of custom_mask");
  expectError(validateMask(std::vector<int32_t>{-1, 2, 2, 4}, qo, 3, kv, 4),
              "mask_indptr[0] = -1 is negative");
  expectError(validateMask(std::vector<int32_t>{0, 2, 4}, qo, 3, kv, 4),
              "mask_indptr has 3 entries, expected batch + 1 = 4");
  expectError(validateMask(std::vector<int32_t>{0, 2, 2, 4}, qo, 3, kv, -1),
              "mask_bytes = -1 is negative");
  expectError(validateMask(I32Span(nullptr, 4), qo, 3, kv, 4),
              "mask_indptr is null");
}

TEST(PageTable, KVIndptrLengthIsBatchPlusOne) {
  std::vector<int64_t> lens;
  DecodePlan plan;
  std::vector<int32_t> longer = {0, 3, 3, 4, 4};
  for (I32Span indptr : {I32Span(kIndptr.data(), 3), I32Span(longer)}) {
    std::string msg = "kv_indptr has " + std::to_string(indptr.size) +
                      " entries, expected batch + 1 = 4";
    expectError(kvLengths(indptr, kLast, 3, 4, lens), msg);
    expectError(validatePageTable(indptr, kIndices, kLast, 3, 4, 10), msg);
    expectError(planDecode(indptr, kLast, 3, 4, 1, 100, 1, plan), msg);
  }
  expectError(kvLengths(I32Span(), I32Span(), 0, 4, lens),
              "kv_indptr has 0 entries, expected batch + 1 = 1");
}

TEST(PageTable, LastPageLenLengthIsBatch) {
  std::vector<int64_t> lens;
  DecodePlan plan;
  const std::string msg = "kv_last_page_len has 2 entries, expected batch = 3";
  I32Span shortLast(kLast.data(), 2);
  expectError(kvLengths(kIndptr, shortLast, 3, 4, lens), msg);
  expectError(validatePageTable(kIndptr, kIndices, shortLast, 3, 4, 10), msg);
  expectError(planDecode(kIndptr, shortLast, 3, 4, 1, 100, 1, plan), msg);
  std::vector<int32_t> longer = {2, 0, 4, 1};
  expectError(kvLengths(kIndptr, longer, 3, 4, lens),
              "kv_last_page_len has 4 entries, expected batch = 3");
}

TEST(PageTable, NullOrNegativeLengthArrays) {
  std::vector<int64_t> lens;
  expectError(validatePageTable(I32Span(nullptr, 4), kIndices, kLast, 3, 4, 10),
              "kv_indptr is null but has length 4");
  expectError(validatePageTable(kIndptr, I32Span(nullptr, 4), kLast, 3, 4, 10),
              "kv_indices is null but has length 4");
  expectError(
      validatePageTable(kIndptr, kIndices, I32Span(nullptr, 3), 3, 4, 10),
      "kv_last_page_len is null but has length 3");
  expectError(kvLengths(I32Span(kIndptr.data(), -1), kLast, 3, 4, lens),
              "kv_indptr has a negative length -1");
  expectError(
      validatePageTable(kIndptr, I32Span(kIndices.data(), -2), kLast, 3, 4, 10),
      "kv_indices has a negative length -2");
}

TEST(PageTable, PageIndexOutOfRange) {
  std::vector<int32_t> indices = kIndices;
  indices[2] = 10;
  expectError(validatePageTable(kIndptr, indices, kLast, 3, 4, 10),
              "kv_indices[2] = 10 out of range [0, 10)");
  indices[2] = 9;
  indices[3] = -1;
  expectError(validatePageTable(kIndptr, indices, kLast, 3, 4, 10),
              "kv_indices[3] = -1 out of range [0, 10)");
  // kvLengths does not look at indices.
  std::vector<int64_t> lens;
  EXPECT_TRUE(kvLengths(kIndptr, kLast, 3, 4, lens));
}

TEST(PageTable, LastPageLenZero) {
  std::vector<int32_t> last = kLast;
  last[2] = 0;
  std::vector<int64_t> lens = {1, 2};
  Status s = kvLengths(kIndptr, last, 3, 4, lens);
  expectError(s, "kv_last_page_len[2] = 0 not in [1, 4]");
  EXPECT_TRUE(lens.empty());
  expectError(validatePageTable(kIndptr, kIndices, last, 3, 4, 10),
              "kv_last_page_len[2] = 0 not in [1, 4]");
}

TEST(PageTable, LastPageLenAbovePageSize) {
  std::vector<int32_t> last = kLast;
  last[0] = 5;
  std::vector<int64_t> lens;
  expectError(kvLengths(kIndptr, last, 3, 4, lens),
              "kv_last_page_len[0] = 5 not in [1, 4]");
  expectError(validatePageTable(kIndptr, kIndices, last, 3, 4, 10),
              "kv_last_page_len[0] = 5 not in [1, 4]");
}

TEST(PageTable, IndptrNotMonotonic) {
  std::vector<int32_t> indptr = {0, 3, 2, 4};
  std::vector<int64_t> lens;
  expectError(kvLengths(indptr, kLast, 3, 4, lens),
              "kv_indptr not non-decreasing at b = 1: kv_indptr[1] = 3 > "
              "kv_indptr[2] = 2");
  expectError(validatePageTable(indptr, kIndices, kLast, 3, 4, 10),
              "kv_indptr not non-decreasing at b = 1");
}

TEST(PageTable, IndptrNotStartingAtZero) {
  std::vector<int32_t> indptr = {1, 3, 3, 4};
  std::vector<int64_t> lens;
  expectError(kvLengths(indptr, kLast, 3, 4, lens),
              "kv_indptr[0] = 1, expected 0");
  expectError(validatePageTable(indptr, kIndices, kLast, 3, 4, 10),
              "kv_indptr[0] = 1, expected 0");
}

TEST(PageTable, BadSizes) {
  std::vector<int64_t> lens;
  expectError(kvLengths(kIndptr, kLast, -1, 4, lens), "batch = -1 is negative");
  expectError(validatePageTable(kIndptr, kIndices, kLast, -1, 4, 10),
              "batch = -1 is negative");
  expectError(validatePageTable(kIndptr, kIndices, kLast, 3, 0, 10),
              "page_size = 0 must be positive");
  expectError(validatePageTable(kIndptr, kIndices, kLast, 3, 4, -2),
              "num_pages = -2 is negative");
  expectError(validatePageTable(kIndptr, kIndices, kLast, 3, 1LL << 31, 10),
              "page_size = 2147483648 exceeds INT32_MAX");
}

//===----------------------------------------------------------------------===//
// planFixedChunks / workListBound
//===----------------------------------------------------------------------===//

TEST(FixedChunks, HandComputed) {
  WorkList w = planFixedChunks({10, 0, 4, 8}, 4);
  EXPECT_EQ(w.indptr, (std::vector<int32_t>{0, 3, 3, 4, 6}));
  EXPECT_EQ(w.request, (std::vector<int32_t>{0, 0, 0, 2, 3, 3}));
  EXPECT_EQ(w.start, (std::vector<int32_t>{0, 4, 8, 0, 0, 4}));
  EXPECT_EQ(w.end, (std::vector<int32_t>{4, 8, 10, 4, 4, 8}));
  EXPECT_EQ(w.size(), 6);

  WorkList empty = planFixedChunks({}, 7);
  EXPECT_EQ(empty.indptr, (std::vector<int32_t>{0}));
  EXPECT_EQ(empty.size(), 0);
}

TEST(FixedChunks, WorkListBoundHandComputed) {
  // 4 requests over 6 pages of 4 tokens (24 tokens at most), chunk 4:
  // 4 + ceil(24 / 4) = 10.
  EXPECT_EQ(workListBound(4, 6, 4, 4), 10);
  EXPECT_EQ(workListBound(4, 6, 4, 5), 4 + 5);
  EXPECT_EQ(workListBound(0, 0, 16, 256), 0);
  // Worst case is reached: each request one token past a chunk boundary.
  std::vector<int64_t> lens = {5, 5, 5};
  EXPECT_EQ(planFixedChunks(lens, 4).size(), 6);
  EXPECT_GE(workListBound(3, 3, 5, 4), 6);
}

TEST(FixedChunks, RandomCoverage) {
  // >= 2000 random batches: exact cover, CSR shape, and the static bound.
  for (uint32_t seed = 1; seed <= 2500; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    int64_t chunk = rng.uniformInt(0, 9) == 0 ? rng.uniformInt(1, 4)
                                              : rng.uniformInt(1, 600);
    int64_t pageSize = rng.uniformInt(1, 64);
    std::vector<int64_t> lens = randomBatch(rng, 64, 5000, chunk);
    int64_t batch = static_cast<int64_t>(lens.size());
    pa::ref::PageTable t = makeTable(rng, lens, pageSize);
    std::vector<int64_t> got;
    Status s = kvLengths(t.indptr, t.lastPageLen, batch, pageSize, got);
    ASSERT_TRUE(s) << s.message;
    ASSERT_EQ(got, lens);

    WorkList work = planFixedChunks(got, chunk);
    ASSERT_TRUE(checkWorkList(work, lens, chunk)) << "chunk " << chunk;
    EXPECT_LE(work.size(),
              workListBound(batch, t.indptr[batch], pageSize, chunk));
  }
}

//===----------------------------------------------------------------------===//
// chooseChunkSize
//===----------------------------------------------------------------------===//

TEST(ChunkSize, NoSplitAtLargeBatch) {
  // 256 requests x 8 kv heads already fill 132 SMs x 2 CTAs.
  std::vector<int64_t> lens(256, 4096);
  lens[3] = 4100;
  int64_t c = chooseChunkSize(lens, 8, 132 * 2, 16);
  EXPECT_GE(c, 4100);
  EXPECT_EQ(c % 16, 0);
  WorkList w = planFixedChunks(lens, c);
  EXPECT_EQ(w.size(), 256);
}

TEST(ChunkSize, NoSplitWhenEveryRequestFitsMinChunk) {
  // One request, plenty of CTAs, but 250 tokens fit one minimal chunk.
  int64_t c = chooseChunkSize({250, 0, 17}, 1, 1000, 16);
  EXPECT_GE(c, 250);
  EXPECT_EQ(planFixedChunks({250, 0, 17}, c).size(), 2);
  // Empty and all-zero batches: a valid (positive) chunk, no items.
  EXPECT_GE(chooseChunkSize({}, 8, 132, 16), 1);
  EXPECT_GE(chooseChunkSize({0, 0}, 8, 132, 16), 1);
}

TEST(ChunkSize, SplitsBatchOne32k) {
  const int64_t kvHeads = 8, maxCTAs = 132, pageSize = 16;
  std::vector<int64_t> lens = {32768};
  int64_t c = chooseChunkSize(lens, kvHeads, maxCTAs, pageSize);
  EXPECT_LT(c, 32768);
  EXPECT_GE(c, 256);
  EXPECT_EQ(c % pageSize, 0);
  EXPECT_LE(ctas(lens, kvHeads, c), maxCTAs);
  // Smallest such chunk: 132 / 8 = 16 chunks of 2048.
  EXPECT_EQ(c, 2048);
  EXPECT_GT(ctas(lens, kvHeads, c - pageSize), maxCTAs);

  // Non-power-of-two page size.
  c = chooseChunkSize(lens, kvHeads, maxCTAs, 24);
  EXPECT_EQ(c % 24, 0);
  EXPECT_LE(ctas(lens, kvHeads, c), maxCTAs);
  EXPECT_GT(ctas(lens, kvHeads, c - 24), maxCTAs);
}

TEST(ChunkSize, SmallestFittingChunk) {
  // 3 non-empty requests (items at chunk C: ceil(100/C) + ceil(40/C) + 1).
  std::vector<int64_t> lens = {100, 0, 40, 7};
  EXPECT_EQ(smallestFittingChunk(lens, 1, 9, 10, 1), 20);  // 5 + 2 + 1
  EXPECT_EQ(smallestFittingChunk(lens, 1, 4, 10, 1), 50);  // 2 + 1 + 1
  // Two heads double the count.
  EXPECT_EQ(smallestFittingChunk(lens, 2, 9, 10, 1), 50);
  // The lower end rounds up to the page size and bounds the search.
  EXPECT_EQ(smallestFittingChunk(lens, 1, 100, 10, 31), 40);
  // Nothing fits (3 requests, 2 slots) or the lower end is past maxLen:
  // the no-split chunk.
  EXPECT_EQ(smallestFittingChunk(lens, 1, 2, 10, 1), 100);
  EXPECT_EQ(smallestFittingChunk(lens, 1, 100, 10, 500), 100);
}

TEST(ChunkSize, MoreSMsNeverGrowTheChunk) {
  std::vector<int64_t> lens = {32768, 1000, 7, 0, 12000};
  int64_t prev = chooseChunkSize(lens, 4, 1, 16);
  for (int64_t sms = 2; sms <= 600; ++sms) {
    int64_t c = chooseChunkSize(lens, 4, sms, 16);
    EXPECT_LE(c, prev) << "sms " << sms;
    prev = c;
  }
}

TEST(ChunkSize, RandomRule) {
  int splits = 0;
  for (uint32_t seed = 1; seed <= 500; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    std::vector<int64_t> lens = randomBatch(rng, 16, 40000, 256);
    int64_t batch = static_cast<int64_t>(lens.size());
    int64_t kvHeads = rng.uniformInt(1, 8);
    int64_t pageSize = rng.uniformInt(1, 64);
    int64_t minChunk = rng.uniformInt(1, 512);
    int64_t maxCTAs = rng.uniformInt(1, 1000);
    int64_t maxLen = 0;
    for (int64_t len : lens)
      maxLen = std::max(maxLen, len);
    int64_t minC = ceilDiv(minChunk, pageSize) * pageSize;

    int64_t c = chooseChunkSize(lens, kvHeads, maxCTAs, pageSize, minChunk);
    ASSERT_GE(c, 1);
    EXPECT_EQ(c % pageSize, 0);
    if (batch * kvHeads >= maxCTAs || maxLen <= minC) {
      EXPECT_GE(c, maxLen);
    } else {
      EXPECT_GE(c, minC);
      EXPECT_LE(ctas(lens, kvHeads, c), maxCTAs);
      if (c - pageSize >= minC) {
        EXPECT_GT(ctas(lens, kvHeads, c - pageSize), maxCTAs);
      }
      ++splits;
    }
    int64_t more = chooseChunkSize(
        lens, kvHeads, maxCTAs + rng.uniformInt(1, 500), pageSize, minChunk);
    EXPECT_LE(more, c);
  }
  EXPECT_GT(splits, 100) << "too few random cases exercise the split rule";
}

//===----------------------------------------------------------------------===//
// balanceWaves
//===----------------------------------------------------------------------===//

TEST(BalanceWaves, SplitsALastWaveThatLeavesSlotsIdle) {
  // 64 requests x 8 KV heads = 512 items on 132 SMs x 3 CTAs = 396 slots:
  // 1.29 waves. Three items a request (1536 items, 3.9 waves) model
  // 4 x (2736 + 64) + 256 = 11456 against 2 x (8192 + 64) = 16512.
  std::vector<int64_t> lens(64, 8192);
  EXPECT_EQ(balanceWaves(lens, 8, 396, 16, 64), 2736);
  // On 264 slots (2 CTAs / SM) the same batch is 1.94 waves: no split.
  EXPECT_EQ(balanceWaves(lens, 8, 264, 16, 64), 8192);
  // Below one wave chooseChunkSize's rule applies: no refinement.
  EXPECT_EQ(balanceWaves(lens, 8, 1000, 16, 64), 8192);
  // A minimal chunk above every candidate keeps the request whole.
  EXPECT_EQ(balanceWaves(lens, 8, 396, 16, 5000), 8192);
  // Many waves lose little to the last one: 256 x 4096 on 264 slots.
  EXPECT_EQ(balanceWaves(std::vector<int64_t>(256, 4096), 8, 264, 16, 64),
            4096);
  // 256 x 8192 x 8 heads on 396 slots (5.17 waves): four items a request
  // model 10% faster (21 x 2112 + 256 against 6 x 8256), short of the
  // 15% a split must gain.
  EXPECT_EQ(balanceWaves(std::vector<int64_t>(256, 8192), 8, 396, 16, 64),
            8192);
}

TEST(BalanceWaves, NeverModelsSlowerThanNoSplit) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    std::vector<int64_t> lens = randomBatch(rng, 300, 40000, 256);
    int64_t kvHeads = rng.uniformInt(1, 32), pageSize = rng.uniformInt(1, 64);
    int64_t maxCTAs = rng.uniformInt(1, 1000), minChunk = rng.uniformInt(1, 512);
    int64_t maxLen = 0;
    for (int64_t len : lens)
      maxLen = std::max(maxLen, len);
    int64_t noSplit = ceilDiv(std::max<int64_t>(maxLen, 1), pageSize) * pageSize;
    int64_t c = balanceWaves(lens, kvHeads, maxCTAs, pageSize, minChunk);
    EXPECT_EQ(c % pageSize, 0);
    EXPECT_LE(c, noSplit);
    auto modelled = [&](int64_t chunk) {
      return ceilDiv(ctas(lens, kvHeads, chunk), maxCTAs) *
                 (chunk + kWaveItemCost) +
             (chunk < maxLen ? kWaveMergeCost : 0);
    };
    EXPECT_LE(modelled(c), modelled(noSplit));
    if (c < noSplit) {
      EXPECT_LE(modelled(c) * 100,
                modelled(noSplit) * (100 - kWaveMinGainPercent));
    }
    if (c < noSplit) {
      EXPECT_GE(static_cast<int64_t>(lens.size()) * kvHeads, maxCTAs);
      EXPECT_GE(c, ceilDiv(minChunk, pageSize) * pageSize);
    }
  }
}

TEST(DecodeCTAsPerSM, OneFewerWhereTheLastWaveIdles) {
  // GQA 4, 132 SMs, a kernel of 3 CTAs per SM: 64 x 8 = 512 CTAs are 2
  // waves of 396 slots, 35% idle; at 2 CTAs per SM 2 waves of 264, 3%.
  EXPECT_EQ(decodeCTAsPerSM(512, 132, 3), 2);
  // 256 x 8 = 2048: 6 waves, 14% idle: full occupancy.
  EXPECT_EQ(decodeCTAsPerSM(2048, 132, 3), 3);
  // Below one wave (split plans): 2 for a kernel of 3; others (at most 2
  // CTAs per SM, the 4-CTA MHA decode) keep their occupancy.
  EXPECT_EQ(decodeCTAsPerSM(128, 132, 3), 2);
  EXPECT_EQ(decodeCTAsPerSM(8, 132, 4), 4);
  // The fp8 decode of several requests keeps 3 below one wave, and only
  // there (16 x 8 KV heads; 64 x 8 is the idle-wave case either way).
  EXPECT_EQ(decodeCTAsPerSM(128, 132, 3, /*fp8Requests=*/true), 3);
  EXPECT_EQ(decodeCTAsPerSM(512, 132, 3, /*fp8Requests=*/true), 2);
  // ... and, for requests of 16384+ keys, where the last wave idles.
  EXPECT_EQ(decodeCTAsPerSM(512, 132, 3, /*fp8Requests=*/true, 32768), 3);
  EXPECT_EQ(decodeCTAsPerSM(512, 132, 3, /*fp8Requests=*/true, 8192), 2);
  EXPECT_EQ(decodeCTAsPerSM(512, 132, 3, /*fp8Requests=*/false, 32768), 2);
  EXPECT_EQ(decodeCTAsPerSM(2048, 132, 3, /*fp8Requests=*/true), 3);
  // A grid that is one pass at one fewer but a split at the occupancy
  // keeps it (MHA 16 x 32 = 512 CTAs on 396 / 528 slots).
  EXPECT_EQ(decodeCTAsPerSM(512, 132, 4), 4);
  EXPECT_EQ(decodeCTAsPerSM(300, 132, 2), 2);
  EXPECT_EQ(decodeCTAsPerSM(8, 132, 1), 1);
  // MHA on a 4-CTA kernel: 64 x 32 = 2048 CTAs on 528 slots, 3% idle.
  EXPECT_EQ(decodeCTAsPerSM(2048, 132, 4), 4);
  // 600 CTAs on 528 slots (2 waves, 43% idle) but 396 (2 waves, 24%).
  EXPECT_EQ(decodeCTAsPerSM(600, 132, 4), 3);
  // One fewer only where it idles less: 400 CTAs on 396 (2 waves, 49%
  // idle) and on 264 (2 waves, 24%) -> 2; on 132 SMs x 5 = 660 slots, 700
  // CTAs idle 47%, at 4 (528 slots, 2 waves) 34% -> 4.
  EXPECT_EQ(decodeCTAsPerSM(400, 132, 3), 2);
  EXPECT_EQ(decodeCTAsPerSM(700, 132, 5), 4);
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    int64_t grid = rng.uniformInt(1, 10000), sms = rng.uniformInt(1, 200),
            maxCTAs = rng.uniformInt(1, 8);
    int64_t c = decodeCTAsPerSM(grid, sms, maxCTAs);
    EXPECT_TRUE(c == maxCTAs || (c == maxCTAs - 1 && c >= 2));
    if (grid < sms * (maxCTAs - 1)) {
      EXPECT_EQ(c, maxCTAs == 3 ? 2 : maxCTAs);
    }
    if (grid >= sms * (maxCTAs - 1) && grid < sms * maxCTAs) {
      EXPECT_EQ(c, maxCTAs);
    }
  }
}

TEST(FewerMerges, ModelledChoice) {
  // One request of GQA 4 (8 KV heads) or GQA 8 (4) on 132 SMs x 2 CTAs,
  // page size 16: chooseChunkSize's smallest fitting chunk, then C + n^2 / 2
  // over C, 2C, 4C.
  auto refined = [](int64_t len, int64_t kvHeads) {
    std::vector<int64_t> lens = {len};
    return fewerMerges(
        lens, chooseChunkSize(lens, kvHeads, 264, 16, kDefaultMinChunk), 16);
  };
  EXPECT_EQ(chooseChunkSize({2048}, 8, 264, 16, kDefaultMinChunk), 64);
  EXPECT_EQ(refined(2048, 8), 128); // 64 + 512, 128 + 128, 256 + 32
  EXPECT_EQ(refined(512, 8), 64);   // 64 + 32, 128 + 8, 256 + 2
  EXPECT_EQ(refined(8192, 8), 512); // 256 + 512, 512 + 128, 1024 + 32
  EXPECT_EQ(chooseChunkSize({32768}, 8, 264, 16, kDefaultMinChunk), 1008);
  EXPECT_EQ(refined(32768, 8), 1008); // 1008 + 544, 2016 + 144, 4032 + 40
  EXPECT_EQ(chooseChunkSize({32768}, 4, 264, 16, kDefaultMinChunk), 512);
  EXPECT_EQ(refined(32768, 4), 1024); // 512 + 2048, 1024 + 512, 2048 + 128
  // Ties go to the smaller chunk; never past the no-split chunk; a no-split
  // chunk stays.
  EXPECT_EQ(fewerMerges({100}, 16, 16), 16); // 16 + 24, 32 + 8, 64 + 2
  EXPECT_EQ(fewerMerges({200}, 16, 16), 32); // 16 + 84, 32 + 24, 64 + 8
  EXPECT_EQ(fewerMerges({1000}, 16, 16), 64); // 4 x 16 is the last tried
  EXPECT_LE(fewerMerges({40}, 16, 16), 48);   // 48: no split
  EXPECT_EQ(fewerMerges({100}, 112, 16), 112);
  EXPECT_EQ(fewerMerges({}, 64, 16), 64);
}

TEST(FewerTogetherItems, CapsItemsPerRequest) {
  // At most kMergeTogetherMaxItems (64) items for the longest request: the
  // smallest multiple of the page size that does it, never below `chunk`.
  EXPECT_EQ(kMergeTogetherMaxItems, 64);
  EXPECT_EQ(fewerTogetherItems({8192}, 64, 16), 128);   // 128 -> 64 items
  EXPECT_EQ(fewerTogetherItems({32768}, 256, 16), 512); // 128 -> 64
  EXPECT_EQ(fewerTogetherItems({8192, 100}, 64, 16), 128);
  EXPECT_EQ(fewerTogetherItems({8200}, 64, 16), 144); // ceil(8200 / 64) = 129
  EXPECT_EQ(fewerTogetherItems({2048}, 64, 16), 64);  // 32 items stay
  EXPECT_EQ(fewerTogetherItems({32768}, 1008, 16), 1008); // 33 items stay
  EXPECT_EQ(fewerTogetherItems({100}, 112, 16), 112);     // no split stays
  EXPECT_EQ(fewerTogetherItems({}, 64, 16), 64);
  // Whatever the lengths and chunk: never smaller, never past the no-split
  // chunk (unless already there), at most 64 items where it splits.
  for (int64_t len : {1, 15, 16, 17, 1000, 4096, 65537}) {
    for (int64_t chunk : {1, 16, 48, 64, 1024}) {
      for (int64_t page : {1, 5, 16}) {
        int64_t c = fewerTogetherItems({len, len / 2}, chunk, page);
        int64_t noSplit = (std::max<int64_t>(len, 1) + page - 1) / page * page;
        EXPECT_GE(c, chunk) << len << " " << chunk << " " << page;
        if (chunk < noSplit) {
          EXPECT_LE(c, noSplit) << len << " " << chunk << " " << page;
          EXPECT_LE((len + c - 1) / c, kMergeTogetherMaxItems)
              << len << " " << chunk << " " << page;
        } else {
          EXPECT_EQ(c, chunk);
        }
      }
    }
  }
}

TEST(PlanDecode, FewerMergesBelowOneWave) {
  // 1 x 2048 tokens, 8 KV heads, 132 SMs x 2 CTAs: 16 items of 128 tokens
  // a head rather than 32 of 64.
  std::vector<int32_t> indptr = {0, 128}, last = {16};
  DecodePlan plan;
  ASSERT_TRUE(planDecode(indptr, last, 1, 16, 8, 132, 2, plan).ok);
  EXPECT_EQ(plan.chunkSize, 128);
  EXPECT_TRUE(plan.split);
  EXPECT_EQ(plan.work.size(), 16);
}

TEST(PlanDecode, MergeTogetherFillsTheWave) {
  // The same 1 x 2048 tokens when the splits merge together: the chunk
  // that fills the wave (32 items of 64 tokens, 256 CTAs of 264), without
  // fewerMerges' weight.
  std::vector<int32_t> indptr = {0, 128}, last = {16};
  DecodePlan plan;
  ASSERT_TRUE(planDecode(indptr, last, 1, 16, 8, 132, 2, plan,
                         kDefaultMinChunk, /*mergeTogether=*/true)
                  .ok);
  EXPECT_EQ(plan.chunkSize, 64);
  EXPECT_TRUE(plan.split);
  EXPECT_EQ(plan.work.size(), 32);
  // 1 x 32768 at 4 KV heads (GQA 8): 64 items of 512 tokens fill 256 of
  // the 264 slots (496 tokens would take 67 items, 268 CTAs; fewerMerges
  // alone doubles the chunk).
  indptr = {0, 2048};
  ASSERT_TRUE(planDecode(indptr, last, 1, 16, 4, 132, 2, plan,
                         kDefaultMinChunk, /*mergeTogether=*/true)
                  .ok);
  EXPECT_LE(plan.work.size() * 4, 264);
  EXPECT_GT((plan.work.size() + 1) * 4, 264 - 4 * 2);
  DecodePlan apart;
  ASSERT_TRUE(planDecode(indptr, last, 1, 16, 4, 132, 2, apart).ok);
  EXPECT_GT(apart.chunkSize, plan.chunkSize);
  // 1 x 8192 at 2 KV heads (GQA 16): the wave would take 128 items of 64
  // tokens; capped at 64 items of 128 (fewerTogetherItems).
  indptr = {0, 512};
  ASSERT_TRUE(planDecode(indptr, last, 1, 16, 2, 132, 2, plan, kDefaultMinChunk,
                         /*mergeTogether=*/true)
                  .ok);
  EXPECT_EQ(chooseChunkSize({8192}, 2, 264, 16, kDefaultMinChunk), 64);
  EXPECT_EQ(plan.chunkSize, 128);
  EXPECT_EQ(plan.work.size(), 64);
  // Multi-wave plans are balanceWaves' either way.
  std::vector<int32_t> many(65), manyLast(64, 16);
  for (int i = 0; i <= 64; ++i)
    many[i] = i * 512;
  DecodePlan a, b;
  ASSERT_TRUE(planDecode(many, manyLast, 64, 16, 8, 132, 3, a).ok);
  ASSERT_TRUE(planDecode(many, manyLast, 64, 16, 8, 132, 3, b,
                         kDefaultMinChunk, /*mergeTogether=*/true)
                  .ok);
  EXPECT_EQ(a.chunkSize, b.chunkSize);
}

TEST(PlanDecode, PreferMergeTogether) {
  // The last CTA's merge of S rows: ceil(S / 8) steps of slots a thread.
  // GQA 4, D 128, 128 threads: a slot a thread. Arguments: requests, S,
  // chunk, slots a thread (the shapes of the 2026-11-27 H200 call).
  EXPECT_FALSE(preferMergeTogether(1, 8, 64, 1));     // 1 x 512
  EXPECT_FALSE(preferMergeTogether(16, 2, 1024, 1));  // 16 x 2048
  EXPECT_FALSE(preferMergeTogether(1, 32, 64, 1));    // 1 x 2048
  EXPECT_TRUE(preferMergeTogether(1, 32, 256, 1));    // 1 x 8192
  EXPECT_TRUE(preferMergeTogether(1, 33, 1008, 1));   // 1 x 32768: 5 steps
  EXPECT_FALSE(preferMergeTogether(2, 32, 1024, 1));  // two requests
  // GQA 8: two slots a thread.
  EXPECT_TRUE(preferMergeTogether(1, 32, 64, 2));     // 1 x 2048: 8 steps
  EXPECT_TRUE(preferMergeTogether(1, 64, 512, 2));    // 1 x 32768
  EXPECT_FALSE(preferMergeTogether(16, 4, 128, 2));   // 16 x 512: 2 steps
  // MHA (a head a CTA: 32 slots over 128 threads).
  EXPECT_FALSE(preferMergeTogether(1, 16, 128, 1));   // 1 x 2048
  // One item merges nothing.
  EXPECT_FALSE(preferMergeTogether(1, 1, 1 << 20, 8));
}

TEST(PlanDecode, BalancesWaves) {
  // planDecode applies balanceWaves where chooseChunkSize does not split.
  std::vector<int32_t> indptr(65), last(64, 16);
  for (int i = 0; i <= 64; ++i)
    indptr[i] = i * 512; // 512 pages of 16: 8192 tokens
  DecodePlan plan;
  ASSERT_TRUE(planDecode(indptr, last, 64, 16, 8, 132, 3, plan).ok);
  EXPECT_EQ(plan.chunkSize, 2736);
  EXPECT_TRUE(plan.split);
  EXPECT_EQ(plan.work.size(), 64 * 3);
  ASSERT_TRUE(planDecode(indptr, last, 64, 16, 8, 132, 2, plan).ok);
  EXPECT_FALSE(plan.split);
}

//===----------------------------------------------------------------------===//
// planDecode
//===----------------------------------------------------------------------===//

TEST(PlanDecode, SmallTableNoSplit) {
  DecodePlan plan;
  Status s = planDecode(kIndptr, kLast, 3, 4, 1, 100, 1, plan);
  ASSERT_TRUE(s) << s.message;
  // Lengths {10, 0, 4}, all within one minimal chunk.
  EXPECT_FALSE(plan.split);
  EXPECT_EQ(plan.chunkSize, 12);
  EXPECT_EQ(plan.work.indptr, (std::vector<int32_t>{0, 1, 1, 2}));
  EXPECT_EQ(plan.work.request, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(plan.work.start, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(plan.work.end, (std::vector<int32_t>{10, 4}));
  EXPECT_EQ(plan.maxItemsBound, 3 + 2);
}

TEST(PlanDecode, SmallTableSplit) {
  // Page size 16: request 0 owns 64 full pages (1024 tokens), request 1 owns
  // 40 pages with 5 tokens in the last (629 tokens). 2 kv heads on 4 SMs x 2
  // CTAs: at most 4 items; chunk 256 would give 7, chunk 512 gives 2 + 2.
  std::vector<int32_t> indptr = {0, 64, 104};
  std::vector<int32_t> last = {16, 5};
  DecodePlan plan;
  Status s = planDecode(indptr, last, 2, 16, 2, 4, 2, plan);
  ASSERT_TRUE(s) << s.message;
  EXPECT_TRUE(plan.split);
  EXPECT_EQ(plan.chunkSize, 512);
  EXPECT_EQ(plan.work.indptr, (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(plan.work.request, (std::vector<int32_t>{0, 0, 1, 1}));
  EXPECT_EQ(plan.work.start, (std::vector<int32_t>{0, 512, 0, 512}));
  EXPECT_EQ(plan.work.end, (std::vector<int32_t>{512, 1024, 512, 629}));
  EXPECT_EQ(plan.maxItemsBound, 2 + 4); // 2 + ceil(1653 / 512)
  EXPECT_LE(plan.work.size(), workListBound(2, 104, 16, plan.chunkSize));
}

TEST(PlanDecode, Errors) {
  DecodePlan plan;
  plan.chunkSize = -7;
  std::vector<int32_t> last = kLast;
  last[0] = 0;
  expectError(planDecode(kIndptr, last, 3, 4, 1, 100, 1, plan),
              "kv_last_page_len[0] = 0 not in [1, 4]");
  expectError(planDecode(kIndptr, kLast, 3, 4, 0, 100, 1, plan),
              "num_kv_heads = 0 must be positive");
  expectError(planDecode(kIndptr, kLast, 3, 4, 1, 0, 1, plan),
              "num_sms = 0 must be positive");
  expectError(planDecode(kIndptr, kLast, 3, 4, 1, 100, -1, plan),
              "ctas_per_sm = -1 must be positive");
  expectError(planDecode(kIndptr, kLast, -3, 4, 1, 100, 1, plan),
              "batch = -3 is negative");
  EXPECT_EQ(plan.chunkSize, -7) << "plan written on failure";
}

TEST(PlanDecode, RandomMatchesParts) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    int64_t pageSize = rng.uniformInt(1, 64);
    std::vector<int64_t> lens = randomBatch(rng, 32, 20000, pageSize);
    int64_t batch = static_cast<int64_t>(lens.size());
    pa::ref::PageTable t = makeTable(rng, lens, pageSize);
    int64_t kvHeads = rng.uniformInt(1, 8), sms = rng.uniformInt(1, 132),
            perSM = rng.uniformInt(1, 4);
    DecodePlan plan;
    Status s = planDecode(t.indptr, t.lastPageLen, batch, pageSize, kvHeads,
                          sms, perSM, plan);
    ASSERT_TRUE(s) << s.message;
    EXPECT_EQ(plan.chunkSize,
              batch * kvHeads >= sms * perSM
                  ? balanceWaves(lens, kvHeads, sms * perSM, pageSize,
                                 kDefaultMinChunk)
                  : fewerMerges(lens,
                                chooseChunkSize(lens, kvHeads, sms * perSM,
                                                pageSize, kDefaultMinChunk),
                                pageSize));
    ASSERT_TRUE(checkWorkList(plan.work, lens, plan.chunkSize));
    bool split = false;
    for (int64_t b = 0; b < batch; ++b)
      split |= plan.work.indptr[b + 1] - plan.work.indptr[b] > 1;
    EXPECT_EQ(plan.split, split);
    EXPECT_LE(plan.work.size(), plan.maxItemsBound);
    EXPECT_LE(plan.maxItemsBound,
              workListBound(batch, t.indptr[batch], pageSize, plan.chunkSize));
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// planPrefill
//===----------------------------------------------------------------------===//

namespace {
/// Checks the properties a prefill plan promises: every (query row, key) pair
/// that the query can see is computed by exactly one item (coverage of the
/// tile grid, no key past a causal tile's last position), items stay within
/// their request, and in a split plan every query's partial rows form its
/// merge segment exactly once.
::testing::AssertionResult
checkPrefillPlan(const PrefillPlan &plan, const std::vector<int32_t> &qo,
                 const std::vector<int64_t> &lens, bool causal,
                 bool explicitPositions = false) {
  const PrefillWorkList &w = plan.work;
  int64_t batch = static_cast<int64_t>(lens.size());
  int64_t rows = qo.back();
  // covered[row][t]: how many items compute query `row` against key t.
  std::vector<std::vector<int>> covered(static_cast<size_t>(rows));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = qo[b]; r < qo[b + 1]; ++r)
      covered[r].assign(static_cast<size_t>(lens[b]), 0);
  std::vector<int> partialUse(static_cast<size_t>(plan.numPartialRows), 0);
  for (int64_t k = 0; k < w.size(); ++k) {
    int64_t b = w.request[k];
    if (b < 0 || b >= batch)
      return ::testing::AssertionFailure() << "item " << k << " request " << b;
    int64_t qoLen = qo[b + 1] - qo[b];
    if (w.qoStart[k] < 0 || w.qoEnd[k] > qoLen || w.qoStart[k] >= w.qoEnd[k] ||
        w.qoEnd[k] - w.qoStart[k] > plan.queriesPerTile ||
        w.qoStart[k] % plan.queriesPerTile != 0)
      return ::testing::AssertionFailure() << "item " << k << " bad queries";
    if (w.kvStart[k] < 0 || w.kvStart[k] > w.kvEnd[k] || w.kvEnd[k] > lens[b] ||
        w.kvEnd[k] - w.kvStart[k] > plan.kvChunk)
      return ::testing::AssertionFailure() << "item " << k << " bad keys";
    // Causal at the default positions: no key past the tile's last query.
    if (causal && !explicitPositions &&
        w.kvEnd[k] > lens[b] - qoLen + w.qoEnd[k])
      return ::testing::AssertionFailure()
             << "item " << k << " reads keys up to " << w.kvEnd[k]
             << " past its last query position " << lens[b] - qoLen + w.qoEnd[k] - 1;
    for (int64_t i = w.qoStart[k]; i < w.qoEnd[k]; ++i) {
      for (int64_t t = w.kvStart[k]; t < w.kvEnd[k]; ++t)
        ++covered[qo[b] + i][t];
      if (plan.split) {
        int64_t pr = w.partialRow[k] + (i - w.qoStart[k]) * w.partialStride[k];
        if (pr < w.mergeIndptr[qo[b] + i] || pr >= w.mergeIndptr[qo[b] + i + 1])
          return ::testing::AssertionFailure()
                 << "item " << k << " query " << i << " partial row " << pr
                 << " outside its merge segment";
        ++partialUse[pr];
      }
    }
  }
  for (int64_t b = 0; b < batch; ++b) {
    int64_t qoLen = qo[b + 1] - qo[b];
    for (int64_t i = 0; i < qoLen; ++i) {
      int64_t pos = lens[b] - qoLen + i;
      for (int64_t t = 0; t < lens[b]; ++t) {
        int c = covered[qo[b] + i][t];
        if (explicitPositions)
          pos = lens[b]; // any key may be visible
        // Visible keys exactly once; causal-invisible keys may be computed
        // (masked in the kernel) only by the tile that holds a later query.
        if (t <= pos || !causal) {
          if (c != 1)
            return ::testing::AssertionFailure()
                   << "request " << b << " query " << i << " key " << t
                   << " covered " << c << " times";
        } else if (c > 1) {
          return ::testing::AssertionFailure() << "key covered twice";
        }
      }
    }
  }
  if (plan.split) {
    if (static_cast<int64_t>(w.mergeIndptr.size()) != rows + 1 ||
        w.mergeIndptr.front() != 0 || w.mergeIndptr.back() != plan.numPartialRows)
      return ::testing::AssertionFailure() << "merge segments malformed";
    for (int64_t r = 0; r < rows; ++r)
      if (w.mergeIndptr[r + 1] <= w.mergeIndptr[r])
        return ::testing::AssertionFailure()
               << "query row " << r << " has an empty merge segment";
    for (int64_t r = 0; r < plan.numPartialRows; ++r)
      if (partialUse[r] != 1)
        return ::testing::AssertionFailure()
               << "partial row " << r << " written " << partialUse[r]
               << " times";
  }
  return ::testing::AssertionSuccess();
}
} // namespace

TEST(PrefillPlan, OneTilePerQueryBlockWhenTheGPUIsFull) {
  // 2 requests x 100 queries over 300 / 100 keys, 16 queries per tile:
  // 7 + 7 tiles x 8 KV heads = 112 CTAs >= 1 SM x 64 slots: no split.
  std::vector<int64_t> lens = {300, 100};
  Rng rng(7);
  pa::ref::PageTable t = makeTable(rng, lens, 16);
  std::vector<int32_t> qo = {0, 100, 200};
  PrefillPlan plan;
  Status s = planPrefill(qo, t.indptr, t.lastPageLen, 2, 200, 16, 8, 16,
                         /*causal=*/true, false, 1, 64, plan);
  ASSERT_TRUE(s) << s.message;
  EXPECT_FALSE(plan.split);
  EXPECT_EQ(plan.work.size(), 14);
  // Causal: the first tile of request 0 (queries 0..15 at positions
  // 200..215) sees keys [0, 216); the heaviest item comes first: request
  // 0's last tile (queries 96..99), all 300 keys.
  auto first = [&](int64_t k) {
    return std::make_tuple(plan.work.request[k], plan.work.qoStart[k],
                           plan.work.kvEnd[k]);
  };
  EXPECT_EQ(first(0), std::make_tuple(0, 96, 300));
  bool sawFirstTile = false;
  for (int64_t k = 0; k < plan.work.size(); ++k)
    sawFirstTile |= first(k) == std::make_tuple(0, 0, 216);
  EXPECT_TRUE(sawFirstTile);
  EXPECT_TRUE(checkPrefillPlan(plan, qo, lens, true));
}

TEST(PrefillPlan, HeaviestItemsFirst) {
  // Causal tiles of ragged requests, split and not: the items come in
  // non-increasing order of keys (then queries), so that the last CTAs
  // to start are the shortest; the partial rows stay in query-row order.
  for (uint64_t seed : {11u, 12u, 13u}) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    Rng rng(seed);
    std::vector<int64_t> lens;
    std::vector<int32_t> qo = {0};
    for (int b = 0; b < 6; ++b) {
      lens.push_back(rng.uniformInt(1, 3000));
      qo.push_back(qo.back() +
                   static_cast<int32_t>(rng.uniformInt(0, lens.back())));
    }
    pa::ref::PageTable t = makeTable(rng, lens, 16);
    for (int64_t sms : {1, 132}) {
      PrefillPlan plan;
      Status s = planPrefill(qo, t.indptr, t.lastPageLen, 6, qo.back(), 16,
                             2, 32, /*causal=*/true, false, sms, 2, plan,
                             kPrefillMinChunk);
      ASSERT_TRUE(s) << s.message;
      const PrefillWorkList &w = plan.work;
      for (int64_t k = 1; k < w.size(); ++k) {
        int64_t prev = w.kvEnd[k - 1] - w.kvStart[k - 1];
        int64_t cur = w.kvEnd[k] - w.kvStart[k];
        ASSERT_TRUE(prev > cur ||
                    (prev == cur && w.qoEnd[k - 1] - w.qoStart[k - 1] >=
                                        w.qoEnd[k] - w.qoStart[k]))
            << "item " << k << " (" << cur << " keys) after " << prev;
      }
      EXPECT_TRUE(checkPrefillPlan(plan, qo, lens, true));
    }
  }
}

TEST(PrefillPlan, SplitsLongKeysWhenSMsWouldIdle) {
  // One request, 16 queries over 32768 keys, 132 SMs: one tile would use 8
  // CTAs; the plan splits its keys so that about 132 x 2 CTAs run.
  std::vector<int64_t> lens = {32768};
  Rng rng(3);
  pa::ref::PageTable t = makeTable(rng, lens, 16);
  std::vector<int32_t> qo = {0, 16};
  PrefillPlan plan;
  Status s = planPrefill(qo, t.indptr, t.lastPageLen, 1, 16, 16, 8, 16,
                         /*causal=*/false, false, 132, 2, plan);
  ASSERT_TRUE(s) << s.message;
  EXPECT_TRUE(plan.split);
  EXPECT_GE(plan.work.size() * 8, 132 * 2 * 9 / 10);
  EXPECT_EQ(plan.kvChunk % 16, 0);
  EXPECT_TRUE(checkPrefillPlan(plan, qo, lens, false));
}

TEST(PrefillPlan, ChunksFillWholeWaves) {
  // 4 requests x 16 queries over 8192 keys, 8 KV heads, 132 SMs x 2: four
  // tiles. 1024-key chunks give 32 items x 8 = 256 CTAs (one wave of 264);
  // 1008 would give 36 items, a second wave for 24 CTAs (H200: 83 vs 73
  // us). Forced chunks override the choice.
  std::vector<int64_t> lens = {8192, 8192, 8192, 8192};
  Rng rng(5);
  pa::ref::PageTable t = makeTable(rng, lens, 16);
  std::vector<int32_t> qo = {0, 16, 32, 48, 64};
  PrefillPlan plan;
  Status s = planPrefill(qo, t.indptr, t.lastPageLen, 4, 64, 16, 8, 32,
                         /*causal=*/true, false, 132, 2, plan,
                         kPrefillMinChunk);
  ASSERT_TRUE(s) << s.message;
  EXPECT_TRUE(plan.split);
  EXPECT_EQ(plan.kvChunk, 1024);
  EXPECT_EQ(plan.work.size(), 32);
  EXPECT_TRUE(checkPrefillPlan(plan, qo, lens, true));
  // One request of 512 queries over 32768 keys (16 causal tiles of 32
  // queries): two 16384-key chunks per tile fill one wave (256 CTAs); many
  // small chunks would pay the per-item cost (H200: 592-key chunks, 27
  // waves, 1161 us; 8192, 2 waves, 925 us).
  {
    std::vector<int64_t> one = {32768};
    pa::ref::PageTable t1 = makeTable(rng, one, 16);
    std::vector<int32_t> qo1 = {0, 512};
    PrefillPlan p1;
    Status s1 = planPrefill(qo1, t1.indptr, t1.lastPageLen, 1, 512, 16, 8, 32,
                            true, false, 132, 2, p1, kPrefillMinChunk);
    ASSERT_TRUE(s1) << s1.message;
    EXPECT_EQ(p1.kvChunk, 16384);
    EXPECT_EQ(p1.work.size(), 32);
    EXPECT_TRUE(checkPrefillPlan(p1, qo1, one, true));
  }
  s = planPrefill(qo, t.indptr, t.lastPageLen, 4, 64, 16, 8, 32, true, false,
                  132, 2, plan, kPrefillMinChunk, /*forceChunk=*/100);
  ASSERT_TRUE(s) << s.message;
  EXPECT_EQ(plan.kvChunk, 112); // rounded up to the page size
  EXPECT_TRUE(checkPrefillPlan(plan, qo, lens, true));
  // forcePartial: a split plan even where no tile is cut.
  s = planPrefill(qo, t.indptr, t.lastPageLen, 4, 64, 16, 8, 32, true, false,
                  132, 2, plan, kPrefillMinChunk, /*forceChunk=*/8192,
                  /*forcePartial=*/true);
  ASSERT_TRUE(s) << s.message;
  EXPECT_TRUE(plan.split);
  EXPECT_EQ(plan.work.size(), 4);
  EXPECT_EQ(plan.numPartialRows, 64);
  EXPECT_TRUE(checkPrefillPlan(plan, qo, lens, true));
}

TEST(PrefillPlan, PrefersSmallerSplitTilesWhenTheGridIdles) {
  // One request of 512 queries: the 64-query tile gives 8 x 8 = 64 CTAs
  // on 264 slots, so the split kernel's 32-query tiles run instead; 64
  // requests of 512 give 4096 CTAs and keep the unsplit kernel. A split
  // tile no smaller never wins.
  bool use = false;
  std::vector<int32_t> one = {0, 512};
  ASSERT_TRUE(preferSmallerSplitTiles(one, 1, 64, 32, 8, 264, use));
  EXPECT_TRUE(use);
  ASSERT_TRUE(preferSmallerSplitTiles(one, 1, 32, 32, 8, 264, use));
  EXPECT_FALSE(use);
  std::vector<int32_t> many(65);
  for (int i = 0; i <= 64; ++i)
    many[i] = 512 * i;
  ASSERT_TRUE(preferSmallerSplitTiles(many, 64, 64, 32, 8, 264, use));
  EXPECT_FALSE(use);
  // Exactly the slots: nothing idles.
  std::vector<int32_t> fill = {0, 64 * 33};
  ASSERT_TRUE(preferSmallerSplitTiles(fill, 1, 64, 32, 8, 264, use));
  EXPECT_FALSE(use);
  expectError(preferSmallerSplitTiles(one, 1, 0, 32, 8, 264, use),
              "must be positive");
  expectError(preferSmallerSplitTiles(std::vector<int32_t>{0, 5, 3}, 2, 64,
                                      32, 8, 264, use),
              "qo_indptr");
}

TEST(PrefillPlan, RejectsBadQueries) {
  std::vector<int64_t> lens = {10};
  Rng rng(1);
  pa::ref::PageTable t = makeTable(rng, lens, 4);
  PrefillPlan plan;
  expectError(planPrefill(std::vector<int32_t>{0, 11}, t.indptr, t.lastPageLen,
                          1, 11, 4, 1, 8, true, false, 132, 1, plan),
              "request 0: qo_len = 11 > kv_len = 10");
  // With explicit positions (CacheBlend's partial prefill) it is fine.
  EXPECT_TRUE(planPrefill(std::vector<int32_t>{0, 11}, t.indptr, t.lastPageLen,
                          1, 11, 4, 1, 8, true, true, 132, 1, plan));
  expectError(planPrefill(std::vector<int32_t>{0, 5}, t.indptr, t.lastPageLen,
                          1, 5, 4, 1, 0, true, false, 132, 1, plan),
              "queries_per_tile (0)");
}

TEST(PrefillPlan, RejectsPlansBeyondTheirCapacity) {
  // Found by pa-runtime-fuzz (fuzz/corpus/pa-runtime-fuzz/
  // regression-prefill-plan-oom): a batch of 2^30 query rows (explicit
  // positions, so qo_len may exceed kv_len) in tiles of 16 made the planner
  // list 2^26 tiles on the host until it ran out of memory; it now refuses
  // past kMaxPrefillPlanEntries with the count.
  std::vector<int64_t> lens = {40};
  Rng rng(3);
  pa::ref::PageTable t = makeTable(rng, lens, 16);
  int32_t rows = 1 << 30;
  std::vector<int32_t> qo = {0, rows};
  PrefillPlan plan;
  Status s = planPrefill(qo, t.indptr, t.lastPageLen, 1, rows, 16, 8, 16,
                         /*causal=*/false, /*explicitPositions=*/true, 132, 2,
                         plan);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message.find("67108864 query tiles of 16 queries, more than "
                           "the 16777216 a prefill plan holds"),
            std::string::npos)
      << s.message;
  // Few tiles (2^24 / 4096 of 4096 queries) but a forced 16-key chunk over
  // 2^20 keys of a split plan: 2^16 items a tile.
  std::vector<int64_t> big = {1 << 20};
  pa::ref::PageTable tb = makeTable(rng, big, 16);
  std::vector<int32_t> qo2 = {0, 1 << 12};
  s = planPrefill(qo2, tb.indptr, tb.lastPageLen, 1, 1 << 12, 16, 8, 16,
                  /*causal=*/false, false, 132, 2, plan, 1, /*forceChunk=*/16);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message.find("work items and"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("a prefill plan holds"), std::string::npos);
}

TEST(PrefillPlan, RandomCoverage) {
  for (uint32_t seed = 1; seed <= 600; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    int64_t pageSize = rng.uniformInt(1, 32);
    std::vector<int64_t> lens = randomBatch(rng, 12, 3000, pageSize);
    int64_t batch = static_cast<int64_t>(lens.size());
    std::vector<int32_t> qo = {0};
    for (int64_t len : lens)
      qo.push_back(qo.back() + static_cast<int32_t>(rng.uniformInt(
                                   0, std::min<int64_t>(len, 300))));
    pa::ref::PageTable t = makeTable(rng, lens, pageSize);
    bool causal = rng.chance(0.5), explicitPositions = rng.chance(0.25);
    PrefillPlan plan;
    Status s = planPrefill(qo, t.indptr, t.lastPageLen, batch, qo.back(),
                           pageSize, rng.uniformInt(1, 8),
                           rng.uniformInt(1, 64), causal, explicitPositions,
                           rng.uniformInt(1, 132), rng.uniformInt(1, 4), plan,
                           rng.uniformInt(1, 256));
    ASSERT_TRUE(s) << s.message;
    ASSERT_TRUE(checkPrefillPlan(plan, qo, lens, causal, explicitPositions));
  }
}

//===----------------------------------------------------------------------===//
// Prefill kernel choice (prefill vs prefill_short)
//===----------------------------------------------------------------------===//

namespace {
/// choosePrefillShort on `qo` lengths over `kv` lengths; fails the test on
/// an error status.
bool chooseShort(const std::vector<int64_t> &qoLens,
                 const std::vector<int64_t> &kvLens,
                 int64_t maxMeanKeys = kShortPrefillMaxMeanKeys) {
  std::vector<int32_t> qo = {0};
  for (int64_t len : qoLens)
    qo.push_back(qo.back() + static_cast<int32_t>(len));
  bool useShort = false;
  Status s = choosePrefillShort(qo, kvLens,
                                static_cast<int64_t>(kvLens.size()), useShort,
                                maxMeanKeys);
  EXPECT_TRUE(s) << s.message;
  return useShort;
}
} // namespace

TEST(PrefillKernelChoice, ThresholdIs1024MeanKeysPerQuery) {
  EXPECT_EQ(kShortPrefillMaxMeanKeys, 1024);
  // The measured shapes (docs/PERFORMANCE.md): short at 512 keys per
  // query, long at 2048, 8192 and 16384 and for the append shape.
  EXPECT_TRUE(chooseShort(std::vector<int64_t>(64, 512),
                          std::vector<int64_t>(64, 512)));
  EXPECT_FALSE(chooseShort(std::vector<int64_t>(16, 2048),
                           std::vector<int64_t>(16, 2048)));
  EXPECT_FALSE(chooseShort(std::vector<int64_t>(4, 8192),
                           std::vector<int64_t>(4, 8192)));
  EXPECT_FALSE(chooseShort(std::vector<int64_t>(2, 16384),
                           std::vector<int64_t>(2, 16384)));
  EXPECT_FALSE(chooseShort(std::vector<int64_t>(8, 512),
                           std::vector<int64_t>(8, 8192)));
  // Both sides of the threshold, exactly.
  EXPECT_TRUE(chooseShort({100}, {1024}));
  EXPECT_FALSE(chooseShort({100}, {1025}));
  // Weighted by queries: (1 * 1024 + 1 * 1025) / 2 = 1024.5 > 1024;
  // (3 * 1023 + 1 * 1027) / 4 = 1024 exactly.
  EXPECT_FALSE(chooseShort({1, 1}, {1024, 1025}));
  EXPECT_TRUE(chooseShort({3, 1}, {1023, 1027}));
  // A long request with few queries beside many short queries is short:
  // (1000 * 100 + 10 * 50000) / 1010 = 594.
  EXPECT_TRUE(chooseShort({1000, 10}, {100, 50000}));
  // and the other way round: (10 * 100 + 1000 * 100000) / 1010 = 99010.
  EXPECT_FALSE(chooseShort({10, 1000}, {100, 100000}));
  // Requests without queries do not count, whatever their keys.
  EXPECT_TRUE(chooseShort({0, 5}, {1 << 30, 1000}));
  // Another threshold.
  EXPECT_TRUE(chooseShort({2}, {10}, 10));
  EXPECT_FALSE(chooseShort({2}, {11}, 10));
  EXPECT_FALSE(chooseShort({2}, {1}, 0));
}

TEST(PrefillKernelChoice, EmptyBatchesPickTheDefaultKernel) {
  // No queries: nothing launches; the choice is the default (prefill).
  EXPECT_FALSE(chooseShort({}, {}));
  EXPECT_FALSE(chooseShort({0, 0, 0}, {0, 5, 9000}));
  EXPECT_FALSE(chooseShort({0}, {0}, 0));
  // Keys 0 with queries (explicit positions): mean 0 keys, short.
  EXPECT_TRUE(chooseShort({3}, {0}));
}

TEST(PrefillKernelChoice, NoOverflowOnHugeLengths) {
  // sum qo * kv ~ 2^31 * 2^40 = 2^71: exact in 128 bits.
  int64_t big = int64_t(1) << 40;
  EXPECT_FALSE(chooseShort({INT32_MAX}, {big}));
  EXPECT_TRUE(chooseShort({INT32_MAX}, {big}, big));
  EXPECT_FALSE(chooseShort({INT32_MAX}, {big + 1}, big));
}

TEST(PrefillKernelChoice, RejectsBadInput) {
  bool useShort = true;
  std::vector<int64_t> kv = {10, 10};
  expectError(choosePrefillShort(std::vector<int32_t>{0, 5}, kv, 2, useShort),
              "qo_indptr has 2 entries, expected batch + 1 = 3");
  expectError(choosePrefillShort(std::vector<int32_t>{0, 5, 3}, kv, 2,
                                 useShort),
              "qo_indptr not non-decreasing at b = 1");
  expectError(choosePrefillShort(std::vector<int32_t>{0, 5, 6}, {10}, 2,
                                 useShort),
              "kv lengths have 1 entries, expected batch = 2");
  expectError(choosePrefillShort(std::vector<int32_t>{0, 5, 6}, {10, -1}, 2,
                                 useShort),
              "kv_len[1] = -1 is negative");
  expectError(choosePrefillShort(std::vector<int32_t>{0}, {}, -1, useShort),
              "batch = -1 is negative");
  expectError(choosePrefillShort(std::vector<int32_t>{0, 1}, {1}, 1, useShort,
                                 -1),
              "max mean keys = -1 is negative");
  // Untouched on failure.
  EXPECT_TRUE(useShort);
}

TEST(MLASplits, EverySplitPlanMergesTogether) {
  EXPECT_FALSE(mlaPrefersTogether(1));
  EXPECT_FALSE(mlaPrefersTogether(kMLATogetherMinSplits - 1));
  EXPECT_TRUE(mlaPrefersTogether(kMLATogetherMinSplits));
  EXPECT_TRUE(mlaPrefersTogether(kMaxMLASplitsTogether));
  // 32 requests of two head blocks on 132 slots: 2 splits, together; 16
  // requests: 4 splits, together; 66 requests: no split.
  EXPECT_EQ(mlaSplits(32, 2, 132, 1024, true), 2);
  EXPECT_TRUE(mlaPrefersTogether(mlaSplits(32, 2, 132, 1024, true)));
  EXPECT_TRUE(mlaPrefersTogether(mlaSplits(16, 2, 132, 1024, true)));
  EXPECT_FALSE(mlaPrefersTogether(mlaSplits(66, 2, 132, 1024, true)));
}

TEST(MLASplits, FillOneWaveWithinTheBounds) {
  // The last CTA's merge; 132 slots: B x head blocks x S <= one wave.
  EXPECT_EQ(mlaSplits(64, 1, 132, 0, false), 2);
  EXPECT_EQ(mlaSplits(16, 1, 132, 0, false), 8);
  EXPECT_EQ(mlaSplits(1, 4, 132, 0, false), kMaxMLASplits);
  EXPECT_EQ(mlaSplits(256, 1, 132, 0, false), 1);
  // At least kMinMLASplitTokens keys per split when the longest is known.
  EXPECT_EQ(mlaSplits(1, 1, 132, 1024, false), 1024 / kMinMLASplitTokens);
  // Beyond kMLASplitsAtMinTokens splits, kMLASplitTokens keys a split:
  // 1 x 4096 over 2 head blocks takes 16 splits, 1 x 32768 the most.
  EXPECT_EQ(mlaSplits(1, 2, 132, 4096, false), 4096 / kMLASplitTokens);
  EXPECT_EQ(mlaSplits(1, 2, 132, 2048, false), kMLASplitsAtMinTokens);
  EXPECT_EQ(mlaSplits(1, 2, 132, 32768, false), kMaxMLASplits);
  EXPECT_EQ(mlaSplits(1, 1, 132, 1, false), 1);
  for (bool together : {false, true}) {
    EXPECT_EQ(mlaSplits(0, 1, 132, 0, together), 1);
    EXPECT_EQ(mlaSplits(4, 0, 132, 0, together), 1);
    EXPECT_EQ(mlaSplits(4, 1, 0, 0, together), 1);
  }
}

TEST(MLASplits, TogetherFillTheWave) {
  // Merged together: one wave up to kMaxMLASplitsTogether (B = 1 over two
  // head blocks of 132 slots: 66 -> 64), a grid that always fits at once.
  EXPECT_EQ(mlaSplits(1, 2, 132, 0, true), kMaxMLASplitsTogether);
  EXPECT_EQ(mlaSplits(1, 2, 132, 32768, true), kMaxMLASplitsTogether);
  EXPECT_EQ(mlaSplits(1, 4, 132, 32768, true), 33);
  EXPECT_EQ(mlaSplits(2, 2, 132, 65536, true), 33);
  EXPECT_EQ(mlaSplits(16, 2, 132, 8192, true), 4);
  // (One split has no merge; more always fit.)
  for (int64_t b : {1, 2, 3, 5, 16, 60})
    for (int64_t hb : {1, 2, 4}) {
      int64_t s = mlaSplits(b, hb, 132, 0, true);
      EXPECT_TRUE(s == 1 || b * hb * s <= 132) << b << " x " << hb;
    }
  EXPECT_EQ(mlaSplits(60, 4, 132, 0, true), 1);
  // With the longest known: at most max(16, ceil(L / 128)) splits.
  EXPECT_EQ(mlaSplits(1, 2, 132, 1024, true), kMLATogetherSplitsAtMinTokens);
  EXPECT_EQ(mlaSplits(1, 2, 132, 4096, true), 4096 / kMLATogetherSplitTokens);
  EXPECT_EQ(mlaSplits(1, 2, 132, 8192, true), 64);
  EXPECT_EQ(mlaSplits(1, 2, 132, 1, true), kMLATogetherSplitsAtMinTokens);
}

TEST(MLASplits, SmallKernelForShortContextsOfFewRequests) {
  EXPECT_TRUE(chooseMLASmall(1, 1));
  EXPECT_TRUE(chooseMLASmall(1, 1024));
  EXPECT_TRUE(chooseMLASmall(1, kMLASmallMaxKeys));
  EXPECT_FALSE(chooseMLASmall(1, kMLASmallMaxKeys + 1));
  EXPECT_FALSE(chooseMLASmall(1, 32768));
  EXPECT_TRUE(chooseMLASmall(kMLASmallMaxBatch, 1024));
  EXPECT_FALSE(chooseMLASmall(kMLASmallMaxBatch + 1, 1024));
  EXPECT_FALSE(chooseMLASmall(16, 1024));
  EXPECT_FALSE(chooseMLASmall(int64_t(1) << 40, int64_t(1) << 40));
  // Without a bound on the longest request, or without requests: wgmma.
  EXPECT_FALSE(chooseMLASmall(1, 0));
  EXPECT_FALSE(chooseMLASmall(0, 1024));
}

TEST(MLASplits, WorkspaceLayout) {
  EXPECT_EQ(mlaWorkspace(4, 16, 512, 1).bytes, 0);
  MLAWorkspace w = mlaWorkspace(3, 16, 512, 5);
  EXPECT_EQ(w.oPart, 0);
  EXPECT_EQ(w.lsePart, 15 * 16 * 512 * 4);
  EXPECT_EQ(w.counters, w.lsePart + 1024); // 15 x 16 x 4 = 960 -> 1024
  EXPECT_EQ(w.bytes, w.counters + 256);    // 3 x 16 x 4 = 192 -> 256
  EXPECT_EQ(w.lsePart % 256, 0);
  EXPECT_EQ(w.counters % 256, 0);
}
