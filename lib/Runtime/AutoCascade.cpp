//===- AutoCascade.cpp - cascade levels from shared page prefixes --------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// buildAutoCascade() (PagePool.h, docs/PagePool.md "Automatic cascade"):
//
// 1. Each request's shareable pages are its full pages that lie wholly
//    before its first query (kv_len - qo_len tokens): a query never sits in
//    a shared level, so the non-causal shared levels plus a (causal) last
//    level give exactly the attention over the full table.
// 2. A trie over the shareable page lists (a node per (parent, page id));
//    each node counts the requests passing through it. Along a path the
//    counts never grow; a maximal run of nodes with equal count is one
//    group of requests sharing those pages.
// 3. Request order: a depth-first walk of the trie whose items at a node
//    (requests ending there, child subtrees) are visited in order of their
//    first request, so every group is a contiguous range of requests, and a
//    batch whose groups are already contiguous keeps its order.
// 4. Per request, top-down: each run shared by >= minShareRequests requests
//    becomes the request's next shared level, unless it has fewer than
//    minSharePages pages (including pages carried down from skipped runs),
//    in which case its pages are carried down into the next run or the
//    request's own pages; at most maxLevels - 1 shared levels, the rest is
//    carried into the last level. These decisions depend only on the trie
//    path, so every request of a group makes the same ones.
// 5. Level l < L-1: consecutive requests with the same level-l run form one
//    segment over its pages; consecutive requests without one share an
//    empty segment (no keys: the identity state). The last level has one
//    segment per request: its pages after its shared levels.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Runtime/PagePool.h"
#include "PoolInternal.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

using namespace pa::rt;
using pa::rt::pool_detail::ceilDiv;

namespace {

struct Node {
  int32_t count = 0, firstReq = 0;
  std::vector<int32_t> children; // in creation order (ascending firstReq)
  std::vector<int32_t> ending;   // requests whose path ends here, ascending
};

/// One shared level of a request: trie node naming its group (the run's
/// deepest node) and its pages [begin, end) of the request's page list.
struct Seg {
  int32_t key;
  int64_t begin, end;
};

} // namespace

Status pa::rt::buildAutoCascade(I32Span indptr, I32Span indices,
                                I32Span lastPageLen, int64_t batch,
                                int64_t pageSize, int64_t numPages,
                                const int32_t *qoLens,
                                const AutoCascadeOptions &options,
                                AutoCascade &out) {
  if (options.minShareRequests < 2)
    return fail("auto cascade: min_share_requests = ",
                options.minShareRequests, " must be >= 2");
  if (options.minSharePages < 1)
    return fail("auto cascade: min_share_pages = ", options.minSharePages,
                " must be >= 1");
  if (options.maxLevels < 1)
    return fail("auto cascade: max_levels = ", options.maxLevels,
                " must be >= 1");
  if (batch >= std::numeric_limits<int32_t>::max())
    return fail("auto cascade: batch = ", batch, " exceeds the int32 range");
  // validatePageTable checks batch >= 0, page_size in [1, INT32_MAX] and
  // num_pages >= 0 as well.
  std::vector<int64_t> lens;
  if (Status s = validatePageTable(indptr, indices, lastPageLen, batch,
                                   pageSize, numPages, lens);
      !s)
    return fail("auto cascade: ", s.message);
  std::vector<int64_t> qo(static_cast<size_t>(batch), 1);
  int64_t rows = 0;
  for (int64_t b = 0; b < batch; ++b) {
    if (qoLens) {
      if (qoLens[b] < 0)
        return fail("auto cascade: qo_lens[", b, "] = ", qoLens[b],
                    " is negative");
      qo[b] = qoLens[b];
    }
    rows += qo[b];
  }
  if (rows > std::numeric_limits<int32_t>::max())
    return fail("auto cascade: ", rows,
                " query rows exceed INT32_MAX (qo_indptr is int32)");
  const int64_t P = pageSize;

  // 1-2. The trie over the shareable pages.
  std::vector<Node> nodes(1);
  std::unordered_map<uint64_t, int32_t> edges;
  std::vector<std::vector<int32_t>> path(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t shareable = std::max<int64_t>(lens[b] - qo[b], 0) / P;
    int32_t cur = 0;
    ++nodes[0].count;
    for (int64_t j = 0; j < shareable; ++j) {
      const uint64_t key = (static_cast<uint64_t>(cur) << 32) |
                           static_cast<uint32_t>(indices[indptr[b] + j]);
      auto [it, fresh] =
          edges.emplace(key, static_cast<int32_t>(nodes.size()));
      if (fresh) {
        nodes[cur].children.push_back(it->second);
        nodes.emplace_back();
        nodes.back().firstReq = static_cast<int32_t>(b);
      }
      cur = it->second;
      ++nodes[cur].count;
      path[b].push_back(cur);
    }
    nodes[cur].ending.push_back(static_cast<int32_t>(b));
  }

  // 3. Depth-first order, items at a node by their first request.
  AutoCascade res;
  res.order.reserve(static_cast<size_t>(batch));
  struct Frame {
    int32_t node;
    size_t end = 0, child = 0;
  };
  std::vector<Frame> stack{Frame{0}};
  while (!stack.empty()) {
    Frame &f = stack.back();
    const Node &n = nodes[f.node];
    const bool hasEnd = f.end < n.ending.size();
    const bool hasChild = f.child < n.children.size();
    if (!hasEnd && !hasChild) {
      stack.pop_back();
      continue;
    }
    if (hasEnd && (!hasChild || n.ending[f.end] <
                                    nodes[n.children[f.child]].firstReq)) {
      res.order.push_back(n.ending[f.end++]);
    } else {
      int32_t c = n.children[f.child++];
      stack.push_back(Frame{c}); // invalidates f
    }
  }

  // 4. Shared levels of each request.
  std::vector<std::vector<Seg>> segs(static_cast<size_t>(batch));
  std::vector<int64_t> tailBegin(static_cast<size_t>(batch), 0);
  int64_t sharedLevels = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<int32_t> &pth = path[b];
    const int64_t sh = static_cast<int64_t>(pth.size());
    int64_t begin = 0, j = 0;
    while (j < sh && nodes[pth[j]].count >= options.minShareRequests &&
           static_cast<int64_t>(segs[b].size()) < options.maxLevels - 1) {
      int64_t k = j;
      while (k + 1 < sh && nodes[pth[k + 1]].count == nodes[pth[j]].count)
        ++k;
      if (k + 1 - begin >= options.minSharePages) {
        segs[b].push_back(Seg{pth[k], begin, k + 1});
        begin = k + 1;
      }
      j = k + 1;
    }
    tailBegin[b] = begin;
    sharedLevels =
        std::max(sharedLevels, static_cast<int64_t>(segs[b].size()));
  }

  // 5. The levels.
  const int64_t L = sharedLevels + 1;
  res.levels.resize(static_cast<size_t>(L));
  for (int64_t l = 0; l < L; ++l) {
    CascadeLevel &lv = res.levels[l];
    lv.qoIndptr.push_back(0);
    lv.table.indptr.push_back(0);
    const bool last = l == L - 1;
    int32_t openKey = -2; // -1: an open empty segment
    for (int64_t r = 0; r < batch; ++r) {
      const int32_t b = res.order[r];
      const int32_t base = indptr[b];
      if (last) {
        const int64_t from = tailBegin[b], to = ceilDiv(lens[b], P);
        lv.table.indices.insert(lv.table.indices.end(),
                                indices.data + base + from,
                                indices.data + base + to);
        lv.table.lastPageLen.push_back(to > from ? lastPageLen[b] : 0);
        lv.qoIndptr.push_back(lv.qoIndptr.back() + static_cast<int32_t>(qo[b]));
        lv.table.indptr.push_back(
            static_cast<int32_t>(lv.table.indices.size()));
        continue;
      }
      const bool has = static_cast<int64_t>(segs[b].size()) > l;
      const int32_t key = has ? segs[b][l].key : -1;
      if (key != openKey) {
        // A new segment: the run's pages (or none).
        if (has) {
          const Seg &s = segs[b][l];
          lv.table.indices.insert(lv.table.indices.end(),
                                  indices.data + base + s.begin,
                                  indices.data + base + s.end);
        }
        lv.table.lastPageLen.push_back(has ? static_cast<int32_t>(P) : 0);
        lv.table.indptr.push_back(
            static_cast<int32_t>(lv.table.indices.size()));
        lv.qoIndptr.push_back(lv.qoIndptr.back());
        openKey = key;
      }
      lv.qoIndptr.back() += static_cast<int32_t>(qo[b]);
    }
    res.cascadePages += static_cast<int64_t>(lv.table.indices.size());
  }
  res.numQueryRows = rows;
  res.flatPages = batch ? indptr[batch] : 0;
  out = std::move(res);
  return Status::success();
}
