//===- RuntimeFuzz.cpp - libFuzzer target: host-side runtime checks -------===//
//
// The input bytes drive one of three scenarios (its first byte picks it):
//
//  0  planner: a random CSR page table (arrays whose lengths may disagree
//     with batch, any int32 entries) through the checked mode
//     (validatePageTable, kvLengths, validateQueries, validateMask,
//     prefillQueryTiles, choosePrefillShort, preferSmallerSplitTiles) and,
//     where it validated, planDecode / planPrefill, whose work lists must
//     tile every request's keys and queries exactly.
//  1  pool: pa_pool.h's C API over a random sequence of operations (add,
//     append, fork, free, info, pages, ref counts, stats, evict, the three
//     table forms and the automatic cascade), ids sometimes dead or made
//     up; after every operation pa_pool_check() must pass, and the tables
//     of a batch must survive the converters' round trips.
//  2  converters: random CSR / vLLM / tt-metal tables (shapes, entries,
//     widths, capacities: any) through the six checked converters and
//     pa_auto_cascade_build; output buffers are sized as the API documents
//     for the sizes passed, so that any write past them is the library's.
//
// A failed call (PA_ERROR, PA_POOL_FULL, an error Status) is a normal
// outcome; a crash, a sanitizer report, a hang, a broken invariant or a
// success that breaks the documented postconditions is a finding (abort
// with a message). Sizes are bounded (batch <= 24, tokens per call <= 96,
// pages <= 64) so that one input costs microseconds.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Runtime/Planner.h"
#include "PagedAttn/Runtime/pa_pool.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

using namespace pa::rt;

namespace {

[[noreturn]] void finding(const char *what) {
  std::fprintf(stderr, "pa-runtime-fuzz: %s\n", what);
  std::abort();
}

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      finding("check failed: " #cond);                                         \
  } while (0)

/// Mostly small values near the interesting boundaries, sometimes any int32.
int32_t anInt(FuzzedDataProvider &fdp, int32_t lo, int32_t hi) {
  if (hi < lo)
    std::swap(lo, hi);
  switch (fdp.ConsumeIntegralInRange<int>(0, 7)) {
  case 0:
    return fdp.ConsumeIntegral<int32_t>();
  case 1:
    return fdp.PickValueInArray<int32_t>({-1, 0, 1, INT32_MAX, INT32_MIN});
  default:
    return fdp.ConsumeIntegralInRange<int32_t>(lo, hi);
  }
}

/// At most kMaxArray entries: a table may claim more (an indptr entry of
/// INT32_MAX) than its arrays hold, which the checks must catch.
constexpr int64_t kMaxArray = 512;

std::vector<int32_t> anArray(FuzzedDataProvider &fdp, int64_t len, int32_t lo,
                             int32_t hi) {
  std::vector<int32_t> v(
      static_cast<size_t>(std::clamp<int64_t>(len, 0, kMaxArray)));
  for (int32_t &x : v)
    x = anInt(fdp, lo, hi);
  return v;
}

/// A length close to `expected`: usually it, sometimes one off or another.
int64_t aLength(FuzzedDataProvider &fdp, int64_t expected) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 7)) {
  case 0:
    return std::max<int64_t>(expected - 1, 0);
  case 1:
    return expected + 1;
  case 2:
    return fdp.ConsumeIntegralInRange<int64_t>(0, 40);
  default:
    return expected;
  }
}

/// A non-decreasing indptr from 0 with mostly small steps, sometimes broken.
std::vector<int32_t> anIndptr(FuzzedDataProvider &fdp, int64_t batch,
                              int32_t maxStep) {
  std::vector<int32_t> v(static_cast<size_t>(aLength(fdp, batch + 1)));
  int32_t x = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0)
      x += fdp.ConsumeIntegralInRange<int32_t>(0, maxStep);
    v[i] = x;
  }
  if (!v.empty() && fdp.ConsumeIntegralInRange<int>(0, 15) == 0)
    v[fdp.ConsumeIntegralInRange<size_t>(0, v.size() - 1)] = anInt(fdp, -2, 64);
  return v;
}

//===----------------------------------------------------------------------===//
// 0: the planner's checks and plans
//===----------------------------------------------------------------------===//

void checkDecodePlan(const DecodePlan &plan, const std::vector<int64_t> &lens) {
  const WorkList &w = plan.work;
  int64_t batch = static_cast<int64_t>(lens.size());
  CHECK(plan.chunkSize >= 1);
  CHECK(static_cast<int64_t>(w.indptr.size()) == batch + 1);
  CHECK(w.indptr[0] == 0 && w.indptr[batch] == w.size());
  CHECK(w.start.size() == w.request.size() && w.end.size() == w.request.size());
  CHECK(w.size() <= plan.maxItemsBound);
  bool split = false;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t next = 0;
    CHECK(w.indptr[b] <= w.indptr[b + 1]);
    for (int64_t i = w.indptr[b]; i < w.indptr[b + 1]; ++i) {
      CHECK(w.request[i] == b && w.start[i] == next && w.end[i] > w.start[i]);
      CHECK(w.end[i] - w.start[i] <= plan.chunkSize);
      next = w.end[i];
    }
    CHECK(next == lens[b]);
    split |= w.indptr[b + 1] - w.indptr[b] > 1;
  }
  CHECK(split == plan.split);
}

/// A prefill plan's items: tiles of [qoStart, qoEnd) (rows of the request)
/// cover each request's queries exactly once; a tile's items cut its keys
/// into consecutive chunks from 0, at most kvChunk each, never past the
/// request's kv_len; only split plans have tiles of several items, and
/// their merge segments are a CSR over the partial rows; the items come
/// heaviest first (non-increasing keys, then queries).
void checkPrefillPlan(const PrefillPlan &plan, I32Span qoIndptr,
                      const std::vector<int64_t> &lens, int64_t rows) {
  const PrefillWorkList &w = plan.work;
  int64_t batch = static_cast<int64_t>(lens.size());
  CHECK(plan.queriesPerTile >= 1 && plan.kvChunk >= 1);
  size_t n = w.request.size();
  CHECK(w.qoStart.size() == n && w.qoEnd.size() == n && w.kvStart.size() == n &&
        w.kvEnd.size() == n);
  std::vector<int64_t> rowsCovered(static_cast<size_t>(batch), 0);
  // (request, qoStart) -> the tile's qoEnd and its items' key ranges.
  std::map<std::pair<int32_t, int32_t>,
           std::pair<int32_t, std::vector<std::pair<int32_t, int32_t>>>>
      tiles;
  for (size_t i = 0; i < n; ++i) {
    int32_t b = w.request[i];
    CHECK(b >= 0 && b < batch);
    int64_t qoLen = qoIndptr[b + 1] - qoIndptr[b];
    CHECK(0 <= w.qoStart[i] && w.qoStart[i] < w.qoEnd[i] &&
          w.qoEnd[i] <= qoLen &&
          w.qoEnd[i] - w.qoStart[i] <= plan.queriesPerTile);
    CHECK(w.kvStart[i] <= w.kvEnd[i] &&
          w.kvEnd[i] <= lens[static_cast<size_t>(b)] &&
          w.kvEnd[i] - w.kvStart[i] <= plan.kvChunk);
    if (i > 0) {
      int64_t prev = w.kvEnd[i - 1] - w.kvStart[i - 1];
      int64_t cur = w.kvEnd[i] - w.kvStart[i];
      CHECK(prev > cur || (prev == cur && w.qoEnd[i - 1] - w.qoStart[i - 1] >=
                                              w.qoEnd[i] - w.qoStart[i]));
    }
    auto &tile = tiles[{b, w.qoStart[i]}];
    if (tile.second.empty()) {
      tile.first = w.qoEnd[i];
      rowsCovered[static_cast<size_t>(b)] += w.qoEnd[i] - w.qoStart[i];
    }
    CHECK(tile.first == w.qoEnd[i]);
    tile.second.push_back({w.kvStart[i], w.kvEnd[i]});
  }
  for (auto &[key, tile] : tiles) {
    std::vector<std::pair<int32_t, int32_t>> &chunks = tile.second;
    std::sort(chunks.begin(), chunks.end());
    CHECK(chunks.size() == 1 || plan.split);
    int32_t next = 0;
    for (auto [kv0, kv1] : chunks) {
      CHECK(kv0 == next && (kv0 < kv1 || chunks.size() == 1));
      next = kv1;
    }
  }
  for (int64_t b = 0; b < batch; ++b)
    CHECK(rowsCovered[static_cast<size_t>(b)] ==
          qoIndptr[b + 1] - qoIndptr[b]);
  if (plan.split) {
    CHECK(static_cast<int64_t>(w.mergeIndptr.size()) == rows + 1 &&
          w.partialRow.size() == n && w.partialStride.size() == n);
    CHECK(w.mergeIndptr[0] == 0 && w.mergeIndptr[rows] == plan.numPartialRows);
    for (int64_t r = 0; r < rows; ++r)
      CHECK(w.mergeIndptr[r] <= w.mergeIndptr[r + 1]);
  }
}

void fuzzPlanner(FuzzedDataProvider &fdp) {
  int64_t batch = fdp.ConsumeIntegralInRange<int64_t>(-1, 24);
  int64_t pageSize = fdp.PickValueInArray<int64_t>({1, 2, 3, 16, 64, 0, -4});
  int64_t numPages = fdp.ConsumeIntegralInRange<int64_t>(-1, 64);
  int64_t b = std::max<int64_t>(batch, 0);
  std::vector<int32_t> kvIndptr = anIndptr(fdp, b, 4);
  int64_t nnz = kvIndptr.empty() ? 0 : std::max(kvIndptr.back(), 0);
  std::vector<int32_t> kvIndices = anArray(fdp, aLength(fdp, nnz), -1, 64);
  std::vector<int32_t> lastPageLen =
      anArray(fdp, aLength(fdp, b), 0, static_cast<int32_t>(pageSize));

  std::vector<int64_t> lens;
  Status st = kvLengths(kvIndptr, lastPageLen, batch, pageSize, lens);
  CHECK(st.ok == st.message.empty());
  CHECK(st.ok ? static_cast<int64_t>(lens.size()) == batch : lens.empty());
  std::vector<int64_t> checkedLens;
  Status valid = validatePageTable(kvIndptr, kvIndices, lastPageLen, batch,
                                   pageSize, numPages, checkedLens);
  CHECK(valid.ok == valid.message.empty());
  if (valid.ok)
    CHECK(st.ok && checkedLens == lens);

  // Queries and masks against the lengths (any lengths when invalid: the
  // checks must not trust them either).
  if (!valid.ok)
    checkedLens.assign(static_cast<size_t>(b),
                       fdp.ConsumeIntegralInRange<int64_t>(-1, 200));
  std::vector<int32_t> qoIndptr = anIndptr(fdp, b, 8);
  int64_t rows = qoIndptr.empty() ? 0 : qoIndptr.back();
  if (fdp.ConsumeBool())
    rows += fdp.ConsumeIntegralInRange<int64_t>(-2, 2);
  bool positions = fdp.ConsumeBool();
  Status q = validateQueries(qoIndptr, batch, rows, checkedLens, positions);
  int64_t tiles = -7;
  int64_t perTile = fdp.ConsumeIntegralInRange<int64_t>(-1, 64);
  Status t = prefillQueryTiles(qoIndptr, batch, perTile, tiles);
  CHECK(t.ok ? tiles >= 0 : tiles == -7);
  bool useShort = false, useSplit = false;
  (void)choosePrefillShort(qoIndptr, checkedLens, batch, useShort,
                           fdp.ConsumeIntegralInRange<int64_t>(-1, 8192));
  (void)preferSmallerSplitTiles(
      qoIndptr, batch, fdp.ConsumeIntegralInRange<int64_t>(-1, 256),
      fdp.ConsumeIntegralInRange<int64_t>(-1, 256),
      fdp.ConsumeIntegralInRange<int64_t>(-1, 8),
      fdp.ConsumeIntegralInRange<int64_t>(-1, 1024), useSplit);
  if (q.ok) {
    std::vector<int32_t> maskIndptr = anIndptr(fdp, b, 64);
    (void)validateMask(maskIndptr, qoIndptr, batch, checkedLens,
                       fdp.ConsumeIntegralInRange<int64_t>(-1, 4096));
  }
  if (!valid.ok)
    return;

  int64_t heads = fdp.ConsumeIntegralInRange<int64_t>(0, 8);
  int64_t sms = fdp.ConsumeIntegralInRange<int64_t>(0, 132);
  int64_t ctas = fdp.ConsumeIntegralInRange<int64_t>(0, 4);
  int64_t minChunk = fdp.ConsumeIntegralInRange<int64_t>(1, 512);
  DecodePlan plan;
  if (planDecode(kvIndptr, lastPageLen, batch, pageSize, heads, sms, ctas,
                 plan, minChunk))
    checkDecodePlan(plan, lens);
  // A plan lists a work item per query tile (and key chunk): its size and
  // time grow with the query rows, which an indptr entry of INT32_MAX makes
  // 2^31 (16 s for one input under ASan, now in the corpus:
  // f6acb2734de25003edc0b2214363f4c577dc46a4). The checks above took those
  // rows; the plan is checked up to 2^16 of them.
  if (q.ok && rows <= (int64_t(1) << 16)) {
    PrefillPlan pplan;
    if (planPrefill(qoIndptr, kvIndptr, lastPageLen, batch, rows, pageSize,
                    heads, std::max<int64_t>(perTile, 0), fdp.ConsumeBool(),
                    positions, sms, ctas, pplan, minChunk,
                    fdp.ConsumeIntegralInRange<int64_t>(0, 300),
                    fdp.ConsumeBool()))
      checkPrefillPlan(pplan, qoIndptr, lens, rows);
  }
}

//===----------------------------------------------------------------------===//
// 1: the pool's C API
//===----------------------------------------------------------------------===//

/// The tables of a batch of pool sequences through the converters: CSR ->
/// vLLM -> CSR and CSR -> tt -> CSR give the pool's CSR table back, and the
/// pool's own padded tables equal the converted ones.
void checkTables(pa_pool *pool, const std::vector<int64_t> &ids,
                 int64_t pageSize, int64_t numPages) {
  int64_t batch = static_cast<int64_t>(ids.size());
  int64_t nnz = 0, maxPages = 0;
  if (pa_pool_table_sizes(pool, ids.data(), batch, &nnz, &maxPages) !=
      PA_SUCCESS)
    return; // a dead id in the batch
  std::vector<int32_t> indptr(batch + 1), indices(nnz), last(batch);
  CHECK(pa_pool_csr_table(pool, ids.data(), batch, indptr.data(),
                          indices.data(), nnz, last.data()) == PA_SUCCESS);
  int64_t width = std::max<int64_t>(maxPages, 1);
  std::vector<int32_t> vllm(batch * width), lens(batch);
  std::vector<int32_t> tt(batch * width), pos(batch);
  std::vector<int32_t> vllm2(batch * width, 7), lens2(batch, 7);
  CHECK(pa_pool_vllm_table(pool, ids.data(), batch, width, -1, vllm.data(),
                           lens.data()) == PA_SUCCESS);
  CHECK(pa_pool_tt_table(pool, ids.data(), batch, width, -1, tt.data(),
                         pos.data()) == PA_SUCCESS);
  CHECK(pa_csr_to_vllm(indptr.data(), indices.data(), nnz, last.data(), batch,
                       pageSize, numPages, width, -1, vllm2.data(),
                       lens2.data()) == PA_SUCCESS);
  CHECK(vllm2 == vllm && lens2 == lens);
  std::vector<int32_t> indptr2(batch + 1, 7), indices2(nnz, 7), last2(batch, 7);
  CHECK(pa_vllm_to_csr(vllm.data(), lens.data(), batch, width, pageSize,
                       numPages, indptr2.data(), indices2.data(), nnz,
                       last2.data()) == PA_SUCCESS);
  CHECK(indptr2 == indptr && indices2 == indices && last2 == last);
  std::fill(indptr2.begin(), indptr2.end(), 7);
  CHECK(pa_tt_to_csr(tt.data(), pos.data(), batch, width, pageSize, numPages,
                     indptr2.data(), indices2.data(), nnz,
                     last2.data()) == PA_SUCCESS);
  CHECK(indptr2 == indptr && indices2 == indices && last2 == last);
  std::vector<int32_t> tt2(batch * width, 7), pos2(batch, 7);
  CHECK(pa_vllm_to_tt(vllm.data(), lens.data(), batch, width, pageSize,
                      numPages, tt2.data(), pos2.data()) == PA_SUCCESS);
  CHECK(tt2 == tt && pos2 == pos);
  // A validated table, as the runtime's checked mode sees it.
  CHECK(validatePageTable(indptr, indices, last, batch, pageSize, numPages).ok);
}

void fuzzPool(FuzzedDataProvider &fdp) {
  pa_pool_config cfg;
  cfg.num_pages = fdp.ConsumeIntegralInRange<int64_t>(0, 48);
  cfg.page_size = fdp.PickValueInArray<int64_t>({1, 2, 4, 16, 0});
  cfg.prefix_caching = fdp.ConsumeBool();
  cfg.hash_bits = fdp.ConsumeIntegralInRange<int>(0, 6);
  pa_pool *pool = nullptr;
  if (pa_pool_create(&cfg, &pool) != PA_SUCCESS) {
    CHECK(pool == nullptr && *pa_pool_last_error());
    return;
  }
  CHECK(pool != nullptr);
  std::vector<int64_t> live; // ids we believe live
  auto someId = [&]() -> int64_t {
    if (live.empty() || fdp.ConsumeIntegralInRange<int>(0, 9) == 0)
      return fdp.ConsumeIntegralInRange<int64_t>(-2, 40);
    return live[fdp.ConsumeIntegralInRange<size_t>(0, live.size() - 1)];
  };
  // Tokens from a small alphabet, so that prompts share prefixes.
  auto someTokens = [&](int64_t n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    int32_t alphabet = fdp.ConsumeIntegralInRange<int32_t>(1, 4);
    for (int32_t &x : t)
      x = fdp.ConsumeIntegralInRange<int32_t>(0, alphabet - 1);
    return t;
  };

  for (int op = 0; op < 48 && fdp.remaining_bytes() > 0; ++op) {
    switch (fdp.ConsumeIntegralInRange<int>(0, 11)) {
    case 0: { // add
      int64_t n = fdp.ConsumeIntegralInRange<int64_t>(0, 96);
      std::vector<int32_t> tokens = someTokens(n);
      int64_t cap = aLength(fdp, n);
      std::vector<int32_t> slots(static_cast<size_t>(cap));
      int64_t id = -1, cached = -1;
      int rc = pa_pool_add_sequence(pool, n ? tokens.data() : nullptr, n, &id,
                                    &cached, slots.data(), cap);
      if (rc == PA_SUCCESS) {
        CHECK(cap >= n && cached >= 0 && cached % cfg.page_size == 0 &&
              (n == 0 || cached < n));
        live.push_back(id);
      }
      break;
    }
    case 1: { // append
      int64_t batch = fdp.ConsumeIntegralInRange<int64_t>(0, 4);
      std::vector<int64_t> ids, counts;
      int64_t total = 0;
      for (int64_t i = 0; i < batch; ++i) {
        ids.push_back(someId());
        counts.push_back(fdp.ConsumeIntegralInRange<int64_t>(-1, 24));
        total += std::max<int64_t>(counts.back(), 0);
      }
      std::vector<int32_t> tokens = someTokens(total);
      int64_t slotsCap = aLength(fdp, total), copiesCap = aLength(fdp, batch);
      std::vector<int32_t> slots(static_cast<size_t>(slotsCap));
      std::vector<pa_page_copy> copies(static_cast<size_t>(copiesCap));
      int64_t numCopies = -1;
      int rc = pa_pool_append(
          pool, ids.data(), counts.data(), batch,
          (cfg.prefix_caching || fdp.ConsumeBool()) ? tokens.data() : nullptr,
          slots.data(), slotsCap, copies.data(), copiesCap, &numCopies);
      if (rc == PA_SUCCESS) {
        CHECK(numCopies >= 0 && numCopies <= copiesCap);
        for (int64_t i = 0; i < total; ++i)
          CHECK(slots[i] >= 0 && slots[i] < cfg.num_pages * cfg.page_size);
      }
      break;
    }
    case 2: { // fork
      int64_t child = -1;
      if (pa_pool_fork(pool, someId(), &child) == PA_SUCCESS)
        live.push_back(child);
      break;
    }
    case 3: { // free
      int64_t id = someId();
      if (pa_pool_free_sequence(pool, id) == PA_SUCCESS)
        live.erase(std::remove(live.begin(), live.end(), id), live.end());
      break;
    }
    case 4: { // info + pages
      int64_t id = someId(), length = -1, pages = -1;
      if (pa_pool_sequence_info(pool, id, &length, &pages) == PA_SUCCESS) {
        CHECK(length >= 0 && pages == (length + cfg.page_size - 1) /
                                          cfg.page_size);
        int64_t cap = aLength(fdp, pages);
        std::vector<int32_t> out(static_cast<size_t>(cap));
        if (pa_pool_sequence_pages(pool, id, out.data(), cap) == PA_SUCCESS)
          for (int64_t i = 0; i < pages; ++i) {
            int32_t refs = 0;
            CHECK(pa_pool_ref_count(pool, out[i], &refs) == PA_SUCCESS &&
                  refs >= 1);
          }
      }
      break;
    }
    case 5: { // ref count of any page id
      int32_t refs = -1;
      (void)pa_pool_ref_count(pool, anInt(fdp, -1, 64), &refs);
      break;
    }
    case 6: { // stats
      pa_pool_stats s;
      CHECK(pa_pool_get_stats(pool, &s) == PA_SUCCESS);
      CHECK(s.num_pages == cfg.num_pages &&
            s.free_pages + s.cached_free_pages + s.used_pages == s.num_pages &&
            s.num_sequences == static_cast<int64_t>(live.size()));
      break;
    }
    case 7: { // evict
      int64_t evicted = -1;
      CHECK(pa_pool_evict_all(pool, fdp.ConsumeBool() ? &evicted : nullptr) ==
            PA_SUCCESS);
      break;
    }
    case 8:
    case 9: { // the tables of a batch, through the converters
      std::vector<int64_t> ids;
      int64_t batch = fdp.ConsumeIntegralInRange<int64_t>(0, 6);
      for (int64_t i = 0; i < batch; ++i)
        ids.push_back(someId());
      checkTables(pool, ids, cfg.page_size, cfg.num_pages);
      break;
    }
    case 10: { // padded tables with any width
      std::vector<int64_t> ids;
      int64_t batch = fdp.ConsumeIntegralInRange<int64_t>(0, 4);
      for (int64_t i = 0; i < batch; ++i)
        ids.push_back(someId());
      int64_t width = fdp.ConsumeIntegralInRange<int64_t>(-1, 8);
      std::vector<int32_t> table(batch * std::max<int64_t>(width, 0)),
          lens(batch);
      if (fdp.ConsumeBool())
        (void)pa_pool_vllm_table(pool, ids.data(), batch, width, 0,
                                 table.data(), lens.data());
      else
        (void)pa_pool_tt_table(pool, ids.data(), batch, width, 0, table.data(),
                               lens.data());
      break;
    }
    case 11: { // the automatic cascade of a batch
      std::vector<int64_t> ids;
      int64_t batch = fdp.ConsumeIntegralInRange<int64_t>(0, 6);
      std::vector<int32_t> qo;
      for (int64_t i = 0; i < batch; ++i) {
        ids.push_back(someId());
        qo.push_back(anInt(fdp, 0, 8));
      }
      pa_auto_cascade_options o;
      o.min_share_requests = fdp.ConsumeIntegralInRange<int64_t>(0, 3);
      o.min_share_pages = fdp.ConsumeIntegralInRange<int64_t>(0, 2);
      o.max_levels = fdp.ConsumeIntegralInRange<int64_t>(0, 4);
      pa_auto_cascade *c = nullptr;
      if (pa_pool_auto_cascade(pool, ids.data(), batch,
                               fdp.ConsumeBool() ? qo.data() : nullptr, &o,
                               &c) == PA_SUCCESS) {
        pa_auto_cascade_info info;
        CHECK(pa_auto_cascade_get_info(c, &info) == PA_SUCCESS);
        CHECK(info.batch == batch && info.num_levels >= 1);
        for (int64_t l = 0; l < info.num_levels; ++l) {
          pa_auto_cascade_level lv;
          CHECK(pa_auto_cascade_get_level(c, l, &lv) == PA_SUCCESS);
          CHECK(lv.qo_indptr[lv.batch] == info.num_query_rows &&
                lv.kv_indptr[lv.batch] == lv.nnz);
        }
        const int32_t *order = nullptr;
        CHECK(pa_auto_cascade_get_order(c, &order) == PA_SUCCESS);
        pa_auto_cascade_level lv;
        CHECK(pa_auto_cascade_get_level(c, info.num_levels, &lv) != PA_SUCCESS);
        pa_auto_cascade_free(c);
      }
      break;
    }
    }
    if (pa_pool_check(pool) != PA_SUCCESS) {
      std::fprintf(stderr, "pa_pool_check: %s\n", pa_pool_last_error());
      finding("a pool invariant broke");
    }
  }
  pa_pool_destroy(pool);
}

//===----------------------------------------------------------------------===//
// 2: the checked converters and the automatic cascade on raw tables
//===----------------------------------------------------------------------===//

void fuzzConverters(FuzzedDataProvider &fdp) {
  int64_t batch = fdp.ConsumeIntegralInRange<int64_t>(-1, 12);
  int64_t b = std::max<int64_t>(batch, 0);
  int64_t pageSize = fdp.PickValueInArray<int64_t>({1, 2, 16, 0, -1});
  int64_t numPages = fdp.ConsumeIntegralInRange<int64_t>(-1, 40);
  int64_t width = fdp.ConsumeIntegralInRange<int64_t>(-1, 8);
  int64_t w = std::max<int64_t>(width, 0);
  int32_t pad = anInt(fdp, -1, 1);
  // Outputs exactly as large as the API says, so that a write past one is
  // an AddressSanitizer report.
  std::vector<int32_t> outTable(b * w), outLens(b), outIndptr(b + 1),
      outLast(b);
  int64_t cap = fdp.ConsumeIntegralInRange<int64_t>(0, 64);
  std::vector<int32_t> outIdx(static_cast<size_t>(cap));

  switch (fdp.ConsumeIntegralInRange<int>(0, 2)) {
  case 0: { // CSR inputs
    std::vector<int32_t> indptr = anIndptr(fdp, b, 4);
    int64_t nnz = indptr.empty() ? 0 : std::max(indptr.back(), 0);
    std::vector<int32_t> indices = anArray(fdp, aLength(fdp, nnz), -1, 40);
    std::vector<int32_t> last =
        anArray(fdp, b, 0, static_cast<int32_t>(std::max<int64_t>(pageSize, 1)));
    // The C API takes no lengths for indptr / last_page_len: batch + 1 and
    // batch entries by contract.
    indptr.resize(static_cast<size_t>(b + 1));
    int64_t numIndices = static_cast<int64_t>(indices.size());
    if (fdp.ConsumeBool())
      (void)pa_csr_to_vllm(indptr.data(), indices.data(), numIndices,
                           last.data(), batch, pageSize, numPages, width, pad,
                           outTable.data(), outLens.data());
    else
      (void)pa_csr_to_tt(indptr.data(), indices.data(), numIndices,
                         last.data(), batch, pageSize, numPages, width, pad,
                         outTable.data(), outLens.data());
    pa_auto_cascade_options o;
    o.min_share_requests = fdp.ConsumeIntegralInRange<int64_t>(-1, 3);
    o.min_share_pages = fdp.ConsumeIntegralInRange<int64_t>(-1, 2);
    o.max_levels = fdp.ConsumeIntegralInRange<int64_t>(-1, 4);
    std::vector<int32_t> qo = anArray(fdp, b, 0, 8);
    pa_auto_cascade *c = nullptr;
    if (pa_auto_cascade_build(indptr.data(), indices.data(), numIndices,
                              last.data(), batch, pageSize, numPages,
                              fdp.ConsumeBool() ? qo.data() : nullptr,
                              fdp.ConsumeBool() ? &o : nullptr,
                              &c) == PA_SUCCESS) {
      pa_auto_cascade_info info;
      CHECK(pa_auto_cascade_get_info(c, &info) == PA_SUCCESS &&
            info.batch == batch);
      pa_auto_cascade_free(c);
    } else {
      CHECK(c == nullptr);
    }
    break;
  }
  case 1:
  case 2: { // padded inputs: [batch * width] and [batch]
    std::vector<int32_t> table = anArray(fdp, b * w, -1, 40);
    std::vector<int32_t> lens = anArray(fdp, b, -1, static_cast<int32_t>(
                                                        w * std::max<int64_t>(
                                                                pageSize, 1)));
    bool vllm = fdp.ConsumeBool();
    int rc;
    if (fdp.ConsumeBool())
      rc = vllm ? pa_vllm_to_csr(table.data(), lens.data(), batch, width,
                                 pageSize, numPages, outIndptr.data(), outIdx.data(),
                                 cap, outLast.data())
                : pa_tt_to_csr(table.data(), lens.data(), batch, width,
                               pageSize, numPages, outIndptr.data(), outIdx.data(),
                               cap, outLast.data());
    else
      rc = vllm ? pa_vllm_to_tt(table.data(), lens.data(), batch, width,
                                pageSize, numPages, outTable.data(), outLens.data())
                : pa_tt_to_vllm(table.data(), lens.data(), batch, width,
                                pageSize, numPages, outTable.data(), outLens.data());
    if (rc != PA_SUCCESS)
      CHECK(*pa_pool_last_error() != '\0');
    break;
  }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  switch (fdp.ConsumeIntegralInRange<int>(0, 2)) {
  case 0:
    fuzzPlanner(fdp);
    break;
  case 1:
    fuzzPool(fdp);
    break;
  default:
    fuzzConverters(fdp);
    break;
  }
  return 0;
}
