//===- PagePool.cpp - pages, sequences, fork, copy-on-write --------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The allocator half of PagePool (PagePool.h, docs/PagePool.md): the free
// list, reference counts, the evictable LRU list's links, sequences (add,
// append with copy-on-write, fork, free), statistics and the invariant
// check. The prefix cache (hashing, lookup, registration, eviction) is in
// PrefixCache.cpp.
//
// Every mutating call first checks its arguments and counts the pages it
// needs against availablePages(); only then does it change anything, and
// from there on nothing can fail: failures leave the pool unchanged.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Runtime/PagePool.h"
#include "PoolInternal.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_set>

using namespace pa::rt;
using pa::rt::pool_detail::ceilDiv;

PagePool::PagePool(const PagePoolConfig &config) : cfg_(config) {
  hashMask_ = cfg_.hashBits >= 64 ? ~uint64_t(0)
                                  : ((uint64_t(1) << cfg_.hashBits) - 1);
  meta_.resize(static_cast<size_t>(cfg_.numPages));
  if (cfg_.prefixCaching)
    pageTokens_.resize(static_cast<size_t>(cfg_.numPages * cfg_.pageSize));
  // Pages are handed out in increasing order (the free list is a stack).
  freeList_.reserve(static_cast<size_t>(cfg_.numPages));
  for (int64_t p = cfg_.numPages - 1; p >= 0; --p)
    freeList_.push_back(static_cast<int32_t>(p));
}

Status PagePool::create(const PagePoolConfig &config,
                        std::unique_ptr<PagePool> &out) {
  if (config.numPages < 1)
    return fail("page pool: num_pages = ", config.numPages, " must be >= 1");
  if (config.pageSize < 1)
    return fail("page pool: page_size = ", config.pageSize, " must be >= 1");
  if (config.numPages > std::numeric_limits<int32_t>::max() /
                            config.pageSize)
    return fail("page pool: num_pages * page_size = ", config.numPages, " * ",
                config.pageSize,
                " exceeds INT32_MAX (slots and page ids are int32)");
  if (config.hashBits < 1 || config.hashBits > 64)
    return fail("page pool: hash_bits = ", config.hashBits,
                " not in [1, 64]");
  out.reset(new PagePool(config));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Pages
//===----------------------------------------------------------------------===//

void PagePool::lruPushBack(int32_t page) {
  PageMeta &m = meta_[page];
  m.lruPrev = lruTail_;
  m.lruNext = kNone;
  m.onLru = 1;
  if (lruTail_ != kNone)
    meta_[lruTail_].lruNext = page;
  else
    lruHead_ = page;
  lruTail_ = page;
  ++lruSize_;
}

void PagePool::lruRemove(int32_t page) {
  PageMeta &m = meta_[page];
  if (m.lruPrev != kNone)
    meta_[m.lruPrev].lruNext = m.lruNext;
  else
    lruHead_ = m.lruNext;
  if (m.lruNext != kNone)
    meta_[m.lruNext].lruPrev = m.lruPrev;
  else
    lruTail_ = m.lruPrev;
  m.lruPrev = m.lruNext = kNone;
  m.onLru = 0;
  --lruSize_;
}

int32_t PagePool::takePage() {
  // Callers have checked availablePages(): one of the two lists has a page.
  int32_t page;
  if (!freeList_.empty()) {
    page = freeList_.back();
    freeList_.pop_back();
  } else {
    page = lruHead_; // least recently used unreferenced cached page
    lruRemove(page);
    uncache(page);
    ++evictions_;
  }
  meta_[page].ref = 1;
  return page;
}

void PagePool::releasePage(int32_t page) {
  PageMeta &m = meta_[page];
  if (--m.ref > 0)
    return;
  if (m.cached)
    lruPushBack(page);
  else
    freeList_.push_back(page);
}

int64_t PagePool::availablePages() const {
  return static_cast<int64_t>(freeList_.size()) + lruSize_;
}

int32_t PagePool::refCount(int32_t page) const {
  if (page < 0 || page >= cfg_.numPages)
    return -1;
  return meta_[page].ref;
}

//===----------------------------------------------------------------------===//
// Sequences
//===----------------------------------------------------------------------===//

namespace {
constexpr const char kFullPrefix[] = "page pool full: ";
/// The "pool full" error (isFull() recognizes it by its prefix).
Status fullError(const char *what, int64_t need, int64_t avail) {
  return fail(kFullPrefix, what, " needs ", need, " new pages, ", avail,
              " available (free + evictable cached)");
}
} // namespace

bool PagePool::isFull(const Status &s) {
  return !s.ok && s.message.rfind(kFullPrefix, 0) == 0;
}

Status PagePool::addSequence(const int32_t *tokens, int64_t n, SeqId &id,
                             int64_t &cachedTokens,
                             std::vector<int32_t> &slots) {
  const int64_t P = cfg_.pageSize;
  if (n < 0)
    return fail("add_sequence: n = ", n, " is negative");
  if (n > cfg_.numPages * P)
    return fail("add_sequence: n = ", n, " tokens exceed the pool's ",
                cfg_.numPages * P, " slots");
  if (n > 0 && !tokens && cfg_.prefixCaching)
    return fail("add_sequence: tokens is null but prefix caching is on "
                "(it needs the token ids)");
  // At most floor((n - 1) / P) pages are shared, so at least the last
  // token is computed (the caller needs its logits), as vLLM does: a fully
  // cached prompt recomputes its last page into a private page.
  std::vector<int32_t> hits;
  if (cfg_.prefixCaching && n > 0)
    matchPrefix(tokens, n - 1, hits);
  int64_t evictableHits = 0;
  for (int32_t p : hits)
    evictableHits += meta_[p].ref == 0;
  const int64_t need = ceilDiv(n, P) - static_cast<int64_t>(hits.size());
  const int64_t avail = availablePages() - evictableHits;
  if (need > avail)
    return fullError("add_sequence", need, avail);

  // Commit: nothing below fails.
  Sequence s;
  for (int32_t p : hits) {
    PageMeta &m = meta_[p];
    if (m.ref == 0)
      lruRemove(p);
    ++m.ref;
    s.pages.push_back(p);
    s.hashes.push_back(m.hash);
    s.uids.push_back(m.uid);
  }
  hitPages_ += static_cast<int64_t>(hits.size());
  s.length = static_cast<int64_t>(hits.size()) * P;
  cachedTokens = s.length;
  slots.clear();
  slots.reserve(static_cast<size_t>(n - cachedTokens));
  std::vector<PageCopy> copies; // none: the last page, if any, is full
  appendTokens(s, tokens ? tokens + cachedTokens : nullptr, n - cachedTokens,
               slots, copies);
  id = nextSeq_++;
  seqs_.emplace(id, std::move(s));
  return Status::success();
}

void PagePool::appendTokens(Sequence &s, const int32_t *tokens, int64_t n,
                            std::vector<int32_t> &slots,
                            std::vector<PageCopy> &copies) {
  const int64_t P = cfg_.pageSize;
  if (n == 0)
    return;
  const int64_t off = s.length % P;
  if (off != 0 && meta_[s.pages.back()].ref > 1) {
    // Copy-on-write: the partly filled last page is shared (fork); this
    // sequence continues on a private copy of its first `off` slots.
    const int32_t src = s.pages.back();
    const int32_t dst = takePage();
    --meta_[src].ref; // stays >= 1: another sequence holds it
    s.pages.back() = dst;
    copies.push_back(PageCopy{src, dst, static_cast<int32_t>(off)});
    ++cowCopies_;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t o = s.length % P;
    if (o == 0)
      s.pages.push_back(takePage());
    slots.push_back(static_cast<int32_t>(s.pages.back() * P + o));
    ++s.length;
    if (cfg_.prefixCaching) {
      s.tail.push_back(tokens[i]);
      if (static_cast<int64_t>(s.tail.size()) == P) {
        sealPage(s, static_cast<int64_t>(s.pages.size()) - 1, s.tail.data());
        s.tail.clear();
      }
    }
  }
}

Status PagePool::append(const SeqId *ids, const int64_t *counts,
                        int64_t batch, const int32_t *tokens,
                        std::vector<int32_t> &slots,
                        std::vector<PageCopy> &copies) {
  const int64_t P = cfg_.pageSize;
  if (batch < 0)
    return fail("append: batch = ", batch, " is negative");
  if (batch > 0 && (!ids || !counts))
    return fail("append: ", !ids ? "seq_ids" : "counts",
                " is null but batch = ", batch);
  int64_t total = 0;
  std::unordered_set<SeqId> seen;
  for (int64_t i = 0; i < batch; ++i) {
    if (!seqs_.count(ids[i]))
      return fail("append: seq_ids[", i, "] = ", ids[i],
                  " is not a live sequence");
    if (!seen.insert(ids[i]).second)
      return fail("append: seq_ids[", i, "] = ", ids[i],
                  " appears twice in the batch");
    if (counts[i] < 0)
      return fail("append: counts[", i, "] = ", counts[i], " is negative");
    if (counts[i] > cfg_.numPages * P)
      return fail("append: counts[", i, "] = ", counts[i],
                  " exceeds the pool's ", cfg_.numPages * P, " slots");
    total += counts[i];
  }
  if (total > 0 && !tokens && cfg_.prefixCaching)
    return fail("append: tokens is null but prefix caching is on (it needs "
                "the token ids)");

  // Pages needed: copy-on-write copies (a shared partial page needs one copy
  // per appending holder while another holder remains) plus new pages.
  int64_t need = 0;
  std::unordered_map<int32_t, int32_t> cowTaken;
  for (int64_t i = 0; i < batch; ++i) {
    if (counts[i] == 0)
      continue;
    const Sequence &s = seqs_.at(ids[i]);
    const int64_t off = s.length % P;
    int64_t room = 0;
    if (off != 0) {
      room = P - off;
      const int32_t last = s.pages.back();
      if (meta_[last].ref - cowTaken[last] > 1) {
        ++need;
        ++cowTaken[last];
      }
    }
    need += ceilDiv(std::max<int64_t>(counts[i] - room, 0), P);
  }
  if (need > availablePages())
    return fullError("append", need, availablePages());

  // Commit: nothing below fails.
  slots.clear();
  copies.clear();
  slots.reserve(static_cast<size_t>(total));
  int64_t at = 0;
  for (int64_t i = 0; i < batch; ++i) {
    appendTokens(seqs_.at(ids[i]), tokens ? tokens + at : nullptr, counts[i],
                 slots, copies);
    at += counts[i];
  }
  return Status::success();
}

Status PagePool::fork(SeqId parent, SeqId &child) {
  auto it = seqs_.find(parent);
  if (it == seqs_.end())
    return fail("fork: sequence ", parent, " is not live");
  Sequence s = it->second;
  for (int32_t p : s.pages)
    ++meta_[p].ref; // live pages have ref >= 1: none is on the LRU list
  child = nextSeq_++;
  seqs_.emplace(child, std::move(s));
  return Status::success();
}

Status PagePool::freeSequence(SeqId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end())
    return fail("free_sequence: sequence ", id, " is not live");
  const std::vector<int32_t> &pages = it->second.pages;
  // Last page first: with prefix caching the tail enters the LRU list
  // before the prefix it extends, so it is evicted first.
  for (auto p = pages.rbegin(); p != pages.rend(); ++p)
    releasePage(*p);
  seqs_.erase(it);
  return Status::success();
}

Status PagePool::sequencePages(SeqId id, const std::vector<int32_t> *&pages,
                               int64_t &length) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end())
    return fail("sequence ", id, " is not live");
  pages = &it->second.pages;
  length = it->second.length;
  return Status::success();
}

std::vector<PagePool::SeqId> PagePool::sequenceIds() const {
  std::vector<SeqId> ids;
  ids.reserve(seqs_.size());
  for (const auto &kv : seqs_)
    ids.push_back(kv.first);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<int32_t> PagePool::lruOrder() const {
  std::vector<int32_t> order;
  order.reserve(static_cast<size_t>(lruSize_));
  for (int32_t p = lruHead_; p != kNone; p = meta_[p].lruNext)
    order.push_back(p);
  return order;
}

int64_t PagePool::evictAllCached() {
  int64_t n = 0;
  while (lruHead_ != kNone) {
    int32_t p = lruHead_;
    lruRemove(p);
    uncache(p);
    freeList_.push_back(p);
    ++evictions_;
    ++n;
  }
  return n;
}

PagePoolStats PagePool::stats() const {
  PagePoolStats st;
  st.numPages = cfg_.numPages;
  st.freePages = static_cast<int64_t>(freeList_.size());
  st.cachedFreePages = lruSize_;
  st.usedPages = cfg_.numPages - st.freePages - st.cachedFreePages;
  st.numSequences = static_cast<int64_t>(seqs_.size());
  st.cachedPages = cachedCount_;
  st.hitPages = hitPages_;
  st.evictions = evictions_;
  st.cowCopies = cowCopies_;
  // The hash index: its bucket array plus one node per entry (key, value,
  // next pointer, cached hash code: libstdc++'s node for a uint64 key).
  const int64_t node = sizeof(void *) + sizeof(std::pair<const uint64_t,
                                                         int32_t>) +
                       sizeof(size_t);
  st.metadataBytes =
      static_cast<int64_t>(meta_.capacity() * sizeof(PageMeta) +
                           pageTokens_.capacity() * sizeof(int32_t) +
                           freeList_.capacity() * sizeof(int32_t) +
                           index_.bucket_count() * sizeof(void *) +
                           uidPage_.bucket_count() * sizeof(void *)) +
      static_cast<int64_t>(index_.size() + uidPage_.size()) * node;
  return st;
}

Status PagePool::checkInvariants() const {
  const int64_t P = cfg_.pageSize, N = cfg_.numPages;
  std::vector<int64_t> refs(static_cast<size_t>(N), 0);
  for (const auto &kv : seqs_) {
    const Sequence &s = kv.second;
    if (static_cast<int64_t>(s.pages.size()) != ceilDiv(s.length, P))
      return fail("sequence ", kv.first, " has ", s.pages.size(),
                  " pages for ", s.length, " tokens");
    if (cfg_.prefixCaching &&
        (static_cast<int64_t>(s.hashes.size()) != s.length / P ||
         s.uids.size() != s.hashes.size() ||
         static_cast<int64_t>(s.tail.size()) != s.length % P))
      return fail("sequence ", kv.first, ": ", s.hashes.size(),
                  " page hashes and ", s.tail.size(), " tail tokens for ",
                  s.length, " tokens");
    for (int32_t p : s.pages) {
      if (p < 0 || p >= N)
        return fail("sequence ", kv.first, " names page ", p,
                    " outside [0, ", N, ")");
      ++refs[p];
    }
  }
  std::vector<uint8_t> where(static_cast<size_t>(N), 0); // 1 free, 2 LRU
  for (int32_t p : freeList_) {
    if (p < 0 || p >= N || where[p])
      return fail("free list: page ", p, " out of range or listed twice");
    where[p] = 1;
  }
  int64_t lruCount = 0;
  for (int32_t p = lruHead_, prev = kNone; p != kNone;
       prev = p, p = meta_[p].lruNext) {
    if (p < 0 || p >= N || where[p])
      return fail("LRU list: page ", p, " out of range or listed twice");
    if (meta_[p].lruPrev != prev || !meta_[p].onLru)
      return fail("LRU list: broken links at page ", p);
    if (++lruCount > N)
      return fail("LRU list: cycle");
    where[p] = 2;
    if (meta_[p].lruNext == kNone && lruTail_ != p)
      return fail("LRU list: tail is ", lruTail_, ", the last page is ", p);
  }
  if (lruCount != lruSize_)
    return fail("LRU list holds ", lruCount, " pages, its size says ",
                lruSize_);
  int64_t cached = 0;
  for (int64_t p = 0; p < N; ++p) {
    const PageMeta &m = meta_[p];
    if (m.ref != refs[p])
      return fail("page ", p, ": reference count ", m.ref, " but ", refs[p],
                  " sequences name it");
    if (m.ref > 0 && where[p])
      return fail("page ", p, " is referenced and on the ",
                  where[p] == 1 ? "free" : "LRU", " list");
    if (m.ref == 0 && !where[p])
      return fail("page ", p, " is leaked: unreferenced and on no list");
    if (where[p] == 1 && m.cached)
      return fail("page ", p, " is on the free list but cached");
    if (where[p] == 2 && !m.cached)
      return fail("page ", p, " is on the LRU list but not cached");
    if (m.cached) {
      ++cached;
      auto it = index_.find(m.hash);
      if (it == index_.end() || it->second != p)
        return fail("cached page ", p, " is not indexed under its hash");
      auto u = uidPage_.find(m.uid);
      if (u == uidPage_.end() || u->second != p)
        return fail("cached page ", p, " is not indexed under its uid ",
                    m.uid);
    }
  }
  if (cached != cachedCount_ ||
      static_cast<int64_t>(index_.size()) != cachedCount_ ||
      static_cast<int64_t>(uidPage_.size()) != cachedCount_)
    return fail("prefix cache: ", cached, " cached pages, count ",
                cachedCount_, ", index ", index_.size(), ", uid index ",
                uidPage_.size());
  return Status::success();
}
