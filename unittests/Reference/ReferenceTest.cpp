//===- ReferenceTest.cpp - tests of the float64 reference ops -------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// Hand-computed cases and randomized property tests of pa::ref. Random cases
// (pa::test::Rng, PATestSupport) print their seed through SCOPED_TRACE so a
// failure can be replayed.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Reference/Reference.h"
#include "PagedAttn/TestSupport/Random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>

using namespace pa::ref;
using pa::test::indptrOf;
using pa::test::pagesFor;
using pa::test::randomPagedKV;
using pa::test::Rng;
using pa::test::totalPages;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// `n` values uniform in [lo, hi).
std::vector<double> randVec(Rng &rng, int64_t n, double lo = -1.0,
                            double hi = 1.0) {
  return pa::test::randomValues(rng, n, lo, hi);
}

/// The same logical cache in another layout.
PagedKV toLayout(const PagedKV &src, KVLayout layout) {
  PagedKV dst(layout, src.numPages, src.pageSize, src.numHeads, src.headDim);
  for (int64_t p = 0; p < src.numPages; ++p)
    for (int64_t s = 0; s < src.pageSize; ++s)
      for (int64_t h = 0; h < src.numHeads; ++h)
        for (int64_t d = 0; d < src.headDim; ++d) {
          dst.kAt(p, s, h, d) = src.kAt(p, s, h, d);
          dst.vAt(p, s, h, d) = src.vAt(p, s, h, d);
        }
  return dst;
}

/// A page table with the given per-request page lists and kv lengths. The
/// last page length of requests without pages is deliberately garbage.
PageTable tableFromPages(const std::vector<std::vector<int32_t>> &pages,
                         const std::vector<int64_t> &kvLens, int64_t pageSize) {
  PageTable pt;
  pt.pageSize = pageSize;
  pt.indptr.push_back(0);
  for (size_t b = 0; b < pages.size(); ++b) {
    pt.indices.insert(pt.indices.end(), pages[b].begin(), pages[b].end());
    pt.indptr.push_back(static_cast<int32_t>(pt.indices.size()));
    int64_t n = static_cast<int64_t>(pages[b].size());
    pt.lastPageLen.push_back(
        n == 0 ? 77 : static_cast<int32_t>(kvLens[b] - (n - 1) * pageSize));
  }
  return pt;
}

/// A page table with kv lengths `lens` over distinct random pages of
/// [0, numPages).
PageTable randomTable(Rng &rng, const std::vector<int64_t> &lens,
                      int64_t pageSize, int64_t numPages) {
  pa::test::PagePool pool(rng, numPages);
  return pa::test::makePageTable(rng, pageSize, lens, pool);
}

/// Dense [kv_len, D] copy of K (or V) of request b, kv head `head`.
std::vector<double> denseRows(const PagedKV &kv, const PageTable &pt, int64_t b,
                              int64_t head, bool values) {
  std::vector<double> rows;
  int64_t npages = pt.indptr[b + 1] - pt.indptr[b];
  int64_t len =
      npages == 0 ? 0 : (npages - 1) * pt.pageSize + pt.lastPageLen[b];
  for (int64_t t = 0; t < len; ++t) {
    int64_t page = pt.indices[pt.indptr[b] + t / pt.pageSize];
    for (int64_t d = 0; d < kv.headDim; ++d)
      rows.push_back(values ? kv.vAt(page, t % pt.pageSize, head, d)
                            : kv.kAt(page, t % pt.pageSize, head, d));
  }
  return rows;
}

/// Textbook attention of one query over dense keys, written independently
/// of the reference (no max subtraction; inputs are small).
void naiveAttend(const double *q, const std::vector<double> &keys,
                 const std::vector<double> &values, int64_t len, int64_t dim,
                 const std::function<bool(int64_t)> &visible, double scale,
                 std::optional<double> cap, double slope, int64_t pos,
                 double *o, double &lse) {
  std::vector<double> e(len, 0.0);
  double sum = 0;
  for (int64_t t = 0; t < len; ++t) {
    if (!visible(t))
      continue;
    double s = 0;
    for (int64_t d = 0; d < dim; ++d)
      s += q[d] * keys[t * dim + d];
    s *= scale;
    if (cap)
      s = *cap * std::tanh(s / *cap);
    s += slope * static_cast<double>(t - pos);
    e[t] = std::exp(s);
    sum += e[t];
  }
  for (int64_t d = 0; d < dim; ++d) {
    o[d] = 0;
    for (int64_t t = 0; t < len; ++t)
      o[d] += e[t] / (sum == 0 ? 1 : sum) * values[t * dim + d];
  }
  lse = sum == 0 ? -kInf : std::log(sum);
}

/// Naive ragged prefill over dense copies; `bits` (if non-null) holds the
/// unpacked custom mask of each request, [qo_len * kv_len].
States naivePrefill(const std::vector<double> &q, int64_t numQHeads,
                    const std::vector<int32_t> &qoIndptr, const PagedKV &kv,
                    const PageTable &pt, const AttnOptions &opts,
                    const std::vector<int32_t> *qPositions = nullptr,
                    const std::vector<std::vector<uint8_t>> *bits = nullptr) {
  const int64_t dim = kv.headDim;
  const int64_t group = numQHeads / kv.numHeads;
  const double scale = opts.smScale ? *opts.smScale : 1.0 / std::sqrt(dim);
  States out = States::identity(qoIndptr.back(), numQHeads, dim);
  for (int64_t b = 0; b + 1 < static_cast<int64_t>(qoIndptr.size()); ++b) {
    const int64_t qoLen = qoIndptr[b + 1] - qoIndptr[b];
    for (int64_t h = 0; h < numQHeads; ++h) {
      std::vector<double> keys = denseRows(kv, pt, b, h / group, false);
      std::vector<double> values = denseRows(kv, pt, b, h / group, true);
      const int64_t kvLen = static_cast<int64_t>(keys.size()) / dim;
      for (int64_t i = 0; i < qoLen; ++i) {
        const int64_t row = qoIndptr[b] + i;
        const int64_t pos = qPositions ? (*qPositions)[row] : kvLen - qoLen + i;
        auto visible = [&](int64_t t) {
          bool ok = true;
          if (opts.mask == MaskMode::Causal)
            ok = ok && t <= pos;
          if (opts.mask == MaskMode::Custom)
            ok = ok && (*bits)[b][i * kvLen + t] != 0;
          if (opts.window)
            ok = ok && t > pos - *opts.window;
          return ok;
        };
        double slope = opts.alibiSlopes.empty() ? 0.0 : opts.alibiSlopes[h];
        naiveAttend(&q[(row * numQHeads + h) * dim], keys, values, kvLen, dim,
                    visible, scale, opts.logitsSoftCap, slope, pos,
                    &out.oAt(row, h, 0), out.lseAt(row, h));
      }
    }
  }
  if (opts.lseBase2)
    for (double &l : out.lse)
      l /= std::log(2.0);
  return out;
}

/// Expects two states to agree within `tol` (lse: both -inf or close) and
/// to contain no NaN.
void expectStatesNear(const States &a, const States &b, double tol) {
  ASSERT_EQ(a.n, b.n);
  ASSERT_EQ(a.numHeads, b.numHeads);
  ASSERT_EQ(a.headDim, b.headDim);
  ASSERT_EQ(a.o.size(), b.o.size());
  ASSERT_EQ(a.lse.size(), b.lse.size());
  for (size_t i = 0; i < a.lse.size(); ++i) {
    ASSERT_FALSE(std::isnan(a.lse[i])) << "lse[" << i << "]";
    ASSERT_FALSE(std::isnan(b.lse[i])) << "lse[" << i << "]";
    if (std::isinf(a.lse[i]) || std::isinf(b.lse[i]))
      EXPECT_EQ(a.lse[i], b.lse[i]) << "lse[" << i << "]";
    else
      EXPECT_NEAR(a.lse[i], b.lse[i], tol) << "lse[" << i << "]";
  }
  for (size_t i = 0; i < a.o.size(); ++i) {
    ASSERT_FALSE(std::isnan(a.o[i])) << "o[" << i << "]";
    EXPECT_NEAR(a.o[i], b.o[i], tol) << "o[" << i << "]";
  }
}

/// Expects every row to be the empty state (o = 0, lse = -inf).
void expectEmptyRow(const States &s, int64_t row) {
  for (int64_t h = 0; h < s.numHeads; ++h) {
    EXPECT_EQ(s.lseAt(row, h), -kInf) << "row " << row << " head " << h;
    for (int64_t d = 0; d < s.headDim; ++d)
      EXPECT_EQ(s.oAt(row, h, d), 0.0) << "row " << row << " head " << h;
  }
}

/// Expects `fn` to throw pa::ref::Error whose message contains `needle`.
template <typename Fn> void expectError(Fn &&fn, const std::string &needle) {
  try {
    fn();
    ADD_FAILURE() << "expected pa::ref::Error containing \"" << needle << "\"";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message \"" << e.what() << "\" lacks \"" << needle << "\"";
  }
}

/// A random attention problem: cache, page table, ragged queries.
struct Problem {
  int64_t hq = 0;
  PagedKV kv;
  PageTable pt;
  std::vector<int64_t> kvLens, qoLens;
  std::vector<int32_t> qoIndptr;
  std::vector<double> q;
};

/// kv lengths in [0, 3P+2] (some 0), qo_len in [0, kv_len] or == kv_len.
Problem randomProblem(Rng &rng, KVLayout layout, bool qoEqualsKv,
                      int64_t maxBatch = 4) {
  static const int64_t kPageSizes[] = {1, 3, 5, 7, 16};
  Problem p;
  int64_t pageSize = kPageSizes[rng.uniformInt(0, 4)];
  int64_t hkv = rng.uniformInt(1, 2);
  int64_t group = rng.uniformInt(1, 8);
  int64_t dim = rng.uniformInt(1, 3) * 4;
  p.hq = hkv * group;
  int64_t batch = rng.uniformInt(1, maxBatch);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t len =
        rng.uniformInt(0, 5) == 0 ? 0 : rng.uniformInt(1, 3 * pageSize + 2);
    p.kvLens.push_back(len);
    p.qoLens.push_back(
        qoEqualsKv ? len : rng.uniformInt(0, std::min<int64_t>(len, 6)));
  }
  int64_t numPages = totalPages(p.kvLens, pageSize) + 2;
  p.kv = randomPagedKV(rng, layout, numPages, pageSize, hkv, dim);
  p.pt = randomTable(rng, p.kvLens, pageSize, numPages);
  p.qoIndptr = indptrOf(p.qoLens);
  p.q = randVec(rng, p.qoIndptr.back() * p.hq * dim);
  return p;
}

std::vector<double> randomSlopes(Rng &rng, int64_t numHeads) {
  return randVec(rng, numHeads, 0.0, 0.5);
}

//===----------------------------------------------------------------------===//
// Layout and page table basics
//===----------------------------------------------------------------------===//

TEST(PagedKVTest, OffsetsFollowLayout) {
  PagedKV nhd(KVLayout::NHD, 3, 5, 2, 4);
  PagedKV hnd(KVLayout::HND, 3, 5, 2, 4);
  EXPECT_EQ(nhd.numElements(), 3 * 5 * 2 * 4);
  EXPECT_EQ(nhd.k.size(), 120u);
  EXPECT_EQ(hnd.v.size(), 120u);
  // NHD: ((page*P + slot)*H + head)*D + d.
  EXPECT_EQ(nhd.offset(2, 3, 1, 2), ((2 * 5 + 3) * 2 + 1) * 4 + 2);
  // HND: ((page*H + head)*P + slot)*D + d.
  EXPECT_EQ(hnd.offset(2, 3, 1, 2), ((2 * 2 + 1) * 5 + 3) * 4 + 2);
  hnd.kAt(1, 4, 1, 3) = 7.5;
  EXPECT_EQ(hnd.k[hnd.offset(1, 4, 1, 3)], 7.5);
  EXPECT_THROW(PagedKV(KVLayout::NHD, 1, 0, 1, 1), Error);
}

TEST(PageTableTest, KvLenAndLocate) {
  PageTable pt;
  pt.pageSize = 3;
  pt.indptr = {0, 2, 2, 5};
  pt.indices = {4, 1, 0, 3, 2};
  pt.lastPageLen = {1, 0, 3};
  EXPECT_EQ(pt.batch(), 3);
  EXPECT_EQ(pt.kvLen(0), 4);
  EXPECT_EQ(pt.kvLen(1), 0);
  EXPECT_EQ(pt.kvLen(2), 9);
  EXPECT_EQ(pt.locate(0, 3), (std::pair<int64_t, int64_t>(1, 0)));
  EXPECT_EQ(pt.locate(2, 5), (std::pair<int64_t, int64_t>(3, 2)));
  EXPECT_NO_THROW(validate(pt, 5)); // lastPageLen of the empty request ignored
  EXPECT_EQ(PageTable().batch(), 0);
}

//===----------------------------------------------------------------------===//
// Hand-computed attention
//===----------------------------------------------------------------------===//

TEST(DecodeTest, SingleTokenGivesValue) {
  PagedKV kv(KVLayout::NHD, 2, 4, 1, 4);
  PageTable pt{{0, 1}, {1}, {1}, 4};
  const double k[] = {1, 2, 0, -1}, v[] = {0.5, -2, 3, 4};
  for (int d = 0; d < 4; ++d) {
    kv.kAt(1, 0, 0, d) = k[d];
    kv.vAt(1, 0, 0, d) = v[d];
  }
  std::vector<double> q = {1, 1, 1, 1};
  States s = decode(q, 1, kv, pt, {});
  // s = <q, k> / sqrt(4) = 2 / 2 = 1.
  EXPECT_DOUBLE_EQ(s.lseAt(0, 0), 1.0);
  for (int d = 0; d < 4; ++d)
    EXPECT_DOUBLE_EQ(s.oAt(0, 0, d), v[d]);
}

TEST(DecodeTest, TwoTokensKnownScores) {
  PagedKV kv(KVLayout::HND, 1, 2, 1, 2);
  PageTable pt{{0, 1}, {0}, {2}, 2};
  kv.kAt(0, 0, 0, 0) = 1; // k0 = (1, 0)
  kv.kAt(0, 1, 0, 1) = 1; // k1 = (0, 1)
  kv.vAt(0, 0, 0, 0) = 2; // v0 = (2, 0)
  kv.vAt(0, 1, 0, 1) = 3; // v1 = (0, 3)
  AttnOptions opts;
  opts.smScale = 1.0;
  States s = decode({1, 0}, 1, kv, pt, opts); // scores (1, 0)
  const double e = std::exp(1.0);
  EXPECT_NEAR(s.lseAt(0, 0), std::log(e + 1), 1e-15);
  EXPECT_NEAR(s.oAt(0, 0, 0), 2 * e / (e + 1), 1e-15);
  EXPECT_NEAR(s.oAt(0, 0, 1), 3 / (e + 1), 1e-15);

  // Window 1 leaves only the last token (pos = 1).
  opts.window = 1;
  s = decode({1, 0}, 1, kv, pt, opts);
  EXPECT_DOUBLE_EQ(s.lseAt(0, 0), 0.0);
  EXPECT_DOUBLE_EQ(s.oAt(0, 0, 0), 0.0);
  EXPECT_DOUBLE_EQ(s.oAt(0, 0, 1), 3.0);
}

TEST(DecodeTest, DefaultScaleIsInverseSqrtHeadDim) {
  Rng rng(11);
  PagedKV kv = randomPagedKV(rng, KVLayout::NHD, 3, 5, 2, 8);
  PageTable pt{{0, 2, 3}, {2, 0, 1}, {4, 5}, 5};
  std::vector<double> q = randVec(rng, 2 * 4 * 8);
  AttnOptions explicitScale;
  explicitScale.smScale = 1.0 / std::sqrt(8.0);
  expectStatesNear(decode(q, 4, kv, pt, {}),
                   decode(q, 4, kv, pt, explicitScale), 0.0);
}

TEST(DecodeTest, EmptyRequestIsIdentity) {
  Rng rng(12);
  PagedKV kv = randomPagedKV(rng, KVLayout::NHD, 2, 3, 1, 4);
  PageTable pt{{0, 0, 1, 1}, {1}, {0, 2, -5}, 3}; // garbage for empty requests
  std::vector<double> q = randVec(rng, 3 * 2 * 4);
  States s = decode(q, 2, kv, pt, {});
  expectEmptyRow(s, 0);
  expectEmptyRow(s, 2);
  EXPECT_TRUE(std::isfinite(s.lseAt(1, 0)));
}

TEST(SoftCapTest, BoundsScores) {
  PagedKV kv(KVLayout::NHD, 1, 4, 1, 2);
  PageTable pt{{0, 1}, {0}, {1}, 4};
  kv.kAt(0, 0, 0, 0) = 1;
  AttnOptions opts;
  opts.smScale = 1.0;
  opts.logitsSoftCap = 5.0;
  // One token: lse = s = c*tanh(raw/c).
  States s = decode({100, 0}, 1, kv, pt, opts);
  EXPECT_NEAR(s.lseAt(0, 0), 5.0 * std::tanh(20.0), 1e-12);
  EXPECT_LE(s.lseAt(0, 0), 5.0);
  s = decode({-1e6, 0}, 1, kv, pt, opts);
  EXPECT_GE(s.lseAt(0, 0), -5.0);

  // Many tokens with huge raw scores: |lse - ln(n)| <= c.
  Rng rng(13);
  PagedKV big = randomPagedKV(rng, KVLayout::HND, 4, 4, 1, 8);
  PageTable pt4{{0, 4}, {3, 1, 0, 2}, {3}, 4};
  std::vector<double> q = randVec(rng, 8, -1000, 1000);
  s = decode(q, 1, big, pt4, opts);
  EXPECT_LE(std::abs(s.lseAt(0, 0) - std::log(15.0)), 5.0 + 1e-12);
}

TEST(AlibiTest, HandComputedBias) {
  PagedKV kv(KVLayout::NHD, 1, 4, 1, 1);
  PageTable pt{{0, 1}, {0}, {3}, 4};
  for (int t = 0; t < 3; ++t) {
    kv.kAt(0, t, 0, 0) = 1;
    kv.vAt(0, t, 0, 0) = t;
  }
  AttnOptions opts;
  opts.smScale = 1.0;
  opts.alibiSlopes = {0.0, 0.5};
  // Head 0: scores (1,1,1). Head 1: scores 1 + 0.5*(t-2) = (0, 0.5, 1).
  States s = decode({1, 1}, 2, kv, pt, opts);
  EXPECT_NEAR(s.lseAt(0, 0), 1 + std::log(3.0), 1e-14);
  EXPECT_NEAR(s.oAt(0, 0, 0), 1.0, 1e-14);
  const double w0 = 1, w1 = std::exp(0.5), w2 = std::exp(1.0);
  EXPECT_NEAR(s.lseAt(0, 1), std::log(w0 + w1 + w2), 1e-14);
  EXPECT_NEAR(s.oAt(0, 1, 0), (w1 + 2 * w2) / (w0 + w1 + w2), 1e-14);
}

TEST(LseBase2Test, DividesByLn2) {
  Rng rng(14);
  Problem p = randomProblem(rng, KVLayout::NHD, false);
  AttnOptions opts;
  opts.mask = MaskMode::Causal;
  States e = prefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, opts);
  opts.lseBase2 = true;
  States two = prefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, opts);
  EXPECT_EQ(e.o, two.o);
  for (size_t i = 0; i < e.lse.size(); ++i) {
    if (std::isinf(e.lse[i]))
      EXPECT_EQ(two.lse[i], e.lse[i]);
    else
      EXPECT_NEAR(two.lse[i], e.lse[i] / std::log(2.0), 1e-13);
  }
  // Single token with score 1: lse2 = 1/ln 2.
  PagedKV kv(KVLayout::NHD, 1, 1, 1, 1);
  kv.kAt(0, 0, 0, 0) = 1;
  AttnOptions o2;
  o2.smScale = 1.0;
  o2.lseBase2 = true;
  States s = decode({1}, 1, kv, PageTable{{0, 1}, {0}, {1}, 1}, o2);
  EXPECT_NEAR(s.lseAt(0, 0), 1 / std::log(2.0), 1e-15);
}

//===----------------------------------------------------------------------===//
// Merge
//===----------------------------------------------------------------------===//

States randomStates(Rng &rng, int64_t n, int64_t h, int64_t d) {
  States s = States::identity(n, h, d);
  s.o = randVec(rng, n * h * d);
  s.lse = randVec(rng, n * h, -5, 5);
  // Some identity rows.
  for (int64_t r = 0; r < n * h; ++r)
    if (rng.uniformInt(0, 4) == 0) {
      s.lse[r] = -kInf;
      std::fill_n(&s.o[r * d], d, 0.0);
    }
  return s;
}

TEST(MergeTest, CommutativeAssociativeIdentity) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    int64_t n = rng.uniformInt(1, 5), h = rng.uniformInt(1, 4),
            d = rng.uniformInt(1, 8);
    States a = randomStates(rng, n, h, d), b = randomStates(rng, n, h, d),
           c = randomStates(rng, n, h, d);
    States id = States::identity(n, h, d);
    expectStatesNear(merge(a, b), merge(b, a), 1e-12);
    expectStatesNear(merge(merge(a, b), c), merge(a, merge(b, c)), 1e-12);
    expectStatesNear(merge(a, id), a, 0.0);
    expectStatesNear(merge(id, a), a, 0.0);
  }
}

TEST(MergeTest, TwoEmptyStatesStayEmpty) {
  States id = States::identity(2, 3, 4);
  States m = merge(id, id);
  for (int64_t r = 0; r < 2; ++r)
    expectEmptyRow(m, r);
  // Garbage o under lse = -inf never leaks into the result.
  States junk = id;
  std::fill(junk.o.begin(), junk.o.end(), std::nan(""));
  m = merge(junk, junk);
  for (int64_t r = 0; r < 2; ++r)
    expectEmptyRow(m, r);
}

TEST(MergeTest, HandComputed) {
  States a = States::identity(1, 1, 1), b = States::identity(1, 1, 1);
  a.o = {1};
  a.lse = {std::log(1.0)};
  b.o = {4};
  b.lse = {std::log(3.0)};
  States m = merge(a, b);
  EXPECT_NEAR(m.lse[0], std::log(4.0), 1e-15);
  EXPECT_NEAR(m.o[0], (1 * 1 + 3 * 4) / 4.0, 1e-15);
  expectError([&] { merge(a, States::identity(2, 1, 1)); }, "shape mismatch");
}

TEST(MergeTest, MergeNMatchesPairwiseFold) {
  for (uint32_t seed = 100; seed < 110; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    int64_t s = rng.uniformInt(1, 4), n = rng.uniformInt(1, 5),
            h = rng.uniformInt(1, 3), d = rng.uniformInt(1, 6);
    std::vector<States> parts;
    for (int64_t j = 0; j < n; ++j)
      parts.push_back(randomStates(rng, s, h, d));
    // Interleave into [S, N, H, D] / [S, N, H].
    std::vector<double> o(s * n * h * d), lse(s * n * h);
    for (int64_t i = 0; i < s; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t k = 0; k < h; ++k) {
          lse[(i * n + j) * h + k] = parts[j].lseAt(i, k);
          for (int64_t x = 0; x < d; ++x)
            o[((i * n + j) * h + k) * d + x] = parts[j].oAt(i, k, x);
        }
    States folded = States::identity(s, h, d);
    for (const States &p : parts)
      folded = merge(folded, p);
    expectStatesNear(mergeN(o, lse, s, n, h, d), folded, 1e-12);
  }
  States none = mergeN({}, {}, 3, 0, 2, 4);
  for (int64_t r = 0; r < 3; ++r)
    expectEmptyRow(none, r);
  expectError([] { mergeN({1.0}, {}, 1, 1, 1, 1); }, "merge_states lse");
}

//===----------------------------------------------------------------------===//
// Randomized attention properties
//===----------------------------------------------------------------------===//

TEST(AttentionTest, UnionOfDisjointKeysIsMergeOfParts) {
  for (uint32_t seed = 200; seed < 230; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    Problem p =
        randomProblem(rng, seed % 2 ? KVLayout::HND : KVLayout::NHD, false);
    const int64_t pageSize = p.pt.pageSize;
    // Split each request's pages at a random page boundary.
    std::vector<std::vector<int32_t>> head, tail;
    std::vector<int64_t> headLens, tailLens;
    for (int64_t b = 0; b < p.pt.batch(); ++b) {
      int64_t npages = p.pt.numPagesOf(b);
      int64_t cut = rng.uniformInt(0, npages);
      head.emplace_back(p.pt.indices.begin() + p.pt.indptr[b],
                        p.pt.indices.begin() + p.pt.indptr[b] + cut);
      tail.emplace_back(p.pt.indices.begin() + p.pt.indptr[b] + cut,
                        p.pt.indices.begin() + p.pt.indptr[b + 1]);
      headLens.push_back(cut == npages ? p.kvLens[b] : cut * pageSize);
      tailLens.push_back(p.kvLens[b] - headLens.back());
    }
    PageTable ptHead = tableFromPages(head, headLens, pageSize);
    PageTable ptTail = tableFromPages(tail, tailLens, pageSize);
    AttnOptions opts;
    if (seed % 3 == 0)
      opts.logitsSoftCap = 0.7;
    std::vector<double> qd = randVec(rng, p.pt.batch() * p.hq * p.kv.headDim);
    expectStatesNear(decode(qd, p.hq, p.kv, p.pt, opts),
                     merge(decode(qd, p.hq, p.kv, ptHead, opts),
                           decode(qd, p.hq, p.kv, ptTail, opts)),
                     1e-12);
    // Prefill without a mask: queries may be placed anywhere.
    std::vector<int32_t> pos(p.qoIndptr.back(), 0);
    expectStatesNear(
        prefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, opts, &pos),
        merge(prefill(p.q, p.hq, p.qoIndptr, p.kv, ptHead, opts, &pos),
              prefill(p.q, p.hq, p.qoIndptr, p.kv, ptTail, opts, &pos)),
        1e-12);
  }
}

TEST(AttentionTest, LayoutsAgree) {
  for (uint32_t seed = 300; seed < 320; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    Problem p = randomProblem(rng, KVLayout::NHD, false);
    PagedKV hnd = toLayout(p.kv, KVLayout::HND);
    AttnOptions opts;
    opts.mask = MaskMode::Causal;
    opts.window = rng.uniformInt(1, 6);
    opts.logitsSoftCap = 2.0;
    opts.alibiSlopes = randomSlopes(rng, p.hq);
    States a = prefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, opts);
    States b = prefill(p.q, p.hq, p.qoIndptr, hnd, p.pt, opts);
    expectStatesNear(a, b, 0.0);
    opts.mask = MaskMode::None;
    std::vector<double> qd = randVec(rng, p.pt.batch() * p.hq * p.kv.headDim);
    expectStatesNear(decode(qd, p.hq, p.kv, p.pt, opts),
                     decode(qd, p.hq, hnd, p.pt, opts), 0.0);
  }
}

TEST(PrefillTest, CausalMatchesDenseAttention) {
  for (uint32_t seed = 400; seed < 440; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    Problem p = randomProblem(rng, seed % 2 ? KVLayout::HND : KVLayout::NHD,
                              /*qoEqualsKv=*/true);
    AttnOptions opts;
    opts.mask = MaskMode::Causal;
    if (seed % 4 == 1)
      opts.window = rng.uniformInt(1, 5);
    if (seed % 4 == 2)
      opts.alibiSlopes = randomSlopes(rng, p.hq);
    if (seed % 4 == 3)
      opts.logitsSoftCap = 0.5;
    States got = prefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, opts);
    expectStatesNear(got, naivePrefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, opts),
                     1e-12);
    // First query of each non-empty request sees exactly key 0.
    for (int64_t b = 0; b < p.pt.batch(); ++b) {
      if (p.kvLens[b] == 0)
        continue;
      auto [page, slot] = p.pt.locate(b, 0);
      for (int64_t h = 0; h < p.hq; ++h)
        EXPECT_NEAR(got.oAt(p.qoIndptr[b], h, 0),
                    p.kv.vAt(page, slot, h / (p.hq / p.kv.numHeads), 0), 1e-12);
    }
  }
}

TEST(PrefillTest, AllOptionsMatchDenseAttention) {
  for (uint32_t seed = 500; seed < 540; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    Problem p = randomProblem(rng, seed % 2 ? KVLayout::HND : KVLayout::NHD,
                              /*qoEqualsKv=*/false);
    AttnOptions opts;
    opts.mask = seed % 3 == 0 ? MaskMode::None : MaskMode::Causal;
    if (rng.uniformInt(0, 1))
      opts.window = rng.uniformInt(1, 8);
    if (rng.uniformInt(0, 1))
      opts.alibiSlopes = randomSlopes(rng, p.hq);
    if (rng.uniformInt(0, 1))
      opts.logitsSoftCap = 1.5;
    if (rng.uniformInt(0, 1))
      opts.smScale = 0.3;
    opts.lseBase2 = rng.uniformInt(0, 1);
    expectStatesNear(prefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, opts),
                     naivePrefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, opts),
                     1e-12);
  }
}

/// Random custom mask bits for a problem; `density` in [0, 1].
std::vector<std::vector<uint8_t>> randomBits(Rng &rng, const Problem &p,
                                             double density) {
  std::bernoulli_distribution coin(density);
  std::vector<std::vector<uint8_t>> bits;
  for (size_t b = 0; b < p.kvLens.size(); ++b) {
    bits.emplace_back(p.qoLens[b] * p.kvLens[b]);
    for (uint8_t &x : bits.back())
      x = coin(rng);
  }
  return bits;
}

std::pair<std::vector<uint8_t>, std::vector<int32_t>>
packAll(const std::vector<std::vector<uint8_t>> &bits) {
  std::vector<uint8_t> flat;
  std::vector<int64_t> lens;
  for (const auto &seg : bits) {
    flat.insert(flat.end(), seg.begin(), seg.end());
    lens.push_back(static_cast<int64_t>(seg.size()));
  }
  return packMask(flat, indptrOf(lens));
}

TEST(PrefillTest, CustomMaskMatchesDenseAttention) {
  for (uint32_t seed = 600; seed < 630; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    Problem p =
        randomProblem(rng, seed % 2 ? KVLayout::HND : KVLayout::NHD, false);
    auto bits = randomBits(rng, p, 0.6);
    auto [packed, maskIndptr] = packAll(bits);
    AttnOptions opts;
    opts.mask = MaskMode::Custom;
    if (seed % 3 == 0)
      opts.window = rng.uniformInt(1, 4);
    if (seed % 3 == 1)
      opts.alibiSlopes = randomSlopes(rng, p.hq);
    expectStatesNear(
        prefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, opts, nullptr, &packed,
                &maskIndptr),
        naivePrefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, opts, nullptr, &bits),
        1e-12);
    // A causal pattern as a custom mask equals the causal mode.
    for (size_t b = 0; b < bits.size(); ++b)
      for (int64_t i = 0; i < p.qoLens[b]; ++i)
        for (int64_t t = 0; t < p.kvLens[b]; ++t)
          bits[b][i * p.kvLens[b] + t] = t <= p.kvLens[b] - p.qoLens[b] + i;
    auto [causalPacked, causalIndptr] = packAll(bits);
    AttnOptions causal = opts;
    causal.mask = MaskMode::Causal;
    expectStatesNear(prefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, opts, nullptr,
                             &causalPacked, &causalIndptr),
                     prefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, causal), 0.0);
  }
}

TEST(PrefillTest, FullyMaskedRowsAreEmpty) {
  Rng rng(700);
  Problem p = randomProblem(rng, KVLayout::NHD, false, 4);
  // All-zero custom mask: every row is empty.
  auto zeros = randomBits(rng, p, 0.0);
  auto [packed, maskIndptr] = packAll(zeros);
  AttnOptions opts;
  opts.mask = MaskMode::Custom;
  States s = prefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, opts, nullptr, &packed,
                     &maskIndptr);
  for (int64_t r = 0; r < s.n; ++r)
    expectEmptyRow(s, r);

  // Window 1 (t > pos - 1) with a mask that hides t >= pos: empty rows; the
  // same mask without a window leaves earlier keys visible.
  PagedKV kv = randomPagedKV(rng, KVLayout::HND, 2, 3, 1, 4);
  PageTable pt{{0, 2}, {1, 0}, {2}, 3}; // kv_len 5
  std::vector<int32_t> qoIndptr = {0, 2};
  std::vector<double> q = randVec(rng, 2 * 2 * 4);
  std::vector<uint8_t> bits(2 * 5, 1);
  bits[0 * 5 + 3] = bits[0 * 5 + 4] = 0; // query 0 at pos 3
  bits[1 * 5 + 4] = 0;                   // query 1 at pos 4
  auto [pk, pki] = packMask(bits, {0, 10});
  opts.window = 1;
  s = prefill(q, 2, qoIndptr, kv, pt, opts, nullptr, &pk, &pki);
  expectEmptyRow(s, 0);
  expectEmptyRow(s, 1);
  opts.window.reset();
  s = prefill(q, 2, qoIndptr, kv, pt, opts, nullptr, &pk, &pki);
  EXPECT_TRUE(std::isfinite(s.lseAt(0, 0)));
  EXPECT_TRUE(std::isfinite(s.lseAt(1, 1)));

  // Causal with explicit positions: a window past the causal frontier.
  AttnOptions causal;
  causal.mask = MaskMode::Causal;
  causal.window = 2;
  std::vector<int32_t> positions = {0, 4};
  s = prefill(q, 2, qoIndptr, kv, pt, causal, &positions);
  EXPECT_TRUE(std::isfinite(s.lseAt(0, 1)));
  // Decode with kv_len 0 in the mix.
  PageTable withEmpty{{0, 0, 2}, {1, 0}, {0, 2}, 3};
  States d = decode(randVec(rng, 2 * 2 * 4), 2, kv, withEmpty, {});
  expectEmptyRow(d, 0);
}

TEST(PrefillTest, ExplicitPositionsAndPartialPrefill) {
  for (uint32_t seed = 750; seed < 770; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    Problem p = randomProblem(rng, KVLayout::HND, true);
    AttnOptions opts;
    opts.mask = MaskMode::Causal;
    opts.alibiSlopes = randomSlopes(rng, p.hq);
    if (seed % 2)
      opts.window = 3;
    States full = prefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, opts);
    // CacheBlend partial prefill: a subset of queries at their positions
    // gives the same rows as the full prefill.
    std::vector<int32_t> subIndptr(1, 0), positions;
    std::vector<double> subQ;
    std::vector<int64_t> rows;
    const int64_t rowElems = p.hq * p.kv.headDim;
    for (int64_t b = 0; b < p.pt.batch(); ++b) {
      for (int64_t i = 0; i < p.qoLens[b]; ++i) {
        if (rng.uniformInt(0, 2) == 0)
          continue;
        int64_t row = p.qoIndptr[b] + i;
        rows.push_back(row);
        positions.push_back(static_cast<int32_t>(i));
        subQ.insert(subQ.end(), p.q.begin() + row * rowElems,
                    p.q.begin() + (row + 1) * rowElems);
      }
      subIndptr.push_back(static_cast<int32_t>(positions.size()));
    }
    States part = prefill(subQ, p.hq, subIndptr, p.kv, p.pt, opts, &positions);
    for (size_t r = 0; r < rows.size(); ++r)
      for (int64_t h = 0; h < p.hq; ++h) {
        EXPECT_NEAR(part.lseAt(r, h), full.lseAt(rows[r], h), 1e-12);
        for (int64_t d = 0; d < p.kv.headDim; ++d)
          EXPECT_NEAR(part.oAt(r, h, d), full.oAt(rows[r], h, d), 1e-12);
      }
  }
}

TEST(DecodeTest, EqualsPrefillWithOneQueryPerRequest) {
  for (uint32_t seed = 800; seed < 830; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    Problem p =
        randomProblem(rng, seed % 2 ? KVLayout::HND : KVLayout::NHD, false, 6);
    // Drop empty requests from the prefill (qo_len 1 > kv_len 0).
    std::vector<int64_t> lens;
    for (int64_t len : p.kvLens)
      lens.push_back(len == 0 ? 0 : 1);
    std::vector<int32_t> qoIndptr = indptrOf(lens);
    std::vector<double> q = randVec(rng, p.pt.batch() * p.hq * p.kv.headDim);
    AttnOptions opts;
    if (rng.uniformInt(0, 1))
      opts.window = rng.uniformInt(1, 6);
    if (rng.uniformInt(0, 1))
      opts.alibiSlopes = randomSlopes(rng, p.hq);
    if (rng.uniformInt(0, 1))
      opts.logitsSoftCap = 0.9;
    States d = decode(q, p.hq, p.kv, p.pt, opts);
    std::vector<double> qp;
    const int64_t rowElems = p.hq * p.kv.headDim;
    for (int64_t b = 0; b < p.pt.batch(); ++b)
      if (lens[b])
        qp.insert(qp.end(), q.begin() + b * rowElems,
                  q.begin() + (b + 1) * rowElems);
    for (MaskMode mode : {MaskMode::None, MaskMode::Causal}) {
      opts.mask = mode;
      States pf = prefill(qp, p.hq, qoIndptr, p.kv, p.pt, opts);
      for (int64_t b = 0; b < p.pt.batch(); ++b) {
        if (!lens[b]) {
          expectEmptyRow(d, b);
          continue;
        }
        for (int64_t h = 0; h < p.hq; ++h) {
          EXPECT_NEAR(d.lseAt(b, h), pf.lseAt(qoIndptr[b], h), 1e-13);
          for (int64_t x = 0; x < p.kv.headDim; ++x)
            EXPECT_NEAR(d.oAt(b, h, x), pf.oAt(qoIndptr[b], h, x), 1e-13);
        }
      }
    }
  }
}

TEST(DecodeTest, GroupedQueryEqualsReplicatedHeads) {
  for (int64_t group = 1; group <= 8; ++group) {
    SCOPED_TRACE("group " + std::to_string(group));
    Rng rng(900 + group);
    const int64_t hkv = 2, dim = 4, pageSize = 7;
    std::vector<int64_t> lens = {9, 0, 15};
    int64_t numPages = totalPages(lens, pageSize) + 1;
    PagedKV kv =
        randomPagedKV(rng, KVLayout::NHD, numPages, pageSize, hkv, dim);
    PageTable pt = randomTable(rng, lens, pageSize, numPages);
    // MHA cache: kv head h holds the data of GQA kv head h / group.
    PagedKV mha(KVLayout::HND, numPages, pageSize, hkv * group, dim);
    for (int64_t p = 0; p < numPages; ++p)
      for (int64_t s = 0; s < pageSize; ++s)
        for (int64_t h = 0; h < hkv * group; ++h)
          for (int64_t d = 0; d < dim; ++d) {
            mha.kAt(p, s, h, d) = kv.kAt(p, s, h / group, d);
            mha.vAt(p, s, h, d) = kv.vAt(p, s, h / group, d);
          }
    std::vector<double> q = randVec(rng, 3 * hkv * group * dim);
    expectStatesNear(decode(q, hkv * group, kv, pt, {}),
                     decode(q, hkv * group, mha, pt, {}), 0.0);
  }
}

//===----------------------------------------------------------------------===//
// Cascade
//===----------------------------------------------------------------------===//

TEST(CascadeTest, TwoLevelsEqualPrefillOverConcatenatedPages) {
  for (uint32_t seed = 1000; seed < 1030; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    const int64_t pageSize = rng.uniformInt(1, 6);
    const int64_t hkv = rng.uniformInt(1, 2), group = rng.uniformInt(1, 8);
    const int64_t dim = 4, hq = hkv * group;
    const int64_t batch = rng.uniformInt(1, 5);
    const int64_t prefixPages = rng.uniformInt(0, 3);
    const int64_t prefixLen = prefixPages * pageSize; // full pages
    std::vector<int64_t> suffixLens, qoLens, fullLens;
    for (int64_t b = 0; b < batch; ++b) {
      suffixLens.push_back(rng.uniformInt(0, 2 * pageSize + 1));
      qoLens.push_back(rng.uniformInt(0, suffixLens.back()));
      fullLens.push_back(prefixLen + suffixLens.back());
    }
    const int64_t numPages = prefixPages + totalPages(suffixLens, pageSize) + 1;
    PagedKV kv = randomPagedKV(rng, seed % 2 ? KVLayout::HND : KVLayout::NHD,
                               numPages, pageSize, hkv, dim);
    // Pages [0, prefixPages) are the shared prefix; the rest are unique.
    std::vector<int32_t> pool(numPages - prefixPages);
    std::iota(pool.begin(), pool.end(), static_cast<int32_t>(prefixPages));
    std::shuffle(pool.begin(), pool.end(), rng);
    std::vector<int32_t> prefix(prefixPages);
    std::iota(prefix.begin(), prefix.end(), 0);
    std::vector<std::vector<int32_t>> suffix(batch), full(batch);
    size_t next = 0;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < pagesFor(suffixLens[b], pageSize); ++i)
        suffix[b].push_back(pool[next++]);
      full[b] = prefix;
      full[b].insert(full[b].end(), suffix[b].begin(), suffix[b].end());
    }
    std::vector<int32_t> qoIndptr = indptrOf(qoLens);
    const int64_t numRows = qoIndptr.back();
    std::vector<double> q = randVec(rng, numRows * hq * dim);
    // Level 0: one segment with every query over the shared prefix.
    PageTable level0 = tableFromPages({prefix}, {prefixLen}, pageSize);
    PageTable level1 = tableFromPages(suffix, suffixLens, pageSize);
    PageTable flat = tableFromPages(full, fullLens, pageSize);
    AttnOptions opts;
    opts.mask = seed % 2 ? MaskMode::Causal : MaskMode::None;
    if (seed % 3 == 0)
      opts.logitsSoftCap = 1.0;
    opts.lseBase2 = seed % 5 == 0;
    States got = cascade(q, hq, {{0, static_cast<int32_t>(numRows)}, qoIndptr},
                         {level0, level1}, kv, opts);
    expectStatesNear(got, prefill(q, hq, qoIndptr, kv, flat, opts), 1e-12);
    // Per-request prefix level (same segmentation as the last level).
    PageTable perRequest =
        tableFromPages(std::vector<std::vector<int32_t>>(batch, prefix),
                       std::vector<int64_t>(batch, prefixLen), pageSize);
    expectStatesNear(
        cascade(q, hq, {qoIndptr, qoIndptr}, {perRequest, level1}, kv, opts),
        got, 1e-12);
  }
}

TEST(CascadeTest, OneLevelIsPrefill) {
  Rng rng(1100);
  Problem p = randomProblem(rng, KVLayout::NHD, false);
  AttnOptions opts;
  opts.mask = MaskMode::Causal;
  opts.window = 4;
  opts.alibiSlopes = randomSlopes(rng, p.hq);
  expectStatesNear(cascade(p.q, p.hq, {p.qoIndptr}, {p.pt}, p.kv, opts),
                   prefill(p.q, p.hq, p.qoIndptr, p.kv, p.pt, opts), 1e-14);
  expectError(
      [&] {
        std::vector<int32_t> shortIndptr = p.qoIndptr;
        shortIndptr.back() += 1;
        cascade(p.q, p.hq, {shortIndptr}, {p.pt}, p.kv, opts);
      },
      "level 0: qo_indptr");
  AttnOptions custom;
  custom.mask = MaskMode::Custom;
  expectError([&] { cascade(p.q, p.hq, {p.qoIndptr}, {p.pt}, p.kv, custom); },
              "custom");
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

TEST(PackMaskTest, RoundTripsAgainstBitExtraction) {
  for (uint32_t seed = 1200; seed < 1220; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    static const int64_t kLens[] = {0, 1, 7, 8, 9, 16, 17, 30};
    std::vector<int64_t> lens;
    for (int64_t b = 0, n = rng.uniformInt(1, 6); b < n; ++b)
      lens.push_back(kLens[rng.uniformInt(0, 7)]);
    std::vector<int32_t> indptr = indptrOf(lens);
    std::vector<uint8_t> bits(indptr.back());
    for (uint8_t &x : bits)
      x = static_cast<uint8_t>(rng.uniformInt(0, 1));
    auto [bytes, byteIndptr] = packMask(bits, indptr);
    ASSERT_EQ(byteIndptr.size(), indptr.size());
    EXPECT_EQ(byteIndptr[0], 0);
    EXPECT_EQ(static_cast<size_t>(byteIndptr.back()), bytes.size());
    for (size_t b = 0; b < lens.size(); ++b) {
      EXPECT_EQ(byteIndptr[b + 1] - byteIndptr[b], (lens[b] + 7) / 8);
      for (int64_t j = 0; j < 8 * (byteIndptr[b + 1] - byteIndptr[b]); ++j) {
        int bit = (bytes[byteIndptr[b] + j / 8] >> (j % 8)) & 1;
        EXPECT_EQ(bit, j < lens[b] ? bits[indptr[b] + j] : 0)
            << "request " << b << " bit " << j;
      }
    }
  }
  // Little-endian within a byte: bit j of byte k is element 8k + j.
  auto [bytes, byteIndptr] =
      packMask({1, 0, 0, 0, 0, 0, 0, 0, 0, 1, /*next*/ 0, 1, 1}, {0, 10, 13});
  EXPECT_EQ(bytes, (std::vector<uint8_t>{0x01, 0x02, 0x06}));
  EXPECT_EQ(byteIndptr, (std::vector<int32_t>{0, 2, 3}));
  expectError([] { packMask({0, 2}, {0, 2}); }, "bits[1] = 2");
  expectError([] { packMask({0, 1}, {0, 3}); }, "expected number of bits");
}

//===----------------------------------------------------------------------===//
// CacheBlend
//===----------------------------------------------------------------------===//

TEST(CacheBlendTest, KvDeviationHandComputed) {
  // n = 2, H = 2, D = 2.
  std::vector<double> cached = {0, 0, 0, 0, 1, 1, 1, 1};
  std::vector<double> fresh = {3, 0, 0, 4, 1, 1, 1, 2};
  std::vector<double> dev = kvDeviation(fresh, cached, 2, 2, 2);
  ASSERT_EQ(dev.size(), 2u);
  EXPECT_DOUBLE_EQ(dev[0], 5.0);
  EXPECT_DOUBLE_EQ(dev[1], 1.0);
  expectError([&] { kvDeviation(fresh, cached, 3, 2, 2); }, "n*H*D");
}

TEST(CacheBlendTest, SelectTopKTiesAndCeil) {
  // Request 0 (n = 5, ratio 0.5 -> k = 3): ties at 2.0 -> lower index first.
  // Request 1 (n = 0 -> k = 0). Request 2 (n = 3 -> k = 2).
  std::vector<double> dev = {1.0, 2.0, 2.0, 0.5, 2.0, /*r2*/ 7.0, 7.0, 9.0};
  auto [pos, indptr] = selectTopK(dev, {0, 5, 5, 8}, 0.5);
  EXPECT_EQ(pos, (std::vector<int32_t>{1, 2, 4, 0, 2}));
  EXPECT_EQ(indptr, (std::vector<int32_t>{0, 3, 3, 5}));
  // ceil(0.25 * 3) = 1: the largest; all ties -> index 0.
  auto [p1, i1] = selectTopK({4, 4, 4}, {0, 3}, 0.25);
  EXPECT_EQ(p1, (std::vector<int32_t>{0}));
  EXPECT_EQ(i1, (std::vector<int32_t>{0, 1}));
  // ratio 1 keeps everything; ratio 0.4 * 5 = 2 exactly.
  auto [p2, i2] = selectTopK({1, 5, 3, 4, 2}, {0, 5}, 1.0);
  EXPECT_EQ(p2, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  auto [p3, i3] = selectTopK({1, 5, 3, 4, 2}, {0, 5}, 0.4);
  EXPECT_EQ(p3, (std::vector<int32_t>{1, 3}));
  // Infinite deviations rank first.
  auto [p4, i4] = selectTopK({1, kInf, 3}, {0, 3}, 0.3);
  EXPECT_EQ(p4, (std::vector<int32_t>{1}));
  expectError([] { selectTopK({1}, {0, 1}, 0.0); }, "ratio");
  expectError([] { selectTopK({1}, {0, 1}, 1.5); }, "ratio");
  expectError(
      [] {
        selectTopK({std::nan("")}, {0, 1}, 0.5);
      },
      "deviation[0] is NaN");
}

TEST(CacheBlendTest, ScatterThenReadBack) {
  Rng rng(1300);
  const int64_t pageSize = 5, hkv = 2, dim = 3;
  std::vector<int64_t> lens = {12, 0, 7};
  int64_t numPages = totalPages(lens, pageSize) + 2;
  for (KVLayout layout : {KVLayout::NHD, KVLayout::HND}) {
    PagedKV kv = randomPagedKV(rng, layout, numPages, pageSize, hkv, dim);
    PagedKV before = kv;
    PageTable pt = randomTable(rng, lens, pageSize, numPages);
    std::vector<int32_t> positions = {0, 5, 11, /*r2*/ 6};
    std::vector<int32_t> selIndptr = {0, 3, 3, 4};
    std::vector<double> kRows = randVec(rng, 4 * hkv * dim);
    std::vector<double> vRows = randVec(rng, 4 * hkv * dim);
    scatterKV(kv, pt, selIndptr, positions, kRows, vRows);
    const int64_t reqOf[] = {0, 0, 0, 2};
    int64_t changed = 0;
    for (int64_t r = 0; r < 4; ++r) {
      auto [page, slot] = pt.locate(reqOf[r], positions[r]);
      for (int64_t h = 0; h < hkv; ++h)
        for (int64_t d = 0; d < dim; ++d) {
          EXPECT_EQ(kv.kAt(page, slot, h, d), kRows[(r * hkv + h) * dim + d]);
          EXPECT_EQ(kv.vAt(page, slot, h, d), vRows[(r * hkv + h) * dim + d]);
        }
    }
    for (size_t i = 0; i < kv.k.size(); ++i)
      changed += kv.k[i] != before.k[i];
    EXPECT_EQ(changed, 4 * hkv * dim); // nothing else was touched
    expectError(
        [&] {
          std::vector<int32_t> bad = {0, 5, 12, 6};
          scatterKV(kv, pt, selIndptr, bad, kRows, vRows);
        },
        "positions[2] = 12 out of range [0, 12) of request 0");
  }
}

//===----------------------------------------------------------------------===//
// Append
//===----------------------------------------------------------------------===//

TEST(AppendTest, PageTableFormEqualsSlotMapping) {
  for (uint32_t seed = 1400; seed < 1420; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    Problem p =
        randomProblem(rng, seed % 2 ? KVLayout::HND : KVLayout::NHD, false, 5);
    // Append the last qo_len tokens of each request.
    const std::vector<int32_t> &appendIndptr = p.qoIndptr;
    const int64_t rows = appendIndptr.back();
    const int64_t rowElems = p.kv.numHeads * p.kv.headDim;
    std::vector<double> kNew = randVec(rng, rows * rowElems);
    std::vector<double> vNew = randVec(rng, rows * rowElems);
    PagedKV viaTable = p.kv;
    appendKV(viaTable, p.pt, appendIndptr, kNew, vNew);

    // Equivalent slot mapping, plus skipped rows (negative slots).
    std::vector<int32_t> slots;
    std::vector<double> kS, vS;
    for (int64_t b = 0; b < p.pt.batch(); ++b) {
      for (int64_t j = 0; j < p.qoLens[b]; ++j) {
        auto [page, slot] = p.pt.locate(b, p.kvLens[b] - p.qoLens[b] + j);
        int64_t row = appendIndptr[b] + j;
        slots.push_back(static_cast<int32_t>(page * p.pt.pageSize + slot));
        kS.insert(kS.end(), kNew.begin() + row * rowElems,
                  kNew.begin() + (row + 1) * rowElems);
        vS.insert(vS.end(), vNew.begin() + row * rowElems,
                  vNew.begin() + (row + 1) * rowElems);
        if (rng.uniformInt(0, 3) == 0) {
          slots.push_back(-1);
          std::vector<double> junk = randVec(rng, rowElems, 5, 6);
          kS.insert(kS.end(), junk.begin(), junk.end());
          vS.insert(vS.end(), junk.begin(), junk.end());
        }
      }
    }
    PagedKV viaSlots = p.kv;
    appendKVSlots(viaSlots, slots, kS, vS);
    EXPECT_EQ(viaTable.k, viaSlots.k);
    EXPECT_EQ(viaTable.v, viaSlots.v);
  }
}

TEST(AppendTest, AppendThenDecodeSeesNewToken) {
  PagedKV kv(KVLayout::NHD, 3, 3, 1, 2);
  // Request 0 grows from 2 to 4 tokens (pages 2, 0).
  PageTable after{{0, 2}, {2, 0}, {1}, 3};
  appendKV(kv, after, {0, 2}, {1, 0, 0, 1}, {5, 6, 7, 8});
  EXPECT_EQ(kv.kAt(2, 2, 0, 0), 1.0);
  EXPECT_EQ(kv.vAt(0, 0, 0, 1), 8.0);
  AttnOptions opts;
  opts.window = 1;
  States s = decode({0, 1}, 1, kv, after, opts);
  EXPECT_DOUBLE_EQ(s.oAt(0, 0, 0), 7.0);
  EXPECT_DOUBLE_EQ(s.oAt(0, 0, 1), 8.0);
  expectError(
      [&] {
        appendKV(kv, after, {0, 5}, std::vector<double>(10),
                 std::vector<double>(10));
      },
      "append_len > kv_len for request 0");
  expectError(
      [&] {
        appendKVSlots(kv, {3, 9}, std::vector<double>(4),
                      std::vector<double>(4));
      },
      "slot_mapping[1] = 9 out of range [0, 9)");
  expectError(
      [&] {
        appendKVSlots(kv, {3}, std::vector<double>(2), std::vector<double>(4));
      },
      "v_new has 4 elements, expected N*Hkv*D = 2");
}

//===----------------------------------------------------------------------===//
// FP8 KV caches
//===----------------------------------------------------------------------===//

TEST(FP8Test, QuantizeRoundsToNearestEvenAndSaturates) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // E4M3FN: 3 mantissa bits, 1.0 .. 2.0 in steps of 0.125.
  FP8Format e4 = FP8Format::E4M3FN, e5 = FP8Format::E5M2;
  EXPECT_EQ(fp8Max(e4), 448.0);
  EXPECT_EQ(fp8Max(e5), 57344.0);
  EXPECT_EQ(quantizeFP8(1.0, e4), 1.0);
  EXPECT_EQ(quantizeFP8(1.06, e4), 1.0);
  EXPECT_EQ(quantizeFP8(1.07, e4), 1.125);
  EXPECT_EQ(quantizeFP8(1.0625, e4), 1.0);  // tie -> even mantissa 000
  EXPECT_EQ(quantizeFP8(1.1875, e4), 1.25); // tie 001|010 -> 010
  EXPECT_EQ(quantizeFP8(-3.3, e4), -3.25);
  EXPECT_EQ(quantizeFP8(1.9999, e4), 2.0);  // rounds into the next binade
  // Saturation: the largest finite value, also for +-inf; NaN stays NaN.
  EXPECT_EQ(quantizeFP8(448.0, e4), 448.0);
  EXPECT_EQ(quantizeFP8(464.0, e4), 448.0);
  EXPECT_EQ(quantizeFP8(1e6, e4), 448.0);
  EXPECT_EQ(quantizeFP8(-kInf, e4), -448.0);
  EXPECT_EQ(quantizeFP8(kInf, e5), 57344.0);
  EXPECT_EQ(quantizeFP8(-60000.0, e5), -57344.0);
  EXPECT_TRUE(std::isnan(quantizeFP8(nan, e4)));
  EXPECT_TRUE(std::isnan(quantizeFP8(nan, e5)));
  // Subnormals: E4M3FN spacing 2^-9 below 2^-6, E5M2 2^-16 below 2^-14.
  EXPECT_EQ(quantizeFP8(std::ldexp(1.0, -9), e4), std::ldexp(1.0, -9));
  EXPECT_EQ(quantizeFP8(std::ldexp(1.0, -10), e4), 0.0); // tie -> 0
  EXPECT_EQ(quantizeFP8(std::ldexp(3.0, -10), e4), std::ldexp(1.0, -8));
  EXPECT_EQ(quantizeFP8(std::ldexp(5.0, -11), e4), std::ldexp(1.0, -9));
  EXPECT_EQ(quantizeFP8(std::ldexp(1.0, -17), e5), 0.0);
  EXPECT_EQ(quantizeFP8(std::ldexp(3.0, -17), e5), std::ldexp(1.0, -15));
  EXPECT_TRUE(std::signbit(quantizeFP8(-1e-9, e4)));
  EXPECT_EQ(quantizeFP8(1.125, e5), 1.0); // E5M2: steps of 0.25, tie -> even
  EXPECT_EQ(quantizeFP8(1.375, e5), 1.5);
  // Every quantized value is a value of the format.
  Rng rng(1700);
  for (double x : randVec(rng, 2000, -600.0, 600.0)) {
    EXPECT_TRUE(isFP8Value(quantizeFP8(x, e4), e4)) << x;
    EXPECT_TRUE(isFP8Value(quantizeFP8(x * 100, e5), e5)) << x;
    EXPECT_LE(std::fabs(quantizeFP8(x, e4) - std::clamp(x, -448.0, 448.0)),
              std::max(std::fabs(x) / 16, std::ldexp(1.0, -10)))
        << x;
  }
  EXPECT_FALSE(isFP8Value(1.1, e4));
  EXPECT_FALSE(isFP8Value(480.0, e4));
  EXPECT_FALSE(isFP8Value(kInf, e4));
  EXPECT_TRUE(isFP8Value(-kInf, e5));
  EXPECT_TRUE(isFP8Value(nan, e4));
}

/// A random fp8 cache (elements quantized from [-range, range)) with scales
/// of `kScales` / `vScales` entries, and its dequantized float64 copy.
std::pair<PagedKV, PagedKV> randomFP8Cache(Rng &rng, FP8Format f,
                                           int64_t numPages, int64_t pageSize,
                                           int64_t heads, int64_t dim,
                                           int64_t kScales, int64_t vScales) {
  PagedKV q = randomPagedKV(rng, KVLayout::HND, numPages, pageSize, heads, dim);
  double range = f == FP8Format::E4M3FN ? 400.0 : 50000.0;
  for (double &x : q.k)
    x = quantizeFP8(x * range, f);
  for (double &x : q.v)
    x = quantizeFP8(x * range, f);
  q.fp8 = FP8Scales{f, randVec(rng, kScales, 0.001, 0.01),
                    randVec(rng, vScales, 0.001, 0.01)};
  PagedKV deq = q;
  deq.fp8.reset();
  for (int64_t p = 0; p < numPages; ++p)
    for (int64_t s = 0; s < pageSize; ++s)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t d = 0; d < dim; ++d) {
          deq.kAt(p, s, h, d) *= q.fp8->scaleOf(false, h);
          deq.vAt(p, s, h, d) *= q.fp8->scaleOf(true, h);
        }
  return {q, deq};
}

TEST(FP8Test, AttentionDequantizesWithTheHeadsScales) {
  Rng rng(1701);
  for (FP8Format f : {FP8Format::E4M3FN, FP8Format::E5M2})
    for (auto [ks, vs] : {std::pair{1, 1}, std::pair{3, 3}, std::pair{1, 3}}) {
      SCOPED_TRACE(std::to_string(ks) + "/" + std::to_string(vs));
      auto [kv, deq] = randomFP8Cache(rng, f, 6, 4, 3, 8, ks, vs);
      PageTable pt = randomTable(rng, {7, 0, 13}, 4, 6);
      std::vector<double> q = randVec(rng, 3 * 6 * 8);
      AttnOptions opts;
      opts.smScale = 0.3;
      States a = decode(q, 6, kv, pt, opts), b = decode(q, 6, deq, pt, opts);
      for (size_t i = 0; i < a.o.size(); ++i)
        EXPECT_NEAR(a.o[i], b.o[i], 1e-12 * (1 + std::fabs(b.o[i])));
      for (size_t i = 0; i < a.lse.size(); ++i)
        EXPECT_TRUE(a.lse[i] == b.lse[i] ||
                    std::fabs(a.lse[i] - b.lse[i]) < 1e-12);
      std::vector<int32_t> qo = {0, 2, 2, 5};
      opts.mask = MaskMode::Causal;
      std::vector<double> qp = randVec(rng, 5 * 6 * 8);
      a = prefill(qp, 6, qo, kv, pt, opts);
      b = prefill(qp, 6, qo, deq, pt, opts);
      for (size_t i = 0; i < a.o.size(); ++i)
        EXPECT_NEAR(a.o[i], b.o[i], 1e-12 * (1 + std::fabs(b.o[i])));
    }
}

TEST(FP8Test, WritesQuantizeWithTheHeadsScales) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  PagedKV kv(KVLayout::NHD, 2, 2, 2, 2);
  kv.fp8 = FP8Scales{FP8Format::E4M3FN, {0.5}, {0.25, 2.0}};
  // Row 0 to slot 1, row 1 to slot 2: K = x / 0.5, V = x / 0.25 (head 0),
  // x / 2 (head 1); saturating at 448, NaN stays NaN.
  std::vector<double> k = {1.0, 0.3, 1e9, -kInf, //
                           nan, -0.01, 224.0, 232.0};
  std::vector<double> v = {1.0, -1.0, 3.0, 1000.0, //
                           0.0, 200.0, -kInf, 0.1};
  appendKVSlots(kv, {1, 2}, k, v);
  EXPECT_EQ(kv.kAt(0, 1, 0, 0), 2.0);
  EXPECT_EQ(kv.kAt(0, 1, 0, 1), 0.625); // 0.6 -> 0.625
  EXPECT_EQ(kv.kAt(0, 1, 1, 0), 448.0);
  EXPECT_EQ(kv.kAt(0, 1, 1, 1), -448.0);
  EXPECT_TRUE(std::isnan(kv.kAt(1, 0, 0, 0)));
  EXPECT_EQ(kv.kAt(1, 0, 0, 1), -0.01953125); // -0.02 -> -5 * 2^-8
  EXPECT_EQ(kv.kAt(1, 0, 1, 0), 448.0);
  EXPECT_EQ(kv.kAt(1, 0, 1, 1), 448.0);       // 464 saturates
  EXPECT_EQ(kv.vAt(0, 1, 0, 0), 4.0);
  EXPECT_EQ(kv.vAt(0, 1, 0, 1), -4.0);
  EXPECT_EQ(kv.vAt(0, 1, 1, 0), 1.5);
  EXPECT_EQ(kv.vAt(0, 1, 1, 1), 448.0); // 500 saturates
  EXPECT_EQ(kv.vAt(1, 0, 0, 1), 448.0); // 800 saturates
  EXPECT_EQ(kv.vAt(1, 0, 1, 0), -448.0);
  EXPECT_EQ(kv.vAt(1, 0, 1, 1), 0.05078125); // 0.05 -> 13 * 2^-8
  // A NaN in a slot attention never reads does not matter; one it reads does.
  PageTable pt{{0, 1}, {0}, {2}, 2};
  States s = decode({1, 1, 1, 1}, 2, kv, pt, {});
  EXPECT_TRUE(std::isfinite(s.oAt(0, 0, 0)));
  PageTable pt2{{0, 2}, {0, 1}, {1}, 2};
  s = decode({1, 1, 1, 1}, 2, kv, pt2, {});
  EXPECT_TRUE(std::isnan(s.oAt(0, 0, 0)));
}

TEST(FP8Test, ValidationNamesTheInvariant) {
  Rng rng(1702);
  auto [kv, deq] = randomFP8Cache(rng, FP8Format::E4M3FN, 2, 2, 2, 4, 1, 2);
  EXPECT_NO_THROW(validate(kv));
  PagedKV bad = kv;
  bad.fp8->kScale = {1.0, 2.0, 3.0};
  expectError([&] { validate(bad); },
              "k_scale has 3 entries, expected 1 (per tensor) or H = 2");
  bad = kv;
  bad.fp8->vScale[1] = 0.0;
  expectError([&] { validate(bad); }, "v_scale[1] = 0 must be finite and > 0");
  bad = kv;
  bad.fp8->kScale[0] = kInf;
  expectError([&] { validate(bad); },
              "k_scale[0] = inf must be finite and > 0");
  bad = kv;
  bad.k[3] = 1.1;
  expectError([&] { validate(bad); },
              "paged K[3] = 1.1 is not an e4m3fn value");
  PagedKV e5(KVLayout::NHD, 1, 1, 1, 2);
  e5.fp8 = FP8Scales{FP8Format::E5M2, {1.0}, {1.0}};
  e5.k = {-kInf, 57344.0};
  e5.v = {0.0, 1.125};
  expectError([&] { validate(e5); },
              "paged V[1] = 1.125 is not an e5m2 value");
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

TEST(ValidationTest, PageTableErrorsNameTheInvariant) {
  PageTable good{{0, 2, 3}, {4, 1, 0}, {16, 5}, 16};
  EXPECT_NO_THROW(validate(good, 10));

  PageTable t = good;
  t.indices[1] = 12;
  expectError([&] { validate(t, 10); },
              "kv_indices[1] = 12 out of range [0, 10)");
  t.indices[1] = -1;
  expectError([&] { validate(t, 10); }, "kv_indices[1] = -1 out of range");

  t = good;
  t.lastPageLen[1] = 0;
  expectError([&] { validate(t, 10); },
              "kv_last_page_len[1] = 0 not in [1, 16]");
  t.lastPageLen[1] = 17;
  expectError([&] { validate(t, 10); },
              "kv_last_page_len[1] = 17 not in [1, 16]");

  t = good;
  t.indptr = {0, 2, 1, 3};
  t.lastPageLen = {1, 1, 1};
  expectError([&] { validate(t, 10); }, "kv_indptr not non-decreasing at 2");
  t.indptr = {1, 2, 3};
  expectError([&] { validate(t, 10); }, "kv_indptr[0] = 1, expected 0");

  t = good;
  t.indices.push_back(3);
  expectError([&] { validate(t, 10); }, "kv_indices has 4 entries");
  t = good;
  t.lastPageLen.pop_back();
  expectError([&] { validate(t, 10); }, "kv_last_page_len has 1 entries");
  EXPECT_THROW(validate(t, 10), std::invalid_argument);
}

TEST(ValidationTest, AttentionErrorsNameTheInvariant) {
  Rng rng(1500);
  PagedKV kv = randomPagedKV(rng, KVLayout::NHD, 4, 3, 2, 4);
  PageTable pt{{0, 2}, {3, 1}, {2}, 3}; // kv_len 5
  std::vector<double> q = randVec(rng, 3 * 4);

  expectError([&] { decode(q, 3, kv, pt, {}); }, "Hq % Hkv != 0");
  expectError([&] { decode(randVec(rng, 5), 2, kv, pt, {}); },
              "q has 5 elements, expected B*Hq*D = 8");
  AttnOptions causal;
  causal.mask = MaskMode::Causal;
  expectError([&] { decode(randVec(rng, 8), 2, kv, pt, causal); },
              "mask mode None");
  PageTable wrongP = pt;
  wrongP.pageSize = 4;
  expectError([&] { decode(randVec(rng, 8), 2, kv, wrongP, {}); },
              "page table page size 4 != cache page size 3");
  AttnOptions badAlibi;
  badAlibi.alibiSlopes = {1.0};
  expectError([&] { decode(randVec(rng, 8), 2, kv, pt, badAlibi); },
              "alibi_slopes has 1 entries, expected Hq = 2");
  AttnOptions badWindow;
  badWindow.window = 0;
  expectError([&] { decode(randVec(rng, 8), 2, kv, pt, badWindow); }, "window");

  std::vector<double> q6 = randVec(rng, 6 * 2 * 4);
  expectError(
      [&] {
        prefill(q6, 2, {0, 6}, kv, pt, causal);
      },
      "qo_len > kv_len for request 0");
  expectError(
      [&] {
        prefill(q6, 2, {0, 5}, kv, pt, causal);
      },
      "q has 48 elements, expected Nq*Hq*D = 40");
  expectError(
      [&] {
        prefill(q6, 2, {0, 3, 6}, kv, pt, causal);
      },
      "qo_indptr has 3 entries, expected B+1 = 2");
  std::vector<int32_t> negPos = {0, -1, 2, 3, 4, 0};
  expectError(
      [&] {
        prefill(q6, 2, {0, 6}, kv, pt, causal, &negPos);
      },
      "q_positions[1] = -1 is negative");
  AttnOptions custom;
  custom.mask = MaskMode::Custom;
  expectError(
      [&] {
        prefill(q6, 2, {0, 6}, kv, pt, custom);
      },
      "custom mask requires");
  std::vector<uint8_t> bytes(3);
  std::vector<int32_t> maskIndptr = {0, 3};
  std::vector<double> q2 = randVec(rng, 2 * 2 * 4);
  expectError(
      [&] {
        prefill(q2, 2, {0, 2}, kv, pt, custom, nullptr, &bytes, &maskIndptr);
      },
      "mask segment 0 has 3 bytes, expected ceil(qo_len*kv_len/8) = 2");
  std::vector<int32_t> maskIndptrBad = {0, 2};
  expectError(
      [&] {
        prefill(q2, 2, {0, 2}, kv, pt, custom, nullptr, &bytes, &maskIndptrBad);
      },
      "mask_indptr[1] = 2, expected packed_mask size = 3");
  PagedKV broken = kv;
  broken.v.pop_back();
  expectError([&] { decode(randVec(rng, 8), 2, broken, pt, {}); }, "paged V");
}

//===----------------------------------------------------------------------===//
// MLA
//===----------------------------------------------------------------------===//

TEST(MLATest, TwoTokensKnownScores) {
  // D_ckv = 2, D_kpe = 1, P = 2, one request of two tokens on page 1.
  PagedMLA kv(2, 2, 2, 1);
  const double rows[2][3] = {{1, 0, 2}, {0, 3, -1}}; // ckv | kpe
  for (int t = 0; t < 2; ++t)
    for (int d = 0; d < 3; ++d)
      kv.at(1, t, d) = rows[t][d];
  PageTable pt{{0, 1}, {1}, {2}, 2};
  MLAOptions opts;
  opts.smScale = 0.5;
  // q_nope = (1, 1), q_pe = (1): raw scores 1 + 2 = 3 and 3 - 1 = 2, scaled
  // 1.5 and 1; o is the weighted sum of the ckv rows only.
  States s = mlaDecode({1, 1}, {1}, 1, kv, pt, opts);
  ASSERT_EQ(s.headDim, 2);
  const double w0 = std::exp(1.5), w1 = std::exp(1.0);
  EXPECT_NEAR(s.lseAt(0, 0), std::log(w0 + w1), 1e-15);
  EXPECT_NEAR(s.oAt(0, 0, 0), w0 / (w0 + w1), 1e-15);
  EXPECT_NEAR(s.oAt(0, 0, 1), 3 * w1 / (w0 + w1), 1e-15);

  opts.lseBase2 = true;
  opts.logitsSoftCap = 1.0; // scores tanh(1.5), tanh(1)
  s = mlaDecode({1, 1}, {1}, 1, kv, pt, opts);
  const double c0 = std::exp(std::tanh(1.5)), c1 = std::exp(std::tanh(1.0));
  EXPECT_NEAR(s.lseAt(0, 0), std::log(c0 + c1) / std::log(2.0), 1e-15);
  EXPECT_NEAR(s.oAt(0, 0, 1), 3 * c1 / (c0 + c1), 1e-15);
}

TEST(MLATest, EqualsMQADecodeOverConcatenatedRows) {
  // MLA is decode with one KV head whose keys are the rows [ckv | kpe], whose
  // values are [ckv | 0] and whose query is [q_nope | q_pe]: the first D_ckv
  // elements of that o are MLA's o, the rest 0; lse is the same.
  Rng rng(1600);
  for (int iter = 0; iter < 40; ++iter) {
    const int64_t P = rng.pick(std::vector<int64_t>{1, 3, 16, 64});
    const int64_t ckv = rng.pick(std::vector<int64_t>{1, 8, 64, 512});
    const int64_t kpe = rng.pick(std::vector<int64_t>{1, 4, 16, 64});
    const int64_t H = rng.pick(std::vector<int64_t>{1, 3, 16});
    std::vector<int64_t> lens;
    for (int64_t b = 0, n = rng.uniformInt(0, 5); b < n; ++b)
      lens.push_back(rng.chance(0.25) ? 0 : rng.uniformInt(1, 70));
    const int64_t numPages = totalPages(lens, P) + rng.uniformInt(0, 2);
    PageTable pt = randomTable(rng, lens, P, numPages);
    const int64_t B = pt.batch();
    PagedMLA mla(numPages, P, ckv, kpe);
    mla.data = randVec(rng, mla.numElements());
    PagedKV mqa(KVLayout::NHD, numPages, P, 1, ckv + kpe);
    for (int64_t p = 0; p < numPages; ++p)
      for (int64_t t = 0; t < P; ++t)
        for (int64_t d = 0; d < ckv + kpe; ++d) {
          mqa.kAt(p, t, 0, d) = mla.at(p, t, d);
          mqa.vAt(p, t, 0, d) = d < ckv ? mla.at(p, t, d) : 0.0;
        }
    std::vector<double> qNope = randVec(rng, B * H * ckv, -2, 2);
    std::vector<double> qPe = randVec(rng, B * H * kpe, -2, 2);
    std::vector<double> q;
    for (int64_t r = 0; r < B * H; ++r) {
      q.insert(q.end(), qNope.begin() + r * ckv, qNope.begin() + (r + 1) * ckv);
      q.insert(q.end(), qPe.begin() + r * kpe, qPe.begin() + (r + 1) * kpe);
    }
    MLAOptions mopts;
    mopts.smScale = 1.0 / std::sqrt(192.0);
    if (rng.chance(0.3))
      mopts.logitsSoftCap = 2.5;
    mopts.lseBase2 = rng.chance(0.5);
    AttnOptions opts;
    opts.smScale = mopts.smScale;
    opts.logitsSoftCap = mopts.logitsSoftCap;
    opts.lseBase2 = mopts.lseBase2;
    States got = mlaDecode(qNope, qPe, H, mla, pt, mopts);
    States want = decode(q, H, mqa, pt, opts);
    ASSERT_EQ(got.n, B);
    ASSERT_EQ(got.numHeads, H);
    ASSERT_EQ(got.headDim, ckv);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h) {
        if (std::isinf(want.lseAt(b, h)))
          EXPECT_EQ(got.lseAt(b, h), want.lseAt(b, h));
        else
          EXPECT_NEAR(got.lseAt(b, h), want.lseAt(b, h), 1e-12);
        for (int64_t d = 0; d < ckv + kpe; ++d)
          EXPECT_NEAR(d < ckv ? got.oAt(b, h, d) : 0.0, want.oAt(b, h, d),
                      1e-12)
              << "iter " << iter << " b " << b << " h " << h << " d " << d;
      }
  }
}

TEST(MLATest, EmptyRequestIsIdentity) {
  Rng rng(1601);
  PagedMLA kv(2, 4, 8, 4);
  kv.data = randVec(rng, kv.numElements());
  PageTable pt{{0, 0, 2, 2}, {1, 0}, {-3, 3, 99}, 4}; // garbage when empty
  MLAOptions opts;
  opts.smScale = 0.3;
  opts.lseBase2 = true;
  States s = mlaDecode(randVec(rng, 3 * 2 * 8), randVec(rng, 3 * 2 * 4), 2, kv,
                       pt, opts);
  expectEmptyRow(s, 0);
  expectEmptyRow(s, 2);
  EXPECT_TRUE(std::isfinite(s.lseAt(1, 1)));
}

TEST(MLATest, ValidationNamesTheInvariant) {
  Rng rng(1602);
  PagedMLA kv(3, 2, 4, 2);
  kv.data = randVec(rng, kv.numElements());
  PageTable pt{{0, 2}, {2, 0}, {1}, 2}; // kv_len 3
  MLAOptions opts;
  opts.smScale = 0.5;
  std::vector<double> qn = randVec(rng, 2 * 4), qp = randVec(rng, 2 * 2);
  EXPECT_NO_THROW(mlaDecode(qn, qp, 2, kv, pt, opts));
  expectError([&] { mlaDecode(qn, qp, 3, kv, pt, opts); },
              "q_nope has 8 elements, expected B*H*D_ckv = 12");
  expectError([&] { mlaDecode(qn, randVec(rng, 3), 2, kv, pt, opts); },
              "q_pe has 3 elements, expected B*H*D_kpe = 4");
  expectError([&] { mlaDecode({}, {}, 0, kv, pt, opts); }, "H = 0");
  MLAOptions noScale;
  expectError([&] { mlaDecode(qn, qp, 2, kv, pt, noScale); },
              "sm_scale = 0 must be finite and non-zero");
  MLAOptions badCap = opts;
  badCap.logitsSoftCap = -1.0;
  expectError([&] { mlaDecode(qn, qp, 2, kv, pt, badCap); }, "soft-cap");
  PageTable wrongP = pt;
  wrongP.pageSize = 4;
  expectError([&] { mlaDecode(qn, qp, 2, kv, wrongP, opts); },
              "page table page size 4 != MLA cache page size 2");
  PageTable badPage = pt;
  badPage.indices[1] = 3;
  expectError([&] { mlaDecode(qn, qp, 2, kv, badPage, opts); },
              "kv_indices[1] = 3 out of range [0, 3)");
  PagedMLA broken = kv;
  broken.data.pop_back();
  expectError([&] { mlaDecode(qn, qp, 2, broken, pt, opts); },
              "paged MLA cache has 35 elements");
  expectError([] { PagedMLA(1, 2, 0, 1); }, "bad paged MLA shape");
}

} // namespace
