//===- PrefixCache.cpp - automatic prefix caching of full pages ----------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The prefix-cache half of PagePool (docs/PagePool.md, "Prefix caching"):
//   * a full page's key is chainHash(hash of the previous page, its P token
//     ids), as vLLM's automatic prefix caching does, truncated to hashBits;
//   * the index maps a hash to one cached page; a hit is verified exactly:
//     the cached page's token ids (kept in pageTokens_) must equal the
//     prompt's and its parent uid (the identity of the content before it)
//     must equal the uid of the page matched before it, so a hash collision
//     can cost a hit but never shares wrong data;
//   * a page's uid identifies its content from registration on and is never
//     reused: once a page is evicted, pages registered after it (its
//     parent uid) can no longer be matched by mistake;
//   * an entry whose parent uid names no cached page is unreachable (its
//     parent was evicted while a sequence holding a duplicate of the parent
//     lived on); when the same tokens are sealed again after a cached
//     prefix, the new page replaces it (uidPage_ maps the uid of every
//     cached page to the page);
//   * unreferenced cached pages sit on the LRU list (PagePool.cpp) until
//     takePage() evicts the least recently used one.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Runtime/PagePool.h"

#include <cstring>

using namespace pa::rt;

namespace {
inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
/// splitmix64's finalizer: a bijective avalanche of 64 bits.
inline uint64_t fmix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}
} // namespace

uint64_t PagePool::chainHash(uint64_t prevHash,
                             const int32_t *pageTokens) const {
  // Two 64-bit lanes over the tokens (xxhash-like rounds), mixed with the
  // previous hash and the page size, then avalanched.
  uint64_t a = fmix(prevHash ^ 0x9e3779b97f4a7c15ULL);
  uint64_t b = fmix(static_cast<uint64_t>(cfg_.pageSize) + 0x632be59bd9b4e019ULL);
  for (int64_t i = 0; i < cfg_.pageSize; ++i) {
    uint64_t t = static_cast<uint32_t>(pageTokens[i]);
    a = rotl(a + t * 0xc2b2ae3d27d4eb4fULL, 31) * 0x9e3779b185ebca87ULL;
    std::swap(a, b);
  }
  return fmix(a ^ rotl(b, 17)) & hashMask_;
}

int32_t PagePool::lookup(uint64_t hash, uint64_t parentUid,
                         const int32_t *pageTokens) const {
  auto it = index_.find(hash);
  if (it == index_.end())
    return kNone;
  const int32_t p = it->second;
  const PageMeta &m = meta_[p];
  const int64_t P = cfg_.pageSize;
  if (m.parentUid != parentUid ||
      std::memcmp(&pageTokens_[static_cast<size_t>(p * P)], pageTokens,
                  static_cast<size_t>(P) * sizeof(int32_t)) != 0)
    return kNone; // a hash collision: different content
  return p;
}

bool PagePool::isStale(int32_t page, const int32_t *pageTokens) const {
  const PageMeta &m = meta_[page];
  const int64_t P = cfg_.pageSize;
  return m.parentUid != 0 && uidPage_.count(m.parentUid) == 0 &&
         std::memcmp(&pageTokens_[static_cast<size_t>(page * P)], pageTokens,
                     static_cast<size_t>(P) * sizeof(int32_t)) == 0;
}

void PagePool::matchPrefix(const int32_t *tokens, int64_t n,
                           std::vector<int32_t> &pages) const {
  const int64_t P = cfg_.pageSize;
  uint64_t prevHash = 0, parentUid = 0;
  for (int64_t j = 0; (j + 1) * P <= n; ++j) {
    const int32_t *pt = tokens + j * P;
    const uint64_t h = chainHash(prevHash, pt);
    const int32_t p = lookup(h, parentUid, pt);
    if (p == kNone)
      return;
    pages.push_back(p);
    prevHash = h;
    parentUid = meta_[p].uid;
  }
}

void PagePool::sealPage(Sequence &s, int64_t j, const int32_t *pageTokens) {
  const int64_t P = cfg_.pageSize;
  const uint64_t prevHash = j ? s.hashes[j - 1] : 0;
  const uint64_t parentUid = j ? s.uids[j - 1] : 0;
  const uint64_t h = chainHash(prevHash, pageTokens);
  uint64_t uid;
  const int32_t same = lookup(h, parentUid, pageTokens);
  if (same != kNone) {
    // The content is cached already (another sequence computed it): this
    // page stays a private duplicate, but has the same content identity, so
    // pages after it chain to the cached one.
    uid = meta_[same].uid;
  } else if (auto it = index_.find(h);
             it != index_.end() && !isStale(it->second, pageTokens)) {
    // Collision with different content: not registered (a fresh identity).
    uid = nextUid_++;
  } else {
    if (it != index_.end()) {
      // The entry under h holds these tokens after content that is no
      // longer cached (its parent was evicted while a sequence holding a
      // duplicate of the parent, and this entry after it, lived): no match
      // can reach it. This page, reachable from the cached prefix,
      // replaces it, so a re-computed prompt is cached again.
      const int32_t old = it->second;
      uncache(old);
      if (meta_[old].onLru) { // unreferenced: nothing worth keeping
        lruRemove(old);
        freeList_.push_back(old);
      }
    }
    const int32_t page = s.pages[j];
    PageMeta &m = meta_[page];
    m.cached = 1;
    m.hash = h;
    m.uid = uid = nextUid_++;
    m.parentUid = parentUid;
    std::memcpy(&pageTokens_[static_cast<size_t>(page * P)], pageTokens,
                static_cast<size_t>(P) * sizeof(int32_t));
    index_.emplace(h, page);
    uidPage_.emplace(uid, page);
    ++cachedCount_;
  }
  s.hashes.push_back(h);
  s.uids.push_back(uid);
}

void PagePool::uncache(int32_t page) {
  PageMeta &m = meta_[page];
  if (!m.cached)
    return;
  index_.erase(m.hash);
  uidPage_.erase(m.uid);
  m.cached = 0;
  m.hash = m.uid = m.parentUid = 0;
  --cachedCount_;
}
