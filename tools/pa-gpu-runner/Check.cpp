//===- Check.cpp - the correctness check of pa-gpu-runner -----------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// `pa-gpu-runner check BUNDLE_DIR...`: runs each bundle's decode step through
// the runtime's C API on seeded random inputs against the float64 oracle
// pa::ref::decode, with poisoned outputs (NaN) and poisoned unused cache
// slots and pages, over ragged batches (empty requests, 1 token, partial last
// pages, full last pages, long requests that split), the planner's chunking
// and forced chunkings, and checks that checked mode rejects bad page tables
// before any launch (docs/Runtime.md, "check"). The random cases, the host
// cache layout and the dtype conversions come from PATestSupport.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "Check.h"
#include "GpuUtil.h"

#include "PagedAttn/Reference/Reference.h"
#include "PagedAttn/Runtime/Bundle.h"
#include "PagedAttn/Runtime/pa_runtime.h"
#include "PagedAttn/TestSupport/Cache.h"
#include "PagedAttn/TestSupport/Numbers.h"
#include "PagedAttn/TestSupport/Random.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace pa::runner;
namespace rt = pa::rt;
namespace ref = pa::ref;
namespace test = pa::test;

//===----------------------------------------------------------------------===//
// Poison, tolerances, comparison, host caches (shared with check-prefill)
//===----------------------------------------------------------------------===//

uint32_t pa::runner::poisonBits(rt::DType t) {
  switch (t) {
  case rt::DType::F16:
    return 0x7E5A;
  case rt::DType::BF16:
    return 0x7FDA;
  case rt::DType::F32:
    return 0x7FC0DEADu;
  }
  return 0;
}
void pa::runner::poison(CUdeviceptr ptr, int64_t count, rt::DType t) {
  if (count <= 0)
    return;
  if (rt::elementBytes(t) == 2)
    PA_CU(cuMemsetD16(ptr, static_cast<unsigned short>(poisonBits(t)),
                      static_cast<size_t>(count)));
  else
    PA_CU(cuMemsetD32(ptr, poisonBits(t), static_cast<size_t>(count)));
}

double pa::runner::relTolerance(rt::DType t) {
  switch (t) {
  case rt::DType::F16:
    return 2e-3;
  case rt::DType::BF16:
    return 1e-2;
  case rt::DType::F32:
    return 1e-4;
  }
  return 0;
}

HostCache pa::runner::makeHostCache(const std::vector<int64_t> &lens,
                                    const rt::BundleConfig &c, test::Rng &rng,
                                    bool finiteSlack, int64_t devicePages) {
  HostCache hc;
  const int64_t P = c.pageSize, Hkv = c.kvHeads, D = c.headDim;
  // Spare pages that no request owns, and a random page order.
  int64_t used = test::totalPages(lens, P);
  hc.numPages = used + used / 2 + 3;
  test::PagePool pool(rng, hc.numPages);
  hc.pt = test::makePageTable(rng, P, lens, pool);
  // Unused slots and pages: NaN (or a large finite value), so that a kernel
  // reading past kv_len or through a wrong page shows up.
  test::CacheGeometry g = test::CacheGeometry::of(c);
  hc.kv = ref::PagedKV(g.refLayout(), hc.numPages, P, Hkv, D);
  double slack = finiteSlack ? 8.0 : std::numeric_limits<double>::quiet_NaN();
  hc.slack = slack;
  std::fill(hc.kv.k.begin(), hc.kv.k.end(), slack);
  std::fill(hc.kv.v.begin(), hc.kv.v.end(), slack);
  // fp8: values over the whole range, scales that bring them back to O(1).
  std::optional<ref::FP8Format> fmt;
  double max = 1;
  if (c.fp8()) {
    fmt = test::fp8FormatOf(c.kvDtype);
    max = ref::fp8Max(*fmt);
    int64_t n = c.kvScale == rt::KVScale::Head ? Hkv : 1;
    for (std::vector<float> *s : {&hc.kScale, &hc.vScale})
      for (int64_t i = 0; i < n; ++i)
        s->push_back(static_cast<float>(rng.uniform(0.5, 2) / max));
    hc.kv.fp8 = ref::FP8Scales{
        *fmt, std::vector<double>(hc.kScale.begin(), hc.kScale.end()),
        std::vector<double>(hc.vScale.begin(), hc.vScale.end())};
  }
  auto value = [&]() {
    double x = rng.uniform(-1, 1);
    return fmt ? ref::quantizeFP8(x * max, *fmt) : test::roundTo(c.dtype, x);
  };
  for (size_t b = 0; b < lens.size(); ++b)
    for (int64_t t = 0; t < lens[b]; ++t) {
      auto [page, slot] = hc.pt.locate(static_cast<int64_t>(b), t);
      for (int64_t h = 0; h < Hkv; ++h)
        for (int64_t d = 0; d < D; ++d) {
          hc.kv.kAt(page, slot, h, d) = value();
          hc.kv.vAt(page, slot, h, d) = value();
        }
    }
  hc.buffers = test::cacheBuffers(g, c.dtype, hc.kv);
  // Large-pool mode draws after everything else: the values and the page
  // table are those of the normal mode.
  hc.placement = devicePages > 0
                     ? placeInLargePool(c, devicePages, hc.numPages,
                                        hc.pt.indices, rng)
                     : identityPlacement(hc.numPages);
  hc.deviceIndices = hc.placement.map(hc.pt.indices);
  return hc;
}

//===----------------------------------------------------------------------===//
// Large page pools
//===----------------------------------------------------------------------===//

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
/// Device memory left free beside the pool (the case's other buffers, the
/// runtime's workspace, the context).
constexpr size_t kPoolMarginBytes = size_t(1) << 30;

/// Elements (of one cache tensor) of one page: the stride of the
/// outermost (page) dimension of every layout.
int64_t pageStride(const rt::BundleConfig &c) {
  return test::CacheGeometry::of(c).bufferElements(1);
}

/// The bytes of one element of `slack` in the cache's format.
std::vector<uint8_t> slackElement(const rt::BundleConfig &c, double slack) {
  if (c.fp8())
    return {test::fp8Bits(slack, test::fp8FormatOf(c.kvDtype))};
  return test::toBytes(c.dtype, {slack});
}

/// Throws Failure unless `bytes` (what the pool needs) plus a margin fit
/// the device's free memory.
void requireFreeMemory(double bytes, const std::string &what) {
  size_t freeBytes = 0, totalBytes = 0;
  PA_CU(cuMemGetInfo(&freeBytes, &totalBytes));
  if (bytes + static_cast<double>(kPoolMarginBytes) >
      static_cast<double>(freeBytes))
    throw Failure(fmt("%s needs %.2f GiB (+ %.0f GiB margin) of device "
                      "memory, but only %.2f GiB of %.2f GiB are free: use "
                      "a smaller --pool-elements",
                      what.c_str(), bytes / kGiB, kPoolMarginBytes / kGiB,
                      static_cast<double>(freeBytes) / kGiB,
                      static_cast<double>(totalBytes) / kGiB));
}

std::string elementsStr(int64_t n) {
  if (n >= (int64_t(1) << 30))
    return fmt("%" PRId64 " (%.2f Gi) elements", n,
               static_cast<double>(n) / kGiB);
  return fmt("%" PRId64 " elements", n);
}

} // namespace

int64_t pa::runner::PagePlacement::page(int64_t h) const {
  if (identity() || h < 0)
    return h;
  if (h >= hostPages())
    return devicePages + (h - hostPages());
  return deviceOf[static_cast<size_t>(h)];
}

std::vector<int32_t>
pa::runner::PagePlacement::map(const std::vector<int32_t> &hostIndices) const {
  std::vector<int32_t> out;
  out.reserve(hostIndices.size());
  for (int32_t h : hostIndices)
    out.push_back(static_cast<int32_t>(page(h)));
  return out;
}

int32_t pa::runner::PagePlacement::slot(int32_t s, int64_t pageSize) const {
  if (identity() || s < 0)
    return s;
  return static_cast<int32_t>(page(s / pageSize) * pageSize + s % pageSize);
}

std::string pa::runner::PagePlacement::describe(const rt::BundleConfig &c,
                                    const std::vector<int32_t> &used) const {
  const int64_t stride = pageStride(c);
  std::vector<int64_t> pages;
  for (int32_t h : used)
    pages.push_back(page(h));
  std::sort(pages.begin(), pages.end());
  pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
  if (pages.empty())
    return "no page used";
  int64_t above31 = 0, above32 = 0;
  for (int64_t p : pages) {
    // The page's last element (of the tensor) past the boundary.
    int64_t end = (p + 1) * stride;
    above31 += end > (int64_t(1) << 31);
    above32 += end > (int64_t(1) << 32);
  }
  return fmt("%zu pages at device elements [%" PRId64 ", %" PRId64
             ") of %" PRId64 ": %" PRId64 " reach past element 2^31, %" PRId64
             " past 2^32",
             pages.size(), pages.front() * stride, (pages.back() + 1) * stride,
             devicePages * stride, above31, above32);
}

std::string pa::runner::poolNote(int64_t poolElements) {
  return poolElements > 0
             ? fmt(", large pool of %" PRId64 " elements per tensor",
                   poolElements)
             : std::string();
}

PagePlacement pa::runner::identityPlacement(int64_t pages) {
  PagePlacement pl;
  pl.devicePages = pages;
  return pl;
}

int64_t pa::runner::largePoolPages(const rt::BundleConfig &c,
                                   int64_t poolElements) {
  test::CacheGeometry g = test::CacheGeometry::of(c);
  const int64_t stride = g.bufferElements(1);
  // Page is the outermost dimension of every cache layout: page p's
  // elements are [p * stride, (p + 1) * stride) of each tensor.
  std::vector<int64_t> shape = g.bufferShape(3);
  if (shape.empty() || shape[0] != 3 || g.bufferElements(3) != 3 * stride)
    throw Failure("large-pool mode: the cache layout of " + c.str() +
                  " does not have the page as its outermost dimension");
  int64_t pages = (poolElements + stride - 1) / stride;
  if (pages > std::numeric_limits<int32_t>::max())
    throw Failure(fmt("--pool-elements %" PRId64 ": %" PRId64
                      " pages of %" PRId64
                      " elements, more than kv_indices (int32) can address",
                      poolElements, pages, stride));
  int64_t eb = cacheElementBytes(c);
  double bytes = static_cast<double>(pages) * static_cast<double>(stride) *
                 static_cast<double>(eb);
  int tensors = g.numBuffers();
  requireFreeMemory(bytes * tensors,
                    fmt("--pool-elements %" PRId64 " (%d x %.2f GiB)",
                        poolElements, tensors, bytes / kGiB));
  std::printf("  large pool: %" PRId64 " pages of %" PRId64
              " elements = %s per tensor, %d tensor%s of %.2f GiB; the "
              "case's pages placed past elements 2^31 and 2^32, the rest "
              "poisoned\n",
              pages, stride, elementsStr(pages * stride).c_str(), tensors,
              tensors > 1 ? "s" : "", bytes / kGiB);
  if (pages * stride <= (int64_t(1) << 32))
    std::printf("  note: the pool holds at most 2^32 elements per tensor; "
                "use --pool-elements 5G or more to cross element 2^32\n");
  std::fflush(stdout);
  return pages;
}

PagePlacement pa::runner::placeInLargePool(const rt::BundleConfig &c,
                                           int64_t devicePages,
                                           int64_t hostPages,
                                           const std::vector<int32_t> &used,
                                           test::Rng &rng) {
  const int64_t stride = pageStride(c);
  if (devicePages < hostPages)
    throw Failure(fmt("--pool-elements: the pool holds %" PRId64
                      " pages (%s per tensor) but the case needs %" PRId64
                      " pages: use --pool-elements %" PRId64 " or more",
                      devicePages, elementsStr(devicePages * stride).c_str(),
                      hostPages, hostPages * stride));
  PagePlacement pl;
  pl.devicePages = devicePages;
  pl.deviceOf.assign(static_cast<size_t>(hostPages), -1);
  // Anchors, most telling first: the last pages (the highest offsets), the
  // pages holding element 2^32 and 2^31 and byte 2^32 and 2^31 and the
  // pages just below them, the first pages.
  const int64_t eb = cacheElementBytes(c), last = devicePages - 1;
  const int64_t bounds[] = {int64_t(1) << 32, int64_t(1) << 31,
                            (int64_t(1) << 32) / eb, (int64_t(1) << 31) / eb};
  std::vector<int64_t> anchors = {last};
  for (int64_t e : bounds)
    anchors.push_back(e / stride);
  anchors.push_back(0);
  for (int64_t e : bounds)
    anchors.push_back((e - 1) / stride);
  for (int64_t p : {last - 1, int64_t(1), last - 2})
    anchors.push_back(p);
  for (int64_t e : bounds)
    anchors.push_back(e / stride + 1);
  std::vector<char> isUsed(static_cast<size_t>(hostPages), 0);
  std::vector<int64_t> order;
  for (int32_t h : used)
    if (h >= 0 && h < hostPages && !isUsed[static_cast<size_t>(h)]) {
      isUsed[static_cast<size_t>(h)] = 1;
      order.push_back(h);
    }
  rng.shuffle(order);
  for (int64_t h = 0; h < hostPages; ++h)
    if (!isUsed[static_cast<size_t>(h)])
      order.push_back(h);
  std::vector<int64_t> targets;
  std::set<int64_t> taken;
  for (int64_t p : anchors)
    if (p >= 0 && p < devicePages && taken.insert(p).second)
      targets.push_back(p);
  if (static_cast<int64_t>(targets.size()) > hostPages)
    targets.resize(static_cast<size_t>(hostPages));
  int64_t rest = hostPages - static_cast<int64_t>(targets.size());
  if (devicePages <= 4 * hostPages + 64) {
    // A pool not much larger than the case: a random subset of the free
    // pages.
    std::vector<int64_t> free;
    for (int64_t p = 0; p < devicePages; ++p)
      if (!taken.count(p))
        free.push_back(p);
    rng.shuffle(free);
    targets.insert(targets.end(), free.begin(), free.begin() + rest);
  } else {
    // Random distinct pages over the whole pool (at most a quarter of it
    // taken: few draws repeat).
    while (rest > 0) {
      int64_t p = rng.uniformInt(0, last);
      if (taken.insert(p).second) {
        targets.push_back(p);
        --rest;
      }
    }
  }
  for (size_t i = 0; i < order.size(); ++i)
    pl.deviceOf[static_cast<size_t>(order[i])] = targets[i];
  return pl;
}

void pa::runner::uploadCache(const rt::BundleConfig &c,
                             const std::vector<std::vector<uint8_t>> &host,
                             const PagePlacement &pl, double slack,
                             DeviceBuffer *out) {
  if (pl.identity()) {
    for (size_t i = 0; i < host.size(); ++i)
      out[i] = uploadVector(host[i]);
    return;
  }
  const int64_t eb = cacheElementBytes(c);
  const size_t pageBytes = static_cast<size_t>(pageStride(c) * eb);
  const size_t total = pageBytes * static_cast<size_t>(pl.devicePages);
  std::vector<uint8_t> pattern = slackElement(c, slack);
  // Free the old tensors first (a previous case's pool), then check.
  for (size_t i = 0; i < host.size(); ++i)
    out[i].reset();
  requireFreeMemory(static_cast<double>(total) * static_cast<double>(host.size()),
                    "the large pool");
  for (size_t i = 0; i < host.size(); ++i) {
    if (host[i].size() != pageBytes * static_cast<size_t>(pl.hostPages()))
      throw Failure("uploadCache: a host buffer does not hold the placement's "
                    "pages");
    out[i].allocate(total);
    CUdeviceptr base = out[i].get();
    if (pattern.size() == 1) {
      PA_CU(cuMemsetD8(base, pattern[0], total));
    } else if (pattern.size() == 2) {
      uint16_t v;
      std::memcpy(&v, pattern.data(), 2);
      PA_CU(cuMemsetD16(base, v, total / 2));
    } else {
      uint32_t v;
      std::memcpy(&v, pattern.data(), 4);
      PA_CU(cuMemsetD32(base, v, total / 4));
    }
    for (int64_t h = 0; h < pl.hostPages(); ++h)
      PA_CU(cuMemcpyHtoD(base + static_cast<size_t>(pl.page(h)) * pageBytes,
                         host[i].data() + static_cast<size_t>(h) * pageBytes,
                         pageBytes));
  }
  PA_CU(cuCtxSynchronize());
}

std::vector<std::vector<uint8_t>>
pa::runner::downloadCache(const rt::BundleConfig &c, const PagePlacement &pl,
                          const DeviceBuffer *dev) {
  test::CacheGeometry g = test::CacheGeometry::of(c);
  const int64_t eb = cacheElementBytes(c);
  const size_t pageBytes = static_cast<size_t>(g.bufferElements(1) * eb);
  std::vector<std::vector<uint8_t>> out(static_cast<size_t>(g.numBuffers()));
  for (size_t i = 0; i < out.size(); ++i) {
    if (pl.identity()) {
      out[i].resize(dev[i].size());
      dev[i].download(out[i].data(), out[i].size());
      continue;
    }
    out[i].resize(pageBytes * static_cast<size_t>(pl.hostPages()));
    for (int64_t h = 0; h < pl.hostPages(); ++h)
      PA_CU(cuMemcpyDtoH(out[i].data() + static_cast<size_t>(h) * pageBytes,
                         dev[i].get() +
                             static_cast<size_t>(pl.page(h)) * pageBytes,
                         pageBytes));
  }
  return out;
}

int64_t pa::runner::checkAliasPagesUntouched(
    const rt::BundleConfig &c, const PagePlacement &pl,
    const std::vector<int32_t> &written, double slack,
    const DeviceBuffer *dev) {
  if (pl.identity())
    return 0;
  const int64_t stride = pageStride(c), eb = cacheElementBytes(c);
  const size_t pageBytes = static_cast<size_t>(stride * eb);
  std::set<int64_t> mapped(pl.deviceOf.begin(), pl.deviceOf.end());
  // The pages whose start lies 2^31 or 2^32 elements below a written page's
  // start, and the pages that overlap that offset.
  std::set<int64_t> aliases;
  for (int32_t h : written) {
    int64_t start = pl.page(h) * stride;
    for (int64_t wrap : {int64_t(1) << 31, int64_t(1) << 32}) {
      if (start < wrap)
        continue;
      int64_t lo = (start - wrap) / stride,
              hi = (start - wrap + stride - 1) / stride;
      for (int64_t p : {lo, hi})
        if (!mapped.count(p) && aliases.size() < 64)
          aliases.insert(p);
    }
  }
  std::vector<uint8_t> pattern = slackElement(c, slack), page(pageBytes);
  int64_t bad = 0;
  for (int64_t p : aliases)
    for (int i = 0; i < test::CacheGeometry::of(c).numBuffers(); ++i) {
      PA_CU(cuMemcpyDtoH(page.data(),
                         dev[i].get() + static_cast<size_t>(p) * pageBytes,
                         pageBytes));
      for (size_t j = 0; j < pageBytes; ++j)
        if (page[j] != pattern[j % pattern.size()]) {
          if (bad < 4)
            std::printf("      device page %" PRId64 " (tensor %d, an alias "
                        "of a written page 2^31 / 2^32 elements lower) was "
                        "written at byte %zu\n",
                        p, i, j);
          ++bad;
          break;
        }
    }
  return bad;
}

Comparison pa::runner::compareStates(
    const ref::States &expected, const Outputs &out, rt::DType dtype,
    const std::function<std::string(int64_t row)> &where, bool finiteSlack) {
  Comparison r;
  const int64_t rows = expected.n, Hq = expected.numHeads,
                D = expected.headDim;
  double errSq = 0, refSq = 0;
  int64_t nanO = 0, nanLse = 0;
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      double refLse = expected.lseAt(b, h);
      float got = out.lse[static_cast<size_t>(b * Hq + h)];
      bool rowNan = false, rowNonZero = false;
      for (int64_t d = 0; d < D; ++d) {
        double v = test::loadElement(out.o.data(), (b * Hq + h) * D + d, dtype);
        double e = expected.oAt(b, h, d);
        if (std::isnan(v)) {
          rowNan = true;
          ++nanO;
          continue;
        }
        rowNonZero |= v != 0;
        errSq += (v - e) * (v - e);
        refSq += e * e;
      }
      auto at = [&] { return where(b) + " head " + std::to_string(h); };
      if (rowNan)
        r.problem("NaN in o at " + at() +
                  (finiteSlack ? std::string()
                               : " (unused cache slots/pages hold NaN: they "
                                 "must not reach o; --finite-slack relaxes "
                                 "this)"));
      if (std::isnan(got)) {
        ++nanLse;
        r.problem("NaN (or unwritten poison) in lse at " + at());
        continue;
      }
      if (std::isinf(refLse) && refLse < 0) {
        if (!(std::isinf(got) && got < 0)) {
          std::ostringstream os;
          os << "lse = " << got << " at " << at()
             << ", expected -inf (no visible key)";
          r.problem(os.str());
        }
        if (rowNonZero)
          r.problem("o != 0 at " + at() + " (no visible key)");
        continue;
      }
      if (!std::isfinite(got)) {
        std::ostringstream os;
        os << "lse = " << got << " at " << at() << ", expected " << refLse;
        r.problem(os.str());
        continue;
      }
      double e = std::fabs(got - refLse);
      r.maxLseErr = std::max(r.maxLseErr, e);
      if (e > kLseTolerance) {
        std::ostringstream os;
        os << "lse = " << got << " at " << at() << ", expected " << refLse
           << " (|err| " << e << " > " << kLseTolerance << ")";
        r.problem(os.str());
      }
    }
  r.relO = refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
  if (nanO)
    r.problem(std::to_string(nanO) + " NaN elements in o in total");
  if (nanLse)
    r.problem(std::to_string(nanLse) + " NaN elements in lse in total");
  if (r.relO > relTolerance(dtype)) {
    std::ostringstream os;
    os << "relative L2 error of o " << r.relO << " > " << relTolerance(dtype);
    r.problem(os.str());
  }
  return r;
}

namespace {

//===----------------------------------------------------------------------===//
// Test cases
//===----------------------------------------------------------------------===//

/// One decode problem: host page table, device-format inputs, the oracle.
struct CaseData {
  std::string name;
  /// numPages: the device pool's pages (num_pages).
  int64_t batch = 0, numPages = 0, nnz = 0;
  std::vector<int64_t> lens;
  /// indices: the device's kv_indices (refIndices through the placement).
  std::vector<int32_t> indptr, indices, last;
  /// The page table's indices into the host cache `kv` (the reference's).
  std::vector<int32_t> refIndices;
  /// Where the host pages live on the device; the value of unused slots.
  PagePlacement placement;
  double slack = 0;
  std::vector<uint8_t> q;
  /// Joint: one buffer; split: K, then V (test::CacheGeometry).
  std::vector<std::vector<uint8_t>> cache;
  /// An fp8 cache's scales (HostCache::kScale / vScale).
  std::vector<float> kScale, vScale;
  /// The reference's q and cache (the graph test re-plans the case with
  /// other lengths over them).
  std::vector<double> refQ;
  ref::PagedKV kv;
  ref::States expected;
};

/// Device copies of a CaseData.
struct DeviceCase {
  DeviceBuffer q, cache[2], scales[2], indptr, indices, last, o, lse;
};

CaseData makeCase(const std::string &name, const std::vector<int64_t> &lens,
                  const rt::BundleConfig &c, test::Rng &rng, bool finiteSlack,
                  int64_t devicePages) {
  CaseData cs;
  cs.name = name;
  cs.lens = lens;
  cs.batch = static_cast<int64_t>(lens.size());
  const int64_t D = c.headDim, Hq = c.numQHeads();
  HostCache hc = makeHostCache(lens, c, rng, finiteSlack, devicePages);
  cs.numPages = hc.placement.devicePages;
  cs.indptr = hc.pt.indptr;
  cs.indices = hc.deviceIndices;
  cs.refIndices = hc.pt.indices;
  cs.placement = hc.placement;
  cs.slack = hc.slack;
  cs.last = hc.pt.lastPageLen;
  cs.nnz = cs.indptr.back();

  // (In large-pool mode the placement drew from rng: q differs from the
  // normal mode's.)
  std::vector<double> refQ =
      test::randomValues(rng, cs.batch * Hq * D, c.dtype, -3, 3);
  cs.q = test::toBytes(c.dtype, refQ);
  cs.cache = std::move(hc.buffers);
  cs.kScale = hc.kScale;
  cs.vScale = hc.vScale;
  cs.expected = ref::decode(refQ, Hq, hc.kv, hc.pt, ref::AttnOptions{});
  cs.refQ = std::move(refQ);
  cs.kv = std::move(hc.kv);
  return cs;
}

DeviceCase uploadCase(const CaseData &cs, const rt::BundleConfig &c) {
  DeviceCase d;
  d.q = uploadVector(cs.q);
  uploadCache(c, cs.cache, cs.placement, cs.slack, d.cache);
  if (c.fp8()) {
    d.scales[0] = uploadVector(cs.kScale);
    d.scales[1] = uploadVector(cs.vScale);
  }
  d.indptr = uploadVector(cs.indptr);
  d.indices = uploadVector(cs.indices);
  d.last = uploadVector(cs.last);
  int64_t eb = rt::elementBytes(c.dtype);
  d.o.allocate(static_cast<size_t>(cs.batch * c.numQHeads() * c.headDim * eb));
  d.lse.allocate(static_cast<size_t>(cs.batch * c.numQHeads() * 4));
  return d;
}

pa_decode_args makeArgs(const CaseData &cs, const DeviceCase &d,
                        const rt::BundleConfig &c, bool checked) {
  pa_decode_args a;
  std::memset(&a, 0, sizeof(a));
  a.q = d.q.get();
  bindPagedCache(a, d, c);
  a.o = d.o.get();
  a.lse = d.lse.get();
  a.batch = cs.batch;
  a.num_q_heads = c.numQHeads();
  a.head_dim = c.headDim;
  a.num_pages = cs.numPages;
  a.nnz = cs.nnz;
  a.checked = checked ? 1 : 0;
  return a;
}

Outputs poisonOutputs(const CaseData &cs, const DeviceCase &d,
                      const rt::BundleConfig &c) {
  poison(d.o.get(), cs.batch * c.numQHeads() * c.headDim, c.dtype);
  poison(d.lse.get(), cs.batch * c.numQHeads(), rt::DType::F32);
  return {};
}

Outputs readOutputs(const CaseData &cs, const DeviceCase &d,
                    const rt::BundleConfig &c) {
  Outputs out;
  out.o.resize(d.o.size());
  out.lse.resize(static_cast<size_t>(cs.batch * c.numQHeads()));
  d.o.download(out.o.data(), out.o.size());
  d.lse.download(out.lse.data(), out.lse.size() * 4);
  return out;
}

Comparison compare(const CaseData &cs, const Outputs &out,
                   const rt::BundleConfig &c, bool finiteSlack) {
  return compareStates(
      cs.expected, out, c.dtype,
      [&](int64_t b) {
        return "request " + std::to_string(b) + " (kv_len " +
               std::to_string(cs.lens[b]) + ")";
      },
      finiteSlack);
}

//===----------------------------------------------------------------------===//
// Checking one bundle
//===----------------------------------------------------------------------===//

struct BundleSummary {
  std::string dir, config;
  int runs = 0, failedRuns = 0;
  double maxRelO = 0, maxLseErr = 0;
  int checkedPassed = 0, checkedTotal = 0;
  bool nondeterministic = false;
  std::string fatal;
  bool pass() const {
    return fatal.empty() && failedRuns == 0 && checkedPassed == checkedTotal;
  }
};

/// A chunking variant of a case.
struct Variant {
  std::string name;
  int64_t forceChunk = 0; ///< 0: the planner's choice
  int splitMerge = PA_SPLIT_MERGE_AUTO; ///< pa_plan_options.split_merge
};

/// Runs one (case, variant): plan, poison, run, compare, run again.
void runVariant(pa_bundle *bundle, const rt::BundleConfig &c,
                const CaseData &cs, const DeviceCase &d, const Variant &v,
                bool finiteSlack, BundleSummary &sum) {
  pa_plan_options opts{};
  opts.force_chunk = v.forceChunk;
  opts.split_merge = v.splitMerge;
  pa_plan *plan = nullptr;
  pa_plan_info info{};
  Outputs first;
  Comparison cmp;
  bool deterministic = true;
  std::string error;
  try {
    PA_RT(pa_decode_plan(bundle, cs.indptr.data(), cs.last.data(), cs.batch,
                         &opts, &plan));
    PA_RT(pa_plan_get_info(plan, &info));
    for (int rep = 0; rep < 2; ++rep) {
      poisonOutputs(cs, d, c);
      pa_decode_args a = makeArgs(cs, d, c, /*checked=*/false);
      PA_RT(pa_decode_run(bundle, plan, &a, nullptr));
      PA_CU(cuCtxSynchronize());
      Outputs out = readOutputs(cs, d, c);
      if (rep == 0) {
        cmp = compare(cs, out, c, finiteSlack);
        first = std::move(out);
      } else {
        deterministic = out.o == first.o &&
                        std::memcmp(out.lse.data(), first.lse.data(),
                                    out.lse.size() * sizeof(float)) == 0;
      }
    }
  } catch (const Failure &f) {
    error = f.what();
  }
  pa_plan_free(plan);
  ++sum.runs;
  if (!error.empty()) {
    cmp.problem(error);
  }
  sum.maxRelO = std::max(sum.maxRelO, cmp.relO);
  sum.maxLseErr = std::max(sum.maxLseErr, cmp.maxLseErr);
  if (!cmp.pass)
    ++sum.failedRuns;
  if (!deterministic)
    sum.nondeterministic = true;
  std::printf("  %-16s B=%-3" PRId64 " %-12s chunk %-6" PRId64
              " split %d%s items %-5" PRId64 " rel_o %.2e lse_err %.2e %s%s\n",
              cs.name.c_str(), cs.batch, v.name.c_str(), info.chunk_size,
              info.split,
              info.merge_together ? " (1 launch, together)"
              : info.fused_merge  ? " (1 launch)"
                                  : "",
              info.num_work_items, cmp.relO, cmp.maxLseErr,
              cmp.pass ? "PASS" : "FAIL",
              deterministic ? "" : " (WARN: second run differs bitwise)");
  for (const std::string &p : cmp.problems)
    std::printf("      %s\n", p.c_str());
  std::fflush(stdout);
}

/// Checked mode: each corruption of the device page table (or of the
/// arguments) must be rejected with its message before any launch.
void testCheckedMode(pa_bundle *bundle, const rt::BundleConfig &c,
                     const CaseData &cs, const DeviceCase &d, bool finiteSlack,
                     BundleSummary &sum) {
  const int64_t P = c.pageSize, B = cs.batch;
  pa_plan *plan = nullptr;
  PA_RT(pa_decode_plan(bundle, cs.indptr.data(), cs.last.data(), B, nullptr,
                       &plan));
  auto setInt = [](const DeviceBuffer &buf, int64_t i, int32_t v) {
    PA_CU(cuMemcpyHtoD(buf.get() + 4 * i, &v, 4));
  };
  auto expectRejected = [&](const std::string &name,
                            const std::function<void(pa_decode_args &)> &edit,
                            const std::function<void()> &corrupt,
                            const std::function<void()> &restore,
                            const std::string &fragment) {
    ++sum.checkedTotal;
    std::string problem;
    try {
      poisonOutputs(cs, d, c);
      pa_decode_args a = makeArgs(cs, d, c, /*checked=*/true);
      if (edit)
        edit(a);
      if (corrupt)
        corrupt();
      int rc = pa_decode_run(bundle, plan, &a, nullptr);
      std::string msg = pa_last_error();
      if (restore)
        restore();
      PA_CU(cuCtxSynchronize());
      if (rc == PA_SUCCESS)
        problem = "accepted (expected an error containing '" + fragment + "')";
      else if (msg.find(fragment) == std::string::npos)
        problem = "wrong message: '" + msg + "' (expected '" + fragment + "')";
      else {
        Outputs out = readOutputs(cs, d, c);
        int64_t eb = rt::elementBytes(c.dtype);
        uint32_t bits = poisonBits(c.dtype);
        for (size_t i = 0; i < out.o.size() && problem.empty();
             i += static_cast<size_t>(eb))
          if (std::memcmp(out.o.data() + i, &bits, static_cast<size_t>(eb)))
            problem = "o was written: a kernel ran before the check failed";
        for (float f : out.lse) {
          uint32_t u;
          std::memcpy(&u, &f, 4);
          if (u != kLsePoison && problem.empty())
            problem = "lse was written: a kernel ran before the check failed";
        }
        if (problem.empty())
          std::printf("  checked: %-34s rejected: %s\n", name.c_str(),
                      msg.c_str());
      }
    } catch (const Failure &f) {
      problem = f.what();
    }
    if (problem.empty())
      ++sum.checkedPassed;
    else
      std::printf("  checked: %-34s FAIL: %s\n", name.c_str(), problem.c_str());
    std::fflush(stdout);
  };

  // A valid table passes checked mode and gives the right answer.
  {
    ++sum.checkedTotal;
    std::string problem;
    try {
      poisonOutputs(cs, d, c);
      pa_decode_args a = makeArgs(cs, d, c, /*checked=*/true);
      PA_RT(pa_decode_run(bundle, plan, &a, nullptr));
      PA_CU(cuCtxSynchronize());
      Comparison cmp = compare(cs, readOutputs(cs, d, c), c, finiteSlack);
      if (!cmp.pass)
        problem = cmp.problems.empty() ? "mismatch" : cmp.problems[0];
    } catch (const Failure &f) {
      problem = f.what();
    }
    if (problem.empty()) {
      ++sum.checkedPassed;
      std::printf("  checked: %-34s accepted, correct\n", "valid page table");
    } else {
      std::printf("  checked: %-34s FAIL: %s\n", "valid page table",
                  problem.c_str());
    }
  }

  // Request layout of the checked case (see checkedLens()): 0, 1, P, P+1,
  // 2P, 3P-1, 16P+1 tokens.
  auto str = [](int64_t v) { return std::to_string(v); };
  int64_t badPage = cs.numPages;
  expectRejected(
      "page index == num_pages", nullptr,
      [&] { setInt(d.indices, 5, static_cast<int32_t>(badPage)); },
      [&] { setInt(d.indices, 5, cs.indices[5]); },
      "kv_indices[5] = " + str(badPage) + " out of range [0, " +
          str(cs.numPages) + ")");
  expectRejected(
      "negative page index", nullptr, [&] { setInt(d.indices, 0, -1); },
      [&] { setInt(d.indices, 0, cs.indices[0]); },
      "kv_indices[0] = -1 out of range");
  expectRejected(
      "last_page_len > page_size", nullptr,
      [&] { setInt(d.last, 3, static_cast<int32_t>(P + 1)); },
      [&] { setInt(d.last, 3, cs.last[3]); },
      "kv_last_page_len[3] = " + str(P + 1) + " not in [1, " + str(P) + "]");
  expectRejected(
      "last_page_len == 0", nullptr, [&] { setInt(d.last, 1, 0); },
      [&] { setInt(d.last, 1, cs.last[1]); },
      "kv_last_page_len[1] = 0 not in [1, " + str(P) + "]");
  expectRejected(
      "non-monotonic kv_indptr", nullptr,
      [&] { setInt(d.indptr, 3, cs.indptr[4] + 1); },
      [&] { setInt(d.indptr, 3, cs.indptr[3]); },
      "kv_indptr not non-decreasing at b = 3");
  expectRejected(
      "kv_indptr[0] != 0", nullptr, [&] { setInt(d.indptr, 0, 1); },
      [&] { setInt(d.indptr, 0, 0); }, "kv_indptr[0] = 1, expected 0");
  expectRejected(
      "kv_indptr[B] != nnz (device)", nullptr,
      [&] { setInt(d.indptr, B, cs.indptr[B] - 1); },
      [&] { setInt(d.indptr, B, cs.indptr[B]); },
      "size mismatch: kv_indptr[" + str(B) + "] = " + str(cs.nnz - 1) +
          " on the device");
  expectRejected(
      "nnz argument != plan", [&](pa_decode_args &a) { a.nnz = cs.nnz + 1; },
      nullptr, nullptr, "size mismatch: nnz = " + str(cs.nnz + 1));
  expectRejected(
      "batch != plan", [&](pa_decode_args &a) { a.batch = B - 1; }, nullptr,
      nullptr,
      "batch = " + str(B - 1) + " but the plan was made for batch " + str(B));
  expectRejected(
      "num_q_heads != kv_heads*group",
      [&](pa_decode_args &a) { a.num_q_heads = c.numQHeads() + 1; }, nullptr,
      nullptr, "num_q_heads = " + str(c.numQHeads() + 1) + " but the bundle");
  expectRejected(
      "head_dim != bundle's",
      [&](pa_decode_args &a) { a.head_dim = c.headDim * 2; }, nullptr, nullptr,
      "head_dim = " + str(c.headDim * 2));
  expectRejected(
      "batch != plan (unchecked too)",
      [&](pa_decode_args &a) {
        a.batch = B + 1;
        a.checked = 0;
      },
      nullptr, nullptr, "but the plan was made for batch " + str(B));
  if (P >= 2)
    expectRejected(
        "kv lengths != plan", nullptr,
        [&] { setInt(d.last, 6, cs.last[6] + 1); },
        [&] { setInt(d.last, 6, cs.last[6]); },
        "does not match the plan: kv_len[6] = " + str(cs.lens[6] + 1));
  // fp8 caches: the scales are required, and checked mode rejects a scale
  // that is not finite and > 0; other caches take none.
  auto setFloat = [](const DeviceBuffer &buf, int64_t i, float v) {
    PA_CU(cuMemcpyHtoD(buf.get() + 4 * i, &v, 4));
  };
  if (c.fp8()) {
    int64_t last = static_cast<int64_t>(cs.vScale.size()) - 1;
    expectRejected(
        "k_scale null", [&](pa_decode_args &a) { a.k_scale = 0; }, nullptr,
        nullptr, "argument 'k_scale' is null");
    expectRejected(
        "v_scale[last] == 0", nullptr,
        [&] { setFloat(d.scales[1], last, 0.0f); },
        [&] { setFloat(d.scales[1], last, cs.vScale[last]); },
        "v_scale[" + str(last) + "] = 0: fp8 cache scales must be finite "
                                 "and > 0");
    expectRejected(
        "k_scale[0] == NaN", nullptr,
        [&] { setFloat(d.scales[0], 0, std::nanf("")); },
        [&] { setFloat(d.scales[0], 0, cs.kScale[0]); },
        "k_scale[0] = nan: fp8 cache scales must be finite and > 0");
  } else {
    expectRejected(
        "k_scale on a non-fp8 cache",
        [&](pa_decode_args &a) { a.k_scale = d.q.get(); }, nullptr, nullptr,
        "k_scale / v_scale are given but the bundle's cache is not fp8");
  }
  // The planner rejects a split_merge that is neither AUTO nor LAST.
  {
    ++sum.checkedTotal;
    pa_plan_options bad{};
    bad.split_merge = 2;
    pa_plan *rejected = nullptr;
    int rc = pa_decode_plan(bundle, cs.indptr.data(), cs.last.data(), B, &bad,
                            &rejected);
    std::string msg = rc == PA_SUCCESS ? "" : pa_last_error();
    const char *fragment = "split_merge = 2 must be PA_SPLIT_MERGE_AUTO (0) "
                           "or PA_SPLIT_MERGE_LAST (1)";
    if (rc != PA_SUCCESS && msg.find(fragment) != std::string::npos) {
      ++sum.checkedPassed;
      std::printf("  checked: %-34s rejected: %s\n", "split_merge = 2",
                  msg.c_str());
    } else {
      pa_plan_free(rejected);
      std::printf("  checked: %-34s FAIL: %s\n", "split_merge = 2",
                  rc == PA_SUCCESS ? "accepted" : msg.c_str());
    }
  }
  pa_plan_free(plan);
}

/// CUDA graphs: a graph plan (pa_plan_options.graph_work_capacity) of case
/// `cs` (whose lengths are the largest of the test), pa_decode_run
/// captured once into a graph, then replayed for new kv lengths of the
/// same batch: each step writes a page table of the new lengths into the
/// same device buffers (a prefix of each request's pages), calls
/// pa_decode_plan_update on the stream and relaunches the graph, and o /
/// lse are compared with the reference over the same cache. The first
/// step replays the captured lengths; later ones shrink, grow back, empty
/// requests and go down to a single token.
void testGraph(pa_bundle *bundle, const rt::BundleConfig &c,
               const CaseData &cs, const DeviceCase &d, bool finiteSlack,
               BundleSummary &sum) {
  const int64_t P = c.pageSize, B = cs.batch;
  test::Rng rng(test::mixSeed(0x67726170, static_cast<uint64_t>(B)));
  CUstream stream = nullptr;
  PA_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  pa_plan *plan = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  // The table of `lens` over the pages `indices` (the device's or the
  // reference's: they differ in large-pool mode).
  auto tableOf = [&](const std::vector<int64_t> &lens,
                     const std::vector<int32_t> &indices) {
    ref::PageTable t;
    t.pageSize = P;
    t.indptr = {0};
    for (int64_t b = 0; b < B; ++b) {
      int64_t pages = (lens[b] + P - 1) / P;
      for (int64_t i = 0; i < pages; ++i)
        t.indices.push_back(indices[cs.indptr[b] + i]);
      t.indptr.push_back(static_cast<int32_t>(t.indices.size()));
      t.lastPageLen.push_back(
          static_cast<int32_t>(pages ? lens[b] - (pages - 1) * P : 1));
    }
    return t;
  };
  std::vector<std::vector<int64_t>> steps = {cs.lens};
  for (int s = 0; s < 4; ++s) {
    std::vector<int64_t> l(cs.lens.size());
    for (size_t b = 0; b < l.size(); ++b)
      l[b] = s == 3 ? std::min<int64_t>(cs.lens[b], 1)
                    : rng.uniformInt(0, cs.lens[b]);
    steps.push_back(l);
  }
  // Every request empty: no work item at all (CTA 0 of the fused kernel
  // writes every o = 0, lse = -inf).
  steps.push_back(std::vector<int64_t>(cs.lens.size(), 0));
  steps.push_back(cs.lens);
  std::string error;
  int passed = 0;
  try {
    // A capacity of two items more than the non-empty requests: the
    // planner's chunk is enlarged to fit it.
    pa_plan_options opts{};
    for (int64_t len : cs.lens)
      opts.graph_work_capacity += len > 0;
    opts.graph_work_capacity += 2;
    PA_RT(pa_decode_plan(bundle, cs.indptr.data(), cs.last.data(), B, &opts,
                         &plan));
    pa_plan_info info{};
    PA_RT(pa_plan_get_info(plan, &info));
    if (!info.graph || !info.split)
      throw Failure("a graph plan must report graph = 1 and split = 1");
    pa_decode_args a = makeArgs(cs, d, c, /*checked=*/false);
    if (CUresult r = cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
        r == CUDA_ERROR_NOT_SUPPORTED) {
      std::printf("  graph: skipped (the driver captures no streams)\n");
      pa_plan_free(plan);
      cuStreamDestroy(stream);
      return;
    } else {
      PA_CU(r);
    }
    int rc = pa_decode_run(bundle, plan, &a, stream);
    CUresult end = cuStreamEndCapture(stream, &graph);
    if (rc != PA_SUCCESS)
      throw Failure(std::string("pa_decode_run under capture: ") +
                    pa_last_error());
    PA_CU(end);
    PA_CU(cuGraphInstantiate(&exec, graph, 0));
    for (size_t s = 0; s < steps.size(); ++s) {
      ref::PageTable t = tableOf(steps[s], cs.indices);
      // Same buffers: the new table is no longer than the captured one.
      PA_CU(cuMemcpyHtoDAsync(d.indptr.get(), t.indptr.data(),
                              t.indptr.size() * 4, stream));
      PA_CU(cuMemcpyHtoDAsync(d.last.get(), t.lastPageLen.data(),
                              t.lastPageLen.size() * 4, stream));
      if (!t.indices.empty())
        PA_CU(cuMemcpyHtoDAsync(d.indices.get(), t.indices.data(),
                                t.indices.size() * 4, stream));
      PA_RT(pa_decode_plan_update(plan, t.indptr.data(), t.lastPageLen.data(),
                                  B, stream));
      PA_CU(cuStreamSynchronize(stream));
      poisonOutputs(cs, d, c);
      PA_CU(cuCtxSynchronize());
      PA_CU(cuGraphLaunch(exec, stream));
      PA_CU(cuStreamSynchronize(stream));
      CaseData step = cs;
      step.lens = steps[s];
      step.expected = ref::decode(cs.refQ, c.numQHeads(), cs.kv,
                                  tableOf(steps[s], cs.refIndices),
                                  ref::AttnOptions{});
      PA_RT(pa_plan_get_info(plan, &info));
      Comparison cmp = compare(step, readOutputs(cs, d, c), c, finiteSlack);
      std::printf("  graph step %zu: kv_len sum %" PRId64 ", chunk %" PRId64
                  ", items %" PRId64 " of %" PRId64
                  "%s: rel_o %.2e lse_err %.2e %s\n",
                  s, std::accumulate(steps[s].begin(), steps[s].end(),
                                     int64_t(0)),
                  info.chunk_size, info.num_work_items,
                  opts.graph_work_capacity,
                  info.merge_together ? ", together" : "", cmp.relO,
                  cmp.maxLseErr, cmp.pass ? "PASS" : "FAIL");
      for (const std::string &pr : cmp.problems)
        std::printf("      %s\n", pr.c_str());
      if (cmp.pass)
        ++passed;
    }
    // Another batch is refused and leaves the plan alone.
    if (pa_decode_plan_update(plan, cs.indptr.data(), cs.last.data(), B - 1,
                              stream) == PA_SUCCESS)
      throw Failure("pa_decode_plan_update accepted another batch");
  } catch (const Failure &f) {
    error = f.what();
  }
  if (exec)
    cuGraphExecDestroy(exec);
  if (graph)
    cuGraphDestroy(graph);
  cuStreamSynchronize(stream);
  pa_plan_free(plan);
  cuStreamDestroy(stream);
  // The device page table back to the case's.
  for (auto [dst, src] :
       {std::pair{&d.indptr, &cs.indptr}, std::pair{&d.indices, &cs.indices},
        std::pair{&d.last, &cs.last}})
    if (!src->empty())
      PA_CU(cuMemcpyHtoD(dst->get(), src->data(), src->size() * 4));
  ++sum.checkedTotal;
  if (error.empty() && passed == static_cast<int>(steps.size())) {
    ++sum.checkedPassed;
    std::printf("  graph: %d replays with new kv lengths PASS\n", passed);
  } else {
    std::printf("  graph: FAIL %s\n",
                error.empty() ? "(a replay mismatched)" : error.c_str());
  }
  std::fflush(stdout);
}

/// Token counts of the checked-mode case (its messages depend on them).
std::vector<int64_t> checkedLens(int64_t P) {
  return {0, 1, P, P + 1, 2 * P, 3 * P - 1, 16 * P + 1};
}

BundleSummary checkBundle(const std::string &dir, const CheckOptions &opts) {
  BundleSummary sum;
  sum.dir = dir;
  pa_bundle *bundle = nullptr;
  try {
    PA_RT(pa_bundle_load(dir.c_str(), &bundle));
    rt::Manifest m;
    if (rt::Status s = rt::readManifest(dir, m); !s)
      throw Failure(s.message);
    const rt::BundleConfig &c = m.config;
    sum.config = c.str();
    const int64_t P = c.pageSize;
    std::printf("bundle %s: %s (Hq %" PRId64 ")%s\n", dir.c_str(),
                c.str().c_str(), c.numQHeads(),
                m.hasSplitKernels() ? ", split-KV kernels" : ", decode only");

    std::vector<Variant> variants = {{"plan", 0}};
    if (m.hasSplitKernels()) {
      if (opts.forceChunk > 0) {
        variants.push_back(
            {"chunk=" + std::to_string(opts.forceChunk), opts.forceChunk});
      } else {
        variants.push_back({"chunk=3P", 3 * P});
        // Not a multiple of the page size: items start mid-page.
        variants.push_back({"chunk=2P+5", 2 * P + 5});
      }
      // The last CTA's merge where the automatic one merges together.
      if (const rt::KernelSpec *k = m.find(rt::KernelKind::DecodeSplit);
          k && k->mergeTogether) {
        size_t n = variants.size();
        for (size_t i = 0; i < n; ++i) {
          Variant last = variants[i];
          last.name += "/last";
          last.splitMerge = PA_SPLIT_MERGE_LAST;
          variants.push_back(last);
        }
      }
    }

    int64_t devicePages = opts.poolElements > 0
                              ? largePoolPages(c, opts.poolElements)
                              : 0;
    test::Rng lenRng(test::mixSeed(opts.seed, 0x6c656e73)); // "lens"
    std::vector<std::pair<std::string, std::vector<int64_t>>> cases = {
        {"b1-len1", {1}},
        {"b1-empty", {0}},
        {"b3-all-empty", {0, 0, 0}},
        {"b7-mixed", checkedLens(P)},
        {"b7-long", {0, 5000, 1, 777, 256 * P, 2 * P + 3, 3000}},
    };
    // Lengths in [0, 1200] with empty requests, single pages and exactly
    // full last pages.
    cases.push_back({"b33-random", test::randomLens(lenRng, 33, P, 1200)});
    if (!opts.quick)
      cases.push_back({"b1-long", {16384 + 5}});

    for (size_t i = 0; i < cases.size(); ++i) {
      test::Rng rng(test::mixSeed(opts.seed, i + 1));
      CaseData cs = makeCase(cases[i].first, cases[i].second, c, rng,
                             opts.finiteSlack, devicePages);
      if (devicePages > 0)
        std::printf("  %-16s pool: %s\n", cs.name.c_str(),
                    cs.placement.describe(c, cs.refIndices).c_str());
      DeviceCase d = uploadCase(cs, c);
      for (const Variant &v : variants)
        runVariant(bundle, c, cs, d, v, opts.finiteSlack, sum);
      if (cases[i].first == "b7-mixed")
        testCheckedMode(bundle, c, cs, d, opts.finiteSlack, sum);
      if (cases[i].first == "b7-mixed" && m.hasSplitKernels())
        testGraph(bundle, c, cs, d, opts.finiteSlack, sum);
    }
  } catch (const Failure &f) {
    sum.fatal = f.what();
  } catch (const ref::Error &e) {
    sum.fatal = std::string("reference rejected the case: ") + e.what();
  }
  if (!sum.fatal.empty())
    std::printf("  FATAL: %s\n", sum.fatal.c_str());
  pa_bundle_free(bundle);
  return sum;
}

} // namespace

int pa::runner::runCheck(const CheckOptions &opts) {
  std::printf("pa-gpu-runner check: seed %" PRIu64
              " (replay with --seed %" PRIu64 ")%s%s\n",
              opts.seed, opts.seed,
              opts.finiteSlack ? ", finite slack" : ", NaN slack",
              poolNote(opts.poolElements).c_str());
  if (pa_init(opts.device) != PA_SUCCESS) {
    std::printf("FATAL: pa_init: %s\n", pa_last_error());
    return 2;
  }
  DeviceInfo dev;
  try {
    dev = queryDevice();
  } catch (const Failure &f) {
    std::printf("FATAL: %s\n", f.what());
    return 2;
  }
  std::printf("device: %s (sm_%d%d, %d SMs), %s\n", dev.name.c_str(),
              dev.ccMajor, dev.ccMinor, dev.smCount, utcNow().c_str());
  std::printf("tolerances: rel L2(o) <= 2e-3 f16, 1e-2 bf16, 1e-4 f32; "
              "|lse err| <= %.0e; -inf exactly for empty requests; no NaN\n",
              kLseTolerance);
  std::fflush(stdout);

  std::vector<BundleSummary> sums;
  for (const std::string &dir : opts.bundles)
    sums.push_back(checkBundle(dir, opts));

  std::printf("\n| bundle | config | runs | max rel err o | max abs err lse "
              "| checked mode | result |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  bool ok = true;
  for (const BundleSummary &s : sums) {
    ok &= s.pass();
    std::printf("| %s | %s | %d (%d failed) | %.2e | %.2e | %d/%d | %s%s |\n",
                s.dir.c_str(), s.config.c_str(), s.runs, s.failedRuns,
                s.maxRelO, s.maxLseErr, s.checkedPassed, s.checkedTotal,
                s.pass() ? "PASS" : "FAIL",
                s.fatal.empty() ? "" : " (fatal error above)");
  }
  std::printf("seed %" PRIu64 ": %s\n", opts.seed,
              ok ? "all bundles PASS" : "FAILURES");
  pa_shutdown();
  return ok ? 0 : 1;
}

int pa::runner::runBundleChecks(
    const char *command, uint64_t seed, int device,
    const std::vector<std::string> &bundles,
    const std::function<bool(const std::string &, uint64_t)> &check) {
  std::printf("pa-gpu-runner %s: seed %" PRIu64 " (replay with --seed %" PRIu64
              ")\n",
              command, seed, seed);
  if (pa_init(device) != PA_SUCCESS) {
    std::printf("FATAL: pa_init: %s\n", pa_last_error());
    return 2;
  }
  bool ok = true;
  for (size_t i = 0; i < bundles.size(); ++i)
    ok &= check(bundles[i], test::mixSeed(seed, i));
  std::printf("seed %" PRIu64 ": %s\n", seed,
              ok ? "all bundles PASS" : "FAIL");
  return ok ? 0 : 1;
}
