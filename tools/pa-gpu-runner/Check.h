//===- Check.h - the correctness check of pa-gpu-runner ---------*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TOOLS_PA_GPU_RUNNER_CHECK_H
#define PAGEDATTN_TOOLS_PA_GPU_RUNNER_CHECK_H

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

/// A random paged cache for requests of `lens` tokens: a page pool 1.5x
/// larger than needed in a random order, K and V uniform in [-1, 1) rounded
/// to the dtype, unused slots and pages NaN (8.0 with finiteSlack), and the
/// device-format buffers (test::cacheBuffers). An fp8 cache (c.fp8()) holds
/// fp8 values spread over the format's range (uniform in [-max, max),
/// rounded) with K / V scales of 1 or Hkv entries (kv_scale), each
/// uniform in [0.5, 2) / max, so that the values are O(1) again.
struct HostCache {
  int64_t numPages = 0;
  ref::PageTable pt;
  ref::PagedKV kv;
  std::vector<std::vector<uint8_t>> buffers;
  /// fp8: the scales as the kernels take them (f32); empty otherwise.
  std::vector<float> kScale, vScale;
};
HostCache makeHostCache(const std::vector<int64_t> &lens,
                        const rt::BundleConfig &c, test::Rng &rng,
                        bool finiteSlack);

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
