//===- TestSupportTest.cpp - tests of the test-support library ------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// PATestSupport serves every other test, so it is tested against independent
// oracles: the half / bf16 conversions against a nearest-value search over
// the ordered 16-bit patterns (and the compiler's _Float16 where it exists),
// on every 16-bit pattern and a million random floats; the cache offsets
// against the row-major order of the runtime's buffer shapes; the random
// cases against the runtime's page-table validator and the reference's
// kv lengths. Random tests print their seed (PA_SEED=N replays it).
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Runtime/Planner.h"
#include "PagedAttn/TestSupport/Cache.h"
#include "PagedAttn/TestSupport/Numbers.h"
#include "PagedAttn/TestSupport/Random.h"

#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

using namespace pa;
using namespace pa::test;

namespace {

/// The seed of a random test: baseSeed(name, 1), printed so that a failure
/// can be replayed with PA_SEED.
uint64_t announceSeed(const std::string &name) {
  uint64_t seed = baseSeed(name, 1);
  std::printf("[ seed     ] %s: %" PRIu64 " (PA_SEED changes it)\n",
              name.c_str(), seed);
  return seed;
}

//===----------------------------------------------------------------------===//
// Numbers
//===----------------------------------------------------------------------===//

/// A 16-bit format for the oracle: its positive finite patterns are
/// 0 .. maxFinite in increasing value, inf is maxFinite + 1, and inf counts
/// as the value `infAs` (the next power of two: where rounding overflows).
struct Format16 {
  const char *name;
  float (*toFloat)(uint16_t);
  uint16_t (*fromFloat)(float);
  uint16_t maxFinite;
  double infAs;
};

const Format16 kHalf = {"f16", halfToFloat, floatToHalf, 0x7BFF, 65536.0};
const Format16 kBF16 = {"bf16", bf16ToFloat, floatToBF16, 0x7F7F,
                        std::ldexp(1.0, 128)};

double valueOf(const Format16 &f, uint16_t bits) {
  return bits > f.maxFinite ? f.infAs : f.toFloat(bits);
}

/// The correctly rounded (nearest, ties to even) 16-bit pattern of finite
/// or infinite `x`, found by binary search over the ordered patterns.
uint16_t oracle(const Format16 &f, float x) {
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double a = std::fabs(static_cast<double>(x));
  // Largest pattern whose value is <= a.
  uint32_t lo = 0, hi = f.maxFinite + 1u;
  while (lo < hi) {
    uint32_t mid = (lo + hi + 1) / 2;
    if (valueOf(f, static_cast<uint16_t>(mid)) <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  uint32_t best = lo;
  if (lo <= f.maxFinite) {
    double below = valueOf(f, static_cast<uint16_t>(lo));
    double above = valueOf(f, static_cast<uint16_t>(lo + 1));
    if (a - below > above - a || (a - below == above - a && (lo & 1)))
      best = lo + 1;
  }
  return static_cast<uint16_t>(sign | best);
}

bool isNaN16(const Format16 &f, uint16_t bits) {
  return (bits & 0x7FFF) > f.maxFinite + 1u;
}

void checkEveryPattern(const Format16 &f) {
  int failures = 0;
  for (uint32_t b = 0; b <= 0xFFFF && failures < 10; ++b) {
    uint16_t bits = static_cast<uint16_t>(b);
    float x = f.toFloat(bits);
    if (isNaN16(f, bits)) {
      EXPECT_TRUE(std::isnan(x)) << f.name << " pattern " << b;
      uint16_t back = f.fromFloat(x);
      EXPECT_TRUE(isNaN16(f, back)) << f.name << " NaN " << b << " -> " << back;
      EXPECT_EQ(back & 0x8000, bits & 0x8000) << f.name << " NaN sign " << b;
      continue;
    }
    uint16_t back = f.fromFloat(x);
    if (back != bits) {
      ++failures;
      ADD_FAILURE() << f.name << " pattern 0x" << std::hex << b << " -> float "
                    << x << " -> 0x" << back;
    }
  }
}

TEST(Numbers, EveryHalfRoundTrips) { checkEveryPattern(kHalf); }
TEST(Numbers, EveryBF16RoundTrips) { checkEveryPattern(kBF16); }

/// Floats near every rounding boundary and random floats of every exponent
/// round as the oracle says.
void checkRounding(const Format16 &f, const std::string &test) {
  Rng rng(announceSeed(test));
  std::vector<float> xs = {0.0f,
                           -0.0f,
                           1.0f,
                           -1.0f,
                           65504.0f,
                           65519.996f,
                           65520.0f,
                           65536.0f,
                           1e-8f,
                           2.9802322e-8f,
                           5.9604645e-8f,
                           6.1035156e-5f,
                           3.3895314e38f,
                           3.4028235e38f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::denorm_min()};
  // Exact midpoints between neighbours (ties), and one float either side.
  for (uint32_t b = 0; b + 1 <= f.maxFinite + 1u; b += 97) {
    double mid = 0.5 * (valueOf(f, static_cast<uint16_t>(b)) +
                        valueOf(f, static_cast<uint16_t>(b + 1)));
    float m = static_cast<float>(mid);
    if (static_cast<double>(m) != mid || !std::isfinite(m))
      continue;
    xs.push_back(m);
    xs.push_back(std::nextafter(m, 0.0f));
    xs.push_back(std::nextafter(m, std::numeric_limits<float>::infinity()));
  }
  for (int i = 0; i < 1000000; ++i) {
    float x = floatFromBits(static_cast<uint32_t>(rng.gen()));
    if (!std::isnan(x))
      xs.push_back(x);
  }
  int failures = 0;
  for (float x : xs) {
    uint16_t got = f.fromFloat(x), want = oracle(f, x);
    if (got != want && ++failures <= 10)
      ADD_FAILURE() << f.name << "(" << x << " = 0x" << std::hex << floatBits(x)
                    << ") = 0x" << got << ", expected 0x" << want;
  }
  EXPECT_EQ(failures, 0);
  // A NaN stays a NaN of the same sign.
  for (float nan : {std::numeric_limits<float>::quiet_NaN(),
                    -std::numeric_limits<float>::quiet_NaN(),
                    floatFromBits(0x7F800001u), floatFromBits(0xFFA00000u)}) {
    uint16_t h = f.fromFloat(nan);
    EXPECT_TRUE(isNaN16(f, h))
        << f.name << " of NaN 0x" << std::hex << floatBits(nan) << " = 0x" << h;
    EXPECT_EQ((h & 0x8000) != 0, std::signbit(nan));
  }
}

TEST(Numbers, FloatToHalfRoundsToNearestEven) {
  checkRounding(kHalf, "Numbers.FloatToHalfRoundsToNearestEven");
}
TEST(Numbers, FloatToBF16RoundsToNearestEven) {
  checkRounding(kBF16, "Numbers.FloatToBF16RoundsToNearestEven");
}

#ifdef __FLT16_MAX__
TEST(Numbers, HalfAgreesWithTheCompilersFloat16) {
  Rng rng(announceSeed("Numbers.HalfAgreesWithTheCompilersFloat16"));
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    uint16_t bits = static_cast<uint16_t>(b);
    _Float16 h;
    std::memcpy(&h, &bits, 2);
    float want = static_cast<float>(h), got = halfToFloat(bits);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got)) << b;
    else
      EXPECT_EQ(floatBits(got), floatBits(want)) << "pattern " << b;
  }
  for (int i = 0; i < 200000; ++i) {
    float x = floatFromBits(static_cast<uint32_t>(rng.gen()));
    if (std::isnan(x))
      continue;
    _Float16 h = static_cast<_Float16>(x);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    ASSERT_EQ(floatToHalf(x), want) << "x = " << x;
  }
}
#endif

TEST(Numbers, TypedElements) {
  Rng rng(announceSeed("Numbers.TypedElements"));
  for (rt::DType t : {rt::DType::F16, rt::DType::BF16, rt::DType::F32}) {
    SCOPED_TRACE(rt::toString(t));
    std::vector<double> v = randomValues(rng, 100, -300.0, 300.0);
    v.push_back(0.1); // not representable in any of the three
    std::vector<uint8_t> bytes = toBytes(t, v);
    ASSERT_EQ(bytes.size(), v.size() * rt::elementBytes(t));
    for (size_t i = 0; i < v.size(); ++i) {
      double r = roundTo(t, v[i]);
      EXPECT_EQ(loadElement(bytes.data(), static_cast<int64_t>(i), t), r);
      EXPECT_EQ(roundTo(t, r), r) << "rounding is idempotent";
      uint8_t one[4] = {};
      EXPECT_EQ(storeElement(one, 0, t, v[i]), r);
      EXPECT_EQ(std::memcmp(one, bytes.data() + i * rt::elementBytes(t),
                            static_cast<size_t>(rt::elementBytes(t))),
                0);
    }
    EXPECT_NE(roundTo(t, 0.1), 0.1);
  }
  EXPECT_EQ(floatBits(1.0f), 0x3F800000u);
  EXPECT_EQ(floatFromBits(0xC0000000u), -2.0f);
  EXPECT_EQ(roundTo(rt::DType::F16, 1.0 + 1.0 / 4096), 1.0);
  EXPECT_EQ(roundTo(rt::DType::BF16, 1.0 + 1.0 / 256), 1.0);
  EXPECT_EQ(roundTo(rt::DType::F32, 1.0 + 1e-9), 1.0);
  EXPECT_TRUE(std::isinf(roundTo(rt::DType::F16, 70000.0)));
}

//===----------------------------------------------------------------------===//
// Cache offsets
//===----------------------------------------------------------------------===//

std::vector<CacheGeometry> allGeometries(int64_t P, int64_t H, int64_t D) {
  std::vector<CacheGeometry> gs;
  for (rt::CacheLayout l : {rt::CacheLayout::NHD, rt::CacheLayout::HND})
    for (rt::KVStorage s : {rt::KVStorage::Joint, rt::KVStorage::Split}) {
      CacheGeometry g;
      g.layout = l;
      g.storage = s;
      g.pageSize = P;
      g.kvHeads = H;
      g.headDim = D;
      gs.push_back(g);
    }
  return gs;
}

std::string describe(const CacheGeometry &g) {
  return std::string(rt::toString(g.layout)) + " " + rt::toString(g.storage);
}

TEST(CacheOffsets, RowMajorInTheDocumentedShape) {
  const int64_t N = 4, P = 3, H = 2, D = 5;
  for (const CacheGeometry &g : allGeometries(P, H, D)) {
    SCOPED_TRACE(describe(g));
    bool joint = g.storage == rt::KVStorage::Joint;
    bool nhd = g.layout == rt::CacheLayout::NHD;
    std::vector<int64_t> shape = g.bufferShape(N);
    std::vector<int64_t> expectShape =
        joint ? (nhd ? std::vector<int64_t>{N, 2, P, H, D}
                     : std::vector<int64_t>{N, 2, H, P, D})
              : (nhd ? std::vector<int64_t>{N, P, H, D}
                     : std::vector<int64_t>{N, H, P, D});
    ASSERT_EQ(shape, expectShape);
    ASSERT_EQ(g.numBuffers(), joint ? 1 : 2);
    std::vector<int64_t> strides = rt::contiguousStrides(shape);
    int64_t elems = g.bufferElements(N);
    EXPECT_EQ(elems, strides[0] * N);
    std::vector<std::vector<int>> hits(
        static_cast<size_t>(g.numBuffers()),
        std::vector<int>(static_cast<size_t>(elems), 0));
    for (int64_t page = 0; page < N; ++page)
      for (int64_t which = 0; which < 2; ++which)
        for (int64_t slot = 0; slot < P; ++slot)
          for (int64_t head = 0; head < H; ++head)
            for (int64_t d = 0; d < D; ++d) {
              std::vector<int64_t> idx = {page};
              if (joint)
                idx.push_back(which);
              idx.push_back(nhd ? slot : head);
              idx.push_back(nhd ? head : slot);
              idx.push_back(d);
              int64_t want = 0;
              for (size_t i = 0; i < idx.size(); ++i)
                want += idx[i] * strides[i];
              int64_t got = g.offset(page, which, slot, head, d);
              ASSERT_EQ(got, want)
                  << "page " << page << " which " << which << " slot " << slot
                  << " head " << head << " d " << d;
              ++hits[static_cast<size_t>(g.bufferOf(which))]
                    [static_cast<size_t>(got)];
            }
    // Every element of every buffer is hit exactly once.
    for (const std::vector<int> &h : hits)
      for (int n : h)
        ASSERT_EQ(n, 1);
  }
}

TEST(CacheOffsets, BuffersHoldTheReferenceCache) {
  Rng rng(announceSeed("CacheOffsets.BuffersHoldTheReferenceCache"));
  for (const CacheGeometry &g : allGeometries(4, 3, 6))
    for (rt::DType t : {rt::DType::F16, rt::DType::BF16, rt::DType::F32}) {
      SCOPED_TRACE(describe(g) + " " + rt::toString(t));
      ref::PagedKV kv = randomPagedKV(rng, g.refLayout(), 5, g.pageSize,
                                      g.kvHeads, g.headDim);
      std::vector<std::vector<uint8_t>> bufs = cacheBuffers(g, t, kv);
      ASSERT_EQ(static_cast<int>(bufs.size()), g.numBuffers());
      for (const std::vector<uint8_t> &b : bufs)
        ASSERT_EQ(static_cast<int64_t>(b.size()),
                  g.bufferElements(5) * rt::elementBytes(t));
      for (int64_t page = 0; page < 5; ++page)
        for (int64_t slot = 0; slot < g.pageSize; ++slot)
          for (int64_t h = 0; h < g.kvHeads; ++h)
            for (int64_t d = 0; d < g.headDim; ++d)
              for (int64_t which = 0; which < 2; ++which) {
                double want = roundTo(t, which ? kv.vAt(page, slot, h, d)
                                               : kv.kAt(page, slot, h, d));
                const uint8_t *buf =
                    bufs[static_cast<size_t>(g.bufferOf(which))].data();
                ASSERT_EQ(
                    loadElement(buf, g.offset(page, which, slot, h, d), t),
                    want);
                ASSERT_EQ(g.offset(page, which, slot, h, d),
                          g.offsetOfRef(kv.offset(page, slot, h, d), which));
              }
    }
}

/// The value of fp8 code `b` from its fields (independent of fp8Bits).
double fp8Decode(uint8_t b, ref::FP8Format f) {
  bool e4m3 = f == ref::FP8Format::E4M3FN;
  int manBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  int exp = (b & 0x7F) >> manBits, man = b & ((1 << manBits) - 1);
  double sign = (b & 0x80) ? -1 : 1;
  int maxExp = (1 << (7 - manBits)) - 1;
  if (e4m3 && exp == maxExp && man == (1 << manBits) - 1)
    return std::numeric_limits<double>::quiet_NaN();
  if (!e4m3 && exp == maxExp)
    return man ? std::numeric_limits<double>::quiet_NaN()
               : sign * std::numeric_limits<double>::infinity();
  if (exp == 0)
    return sign * std::ldexp(man, 1 - bias - manBits);
  return sign * std::ldexp((1 << manBits) + man, exp - bias - manBits);
}

TEST(Numbers, EveryFP8CodeRoundTrips) {
  for (ref::FP8Format f : {ref::FP8Format::E4M3FN, ref::FP8Format::E5M2}) {
    uint8_t nan = f == ref::FP8Format::E4M3FN ? 0x7F : 0x7E;
    int values = 0;
    for (int b = 0; b < 256; ++b) {
      double v = fp8Decode(static_cast<uint8_t>(b), f);
      if (std::isnan(v)) {
        EXPECT_EQ(fp8Bits(v, f), nan) << "NaN code " << b;
        continue;
      }
      ++values;
      EXPECT_TRUE(ref::isFP8Value(v, f)) << b << " = " << v;
      EXPECT_EQ(fp8Bits(v, f), b) << "code " << b << " = " << v;
    }
    EXPECT_EQ(values, f == ref::FP8Format::E4M3FN ? 254 : 250);
    EXPECT_EQ(fp8Decode(fp8Bits(ref::fp8Max(f), f), f), ref::fp8Max(f));
  }
  EXPECT_EQ(fp8FormatOf(rt::KVDType::E4M3), ref::FP8Format::E4M3FN);
  EXPECT_EQ(fp8FormatOf(rt::KVDType::E5M2), ref::FP8Format::E5M2);
}

TEST(CacheOffsets, FP8BuffersHoldTheCodes) {
  Rng rng(announceSeed("CacheOffsets.FP8BuffersHoldTheCodes"));
  for (const CacheGeometry &g : allGeometries(4, 3, 6))
    for (ref::FP8Format f : {ref::FP8Format::E4M3FN, ref::FP8Format::E5M2}) {
      SCOPED_TRACE(describe(g));
      ref::PagedKV kv = randomPagedKV(rng, g.refLayout(), 5, g.pageSize,
                                      g.kvHeads, g.headDim);
      for (std::vector<double> *x : {&kv.k, &kv.v})
        for (double &v : *x)
          v = ref::quantizeFP8(v * ref::fp8Max(f), f);
      kv.fp8 = ref::FP8Scales{f, {0.5}, {0.25}};
      std::vector<std::vector<uint8_t>> bufs =
          cacheBuffers(g, rt::DType::F16, kv);
      for (const std::vector<uint8_t> &b : bufs)
        ASSERT_EQ(static_cast<int64_t>(b.size()), g.bufferElements(5))
            << "one byte per element";
      for (int64_t page = 0; page < 5; ++page)
        for (int64_t slot = 0; slot < g.pageSize; ++slot)
          for (int64_t h = 0; h < g.kvHeads; ++h)
            for (int64_t d = 0; d < g.headDim; ++d)
              for (int64_t which = 0; which < 2; ++which) {
                double want =
                    which ? kv.vAt(page, slot, h, d) : kv.kAt(page, slot, h, d);
                uint8_t code = bufs[static_cast<size_t>(g.bufferOf(which))]
                                   [g.offset(page, which, slot, h, d)];
                ASSERT_EQ(fp8Decode(code, f), want);
              }
    }
}

TEST(CacheOffsets, OfABundleConfig) {
  rt::BundleConfig c;
  c.headDim = 64;
  c.pageSize = 16;
  c.kvHeads = 8;
  c.group = 4;
  c.layout = rt::CacheLayout::HND;
  c.kv = rt::KVStorage::Split;
  CacheGeometry g = CacheGeometry::of(c);
  EXPECT_EQ(g.layout, rt::CacheLayout::HND);
  EXPECT_EQ(g.storage, rt::KVStorage::Split);
  EXPECT_EQ(g.pageElements(), 16 * 8 * 64);
  EXPECT_EQ(g.refLayout(), ref::KVLayout::HND);
  // HND: [page, head, slot, d].
  EXPECT_EQ(g.offset(2, 1, 3, 5, 7), ((2 * 8 + 5) * 16 + 3) * 64 + 7);
  EXPECT_EQ(g.bufferOf(0), 0);
  EXPECT_EQ(g.bufferOf(1), 1);
  rt::ProblemDims dims;
  dims.numPages = 9;
  EXPECT_EQ(g.bufferShape(9), rt::roleShape(c, rt::ArgRole::K, dims));
}

//===----------------------------------------------------------------------===//
// Random cases
//===----------------------------------------------------------------------===//

TEST(Random, SeedsAndDraws) {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    int64_t x = a.uniformInt(-5, 5);
    EXPECT_EQ(x, b.uniformInt(-5, 5));
    EXPECT_GE(x, -5);
    EXPECT_LE(x, 5);
    double u = a.uniform(2.0, 3.0);
    EXPECT_EQ(u, b.uniform(2.0, 3.0));
    EXPECT_GE(u, 2.0);
    EXPECT_LT(u, 3.0);
  }
  EXPECT_NE(Rng(42).gen(), c.gen());
  EXPECT_EQ(Rng(1).uniformInt(7, 7), 7);
  EXPECT_EQ(Rng(1).uniformInt(7, 3), 7);
  EXPECT_NE(mixSeed(1, 2, 3), mixSeed(1, 2, 4));
  EXPECT_NE(mixSeed(1, 2), mixSeed(2, 1));
  EXPECT_EQ(mixSeed(5, 6, 7), mixSeed(5, 6, 7));
  EXPECT_NE(baseSeed("A", 1), baseSeed("B", 1));
}

TEST(Random, CountsAndPrefixSums) {
  EXPECT_EQ(pagesFor(0, 16), 0);
  EXPECT_EQ(pagesFor(1, 16), 1);
  EXPECT_EQ(pagesFor(16, 16), 1);
  EXPECT_EQ(pagesFor(17, 16), 2);
  EXPECT_EQ(totalPages({0, 1, 16, 17, 33}, 16), 0 + 1 + 1 + 2 + 3);
  EXPECT_EQ(indptrOf({}), (std::vector<int32_t>{0}));
  EXPECT_EQ(indptrOf({3, 0, 2}), (std::vector<int32_t>{0, 3, 3, 5}));
}

TEST(Random, LengthsCoverTheRaggedCases) {
  Rng rng(announceSeed("Random.LengthsCoverTheRaggedCases"));
  const int64_t unit = 16, maxLen = 1000;
  int zeros = 0, multiples = 0, withinUnit = 0, other = 0;
  std::vector<int64_t> lens = randomLens(rng, 5000, unit, maxLen);
  ASSERT_EQ(lens.size(), 5000u);
  for (int64_t len : lens) {
    ASSERT_GE(len, 0);
    ASSERT_LE(len, maxLen);
    if (len == 0)
      ++zeros;
    else if (len % unit == 0)
      ++multiples;
    else if (len < unit)
      ++withinUnit;
    else
      ++other;
  }
  // Expected about 12%, 18%, 12%, 58%.
  EXPECT_GT(zeros, 400);
  EXPECT_GT(multiples, 700);
  EXPECT_GT(withinUnit, 400);
  EXPECT_GT(other, 2000);
  // maxLen below the unit: still within [0, maxLen].
  for (int i = 0; i < 200; ++i) {
    int64_t len = sampleLen(rng, 64, 10);
    ASSERT_GE(len, 0);
    ASSERT_LE(len, 10);
  }
  EXPECT_EQ(sampleLen(rng, 16, 0), 0);
  EXPECT_TRUE(randomLens(rng, 0, 16, 100).empty());
}

TEST(Random, PagePoolIsAPermutation) {
  Rng rng(announceSeed("Random.PagePoolIsAPermutation"));
  PagePool pool(rng, 50);
  EXPECT_EQ(pool.numPages(), 50);
  std::vector<int32_t> taken;
  for (int i = 0; i < 50; ++i)
    taken.push_back(pool.take());
  std::set<int32_t> distinct(taken.begin(), taken.end());
  EXPECT_EQ(distinct.size(), 50u);
  EXPECT_EQ(*distinct.begin(), 0);
  EXPECT_EQ(*distinct.rbegin(), 49);
  EXPECT_FALSE(std::is_sorted(taken.begin(), taken.end()))
      << "the pool hands out pages in a random order";
  EXPECT_THROW(pool.take(), std::logic_error);
}

TEST(Random, PageTablesAreValidAndHaveTheLengths) {
  uint64_t seed = announceSeed("Random.PageTablesAreValidAndHaveTheLengths");
  for (int i = 0; i < 300; ++i) {
    uint64_t caseSeed = mixSeed(seed, static_cast<uint64_t>(i));
    SCOPED_TRACE("case seed " + std::to_string(caseSeed));
    Rng rng(caseSeed);
    int64_t P = rng.uniformInt(1, 40);
    std::vector<int64_t> lens =
        randomLens(rng, rng.uniformInt(0, 20), P, 12 * P);
    int64_t used = totalPages(lens, P);
    int64_t numPages = used + rng.uniformInt(0, 5);
    PagePool pool(rng, numPages);
    ref::PageTable pt = makePageTable(rng, P, lens, pool);
    int64_t batch = static_cast<int64_t>(lens.size());
    ASSERT_EQ(pt.batch(), batch);
    ASSERT_EQ(pt.pageSize, P);
    ASSERT_EQ(static_cast<int64_t>(pt.indices.size()), used);
    rt::Status s = rt::validatePageTable(pt.indptr, pt.indices, pt.lastPageLen,
                                         batch, P, numPages);
    ASSERT_TRUE(s) << s.message;
    EXPECT_NO_THROW(ref::validate(pt, numPages));
    std::vector<int64_t> got;
    ASSERT_TRUE(rt::kvLengths(pt.indptr, pt.lastPageLen, batch, P, got));
    EXPECT_EQ(got, lens);
    for (int64_t b = 0; b < batch; ++b) {
      EXPECT_EQ(pt.kvLen(b), lens[static_cast<size_t>(b)]);
      EXPECT_EQ(pt.numPagesOf(b), pagesFor(lens[static_cast<size_t>(b)], P));
      if (lens[static_cast<size_t>(b)] == 0) {
        EXPECT_GE(pt.lastPageLen[static_cast<size_t>(b)], 0);
        EXPECT_LE(pt.lastPageLen[static_cast<size_t>(b)], P);
      }
    }
    std::set<int32_t> distinct(pt.indices.begin(), pt.indices.end());
    EXPECT_EQ(static_cast<int64_t>(distinct.size()), used);
  }
}

TEST(Random, ReferenceCaches) {
  Rng rng(announceSeed("Random.ReferenceCaches"));
  ref::PagedKV kv = randomPagedKV(rng, ref::KVLayout::HND, 3, 4, 2, 8);
  EXPECT_EQ(kv.layout, ref::KVLayout::HND);
  ASSERT_EQ(static_cast<int64_t>(kv.k.size()), 3 * 4 * 2 * 8);
  ASSERT_EQ(kv.v.size(), kv.k.size());
  for (double x : kv.k) {
    EXPECT_GE(x, -1.0);
    EXPECT_LT(x, 1.0);
  }
  EXPECT_NE(kv.k, kv.v);
  ref::PagedKV h = randomPagedKV(rng, ref::KVLayout::NHD, 2, 3, 1, 4,
                                 rt::DType::F16, -4.0, 4.0);
  for (double x : h.v) {
    EXPECT_EQ(roundTo(rt::DType::F16, x), x);
    EXPECT_GE(x, -4.0);
    EXPECT_LE(x, 4.0);
  }
}

} // namespace
