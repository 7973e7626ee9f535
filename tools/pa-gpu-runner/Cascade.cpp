//===- Cascade.cpp - merge and cascade checks and benchmarks --------------===//
//
// Part of the PagedAttn project. See Cascade.h.
//
//===----------------------------------------------------------------------===//

#include "Cascade.h"

#include "Bench.h"
#include "Check.h"
#include "GpuUtil.h"

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
#include <functional>
#include <limits>
#include <numeric>

using namespace pa::runner;
namespace rt = pa::rt;
namespace ref = pa::ref;
namespace test = pa::test;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Running totals of one bundle's checks.
struct Tally {
  int passed = 0, total = 0;
  void record(bool ok) {
    ++total;
    passed += ok ? 1 : 0;
  }
};

/// Outputs of `rows` rows read back from the device.
Outputs readBack(const DeviceBuffer &o, const DeviceBuffer &lse, int64_t rows,
                 const rt::BundleConfig &c) {
  Outputs out;
  out.o.resize(static_cast<size_t>(rows * c.numQHeads() * c.headDim *
                                   rt::elementBytes(c.dtype)));
  out.lse.resize(static_cast<size_t>(rows * c.numQHeads()));
  if (rows > 0) {
    o.download(out.o.data(), out.o.size());
    lse.download(out.lse.data(), out.lse.size() * 4);
  }
  return out;
}

/// Random states of `n` rows x Hq heads: o in the dtype, lse uniform in
/// [-6, 6) with a fraction -inf (weight 0; their o is NaN where
/// `nanAtZeroWeight`, which the merge must never read into a result).
ref::States randomStates(test::Rng &rng, int64_t n, const rt::BundleConfig &c,
                         double zeroWeight) {
  ref::States s = ref::States::identity(n, c.numQHeads(), c.headDim);
  s.o = test::randomValues(rng, n * c.numQHeads() * c.headDim, c.dtype, -2, 2);
  for (double &l : s.lse)
    l = rng.chance(zeroWeight) ? kNegInf
                               : static_cast<double>(static_cast<float>(
                                     rng.uniform(-6, 6)));
  return s;
}

DeviceBuffer uploadLse(const std::vector<double> &lse) {
  std::vector<float> f(lse.begin(), lse.end());
  return uploadVector(f);
}

void printResult(const std::string &name, const Comparison &cmp,
                 const std::string &detail) {
  std::printf("  %-34s %-44s rel_o %.2e lse_err %.2e %s\n", name.c_str(),
              detail.c_str(), cmp.relO, cmp.maxLseErr,
              cmp.pass ? "PASS" : "FAIL");
  for (const std::string &p : cmp.problems)
    std::printf("      %s\n", p.c_str());
  std::fflush(stdout);
}

/// A call that must fail with a message containing `fragment`.
void expectRejected(const std::string &name, int rc,
                    const std::string &fragment, Tally &t) {
  std::string msg = pa_last_error();
  PA_CU(cuCtxSynchronize());
  std::string problem;
  if (rc == PA_SUCCESS)
    problem = "accepted (expected '" + fragment + "')";
  else if (msg.find(fragment) == std::string::npos)
    problem = "wrong message: '" + msg + "' (expected '" + fragment + "')";
  t.record(problem.empty());
  if (problem.empty())
    std::printf("  rejects: %-34s %s\n", name.c_str(), msg.c_str());
  else
    std::printf("  rejects: %-34s FAIL: %s\n", name.c_str(), problem.c_str());
}

//===----------------------------------------------------------------------===//
// check-cascade: merges
//===----------------------------------------------------------------------===//

void checkMerges(pa_bundle *bundle, const rt::BundleConfig &c, test::Rng &rng,
                 Tally &t) {
  const int64_t Hq = c.numQHeads(), D = c.headDim;
  for (int64_t rows : {1, 37, 300}) {
    for (double zero : {0.0, 0.3}) {
      ref::States a = randomStates(rng, rows, c, zero);
      ref::States b = randomStates(rng, rows, c, zero);
      ref::States expected = ref::merge(a, b);
      DeviceBuffer oa = uploadVector(test::toBytes(c.dtype, a.o));
      DeviceBuffer ob = uploadVector(test::toBytes(c.dtype, b.o));
      DeviceBuffer la = uploadLse(a.lse), lb = uploadLse(b.lse);
      DeviceBuffer o(static_cast<size_t>(rows * Hq * D *
                                         rt::elementBytes(c.dtype)));
      DeviceBuffer lse(static_cast<size_t>(rows * Hq * 4));
      poison(o.get(), rows * Hq * D, c.dtype);
      poison(lse.get(), rows * Hq, rt::DType::F32);
      pa_merge_args m{};
      m.o_a = oa.get();
      m.lse_a = la.get();
      m.o_b = ob.get();
      m.lse_b = lb.get();
      m.o = o.get();
      m.lse = lse.get();
      m.num_rows = rows;
      m.checked = 1;
      Comparison cmp;
      try {
        PA_RT(pa_merge(bundle, &m, nullptr));
        PA_CU(cuCtxSynchronize());
        cmp = compareStates(
            expected, readBack(o, lse, rows, c), c.dtype,
            [](int64_t r) { return fmt("row %" PRId64, r); }, false);
      } catch (const Failure &f) {
        cmp.problem(f.what());
      }
      t.record(cmp.pass);
      printResult(fmt("merge R=%" PRId64, rows), cmp,
                  fmt("%.0f%% weight-0 states", 100 * zero));
      if (rows == 37 && zero > 0) {
        // Rejections: a NaN lse in checked mode, a misaligned pointer.
        float nan = std::numeric_limits<float>::quiet_NaN();
        PA_CU(cuMemcpyHtoD(lb.get() + 4 * 5, &nan, 4));
        expectRejected("NaN lse (checked)", pa_merge(bundle, &m, nullptr),
                       "lse_b[5] = nan", t);
        pa_merge_args bad = m;
        bad.o_a += 2;
        bad.checked = 0;
        expectRejected("misaligned o_a", pa_merge(bundle, &bad, nullptr),
                       "not 16-byte aligned", t);
        // Outputs over inputs (checked mode; before the lse copies, so the
        // NaN above is not what fails).
        bad = m;
        bad.o = m.o_a;
        expectRejected("o over o_a (checked)", pa_merge(bundle, &bad, nullptr),
                       "overlaps 'o_a'", t);
        bad = m;
        bad.lse = m.lse_b;
        expectRejected("lse over lse_b (checked)",
                       pa_merge(bundle, &bad, nullptr), "overlaps 'lse_b'", t);
      }
    }
  }
  for (int64_t states : {0, 1, 5, 19}) {
    const int64_t rows = 23;
    // o_states [R, S, Hq, D], lse_states [R, S, Hq].
    std::vector<double> os = test::randomValues(rng, rows * states * Hq * D,
                                                c.dtype, -2, 2);
    std::vector<double> ls(static_cast<size_t>(rows * states * Hq));
    for (double &l : ls)
      l = rng.chance(0.2) ? kNegInf
                          : static_cast<double>(
                                static_cast<float>(rng.uniform(-6, 6)));
    ref::States expected = ref::mergeN(os, ls, rows, states, Hq, D);
    DeviceBuffer dos = uploadVector(test::toBytes(c.dtype, os));
    DeviceBuffer dls = uploadLse(ls);
    DeviceBuffer o(static_cast<size_t>(rows * Hq * D *
                                       rt::elementBytes(c.dtype)));
    DeviceBuffer lse(static_cast<size_t>(rows * Hq * 4));
    poison(o.get(), rows * Hq * D, c.dtype);
    poison(lse.get(), rows * Hq, rt::DType::F32);
    pa_merge_states_args m{};
    m.o_states = states ? dos.get() : 0;
    m.lse_states = states ? dls.get() : 0;
    m.o = o.get();
    m.lse = lse.get();
    m.num_rows = rows;
    m.num_states = states;
    m.checked = 1;
    Comparison cmp;
    try {
      PA_RT(pa_merge_states(bundle, &m, nullptr));
      PA_CU(cuCtxSynchronize());
      cmp = compareStates(
          expected, readBack(o, lse, rows, c), c.dtype,
          [](int64_t r) { return fmt("row %" PRId64, r); }, false);
    } catch (const Failure &f) {
      cmp.problem(f.what());
    }
    t.record(cmp.pass);
    printResult(fmt("merge_states R=%" PRId64 " S=%" PRId64, rows, states),
                cmp, "20% weight-0 states");
    if (states == 5) {
      // Rejections (checked mode): o over o_states, a NaN lse_states.
      pa_merge_states_args bad = m;
      bad.o = m.o_states;
      expectRejected("merge_states o over o_states",
                     pa_merge_states(bundle, &bad, nullptr),
                     "overlaps 'o_states'", t);
      float nan = std::numeric_limits<float>::quiet_NaN();
      PA_CU(cuMemcpyHtoD(dls.get() + 4 * 3, &nan, 4));
      expectRejected("merge_states NaN lse (checked)",
                     pa_merge_states(bundle, &m, nullptr),
                     "lse_states[3] = nan", t);
    }
  }
}

//===----------------------------------------------------------------------===//
// check-cascade: plan_split_kv (the split-KV work list on the device)
//===----------------------------------------------------------------------===//

/// pa_plan_split_kv against the host planner (planFixedChunks), exactly:
/// random batches with empty requests, 1-token requests, chunk boundaries.
void checkPlanSplitKV(pa_bundle *bundle, const rt::BundleConfig &c,
                      test::Rng &rng, Tally &t) {
  pa_bundle_config cfg;
  PA_RT(pa_bundle_get_config(bundle, &cfg));
  const int64_t P = c.pageSize, C = cfg.plan_chunk;
  for (int64_t batch : {1, 7, 300}) {
    std::vector<int64_t> lens;
    for (int64_t b = 0; b < batch; ++b) {
      int64_t pick = rng.uniformInt(0, 5);
      lens.push_back(pick == 0   ? 0
                     : pick == 1 ? 1
                     : pick == 2 ? C * rng.uniformInt(1, 3)
                                 : rng.uniformInt(1, 5 * C));
    }
    std::vector<int32_t> indptr{0}, last;
    for (int64_t len : lens) {
      int64_t pages = (len + P - 1) / P;
      indptr.push_back(static_cast<int32_t>(indptr.back() + pages));
      last.push_back(static_cast<int32_t>(pages ? len - (pages - 1) * P : 0));
    }
    int64_t nnz = indptr.back();
    int64_t cap = rt::workListBound(batch, nnz, P, C);
    rt::WorkList want = rt::planFixedChunks(lens, C);
    DeviceBuffer ip = uploadVector(indptr), lp = uploadVector(last);
    DeviceBuffer wi(static_cast<size_t>((batch + 1) * 4)),
        wr(static_cast<size_t>(std::max<int64_t>(cap, 1) * 4)),
        ws(static_cast<size_t>(std::max<int64_t>(cap, 1) * 4)),
        we(static_cast<size_t>(std::max<int64_t>(cap, 1) * 4));
    PA_CU(cuMemsetD8(wi.get(), 0xff, (batch + 1) * 4));
    pa_plan_split_kv_args a{};
    a.kv_indptr = ip.get();
    a.kv_last_page_len = lp.get();
    a.work_indptr = wi.get();
    a.work_request = wr.get();
    a.work_start = ws.get();
    a.work_end = we.get();
    a.batch = batch;
    a.work_capacity = cap;
    a.nnz = nnz;
    a.checked = 1;
    std::string name = fmt("plan_split_kv B=%" PRId64 " chunk %" PRId64,
                           batch, C);
    Comparison cmp;
    try {
      PA_RT(pa_plan_split_kv(bundle, &a, nullptr));
      std::vector<int32_t> gi(static_cast<size_t>(batch + 1));
      wi.download(gi.data(), gi.size() * 4);
      int64_t w = want.size();
      std::vector<int32_t> gr(static_cast<size_t>(w)), gs(gr.size()),
          ge(gr.size());
      wr.download(gr.data(), gr.size() * 4);
      ws.download(gs.data(), gs.size() * 4);
      we.download(ge.data(), ge.size() * 4);
      if (gi != want.indptr || gr != want.request || gs != want.start ||
          ge != want.end)
        cmp.problem(fmt("the work list differs from planFixedChunks (%" PRId64
                        " items expected, work_indptr[B] = %d)",
                        w, gi.back()));
    } catch (const Failure &f) {
      cmp.problem(f.what());
    }
    t.record(cmp.pass);
    printResult(name, cmp, fmt("%" PRId64 " items", want.size()));
    if (batch == 7) {
      pa_plan_split_kv_args bad = a;
      bad.work_capacity = cap - 1;
      expectRejected("work_capacity below the bound",
                     pa_plan_split_kv(bundle, &bad, nullptr),
                     "work_capacity = " + std::to_string(cap - 1), t);
      bad = a;
      bad.nnz = nnz + 1;
      bad.work_capacity = rt::workListBound(batch, nnz + 1, P, C);
      expectRejected("nnz against kv_indptr (checked)",
                     pa_plan_split_kv(bundle, &bad, nullptr),
                     "but nnz = " + std::to_string(nnz + 1), t);
    }
  }
}

//===----------------------------------------------------------------------===//
// check-cascade: cascades
//===----------------------------------------------------------------------===//

/// One cascade problem: the levels' segments (queries and keys per
/// segment), one paged cache holding every segment's pages, the oracle.
struct CascadeCase {
  std::string name;
  int64_t rows = 0;
  /// Per level: query and key counts of its segments.
  std::vector<std::vector<int64_t>> qoLens, kvLens;
  std::vector<std::vector<int32_t>> qoIndptrs;
  std::vector<ref::PageTable> tables;
  std::vector<double> q;
  HostCache cache;
  ref::States expected;
};

/// Requests [first, first + count) of `pt` as a page table of their own.
ref::PageTable slice(const ref::PageTable &pt, int64_t first, int64_t count) {
  ref::PageTable s;
  s.pageSize = pt.pageSize;
  int32_t base = pt.indptr[first];
  for (int64_t b = first; b <= first + count; ++b)
    s.indptr.push_back(pt.indptr[b] - base);
  s.indices.assign(pt.indices.begin() + base,
                   pt.indices.begin() + pt.indptr[first + count]);
  s.lastPageLen.assign(pt.lastPageLen.begin() + first,
                       pt.lastPageLen.begin() + first + count);
  return s;
}

CascadeCase makeCascade(const std::string &name,
                        const std::vector<std::vector<int64_t>> &qoLens,
                        const std::vector<std::vector<int64_t>> &kvLens,
                        const rt::BundleConfig &c, test::Rng &rng) {
  CascadeCase cs;
  cs.name = name;
  cs.qoLens = qoLens;
  cs.kvLens = kvLens;
  std::vector<int64_t> all;
  for (const auto &l : kvLens)
    all.insert(all.end(), l.begin(), l.end());
  cs.cache = makeHostCache(all, c, rng, /*finiteSlack=*/false);
  int64_t first = 0;
  for (size_t l = 0; l < qoLens.size(); ++l) {
    cs.qoIndptrs.push_back(test::indptrOf(qoLens[l]));
    int64_t count = static_cast<int64_t>(kvLens[l].size());
    cs.tables.push_back(slice(cs.cache.pt, first, count));
    first += count;
  }
  cs.rows = cs.qoIndptrs[0].back();
  cs.q = test::randomValues(rng, cs.rows * c.numQHeads() * c.headDim, c.dtype,
                            -3, 3);
  cs.expected = ref::cascade(cs.q, c.numQHeads(), cs.qoIndptrs, cs.tables,
                             cs.cache.kv, ref::AttnOptions());
  return cs;
}

/// Device copies of a CascadeCase.
struct DeviceCascade {
  DeviceBuffer q, cache[2], scales[2], o, lse;
  std::vector<DeviceBuffer> qo, indptr, indices, last;
  std::vector<pa_cascade_level_args> levels;
};

void uploadCascade(const CascadeCase &cs, const rt::BundleConfig &c,
                   DeviceCascade &d) {
  d.q = uploadVector(test::toBytes(c.dtype, cs.q));
  for (size_t i = 0; i < cs.cache.buffers.size(); ++i)
    d.cache[i] = uploadVector(cs.cache.buffers[i]);
  if (c.fp8()) {
    d.scales[0] = uploadVector(cs.cache.kScale);
    d.scales[1] = uploadVector(cs.cache.vScale);
  }
  for (size_t l = 0; l < cs.tables.size(); ++l) {
    d.qo.push_back(uploadVector(cs.qoIndptrs[l]));
    d.indptr.push_back(uploadVector(cs.tables[l].indptr));
    d.indices.push_back(uploadVector(cs.tables[l].indices));
    d.last.push_back(uploadVector(cs.tables[l].lastPageLen));
  }
  for (size_t l = 0; l < cs.tables.size(); ++l)
    d.levels.push_back({d.qo[l].get(), d.indptr[l].get(), d.indices[l].get(),
                        d.last[l].get(), cs.tables[l].indptr.back()});
  int64_t n = cs.rows * c.numQHeads();
  d.o.allocate(static_cast<size_t>(n * c.headDim * rt::elementBytes(c.dtype)));
  d.lse.allocate(static_cast<size_t>(n * 4));
}

pa_cascade_args cascadeArgs(const CascadeCase &cs, const DeviceCascade &d,
                            const rt::BundleConfig &c) {
  pa_cascade_args a{};
  a.q = d.q.get();
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
  a.levels = d.levels.data();
  a.num_levels = static_cast<int64_t>(d.levels.size());
  a.o = d.o.get();
  a.lse = d.lse.get();
  a.num_query_rows = cs.rows;
  a.num_q_heads = c.numQHeads();
  a.head_dim = c.headDim;
  a.num_pages = cs.cache.numPages;
  a.checked = 1;
  return a;
}

std::vector<pa_cascade_level> hostLevels(const CascadeCase &cs) {
  std::vector<pa_cascade_level> v;
  for (size_t l = 0; l < cs.tables.size(); ++l)
    v.push_back({cs.qoIndptrs[l].data(), cs.tables[l].indptr.data(),
                 cs.tables[l].lastPageLen.data(),
                 static_cast<int64_t>(cs.qoLens[l].size())});
  return v;
}

void runCascadeCase(pa_bundle *bundle, const rt::BundleConfig &c,
                    const CascadeCase &cs, Tally &t) {
  DeviceCascade d;
  uploadCascade(cs, c, d);
  pa_cascade_plan_t *plan = nullptr;
  std::string levels;
  std::string planError;
  try {
    std::vector<pa_cascade_level> host = hostLevels(cs);
    PA_RT(pa_cascade_plan(bundle, host.data(),
                          static_cast<int64_t>(host.size()), cs.rows, &plan));
    for (size_t l = 0; l < host.size(); ++l) {
      pa_cascade_level_info info;
      PA_RT(pa_cascade_plan_get_level(plan, static_cast<int64_t>(l), &info));
      levels += fmt("%s%s%s", l ? " + " : "",
                    info.kind == PA_CASCADE_LEVEL_DECODE ? "decode"
                                                         : "prefill",
                    info.split ? fmt("/split %" PRId64, info.num_work_items)
                                     .c_str()
                               : "");
    }
  } catch (const Failure &f) {
    planError = f.what();
  }
  // Levels concurrent on the plan's streams without checked mode (whose
  // host syncs could hide a missing join), then serial and checked.
  for (int serial = 0; serial < 2; ++serial) {
    Comparison cmp;
    try {
      if (!planError.empty())
        throw Failure(planError);
      poison(d.o.get(), cs.rows * c.numQHeads() * c.headDim, c.dtype);
      poison(d.lse.get(), cs.rows * c.numQHeads(), rt::DType::F32);
      pa_cascade_args a = cascadeArgs(cs, d, c);
      a.serial = serial;
      a.checked = serial;
      PA_RT(pa_cascade_run(bundle, plan, &a, nullptr));
      // The caller's stream alone: the plan's streams are non-blocking, so
      // a level not joined back would show as a poisoned o.
      PA_CU(cuStreamSynchronize(nullptr));
      cmp = compareStates(
          cs.expected, readBack(d.o, d.lse, cs.rows, c), c.dtype,
          [](int64_t r) { return fmt("query row %" PRId64, r); }, false);
    } catch (const Failure &f) {
      cmp.problem(f.what());
    }
    t.record(cmp.pass);
    printResult(cs.name + (serial ? " serial" : ""), cmp, levels);
  }
  if (cs.name.rfind("2 levels", 0) == 0 && plan) {
    // Rejections, on the first case: the run against the plan and checked
    // mode on the device tables.
    pa_cascade_args a = cascadeArgs(cs, d, c);
    pa_cascade_args bad = a;
    bad.num_levels = a.num_levels + 1;
    expectRejected("num_levels != plan", pa_cascade_run(bundle, plan, &bad,
                                                        nullptr),
                   "num_levels = " + std::to_string(a.num_levels + 1), t);
    bad = a;
    bad.num_query_rows = cs.rows + 1;
    expectRejected("num_query_rows != plan",
                   pa_cascade_run(bundle, plan, &bad, nullptr),
                   "num_query_rows = " + std::to_string(cs.rows + 1), t);
    if (!cs.tables[1].indices.empty()) {
      int32_t oob = static_cast<int32_t>(cs.cache.numPages);
      PA_CU(cuMemcpyHtoD(d.indices[1].get(), &oob, 4));
      expectRejected("level 1 page out of range",
                     pa_cascade_run(bundle, plan, &a, nullptr),
                     "level 1 (decode): kv_indices[0] = " +
                         std::to_string(oob) + " out of range",
                     t);
    }
    std::vector<pa_cascade_level> host = hostLevels(cs);
    std::vector<int32_t> qo = cs.qoIndptrs[0];
    qo.back() -= 1;
    host[0].qo_indptr = qo.data();
    pa_cascade_plan_t *badPlan = nullptr;
    expectRejected("level qo_indptr short of Nq",
                   pa_cascade_plan(bundle, host.data(),
                                   static_cast<int64_t>(host.size()), cs.rows,
                                   &badPlan),
                   "level 0: qo_indptr runs from 0 to " +
                       std::to_string(cs.rows - 1),
                   t);
    pa_cascade_plan_free(badPlan);
  }
  pa_cascade_plan_free(plan);
}

/// The cascades: `B` requests under one shared prefix (level 0, one
/// segment of all B queries) with their own suffixes (level 1, decode);
/// a 3-level form with a middle level of groups.
void checkCascades(pa_bundle *bundle, const rt::BundleConfig &c,
                   test::Rng &rng, Tally &t) {
  auto twoLevels = [&](const std::string &name, int64_t batch,
                       int64_t prefix, int64_t maxSuffix) {
    std::vector<int64_t> suffix;
    for (int64_t b = 0; b < batch; ++b)
      suffix.push_back(rng.uniformInt(0, maxSuffix));
    std::vector<int64_t> ones(static_cast<size_t>(batch), 1);
    runCascadeCase(bundle, c,
                   makeCascade(fmt("%s B=%" PRId64 " S=%" PRId64,
                                   name.c_str(), batch, prefix),
                               {{batch}, ones}, {{prefix}, suffix}, c, rng),
                   t);
  };
  twoLevels("2 levels", 8, rng.uniformInt(1, 400), 120);
  twoLevels("2 levels, short prefix", 40, 5, 40);
  twoLevels("2 levels, empty prefix", 6, 0, 50);
  twoLevels("2 levels, long prefix", 64, 4096, 256);
  {
    // 3 levels: all 12 queries share a prefix, groups of 4 a second one
    // (prefill segments of 4 queries), each its own suffix (decode).
    std::vector<int64_t> groups = {rng.uniformInt(0, 150),
                                   rng.uniformInt(0, 150),
                                   rng.uniformInt(0, 150)};
    std::vector<int64_t> suffix, ones(12, 1);
    for (int b = 0; b < 12; ++b)
      suffix.push_back(rng.uniformInt(1, 60));
    runCascadeCase(bundle, c,
                   makeCascade("3 levels B=12", {{12}, {4, 4, 4}, ones},
                               {{rng.uniformInt(1, 300)}, groups, suffix}, c,
                               rng),
                   t);
  }
  {
    // One level of one query per segment: plain decode into o / lse.
    std::vector<int64_t> lens, ones(9, 1);
    for (int b = 0; b < 9; ++b)
      lens.push_back(rng.uniformInt(0, 200));
    runCascadeCase(bundle, c, makeCascade("1 level B=9", {ones}, {lens}, c, rng),
                   t);
  }
}

} // namespace

int pa::runner::runCheckCascade(const CheckCascadeOptions &o) {
  std::printf("check-cascade: seed %" PRIu64 "\n", o.seed);
  int failed = 0;
  try {
    PA_RT(pa_init(o.device));
  } catch (const Failure &f) {
    std::printf("FATAL: %s\n", f.what());
    return 2;
  }
  for (const std::string &dir : o.bundles) {
    pa_bundle *bundle = nullptr;
    Tally t;
    std::string fatal;
    try {
      rt::Manifest m;
      if (rt::Status s = rt::readManifest(dir, m); !s)
        throw Failure(s.message);
      std::printf("bundle %s (%s)\n", dir.c_str(), m.config.str().c_str());
      PA_RT(pa_bundle_load(dir.c_str(), &bundle));
      if (!m.find(rt::KernelKind::Merge) ||
          !m.find(rt::KernelKind::MergeStates) ||
          !m.find(rt::KernelKind::Prefill) || !m.find(rt::KernelKind::Decode))
        throw Failure("the bundle lacks decode, prefill, merge or "
                      "merge_states (pa-compile --kernels all)");
      test::Rng rng(test::mixSeed(o.seed, std::hash<std::string>()(dir)));
      checkMerges(bundle, m.config, rng, t);
      if (m.find(rt::KernelKind::PlanSplitKV))
        checkPlanSplitKV(bundle, m.config, rng, t);
      checkCascades(bundle, m.config, rng, t);
    } catch (const Failure &f) {
      fatal = f.what();
    }
    pa_bundle_free(bundle);
    bool pass = fatal.empty() && t.passed == t.total;
    if (!fatal.empty())
      std::printf("  FATAL: %s\n", fatal.c_str());
    std::printf("%s %s: %d / %d passed\n", pass ? "PASS" : "FAIL", dir.c_str(),
                t.passed, t.total);
    failed += pass ? 0 : 1;
  }
  return failed ? 1 : 0;
}

//===----------------------------------------------------------------------===//
// bench-cascade
//===----------------------------------------------------------------------===//

namespace {

/// The device side of one benchmark shape: a cache of the shared prefix's
/// pages and every request's own, in one random order; the cascade's two
/// levels and the full tables of the plain decode.
struct CascadeShape {
  int64_t S = 0, U = 0, B = 0, pages = 0;
  std::vector<int32_t> qo0, ip0, ix0, lp0, qo1, ip1, ix1, lp1, ipf, ixf, lpf;
};

CascadeShape shapeOf(int64_t S, int64_t U, int64_t B, int64_t P,
                     test::Rng &rng) {
  CascadeShape s;
  s.S = S;
  s.U = U;
  s.B = B;
  int64_t ns = S / P, nu = (U + P - 1) / P;
  s.pages = ns + B * nu;
  std::vector<int32_t> perm(static_cast<size_t>(s.pages));
  std::iota(perm.begin(), perm.end(), 0);
  rng.shuffle(perm);
  s.qo0 = {0, static_cast<int32_t>(B)};
  s.ip0 = {0, static_cast<int32_t>(ns)};
  s.ix0.assign(perm.begin(), perm.begin() + ns);
  s.lp0 = {static_cast<int32_t>(P)};
  int32_t last = static_cast<int32_t>(nu ? U - (nu - 1) * P : 0);
  s.ipf = {0};
  s.qo1 = {0};
  s.ip1 = {0};
  for (int64_t b = 0; b < B; ++b) {
    s.qo1.push_back(static_cast<int32_t>(b + 1));
    auto own = perm.begin() + ns + b * nu;
    s.ix1.insert(s.ix1.end(), own, own + nu);
    s.ip1.push_back(static_cast<int32_t>(s.ix1.size()));
    s.lp1.push_back(last);
    s.ixf.insert(s.ixf.end(), s.ix0.begin(), s.ix0.end());
    s.ixf.insert(s.ixf.end(), own, own + nu);
    s.ipf.push_back(static_cast<int32_t>(s.ixf.size()));
    s.lpf.push_back(nu ? last : static_cast<int32_t>(P));
  }
  return s;
}

bool parseCase(const std::string &text, int64_t &S, int64_t &U, int64_t &B) {
  return std::sscanf(text.c_str(), "%" SCNd64 ":%" SCNd64 ":%" SCNd64, &S, &U,
                     &B) == 3 &&
         S > 0 && U > 0 && B > 0;
}

} // namespace

int pa::runner::runBenchCascade(const BenchCascadeOptions &o) {
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
    const int64_t P = c.pageSize, Hq = c.numQHeads(), D = c.headDim;
    PA_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    L2Eviction flush(o.l2Flush, roofs);
    out("## PagedAttn cascade and merge benchmark");
    out("");
    out(fmt("- device: %s (sm_%d%d, %d SMs), %s", dev.name.c_str(),
            dev.ccMajor, dev.ccMinor, dev.smCount, utcNow().c_str()));
    out(fmt("- bundle: `%s` (%s)", o.bundle.c_str(), c.str().c_str()));
    out(fmt("- method: median of %d timed calls after >= %d warm-up calls, "
            "%s; random uniform q and cache, one random page order",
            o.reps, o.warmup, flush.describe().c_str()));
    BenchOptions bo;
    bo.reps = o.reps;
    bo.seed = o.seed;
    Ceilings ceil = measureCeilings(bo, roofs, stream, flush);
    out(fmt("- copy: **%.0f GB/s** (cuMemcpyDtoD, read + write counted)",
            ceil.copyGBs));
    out("- cascade: pa_cascade_run of 2 levels (level 0 = the shared prefix "
        "of S tokens, one segment of all B queries, run as prefill; level 1 "
        "= each request's U tokens, run as decode, on a stream of the plan "
        "concurrent with level 0; one merge); serial levels: the same with "
        "pa_cascade_args.serial = 1; plain decode: "
        "pa_decode_run over the full tables (each request's = the shared "
        "pages, then its own); max |diff| compares their o");
    out("");
    out("| S | U | B | Hq/Hkv | levels (plan) | cascade us | serial levels "
        "us | prefix level us | suffix level us | plain decode us | speedup | "
        "max abs diff |");
    out("|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|");
    test::Rng rng(o.seed);
    for (const std::string &text : o.cases) {
      int64_t S = 0, U = 0, B = 0;
      if (!parseCase(text, S, U, B) || S % P != 0)
        throw Failure("bad case '" + text +
                      "' (S:U:B, positive, S a multiple of the page size)");
      CascadeShape s = shapeOf(S, U, B, P, rng);
      test::CacheGeometry g = test::CacheGeometry::of(c);
      int64_t eb = cacheElementBytes(c);
      std::vector<DeviceBuffer> cache;
      for (int i = 0; i < g.numBuffers(); ++i) {
        cache.emplace_back(
            static_cast<size_t>(g.bufferElements(s.pages) * eb));
        roofs.fillUniform(cache.back().get(),
                          static_cast<uint64_t>(g.bufferElements(s.pages)),
                          cacheFillDtype(c, fillDtype(c.dtype)),
                          o.seed + static_cast<uint32_t>(i), -1.f, 1.f,
                          stream);
      }
      DeviceBuffer scales = benchScales(c);
      int64_t n = B * Hq * D;
      int64_t nb = rt::elementBytes(c.dtype);
      DeviceBuffer q(static_cast<size_t>(n * nb));
      roofs.fillUniform(q.get(), static_cast<uint64_t>(n), fillDtype(c.dtype),
                        o.seed + 7, -2.f, 2.f, stream);
      DeviceBuffer oc(static_cast<size_t>(n * nb)), od(static_cast<size_t>(n * nb));
      DeviceBuffer lc(static_cast<size_t>(B * Hq * 4)),
          ld(static_cast<size_t>(B * Hq * 4));
      DeviceBuffer qo0 = uploadVector(s.qo0), ip0 = uploadVector(s.ip0),
                   ix0 = uploadVector(s.ix0), lp0 = uploadVector(s.lp0),
                   qo1 = uploadVector(s.qo1), ip1 = uploadVector(s.ip1),
                   ix1 = uploadVector(s.ix1), lp1 = uploadVector(s.lp1),
                   ipf = uploadVector(s.ipf), ixf = uploadVector(s.ixf),
                   lpf = uploadVector(s.lpf);
      PA_CU(cuStreamSynchronize(stream));

      pa_cascade_level host[2] = {
          {s.qo0.data(), s.ip0.data(), s.lp0.data(), 1},
          {s.qo1.data(), s.ip1.data(), s.lp1.data(), B}};
      pa_cascade_plan_t *cplan = nullptr;
      PA_RT(pa_cascade_plan(bundle, host, 2, B, &cplan));
      std::string levels;
      for (int l = 0; l < 2; ++l) {
        pa_cascade_level_info info;
        PA_RT(pa_cascade_plan_get_level(cplan, l, &info));
        levels += fmt("%s%s%s", l ? " + " : "",
                      info.kind == PA_CASCADE_LEVEL_DECODE ? "decode"
                                                           : "prefill",
                      info.split ? fmt(" (split, chunk %" PRId64
                                       ", %" PRId64 " items)",
                                       info.chunk, info.num_work_items)
                                       .c_str()
                                 : "");
      }
      pa_cascade_level_args la[2] = {
          {qo0.get(), ip0.get(), ix0.get(), lp0.get(),
           static_cast<int64_t>(s.ix0.size())},
          {qo1.get(), ip1.get(), ix1.get(), lp1.get(),
           static_cast<int64_t>(s.ix1.size())}};
      pa_cascade_args ca{};
      ca.q = q.get();
      if (c.kv == rt::KVStorage::Joint) {
        ca.kv = cache[0].get();
      } else {
        ca.k = cache[0].get();
        ca.v = cache[1].get();
      }
      if (c.fp8()) {
        ca.k_scale = scales.get();
        ca.v_scale = scales.get();
      }
      ca.levels = la;
      ca.num_levels = 2;
      ca.o = oc.get();
      ca.lse = lc.get();
      ca.num_query_rows = B;
      ca.num_q_heads = Hq;
      ca.head_dim = D;
      ca.num_pages = s.pages;
      // Levels one after the other, then concurrent (the default; its o
      // is the one compared with the plain decode's).
      ca.serial = 1;
      Timing tser = timeCalls(stream, flush, o.warmup, o.reps, [&](int) {
        PA_RT(pa_cascade_run(bundle, cplan, &ca, stream));
      });
      ca.serial = 0;
      Timing tc = timeCalls(stream, flush, o.warmup, o.reps, [&](int) {
        PA_RT(pa_cascade_run(bundle, cplan, &ca, stream));
      });
      pa_cascade_plan_free(cplan);

      // The levels alone, planned as pa_cascade_plan plans them: the
      // prefix as a prefill of all B queries, the suffixes as decode.
      pa_prefill_plan_t *pplan = nullptr;
      PA_RT(pa_prefill_plan(bundle, s.qo0.data(), s.ip0.data(), s.lp0.data(),
                            1, B, &pplan));
      pa_prefill_args pa{};
      pa.q = q.get();
      pa.qo_indptr = qo0.get();
      pa.kv = ca.kv;
      pa.k = ca.k;
      pa.v = ca.v;
      pa.k_scale = ca.k_scale;
      pa.v_scale = ca.v_scale;
      pa.kv_indptr = ip0.get();
      pa.kv_indices = ix0.get();
      pa.kv_last_page_len = lp0.get();
      pa.o = od.get();
      pa.lse = ld.get();
      pa.batch = 1;
      pa.num_query_rows = B;
      pa.num_q_heads = Hq;
      pa.head_dim = D;
      pa.num_pages = s.pages;
      pa.nnz = static_cast<int64_t>(s.ix0.size());
      Timing tp = timeCalls(stream, flush, o.warmup, o.reps, [&](int) {
        PA_RT(pa_prefill_run(bundle, pplan, &pa, stream));
      });
      pa_prefill_plan_free(pplan);
      pa_plan *splan = nullptr;
      PA_RT(pa_decode_plan(bundle, s.ip1.data(), s.lp1.data(), B, nullptr,
                           &splan));
      // Decode arguments over one of the shape's tables (the suffixes, or
      // the full tables of the plain decode), on the same cache and q.
      auto decodeArgs = [&](const DeviceBuffer &ip, const DeviceBuffer &ix,
                            const DeviceBuffer &lp, int64_t nnz) {
        pa_decode_args d{};
        d.q = q.get();
        d.kv = ca.kv;
        d.k = ca.k;
        d.v = ca.v;
        d.k_scale = ca.k_scale;
        d.v_scale = ca.v_scale;
        d.kv_indptr = ip.get();
        d.kv_indices = ix.get();
        d.kv_last_page_len = lp.get();
        d.o = od.get();
        d.lse = ld.get();
        d.batch = B;
        d.num_q_heads = Hq;
        d.head_dim = D;
        d.num_pages = s.pages;
        d.nnz = nnz;
        return d;
      };
      pa_decode_args sa =
          decodeArgs(ip1, ix1, lp1, static_cast<int64_t>(s.ix1.size()));
      Timing ts = timeCalls(stream, flush, o.warmup, o.reps, [&](int) {
        PA_RT(pa_decode_run(bundle, splan, &sa, stream));
      });
      pa_plan_free(splan);
      if (o.noPlain) {
        out(fmt("| %" PRId64 " | %" PRId64 " | %" PRId64 " | %" PRId64
                "/%" PRId64 " | %s | %.1f | %.1f | %.1f | %.1f | | | |",
                S, U, B, Hq, c.kvHeads, levels.c_str(), tc.medianUs,
                tser.medianUs, tp.medianUs, ts.medianUs));
        continue;
      }

      pa_plan *dplan = nullptr;
      PA_RT(pa_decode_plan(bundle, s.ipf.data(), s.lpf.data(), B, nullptr,
                           &dplan));
      pa_decode_args da =
          decodeArgs(ipf, ixf, lpf, static_cast<int64_t>(s.ixf.size()));
      Timing td = timeCalls(stream, flush, o.warmup, o.reps, [&](int) {
        PA_RT(pa_decode_run(bundle, dplan, &da, stream));
      });
      pa_plan_free(dplan);
      PA_CU(cuStreamSynchronize(stream));
      std::vector<uint8_t> hc(static_cast<size_t>(n * nb)),
          hd(static_cast<size_t>(n * nb));
      oc.download(hc.data(), hc.size());
      od.download(hd.data(), hd.size());
      double diff = 0;
      for (int64_t i = 0; i < n; ++i) {
        double x = test::loadElement(hc.data(), i, c.dtype),
               y = test::loadElement(hd.data(), i, c.dtype);
        diff = std::isnan(x) || std::isnan(y)
                   ? std::numeric_limits<double>::infinity()
                   : std::max(diff, std::fabs(x - y));
      }
      out(fmt("| %" PRId64 " | %" PRId64 " | %" PRId64 " | %" PRId64
              "/%" PRId64
              " | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1fx | %.1e |",
              S, U, B, Hq, c.kvHeads, levels.c_str(), tc.medianUs,
              tser.medianUs, tp.medianUs, ts.medianUs, td.medianUs, td.medianUs / tc.medianUs, diff));
    }

    out("");
    out("| merge | rows x Hq x D | bytes | time us | GB/s | % copy |");
    out("|---|---|---:|---:|---:|---:|");
    int64_t nb = rt::elementBytes(c.dtype);
    for (int64_t rows : o.mergeRows) {
      int64_t n = rows * Hq * D;
      const int64_t S = 4; // merge_states: states per row
      DeviceBuffer a(static_cast<size_t>(n * nb * S)),
          la(static_cast<size_t>(rows * Hq * 4 * S)),
          b(static_cast<size_t>(n * nb)), lb(static_cast<size_t>(rows * Hq * 4)),
          ob(static_cast<size_t>(n * nb)),
          lo(static_cast<size_t>(rows * Hq * 4));
      roofs.fillUniform(a.get(), static_cast<uint64_t>(n * S),
                        fillDtype(c.dtype), o.seed, -1.f, 1.f, stream);
      roofs.fillUniform(b.get(), static_cast<uint64_t>(n), fillDtype(c.dtype),
                        o.seed + 1, -1.f, 1.f, stream);
      roofs.fillUniform(la.get(), static_cast<uint64_t>(rows * Hq * S),
                        PA_DTYPE_F32, o.seed + 2, -4.f, 4.f, stream);
      roofs.fillUniform(lb.get(), static_cast<uint64_t>(rows * Hq),
                        PA_DTYPE_F32, o.seed + 3, -4.f, 4.f, stream);
      pa_merge_args ma{};
      ma.o_a = a.get();
      ma.lse_a = la.get();
      ma.o_b = b.get();
      ma.lse_b = lb.get();
      ma.o = ob.get();
      ma.lse = lo.get();
      ma.num_rows = rows;
      Timing t = timeCalls(stream, flush, o.warmup, o.reps, [&](int) {
        PA_RT(pa_merge(bundle, &ma, stream));
      });
      double bytes = 3.0 * static_cast<double>(n * nb) +
                     3.0 * static_cast<double>(rows * Hq * 4);
      double gbs = bytes / (t.medianUs * 1e3);
      out(fmt("| merge (2 states) | %" PRId64 " x %" PRId64 " x %" PRId64
              " | %.3g MB | %.1f | %.0f | %.1f |",
              rows, Hq, D, bytes / 1e6, t.medianUs, gbs,
              100 * gbs / ceil.copyGBs));
      pa_merge_states_args ms{};
      ms.o_states = a.get();
      ms.lse_states = la.get();
      ms.o = ob.get();
      ms.lse = lo.get();
      ms.num_rows = rows;
      ms.num_states = S;
      t = timeCalls(stream, flush, o.warmup, o.reps, [&](int) {
        PA_RT(pa_merge_states(bundle, &ms, stream));
      });
      bytes = static_cast<double>(S + 1) *
              static_cast<double>(n * nb + rows * Hq * 4);
      gbs = bytes / (t.medianUs * 1e3);
      out(fmt("| merge_states (S = %" PRId64 ") | %" PRId64 " x %" PRId64
              " x %" PRId64 " | %.3g MB | %.1f | %.0f | %.1f |",
              S, rows, Hq, D, bytes / 1e6, t.medianUs, gbs,
              100 * gbs / ceil.copyGBs));
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
