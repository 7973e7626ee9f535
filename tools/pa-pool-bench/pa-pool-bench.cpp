//===- pa-pool-bench.cpp - page pool throughput and metadata size --------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// Prints, for the page pool of PagePool.h (docs/PagePool.md, "Figures"):
//   * operations per second of the allocator's calls on a serving-like
//     workload (decode appends of one token to each of B sequences, prompt
//     adds with and without prefix hits, forks, frees, the CSR table of a
//     batch, the automatic cascade of a batch), each timed over enough
//     repetitions to run >= 0.2 s;
//   * the pool's metadata bytes per page (PagePoolStats::metadataBytes /
//     num_pages) empty and with a full prefix cache, with and without
//     prefix caching, for page sizes 16 and 64.
// Usage: pa-pool-bench [--quick]
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Runtime/PagePool.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

using namespace pa::rt;
using Clock = std::chrono::steady_clock;

namespace {

double minSeconds = 0.2;

[[noreturn]] void die(const Status &s, const char *what) {
  std::fprintf(stderr, "pa-pool-bench: %s: %s\n", what, s.message.c_str());
  std::exit(1);
}

std::unique_ptr<PagePool> makePool(int64_t pages, int64_t P, bool prefix) {
  PagePoolConfig c;
  c.numPages = pages;
  c.pageSize = P;
  c.prefixCaching = prefix;
  std::unique_ptr<PagePool> pool;
  if (Status s = PagePool::create(c, pool); !s)
    die(s, "create");
  return pool;
}

/// Runs `round` (which performs `opsPerRound` operations, with `setup`
/// before each round, untimed) until minSeconds of timed work; prints ops/s.
void measure(const char *name, int64_t opsPerRound,
             const std::function<void()> &setup,
             const std::function<void()> &round) {
  double timed = 0;
  int64_t ops = 0;
  while (timed < minSeconds) {
    setup();
    auto t0 = Clock::now();
    round();
    timed += std::chrono::duration<double>(Clock::now() - t0).count();
    ops += opsPerRound;
  }
  std::printf("  %-58s %12.3g ops/s  (%.1f ns/op)\n", name, ops / timed,
              1e9 * timed / static_cast<double>(ops));
}

std::vector<int32_t> tokens(std::mt19937 &g, int64_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto &x : t)
    x = static_cast<int32_t>(g() % 32000);
  return t;
}

void throughput(int64_t P, bool prefix) {
  std::printf("page_size %lld, prefix caching %s:\n",
              static_cast<long long>(P), prefix ? "on" : "off");
  std::mt19937 g(1);
  const int64_t B = 256, prompt = 512, pages = 65536;
  std::unique_ptr<PagePool> pool;
  std::vector<PagePool::SeqId> ids;
  std::vector<int32_t> slots;
  std::vector<PageCopy> copies;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 64; ++i)
    prompts.push_back(tokens(g, prompt));
  std::vector<int32_t> shared = tokens(g, prompt);

  auto fresh = [&] {
    pool = makePool(pages, P, prefix);
    ids.clear();
    for (int64_t b = 0; b < B; ++b) {
      PagePool::SeqId id;
      int64_t cached;
      const auto &t = prompts[b % prompts.size()];
      std::vector<int32_t> u = t;
      u[0] = static_cast<int32_t>(b); // distinct prompts
      if (Status s = pool->addSequence(u.data(), prompt, id, cached, slots);
          !s)
        die(s, "add");
      ids.push_back(id);
    }
  };

  // Decode: 64 steps of one token for each of B sequences (one batch call
  // per step); an op is one sequence's token.
  const int64_t steps = 64;
  std::vector<int64_t> ones(B, 1);
  std::vector<int32_t> stepTokens = tokens(g, B);
  measure("append 1 token x 256 sequences (per sequence-token)", B * steps,
          fresh, [&] {
            for (int64_t s = 0; s < steps; ++s)
              if (Status st = pool->append(ids.data(), ones.data(), B,
                                           stepTokens.data(), slots, copies);
                  !st)
                die(st, "append");
          });
  // Add + free of 512-token prompts (fresh content: no hits).
  int64_t salt = 1 << 20;
  measure("add 512-token prompt (miss) + free (per add+free)", 256, [&] {
    pool = makePool(pages, P, prefix);
  },
          [&] {
            for (int i = 0; i < 256; ++i) {
              std::vector<int32_t> &t = prompts[i % prompts.size()];
              t[0] = static_cast<int32_t>(++salt);
              PagePool::SeqId id;
              int64_t cached;
              if (Status s = pool->addSequence(t.data(), prompt, id, cached,
                                               slots);
                  !s)
                die(s, "add");
              if (Status s = pool->freeSequence(id); !s)
                die(s, "free");
            }
          });
  if (prefix) {
    PagePool::SeqId holder = 0;
    // The last page is recomputed (a prompt always computes its last
    // token): 31 of the 32 pages hit.
    measure("add 512-token prompt (31 of 32 pages hit) + free", 256,
            [&] {
              pool = makePool(pages, P, prefix);
              int64_t cached;
              if (Status s = pool->addSequence(shared.data(), prompt, holder,
                                               cached, slots);
                  !s)
                die(s, "add");
            },
            [&] {
              for (int i = 0; i < 256; ++i) {
                PagePool::SeqId id;
                int64_t cached;
                if (Status s = pool->addSequence(shared.data(), prompt, id,
                                                 cached, slots);
                    !s)
                  die(s, "add");
                if (Status s = pool->freeSequence(id); !s)
                  die(s, "free");
              }
            });
  }
  measure("fork a 512-token sequence + free the child", 1024, fresh, [&] {
    for (int i = 0; i < 1024; ++i) {
      PagePool::SeqId c;
      if (Status s = pool->fork(ids[i % B], c); !s)
        die(s, "fork");
      if (Status s = pool->freeSequence(c); !s)
        die(s, "free");
    }
  });
  CsrTable t;
  measure("CSR table of 256 sequences x 512 tokens (per table)", 16, fresh,
          [&] {
            for (int i = 0; i < 16; ++i)
              if (Status s = buildCsrTable(*pool, ids.data(), B, t); !s)
                die(s, "table");
          });
  // Auto cascade: 256 forks of one prompt (one shared level).
  std::vector<PagePool::SeqId> forks;
  CsrTable ft;
  measure("auto cascade of 256 requests sharing a 512-token prompt", 16,
          [&] {
            pool = makePool(pages, P, prefix);
            forks.clear();
            PagePool::SeqId root;
            int64_t cached;
            if (Status s = pool->addSequence(shared.data(), prompt, root,
                                             cached, slots);
                !s)
              die(s, "add");
            for (int64_t b = 0; b < B; ++b) {
              PagePool::SeqId c;
              if (Status s = pool->fork(root, c); !s)
                die(s, "fork");
              forks.push_back(c);
            }
            if (Status s = pool->append(forks.data(), ones.data(), B,
                                        stepTokens.data(), slots, copies);
                !s)
              die(s, "append");
            if (Status s = buildCsrTable(*pool, forks.data(), B, ft); !s)
              die(s, "table");
          },
          [&] {
            for (int i = 0; i < 16; ++i) {
              AutoCascade ac;
              if (Status s = buildAutoCascade(ft.indptr, ft.indices,
                                              ft.lastPageLen, B, P, pages,
                                              nullptr, AutoCascadeOptions{},
                                              ac);
                  !s)
                die(s, "auto cascade");
            }
          });
}

void metadata() {
  std::printf("metadata bytes per page (PagePoolStats::metadataBytes / "
              "num_pages, 65536 pages):\n");
  for (int64_t P : {16, 64})
    for (bool prefix : {false, true}) {
      auto pool = makePool(65536, P, prefix);
      const double empty =
          static_cast<double>(pool->stats().metadataBytes) / 65536;
      // Fill every page with distinct full pages (all cached when on).
      std::mt19937 g(2);
      std::vector<int32_t> slots;
      const int64_t perSeq = 64 * P;
      for (int64_t i = 0; i < 65536 / 64; ++i) {
        std::vector<int32_t> t = tokens(g, perSeq);
        PagePool::SeqId id;
        int64_t cached;
        if (Status s = pool->addSequence(t.data(), perSeq, id, cached, slots);
            !s)
          die(s, "add");
      }
      const double full =
          static_cast<double>(pool->stats().metadataBytes) / 65536;
      std::printf("  page_size %-3lld prefix caching %-3s  empty %6.1f B/page,"
                  " all pages cached %6.1f B/page\n",
                  static_cast<long long>(P), prefix ? "on" : "off", empty,
                  full);
    }
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      minSeconds = 0.02;
    } else {
      std::fprintf(stderr, "usage: pa-pool-bench [--quick]\n");
      return 2;
    }
  }
  throughput(16, true);
  throughput(16, false);
  metadata();
  return 0;
}
