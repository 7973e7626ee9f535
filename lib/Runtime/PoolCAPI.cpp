//===- PoolCAPI.cpp - C API of the page pool (pa_pool.h) -----------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The C functions of pa_pool.h over PagePool / the table functions /
// buildAutoCascade (PagePool.h): argument checks (null pointers,
// capacities), status codes and the per-thread last error. Built into
// libpa_pool.so, which needs no CUDA (lib/Runtime/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Runtime/pa_pool.h"
#include "PagedAttn/Runtime/PagePool.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#define PA_POOL_EXPORT extern "C" __attribute__((visibility("default")))

using namespace pa::rt;

struct pa_pool {
  std::unique_ptr<PagePool> pool;
};

struct pa_auto_cascade {
  AutoCascade cascade;
};

namespace {

thread_local std::string lastError;

int report(const Status &s) {
  if (s.ok)
    return PA_SUCCESS;
  lastError = s.message;
  return PagePool::isFull(s) ? PA_POOL_FULL : PA_ERROR;
}

template <typename... Ts> int error(const Ts &...parts) {
  return report(fail(parts...));
}

/// Sequence ids of the C API are the C++ ids.
const PagePool::SeqId *asIds(const int64_t *ids) {
  static_assert(sizeof(PagePool::SeqId) == sizeof(int64_t));
  return reinterpret_cast<const PagePool::SeqId *>(ids);
}

/// Copies a CSR table into caller arrays (indices checked against their
/// capacity before anything is written).
int writeCsr(const char *fn, const CsrTable &t, int32_t *indptr,
             int32_t *indices, int64_t indicesCapacity,
             int32_t *lastPageLen) {
  const int64_t batch = t.batch();
  const int64_t nnz = static_cast<int64_t>(t.indices.size());
  if (!indptr || (batch > 0 && !lastPageLen))
    return error(fn, ": indptr or last_page_len is null");
  if (nnz > indicesCapacity || (nnz > 0 && !indices))
    return error(fn, ": the table has ", nnz,
                 " pages, indices holds ", indicesCapacity);
  std::copy(t.indptr.begin(), t.indptr.end(), indptr);
  std::copy(t.indices.begin(), t.indices.end(), indices);
  std::copy(t.lastPageLen.begin(), t.lastPageLen.end(), lastPageLen);
  return PA_SUCCESS;
}

/// Copies a padded table into caller arrays.
int writePadded(const char *fn, const std::vector<int32_t> &table,
                const std::vector<int32_t> &lens, int32_t *tableOut,
                int32_t *lensOut) {
  if ((!table.empty() && !tableOut) || (!lens.empty() && !lensOut))
    return error(fn, ": an output array is null");
  std::copy(table.begin(), table.end(), tableOut);
  std::copy(lens.begin(), lens.end(), lensOut);
  return PA_SUCCESS;
}

/// Options with zeros replaced by the defaults.
AutoCascadeOptions cascadeOptions(const pa_auto_cascade_options *o) {
  AutoCascadeOptions opts;
  if (o) {
    if (o->min_share_requests)
      opts.minShareRequests = o->min_share_requests;
    if (o->min_share_pages)
      opts.minSharePages = o->min_share_pages;
    if (o->max_levels)
      opts.maxLevels = o->max_levels;
  }
  return opts;
}

} // namespace

PA_POOL_EXPORT const char *pa_pool_last_error(void) {
  return lastError.c_str();
}

PA_POOL_EXPORT int pa_pool_create(const pa_pool_config *config,
                                  pa_pool **out) {
  if (!config || !out)
    return error("pa_pool_create: config or out is null");
  PagePoolConfig c;
  c.numPages = config->num_pages;
  c.pageSize = config->page_size;
  c.prefixCaching = config->prefix_caching != 0;
  c.hashBits = config->hash_bits == 0 ? 64 : config->hash_bits;
  std::unique_ptr<PagePool> pool;
  if (Status s = PagePool::create(c, pool); !s)
    return report(s);
  *out = new pa_pool{std::move(pool)};
  return PA_SUCCESS;
}

PA_POOL_EXPORT void pa_pool_destroy(pa_pool *pool) { delete pool; }

PA_POOL_EXPORT int pa_pool_add_sequence(pa_pool *pool, const int32_t *tokens,
                                        int64_t n, int64_t *seq_id,
                                        int64_t *cached_tokens, int32_t *slots,
                                        int64_t slots_capacity) {
  if (!pool || !seq_id || !cached_tokens)
    return error("pa_pool_add_sequence: pool, seq_id or cached_tokens is "
                 "null");
  if (n > 0 && (slots_capacity < n || !slots))
    return error("pa_pool_add_sequence: slots holds ", slots_capacity,
                 " entries, ", n, " needed (n)");
  std::vector<int32_t> out;
  PagePool::SeqId id = 0;
  int64_t cached = 0;
  if (Status s = pool->pool->addSequence(tokens, n, id, cached, out); !s)
    return report(s);
  std::copy(out.begin(), out.end(), slots);
  *seq_id = id;
  *cached_tokens = cached;
  return PA_SUCCESS;
}

PA_POOL_EXPORT int pa_pool_append(pa_pool *pool, const int64_t *seq_ids,
                                  const int64_t *counts, int64_t batch,
                                  const int32_t *tokens, int32_t *slots,
                                  int64_t slots_capacity, pa_page_copy *copies,
                                  int64_t copies_capacity,
                                  int64_t *num_copies) {
  if (!pool || !num_copies)
    return error("pa_pool_append: pool or num_copies is null");
  if (batch > 0 && (!seq_ids || !counts))
    return error("pa_pool_append: seq_ids or counts is null but batch = ",
                 batch);
  int64_t total = 0;
  for (int64_t i = 0; i < batch; ++i) {
    if (counts[i] < 0)
      return error("pa_pool_append: counts[", i, "] = ", counts[i],
                   " is negative");
    if (counts[i] > std::numeric_limits<int32_t>::max())
      return error("pa_pool_append: counts[", i, "] = ", counts[i],
                   " exceeds INT32_MAX");
    total += counts[i];
  }
  if (total > 0 && (slots_capacity < total || !slots))
    return error("pa_pool_append: slots holds ", slots_capacity, " entries, ",
                 total, " needed (sum of counts)");
  if (batch > 0 && (copies_capacity < batch || !copies))
    return error("pa_pool_append: copies holds ", copies_capacity,
                 " entries, batch = ", batch, " needed");
  std::vector<int32_t> s;
  std::vector<PageCopy> c;
  if (Status st = pool->pool->append(asIds(seq_ids), counts, batch, tokens, s,
                                     c);
      !st)
    return report(st);
  std::copy(s.begin(), s.end(), slots);
  for (size_t i = 0; i < c.size(); ++i)
    copies[i] = pa_page_copy{c[i].src, c[i].dst, c[i].numTokens};
  *num_copies = static_cast<int64_t>(c.size());
  return PA_SUCCESS;
}

PA_POOL_EXPORT int pa_pool_fork(pa_pool *pool, int64_t parent,
                                int64_t *child) {
  if (!pool || !child)
    return error("pa_pool_fork: pool or child is null");
  PagePool::SeqId id = 0;
  if (Status s = pool->pool->fork(parent, id); !s)
    return report(s);
  *child = id;
  return PA_SUCCESS;
}

PA_POOL_EXPORT int pa_pool_free_sequence(pa_pool *pool, int64_t seq_id) {
  if (!pool)
    return error("pa_pool_free_sequence: pool is null");
  return report(pool->pool->freeSequence(seq_id));
}

PA_POOL_EXPORT int pa_pool_sequence_info(const pa_pool *pool, int64_t seq_id,
                                         int64_t *length,
                                         int64_t *num_pages) {
  if (!pool || !length || !num_pages)
    return error("pa_pool_sequence_info: pool, length or num_pages is null");
  const std::vector<int32_t> *pages = nullptr;
  int64_t len = 0;
  if (Status s = pool->pool->sequencePages(seq_id, pages, len); !s)
    return report(fail("pa_pool_sequence_info: ", s.message));
  *length = len;
  *num_pages = static_cast<int64_t>(pages->size());
  return PA_SUCCESS;
}

PA_POOL_EXPORT int pa_pool_sequence_pages(const pa_pool *pool, int64_t seq_id,
                                          int32_t *pages, int64_t capacity) {
  if (!pool)
    return error("pa_pool_sequence_pages: pool is null");
  const std::vector<int32_t> *p = nullptr;
  int64_t len = 0;
  if (Status s = pool->pool->sequencePages(seq_id, p, len); !s)
    return report(fail("pa_pool_sequence_pages: ", s.message));
  const int64_t n = static_cast<int64_t>(p->size());
  if (n > capacity || (n > 0 && !pages))
    return error("pa_pool_sequence_pages: sequence ", seq_id, " has ", n,
                 " pages, the array holds ", capacity);
  std::copy(p->begin(), p->end(), pages);
  return PA_SUCCESS;
}

PA_POOL_EXPORT int pa_pool_ref_count(const pa_pool *pool, int32_t page,
                                     int32_t *out) {
  if (!pool || !out)
    return error("pa_pool_ref_count: pool or out is null");
  int32_t r = pool->pool->refCount(page);
  if (r < 0)
    return error("pa_pool_ref_count: page ", page, " not in [0, ",
                 pool->pool->config().numPages, ")");
  *out = r;
  return PA_SUCCESS;
}

PA_POOL_EXPORT int pa_pool_get_stats(const pa_pool *pool, pa_pool_stats *out) {
  if (!pool || !out)
    return error("pa_pool_get_stats: pool or out is null");
  PagePoolStats s = pool->pool->stats();
  *out = pa_pool_stats{s.numPages,     s.freePages,   s.cachedFreePages,
                       s.usedPages,    s.numSequences, s.cachedPages,
                       s.hitPages,     s.evictions,   s.cowCopies,
                       s.metadataBytes};
  return PA_SUCCESS;
}

PA_POOL_EXPORT int pa_pool_evict_all(pa_pool *pool, int64_t *evicted) {
  if (!pool)
    return error("pa_pool_evict_all: pool is null");
  int64_t n = pool->pool->evictAllCached();
  if (evicted)
    *evicted = n;
  return PA_SUCCESS;
}

PA_POOL_EXPORT int pa_pool_check(const pa_pool *pool) {
  if (!pool)
    return error("pa_pool_check: pool is null");
  return report(pool->pool->checkInvariants());
}

//===----------------------------------------------------------------------===//
// Batch tables
//===----------------------------------------------------------------------===//

PA_POOL_EXPORT int pa_pool_table_sizes(const pa_pool *pool,
                                       const int64_t *seq_ids, int64_t batch,
                                       int64_t *nnz, int64_t *max_pages) {
  if (!pool || !nnz || !max_pages)
    return error("pa_pool_table_sizes: pool, nnz or max_pages is null");
  if (batch < 0 || (batch > 0 && !seq_ids))
    return error("pa_pool_table_sizes: batch = ", batch,
                 " with seq_ids ", seq_ids ? "set" : "null");
  int64_t total = 0, most = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<int32_t> *p = nullptr;
    int64_t len = 0;
    if (Status s = pool->pool->sequencePages(seq_ids[b], p, len); !s)
      return error("pa_pool_table_sizes: seq_ids[", b, "]: ", s.message);
    total += static_cast<int64_t>(p->size());
    most = std::max(most, static_cast<int64_t>(p->size()));
  }
  *nnz = total;
  *max_pages = most;
  return PA_SUCCESS;
}

PA_POOL_EXPORT int pa_pool_csr_table(const pa_pool *pool,
                                     const int64_t *seq_ids, int64_t batch,
                                     int32_t *indptr, int32_t *indices,
                                     int64_t indices_capacity,
                                     int32_t *last_page_len) {
  if (!pool)
    return error("pa_pool_csr_table: pool is null");
  CsrTable t;
  if (Status s = buildCsrTable(*pool->pool, asIds(seq_ids), batch, t); !s)
    return report(s);
  return writeCsr("pa_pool_csr_table", t, indptr, indices, indices_capacity,
                  last_page_len);
}

/// Pool tables of a caller-sized width: width 0 means "0 columns" here,
/// which fits only when no sequence has pages.
static Status checkCallerWidth(const pa_pool *pool, const int64_t *seq_ids,
                               int64_t batch, int64_t width) {
  if (width != 0)
    return Status::success();
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<int32_t> *p = nullptr;
    int64_t len = 0;
    if (pool->pool->sequencePages(seq_ids[b], p, len) && !p->empty())
      return fail("width = 0 but seq_ids[", b, "] has ", p->size(), " pages");
  }
  return Status::success();
}

PA_POOL_EXPORT int pa_pool_vllm_table(const pa_pool *pool,
                                      const int64_t *seq_ids, int64_t batch,
                                      int64_t width, int32_t pad,
                                      int32_t *block_tables,
                                      int32_t *seq_lens) {
  if (!pool)
    return error("pa_pool_vllm_table: pool is null");
  if (batch > 0 && seq_ids)
    if (Status s = checkCallerWidth(pool, seq_ids, batch, width); !s)
      return error("pa_pool_vllm_table: ", s.message);
  VllmTable t;
  if (Status s = buildVllmTable(*pool->pool, asIds(seq_ids), batch,
                                width, pad, t);
      !s)
    return report(s);
  return writePadded("pa_pool_vllm_table", t.blockTables, t.seqLens,
                     block_tables, seq_lens);
}

PA_POOL_EXPORT int pa_pool_tt_table(const pa_pool *pool,
                                    const int64_t *seq_ids, int64_t batch,
                                    int64_t width, int32_t pad,
                                    int32_t *page_table, int32_t *cur_pos) {
  if (!pool)
    return error("pa_pool_tt_table: pool is null");
  if (batch > 0 && seq_ids)
    if (Status s = checkCallerWidth(pool, seq_ids, batch, width); !s)
      return error("pa_pool_tt_table: ", s.message);
  TtTable t;
  if (Status s = buildTtTable(*pool->pool, asIds(seq_ids), batch,
                              width, pad, t);
      !s)
    return report(s);
  return writePadded("pa_pool_tt_table", t.pageTable, t.curPos, page_table,
                     cur_pos);
}

//===----------------------------------------------------------------------===//
// Converters
//===----------------------------------------------------------------------===//

namespace {
/// A CSR input of `batch` requests: its indptr has batch + 1 entries, so
/// batch + 1 must not overflow (checked before it is computed; batch < 0 is
/// reported by the converter).
Status checkCsrBatch(const char *fn, int64_t batch) {
  if (batch == std::numeric_limits<int64_t>::max())
    return fail(fn, ": batch = ", batch, " is too large (batch + 1, the "
                "entries of indptr, overflows int64)");
  return Status::success();
}

/// A padded input [batch, width]: width <= INT32_MAX and batch * width
/// representable, checked before batch * width is computed (negative
/// values are reported by the converter).
Status checkPaddedDims(const char *fn, int64_t batch, int64_t width) {
  if (width > std::numeric_limits<int32_t>::max())
    return fail(fn, ": width = ", width, " exceeds INT32_MAX");
  if (batch > 0 && width > 0 &&
      batch > std::numeric_limits<int64_t>::max() / width)
    return fail(fn, ": batch * width = ", batch, " * ", width,
                " overflows int64");
  return Status::success();
}

/// Padded outputs of a CSR input: width 0 with pages is rejected (the
/// caller's buffer has batch * width entries).
Status checkCsrWidth(const char *fn, const int32_t *indptr, int64_t batch,
                     int64_t width) {
  if (width != 0 || batch <= 0 || !indptr)
    return Status::success();
  for (int64_t b = 0; b < batch; ++b)
    if (indptr[b + 1] > indptr[b])
      return fail(fn, ": width = 0 but request ", b, " has pages");
  return Status::success();
}
} // namespace

PA_POOL_EXPORT int pa_csr_to_vllm(const int32_t *indptr,
                                  const int32_t *indices, int64_t num_indices,
                                  const int32_t *last_page_len, int64_t batch,
                                  int64_t page_size, int64_t num_pages,
                                  int64_t width, int32_t pad,
                                  int32_t *block_tables, int32_t *seq_lens) {
  if (Status s = checkCsrBatch("pa_csr_to_vllm", batch); !s)
    return report(s);
  VllmTable t;
  if (Status s = csrToVllm(I32Span(indptr, batch >= 0 ? batch + 1 : 0),
                           I32Span(indices, num_indices),
                           I32Span(last_page_len, std::max<int64_t>(batch, 0)),
                           batch, page_size, num_pages, width, pad, t);
      !s)
    return report(s);
  if (Status s = checkCsrWidth("csr_to_vllm", indptr, batch, width); !s)
    return report(s);
  return writePadded("pa_csr_to_vllm", t.blockTables, t.seqLens, block_tables,
                     seq_lens);
}

PA_POOL_EXPORT int
pa_shard_pages(const int32_t *indptr, const int32_t *indices,
               int64_t num_indices, const int32_t *last_page_len,
               int64_t batch, int64_t page_size, int64_t num_pages,
               int64_t devices, int64_t device, int round_robin,
               int32_t *out_indptr, int32_t *out_indices,
               int64_t indices_capacity, int32_t *out_last_page_len) {
  if (Status s = checkCsrBatch("pa_shard_pages", batch); !s)
    return report(s);
  CsrTable t;
  if (Status s = shardPages(
          I32Span(indptr, batch >= 0 ? batch + 1 : 0),
          I32Span(indices, num_indices),
          I32Span(last_page_len, std::max<int64_t>(batch, 0)), batch,
          page_size, num_pages, devices, device, round_robin != 0, t);
      !s)
    return report(s);
  return writeCsr("pa_shard_pages", t, out_indptr, out_indices,
                  indices_capacity, out_last_page_len);
}

PA_POOL_EXPORT int pa_vllm_to_csr(const int32_t *block_tables,
                                  const int32_t *seq_lens, int64_t batch,
                                  int64_t width, int64_t page_size,
                                  int64_t num_pages, int32_t *indptr,
                                  int32_t *indices, int64_t indices_capacity,
                                  int32_t *last_page_len) {
  CsrTable t;
  if (Status s = checkPaddedDims("pa_vllm_to_csr", batch, width); !s)
    return report(s);
  const int64_t n = batch > 0 && width > 0 ? batch * width : 0;
  if (Status s = vllmToCsr(I32Span(block_tables, n),
                           I32Span(seq_lens, std::max<int64_t>(batch, 0)),
                           batch, width, page_size, num_pages, t);
      !s)
    return report(s);
  return writeCsr("pa_vllm_to_csr", t, indptr, indices, indices_capacity,
                  last_page_len);
}

PA_POOL_EXPORT int pa_csr_to_tt(const int32_t *indptr, const int32_t *indices,
                                int64_t num_indices,
                                const int32_t *last_page_len, int64_t batch,
                                int64_t page_size, int64_t num_pages,
                                int64_t width, int32_t pad,
                                int32_t *page_table, int32_t *cur_pos) {
  if (Status s = checkCsrBatch("pa_csr_to_tt", batch); !s)
    return report(s);
  TtTable t;
  if (Status s = csrToTt(I32Span(indptr, batch >= 0 ? batch + 1 : 0),
                         I32Span(indices, num_indices),
                         I32Span(last_page_len, std::max<int64_t>(batch, 0)),
                         batch, page_size, num_pages, width, pad, t);
      !s)
    return report(s);
  if (Status s = checkCsrWidth("csr_to_tt", indptr, batch, width); !s)
    return report(s);
  return writePadded("pa_csr_to_tt", t.pageTable, t.curPos, page_table,
                     cur_pos);
}

PA_POOL_EXPORT int pa_tt_to_csr(const int32_t *page_table,
                                const int32_t *cur_pos, int64_t batch,
                                int64_t width, int64_t page_size,
                                int64_t num_pages, int32_t *indptr,
                                int32_t *indices, int64_t indices_capacity,
                                int32_t *last_page_len) {
  CsrTable t;
  if (Status s = checkPaddedDims("pa_tt_to_csr", batch, width); !s)
    return report(s);
  const int64_t n = batch > 0 && width > 0 ? batch * width : 0;
  if (Status s = ttToCsr(I32Span(page_table, n),
                         I32Span(cur_pos, std::max<int64_t>(batch, 0)), batch,
                         width, page_size, num_pages, t);
      !s)
    return report(s);
  return writeCsr("pa_tt_to_csr", t, indptr, indices, indices_capacity,
                  last_page_len);
}

PA_POOL_EXPORT int pa_vllm_to_tt(const int32_t *block_tables,
                                 const int32_t *seq_lens, int64_t batch,
                                 int64_t width, int64_t page_size,
                                 int64_t num_pages, int32_t *page_table,
                                 int32_t *cur_pos) {
  TtTable t;
  if (Status s = checkPaddedDims("pa_vllm_to_tt", batch, width); !s)
    return report(s);
  const int64_t n = batch > 0 && width > 0 ? batch * width : 0;
  if (Status s = vllmToTt(I32Span(block_tables, n),
                          I32Span(seq_lens, std::max<int64_t>(batch, 0)),
                          batch, width, page_size, num_pages, t);
      !s)
    return report(s);
  return writePadded("pa_vllm_to_tt", t.pageTable, t.curPos, page_table,
                     cur_pos);
}

PA_POOL_EXPORT int pa_tt_to_vllm(const int32_t *page_table,
                                 const int32_t *cur_pos, int64_t batch,
                                 int64_t width, int64_t page_size,
                                 int64_t num_pages, int32_t *block_tables,
                                 int32_t *seq_lens) {
  VllmTable t;
  if (Status s = checkPaddedDims("pa_tt_to_vllm", batch, width); !s)
    return report(s);
  const int64_t n = batch > 0 && width > 0 ? batch * width : 0;
  if (Status s = ttToVllm(I32Span(page_table, n),
                          I32Span(cur_pos, std::max<int64_t>(batch, 0)),
                          batch, width, page_size, num_pages, t);
      !s)
    return report(s);
  return writePadded("pa_tt_to_vllm", t.blockTables, t.seqLens, block_tables,
                     seq_lens);
}

//===----------------------------------------------------------------------===//
// Automatic cascade
//===----------------------------------------------------------------------===//

PA_POOL_EXPORT int pa_auto_cascade_build(
    const int32_t *indptr, const int32_t *indices, int64_t num_indices,
    const int32_t *last_page_len, int64_t batch, int64_t page_size,
    int64_t num_pages, const int32_t *qo_lens,
    const pa_auto_cascade_options *options, pa_auto_cascade **out) {
  if (!out)
    return error("pa_auto_cascade_build: out is null");
  if (Status s = checkCsrBatch("pa_auto_cascade_build", batch); !s)
    return report(s);
  AutoCascade c;
  if (Status s = buildAutoCascade(
          I32Span(indptr, batch >= 0 ? batch + 1 : 0),
          I32Span(indices, num_indices),
          I32Span(last_page_len, std::max<int64_t>(batch, 0)), batch,
          page_size, num_pages, qo_lens, cascadeOptions(options), c);
      !s)
    return report(s);
  *out = new pa_auto_cascade{std::move(c)};
  return PA_SUCCESS;
}

PA_POOL_EXPORT int pa_pool_auto_cascade(const pa_pool *pool,
                                        const int64_t *seq_ids, int64_t batch,
                                        const int32_t *qo_lens,
                                        const pa_auto_cascade_options *options,
                                        pa_auto_cascade **out) {
  if (!pool || !out)
    return error("pa_pool_auto_cascade: pool or out is null");
  CsrTable t;
  if (Status s = buildCsrTable(*pool->pool, asIds(seq_ids), batch, t); !s)
    return report(s);
  AutoCascade c;
  if (Status s = buildAutoCascade(t.indptr, t.indices, t.lastPageLen, batch,
                                  pool->pool->config().pageSize,
                                  pool->pool->config().numPages, qo_lens,
                                  cascadeOptions(options), c);
      !s)
    return report(s);
  *out = new pa_auto_cascade{std::move(c)};
  return PA_SUCCESS;
}

PA_POOL_EXPORT int pa_auto_cascade_get_info(const pa_auto_cascade *cascade,
                                            pa_auto_cascade_info *out) {
  if (!cascade || !out)
    return error("pa_auto_cascade_get_info: cascade or out is null");
  const AutoCascade &c = cascade->cascade;
  *out = pa_auto_cascade_info{static_cast<int64_t>(c.levels.size()),
                              c.numQueryRows,
                              static_cast<int64_t>(c.order.size()),
                              c.cascadePages, c.flatPages};
  return PA_SUCCESS;
}

PA_POOL_EXPORT int pa_auto_cascade_get_order(const pa_auto_cascade *cascade,
                                             const int32_t **order) {
  if (!cascade || !order)
    return error("pa_auto_cascade_get_order: cascade or order is null");
  *order = cascade->cascade.order.data();
  return PA_SUCCESS;
}

PA_POOL_EXPORT int pa_auto_cascade_get_level(const pa_auto_cascade *cascade,
                                             int64_t level,
                                             pa_auto_cascade_level *out) {
  if (!cascade || !out)
    return error("pa_auto_cascade_get_level: cascade or out is null");
  const AutoCascade &c = cascade->cascade;
  if (level < 0 || level >= static_cast<int64_t>(c.levels.size()))
    return error("pa_auto_cascade_get_level: level ", level, " not in [0, ",
                 c.levels.size(), ")");
  const CascadeLevel &l = c.levels[level];
  *out = pa_auto_cascade_level{l.qoIndptr.data(),
                               l.table.indptr.data(),
                               l.table.indices.data(),
                               l.table.lastPageLen.data(),
                               l.table.batch(),
                               static_cast<int64_t>(l.table.indices.size())};
  return PA_SUCCESS;
}

PA_POOL_EXPORT void pa_auto_cascade_free(pa_auto_cascade *cascade) {
  delete cascade;
}
