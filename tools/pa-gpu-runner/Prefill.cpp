//===- Prefill.cpp - check-prefill and bench-prefill of pa-gpu-runner -----===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// `pa-gpu-runner check-prefill BUNDLE_DIR...`: runs each bundle's prefill
// kernel through the runtime's C API (pa_prefill_plan + pa_prefill_run in
// checked mode) on seeded random ragged batches and fixed edge cases
// against the float64 oracle pa::ref::prefill, with the decode check's
// poison, host caches, tolerances and comparison (Check.h).
//
// `pa-gpu-runner bench-prefill BUNDLE_DIR`: causal prefill (qo_len = kv_len)
// and an append case, timed with the decode benchmark's method (Bench.h:
// CUDA events, warm-up, median, L2 evicted before every call, input sets
// rotated); TFLOP/s counts the unmasked work only, 4 * D * Hq per visible
// (query, key) pair.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "Check.h"
#include "GpuUtil.h"
#include "Prefill.h"

#include "PagedAttn/Reference/Reference.h"
#include "PagedAttn/Runtime/Bundle.h"
#include "PagedAttn/Runtime/Planner.h"
#include "PagedAttn/Runtime/pa_runtime.h"
#include "PagedAttn/TestSupport/Cache.h"
#include "PagedAttn/TestSupport/Numbers.h"
#include "PagedAttn/TestSupport/Random.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <optional>
#include <thread>
#include <vector>

using namespace pa::runner;
namespace rt = pa::rt;
namespace ref = pa::ref;
namespace test = pa::test;

namespace {

/// The bundle's prefill kernel and what it was compiled for.
struct PrefillKernel {
  rt::BundleConfig config;
  rt::PrefillSpec spec;
  /// The prefill line of the bundle's prefill_short kernel, if it has one
  /// (it agrees with `spec` but for queries_per_tile).
  std::optional<rt::PrefillSpec> shortSpec;
  /// The bundle has split-KV prefill (prefill_partial + merge_segments).
  bool partial = false;
  bool positions = false, mask = false, alibi = false;
};

/// How a case is planned: the kernel (a PA_PREFILL_KERNEL_* value) and,
/// for split-KV, a forced KV chunk (0: the planner's).
struct PlanChoice {
  int kernel = PA_PREFILL_KERNEL_AUTO;
  int64_t kvChunk = 0;
};

/// Manifest name of a PA_PREFILL_KERNEL_* value.
const char *prefillKernelName(int kernel) {
  switch (kernel) {
  case PA_PREFILL_KERNEL_PREFILL:
    return "prefill";
  case PA_PREFILL_KERNEL_SHORT:
    return "prefill_short";
  case PA_PREFILL_KERNEL_PARTIAL:
    return "prefill_partial";
  default:
    return "auto";
  }
}

PrefillKernel readPrefillKernel(const std::string &dir) {
  rt::Manifest m;
  if (rt::Status s = rt::readManifest(dir, m); !s)
    throw Failure(s.message);
  const rt::KernelSpec *k = m.find(rt::KernelKind::Prefill);
  if (!k || !k->prefill)
    throw Failure("bundle '" + dir + "' has no prefill kernel");
  PrefillKernel pk;
  pk.config = m.config;
  pk.spec = *k->prefill;
  if (const rt::KernelSpec *s = m.find(rt::KernelKind::PrefillShort);
      s && s->prefill)
    pk.shortSpec = *s->prefill;
  pk.partial = m.find(rt::KernelKind::PrefillPartial) != nullptr;
  pk.positions = k->hasRole(rt::ArgRole::QPositions);
  pk.mask = k->hasRole(rt::ArgRole::CustomMask);
  pk.alibi = k->hasRole(rt::ArgRole::AlibiSlopes);
  return pk;
}

std::string describe(const PrefillKernel &k) {
  std::string s = k.config.str() + " q/tile " +
                  std::to_string(k.spec.queriesPerTile);
  if (k.shortSpec)
    s += " (short " + std::to_string(k.shortSpec->queriesPerTile) + ")";
  if (k.partial)
    s += " split-KV";
  if (k.spec.causal)
    s += " causal";
  if (k.spec.window)
    s += " window " + std::to_string(k.spec.window);
  if (k.spec.softCap > 0)
    s += fmt(" soft-cap %g", static_cast<double>(k.spec.softCap));
  if (k.spec.smScale > 0)
    s += fmt(" sm-scale %g", static_cast<double>(k.spec.smScale));
  if (k.spec.lseBase2)
    s += " lse-base2";
  if (k.positions)
    s += " positions";
  if (k.mask)
    s += " custom-mask";
  if (k.alibi)
    s += " alibi";
  return s;
}

/// The oracle's options for the kernel.
ref::AttnOptions refOptions(const PrefillKernel &k) {
  ref::AttnOptions o;
  if (k.spec.smScale > 0)
    o.smScale = static_cast<double>(k.spec.smScale);
  if (k.spec.softCap > 0)
    o.logitsSoftCap = static_cast<double>(k.spec.softCap);
  if (k.spec.window > 0)
    o.window = k.spec.window;
  o.mask = k.mask              ? ref::MaskMode::Custom
           : k.spec.causal     ? ref::MaskMode::Causal
                               : ref::MaskMode::None;
  o.lseBase2 = k.spec.lseBase2;
  return o;
}

//===----------------------------------------------------------------------===//
// check-prefill
//===----------------------------------------------------------------------===//

/// One prefill problem: host inputs, their device format and the oracle.
struct PrefillCase {
  std::string name;
  int64_t batch = 0, rows = 0, maskBytes = 0;
  std::vector<int64_t> qoLens, kvLens;
  std::vector<int32_t> qoIndptr, positions, maskIndptr;
  std::vector<uint8_t> mask;
  std::vector<double> slopes;
  std::vector<double> q;
  HostCache cache;
  ref::States expected;
};

/// pa::ref::prefill of one request of `cs` (a one-request page table and
/// the request's slices of q, positions and mask).
ref::States referenceOne(const PrefillCase &cs, const PrefillKernel &k,
                         int64_t b) {
  const int64_t Hq = k.config.numQHeads(), D = k.config.headDim;
  const ref::PageTable &pt = cs.cache.pt;
  int64_t lo = cs.qoIndptr[b], hi = cs.qoIndptr[b + 1];
  std::vector<double> q(cs.q.begin() + lo * Hq * D, cs.q.begin() + hi * Hq * D);
  ref::PageTable one;
  one.pageSize = pt.pageSize;
  one.indptr = {0, pt.indptr[b + 1] - pt.indptr[b]};
  one.indices.assign(pt.indices.begin() + pt.indptr[b],
                     pt.indices.begin() + pt.indptr[b + 1]);
  one.lastPageLen = {pt.lastPageLen[b]};
  std::vector<int32_t> qo = {0, static_cast<int32_t>(hi - lo)};
  ref::AttnOptions opts = refOptions(k);
  opts.alibiSlopes = cs.slopes;
  std::vector<int32_t> pos, maskIndptr;
  std::vector<uint8_t> mask;
  if (k.positions)
    pos.assign(cs.positions.begin() + lo, cs.positions.begin() + hi);
  if (k.mask) {
    int64_t bytes = (cs.qoLens[b] * cs.kvLens[b] + 7) / 8;
    mask.assign(cs.mask.begin() + cs.maskIndptr[b],
                cs.mask.begin() + cs.maskIndptr[b] + bytes);
    maskIndptr = {0, static_cast<int32_t>(bytes)};
  }
  return ref::prefill(q, Hq, qo, cs.cache.kv, one, opts,
                      k.positions ? &pos : nullptr, k.mask ? &mask : nullptr,
                      k.mask ? &maskIndptr : nullptr);
}

/// pa::ref::prefill of the whole batch, one request per thread.
ref::States reference(const PrefillCase &cs, const PrefillKernel &k) {
  const int64_t Hq = k.config.numQHeads(), D = k.config.headDim;
  std::vector<ref::States> parts(static_cast<size_t>(cs.batch));
  std::vector<std::string> errors(static_cast<size_t>(cs.batch));
  int64_t threads = std::max<int64_t>(
      1, std::min<int64_t>(cs.batch, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t b = t; b < cs.batch; b += threads) {
        try {
          parts[b] = referenceOne(cs, k, b);
        } catch (const ref::Error &e) {
          errors[b] = e.what();
        }
      }
    });
  for (std::thread &t : pool)
    t.join();
  for (int64_t b = 0; b < cs.batch; ++b)
    if (!errors[b].empty())
      throw ref::Error("request " + std::to_string(b) + ": " + errors[b]);
  ref::States all = ref::States::identity(cs.rows, Hq, D);
  for (int64_t b = 0; b < cs.batch; ++b) {
    int64_t lo = cs.qoIndptr[b];
    std::copy(parts[b].o.begin(), parts[b].o.end(),
              all.o.begin() + lo * Hq * D);
    std::copy(parts[b].lse.begin(), parts[b].lse.end(),
              all.lse.begin() + lo * Hq);
  }
  return all;
}

PrefillCase makePrefillCase(const std::string &name,
                            const std::vector<int64_t> &qoLens,
                            const std::vector<int64_t> &kvLens,
                            const PrefillKernel &k, test::Rng &rng,
                            bool finiteSlack, int64_t devicePages) {
  const rt::BundleConfig &c = k.config;
  const int64_t Hq = c.numQHeads(), D = c.headDim;
  PrefillCase cs;
  cs.name = name;
  cs.qoLens = qoLens;
  cs.kvLens = kvLens;
  cs.batch = static_cast<int64_t>(qoLens.size());
  cs.qoIndptr = test::indptrOf(qoLens);
  cs.rows = cs.qoIndptr.back();
  cs.cache = makeHostCache(kvLens, c, rng, finiteSlack, devicePages);
  cs.q = test::randomValues(rng, cs.rows * Hq * D, c.dtype, -3, 3);
  if (k.positions)
    for (int64_t b = 0; b < cs.batch; ++b)
      for (int64_t i = 0; i < qoLens[b]; ++i)
        cs.positions.push_back(
            static_cast<int32_t>(rng.uniformInt(0, kvLens[b] + 8)));
  if (k.alibi)
    for (int64_t h = 0; h < Hq; ++h)
      cs.slopes.push_back(static_cast<float>(rng.uniform(0.001, 0.1)));
  if (k.mask) {
    // Random bits, some rows fully masked; packed per request.
    double density = rng.uniform(0.3, 0.9);
    std::vector<uint8_t> bits;
    std::vector<int32_t> bitIndptr = {0};
    for (int64_t b = 0; b < cs.batch; ++b) {
      for (int64_t i = 0; i < qoLens[b] * kvLens[b]; ++i)
        bits.push_back(rng.chance(density) ? 1 : 0);
      bitIndptr.push_back(static_cast<int32_t>(bits.size()));
    }
    std::tie(cs.mask, cs.maskIndptr) = ref::packMask(bits, bitIndptr);
    cs.maskBytes = static_cast<int64_t>(cs.mask.size());
  }
  cs.expected = reference(cs, k);
  return cs;
}

/// Device copies of a PrefillCase.
struct DevicePrefill {
  DeviceBuffer q, qoIndptr, cache[2], scales[2], indptr, indices, last,
      positions, mask, maskIndptr, slopes, o, lse;
};

DevicePrefill uploadPrefill(const PrefillCase &cs, const PrefillKernel &k) {
  const rt::BundleConfig &c = k.config;
  DevicePrefill d;
  d.q = uploadVector(test::toBytes(c.dtype, cs.q));
  d.qoIndptr = uploadVector(cs.qoIndptr);
  uploadCache(c, cs.cache.buffers, cs.cache.placement, cs.cache.slack,
              d.cache);
  if (c.fp8()) {
    d.scales[0] = uploadVector(cs.cache.kScale);
    d.scales[1] = uploadVector(cs.cache.vScale);
  }
  d.indptr = uploadVector(cs.cache.pt.indptr);
  d.indices = uploadVector(cs.cache.deviceIndices);
  d.last = uploadVector(cs.cache.pt.lastPageLen);
  if (k.positions)
    d.positions = uploadVector(cs.positions);
  if (k.mask) {
    d.mask = uploadVector(cs.mask);
    d.maskIndptr = uploadVector(cs.maskIndptr);
  }
  if (k.alibi) {
    std::vector<float> f(cs.slopes.begin(), cs.slopes.end());
    d.slopes = uploadVector(f);
  }
  int64_t n = cs.rows * c.numQHeads();
  d.o.allocate(static_cast<size_t>(n * c.headDim * rt::elementBytes(c.dtype)));
  d.lse.allocate(static_cast<size_t>(n * 4));
  return d;
}

pa_prefill_args prefillArgs(const PrefillCase &cs, const DevicePrefill &d,
                            const PrefillKernel &k, bool checked) {
  const rt::BundleConfig &c = k.config;
  pa_prefill_args a;
  std::memset(&a, 0, sizeof(a));
  a.q = d.q.get();
  a.qo_indptr = d.qoIndptr.get();
  bindPagedCache(a, d, c);
  if (k.positions)
    a.q_positions = d.positions.get();
  if (k.mask) {
    a.custom_mask = d.mask.get();
    a.mask_indptr = d.maskIndptr.get();
    a.mask_bytes = cs.maskBytes;
  }
  if (k.alibi)
    a.alibi_slopes = d.slopes.get();
  a.o = d.o.get();
  a.lse = d.lse.get();
  a.batch = cs.batch;
  a.num_query_rows = cs.rows;
  a.num_q_heads = c.numQHeads();
  a.head_dim = c.headDim;
  a.num_pages = cs.cache.placement.devicePages;
  a.nnz = cs.cache.pt.indptr.back();
  a.checked = checked ? 1 : 0;
  return a;
}

struct PrefillSummary {
  std::string dir, config;
  int runs = 0, failedRuns = 0, checkedPassed = 0, checkedTotal = 0;
  double maxRelO = 0, maxLseErr = 0;
  std::string fatal;
  bool pass() const {
    return fatal.empty() && failedRuns == 0 && checkedPassed == checkedTotal;
  }
};

/// Plans (with `choice`), poisons, runs (checked mode) and compares one
/// case.
void runPrefillCase(pa_bundle *bundle, const PrefillKernel &k,
                    const PrefillCase &cs, bool finiteSlack, PlanChoice choice,
                    PrefillSummary &sum) {
  int kernel = choice.kernel;
  const rt::BundleConfig &c = k.config;
  DevicePrefill d = uploadPrefill(cs, k);
  pa_prefill_plan_t *plan = nullptr;
  pa_prefill_plan_info info{};
  Comparison cmp;
  try {
    pa_prefill_plan_options po{};
    po.kernel = kernel;
    po.kv_chunk = choice.kvChunk;
    PA_RT(pa_prefill_plan_ex(bundle, cs.qoIndptr.data(),
                             cs.cache.pt.indptr.data(),
                             cs.cache.pt.lastPageLen.data(), cs.batch,
                             cs.rows, &po, &plan));
    PA_RT(pa_prefill_plan_get_info(plan, &info));
    // A forced kernel runs, except that a batch without query rows
    // launches nothing (its plan keeps the default kernel).
    if (kernel != PA_PREFILL_KERNEL_AUTO && info.kernel != kernel &&
        cs.rows > 0)
      throw Failure(std::string("the plan runs kernel '") +
                    prefillKernelName(info.kernel) + "', forced '" +
                    prefillKernelName(kernel) + "'");
    poison(d.o.get(), cs.rows * c.numQHeads() * c.headDim, c.dtype);
    poison(d.lse.get(), cs.rows * c.numQHeads(), rt::DType::F32);
    pa_prefill_args a = prefillArgs(cs, d, k, /*checked=*/true);
    PA_RT(pa_prefill_run(bundle, plan, &a, nullptr));
    PA_CU(cuCtxSynchronize());
    Outputs out;
    out.o.resize(d.o.size());
    out.lse.resize(static_cast<size_t>(cs.rows * c.numQHeads()));
    if (cs.rows > 0) {
      d.o.download(out.o.data(), out.o.size());
      d.lse.download(out.lse.data(), out.lse.size() * 4);
    }
    // Request and row of each query row, for messages.
    std::vector<int64_t> requestOf(static_cast<size_t>(cs.rows));
    for (int64_t b = 0; b < cs.batch; ++b)
      for (int64_t r = cs.qoIndptr[b]; r < cs.qoIndptr[b + 1]; ++r)
        requestOf[r] = b;
    cmp = compareStates(
        cs.expected, out, c.dtype,
        [&](int64_t row) {
          int64_t b = requestOf[row];
          return fmt("request %" PRId64 " query %" PRId64 " (qo_len %" PRId64
                     ", kv_len %" PRId64 ")",
                     b, row - cs.qoIndptr[b], cs.qoLens[b], cs.kvLens[b]);
        },
        finiteSlack);
  } catch (const Failure &f) {
    cmp.problem(f.what());
  }
  pa_prefill_plan_free(plan);
  ++sum.runs;
  sum.maxRelO = std::max(sum.maxRelO, cmp.relO);
  sum.maxLseErr = std::max(sum.maxLseErr, cmp.maxLseErr);
  if (!cmp.pass)
    ++sum.failedRuns;
  std::string kernelName = prefillKernelName(info.kernel);
  if (info.split)
    kernelName += fmt(" chunk %" PRId64 " items %" PRId64, info.kv_chunk,
                      info.num_work_items);
  std::printf("  %-22s B=%-3" PRId64 " Nq=%-6" PRId64 " %-36s q_tiles %-4" PRId64
              " rel_o %.2e lse_err %.2e %s\n",
              cs.name.c_str(), cs.batch, cs.rows, kernelName.c_str(),
              info.q_tiles, cmp.relO, cmp.maxLseErr,
              cmp.pass ? "PASS" : "FAIL");
  for (const std::string &p : cmp.problems)
    std::printf("      %s\n", p.c_str());
  std::fflush(stdout);
}

/// Checked mode and argument checks: each bad input is rejected with its
/// message before any launch.
void testPrefillRejections(pa_bundle *bundle, const PrefillKernel &k,
                           const PrefillCase &cs, PrefillSummary &sum) {
  DevicePrefill d = uploadPrefill(cs, k);
  pa_prefill_plan_t *plan = nullptr;
  PA_RT(pa_prefill_plan(bundle, cs.qoIndptr.data(), cs.cache.pt.indptr.data(),
                        cs.cache.pt.lastPageLen.data(), cs.batch, cs.rows,
                        &plan));
  auto expect = [&](const std::string &name,
                    const std::function<void(pa_prefill_args &)> &edit,
                    const std::function<void()> &corrupt,
                    const std::function<void()> &restore,
                    const std::string &fragment) {
    ++sum.checkedTotal;
    pa_prefill_args a = prefillArgs(cs, d, k, /*checked=*/true);
    if (edit)
      edit(a);
    if (corrupt)
      corrupt();
    int rc = pa_prefill_run(bundle, plan, &a, nullptr);
    std::string msg = pa_last_error();
    if (restore)
      restore();
    PA_CU(cuCtxSynchronize());
    std::string problem;
    if (rc == PA_SUCCESS)
      problem = "accepted (expected '" + fragment + "')";
    else if (msg.find(fragment) == std::string::npos)
      problem = "wrong message: '" + msg + "' (expected '" + fragment + "')";
    if (problem.empty()) {
      ++sum.checkedPassed;
      std::printf("  checked: %-34s rejected: %s\n", name.c_str(), msg.c_str());
    } else {
      std::printf("  checked: %-34s FAIL: %s\n", name.c_str(), problem.c_str());
    }
  };
  auto setInt = [](const DeviceBuffer &buf, int64_t i, int32_t v) {
    PA_CU(cuMemcpyHtoD(buf.get() + 4 * i, &v, 4));
  };
  auto str = [](int64_t v) { return std::to_string(v); };
  expect(
      "num_query_rows != plan",
      [&](pa_prefill_args &a) { a.num_query_rows = cs.rows + 1; }, nullptr,
      nullptr, "num_query_rows = " + str(cs.rows + 1));
  expect(
      "o not 16-byte aligned", [&](pa_prefill_args &a) { a.o += 2; }, nullptr,
      nullptr, "argument 'o' = 0x");
  expect(
      "q not 16-byte aligned", [&](pa_prefill_args &a) { a.q += 4; }, nullptr,
      nullptr, "argument 'q' = 0x");
  expect(
      "qo_indptr on the device != plan", nullptr,
      [&] { setInt(d.qoIndptr, 1, cs.qoIndptr[1] - 1); },
      [&] { setInt(d.qoIndptr, 1, cs.qoIndptr[1]); },
      "do not match the plan: qo_indptr[1] = " + str(cs.qoIndptr[1] - 1));
  expect(
      "page index == num_pages", nullptr,
      [&] {
        setInt(d.indices, 0,
               static_cast<int32_t>(cs.cache.placement.devicePages));
      },
      [&] { setInt(d.indices, 0, cs.cache.deviceIndices[0]); },
      "kv_indices[0] = " + str(cs.cache.placement.devicePages) +
          " out of range");
  if (!k.positions)
    expect(
        "q_positions without the role",
        [&](pa_prefill_args &a) { a.q_positions = d.q.get(); }, nullptr,
        nullptr, "argument 'q_positions' is given but");
  else
    expect(
        "negative q_position", nullptr, [&] { setInt(d.positions, 0, -1); },
        [&] { setInt(d.positions, 0, cs.positions[0]); },
        "q_positions[0] = -1 is negative");
  if (k.mask)
    expect(
        "mask_bytes too small",
        [&](pa_prefill_args &a) { a.mask_bytes = cs.maskBytes - 1; }, nullptr,
        nullptr, "exceeds the " + str(cs.maskBytes - 1) + " bytes");
  pa_prefill_plan_free(plan);
  // Plan options: an unknown kernel, and prefill_short forced on a bundle
  // without it, are rejected by the planner.
  auto expectPlan = [&](const std::string &name, int kernel,
                        const std::string &fragment, int64_t kvChunk = 0) {
    ++sum.checkedTotal;
    pa_prefill_plan_options po{};
    po.kernel = kernel;
    po.kv_chunk = kvChunk;
    pa_prefill_plan_t *bad = nullptr;
    int rc = pa_prefill_plan_ex(bundle, cs.qoIndptr.data(),
                                cs.cache.pt.indptr.data(),
                                cs.cache.pt.lastPageLen.data(), cs.batch,
                                cs.rows, &po, &bad);
    std::string msg = pa_last_error();
    pa_prefill_plan_free(bad);
    std::string problem;
    if (rc == PA_SUCCESS)
      problem = "accepted (expected '" + fragment + "')";
    else if (msg.find(fragment) == std::string::npos)
      problem = "wrong message: '" + msg + "' (expected '" + fragment + "')";
    if (problem.empty()) {
      ++sum.checkedPassed;
      std::printf("  plan:    %-34s rejected: %s\n", name.c_str(),
                  msg.c_str());
    } else {
      std::printf("  plan:    %-34s FAIL: %s\n", name.c_str(),
                  problem.c_str());
    }
  };
  expectPlan("unknown kernel option", 7, "options->kernel = 7");
  if (!k.shortSpec)
    expectPlan("prefill_short forced, none", PA_PREFILL_KERNEL_SHORT,
               "has no 'prefill_short' kernel");
  if (!k.partial)
    expectPlan("split-KV forced, none", PA_PREFILL_KERNEL_PARTIAL,
               "has no 'prefill_partial' kernel");
  expectPlan("kv_chunk with prefill forced", PA_PREFILL_KERNEL_PREFILL,
             "needs kernel AUTO or PARTIAL", 64);
  expectPlan("negative kv_chunk", PA_PREFILL_KERNEL_AUTO,
             "options->kv_chunk = -1 is negative", -1);
  std::fflush(stdout);
}

/// Random ragged batch: qo_len in [0, 512] (0 included), kv_len in
/// [0, 4096] not aligned to the page size or 64, qo_len <= kv_len unless the
/// kernel has q_positions; the total (query, key) pairs kept within
/// `pairBudget` (the oracle's cost) by shortening queries.
void randomLengths(test::Rng &rng, const PrefillKernel &k, int64_t pairBudget,
                   std::vector<int64_t> &qo, std::vector<int64_t> &kv) {
  int64_t B = rng.uniformInt(1, 9);
  qo.assign(static_cast<size_t>(B), 0);
  kv.assign(static_cast<size_t>(B), 0);
  for (int64_t b = 0; b < B; ++b) {
    int64_t len = rng.chance(0.1) ? 0 : rng.uniformInt(1, 4096);
    // Not a multiple of 64 or of the page size (impossible for P = 1).
    while (len > 0 && (len % 64 == 0 ||
                       (k.config.pageSize > 1 && len % k.config.pageSize == 0)))
      ++len;
    kv[b] = len;
    int64_t maxQo = k.positions ? 512 : std::min<int64_t>(512, len);
    qo[b] = rng.chance(0.15) ? 0 : rng.uniformInt(0, maxQo);
  }
  int64_t pairs = 0;
  for (int64_t b = 0; b < B; ++b)
    pairs += qo[b] * kv[b];
  while (pairs > pairBudget) {
    pairs = 0;
    for (int64_t b = 0; b < B; ++b) {
      qo[b] /= 2;
      pairs += qo[b] * kv[b];
    }
  }
}

PrefillSummary checkPrefillBundle(const std::string &dir,
                                  const CheckPrefillOptions &opts) {
  PrefillSummary sum;
  sum.dir = dir;
  pa_bundle *bundle = nullptr;
  try {
    PrefillKernel k = readPrefillKernel(dir);
    sum.config = describe(k);
    PA_RT(pa_bundle_load(dir.c_str(), &bundle));
    std::printf("bundle %s: %s\n", dir.c_str(), sum.config.c_str());
    const int64_t P = k.config.pageSize;
    int64_t devicePages = opts.poolElements > 0
                              ? largePoolPages(k.config, opts.poolElements)
                              : 0;
    auto describePool = [&](const PrefillCase &cs) {
      if (devicePages > 0)
        std::printf("  %-22s pool: %s\n", cs.name.c_str(),
                    cs.cache.placement.describe(k.config, cs.cache.pt.indices)
                        .c_str());
    };
    // Fixed edge cases.
    struct Fixed {
      std::string name;
      std::vector<int64_t> qo, kv;
    };
    std::vector<Fixed> fixed = {
        {"all-empty", {0, 0, 0}, {0, 5, 2 * P + 1}},
        {"qo0-in-the-middle", {7, 0, 3}, {2 * P + 7, 40, 3}},
        {"qo1-kv1", {1}, {1}},
        {"kv0", {0, 2}, {0, 2}},
    };
    if (k.positions)
      fixed.push_back({"positions-qo>kv", {9, 1}, {3, 0}});
    if (!opts.quick)
      fixed.push_back({"long-512-over-4096", {512, 100}, {4096 - 3, 700}});
    // Every prefill kernel of the bundle runs every case (the plan forces
    // it): prefill, then prefill_short when the bundle has one. A case (and
    // its float64 reference) is made once for both.
    // With split-KV: prefill_partial + merge_segments with the planner's
    // chunk and with a small chunk (many chunks per tile, boundaries off
    // the KV tile).
    std::vector<PlanChoice> kernels = {{PA_PREFILL_KERNEL_PREFILL}};
    if (k.shortSpec)
      kernels.push_back({PA_PREFILL_KERNEL_SHORT});
    if (k.partial) {
      kernels.push_back({PA_PREFILL_KERNEL_PARTIAL});
      kernels.push_back(
          {PA_PREFILL_KERNEL_PARTIAL, P == 1 ? 37 : (P % 32 == 0 ? P : 3 * P)});
    }
    for (size_t i = 0; i < fixed.size(); ++i) {
      test::Rng rng(test::mixSeed(opts.seed, 1000 + i));
      PrefillCase cs = makePrefillCase(fixed[i].name, fixed[i].qo, fixed[i].kv,
                                       k, rng, opts.finiteSlack, devicePages);
      describePool(cs);
      for (PlanChoice kernel : kernels)
        runPrefillCase(bundle, k, cs, opts.finiteSlack, kernel, sum);
      if (i == 1)
        testPrefillRejections(bundle, k, cs, sum);
    }
    // Random ragged batches, one seed each (printed: --seed S --seeds 1
    // replays seed S).
    int64_t budget = opts.quick ? 300000 : 3000000;
    for (int64_t s = 0; s < opts.seeds; ++s) {
      uint64_t seed = opts.seed + static_cast<uint64_t>(s);
      test::Rng rng(test::mixSeed(seed, 0x72616e64)); // "rand"
      std::vector<int64_t> qo, kv;
      randomLengths(rng, k, budget, qo, kv);
      PrefillCase cs =
          makePrefillCase("random seed " + std::to_string(seed), qo, kv, k,
                          rng, opts.finiteSlack, devicePages);
      describePool(cs);
      for (PlanChoice kernel : kernels)
        runPrefillCase(bundle, k, cs, opts.finiteSlack, kernel, sum);
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

//===----------------------------------------------------------------------===//
// bench-prefill
//===----------------------------------------------------------------------===//

/// Visible (query, key) pairs of one request: query i at position
/// kv_len - qo_len + i, keys limited by the causal mask and the window.
double visiblePairs(const PrefillKernel &k, int64_t qoLen, int64_t kvLen) {
  double pairs = 0;
  for (int64_t i = 0; i < qoLen; ++i) {
    int64_t pos = kvLen - qoLen + i;
    int64_t hi = k.spec.causal ? std::min(pos, kvLen - 1) : kvLen - 1;
    int64_t lo = k.spec.window > 0 ? std::max<int64_t>(0, pos - k.spec.window + 1)
                                   : 0;
    pairs += static_cast<double>(std::max<int64_t>(0, hi - lo + 1));
  }
  return pairs;
}

struct BenchShape {
  std::string name;
  int64_t batch, qoLen, kvLen;
};

} // namespace

int pa::runner::runCheckPrefill(const CheckPrefillOptions &opts) {
  std::printf("pa-gpu-runner check-prefill: seeds %" PRIu64 "..%" PRIu64
              " (replay one with --seed S --seeds 1)%s%s\n",
              opts.seed, opts.seed + opts.seeds - 1,
              opts.finiteSlack ? ", finite slack" : ", NaN slack",
              poolNote(opts.poolElements).c_str());
  if (pa_init(opts.device) != PA_SUCCESS) {
    std::printf("FATAL: pa_init: %s\n", pa_last_error());
    return 2;
  }
  std::printf("tolerances: rel L2(o) <= 2e-3 f16, 1e-2 bf16, 1e-4 f32; "
              "|lse err| <= %.0e; -inf exactly where no key is visible; "
              "no NaN\n",
              kLseTolerance);
  std::vector<PrefillSummary> sums;
  for (const std::string &dir : opts.bundles)
    sums.push_back(checkPrefillBundle(dir, opts));
  std::printf("\n| bundle | kernel | runs | max rel err o | max abs err lse "
              "| checked mode | result |\n|---|---|---|---|---|---|---|\n");
  bool ok = true;
  for (const PrefillSummary &s : sums) {
    ok &= s.pass();
    std::printf("| %s | %s | %d (%d failed) | %.2e | %.2e | %d/%d | %s |\n",
                s.dir.c_str(), s.config.c_str(), s.runs, s.failedRuns,
                s.maxRelO, s.maxLseErr, s.checkedPassed, s.checkedTotal,
                s.pass() ? "PASS" : "FAIL");
  }
  std::printf("seed %" PRIu64 ": %s\n", opts.seed,
              ok ? "all bundles PASS" : "FAILURES");
  pa_shutdown();
  return ok ? 0 : 1;
}

int pa::runner::runBenchPrefill(const BenchPrefillOptions &o) {
  int rc = 0;
  pa_bundle *bundle = nullptr;
  CUstream stream = nullptr;
  std::string report;
  auto out = reportSink(report);
  try {
    PA_RT(pa_init(o.device));
    DeviceInfo dev = queryDevice();
    Roofs roofs;
    roofs.load(o.roofs);
    PrefillKernel k = readPrefillKernel(o.bundle);
    const rt::BundleConfig &c = k.config;
    int forced = PA_PREFILL_KERNEL_AUTO;
    if (o.kernel == "prefill")
      forced = PA_PREFILL_KERNEL_PREFILL;
    else if (o.kernel == "short")
      forced = PA_PREFILL_KERNEL_SHORT;
    else if (o.kernel == "partial")
      forced = PA_PREFILL_KERNEL_PARTIAL;
    else if (o.kernel != "auto")
      throw Failure("--kernel must be auto, prefill, short or partial, got '" +
                    o.kernel + "'");
    if (forced == PA_PREFILL_KERNEL_SHORT && !k.shortSpec)
      throw Failure("--kernel short: bundle '" + o.bundle +
                    "' has no prefill_short kernel");
    if (forced == PA_PREFILL_KERNEL_PARTIAL && !k.partial)
      throw Failure("--kernel partial: bundle '" + o.bundle +
                    "' has no prefill_partial kernel");
    if (c.dtype != rt::DType::F16)
      throw Failure("bench-prefill needs an f16 bundle, '" + o.bundle +
                    "' is " + rt::toString(c.dtype));
    if (k.positions || k.mask)
      throw Failure("bench-prefill times prefills without q_positions or a "
                    "custom mask; '" +
                    o.bundle + "' takes them");
    PA_RT(pa_bundle_load(o.bundle.c_str(), &bundle));
    PA_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    L2Eviction flush(o.l2Flush, roofs);
    const int64_t P = c.pageSize, Hkv = c.kvHeads, Hq = c.numQHeads(),
                  D = c.headDim, eb = 2;

    out("## PagedAttn prefill benchmark");
    out("");
    out(fmt("- device: %s (sm_%d%d, %d SMs), %s", dev.name.c_str(),
            dev.ccMajor, dev.ccMinor, dev.smCount, utcNow().c_str()));
    out("- bundle: `" + o.bundle + "` (" + describe(k) + ")");
    out(fmt("- method: median of %d timed calls after %d warm-up calls, CUDA "
            "events around each call, %s, up to %d input sets rotated; "
            "TFLOP/s = 4 * D * Hq * visible (query, key) pairs / time",
            o.reps, o.warmup, flush.describe().c_str(), o.maxSets));
    out(fmt("- kernel: %s (the plan's choice per shape: split-KV "
            "(prefill_partial + merge_segments) when the query tiles x KV "
            "heads leave SMs idle, else prefill_short when the bundle has it "
            "and the mean keys per query are <= %" PRId64 ")",
            o.kernel.c_str(), rt::kShortPrefillMaxMeanKeys));
    out("");
    out("| shape | B | qo_len | kv_len | kernel | time us | min us | "
        "TFLOP/s |");
    out("|---|---:|---:|---:|---|---:|---:|---:|");

    std::vector<BenchShape> shapes;
    for (int64_t L : {512, 2048, 8192, 16384}) {
      shapes.push_back({"causal 32k tokens", std::max<int64_t>(1, 32768 / L),
                        L, L});
      shapes.push_back({"causal 16k tokens", std::max<int64_t>(1, 16384 / L),
                        L, L});
    }
    shapes.push_back({"append 512 over 8192", 8, 512, 8192});
    // Few query tiles over long caches (chunked prefill of one request,
    // speculative-decoding verification): where split-KV pays.
    shapes.push_back({"few tiles: 1 x 512 over 32768", 1, 512, 32768});
    shapes.push_back({"few tiles: 1 x 128 over 16384", 1, 128, 16384});
    shapes.push_back({"few tiles: 4 x 16 over 8192", 4, 16, 8192});

    // One KV arena for every shape's pools (allocKVArena): room for the
    // sets of the largest shape, leaving 8 GiB for q / o.
    double arenaNeed = 0;
    for (const BenchShape &sh : shapes)
      if (sh.name.find(o.only) != std::string::npos)
        arenaNeed = std::max(arenaNeed, kvSetBytes(c, sh.batch, sh.kvLen) *
                                            static_cast<double>(o.maxSets));
    DeviceBuffer arena = allocKVArena(arenaNeed, 8.0 * (1 << 30));
    const size_t arenaBytes = arena.size();
    for (const BenchShape &sh : shapes) {
      if (sh.name.find(o.only) == std::string::npos)
        continue;
      const int64_t B = sh.batch;
      std::vector<int64_t> qoLens(static_cast<size_t>(B), sh.qoLen),
          kvLens(static_cast<size_t>(B), sh.kvLen);
      const int64_t ppr = (sh.kvLen + P - 1) / P, pagesPerSet = B * ppr;
      // An fp8 cache holds one byte per element.
      const int64_t kvEb = cacheElementBytes(c);
      const double pageBytes = 2.0 * P * Hkv * D * kvEb;
      const int64_t rows = B * sh.qoLen;
      const double qBytes = static_cast<double>(rows * Hq * D * eb);
      size_t freeB = 0, totalB = 0;
      PA_CU(cuMemGetInfo(&freeB, &totalB));
      double perSet = pageBytes * pagesPerSet + 2 * qBytes + rows * Hq * 4.0;
      int64_t sets = std::min<int64_t>(
          {o.maxSets,
           static_cast<int64_t>((static_cast<double>(freeB) -
                                 4.0 * (1 << 30)) /
                                perSet),
           static_cast<int64_t>(static_cast<double>(arenaBytes) /
                                (pageBytes * pagesPerSet))});
      if (sets < 1) {
        out(fmt("| %s | %" PRId64 " | %" PRId64 " | %" PRId64
                " | | skipped: does not fit | | |",
                sh.name.c_str(), B, sh.qoLen, sh.kvLen));
        continue;
      }
      int64_t numPages = sets * pagesPerSet;
      bool joint = c.kv == rt::KVStorage::Joint;
      size_t poolBytes =
          static_cast<size_t>(pageBytes * static_cast<double>(numPages));
      DeviceSpan pool0{arena.get(), joint ? poolBytes : poolBytes / 2};
      DeviceSpan pool1{arena.get() + (joint ? 0 : poolBytes / 2),
                       joint ? 0 : poolBytes / 2};
      int kvFill = cacheFillDtype(c, PA_DTYPE_F16);
      roofs.fillUniform(pool0.get(), pool0.size() / kvEb, kvFill, o.seed + 1,
                        -1.f, 1.f, stream);
      if (!joint)
        roofs.fillUniform(pool1.get(), pool1.size() / kvEb, kvFill,
                          o.seed + 2, -1.f, 1.f, stream);
      DeviceBuffer dScales = benchScales(c);
      test::Rng rng(test::mixSeed(o.seed, static_cast<uint64_t>(B),
                                  static_cast<uint64_t>(sh.kvLen)));
      test::PagePool pages(rng, numPages);
      std::vector<ref::PageTable> tables;
      for (int64_t s = 0; s < sets; ++s)
        tables.push_back(test::makePageTable(rng, P, kvLens, pages));
      std::vector<int32_t> qoIndptr = test::indptrOf(qoLens);
      DeviceBuffer dQo = uploadVector(qoIndptr),
                   dIndptr = uploadVector(tables[0].indptr),
                   dLast = uploadVector(tables[0].lastPageLen);
      std::vector<DeviceBuffer> dIndices, dQ, dO, dLse;
      for (int64_t s = 0; s < sets; ++s) {
        dIndices.push_back(uploadVector(tables[static_cast<size_t>(s)].indices));
        dQ.emplace_back(static_cast<size_t>(qBytes));
        roofs.fillUniform(dQ.back().get(), static_cast<uint64_t>(rows * Hq * D),
                          PA_DTYPE_F16, o.seed + 10 + static_cast<uint32_t>(s),
                          -1.f, 1.f, stream);
        dO.emplace_back(static_cast<size_t>(qBytes));
        dLse.emplace_back(static_cast<size_t>(rows * Hq * 4));
      }
      DeviceBuffer dSlopes;
      if (k.alibi) {
        std::vector<float> slopes(static_cast<size_t>(Hq));
        for (int64_t h = 0; h < Hq; ++h)
          slopes[h] = std::exp2(-8.0f * static_cast<float>(h + 1) /
                                static_cast<float>(Hq));
        dSlopes = uploadVector(slopes);
      }
      PA_CU(cuStreamSynchronize(stream));
      pa_prefill_plan_t *plan = nullptr;
      pa_prefill_plan_options po{};
      po.kernel = forced;
      po.kv_chunk = o.kvChunk;
      PA_RT(pa_prefill_plan_ex(bundle, qoIndptr.data(),
                               tables[0].indptr.data(),
                               tables[0].lastPageLen.data(), B, rows, &po,
                               &plan));
      struct PlanGuard {
        pa_prefill_plan_t *p;
        ~PlanGuard() { pa_prefill_plan_free(p); }
      } guard{plan};
      pa_prefill_plan_info info{};
      PA_RT(pa_prefill_plan_get_info(plan, &info));
      std::string kernelText = fmt("%s (q/tile %" PRId64 ")",
                                   prefillKernelName(info.kernel),
                                   info.queries_per_tile);
      if (info.split)
        kernelText += fmt(", chunk %" PRId64 ", %" PRId64 " items",
                          info.kv_chunk, info.num_work_items);
      auto call = [&](int i) {
        size_t s = static_cast<size_t>(i % sets);
        pa_prefill_args a;
        std::memset(&a, 0, sizeof(a));
        a.q = dQ[s].get();
        a.qo_indptr = dQo.get();
        if (joint) {
          a.kv = pool0.get();
        } else {
          a.k = pool0.get();
          a.v = pool1.get();
        }
        if (c.fp8()) {
          a.k_scale = dScales.get();
          a.v_scale = dScales.get();
        }
        a.kv_indptr = dIndptr.get();
        a.kv_indices = dIndices[s].get();
        a.kv_last_page_len = dLast.get();
        a.alibi_slopes = k.alibi ? dSlopes.get() : 0;
        a.o = dO[s].get();
        a.lse = dLse[s].get();
        a.batch = B;
        a.num_query_rows = rows;
        a.num_q_heads = Hq;
        a.head_dim = D;
        a.num_pages = numPages;
        a.nnz = pagesPerSet;
        PA_RT(pa_prefill_run(bundle, plan, &a, stream));
      };
      Timing t = timeCalls(stream, flush, o.warmup, o.reps, call);
      // Sanity: every lse of the first set is finite (a kernel that returns
      // early would otherwise look fast); every query sees a key here.
      std::vector<float> lse(static_cast<size_t>(rows * Hq));
      dLse[0].download(lse.data(), lse.size() * 4);
      bool sane = true;
      for (float v : lse)
        sane &= std::isfinite(v);
      double flops = 4.0 * D * Hq * B * visiblePairs(k, sh.qoLen, sh.kvLen);
      out(fmt("| %s | %" PRId64 " | %" PRId64 " | %" PRId64
              " | %s | %.1f | %.1f | %.1f |%s",
              sh.name.c_str(), B, sh.qoLen, sh.kvLen, kernelText.c_str(),
              t.medianUs, t.minUs,
              t.medianUs > 0 ? flops / t.medianUs / 1e6 : 0.0,
              sane ? "" : " INVALID: non-finite lse"));
      if (!sane)
        rc = 1;
    }
  } catch (const Failure &f) {
    out(std::string("FATAL: ") + f.what());
    rc = 1;
  }
  if (stream)
    cuStreamDestroy(stream);
  pa_bundle_free(bundle);
  if (!writeReport(o.out, report))
    rc = 1;
  return rc;
}
