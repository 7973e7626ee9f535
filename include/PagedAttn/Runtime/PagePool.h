//===- PagePool.h - host-side paged KV cache manager ------------*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The host component that builds the page tables the runtime consumes
// (docs/PagePool.md): a pool of the `numPages` pages of one paged cache
// allocation, with
//   * sequences as lists of pages plus a length, reference-counted pages,
//     fork (shares every page) and copy-on-write of a shared, partly filled
//     last page (the pool emits the page copies; the caller runs them);
//   * appends that allocate pages as needed and return the slot mapping of
//     pa.append_kv_slots (slot = page * P + offset), all-or-nothing;
//   * automatic prefix caching (vLLM style): a full page is identified by a
//     64-bit hash of its token ids chained with the previous page's hash,
//     verified exactly (tokens + the previous page's identity) so that a hash
//     collision never shares wrong data; unreferenced cached pages stay until
//     the pool needs them and are then evicted least recently used;
//   * batch tables in three forms (CSR as pa_runtime.h takes them, vLLM's
//     padded block_tables + seq_lens, tt-metal's page_table + cur_pos) and
//     checked converters between them;
//   * the automatic cascade: the shared page prefixes of a batch (a trie over
//     its page lists) as the levels pa_cascade_plan / pa.cascade take.
//
// Pure C++ (no MLIR, no CUDA), -fno-exceptions: failures are Status values
// and leave the pool unchanged. Not thread-safe: one pool, one thread at a
// time.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_RUNTIME_PAGEPOOL_H
#define PAGEDATTN_RUNTIME_PAGEPOOL_H

#include "PagedAttn/Runtime/Planner.h"
#include "PagedAttn/Runtime/Status.h"

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace pa::rt {

/// Copy the first `numTokens` slots of page `src` into page `dst` (every
/// layer, K and V, every head): the copy-on-write of a shared, partly filled
/// page. The caller runs the copies before it writes the tokens of the
/// append that emitted them.
struct PageCopy {
  int32_t src = 0, dst = 0, numTokens = 0;
};

struct PagePoolConfig {
  /// Pages of the cache allocation; page ids are 0 .. numPages-1.
  int64_t numPages = 0;
  /// Tokens per page (P).
  int64_t pageSize = 0;
  /// Automatic prefix caching of full pages (needs token ids on append).
  bool prefixCaching = true;
  /// Bits of the chained page hash that are kept (1..64; 64 in production).
  /// Tests use a few bits to force collisions: a collision may lose a cache
  /// hit, never share wrong data.
  int hashBits = 64;
};

/// Counters of a pool.
struct PagePoolStats {
  int64_t numPages = 0;
  /// Pages on the free list (no content worth keeping).
  int64_t freePages = 0;
  /// Unreferenced pages kept by the prefix cache (evictable).
  int64_t cachedFreePages = 0;
  /// Pages referenced by at least one sequence.
  int64_t usedPages = 0;
  int64_t numSequences = 0;
  /// Full pages registered in the prefix cache (referenced or not).
  int64_t cachedPages = 0;
  /// Prefix-cache page hits, evictions, copy-on-write copies (cumulative).
  int64_t hitPages = 0, evictions = 0, cowCopies = 0;
  /// Bytes of host memory the pool's metadata occupies now (page records,
  /// free list, cached tokens, hash index; sequences excluded).
  int64_t metadataBytes = 0;
};

/// The pool. Create with PagePool::create().
class PagePool {
public:
  using SeqId = int64_t;

  /// True iff `s` is the "pool full" error of addSequence() / append() (too
  /// few free + evictable pages; the pool is unchanged), as opposed to bad
  /// input.
  static bool isFull(const Status &s);

  /// Checks numPages >= 1, pageSize >= 1, numPages * pageSize <= INT32_MAX
  /// (slots are int32), hashBits in [1, 64].
  static Status create(const PagePoolConfig &config,
                       std::unique_ptr<PagePool> &out);

  /// A new sequence holding the `n` tokens `tokens` (n >= 0; tokens may be
  /// null only when n == 0 or prefix caching is off). With prefix caching,
  /// the longest run of leading full pages of the prompt that is cached is
  /// shared, capped at floor((n - 1) / P) pages so that at least the last
  /// token is computed (its logits are needed; vLLM does the same): a fully
  /// cached prompt whose length is a multiple of P recomputes its last page
  /// (`cachedTokens`, a multiple of P, < n for n > 0); pages for the other
  /// tokens are allocated, and `slots` gets their n - cachedTokens slots
  /// (page * P + offset, tokens cachedTokens .. n-1: the K/V rows the caller
  /// computes and writes). Fails (pool unchanged) when the pages do not fit.
  Status addSequence(const int32_t *tokens, int64_t n, SeqId &id,
                     int64_t &cachedTokens, std::vector<int32_t> &slots);

  /// Appends counts[i] tokens to sequence ids[i] for i < batch (distinct
  /// live ids, counts >= 0); `tokens` holds sum(counts) token ids in batch
  /// order (null allowed without prefix caching). `slots` gets one slot per
  /// token, in the same order; `copies` the copy-on-write copies to run
  /// before writing them (a sequence appending into a partly filled last
  /// page that another sequence shares gets a fresh page with its tokens).
  /// All or nothing: if the pages do not fit, nothing changes and the error
  /// says how many pages were needed and available.
  Status append(const SeqId *ids, const int64_t *counts, int64_t batch,
                const int32_t *tokens, std::vector<int32_t> &slots,
                std::vector<PageCopy> &copies);

  /// A new sequence sharing every page of `parent` (reference counts up).
  Status fork(SeqId parent, SeqId &child);

  /// Drops sequence `id`: every page's count goes down; a page reaching 0
  /// returns to the free list, or, if it is in the prefix cache, to the
  /// evictable LRU list (the sequence's last page first, so tails are
  /// evicted before the prefixes they extend).
  Status freeSequence(SeqId id);

  /// Page ids and length of a live sequence.
  Status sequencePages(SeqId id, const std::vector<int32_t> *&pages,
                       int64_t &length) const;
  bool hasSequence(SeqId id) const { return seqs_.count(id) != 0; }
  /// Reference count of `page` (0 for free and evictable pages); -1 if out
  /// of range.
  int32_t refCount(int32_t page) const;
  /// Pages allocatable now: the free list plus the evictable cached pages.
  int64_t availablePages() const;
  PagePoolStats stats() const;
  const PagePoolConfig &config() const { return cfg_; }
  /// Live sequence ids, ascending.
  std::vector<SeqId> sequenceIds() const;
  /// The evictable pages in eviction order (least recently used first).
  std::vector<int32_t> lruOrder() const;

  /// Evicts every unreferenced cached page (they go to the free list);
  /// returns how many.
  int64_t evictAllCached();

  /// Full consistency check of the pool's invariants (reference counts equal
  /// the sequences naming each page, free/LRU lists disjoint and complete,
  /// hash index consistent). O(pages + tokens); for tests.
  Status checkInvariants() const;

  /// The chained hash of a full page: hash of `pageSize` token ids and the
  /// previous page's hash (0 for the first page), truncated to hashBits.
  uint64_t chainHash(uint64_t prevHash, const int32_t *pageTokens) const;

private:
  explicit PagePool(const PagePoolConfig &config);

  static constexpr int32_t kNone = -1;
  struct PageMeta {
    int32_t ref = 0;
    /// Links of the evictable LRU list (kNone at the ends / off the list).
    int32_t lruPrev = kNone, lruNext = kNone;
    /// 1: registered in the prefix cache (hash, uid, parentUid valid).
    uint8_t cached = 0, onLru = 0;
    uint64_t hash = 0;
    /// Identity of the cached content (never reused) and of the previous
    /// page's content (0 for the first page of a sequence).
    uint64_t uid = 0, parentUid = 0;
  };
  struct Sequence {
    std::vector<int32_t> pages;
    int64_t length = 0;
    /// Per full page j (prefix caching): its chained hash and content uid.
    std::vector<uint64_t> hashes, uids;
    /// Tokens of the partly filled last page (prefix caching).
    std::vector<int32_t> tail;
  };

  // PagePool.cpp
  int32_t takePage();
  void releasePage(int32_t page);
  void lruPushBack(int32_t page);
  void lruRemove(int32_t page);
  /// Appends n tokens (ids: prefix caching only) to `s`, copy-on-write of a
  /// shared partial last page first; the pages must be available.
  void appendTokens(Sequence &s, const int32_t *tokens, int64_t n,
                    std::vector<int32_t> &slots,
                    std::vector<PageCopy> &copies);

  // PrefixCache.cpp
  /// Cached page holding exactly `pageTokens` after content `parentUid`
  /// with chained hash `hash`, or kNone.
  int32_t lookup(uint64_t hash, uint64_t parentUid,
                 const int32_t *pageTokens) const;
  /// The sequence's page j just became full with `pageTokens`: record its
  /// hash and uid, and register the page unless that content is cached.
  void sealPage(Sequence &s, int64_t j, const int32_t *pageTokens);
  /// Drops a cached page from the index (eviction).
  void uncache(int32_t page);
  /// The cached `page` holds `pageTokens` but after content (parent uid)
  /// that is no longer cached: no lookup can reach it.
  bool isStale(int32_t page, const int32_t *pageTokens) const;
  /// Longest cached run of leading full pages of `tokens` (n tokens).
  void matchPrefix(const int32_t *tokens, int64_t n,
                   std::vector<int32_t> &pages) const;

  PagePoolConfig cfg_;
  uint64_t hashMask_ = ~uint64_t(0);
  std::vector<PageMeta> meta_;
  /// Tokens of cached pages: page p at [p*P, (p+1)*P) (prefix caching).
  std::vector<int32_t> pageTokens_;
  std::vector<int32_t> freeList_;
  int32_t lruHead_ = kNone, lruTail_ = kNone;
  int64_t lruSize_ = 0, cachedCount_ = 0;
  /// Chained hash -> cached page.
  std::unordered_map<uint64_t, int32_t> index_;
  /// Content uid -> the cached page holding it.
  std::unordered_map<uint64_t, int32_t> uidPage_;
  std::unordered_map<SeqId, Sequence> seqs_;
  SeqId nextSeq_ = 1;
  uint64_t nextUid_ = 1;
  int64_t hitPages_ = 0, evictions_ = 0, cowCopies_ = 0;
};

//===----------------------------------------------------------------------===//
// Batch tables (BatchTables.cpp)
//===----------------------------------------------------------------------===//

/// The CSR page table of pa_runtime.h: request b owns pages
/// indices[indptr[b] .. indptr[b+1]); last_page_len[b] in [1, P] when it owns
/// pages, 0 when it owns none.
struct CsrTable {
  std::vector<int32_t> indptr, indices, lastPageLen;
  int64_t batch() const {
    return indptr.empty() ? 0 : static_cast<int64_t>(indptr.size()) - 1;
  }
};

/// vLLM's form: block_tables [batch, width] row-major (row b's first
/// ceil(seq_lens[b] / P) entries are its pages, the rest is padding) and
/// seq_lens [batch].
struct VllmTable {
  std::vector<int32_t> blockTables, seqLens;
  int64_t batch = 0, width = 0;
};

/// tt-metal's form: page_table [batch, width] (per user a row of page ids,
/// padded) and cur_pos [batch], the position of each user's last token
/// (seq_len - 1; -1 for a user without tokens, which tt-metal skips).
struct TtTable {
  std::vector<int32_t> pageTable, curPos;
  int64_t batch = 0, width = 0;
};

/// The three tables of sequences `ids` of `pool` (in that order). `width`
/// of the padded forms: the largest page count when `width` is 0, else
/// `width` (an error if a sequence has more pages). Padding is `pad`.
Status buildCsrTable(const PagePool &pool, const PagePool::SeqId *ids,
                     int64_t batch, CsrTable &out);
Status buildVllmTable(const PagePool &pool, const PagePool::SeqId *ids,
                      int64_t batch, int64_t width, int32_t pad,
                      VllmTable &out);
Status buildTtTable(const PagePool &pool, const PagePool::SeqId *ids,
                    int64_t batch, int64_t width, int32_t pad, TtTable &out);

/// Checked converters. Every one validates its input first (the CSR side
/// with validatePageTable(); padded sides: shapes, lengths in [0, width*P]
/// (vLLM) / cur_pos in [-1, width*P), page ids of used entries in
/// [0, numPages)); padding entries are neither read nor checked. `width` 0
/// in csrTo*: the largest page count. Outputs are written only on success.
Status csrToVllm(I32Span indptr, I32Span indices, I32Span lastPageLen,
                 int64_t batch, int64_t pageSize, int64_t numPages,
                 int64_t width, int32_t pad, VllmTable &out);
Status vllmToCsr(I32Span blockTables, I32Span seqLens, int64_t batch,
                 int64_t width, int64_t pageSize, int64_t numPages,
                 CsrTable &out);
Status csrToTt(I32Span indptr, I32Span indices, I32Span lastPageLen,
               int64_t batch, int64_t pageSize, int64_t numPages,
               int64_t width, int32_t pad, TtTable &out);
Status ttToCsr(I32Span pageTable, I32Span curPos, int64_t batch,
               int64_t width, int64_t pageSize, int64_t numPages,
               CsrTable &out);
Status vllmToTt(I32Span blockTables, I32Span seqLens, int64_t batch,
                int64_t width, int64_t pageSize, int64_t numPages, TtTable &out);
Status ttToVllm(I32Span pageTable, I32Span curPos, int64_t batch,
                int64_t width, int64_t pageSize, int64_t numPages,
                VllmTable &out);

/// Context parallelism (docs/ContextParallel.md; pa.shard_pages of
/// docs/Semantics.md section 14): device `device` of `devices` owns, of a
/// request with n pages, pages [floor(n d / N), floor(n (d + 1) / N))
/// (contiguous) or those with j mod N = d (`roundRobin`); `out` lists them
/// in request and page order, with last_page_len[b] the request's own if
/// the device owns its last page, else P (a request without owned pages
/// has no entries). The input is validated first (validatePageTable with
/// `numPages`).
Status shardPages(I32Span indptr, I32Span indices, I32Span lastPageLen,
                  int64_t batch, int64_t pageSize, int64_t numPages,
                  int64_t devices, int64_t device, bool roundRobin,
                  CsrTable &out);

//===----------------------------------------------------------------------===//
// Automatic cascade (AutoCascade.cpp)
//===----------------------------------------------------------------------===//

struct AutoCascadeOptions {
  /// A shared prefix becomes a level segment only if at least this many
  /// requests share it (>= 2) ...
  int64_t minShareRequests = 2;
  /// ... and it spans at least this many pages (>= 1).
  int64_t minSharePages = 1;
  /// At most this many levels in all (>= 1; 1: plain decode, one level).
  /// Sharing deeper than maxLevels - 1 shared levels stays in the last level.
  int64_t maxLevels = 8;
};

/// One level: segment s covers query rows qoIndptr[s] .. qoIndptr[s+1] and
/// the CSR table's request s (pa_cascade_level + its kv_indices).
struct CascadeLevel {
  std::vector<int32_t> qoIndptr;
  CsrTable table;
};

struct AutoCascade {
  /// Levels 0 .. L-1; the last has one segment per request (its own pages
  /// after every shared prefix), earlier ones the shared prefixes.
  std::vector<CascadeLevel> levels;
  /// Request order of the cascade: cascade request r is input request
  /// order[r] (a stable depth-first order of the trie; the identity when
  /// requests that share a prefix are already adjacent). Its query rows are
  /// rows qoIndptr(last level)[r] .. [r+1] of the cascade's q / o.
  std::vector<int32_t> order;
  /// Query rows (sum of qo lengths).
  int64_t numQueryRows = 0;
  /// Pages read by the levels (sum of nnz) and by plain attention over the
  /// full tables (sum of page counts): what the cascade saves.
  int64_t cascadePages = 0, flatPages = 0;
};

/// The automatic cascade of a batch given as a CSR table (`batch` requests,
/// request b with qoLens[b] >= 0 query rows at its end; qoLens null: one
/// each, decode). A trie over the requests' page lists finds the page
/// prefixes several requests share; only full pages wholly before a
/// request's first query (its first (kv_len - qo_len) / P pages) are shared,
/// so the shared levels need no mask: without window / ALiBi the cascade
/// (last level causal iff the plain call is) equals attention over the full
/// tables. Validates the table (validatePageTable with numPages) and the
/// options; `out` is written only on success.
Status buildAutoCascade(I32Span indptr, I32Span indices, I32Span lastPageLen,
                        int64_t batch, int64_t pageSize, int64_t numPages,
                        const int32_t *qoLens,
                        const AutoCascadeOptions &options, AutoCascade &out);

} // namespace pa::rt

#endif // PAGEDATTN_RUNTIME_PAGEPOOL_H
