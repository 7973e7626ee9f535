//===- Random.h - seeded random ragged decode cases -------------*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The random-case generation shared by the unit tests and pa-gpu-runner:
// one seeded generator (Rng, with the PA_SEED / splitmix seed derivation of
// the differential tests), ragged kv lengths that include empty requests,
// single tokens, partial and exactly full last pages, page tables over a
// shuffled page pool (non-contiguous, unordered pages), random values and
// random float64 reference caches. Part of PATestSupport.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TESTSUPPORT_RANDOM_H
#define PAGEDATTN_TESTSUPPORT_RANDOM_H

#include "PagedAttn/Reference/Reference.h"
#include "PagedAttn/Runtime/Bundle.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace pa::test {

//===----------------------------------------------------------------------===//
// Seeds and the generator
//===----------------------------------------------------------------------===//

/// The base seed of a test: `defaultSeed`, or PA_SEED (decimal or 0x hex)
/// from the environment, mixed with the test's name.
uint64_t baseSeed(const std::string &testName, uint64_t defaultSeed);
/// splitmix64 of (a, b, c): a per-configuration / per-case seed.
uint64_t mixSeed(uint64_t a, uint64_t b, uint64_t c = 0);

/// A seeded std::mt19937_64 with the draws the tests use. Also a uniform
/// random bit generator (std::shuffle etc. take it).
class Rng {
public:
  using result_type = uint64_t;
  explicit Rng(uint64_t seed) : gen(seed) {}

  /// Uniform integer in [lo, hi] (inclusive); lo when hi <= lo.
  int64_t uniformInt(int64_t lo, int64_t hi);
  /// Uniform real in [lo, hi).
  double uniform(double lo, double hi);
  /// True with probability p.
  bool chance(double p);
  template <typename T> const T &pick(const std::vector<T> &v) {
    return v[static_cast<size_t>(
        uniformInt(0, static_cast<int64_t>(v.size()) - 1))];
  }
  /// Fisher-Yates shuffle of `v`.
  template <typename T> void shuffle(std::vector<T> &v) {
    for (int64_t i = static_cast<int64_t>(v.size()) - 1; i > 0; --i)
      std::swap(v[static_cast<size_t>(i)],
                v[static_cast<size_t>(uniformInt(0, i))]);
  }

  static constexpr result_type min() { return std::mt19937_64::min(); }
  static constexpr result_type max() { return std::mt19937_64::max(); }
  result_type operator()() { return gen(); }

  std::mt19937_64 gen;
};

/// `n` values uniform in [lo, hi).
std::vector<double> randomValues(Rng &rng, int64_t n, double lo, double hi);
/// `n` values uniform in [lo, hi), each rounded to `t` (roundTo).
std::vector<double> randomValues(Rng &rng, int64_t n, rt::DType t, double lo,
                                 double hi);

//===----------------------------------------------------------------------===//
// Ragged batches and page tables
//===----------------------------------------------------------------------===//

/// Number of pages of a request of `len` tokens: ceil(len / pageSize).
int64_t pagesFor(int64_t len, int64_t pageSize);
/// Sum of pagesFor over `lens`.
int64_t totalPages(const std::vector<int64_t> &lens, int64_t pageSize);
/// Exclusive prefix sum with a leading 0 (the indptr of `lens`).
std::vector<int32_t> indptrOf(const std::vector<int64_t> &lens);

/// A random length in [0, maxLen]: 0 (12%), a multiple of `unit` (18%; with
/// unit = the page size: an exactly full last page), at most `unit` tokens
/// (12%), else uniform in [1, maxLen].
int64_t sampleLen(Rng &rng, int64_t unit, int64_t maxLen);
/// `batch` lengths drawn by sampleLen(rng, unit, maxLen).
std::vector<int64_t> randomLens(Rng &rng, int64_t batch, int64_t unit,
                                int64_t maxLen);

/// Hands out the distinct page indices of [0, numPages) in a random order.
class PagePool {
public:
  PagePool(Rng &rng, int64_t numPages);
  /// The next page; throws std::logic_error when all are taken.
  int32_t take();
  int64_t numPages() const { return static_cast<int64_t>(perm.size()); }

private:
  std::vector<int32_t> perm;
  size_t next = 0;
};

/// A CSR page table with kv_len[b] == lens[b], pages taken from `pool`
/// (in its random order). Requests without tokens get no page and a random
/// last_page_len in [0, pageSize] (every consumer must ignore it).
ref::PageTable makePageTable(Rng &rng, int64_t pageSize,
                             const std::vector<int64_t> &lens, PagePool &pool);

/// A reference cache of the given shape with K and V uniform in [lo, hi)
/// (K first, then V, in offset order), each rounded to `round` if given.
ref::PagedKV randomPagedKV(Rng &rng, ref::KVLayout layout, int64_t numPages,
                           int64_t pageSize, int64_t numHeads, int64_t headDim,
                           std::optional<rt::DType> round = std::nullopt,
                           double lo = -1.0, double hi = 1.0);

} // namespace pa::test

#endif // PAGEDATTN_TESTSUPPORT_RANDOM_H
