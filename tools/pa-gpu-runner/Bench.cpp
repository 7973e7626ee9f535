//===- Bench.cpp - the decode benchmark of pa-gpu-runner ------------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// `pa-gpu-runner bench BUNDLE_DIR`: batch x kv_len decode steps through the
// runtime's C API, with a random page order, against two ceilings measured
// in the same run (docs/Runtime.md, "Benchmark"):
//
//   * copy: cuMemcpyDtoDAsync of >= 4 GiB, bytes read + written;
//   * read roof: bench/roofs.cu's 16-byte-load read kernels over >= 4 GiB
//     (the faster of the read-only-path and streaming variants).
//
// Every timed call: L2 evicted first (L2Eviction, --l2-flush, outside the
// events), CUDA events around the call, input sets rotated; median of
// the timed calls after warm-up. Bandwidth = (K + V bytes read + q + o
// bytes) / time.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "GpuUtil.h"

#include "PagedAttn/Runtime/Bundle.h"
#include "PagedAttn/Runtime/pa_runtime.h"
#include "PagedAttn/TestSupport/Random.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace pa::runner;
namespace rt = pa::rt;
namespace ref = pa::ref;
namespace test = pa::test;

namespace {

/// Owned CUDA events.
struct EventPairs {
  std::vector<CUevent> start, stop;
  explicit EventPairs(int n) {
    start.resize(static_cast<size_t>(n), nullptr);
    stop.resize(static_cast<size_t>(n), nullptr);
    for (int i = 0; i < n; ++i) {
      PA_CU(cuEventCreate(&start[i], CU_EVENT_DEFAULT));
      PA_CU(cuEventCreate(&stop[i], CU_EVENT_DEFAULT));
    }
  }
  ~EventPairs() {
    for (CUevent e : start)
      if (e)
        cuEventDestroy(e);
    for (CUevent e : stop)
      if (e)
        cuEventDestroy(e);
  }
};

} // namespace

Timing pa::runner::timeCalls(CUstream stream, const L2Eviction &flush,
                             int warmup, int reps,
                             const std::function<void(int)> &call) {
  EventPairs ev(reps);
  // At least `warmup` calls, and more until they have run kMinWarmupMs.
  EventPairs warm(1);
  PA_CU(cuEventRecord(warm.start[0], stream));
  int calls = 0;
  for (float ms = 0; calls < warmup || ms < kMinWarmupMs;) {
    for (int n = std::max(warmup, 1); n > 0; --n, ++calls) {
      flush.evict(stream, static_cast<unsigned>(calls));
      call(calls);
    }
    PA_CU(cuEventRecord(warm.stop[0], stream));
    PA_CU(cuEventSynchronize(warm.stop[0]));
    PA_CU(cuEventElapsedTime(&ms, warm.start[0], warm.stop[0]));
    if (calls >= kMaxWarmupCalls)
      break;
  }
  warmup = calls;
  for (int i = 0; i < reps; ++i) {
    flush.evict(stream, static_cast<unsigned>(i + 7));
    PA_CU(cuEventRecord(ev.start[i], stream));
    call(warmup + i);
    PA_CU(cuEventRecord(ev.stop[i], stream));
  }
  PA_CU(cuStreamSynchronize(stream));
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    float ms = 0;
    PA_CU(cuEventElapsedTime(&ms, ev.start[i], ev.stop[i]));
    us.push_back(1000.0 * ms);
  }
  Timing t;
  t.medianUs = median(us);
  t.minUs = *std::min_element(us.begin(), us.end());
  t.maxUs = *std::max_element(us.begin(), us.end());
  return t;
}

namespace {

/// Bytes per microsecond -> GB/s (10^9 bytes per second).
double gbps(double bytes, double us) { return us > 0 ? bytes / us / 1e3 : 0; }

} // namespace

std::string pa::runner::fmt(const char *format, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(buf, sizeof(buf), format, ap);
  va_end(ap);
  return buf;
}

Ceilings pa::runner::measureCeilings(const BenchOptions &o,
                                     const Roofs &roofs, CUstream stream,
                                     const L2Eviction &flush) {
  Ceilings c;
  size_t bytes = static_cast<size_t>(o.ceilingGiB * kGiB) / 16 * 16;
  c.bytes = static_cast<double>(bytes);
  DeviceBuffer src(bytes), dst(bytes), sink(8);
  roofs.fillUniform(src.get(), bytes / 4, PA_DTYPE_F32, o.seed, -1.f, 1.f,
                    stream);
  PA_CU(cuMemsetD8Async(dst.get(), 0, bytes, stream));
  PA_CU(cuMemsetD8Async(sink.get(), 0, 8, stream));
  int reps = std::max(o.reps / 2, 10);

  Timing copy = timeCalls(stream, flush, 2, reps, [&](int) {
    PA_CU(cuMemcpyDtoDAsync(dst.get(), src.get(), bytes, stream));
  });
  c.copyGBs = gbps(2.0 * static_cast<double>(bytes), copy.medianUs);

  for (int variant = 0; variant < 2; ++variant) {
    Timing t = timeCalls(stream, flush, 2, reps, [&](int) {
      roofs.read(src.get(), bytes, sink.get(), stream, variant == 1);
    });
    (variant == 0 ? c.readNcGBs : c.readCsGBs) =
        gbps(static_cast<double>(bytes), t.medianUs);
  }
  c.readGBs = std::max(c.readNcGBs, c.readCsGBs);
  return c;
}

namespace {

/// One benchmark row.
struct Row {
  int64_t batch = 0, len = 0;
  std::string skipped;
  int sets = 0;
  pa_plan_info info{};
  Timing t;
  /// One read pass over as many contiguous bytes as the call's K and V
  /// (Roofs::read, same eviction): what device memory gives at this size.
  Timing sameBytesRead;
  double bytes = 0, gbs = 0;
  bool sane = true;
};

/// The KV arena of the decode benchmark (allocKVArena): room for
/// --max-sets input sets of the largest row within --max-kv-gib, leaving
/// 4 GiB free.
DeviceBuffer decodeKVArena(const BenchOptions &o, const rt::BundleConfig &c) {
  double need = 0;
  for (int64_t B : o.batches)
    for (int64_t L : o.lengths)
      if (double set = kvSetBytes(c, B, L); set <= o.maxKVGiB * kGiB)
        need = std::max(need, set * static_cast<double>(o.maxSets));
  return allocKVArena(need, 4.0 * kGiB);
}

Row benchOne(const BenchOptions &o, pa_bundle *bundle,
             const rt::BundleConfig &c, const Roofs &roofs, CUstream stream,
             const L2Eviction &flush, CUdeviceptr arena, size_t arenaBytes,
             int64_t B, int64_t L) {
  Row row;
  row.batch = B;
  row.len = L;
  const int64_t P = c.pageSize, Hkv = c.kvHeads, Hq = c.numQHeads(),
                D = c.headDim, eb = rt::elementBytes(c.dtype);
  // Bytes of a cache element: the dtype's, or 1 for an fp8 cache.
  const int64_t kvEb = cacheElementBytes(c);
  const int64_t ppr = (L + P - 1) / P;
  const int64_t pagesPerSet = B * ppr;
  const double pageBytes = 2.0 * P * Hkv * D * kvEb; // K and V
  const double setBytes = kvSetBytes(c, B, L);
  if (setBytes > o.maxKVGiB * kGiB) {
    row.skipped = fmt("KV %.3g GiB > %.3g GiB", setBytes / kGiB, o.maxKVGiB);
    return row;
  }
  int64_t sets = std::min<int64_t>(
      o.maxSets, static_cast<int64_t>(
                     std::floor(static_cast<double>(arenaBytes) / setBytes)));
  if (sets < 1) {
    row.skipped = fmt("KV %.3g GiB does not fit (KV arena %.3g GiB)",
                      setBytes / kGiB,
                      static_cast<double>(arenaBytes) / kGiB);
    return row;
  }
  int64_t numPages = sets * pagesPerSet;
  if (numPages > std::numeric_limits<int32_t>::max()) {
    row.skipped = "more than INT32_MAX pages";
    return row;
  }
  row.sets = static_cast<int>(sets);

  // The cache pool(s) in the arena: random contents, random page order
  // per set.
  bool joint = c.kv == rt::KVStorage::Joint;
  size_t poolBytes = static_cast<size_t>(pageBytes * static_cast<double>(numPages));
  DeviceSpan pool0{arena, joint ? poolBytes : poolBytes / 2};
  DeviceSpan pool1{arena + (joint ? 0 : poolBytes / 2),
                   joint ? 0 : poolBytes / 2};
  int dtype = fillDtype(c.dtype);
  int kvDtype = cacheFillDtype(c, dtype);
  roofs.fillUniform(pool0.get(), pool0.size() / kvEb, kvDtype, o.seed + 1,
                    -1.f, 1.f, stream);
  if (!joint)
    roofs.fillUniform(pool1.get(), pool1.size() / kvEb, kvDtype, o.seed + 2,
                      -1.f, 1.f, stream);
  DeviceBuffer dScales = benchScales(c);
  // One page table per set over the shared, shuffled pool: each set reads
  // its own pages, in a random order. Indptr and last_page_len are the same
  // for every set.
  test::Rng rng(test::mixSeed(o.seed, static_cast<uint64_t>(B),
                              static_cast<uint64_t>(L)));
  test::PagePool pages(rng, numPages);
  const std::vector<int64_t> lens(static_cast<size_t>(B), L);
  std::vector<ref::PageTable> tables;
  for (int64_t s = 0; s < sets; ++s)
    tables.push_back(test::makePageTable(rng, P, lens, pages));
  const std::vector<int32_t> &indptr = tables[0].indptr,
                             &last = tables[0].lastPageLen;
  DeviceBuffer dIndptr = uploadVector(indptr), dLast = uploadVector(last);
  std::vector<DeviceBuffer> dIndices, dQ, dO, dLse;
  size_t qBytes = static_cast<size_t>(B * Hq * D * eb);
  for (int64_t s = 0; s < sets; ++s) {
    dIndices.push_back(uploadVector(tables[static_cast<size_t>(s)].indices));
    dQ.emplace_back(qBytes);
    roofs.fillUniform(dQ.back().get(), qBytes / eb, dtype,
                      o.seed + 10 + static_cast<uint32_t>(s), -1.f, 1.f,
                      stream);
    dO.emplace_back(qBytes);
    dLse.emplace_back(static_cast<size_t>(B * Hq * 4));
  }
  PA_CU(cuStreamSynchronize(stream));

  pa_plan_options popts{};
  popts.ctas_per_sm = o.ctasPerSM;
  popts.force_chunk = o.forceChunk;
  popts.split_merge =
      o.splitMerge == "last" ? PA_SPLIT_MERGE_LAST : PA_SPLIT_MERGE_AUTO;
  pa_plan *plan = nullptr;
  PA_RT(pa_decode_plan(bundle, indptr.data(), last.data(), B, &popts, &plan));
  struct PlanGuard {
    pa_plan *p;
    ~PlanGuard() { pa_plan_free(p); }
  } guard{plan};
  PA_RT(pa_plan_get_info(plan, &row.info));

  auto call = [&](int i) {
    size_t s = static_cast<size_t>(i % sets);
    pa_decode_args a;
    std::memset(&a, 0, sizeof(a));
    a.q = dQ[s].get();
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
    a.o = dO[s].get();
    a.lse = dLse[s].get();
    a.batch = B;
    a.num_q_heads = Hq;
    a.head_dim = D;
    a.num_pages = numPages;
    a.nnz = pagesPerSet;
    a.checked = 0;
    PA_RT(pa_decode_run(bundle, plan, &a, stream));
  };
  row.t = timeCalls(stream, flush, o.warmup, o.reps, call);

  // Sanity: every lse of the first set is finite (a broken kernel that
  // returns early would otherwise look fast).
  std::vector<float> lse(static_cast<size_t>(B * Hq));
  dLse[0].download(lse.data(), lse.size() * 4);
  for (float v : lse)
    row.sane &= std::isfinite(v);

  double kvBytes = 2.0 * static_cast<double>(B) * L * Hkv * D * kvEb;
  DeviceBuffer sink(8);
  // The pools (K and V, or the joint one) lie back to back from `arena`.
  size_t readBytes =
      std::min(static_cast<size_t>(kvBytes), poolBytes) / 16 * 16;
  row.sameBytesRead = timeCalls(stream, flush, o.warmup, o.reps, [&](int) {
    roofs.read(arena, readBytes, sink.get(), stream);
  });
  row.bytes = kvBytes + 2.0 * static_cast<double>(qBytes);
  row.gbs = gbps(row.bytes, row.t.medianUs);
  return row;
}

} // namespace

bool pa::runner::writeReport(const std::string &path,
                             const std::string &report) {
  if (path.empty())
    return true;
  if (std::FILE *f = std::fopen(path.c_str(), "w")) {
    std::fputs(report.c_str(), f);
    std::fclose(f);
    return true;
  }
  std::fprintf(stderr, "cannot write %s\n", path.c_str());
  return false;
}

std::function<void(const std::string &)>
pa::runner::reportSink(std::string &report) {
  return [&report](const std::string &line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    report += line + "\n";
  };
}

int pa::runner::runBench(const BenchOptions &o) {
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
    pa_bundle_config bc{};
    PA_RT(pa_bundle_get_config(bundle, &bc));
    rt::Manifest m;
    if (rt::Status s = rt::readManifest(o.bundle, m); !s)
      throw Failure(s.message);
    const rt::BundleConfig &c = m.config;
    PA_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    L2Eviction flush(o.l2Flush, roofs);

    out("## PagedAttn decode benchmark");
    out("");
    out(fmt("- device: %s (sm_%d%d, %d SMs, L2 %.0f MiB, %.1f GiB, driver "
            "%d)",
            dev.name.c_str(), dev.ccMajor, dev.ccMinor, dev.smCount,
            static_cast<double>(dev.l2Bytes) / (1 << 20),
            static_cast<double>(dev.totalBytes) / kGiB, dev.driverVersion));
    out("- date: " + utcNow());
    out(fmt("- bundle: `%s` (%s, Hq %" PRId64 ", %s)", o.bundle.c_str(),
            c.str().c_str(), c.numQHeads(),
            bc.has_split_kernels ? "split-KV kernels" : "decode only"));
    out(fmt("- method: median of %d timed calls after %d warm-up calls, CUDA "
            "events around each call, %s, up to %d input sets "
            "(KV caches with their own random page order, in one KV arena "
            "allocated once for every row) rotated; "
            "GB/s = (K+V bytes read + q + o bytes) / time, 1 GB = 1e9 B; "
            "same-bytes read = one read pass over as many contiguous bytes "
            "as the row's K and V (the read roof's kernel, same eviction), "
            "%% of it = its time / the row's",
            o.reps, o.warmup, flush.describe().c_str(), o.maxSets));

    Ceilings ceil = measureCeilings(o, roofs, stream, flush);
    out(fmt("- read roof: **%.0f GB/s** (16-byte loads over %.3g GiB: "
            "read-only path %.0f, streaming %.0f)",
            ceil.readGBs, ceil.bytes / kGiB, ceil.readNcGBs, ceil.readCsGBs));
    out(fmt("- copy: **%.0f GB/s** (cuMemcpyDtoD of %.3g GiB, read + write "
            "counted)",
            ceil.copyGBs, ceil.bytes / kGiB));
    out("");
    out("| B | kv_len | Hq/Hkv | plan (chunk, items) | sets | time us | min us "
        "| GB/s | % read roof | % copy | same-bytes read us | % of it |");
    out("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    DeviceBuffer arena = decodeKVArena(o, c);
    for (int64_t B : o.batches)
      for (int64_t L : o.lengths) {
        Row r = benchOne(o, bundle, c, roofs, stream, flush, arena.get(),
                         arena.size(), B, L);
        std::string heads = fmt("%" PRId64 "/%" PRId64, c.numQHeads(),
                                c.kvHeads);
        if (!r.skipped.empty()) {
          out(fmt("| %" PRId64 " | %" PRId64 " | %s | skipped: %s | | | | | "
                  "| | | |",
                  B, L, heads.c_str(), r.skipped.c_str()));
          continue;
        }
        std::string planStr =
            r.info.split
                ? fmt("split %" PRId64 ", %" PRId64, r.info.chunk_size,
                      r.info.num_work_items)
                : fmt("one pass, %" PRId64, r.info.num_work_items);
        planStr += fmt(", %" PRId64 "/SM", r.info.ctas_per_sm);
        if (r.info.merge_together)
          planStr += ", together";
        out(fmt("| %" PRId64 " | %" PRId64 " | %s | %s | %d | %.1f | %.1f | "
                "%.0f | %.1f | %.1f | %.1f | %.1f |%s",
                B, L, heads.c_str(), planStr.c_str(), r.sets, r.t.medianUs,
                r.t.minUs, r.gbs, 100.0 * r.gbs / ceil.readGBs,
                100.0 * r.gbs / ceil.copyGBs, r.sameBytesRead.medianUs,
                100.0 * r.sameBytesRead.medianUs / r.t.medianUs,
                r.sane ? "" : " INVALID: non-finite lse"));
        if (!r.sane)
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
