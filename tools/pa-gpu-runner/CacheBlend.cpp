//===- CacheBlend.cpp - CacheBlend checks and layer benchmark -------------===//
//
// Part of the PagedAttn project. See CacheBlend.h.
//
//===----------------------------------------------------------------------===//

#include "CacheBlend.h"

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
#include <limits>
#include <numeric>

using namespace pa::runner;
namespace rt = pa::rt;
namespace ref = pa::ref;
namespace test = pa::test;

namespace {

/// pa_kv_deviation on `n` tokens against the oracle; true on a pass.
bool checkDeviation(pa_bundle *bundle, const rt::BundleConfig &c, int64_t n,
                    test::Rng &rng) {
  int64_t per = c.kvHeads * c.headDim;
  std::vector<double> fresh =
      test::randomValues(rng, n * per, c.dtype, -2, 2);
  std::vector<double> cached = fresh;
  // Some tokens unchanged (deviation 0), others perturbed by various sizes.
  for (int64_t t = 0; t < n; ++t) {
    if (rng.chance(0.25))
      continue;
    double amp = std::pow(10.0, rng.uniform(-3, 0));
    for (int64_t i = 0; i < per; ++i) {
      double &x = cached[static_cast<size_t>(t * per + i)];
      x = test::roundTo(c.dtype, x + rng.uniform(-amp, amp));
    }
  }
  std::vector<double> expected =
      ref::kvDeviation(fresh, cached, n, c.kvHeads, c.headDim);
  DeviceBuffer dn = uploadVector(test::toBytes(c.dtype, fresh));
  DeviceBuffer dc = uploadVector(test::toBytes(c.dtype, cached));
  DeviceBuffer dd(static_cast<size_t>(n * 4));
  poison(dd.get(), n, rt::DType::F32);
  pa_kv_deviation_args a{};
  a.new_rows = dn.get();
  a.cached_rows = dc.get();
  a.deviation = dd.get();
  a.num_rows = n;
  double worst = 0;
  std::string problem;
  try {
    PA_RT(pa_kv_deviation(bundle, &a, nullptr));
    PA_CU(cuCtxSynchronize());
    std::vector<float> got(static_cast<size_t>(n));
    dd.download(got.data(), got.size() * 4);
    for (int64_t t = 0; t < n; ++t) {
      double e = expected[static_cast<size_t>(t)], g = got[t];
      double err = std::fabs(g - e) / std::max(e, 1e-30);
      if (std::isnan(g) || (e == 0 ? g != 0 : err > 1e-5)) {
        if (problem.empty())
          problem = fmt("token %" PRId64 ": got %.9g, expected %.9g", t, g, e);
      } else if (e > 0) {
        worst = std::max(worst, err);
      }
    }
  } catch (const Failure &f) {
    problem = f.what();
  }
  std::printf("  kv_deviation N=%-6" PRId64 " max rel err %.2e %s%s\n", n,
              worst, problem.empty() ? "PASS" : "FAIL ",
              problem.c_str());
  return problem.empty();
}

/// pa_select_topk on ragged `lens` against the oracle, exactly; `values`
/// draws each deviation. True on a pass.
bool checkTopK(pa_bundle *bundle, double ratio, const std::string &name,
               const std::vector<int64_t> &lens,
               const std::function<float()> &value) {
  std::vector<int32_t> indptr = test::indptrOf(lens);
  int64_t n = indptr.back(), batch = static_cast<int64_t>(lens.size());
  std::vector<float> dev(static_cast<size_t>(n));
  for (float &x : dev)
    x = value();
  std::vector<double> devD(dev.begin(), dev.end());
  auto [expPos, expIndptr] = ref::selectTopK(devD, indptr, ratio);
  DeviceBuffer dd = uploadVector(dev), di = uploadVector(indptr);
  DeviceBuffer dp(static_cast<size_t>(std::max<int64_t>(n, 1) * 4)),
      doi(static_cast<size_t>((batch + 1) * 4));
  PA_CU(cuMemsetD32(dp.get(), 0xFFFFFFFFu, static_cast<size_t>(std::max<int64_t>(n, 1))));
  PA_CU(cuMemsetD32(doi.get(), 0xFFFFFFFFu, static_cast<size_t>(batch + 1)));
  pa_select_topk_args a{};
  a.deviation = dd.get();
  a.indptr = di.get();
  a.positions = dp.get();
  a.out_indptr = doi.get();
  a.batch = batch;
  a.num_rows = n;
  a.checked = 1;
  std::string problem;
  try {
    PA_RT(pa_select_topk(bundle, &a, nullptr));
    PA_CU(cuCtxSynchronize());
    std::vector<int32_t> gotIndptr(static_cast<size_t>(batch + 1)),
        gotPos(static_cast<size_t>(std::max<int64_t>(n, 1)));
    doi.download(gotIndptr.data(), gotIndptr.size() * 4);
    dp.download(gotPos.data(), gotPos.size() * 4);
    if (gotIndptr != expIndptr)
      problem = "out_indptr differs";
    for (size_t i = 0; problem.empty() && i < expPos.size(); ++i)
      if (gotPos[i] != expPos[i])
        problem = fmt("positions[%zu] = %d, expected %d", i, gotPos[i],
                      expPos[i]);
  } catch (const Failure &f) {
    problem = f.what();
  }
  std::printf("  select_topk %-28s B=%-3" PRId64 " N=%-6" PRId64
              " selected %-5d %s%s\n",
              name.c_str(), batch, n, expIndptr.back(),
              problem.empty() ? "PASS (exact)" : "FAIL ", problem.c_str());
  return problem.empty();
}

/// pa_pack_mask of random masks ragged by `lens` against pa::ref::packMask,
/// byte for byte (packed bytes up to packed_indptr[B], and the indptr).
bool checkPackMask(pa_bundle *bundle, const std::string &name,
                   const std::vector<int64_t> &lens, test::Rng &rng) {
  std::vector<int32_t> indptr = test::indptrOf(lens);
  int64_t n = indptr.back(), batch = static_cast<int64_t>(lens.size());
  std::vector<uint8_t> bits(static_cast<size_t>(n));
  double density = rng.uniform(0.1, 0.9);
  for (uint8_t &x : bits) // any non-zero byte is true
    x = rng.chance(density) ? static_cast<uint8_t>(rng.uniformInt(1, 255)) : 0;
  std::vector<uint8_t> bools(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    bools[i] = bits[i] ? 1 : 0;
  auto [expPacked, expIndptr] = ref::packMask(bools, indptr);
  int64_t cap = static_cast<int64_t>(expPacked.size()) + 3;
  DeviceBuffer dm = uploadVector(bits), di = uploadVector(indptr),
               dp(static_cast<size_t>(std::max<int64_t>(cap, 1))),
               dpi(static_cast<size_t>((batch + 1) * 4));
  PA_CU(cuMemsetD8(dp.get(), 0xAB, static_cast<size_t>(std::max<int64_t>(cap, 1))));
  PA_CU(cuMemsetD32(dpi.get(), 0xFFFFFFFFu, static_cast<size_t>(batch + 1)));
  pa_pack_mask_args a{};
  a.mask = dm.get();
  a.indptr = di.get();
  a.packed = dp.get();
  a.packed_indptr = dpi.get();
  a.batch = batch;
  a.num_elements = n;
  a.packed_bytes = cap;
  a.checked = 1;
  std::string problem;
  try {
    PA_RT(pa_pack_mask(bundle, &a, nullptr));
    PA_CU(cuCtxSynchronize());
    std::vector<int32_t> gotIndptr(static_cast<size_t>(batch + 1));
    std::vector<uint8_t> got(static_cast<size_t>(std::max<int64_t>(cap, 1)));
    dpi.download(gotIndptr.data(), gotIndptr.size() * 4);
    dp.download(got.data(), got.size());
    if (gotIndptr != expIndptr)
      problem = "packed_indptr differs";
    for (size_t i = 0; problem.empty() && i < expPacked.size(); ++i)
      if (got[i] != expPacked[i])
        problem = fmt("packed[%zu] = 0x%02x, expected 0x%02x", i, got[i],
                      expPacked[i]);
  } catch (const Failure &f) {
    problem = f.what();
  }
  std::printf("  pack_mask   %-28s B=%-3" PRId64 " N=%-6" PRId64
              " bytes %-5zu %s%s\n",
              name.c_str(), batch, n, expPacked.size(),
              problem.empty() ? "PASS (exact)" : "FAIL ", problem.c_str());
  return problem.empty();
}

bool checkBundle(const std::string &dir, uint64_t seed) {
  pa_bundle *bundle = nullptr;
  bool ok = true;
  try {
    PA_RT(pa_bundle_load(dir.c_str(), &bundle));
    pa_bundle_config cfg;
    PA_RT(pa_bundle_get_config(bundle, &cfg));
    rt::Manifest m;
    if (rt::Status s = rt::readManifest(dir, m); !s)
      throw Failure(s.message);
    const rt::BundleConfig &c = m.config;
    std::printf("bundle %s: %s, topk ratio %g\n", dir.c_str(),
                c.str().c_str(), cfg.topk_ratio);
    if (!cfg.has_cacheblend)
      throw Failure("no kv_deviation / select_topk kernels (pa-compile "
                    "--kernels all)");
    test::Rng rng(seed);
    for (int64_t n : {1, 7, 1000, 4096})
      ok &= checkDeviation(bundle, c, n, rng);
    double r = cfg.topk_ratio;
    auto few = [&] { // many ties
      return static_cast<float>(rng.uniformInt(0, 6)) * 0.5f;
    };
    auto signedZero = [&] { // -0.0 == +0.0
      int64_t k = rng.uniformInt(0, 3);
      return k == 0 ? -0.0f : k == 1 ? 0.0f : static_cast<float>(rng.uniform(-1, 1));
    };
    auto wide = [&] {
      return static_cast<float>(std::pow(10.0, rng.uniform(-30, 30)) *
                                (rng.chance(0.1) ? -1 : 1));
    };
    ok &= checkTopK(bundle, r, "one request, ties", {4096}, few);
    std::vector<int64_t> ragged;
    for (int i = 0; i < 9; ++i)
      ragged.push_back(rng.chance(0.2) ? 0 : rng.uniformInt(1, 300));
    ok &= checkTopK(bundle, r, "ragged, ties", ragged, few);
    ok &= checkTopK(bundle, r, "ragged, signed zeros", ragged, signedZero);
    ok &= checkTopK(bundle, r, "ragged, 60 decades", ragged, wide);
    ok &= checkTopK(bundle, r, "one token", {1}, wide);
    ok &= checkTopK(bundle, r, "all equal", {77, 5}, [] { return 1.0f; });
    ok &= checkTopK(bundle, r, "no request", {}, [] { return 0.0f; });
    if (cfg.has_pack_mask) {
      std::vector<int64_t> masks;
      for (int i = 0; i < 40; ++i)
        masks.push_back(rng.chance(0.2) ? 0 : rng.uniformInt(1, 5000));
      ok &= checkPackMask(bundle, "ragged", masks, rng);
      ok &= checkPackMask(bundle, "one long", {1 << 20}, rng);
      ok &= checkPackMask(bundle, "bits 1..9", {1, 2, 3, 7, 8, 9}, rng);
      ok &= checkPackMask(bundle, "no segment", {}, rng);
    }
    // Checked mode: a NaN deviation.
    std::vector<float> dev(10, 1.0f);
    dev[4] = std::numeric_limits<float>::quiet_NaN();
    std::vector<int32_t> indptr{0, 10};
    DeviceBuffer dd = uploadVector(dev), di = uploadVector(indptr),
                 dp(40), doi(8);
    pa_select_topk_args a{};
    a.deviation = dd.get();
    a.indptr = di.get();
    a.positions = dp.get();
    a.out_indptr = doi.get();
    a.batch = 1;
    a.num_rows = 10;
    a.checked = 1;
    int rc = pa_select_topk(bundle, &a, nullptr);
    std::string msg = rc == PA_SUCCESS ? "" : pa_last_error();
    bool rejected = rc != PA_SUCCESS &&
                    msg.find("deviation[4] is NaN") != std::string::npos;
    std::printf("  checked mode, NaN deviation: %s%s\n",
                rejected ? "rejected PASS" : "FAIL",
                rejected ? "" : (" (" + msg + ")").c_str());
    ok &= rejected;
  } catch (const Failure &f) {
    std::printf("  FATAL: %s\n", f.what());
    ok = false;
  }
  pa_bundle_free(bundle);
  return ok;
}

} // namespace

int pa::runner::runCheckCacheBlend(const CheckCacheBlendOptions &o) {
  return runBundleChecks("check-cacheblend", o.seed, o.device, o.bundles,
                         checkBundle);
}

int pa::runner::runBenchCacheBlend(const BenchCacheBlendOptions &o) {
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
    pa_bundle_config cfg;
    PA_RT(pa_bundle_get_config(bundle, &cfg));
    rt::Manifest m;
    if (rt::Status s = rt::readManifest(o.bundle, m); !s)
      throw Failure(s.message);
    const rt::BundleConfig &c = m.config;
    const rt::KernelSpec *pk = m.find(rt::KernelKind::Prefill);
    if (!cfg.has_cacheblend || !cfg.has_page_writes || !pk ||
        !pk->hasRole(rt::ArgRole::QPositions) || !pk->prefill->causal)
      throw Failure("the layer needs a --kernels all --causal --positions "
                    "bundle");
    PA_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    L2Eviction flush(o.l2Flush, roofs);
    const int64_t P = c.pageSize, Hq = c.numQHeads(), Hkv = c.kvHeads,
                  D = c.headDim;
    const int64_t L = o.chunks * o.chunkTokens;
    const int64_t rowsPer = Hkv * D, nb = rt::elementBytes(c.dtype);
    // The request's cache: L tokens in a random page order.
    int64_t pages = (L + P - 1) / P;
    std::vector<int32_t> indices(static_cast<size_t>(pages));
    std::iota(indices.begin(), indices.end(), 0);
    test::Rng rng(o.seed);
    rng.shuffle(indices);
    std::vector<int32_t> kvIndptr{0, static_cast<int32_t>(pages)},
        last{static_cast<int32_t>(L - (pages - 1) * P)}, devIndptr{0,
            static_cast<int32_t>(L)};
    test::CacheGeometry g = test::CacheGeometry::of(c);
    int64_t eb = cacheElementBytes(c);
    std::vector<DeviceBuffer> cache;
    for (int i = 0; i < g.numBuffers(); ++i) {
      cache.emplace_back(static_cast<size_t>(g.bufferElements(pages) * eb));
      roofs.fillUniform(cache.back().get(),
                        static_cast<uint64_t>(g.bufferElements(pages)),
                        cacheFillDtype(c, fillDtype(c.dtype)),
                        o.seed + static_cast<uint32_t>(i), -1.f, 1.f, stream);
    }
    DeviceBuffer scales = benchScales(c);
    // The layer's recomputed K and V of every token, and the reused K
    // (dense rows, as the caller gathers them), and the queries.
    DeviceBuffer kNew(static_cast<size_t>(L * rowsPer * nb)),
        vNew(static_cast<size_t>(L * rowsPer * nb)),
        kOld(static_cast<size_t>(L * rowsPer * nb)),
        q(static_cast<size_t>(L * Hq * D * nb));
    uint32_t s = o.seed;
    for (const DeviceBuffer *b : {&kNew, &vNew, &kOld})
      roofs.fillUniform(b->get(), static_cast<uint64_t>(L * rowsPer),
                        fillDtype(c.dtype), ++s, -1.f, 1.f, stream);
    roofs.fillUniform(q.get(), static_cast<uint64_t>(L * Hq * D),
                      fillDtype(c.dtype), ++s, -1.f, 1.f, stream);
    DeviceBuffer dev32(static_cast<size_t>(L * 4)),
        positions(static_cast<size_t>(L * 4)), outIndptr(8),
        o16(static_cast<size_t>(L * Hq * D * nb)),
        lse(static_cast<size_t>(L * Hq * 4));
    DeviceBuffer dKvIndptr = uploadVector(kvIndptr),
                 dIndices = uploadVector(indices), dLast = uploadVector(last),
                 dDevIndptr = uploadVector(devIndptr);
    // The selected count is known from the lengths: ceil(r * L).
    int64_t k = static_cast<int64_t>(std::ceil(cfg.topk_ratio *
                                               static_cast<double>(L)));
    std::vector<int32_t> qo{0, static_cast<int32_t>(k)};
    pa_prefill_plan_t *partial = nullptr, *full = nullptr;
    PA_RT(pa_prefill_plan(bundle, qo.data(), kvIndptr.data(), last.data(), 1,
                          k, &partial));
    std::vector<int32_t> qoFull{0, static_cast<int32_t>(L)};
    pa_bundle *fullBundle = bundle;
    bool fullPositions = true;
    if (!o.fullBundle.empty()) {
      PA_RT(pa_bundle_load(o.fullBundle.c_str(), &fullBundle));
      rt::Manifest fm;
      if (rt::Status st = rt::readManifest(o.fullBundle, fm); !st)
        throw Failure(st.message);
      const rt::KernelSpec *fk = fm.find(rt::KernelKind::Prefill);
      if (fm.config != c || !fk || !fk->prefill->causal)
        throw Failure("--full-bundle must be a causal prefill bundle of the "
                      "layer bundle's configuration");
      fullPositions = fk->hasRole(rt::ArgRole::QPositions);
    }
    PA_RT(pa_prefill_plan(fullBundle, qoFull.data(), kvIndptr.data(),
                          last.data(), 1, L, &full));
    std::vector<int32_t> arange(static_cast<size_t>(L));
    std::iota(arange.begin(), arange.end(), 0);
    DeviceBuffer dArange = uploadVector(arange);
    DeviceBuffer dQoFull = uploadVector(qoFull);
    PA_CU(cuStreamSynchronize(stream));

    pa_kv_deviation_args da{};
    da.new_rows = kNew.get();
    da.cached_rows = kOld.get();
    da.deviation = dev32.get();
    da.num_rows = L;
    pa_select_topk_args ta{};
    ta.deviation = dev32.get();
    ta.indptr = dDevIndptr.get();
    ta.positions = positions.get();
    ta.out_indptr = outIndptr.get();
    ta.batch = 1;
    ta.num_rows = L;
    // The selected tokens' recomputed rows: the first k rows of kNew / vNew
    // stand for them (the gather of recomputed rows is the caller's).
    pa_page_write_args sa{};
    sa.k_new = kNew.get();
    sa.v_new = vNew.get();
    sa.rows_indptr = outIndptr.get();
    sa.positions = positions.get();
    auto bindCache = [&](auto &x) {
      if (c.kv == rt::KVStorage::Joint) {
        x.kv = cache[0].get();
      } else {
        x.k = cache[0].get();
        x.v = cache[1].get();
      }
      if (c.fp8()) {
        x.k_scale = scales.get();
        x.v_scale = scales.get();
      }
      x.kv_indptr = dKvIndptr.get();
      x.kv_indices = dIndices.get();
      x.kv_last_page_len = dLast.get();
    };
    bindCache(sa);
    sa.num_rows = k;
    sa.batch = 1;
    sa.num_pages = pages;
    sa.nnz = pages;
    pa_prefill_args pa{};
    pa.q = q.get();
    pa.qo_indptr = outIndptr.get();
    bindCache(pa);
    pa.q_positions = positions.get();
    pa.o = o16.get();
    pa.lse = lse.get();
    pa.batch = 1;
    pa.num_query_rows = k;
    pa.num_q_heads = Hq;
    pa.head_dim = D;
    pa.num_pages = pages;
    pa.nnz = pages;
    if (pk->hasRole(rt::ArgRole::AlibiSlopes) ||
        pk->hasRole(rt::ArgRole::CustomMask))
      throw Failure("the layer's prefill takes no ALiBi / custom mask");
    auto stage = [&](int which) {
      if (which == 0)
        PA_RT(pa_kv_deviation(bundle, &da, stream));
      if (which == 1)
        PA_RT(pa_select_topk(bundle, &ta, stream));
      if (which == 2)
        PA_RT(pa_scatter_kv(bundle, &sa, stream));
      if (which == 3)
        PA_RT(pa_prefill_run(bundle, partial, &pa, stream));
    };
    Timing layer = timeCalls(stream, flush, o.warmup, o.reps, [&](int) {
      for (int st = 0; st < 4; ++st)
        stage(st);
    });
    Timing parts[4];
    for (int st = 0; st < 4; ++st)
      parts[st] = timeCalls(stream, flush, o.warmup, o.reps,
                            [&](int) { stage(st); });
    pa_prefill_args fa = pa;
    fa.qo_indptr = dQoFull.get();
    fa.q_positions = fullPositions ? dArange.get() : 0;
    fa.num_query_rows = L;
    Timing fullT = timeCalls(stream, flush, o.warmup, o.reps, [&](int) {
      PA_RT(pa_prefill_run(fullBundle, full, &fa, stream));
    });
    if (fullBundle != bundle)
      pa_bundle_free(fullBundle);
    // The selection the layer made (same inputs every call).
    std::vector<int32_t> got(2);
    outIndptr.download(got.data(), 8);
    pa_prefill_plan_free(partial);
    pa_prefill_plan_free(full);
    out("## PagedAttn CacheBlend layer benchmark");
    out("");
    out(fmt("- device: %s (sm_%d%d, %d SMs), %s", dev.name.c_str(),
            dev.ccMajor, dev.ccMinor, dev.smCount, utcNow().c_str()));
    out(fmt("- bundle: `%s` (%s), select_topk ratio %g", o.bundle.c_str(),
            c.str().c_str(), cfg.topk_ratio));
    out(fmt("- prompt: %" PRId64 " reused chunks x %" PRId64
            " tokens = %" PRId64 " tokens, one request; median of %d calls "
            "after >= %d warm-up calls, %s",
            o.chunks, o.chunkTokens, L, o.reps, o.warmup,
            flush.describe().c_str()));
    out(fmt("- recomputed: %d of %" PRId64 " tokens (%.1f%%)", got[1], L,
            100.0 * got[1] / static_cast<double>(L)));
    out("");
    out("| step | us |");
    out("|---|---:|");
    const char *names[4] = {"kv_deviation (K of every token)",
                            "select_topk", "scatter_kv (K and V)",
                            "partial prefill (selected queries, causal)"};
    for (int st = 0; st < 4; ++st)
      out(fmt("| %s | %.1f |", names[st], parts[st].medianUs));
    out(fmt("| **layer (the 4 steps, one stream)** | **%.1f** |",
            layer.medianUs));
    out(fmt("| full causal prefill of the prompt (%s) | %.1f |",
            fullPositions ? "the layer's kernel, positions 0..L-1"
                          : "a causal prefill bundle without positions",
            fullT.medianUs));
    out(fmt("| speedup of the layer over the full prefill | %.2fx |",
            fullT.medianUs / layer.medianUs));
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
