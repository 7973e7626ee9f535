//===- Random.cpp - seeded random ragged decode cases ---------------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/TestSupport/Random.h"

#include "PagedAttn/TestSupport/Numbers.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

using namespace pa;
using namespace pa::test;

namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

} // namespace

//===----------------------------------------------------------------------===//
// Seeds and the generator
//===----------------------------------------------------------------------===//

uint64_t pa::test::baseSeed(const std::string &testName, uint64_t defaultSeed) {
  uint64_t seed = defaultSeed;
  if (const char *env = std::getenv("PA_SEED"))
    seed = std::strtoull(env, nullptr, 0);
  uint64_t h = 1469598103934665603ull; // FNV-1a of the name
  for (char c : testName)
    h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return splitmix(seed ^ h);
}

uint64_t pa::test::mixSeed(uint64_t a, uint64_t b, uint64_t c) {
  return splitmix(splitmix(splitmix(a) ^ b) ^ c);
}

int64_t Rng::uniformInt(int64_t lo, int64_t hi) {
  if (hi <= lo)
    return lo;
  uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(gen() % span);
}

double Rng::uniform(double lo, double hi) {
  double u = static_cast<double>(gen() >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * u;
}

bool Rng::chance(double p) { return uniform(0, 1) < p; }

std::vector<double> pa::test::randomValues(Rng &rng, int64_t n, double lo,
                                           double hi) {
  std::vector<double> v(static_cast<size_t>(n));
  for (double &x : v)
    x = rng.uniform(lo, hi);
  return v;
}

std::vector<double> pa::test::randomValues(Rng &rng, int64_t n, rt::DType t,
                                           double lo, double hi) {
  std::vector<double> v = randomValues(rng, n, lo, hi);
  for (double &x : v)
    x = roundTo(t, x);
  return v;
}

//===----------------------------------------------------------------------===//
// Ragged batches and page tables
//===----------------------------------------------------------------------===//

int64_t pa::test::pagesFor(int64_t len, int64_t pageSize) {
  return (len + pageSize - 1) / pageSize;
}

int64_t pa::test::totalPages(const std::vector<int64_t> &lens,
                             int64_t pageSize) {
  int64_t n = 0;
  for (int64_t len : lens)
    n += pagesFor(len, pageSize);
  return n;
}

std::vector<int32_t> pa::test::indptrOf(const std::vector<int64_t> &lens) {
  std::vector<int32_t> indptr(1, 0);
  for (int64_t len : lens)
    indptr.push_back(static_cast<int32_t>(indptr.back() + len));
  return indptr;
}

int64_t pa::test::sampleLen(Rng &rng, int64_t unit, int64_t maxLen) {
  double r = rng.uniform(0, 1);
  if (r < 0.12 || maxLen <= 0)
    return 0;
  if (r < 0.30) { // a multiple of the unit (a full last page)
    int64_t k = std::max<int64_t>(1, maxLen / unit);
    return std::min(rng.uniformInt(1, k) * unit, maxLen);
  }
  if (r < 0.42) // at most one unit
    return rng.uniformInt(1, std::min(unit, maxLen));
  return rng.uniformInt(1, maxLen);
}

std::vector<int64_t> pa::test::randomLens(Rng &rng, int64_t batch, int64_t unit,
                                          int64_t maxLen) {
  std::vector<int64_t> lens(static_cast<size_t>(std::max<int64_t>(batch, 0)));
  for (int64_t &len : lens)
    len = sampleLen(rng, unit, maxLen);
  return lens;
}

PagePool::PagePool(Rng &rng, int64_t numPages)
    : perm(static_cast<size_t>(numPages)) {
  for (int64_t i = 0; i < numPages; ++i)
    perm[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  rng.shuffle(perm);
}

int32_t PagePool::take() {
  if (next >= perm.size())
    throw std::logic_error("PagePool exhausted (" +
                           std::to_string(perm.size()) + " pages)");
  return perm[next++];
}

ref::PageTable pa::test::makePageTable(Rng &rng, int64_t pageSize,
                                       const std::vector<int64_t> &lens,
                                       PagePool &pool) {
  ref::PageTable pt;
  pt.pageSize = pageSize;
  pt.indptr.push_back(0);
  for (int64_t len : lens) {
    int64_t np = pagesFor(len, pageSize);
    for (int64_t i = 0; i < np; ++i)
      pt.indices.push_back(pool.take());
    pt.indptr.push_back(static_cast<int32_t>(pt.indices.size()));
    pt.lastPageLen.push_back(
        np == 0 ? static_cast<int32_t>(rng.uniformInt(0, pageSize))
                : static_cast<int32_t>(len - (np - 1) * pageSize));
  }
  return pt;
}

ref::PagedKV pa::test::randomPagedKV(Rng &rng, ref::KVLayout layout,
                                     int64_t numPages, int64_t pageSize,
                                     int64_t numHeads, int64_t headDim,
                                     std::optional<rt::DType> round, double lo,
                                     double hi) {
  ref::PagedKV kv(layout, numPages, pageSize, numHeads, headDim);
  kv.k = round ? randomValues(rng, kv.numElements(), *round, lo, hi)
               : randomValues(rng, kv.numElements(), lo, hi);
  kv.v = round ? randomValues(rng, kv.numElements(), *round, lo, hi)
               : randomValues(rng, kv.numElements(), lo, hi);
  return kv;
}
