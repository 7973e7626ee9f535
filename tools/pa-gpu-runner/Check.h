//===- Check.h - the correctness check of pa-gpu-runner ---------*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TOOLS_PA_GPU_RUNNER_CHECK_H
#define PAGEDATTN_TOOLS_PA_GPU_RUNNER_CHECK_H

#include "GpuUtil.h"

#include "PagedAttn/Reference/Reference.h"
#include "PagedAttn/Runtime/Bundle.h"
#include "PagedAttn/TestSupport/Random.h"

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pa::runner {

//===----------------------------------------------------------------------===//
// Helpers of the checks (check and check-prefill)
//===----------------------------------------------------------------------===//

/// The 16- or 32-bit NaN pattern used to poison outputs of dtype `t`.
uint32_t poisonBits(rt::DType t);
/// The poison pattern of lse (f32).
constexpr uint32_t kLsePoison = 0x7FC0DEADu;
/// Fills `count` elements of dtype `t` at `ptr` with the poison pattern.
void poison(CUdeviceptr ptr, int64_t count, rt::DType t);

/// Relative L2 tolerance of o: 2e-3 (f16), 1e-2 (bf16), 1e-4 (f32).
double relTolerance(rt::DType t);
/// Absolute tolerance of lse.
constexpr double kLseTolerance = 2e-3;

/// Outputs read back from the device: o in the bundle dtype, lse f32.
struct Outputs {
  std::vector<uint8_t> o;
  std::vector<float> lse;
};

/// Comparison of one run with the oracle.
struct Comparison {
  double relO = 0, maxLseErr = 0;
  bool pass = true;
  std::vector<std::string> problems;

  void problem(const std::string &s) {
    pass = false;
    if (problems.size() < 6)
      problems.push_back(s);
  }
};

/// Compares `out` with the oracle's states row by row: relative L2 error of
/// o within relTolerance(dtype), |lse error| within kLseTolerance, lse =
/// -inf and o = 0 exactly where the oracle has no visible key, no NaN.
/// `where(row)` names a row in messages.
Comparison compareStates(const ref::States &expected, const Outputs &out,
                         rt::DType dtype,
                         const std::function<std::string(int64_t row)> &where,
                         bool finiteSlack);

//===----------------------------------------------------------------------===//
// Large page pools (--pool-elements of check, check-prefill, check-append)
//===----------------------------------------------------------------------===//

/// Where the pages of a case's host cache live in the device's page pool.
/// Normally (identity()) the device holds the host buffers as they are. In
/// large-pool mode the device pool has `devicePages` pages (at least the
/// --pool-elements of each cache tensor) and host page h lives at device
/// page deviceOf[h]; the host reference keeps only the case's pages, the
/// rest of the device pool holds poison. The page table and slot mapping
/// given to the kernels go through page() / slot(), and num_pages is
/// devicePages.
struct PagePlacement {
  int64_t devicePages = 0;
  /// Host page -> device page; empty for the identity.
  std::vector<int64_t> deviceOf;

  bool identity() const { return deviceOf.empty(); }
  int64_t hostPages() const { return static_cast<int64_t>(deviceOf.size()); }
  /// The device page of host page `h`. A page past the host cache (a
  /// checked-mode test's bad index) keeps its distance past the end:
  /// hostPages() + k -> devicePages + k; negative pages stay.
  int64_t page(int64_t h) const;
  /// page() of every entry.
  std::vector<int32_t> map(const std::vector<int32_t> &hostIndices) const;
  /// The device slot (page * P + slot in page) of host slot `s`; negative
  /// slots (rows skipped) stay.
  int32_t slot(int32_t s, int64_t pageSize) const;
  /// "N pages at device elements [lo, hi): a above element 2^31, b above
  /// 2^32" of the host pages `used` (repeats counted once).
  std::string describe(const rt::BundleConfig &c,
                       const std::vector<int32_t> &used) const;
};

/// The placement of a pool of `pages` pages on the device as on the host.
PagePlacement identityPlacement(int64_t pages);
/// The run header's note of --pool-elements (empty without it).
std::string poolNote(int64_t poolElements);

/// The device page count of a pool of at least `poolElements` elements per
/// cache tensor of `c` (K and V, or the joint tensor), after checking that
/// page indices fit int32 and that the pool fits the device's free memory
/// (cuMemGetInfo); throws Failure with the reason otherwise. Prints the
/// pool's size.
int64_t largePoolPages(const rt::BundleConfig &c, int64_t poolElements);

/// Large-pool mode: places the `hostPages` pages of a case in a device pool
/// of `devicePages` pages. The host pages `used` (those the kernels read or
/// write, in any order) come first, in a random order: the first take the
/// anchor pages (the pool's last pages, the pages on either side of element
/// 2^31 and 2^32 and of byte 2^31 and 2^32, the first pages), the rest
/// random distinct pages over the whole pool. Throws Failure if the pool
/// has fewer pages than the case.
PagePlacement placeInLargePool(const rt::BundleConfig &c, int64_t devicePages,
                               int64_t hostPages,
                               const std::vector<int32_t> &used,
                               test::Rng &rng);

/// Allocates the device cache tensors of `c` (numBuffers() of them, into
/// out[0..]) for placement `pl` and fills them: the host buffers `host`
/// (test::CacheGeometry order, pl.hostPages() pages; page is the outermost
/// dimension of every layout) as they are for the identity, else each host
/// page copied to its device page and every other device element set to
/// `slack` (in the cache's format; NaN for poison).
void uploadCache(const rt::BundleConfig &c,
                 const std::vector<std::vector<uint8_t>> &host,
                 const PagePlacement &pl, double slack, DeviceBuffer *out);
/// The host pages of device cache tensors `dev`, in the host buffers'
/// format (pl.hostPages() pages per tensor).
std::vector<std::vector<uint8_t>> downloadCache(const rt::BundleConfig &c,
                                                const PagePlacement &pl,
                                                const DeviceBuffer *dev);
/// Large-pool mode, after a cache write: the device pages a 32-bit
/// truncation of a written page's element offset would hit (offset - 2^31
/// and - 2^32 elements, up to 64 pages that hold no host page) must still
/// hold `slack`. Returns the number of pages that do not (printing the
/// first few); 0 for the identity.
int64_t checkAliasPagesUntouched(const rt::BundleConfig &c,
                                 const PagePlacement &pl,
                                 const std::vector<int32_t> &written,
                                 double slack, const DeviceBuffer *dev);

/// A random paged cache for requests of `lens` tokens: a page pool 1.5x
/// larger than needed in a random order, K and V uniform in [-1, 1) rounded
/// to the dtype, unused slots and pages NaN (8.0 with finiteSlack), and the
/// device-format buffers (test::cacheBuffers). An fp8 cache (c.fp8()) holds
/// fp8 values spread over the format's range (uniform in [-max, max),
/// rounded) with K / V scales of 1 or Hkv entries (kv_scale), each
/// uniform in [0.5, 2) / max, so that the values are O(1) again.
/// With `devicePages` > 0 (large-pool mode) the pages are placed in a
/// device pool of that many pages (placeInLargePool); `placement` and
/// `deviceIndices` are what the kernels take.
struct HostCache {
  /// Pages of the host cache (kv, buffers).
  int64_t numPages = 0;
  ref::PageTable pt;
  /// The value of unused slots and pages (NaN, or 8 with finiteSlack).
  double slack = 0;
  PagePlacement placement;
  /// pt.indices through the placement (the device's kv_indices).
  std::vector<int32_t> deviceIndices;
  ref::PagedKV kv;
  std::vector<std::vector<uint8_t>> buffers;
  /// fp8: the scales as the kernels take them (f32); empty otherwise.
  std::vector<float> kScale, vScale;
};
HostCache makeHostCache(const std::vector<int64_t> &lens,
                        const rt::BundleConfig &c, test::Rng &rng,
                        bool finiteSlack, int64_t devicePages = 0);

/// Binds device copies `d` of a paged cache (members cache[2], scales[2],
/// indptr, indices, last) to a launch's arguments `a` (pa_decode_args or
/// pa_prefill_args, which spell these fields alike): `kv` for a joint
/// cache, `k` and `v` for a split one, the scales of an fp8 cache, and the
/// page table.
template <typename Args, typename Device>
void bindPagedCache(Args &a, const Device &d, const rt::BundleConfig &c) {
  if (c.kv == rt::KVStorage::Joint) {
    a.kv = d.cache[0].get();
  } else {
    a.k = d.cache[0].get();
    a.v = d.cache[1].get();
  }
  if (c.fp8()) {
    a.k_scale = d.scales[0].get();
    a.v_scale = d.scales[1].get();
  }
  a.kv_indptr = d.indptr.get();
  a.kv_indices = d.indices.get();
  a.kv_last_page_len = d.last.get();
}

struct CheckOptions {
  std::vector<std::string> bundles;
  /// The seed of every random case (printed; replays a run).
  uint64_t seed = 0;
  /// > 0: the forced-chunk variants use this chunk only.
  int64_t forceChunk = 0;
  /// Fill unused cache slots / pages with a large finite value instead of
  /// NaN.
  bool finiteSlack = false;
  /// Skip the long cases (quick smoke runs).
  bool quick = false;
  int device = 0;
  /// > 0: large-pool mode (--pool-elements): a device page pool of at
  /// least this many elements per cache tensor (PagePlacement).
  int64_t poolElements = 0;
};

/// Checks every bundle of `opts` (docs/Runtime.md, "check"); prints a line
/// per run and a summary table. Returns the process exit code: 0 if every
/// bundle passes, 1 on a failure, 2 if the device cannot be used.
int runCheck(const CheckOptions &opts);

/// The driver of the per-bundle checks (check-append, check-cacheblend):
/// prints `command`'s seed, initializes `device`, runs `check(dir, seed)`
/// on every bundle with a seed of its own (mixSeed(seed, i)) and prints
/// the verdict. Returns 0 if every bundle passes, 1 on a failure, 2 if the
/// device cannot be used.
int runBundleChecks(
    const char *command, uint64_t seed, int device,
    const std::vector<std::string> &bundles,
    const std::function<bool(const std::string &, uint64_t)> &check);

} // namespace pa::runner

#endif // PAGEDATTN_TOOLS_PA_GPU_RUNNER_CHECK_H
