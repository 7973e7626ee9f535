//===- MLA.cpp - MLA decode checks and benchmark of pa-gpu-runner ---------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#include "MLA.h"

#include "Bench.h"
#include "Check.h"
#include "GpuUtil.h"

#include "PagedAttn/Reference/Reference.h"
#include "PagedAttn/Runtime/Bundle.h"
#include "PagedAttn/Runtime/Planner.h"
#include "PagedAttn/Runtime/pa_runtime.h"
#include "PagedAttn/TestSupport/Numbers.h"
#include "PagedAttn/TestSupport/Random.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>

using namespace pa;
using namespace pa::runner;

namespace {

/// The options an MLA bundle was compiled with (its prefill line).
ref::MLAOptions mlaOptions(const rt::KernelSpec &k) {
  ref::MLAOptions o;
  o.smScale = k.prefill->smScale;
  if (k.prefill->softCap > 0)
    o.logitsSoftCap = k.prefill->softCap;
  o.lseBase2 = k.prefill->lseBase2;
  return o;
}

/// One random MLA case on the host: a page pool 1.5x the pages needed in a
/// random order (unused pages NaN), values in [-1, 1) rounded to the dtype.
struct MLACase {
  ref::PagedMLA kv;
  ref::PageTable pt;
  std::vector<double> qNope, qPe;
  int64_t batch = 0;
};

MLACase makeCase(const rt::BundleConfig &c, const std::vector<int64_t> &lens,
                 test::Rng &rng) {
  MLACase m;
  m.batch = static_cast<int64_t>(lens.size());
  int64_t P = c.pageSize, H = c.numQHeads();
  int64_t needed = 0;
  for (int64_t l : lens)
    needed += (l + P - 1) / P;
  int64_t pool = std::max<int64_t>(1, needed + needed / 2);
  m.kv = ref::PagedMLA(pool, P, c.headDim, c.kpeDim);
  std::fill(m.kv.data.begin(), m.kv.data.end(),
            std::numeric_limits<double>::quiet_NaN());
  std::vector<int32_t> order(static_cast<size_t>(pool));
  for (int64_t i = 0; i < pool; ++i)
    order[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  rng.shuffle(order);
  m.pt.pageSize = P;
  m.pt.indptr.push_back(0);
  size_t next = 0;
  for (int64_t l : lens) {
    int64_t pages = (l + P - 1) / P;
    for (int64_t p = 0; p < pages; ++p) {
      int32_t page = order[next++];
      m.pt.indices.push_back(page);
      int64_t used = p + 1 < pages ? P : l - p * P;
      for (int64_t s = 0; s < used; ++s)
        for (int64_t d = 0; d < m.kv.rowDim(); ++d)
          m.kv.data[static_cast<size_t>(m.kv.offset(page, s, d))] =
              test::roundTo(c.dtype, rng.uniform(-1, 1));
    }
    m.pt.indptr.push_back(static_cast<int32_t>(m.pt.indices.size()));
    m.pt.lastPageLen.push_back(
        static_cast<int32_t>(pages ? l - (pages - 1) * P : 0));
  }
  for (int64_t i = 0; i < m.batch * H * c.headDim; ++i)
    m.qNope.push_back(test::roundTo(c.dtype, rng.uniform(-1, 1)));
  for (int64_t i = 0; i < m.batch * H * c.kpeDim; ++i)
    m.qPe.push_back(test::roundTo(c.dtype, rng.uniform(-1, 1)));
  return m;
}

/// Device copies of a case and its outputs.
struct DeviceMLA {
  DeviceBuffer qNope, qPe, cache, indptr, indices, last, o, lse, workspace;
  int64_t numPages = 0, nnz = 0, batch = 0, maxLen = 0;

  DeviceMLA(const rt::BundleConfig &c, const MLACase &m) {
    qNope = uploadVector(test::toBytes(c.dtype, m.qNope));
    qPe = uploadVector(test::toBytes(c.dtype, m.qPe));
    cache = uploadVector(test::toBytes(c.dtype, m.kv.data));
    indptr = uploadVector(m.pt.indptr);
    indices = uploadVector(m.pt.indices);
    last = uploadVector(m.pt.lastPageLen);
    batch = m.batch;
    numPages = m.kv.numPages;
    nnz = static_cast<int64_t>(m.pt.indices.size());
    int64_t H = c.numQHeads();
    o.allocate(static_cast<size_t>(batch * H * c.headDim *
                                   rt::elementBytes(c.dtype)));
    lse.allocate(static_cast<size_t>(batch * H * 4));
    for (int64_t b = 0; b < batch; ++b)
      maxLen = std::max(maxLen, m.pt.kvLen(b));
    // Room for any split count the checks ask for (at most kMaxSplits).
    workspace.allocate(static_cast<size_t>(
        rt::mlaWorkspace(batch, H, c.headDim, kMaxSplits).bytes));
  }
  static constexpr int64_t kMaxSplits = 64;
  /// `splits` 0: automatic (with the longest request's length as the
  /// hint); the workspace holds up to kMaxSplits.
  pa_mla_decode_args args(bool checked, int64_t splits = 0) const {
    pa_mla_decode_args a{};
    a.q_nope = qNope.get();
    a.q_pe = qPe.get();
    a.ckv_kpe = cache.get();
    a.kv_indptr = indptr.get();
    a.kv_indices = indices.get();
    a.kv_last_page_len = last.get();
    a.o = o.get();
    a.lse = lse.get();
    a.batch = batch;
    a.num_pages = numPages;
    a.nnz = nnz;
    a.checked = checked ? 1 : 0;
    a.num_splits = splits;
    a.max_kv_len = maxLen;
    a.workspace = workspace.get();
    a.workspace_bytes = static_cast<int64_t>(workspace.size());
    return a;
  }
};

/// Runs one case (unchecked or checked) and compares with the oracle.
bool runCase(pa_bundle *bundle, const rt::BundleConfig &c,
             const ref::MLAOptions &opts, const std::vector<int64_t> &lens,
             test::Rng &rng, const std::string &name) {
  MLACase m = makeCase(c, lens, rng);
  ref::States expected =
      ref::mlaDecode(m.qNope, m.qPe, c.numQHeads(), m.kv, m.pt, opts);
  DeviceMLA d(c, m);
  bool ok = true;
  // Automatic splits unchecked and checked, then no split and forced ones
  // (7: chunks of a few tiles; 13: an odd count; 64: most CTAs without
  // keys), merged together where the grid fits (split_merge auto), and by
  // the last CTA of each request alone.
  struct Run {
    int64_t splits;
    bool checked, last;
  };
  const Run runs[] = {{0, false, false}, {0, true, false}, {1, false, false},
                      {7, false, false}, {13, false, false},
                      {64, true, false}, {0, false, true},  {7, false, true},
                      {13, true, true}};
  for (auto [splits, checked, last] : runs) {
    int64_t H = c.numQHeads();
    poison(d.o.get(), m.batch * H * c.headDim, c.dtype);
    poison(d.lse.get(), m.batch * H, rt::DType::F32);
    // Garbage in the workspace (counters included) must not matter.
    PA_CU(cuMemsetD8(d.workspace.get(), 0xA5, d.workspace.size()));
    pa_mla_decode_args a = d.args(checked, splits);
    a.split_merge = last ? PA_MLA_MERGE_LAST : PA_MLA_MERGE_AUTO;
    PA_RT(pa_mla_decode(bundle, &a, nullptr));
    PA_CU(cuCtxSynchronize());
    Outputs out;
    out.o.resize(static_cast<size_t>(m.batch * H * c.headDim *
                                     rt::elementBytes(c.dtype)));
    out.lse.resize(static_cast<size_t>(m.batch * H));
    d.o.download(out.o.data(), out.o.size());
    d.lse.download(out.lse.data(), out.lse.size() * 4);
    Comparison cmp = compareStates(
        expected, out, c.dtype,
        [](int64_t row) { return "request " + std::to_string(row); },
        /*finiteSlack=*/false);
    std::string how = splits == 0 ? "auto splits" : fmt("%" PRId64 " splits",
                                                         splits);
    std::printf("  %-32s %-13s%s%s: rel o %.2e, max |lse err| %.2e: %s\n",
                name.c_str(), how.c_str(), checked ? " checked" : "",
                last ? " last-CTA merge" : "", cmp.relO, cmp.maxLseErr,
                cmp.pass ? "PASS" : "FAIL");
    for (const std::string &p : cmp.problems)
      std::printf("    %s\n", p.c_str());
    ok &= cmp.pass;
  }
  return ok;
}

bool checkBundle(const std::string &dir, uint64_t seed) {
  pa_bundle *bundle = nullptr;
  bool ok = true;
  try {
    PA_RT(pa_bundle_load(dir.c_str(), &bundle));
    rt::Manifest m;
    if (rt::Status s = rt::readManifest(dir, m); !s)
      throw Failure(s.message);
    const rt::BundleConfig &c = m.config;
    std::printf("bundle %s: %s\n", dir.c_str(), c.str().c_str());
    const rt::KernelSpec *k = m.find(rt::KernelKind::MLADecode);
    if (!c.mla() || !k) {
      std::printf("  not an MLA bundle: skipped\n");
      pa_bundle_free(bundle);
      return true;
    }
    ref::MLAOptions opts = mlaOptions(*k);
    test::Rng rng(seed);
    int64_t P = c.pageSize;
    std::vector<std::pair<std::string, std::vector<int64_t>>> cases = {
        {"B 1, 1 token", {1}},
        {"B 3, empty / 63 / 64 tokens", {0, 63, 64}},
        {"B 4, 65 / P-1 / P+1 / 2P", {65, std::max<int64_t>(P - 1, 1), P + 1,
                                      2 * P}},
        {"B 2, all empty", {0, 0}},
    };
    std::vector<int64_t> ragged;
    for (int i = 0; i < 9; ++i)
      ragged.push_back(rng.chance(0.15) ? 0 : rng.uniformInt(1, 3000));
    cases.push_back({"B 9, ragged 0..3000", ragged});
    cases.push_back({"B 2, 8192 / 4099 tokens", {8192, 4099}});
    for (const auto &[name, lens] : cases)
      ok &= runCase(bundle, c, opts, lens, rng, name);

    // Checked mode names a page outside the cache.
    MLACase bad = makeCase(c, {70, 5}, rng);
    bad.pt.indices[1] = static_cast<int32_t>(bad.kv.numPages);
    DeviceMLA d(c, bad);
    pa_mla_decode_args a = d.args(/*checked=*/true);
    int rc = pa_mla_decode(bundle, &a, nullptr);
    std::string msg = pa_last_error();
    bool named = rc != PA_SUCCESS &&
                 msg.find("kv_indices[1]") != std::string::npos;
    std::printf("  checked mode, kv_indices[1] = num_pages: %s (%s)\n",
                named ? "rejected" : "FAIL", msg.c_str());
    ok &= named;
  } catch (const std::exception &e) {
    std::printf("  FAIL: %s\n", e.what());
    ok = false;
  }
  pa_bundle_free(bundle);
  return ok;
}

} // namespace

int pa::runner::runCheckMLA(const CheckMLAOptions &opts) {
  return runBundleChecks("check-mla", opts.seed, opts.device, opts.bundles,
                         checkBundle);
}

int pa::runner::runBenchMLA(const BenchMLAOptions &o) {
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
    if (!c.mla())
      throw Failure("bench-mla needs an MLA bundle (pa-compile --kernels "
                    "mla), got " + c.str());
    PA_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    L2Eviction flush(o.l2Flush, roofs);
    out("## PagedAttn MLA decode benchmark");
    out("");
    out(fmt("- device: %s (sm_%d%d, %d SMs), %s", dev.name.c_str(),
            dev.ccMajor, dev.ccMinor, dev.smCount, utcNow().c_str()));
    out(fmt("- bundle: `%s` (%s)", o.bundle.c_str(), c.str().c_str()));
    out(fmt("- method: pa_mla_decode, B requests of L tokens, pages in a "
            "random order, random values, %d input sets rotated; median of "
            "%d timed calls after >= %d warm-up calls, CUDA events, %s; "
            "splits: %s, merged by %s. Bytes = latent cache rows + q + o; "
            "TFLOP/s = 2 B H L (D_ckv + D_kpe + D_ckv) / time",
            o.maxSets, o.reps, o.warmup, flush.describe().c_str(),
            o.splits == 0 ? "automatic (max_kv_len = L)"
                          : std::to_string(o.splits).c_str(),
            o.splitMerge == "last"
                ? "the last CTA of a request"
                : "all CTAs together where the grid fits at once"));
    BenchOptions bo;
    bo.reps = o.reps;
    bo.seed = o.seed;
    Ceilings ceil = measureCeilings(bo, roofs, stream, flush);
    out(fmt("- read roof: **%.0f GB/s**", ceil.readGBs));
    out("");
    out("| B | L | H | time us | min us | GB/s | % read roof | TFLOP/s |");
    out("|---:|---:|---:|---:|---:|---:|---:|---:|");
    int64_t H = c.numQHeads(), P = c.pageSize, W = c.headDim + c.kpeDim;
    int64_t eb = rt::elementBytes(c.dtype);
    test::Rng rng(o.seed);
    for (int64_t B : o.batches)
      for (int64_t L : o.lengths) {
        int64_t pagesPer = (L + P - 1) / P, pages = B * pagesPer;
        struct Set {
          DeviceBuffer cache, indices;
        };
        std::vector<Set> sets(static_cast<size_t>(o.maxSets));
        std::vector<int32_t> indptr, last;
        for (int64_t b = 0; b <= B; ++b)
          indptr.push_back(static_cast<int32_t>(b * pagesPer));
        for (int64_t b = 0; b < B; ++b)
          last.push_back(static_cast<int32_t>(L - (pagesPer - 1) * P));
        for (Set &s : sets) {
          s.cache.allocate(static_cast<size_t>(pages * P * W * eb));
          roofs.fillUniform(s.cache.get(),
                            static_cast<uint64_t>(pages * P * W),
                            fillDtype(c.dtype), o.seed + 7, -1.f, 1.f,
                            stream);
          std::vector<int32_t> order(static_cast<size_t>(pages));
          for (int64_t i = 0; i < pages; ++i)
            order[static_cast<size_t>(i)] = static_cast<int32_t>(i);
          rng.shuffle(order);
          s.indices = uploadVector(order);
        }
        DeviceBuffer dIndptr = uploadVector(indptr),
                     dLast = uploadVector(last);
        DeviceBuffer qNope(static_cast<size_t>(B * H * c.headDim * eb)),
            qPe(static_cast<size_t>(B * H * c.kpeDim * eb)),
            oBuf(static_cast<size_t>(B * H * c.headDim * eb)),
            lse(static_cast<size_t>(B * H * 4));
        roofs.fillUniform(qNope.get(),
                          static_cast<uint64_t>(B * H * c.headDim),
                          fillDtype(c.dtype), o.seed + 1, -1.f, 1.f, stream);
        roofs.fillUniform(qPe.get(), static_cast<uint64_t>(B * H * c.kpeDim),
                          fillDtype(c.dtype), o.seed + 2, -1.f, 1.f, stream);
        int64_t wsBytes = 0;
        PA_RT(pa_mla_workspace_bytes(bundle, B, o.splits, &wsBytes));
        DeviceBuffer ws(static_cast<size_t>(std::max<int64_t>(wsBytes, 1)));
        Timing t = timeCalls(stream, flush, o.warmup, o.reps, [&](int i) {
          const Set &s = sets[static_cast<size_t>(i) % sets.size()];
          pa_mla_decode_args a{};
          a.q_nope = qNope.get();
          a.q_pe = qPe.get();
          a.ckv_kpe = s.cache.get();
          a.kv_indptr = dIndptr.get();
          a.kv_indices = s.indices.get();
          a.kv_last_page_len = dLast.get();
          a.o = oBuf.get();
          a.lse = lse.get();
          a.batch = B;
          a.num_pages = pages;
          a.nnz = pages;
          a.num_splits = o.splits;
          a.max_kv_len = L;
          a.workspace = ws.get();
          a.workspace_bytes = wsBytes;
          a.split_merge =
              o.splitMerge == "last" ? PA_MLA_MERGE_LAST : PA_MLA_MERGE_AUTO;
          PA_RT(pa_mla_decode(bundle, &a, stream));
        });
        double bytes = static_cast<double>(B) * L * W * eb +
                       static_cast<double>(B) * H * (2 * c.headDim +
                                                     c.kpeDim) * eb;
        double gbs = bytes / (t.medianUs * 1e3);
        double flops = 2.0 * B * H * L * (2 * c.headDim + c.kpeDim);
        out(fmt("| %" PRId64 " | %" PRId64 " | %" PRId64
                " | %.1f | %.1f | %.0f | %.1f | %.1f |",
                B, L, H, t.medianUs, t.minUs, gbs, 100 * gbs / ceil.readGBs,
                flops / (t.medianUs * 1e6)));
      }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench-mla: %s\n", e.what());
    rc = 1;
  }
  if (stream)
    cuStreamDestroy(stream);
  pa_bundle_free(bundle);
  if (rc == 0 && !writeReport(o.out, report))
    rc = 1;
  return rc;
}
