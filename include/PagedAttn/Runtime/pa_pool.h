/*===- pa_pool.h - C API of the PagedAttn page pool ---------------*- C -*-===//
 *
 * Part of the PagedAttn project.
 *
 *===----------------------------------------------------------------------===//
 *
 * The host side of a paged KV cache (docs/PagePool.md): a pool over the
 * pages of one cache allocation that builds the page tables the runtime
 * (pa_runtime.h) and the CPU bundles consume.
 *   - sequences: add (with automatic prefix caching of full pages), append
 *     (pages allocated as needed; returns pa.append_kv_slots' slot mapping,
 *     slot = page * page_size + offset), fork (pages shared, counted),
 *     copy-on-write of a shared partly filled last page (the pool EMITS the
 *     copies: the caller runs them before writing the new tokens), free;
 *   - batch tables: CSR (kv_indptr, kv_indices, kv_last_page_len, as
 *     pa_decode_plan / pa_decode_run take), vLLM (block_tables padded +
 *     seq_lens), tt-metal (page_table + cur_pos), and checked converters;
 *   - the automatic cascade: the levels of pa_cascade_plan / pa_cascade_run
 *     for a batch whose requests share page prefixes.
 *
 * libpa_pool.so (build/lib/Runtime/) exports this API; it needs neither
 * CUDA nor a GPU.
 *
 * Conventions (those of pa_runtime.h):
 *   - Every function that can fail returns PA_SUCCESS (0) or PA_ERROR (1),
 *     or PA_POOL_FULL (2) when the pool lacks free pages for the request;
 *     pa_pool_last_error() then holds the message (per thread). A failed
 *     call leaves the pool unchanged (all or nothing).
 *   - Output arrays are caller-allocated with the capacity passed next to
 *     them; a capacity that is too small is an error (checked before the
 *     pool changes).
 *   - A pool is not thread-safe: one thread at a time per pool.
 *
 *===----------------------------------------------------------------------===*/

#ifndef PAGEDATTN_RUNTIME_PA_POOL_H
#define PAGEDATTN_RUNTIME_PA_POOL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Return codes (PA_SUCCESS / PA_ERROR as in pa_runtime.h). */
#ifndef PA_SUCCESS
#define PA_SUCCESS 0
#endif
#ifndef PA_ERROR
#define PA_ERROR 1
#endif
/** The pool has too few free + evictable pages; nothing changed. A
 *  scheduler preempts or waits on this code; PA_ERROR means bad input. */
#define PA_POOL_FULL 2

/** The message of the calling thread's last pool failure ("" if none). */
const char *pa_pool_last_error(void);

/** A pool. Opaque. */
typedef struct pa_pool pa_pool;

typedef struct pa_pool_config {
  int64_t num_pages; /**< pages of the cache allocation (>= 1) */
  int64_t page_size; /**< tokens per page; num_pages * page_size <= INT32_MAX */
  /** Nonzero: automatic prefix caching (token ids required on add and
   *  append). */
  int prefix_caching;
  /** Bits of the chained page hash kept: 0 = 64 (production); tests use a
   *  few bits to force collisions (which cost hits, never correctness). */
  int hash_bits;
} pa_pool_config;

int pa_pool_create(const pa_pool_config *config, pa_pool **out);
/** NULL is ignored. */
void pa_pool_destroy(pa_pool *pool);

/** Copy the first num_tokens slots of page src into page dst (K and V, every
 *  layer and head): copy-on-write, to run before the tokens are written. */
typedef struct pa_page_copy {
  int32_t src, dst, num_tokens;
} pa_page_copy;

/** A new sequence of the n tokens `tokens`. With prefix caching the longest
 *  cached run of the prompt's leading full pages is shared, but at most
 *  floor((n - 1) / page_size) pages, so at least the last token is always
 *  computed (the caller needs its logits; as vLLM): a fully cached prompt of
 *  k * page_size tokens shares k - 1 pages and recomputes the last page.
 *  *cached_tokens (a multiple of page_size, < n when n > 0) tokens need no
 *  K/V write;
 *  slots[0 .. n - *cached_tokens) get the slots of the others (tokens
 *  *cached_tokens .. n-1, in order). slots_capacity >= n is required.
 *  PA_POOL_FULL when the pages do not fit. */
int pa_pool_add_sequence(pa_pool *pool, const int32_t *tokens, int64_t n,
                         int64_t *seq_id, int64_t *cached_tokens,
                         int32_t *slots, int64_t slots_capacity);

/** Appends counts[i] tokens to sequence seq_ids[i] (distinct, live) for
 *  i < batch; tokens: sum(counts) ids in batch order (may be NULL without
 *  prefix caching). slots[sum(counts)] gets the slot of every token, in the
 *  same order (slots_capacity >= sum(counts)); copies[*num_copies] the
 *  copy-on-write copies to run first (copies_capacity >= batch). All or
 *  nothing; PA_POOL_FULL when the pages do not fit. */
int pa_pool_append(pa_pool *pool, const int64_t *seq_ids,
                   const int64_t *counts, int64_t batch,
                   const int32_t *tokens, int32_t *slots,
                   int64_t slots_capacity, pa_page_copy *copies,
                   int64_t copies_capacity, int64_t *num_copies);

/** A new sequence sharing every page of `parent` (counts go up). */
int pa_pool_fork(pa_pool *pool, int64_t parent, int64_t *child);

/** Drops a sequence: its pages' counts go down; at 0 a page returns to the
 *  free list, or (a cached full page) to the evictable LRU list. */
int pa_pool_free_sequence(pa_pool *pool, int64_t seq_id);

/** Length (tokens) and page count of a live sequence. */
int pa_pool_sequence_info(const pa_pool *pool, int64_t seq_id,
                          int64_t *length, int64_t *num_pages);
/** Its page ids (capacity >= its page count). */
int pa_pool_sequence_pages(const pa_pool *pool, int64_t seq_id,
                           int32_t *pages, int64_t capacity);

/** Reference count of a page (0: free or evictable). */
int pa_pool_ref_count(const pa_pool *pool, int32_t page, int32_t *out);

typedef struct pa_pool_stats {
  int64_t num_pages, free_pages;
  int64_t cached_free_pages; /**< unreferenced cached pages (evictable) */
  int64_t used_pages;        /**< referenced by a sequence */
  int64_t num_sequences;
  int64_t cached_pages;      /**< registered in the prefix cache */
  int64_t hit_pages, evictions, cow_copies; /**< cumulative */
  int64_t metadata_bytes;    /**< host bytes of the pool's metadata */
} pa_pool_stats;

int pa_pool_get_stats(const pa_pool *pool, pa_pool_stats *out);

/** Evicts every unreferenced cached page; *evicted (may be NULL) = how many. */
int pa_pool_evict_all(pa_pool *pool, int64_t *evicted);

/** Checks every invariant of the pool (reference counts = sequences naming
 *  each page, no page leaked or listed twice, prefix-cache index
 *  consistent). O(pages + tokens); PA_ERROR names the broken one. */
int pa_pool_check(const pa_pool *pool);

/* ---- Batch tables of pool sequences (in the order of seq_ids) ---------- */

/** Sizes of the tables of a batch: *nnz = total pages (the CSR indices),
 *  *max_pages = the largest page count (the smallest padded width). */
int pa_pool_table_sizes(const pa_pool *pool, const int64_t *seq_ids,
                        int64_t batch, int64_t *nnz, int64_t *max_pages);

/** CSR: indptr[batch + 1], indices[nnz] (capacity), last_page_len[batch]
 *  (in [1, P]; 0 for a sequence without tokens). */
int pa_pool_csr_table(const pa_pool *pool, const int64_t *seq_ids,
                      int64_t batch, int32_t *indptr, int32_t *indices,
                      int64_t indices_capacity, int32_t *last_page_len);

/** vLLM: block_tables[batch * width] (row b: its pages, then `pad`),
 *  seq_lens[batch]. width >= max_pages. */
int pa_pool_vllm_table(const pa_pool *pool, const int64_t *seq_ids,
                       int64_t batch, int64_t width, int32_t pad,
                       int32_t *block_tables, int32_t *seq_lens);

/** tt-metal: page_table[batch * width] (row b: its pages, then `pad`),
 *  cur_pos[batch] = seq_len - 1 (-1: no tokens). width >= max_pages. */
int pa_pool_tt_table(const pa_pool *pool, const int64_t *seq_ids,
                     int64_t batch, int64_t width, int32_t pad,
                     int32_t *page_table, int32_t *cur_pos);

/* ---- Checked converters between the three forms ------------------------
 * Each validates its whole input first (CSR: as pa_runtime.h's checked mode,
 * every kv_indices entry in [0, num_pages); padded forms: shapes, seq_lens
 * in [0, width * P] / cur_pos in [-1, width * P), the used entries of every
 * row in [0, num_pages); padding is not read) and writes nothing on error.
 * num_indices: entries of indices (>= indptr[batch]). CSR outputs: indptr
 * [batch + 1], indices (capacity >= total pages), last_page_len [batch].
 * Padded outputs: [batch * width] (+ [batch]); width >= the largest page
 * count. Sizes are checked before they are computed: width <= INT32_MAX,
 * batch * width within int64 (padded inputs), batch < INT64_MAX (CSR
 * inputs); cur_pos <= INT32_MAX - 1 (its length, cur_pos + 1, is an int32
 * seq_len). */
int pa_csr_to_vllm(const int32_t *indptr, const int32_t *indices,
                   int64_t num_indices, const int32_t *last_page_len,
                   int64_t batch, int64_t page_size, int64_t num_pages,
                   int64_t width, int32_t pad, int32_t *block_tables,
                   int32_t *seq_lens);
int pa_vllm_to_csr(const int32_t *block_tables, const int32_t *seq_lens,
                   int64_t batch, int64_t width, int64_t page_size,
                   int64_t num_pages, int32_t *indptr, int32_t *indices,
                   int64_t indices_capacity, int32_t *last_page_len);
int pa_csr_to_tt(const int32_t *indptr, const int32_t *indices,
                 int64_t num_indices, const int32_t *last_page_len,
                 int64_t batch, int64_t page_size, int64_t num_pages,
                 int64_t width, int32_t pad, int32_t *page_table,
                 int32_t *cur_pos);
int pa_tt_to_csr(const int32_t *page_table, const int32_t *cur_pos,
                 int64_t batch, int64_t width, int64_t page_size,
                 int64_t num_pages, int32_t *indptr, int32_t *indices,
                 int64_t indices_capacity, int32_t *last_page_len);
/** Padded to padded: same width; padding entries are copied as they are. */
int pa_vllm_to_tt(const int32_t *block_tables, const int32_t *seq_lens,
                  int64_t batch, int64_t width, int64_t page_size,
                  int64_t num_pages, int32_t *page_table, int32_t *cur_pos);
int pa_tt_to_vllm(const int32_t *page_table, const int32_t *cur_pos,
                  int64_t batch, int64_t width, int64_t page_size,
                  int64_t num_pages, int32_t *block_tables,
                  int32_t *seq_lens);

/* ---- Context parallelism ----------------------------------------------- */

/** Device `device`'s share of a CSR page table sharded over `devices` GPUs
 *  (docs/ContextParallel.md; pa.shard_pages of docs/Semantics.md section
 *  14): of request b's n pages it owns pages j in [floor(n d / N),
 *  floor(n (d + 1) / N)) (contiguous, round_robin = 0) or those with j mod
 *  N = d (round_robin != 0), listed in request and page order in indices
 *  (capacity indices_capacity >= their count, at most the input's);
 *  last_page_len[b] is the request's own if the device owns its last page,
 *  else page_size. The entries are the input's page ids: where each
 *  device stores them is the caller's (pa_cp_decode_run reads the cache
 *  given for each device). Validates the input as the converters above do
 *  and writes nothing on error. */
int pa_shard_pages(const int32_t *indptr, const int32_t *indices,
                   int64_t num_indices, const int32_t *last_page_len,
                   int64_t batch, int64_t page_size, int64_t num_pages,
                   int64_t devices, int64_t device, int round_robin,
                   int32_t *out_indptr, int32_t *out_indices,
                   int64_t indices_capacity, int32_t *out_last_page_len);

/* ---- Automatic cascade ------------------------------------------------- */

/** Options; zeros mean the defaults (2 requests, 1 page, 8 levels). */
typedef struct pa_auto_cascade_options {
  int64_t min_share_requests; /**< a shared level needs >= this many (>= 2) */
  int64_t min_share_pages;    /**< ... and >= this many pages (>= 1) */
  int64_t max_levels;         /**< levels in all, >= 1 (1: plain decode) */
} pa_auto_cascade_options;

/** The levels of an automatic cascade. Opaque. */
typedef struct pa_auto_cascade pa_auto_cascade;

/** Finds the page prefixes that several requests of a CSR batch share (a
 *  trie over their page lists) and builds the levels of a cascade: level l
 *  < L-1 holds shared prefixes (a segment per group of requests sharing it,
 *  its rows all those requests' query rows), level L-1 one segment per
 *  request over its remaining pages. qo_lens[batch]: query rows per
 *  request, at its end (NULL: 1 each, decode). Only full pages wholly
 *  before a request's queries are shared. The cascade's rows are in the
 *  order pa_auto_cascade_order gives (requests sharing a prefix must be
 *  adjacent; the order keeps the input order whenever they already are):
 *  q's rows must be in that order, and o comes back in it. */
int pa_auto_cascade_build(const int32_t *indptr, const int32_t *indices,
                          int64_t num_indices, const int32_t *last_page_len,
                          int64_t batch, int64_t page_size, int64_t num_pages,
                          const int32_t *qo_lens,
                          const pa_auto_cascade_options *options,
                          pa_auto_cascade **out);

/** The same for pool sequences (their CSR table, pa_pool_csr_table). */
int pa_pool_auto_cascade(const pa_pool *pool, const int64_t *seq_ids,
                         int64_t batch, const int32_t *qo_lens,
                         const pa_auto_cascade_options *options,
                         pa_auto_cascade **out);

typedef struct pa_auto_cascade_info {
  int64_t num_levels;
  int64_t num_query_rows;
  int64_t batch;          /**< requests (= segments of the last level) */
  int64_t cascade_pages;  /**< pages the levels read (sum of nnz) */
  int64_t flat_pages;     /**< pages of the plain tables */
} pa_auto_cascade_info;

int pa_auto_cascade_get_info(const pa_auto_cascade *cascade,
                             pa_auto_cascade_info *out);

/** Cascade request r is input request order[r] (*order: batch entries,
 *  valid until pa_auto_cascade_free). */
int pa_auto_cascade_get_order(const pa_auto_cascade *cascade,
                              const int32_t **order);

/** One level's HOST arrays, valid until pa_auto_cascade_free: the fields of
 *  pa_cascade_level (qo_indptr, kv_indptr, kv_last_page_len, batch) plus
 *  kv_indices and nnz (= kv_indptr[batch]) for pa_cascade_level_args. */
typedef struct pa_auto_cascade_level {
  const int32_t *qo_indptr;        /**< [batch + 1], ends at num_query_rows */
  const int32_t *kv_indptr;        /**< [batch + 1] */
  const int32_t *kv_indices;       /**< [nnz] */
  const int32_t *kv_last_page_len; /**< [batch] */
  int64_t batch, nnz;
} pa_auto_cascade_level;

int pa_auto_cascade_get_level(const pa_auto_cascade *cascade, int64_t level,
                              pa_auto_cascade_level *out);

/** NULL is ignored. */
void pa_auto_cascade_free(pa_auto_cascade *cascade);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PAGEDATTN_RUNTIME_PA_POOL_H */
