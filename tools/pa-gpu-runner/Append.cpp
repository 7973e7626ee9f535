//===- Append.cpp - the cache-write check and benchmark of pa-gpu-runner ---===//
//
// Part of the PagedAttn project. See Append.h.
//
//===----------------------------------------------------------------------===//

#include "Append.h"

#include "Bench.h"
#include "Check.h"
#include "GpuUtil.h"

#include "PagedAttn/Reference/Reference.h"
#include "PagedAttn/Runtime/Bundle.h"
#include "PagedAttn/Runtime/pa_runtime.h"
#include "PagedAttn/TestSupport/Cache.h"
#include "PagedAttn/TestSupport/Numbers.h"
#include "PagedAttn/TestSupport/Random.h"

#include <cinttypes>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

using namespace pa::runner;
namespace rt = pa::rt;
namespace ref = pa::ref;
namespace test = pa::test;

namespace {

/// One append: the cache before it, the rows, the slots, the scales, and
/// the cache the append must leave.
struct AppendCase {
  /// numPages: pages of the host cache (before, expected).
  int64_t rows = 0, numPages = 0;
  /// Where the host pages live on the device (identity, or a large pool:
  /// placeCase); `slots` are host slots, mapped on upload.
  PagePlacement placement;
  std::vector<std::vector<uint8_t>> before, expected;
  std::vector<uint8_t> kNew, vNew;
  std::vector<int32_t> slots;
  std::vector<float> kScale, vScale;
};

void fillExpected(const rt::BundleConfig &c, AppendCase &a);

/// A random case of `rows` rows into a cache of `numPages` pages: distinct
/// slots, every fifth row (about) skipped with a negative slot; fp8 scales
/// small enough that some values saturate.
AppendCase makeCase(const rt::BundleConfig &c, int64_t rows, int64_t numPages,
                    test::Rng &rng) {
  test::CacheGeometry g = test::CacheGeometry::of(c);
  AppendCase a;
  a.rows = rows;
  a.numPages = numPages;
  a.placement = identityPlacement(numPages);
  int64_t eb = cacheElementBytes(c);
  for (int i = 0; i < g.numBuffers(); ++i) {
    std::vector<uint8_t> buf(
        static_cast<size_t>(g.bufferElements(numPages) * eb));
    for (uint8_t &x : buf)
      x = static_cast<uint8_t>(rng.uniformInt(0, 255));
    if (!c.fp8()) { // whole values of the dtype (no NaN patterns needed)
      std::vector<double> v(buf.size() / static_cast<size_t>(eb));
      for (double &x : v)
        x = rng.uniform(-2, 2);
      buf = test::toBytes(c.dtype, v);
    }
    a.before.push_back(buf);
  }
  a.expected = a.before;
  int64_t n = rows * c.kvHeads * c.headDim;
  std::vector<double> kv(static_cast<size_t>(n)), vv(kv.size());
  for (size_t i = 0; i < kv.size(); ++i) {
    kv[i] = rng.uniform(-8, 8);
    vv[i] = rng.uniform(-8, 8);
  }
  a.kNew = test::toBytes(c.dtype, kv);
  a.vNew = test::toBytes(c.dtype, vv);
  int64_t scales = c.kvScale == rt::KVScale::Head ? c.kvHeads : 1;
  for (int64_t i = 0; c.fp8() && i < scales; ++i) {
    a.kScale.push_back(static_cast<float>(rng.uniform(0.005, 0.05)));
    a.vScale.push_back(static_cast<float>(rng.uniform(0.005, 0.05)));
  }
  std::vector<int32_t> perm(static_cast<size_t>(numPages * c.pageSize));
  std::iota(perm.begin(), perm.end(), 0);
  rng.shuffle(perm);
  for (int64_t r = 0; r < rows; ++r)
    a.slots.push_back(rng.chance(0.2)
                          ? -static_cast<int32_t>(rng.uniformInt(1, 1000))
                          : perm[static_cast<size_t>(r)]);
  fillExpected(c, a);
  return a;
}

/// a.expected: a.before with each row whose slot is >= 0 written there.
void fillExpected(const rt::BundleConfig &c, AppendCase &a) {
  test::CacheGeometry g = test::CacheGeometry::of(c);
  a.expected = a.before;
  for (int64_t r = 0; r < a.rows; ++r) {
    int32_t slot = a.slots[static_cast<size_t>(r)];
    if (slot < 0)
      continue;
    int64_t page = slot / c.pageSize, s = slot % c.pageSize;
    for (int which = 0; which < 2; ++which) {
      const std::vector<uint8_t> &src = which ? a.vNew : a.kNew;
      std::vector<uint8_t> &dst = a.expected[g.bufferOf(which)];
      for (int64_t h = 0; h < c.kvHeads; ++h)
        for (int64_t d = 0; d < c.headDim; ++d) {
          int64_t i = (r * c.kvHeads + h) * c.headDim + d;
          double x = test::loadElement(src.data(), i, c.dtype);
          int64_t off = g.offset(page, which, s, h, d);
          if (c.fp8()) {
            const std::vector<float> &sc = which ? a.vScale : a.kScale;
            float scale = sc[sc.size() == 1 ? 0 : static_cast<size_t>(h)];
            // The kernel divides in f32 (div.rn), then rounds to fp8.
            float y = static_cast<float>(x) / scale;
            ref::FP8Format f = test::fp8FormatOf(c.kvDtype);
            dst[static_cast<size_t>(off)] =
                test::fp8Bits(ref::quantizeFP8(y, f), f);
          } else {
            test::storeElement(dst.data(), off, c.dtype, x);
          }
        }
    }
  }
}

/// Large-pool mode (devicePages > 0): places the case's pages in a pool
/// of `devicePages` pages, the pages its slots write first (on the anchor
/// pages), or the pages `used` when given.
void placeCase(const rt::BundleConfig &c, AppendCase &a, int64_t devicePages,
               test::Rng &rng, std::vector<int32_t> used = {}) {
  if (devicePages <= 0)
    return;
  if (used.empty())
    for (int32_t s : a.slots)
      if (s >= 0)
        used.push_back(static_cast<int32_t>(s / c.pageSize));
  a.placement = placeInLargePool(c, devicePages, a.numPages, used, rng);
}

/// The host pages the rows of `a` write.
std::vector<int32_t> writtenPages(const rt::BundleConfig &c,
                                  const AppendCase &a) {
  std::vector<int32_t> pages;
  for (int32_t s : a.slots)
    if (s >= 0 && s / c.pageSize < a.numPages)
      pages.push_back(static_cast<int32_t>(s / c.pageSize));
  return pages;
}

/// The device copies of a case.
struct DeviceAppend {
  DeviceBuffer cache[2];
  DeviceBuffer kNew, vNew, slots, kScale, vScale;
};

/// The value of a large pool's pages that hold no host page (NaN).
constexpr double kPoolPoison = std::numeric_limits<double>::quiet_NaN();

/// Compares the device cache of `d` with a.expected (the host pages; in a
/// large pool also the pages a 32-bit truncation of the written offsets
/// would hit, which must keep their poison); returns the mismatched bytes
/// (printing the first few).
int64_t compareCache(const rt::BundleConfig &c, const AppendCase &a,
                     const DeviceAppend &d,
                     const std::vector<int32_t> &written) {
  int64_t bad = 0;
  std::vector<std::vector<uint8_t>> got =
      downloadCache(c, a.placement, d.cache);
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].size() != a.expected[i].size())
      throw Failure("the device cache has another size than the host's");
    for (size_t j = 0; j < got[i].size(); ++j)
      if (got[i][j] != a.expected[i][j] && bad++ < 4)
        std::printf("      buffer %zu byte %zu: got 0x%02x, expected 0x%02x "
                    "(before 0x%02x)\n",
                    i, j, got[i][j], a.expected[i][j], a.before[i][j]);
  }
  return bad + checkAliasPagesUntouched(c, a.placement, written, kPoolPoison,
                                        d.cache);
}

DeviceAppend upload(const rt::BundleConfig &c, const AppendCase &a) {
  DeviceAppend d;
  uploadCache(c, a.before, a.placement, kPoolPoison, d.cache);
  d.kNew = uploadVector(a.kNew);
  d.vNew = uploadVector(a.vNew);
  std::vector<int32_t> slots;
  for (int32_t s : a.slots)
    slots.push_back(a.placement.slot(s, c.pageSize));
  d.slots = uploadVector(slots);
  if (!a.kScale.empty()) {
    d.kScale = uploadVector(a.kScale);
    d.vScale = uploadVector(a.vScale);
  }
  return d;
}

pa_append_args argsOf(const rt::BundleConfig &c, const DeviceAppend &d,
                      int64_t rows, int64_t numPages, bool checked) {
  pa_append_args x{};
  x.k_new = d.kNew.get();
  x.v_new = d.vNew.get();
  x.slot_mapping = d.slots.get();
  if (c.kv == rt::KVStorage::Joint) {
    x.kv = d.cache[0].get();
  } else {
    x.k = d.cache[0].get();
    x.v = d.cache[1].get();
  }
  x.k_scale = d.kScale.get();
  x.v_scale = d.vScale.get();
  x.num_rows = rows;
  x.num_pages = numPages;
  x.checked = checked ? 1 : 0;
  return x;
}

/// Runs one case; returns the number of mismatched cache bytes (printing
/// the first few).
int64_t runCase(pa_bundle *bundle, const rt::BundleConfig &c,
                const AppendCase &a, bool checked) {
  DeviceAppend d = upload(c, a);
  pa_append_args x =
      argsOf(c, d, a.rows, a.placement.devicePages, checked);
  PA_RT(pa_append_kv_slots(bundle, &x, nullptr));
  PA_CU(cuCtxSynchronize());
  return compareCache(c, a, d, writtenPages(c, a));
}

/// pa_append_kv_slots in checked mode must fail on `a` with a message
/// containing `fragment`.
bool expectRejected(pa_bundle *bundle, const rt::BundleConfig &c,
                    const AppendCase &a, const char *what,
                    const std::string &fragment) {
  DeviceAppend d = upload(c, a);
  pa_append_args x =
      argsOf(c, d, a.rows, a.placement.devicePages, /*checked=*/true);
  int rc = pa_append_kv_slots(bundle, &x, nullptr);
  std::string msg = rc == PA_SUCCESS ? "" : pa_last_error();
  bool ok = rc != PA_SUCCESS && msg.find(fragment) != std::string::npos;
  std::printf("  checked mode, %s: %s%s\n", what, ok ? "rejected PASS" : "FAIL",
              ok ? "" : (" (" + msg + ")").c_str());
  return ok;
}

/// pa_append_kv and pa_scatter_kv: random page tables over `pages` pages
/// (a random order), their rows mapped to slots (page * P + slot) through
/// the table as the op defines them, the expected cache as for the slot
/// mapping; checked and unchecked; and the checked-mode rejections.
bool checkPageWrites(pa_bundle *bundle, const rt::BundleConfig &c,
                     int64_t pages, int64_t devicePages, test::Rng &rng) {
  bool ok = true;
  int64_t P = c.pageSize;
  for (bool scatter : {false, true})
    for (int64_t batch : {int64_t(1), int64_t(5), int64_t(23)}) {
      // Lengths after the append; the requests' pages from one shuffled
      // pool (some requests empty).
      std::vector<int32_t> pool(static_cast<size_t>(pages));
      std::iota(pool.begin(), pool.end(), 0);
      rng.shuffle(pool);
      std::vector<int32_t> indptr{0}, indices, last, rowsIndptr{0},
          positions, slots;
      size_t next = 0;
      for (int64_t b = 0; b < batch; ++b) {
        int64_t maxLen = (static_cast<int64_t>(pool.size() - next) /
                          (batch - b)) * P;
        int64_t len = rng.chance(0.15) ? 0 : rng.uniformInt(0, maxLen);
        int64_t np = (len + P - 1) / P;
        for (int64_t i = 0; i < np; ++i)
          indices.push_back(pool[next++]);
        indptr.push_back(static_cast<int32_t>(indices.size()));
        last.push_back(np ? static_cast<int32_t>(len - (np - 1) * P)
                          : static_cast<int32_t>(rng.uniformInt(0, P)));
        // Rows: append the last append_len tokens, or scatter to distinct
        // random tokens.
        std::vector<int32_t> toks;
        if (scatter) {
          std::vector<int32_t> all(static_cast<size_t>(len));
          std::iota(all.begin(), all.end(), 0);
          rng.shuffle(all);
          all.resize(static_cast<size_t>(rng.uniformInt(0, len)));
          toks = all;
        } else {
          int64_t alen = rng.uniformInt(0, len);
          for (int64_t j = 0; j < alen; ++j)
            toks.push_back(static_cast<int32_t>(len - alen + j));
        }
        for (int32_t t : toks) {
          positions.push_back(t);
          int32_t page = indices[static_cast<size_t>(indptr[b] + t / P)];
          slots.push_back(static_cast<int32_t>(page * P + t % P));
        }
        rowsIndptr.push_back(static_cast<int32_t>(positions.size()));
      }
      int64_t rows = static_cast<int64_t>(slots.size());
      AppendCase a = makeCase(c, rows, pages, rng);
      a.slots = slots;
      fillExpected(c, a);
      // The table's pages first on the large pool's anchors; the device
      // table holds their device pages.
      placeCase(c, a, devicePages, rng, indices);
      const int64_t numPages = a.placement.devicePages;
      DeviceBuffer dIndptr = uploadVector(indptr),
                   dIndices = uploadVector(a.placement.map(indices)),
                   dLast = uploadVector(last),
                   dRows = uploadVector(rowsIndptr),
                   dPos = uploadVector(positions);
      for (bool checked : {false, true}) {
        DeviceAppend d = upload(c, a);
        pa_page_write_args x{};
        x.k_new = d.kNew.get();
        x.v_new = d.vNew.get();
        x.rows_indptr = dRows.get();
        x.positions = scatter ? dPos.get() : 0;
        if (c.kv == rt::KVStorage::Joint) {
          x.kv = d.cache[0].get();
        } else {
          x.k = d.cache[0].get();
          x.v = d.cache[1].get();
        }
        x.k_scale = d.kScale.get();
        x.v_scale = d.vScale.get();
        x.kv_indptr = dIndptr.get();
        x.kv_indices = dIndices.get();
        x.kv_last_page_len = dLast.get();
        x.num_rows = rows;
        x.batch = batch;
        x.num_pages = numPages;
        x.nnz = static_cast<int64_t>(indices.size());
        x.checked = checked ? 1 : 0;
        int64_t bad = 0;
        try {
          PA_RT(scatter ? pa_scatter_kv(bundle, &x, nullptr)
                        : pa_append_kv(bundle, &x, nullptr));
          PA_CU(cuCtxSynchronize());
          bad = compareCache(c, a, d, writtenPages(c, a));
        } catch (const Failure &f) {
          std::printf("      %s\n", f.what());
          bad = -1;
        }
        std::printf("  %s B=%-3" PRId64 " rows %-5" PRId64 "%s: %s\n",
                    scatter ? "scatter_kv" : "append_kv ", batch, rows,
                    checked ? ", checked" : "",
                    bad ? "FAIL" : "PASS (cache byte-exact)");
        ok &= bad == 0;
        // Checked-mode rejections, on the largest batch with rows.
        if (!checked || batch != 23 || rows < 2)
          continue;
        auto reject = [&](const char *what, const std::string &fragment) {
          int rc = scatter ? pa_scatter_kv(bundle, &x, nullptr)
                           : pa_append_kv(bundle, &x, nullptr);
          std::string msg = rc == PA_SUCCESS ? "" : pa_last_error();
          bool good = rc != PA_SUCCESS &&
                      msg.find(fragment) != std::string::npos;
          std::printf("  checked mode, %s: %s%s\n", what,
                      good ? "rejected PASS" : "FAIL",
                      good ? "" : (" (" + msg + ")").c_str());
          ok &= good;
        };
        x.num_rows = rows + 1;
        reject("num_rows != rows_indptr[B]",
               "rows_indptr[23] = " + std::to_string(rows));
        x.num_rows = rows;
        // nnz larger than the device's kv_indptr[B]: the two disagree
        // (checked before kv_indices is read).
        x.nnz = static_cast<int64_t>(indices.size()) + 1;
        reject("nnz != kv_indptr[B]",
               "size mismatch: kv_indptr[23] = " +
                   std::to_string(indices.size()) +
                   " on the device, but nnz (entries of kv_indices) = " +
                   std::to_string(indices.size() + 1));
        x.nnz = static_cast<int64_t>(indices.size());
        // Request lengths after the append (the table's kv_len).
        std::vector<int64_t> lens;
        for (int64_t b = 0; b < batch; ++b) {
          int64_t np = indptr[b + 1] - indptr[b];
          lens.push_back(np ? (np - 1) * P + last[b] : 0);
        }
        if (scatter) {
          // Two rows of one request to the same token.
          for (int64_t b = 0; b < batch; ++b) {
            int32_t r = rowsIndptr[b];
            if (rowsIndptr[b + 1] - r < 2)
              continue;
            PA_CU(cuMemcpyHtoD(dPos.get() + 4 * (r + 1), &positions[r], 4));
            reject("repeated position",
                   "positions[" + std::to_string(r + 1) + "] = " +
                       std::to_string(positions[r]) +
                       " repeats a token of request " + std::to_string(b));
            PA_CU(cuMemcpyHtoD(dPos.get() + 4 * (r + 1), &positions[r + 1],
                               4));
            break;
          }
        } else {
          // Every row to the shortest request: more rows than its kv_len.
          int64_t b = std::min_element(lens.begin(), lens.end()) -
                      lens.begin();
          if (lens[b] < rows) {
            std::vector<int32_t> allToB(static_cast<size_t>(batch + 1), 0);
            for (int64_t i = b + 1; i <= batch; ++i)
              allToB[i] = static_cast<int32_t>(rows);
            DeviceBuffer dAll = uploadVector(allToB);
            x.rows_indptr = dAll.get();
            reject("append_len > kv_len",
                   "request " + std::to_string(b) + ": append_len = " +
                       std::to_string(rows) + " > kv_len = " +
                       std::to_string(lens[b]));
            x.rows_indptr = dRows.get();
          }
        }
        if (scatter) {
          int32_t bad0 = -1;
          PA_CU(cuMemcpyHtoD(dPos.get(), &bad0, 4));
          reject("negative position", "positions[0] = -1 out of [0, kv_len");
          PA_CU(cuMemcpyHtoD(dPos.get(), &positions[0], 4));
        } else {
          int32_t page = static_cast<int32_t>(numPages);
          if (!indices.empty()) {
            PA_CU(cuMemcpyHtoD(dIndices.get(), &page, 4));
            reject("page == num_pages",
                   "kv_indices[0] = " + std::to_string(numPages) +
                       " out of range");
            int32_t first = static_cast<int32_t>(a.placement.page(indices[0]));
            PA_CU(cuMemcpyHtoD(dIndices.get(), &first, 4));
          }
        }
      }
    }
  return ok;
}

/// Checks one bundle (in a large pool of at least `poolElements` elements
/// per tensor when > 0); returns true if every case passed.
bool checkBundle(const std::string &dir, uint64_t seed,
                 int64_t poolElements) {
  pa_bundle *bundle = nullptr;
  bool ok = true;
  try {
    PA_RT(pa_bundle_load(dir.c_str(), &bundle));
    rt::Manifest m;
    if (rt::Status s = rt::readManifest(dir, m); !s)
      throw Failure(s.message);
    const rt::BundleConfig &c = m.config;
    std::printf("bundle %s: %s\n", dir.c_str(), c.str().c_str());
    if (!m.find(rt::KernelKind::AppendKVSlots)) {
      std::printf("  no append_kv_slots kernel: skipped\n");
      pa_bundle_free(bundle);
      return true;
    }
    test::Rng rng(seed);
    int64_t pages = std::max<int64_t>(2, 1024 / c.pageSize);
    int64_t devicePages = 0;
    if (poolElements > 0) {
      devicePages = largePoolPages(c, poolElements);
      // slot_mapping is int32: slot page * P + s must fit it.
      if (devicePages * c.pageSize > std::numeric_limits<int32_t>::max())
        throw Failure(fmt("--pool-elements %" PRId64 ": %" PRId64
                          " pages of %" PRId64 " slots hold more slots than "
                          "slot_mapping (int32) can address",
                          poolElements, devicePages, c.pageSize));
    }
    // The device's num_pages (the pool's in large-pool mode).
    const int64_t numPages = devicePages > 0 ? devicePages : pages;
    for (int64_t rows : {int64_t(1), int64_t(37), pages * c.pageSize / 2,
                         pages * c.pageSize}) {
      AppendCase a = makeCase(c, rows, pages, rng);
      placeCase(c, a, devicePages, rng);
      if (devicePages > 0)
        std::printf("  rows %-6" PRId64 " pool: %s\n", rows,
                    a.placement.describe(c, writtenPages(c, a)).c_str());
      for (bool checked : {false, true}) {
        int64_t bad = runCase(bundle, c, a, checked);
        int64_t kept = std::count_if(a.slots.begin(), a.slots.end(),
                                     [](int32_t s) { return s >= 0; });
        std::printf("  rows %-6" PRId64 " (%" PRId64 " kept) into %" PRId64
                    " pages%s: %s\n",
                    rows, kept, pages, checked ? ", checked" : "",
                    bad ? "FAIL" : "PASS (cache byte-exact)");
        ok &= bad == 0;
      }
    }
    if (m.find(rt::KernelKind::AppendKV) && m.find(rt::KernelKind::ScatterKV))
      ok &= checkPageWrites(bundle, c, pages, devicePages, rng);
    AppendCase a = makeCase(c, 8, pages, rng);
    placeCase(c, a, devicePages, rng);
    // Host slot pages * P: the device's num_pages * P (PagePlacement::page
    // keeps a page past the host cache past the pool).
    a.slots[3] = static_cast<int32_t>(pages * c.pageSize);
    ok &= expectRejected(bundle, c, a, "slot == num_pages * P",
                         "slot_mapping[3] = " +
                             std::to_string(numPages * c.pageSize) +
                             " out of range");
    a = makeCase(c, 8, pages, rng);
    placeCase(c, a, devicePages, rng);
    // A slot no other row takes, written by rows 2 and 5 (a fixed slot
    // could already belong to another row, which checked mode would report
    // first).
    int32_t twice = 0;
    while (std::find(a.slots.begin(), a.slots.end(), twice) != a.slots.end())
      ++twice;
    a.slots[5] = a.slots[2] = twice;
    ok &= expectRejected(bundle, c, a, "repeated slot",
                         "slot_mapping[5] = " +
                             std::to_string(
                                 a.placement.slot(twice, c.pageSize)) +
                             " repeats slot_mapping[2]");
  } catch (const Failure &f) {
    std::printf("  FATAL: %s\n", f.what());
    ok = false;
  }
  pa_bundle_free(bundle);
  return ok;
}

} // namespace

int pa::runner::runCheckAppend(const CheckAppendOptions &opts) {
  return runBundleChecks(
      "check-append", opts.seed, opts.device, opts.bundles,
      [&](const std::string &dir, uint64_t seed) {
        return checkBundle(dir, seed, opts.poolElements);
      });
}

int pa::runner::runBenchAppend(const BenchAppendOptions &o) {
  std::string report;
  auto out = reportSink(report);
  int rc = 0;
  pa_bundle *bundle = nullptr;
  CUstream stream = nullptr;
  try {
    PA_RT(pa_init(o.device));
    DeviceInfo dev = queryDevice();
    Roofs roofs;
    roofs.load(o.roofs);
    PA_RT(pa_bundle_load(o.bundle.c_str(), &bundle));
    rt::Manifest m;
    if (rt::Status s = rt::readManifest(o.bundle, m); !s)
      throw Failure(s.message);
    const rt::BundleConfig &c = m.config;
    PA_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    L2Eviction flush(o.l2Flush, roofs);
    out("## PagedAttn append_kv_slots benchmark");
    out("");
    out(fmt("- device: %s (sm_%d%d, %d SMs), %s", dev.name.c_str(),
            dev.ccMajor, dev.ccMinor, dev.smCount, utcNow().c_str()));
    out(fmt("- bundle: `%s` (%s)", o.bundle.c_str(), c.str().c_str()));
    out(fmt("- method: pa_append_kv_slots of N rows (random values) to N "
            "random distinct slots of a cache of 2N slots; median of %d "
            "timed calls after >= %d warm-up calls, %s; bytes = K + V rows "
            "read + written + slots read",
            o.reps, o.warmup, flush.describe().c_str()));
    BenchOptions bo;
    bo.reps = o.reps;
    bo.seed = o.seed;
    Ceilings ceil = measureCeilings(bo, roofs, stream, flush);
    out(fmt("- copy: **%.0f GB/s** (cuMemcpyDtoD, read + write counted)",
            ceil.copyGBs));
    out("");
    out("| rows | Hkv x D | bytes | time us | min us | GB/s | % copy |");
    out("|---:|---|---:|---:|---:|---:|---:|");
    test::Rng rng(o.seed);
    test::CacheGeometry g = test::CacheGeometry::of(c);
    int64_t eb = cacheElementBytes(c), nb = rt::elementBytes(c.dtype);
    for (int64_t rows : o.rows) {
      int64_t pages = (2 * rows + c.pageSize - 1) / c.pageSize;
      DeviceAppend d;
      for (int i = 0; i < g.numBuffers(); ++i)
        d.cache[i].allocate(static_cast<size_t>(g.bufferElements(pages) * eb));
      int64_t n = rows * c.kvHeads * c.headDim;
      d.kNew.allocate(static_cast<size_t>(n * nb));
      d.vNew.allocate(static_cast<size_t>(n * nb));
      roofs.fillUniform(d.kNew.get(), static_cast<uint64_t>(n),
                        fillDtype(c.dtype), o.seed, -1.f, 1.f, stream);
      roofs.fillUniform(d.vNew.get(), static_cast<uint64_t>(n),
                        fillDtype(c.dtype), o.seed + 1, -1.f, 1.f, stream);
      std::vector<int32_t> perm(static_cast<size_t>(pages * c.pageSize));
      std::iota(perm.begin(), perm.end(), 0);
      rng.shuffle(perm);
      perm.resize(static_cast<size_t>(rows));
      d.slots = uploadVector(perm);
      d.kScale = benchScales(c); // empty unless the cache is fp8
      d.vScale = benchScales(c);
      pa_append_args x = argsOf(c, d, rows, pages, /*checked=*/false);
      Timing t = timeCalls(stream, flush, o.warmup, o.reps, [&](int) {
        PA_RT(pa_append_kv_slots(bundle, &x, stream));
      });
      double bytes = static_cast<double>(n) * 2 * static_cast<double>(nb + eb) +
                     4.0 * static_cast<double>(rows);
      double gbs = bytes / (t.medianUs * 1e3);
      out(fmt("| %" PRId64 " | %" PRId64 " x %" PRId64 " | %.3g MB | %.1f | "
              "%.1f | %.0f | %.1f |",
              rows, c.kvHeads, c.headDim, bytes / 1e6, t.medianUs, t.minUs,
              gbs, 100.0 * gbs / ceil.copyGBs));
      if (!m.find(rt::KernelKind::AppendKV) ||
          !m.find(rt::KernelKind::ScatterKV))
        continue;
      // The page-table forms on the same rows: requests of 1024 rows, each
      // appending its rows to an empty history (pages of a random order),
      // and scattering them to a random permutation of its tokens.
      int64_t batch = std::max<int64_t>(1, rows / 1024);
      int64_t per = rows / batch, used = batch * per;
      int64_t np = (per + c.pageSize - 1) / c.pageSize;
      std::vector<int32_t> pool(static_cast<size_t>(pages));
      std::iota(pool.begin(), pool.end(), 0);
      rng.shuffle(pool);
      std::vector<int32_t> indptr{0}, indices, last, rowsIndptr{0}, positions;
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t i = 0; i < np; ++i)
          indices.push_back(pool[static_cast<size_t>(b * np + i)]);
        indptr.push_back(static_cast<int32_t>(indices.size()));
        last.push_back(static_cast<int32_t>(per - (np - 1) * c.pageSize));
        rowsIndptr.push_back(static_cast<int32_t>((b + 1) * per));
        std::vector<int32_t> toks(static_cast<size_t>(per));
        std::iota(toks.begin(), toks.end(), 0);
        rng.shuffle(toks);
        positions.insert(positions.end(), toks.begin(), toks.end());
      }
      DeviceBuffer dIndptr = uploadVector(indptr),
                   dIndices = uploadVector(indices), dLast = uploadVector(last),
                   dRows = uploadVector(rowsIndptr),
                   dPos = uploadVector(positions);
      for (bool scatter : {false, true}) {
        pa_page_write_args w{};
        w.k_new = d.kNew.get();
        w.v_new = d.vNew.get();
        w.rows_indptr = dRows.get();
        w.positions = scatter ? dPos.get() : 0;
        w.kv = x.kv;
        w.k = x.k;
        w.v = x.v;
        w.k_scale = x.k_scale;
        w.v_scale = x.v_scale;
        w.kv_indptr = dIndptr.get();
        w.kv_indices = dIndices.get();
        w.kv_last_page_len = dLast.get();
        w.num_rows = used;
        w.batch = batch;
        w.num_pages = pages;
        w.nnz = static_cast<int64_t>(indices.size());
        Timing tw = timeCalls(stream, flush, o.warmup, o.reps, [&](int) {
          PA_RT(scatter ? pa_scatter_kv(bundle, &w, stream)
                        : pa_append_kv(bundle, &w, stream));
        });
        double wbytes =
            static_cast<double>(used * c.kvHeads * c.headDim) * 2 *
                static_cast<double>(nb + eb) +
            4.0 * static_cast<double>(scatter ? used : 0);
        double wgbs = wbytes / (tw.medianUs * 1e3);
        out(fmt("| %" PRId64 " (%s, %" PRId64 " requests) | %" PRId64
                " x %" PRId64 " | %.3g MB | %.1f | %.1f | %.0f | %.1f |",
                used, scatter ? "scatter_kv" : "append_kv", batch, c.kvHeads,
                c.headDim, wbytes / 1e6, tw.medianUs, tw.minUs, wgbs,
                100.0 * wgbs / ceil.copyGBs));
      }
    }
  } catch (const Failure &f) {
    std::printf("FATAL: %s\n", f.what());
    rc = 2;
  }
  if (stream)
    cuStreamDestroy(stream);
  pa_bundle_free(bundle);
  if (!writeReport(o.out, report) && rc == 0)
    rc = 2;
  return rc;
}
