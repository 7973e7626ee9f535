//===- AutoCascadeTest.cpp - automatic cascade vs plain attention ---------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// Differential test of the automatic cascade (pa::rt::buildAutoCascade,
// docs/PagePool.md): random batches with shared prefixes are built through
// the page pool (prompts from a few templates, so prefix caching shares their
// full pages; forks, so sequences share pages and copy-on-write their last
// page), then every request appends its query tokens. The batch runs twice
// through the CPU lowering:
//   * plain: pa.decode (one query per request) or causal pa.prefill (1..3
//     queries) over the full CSR tables of the pool;
//   * cascade: pa.cascade over the levels buildAutoCascade emits (the rows
//     of q permuted into its request order; causal on the last level for
//     prefill).
// The cascade's (o, lse), permuted back, must equal the plain run's within
// the project's tolerances, and the plain run must match the float64 oracle.
// Cases where the batch shares nothing (a one-level cascade) are counted
// apart: most cases must share.
//
//===----------------------------------------------------------------------===//

#include "JitHarness.h"

#include "PagedAttn/Runtime/PagePool.h"

#include "gtest/gtest.h"

#include <map>

using namespace pa_cpu_test;

namespace {

constexpr int kConfigs = 12;
constexpr int kCasesPerConfig = 12;
constexpr int64_t kMaxLevels = 4;

struct Cfg {
  CacheConfig cache;
  bool prefill = false; // causal prefill with 1..3 queries, else decode
  std::string str() const {
    return cache.str() + (prefill ? " causal-prefill" : " decode");
  }
};

struct IrTypes {
  explicit IrTypes(const Cfg &c)
      : q("tensor<?x?x" + std::to_string(c.cache.headDim) + "x" +
          elemName(c.cache.elem) + ">"),
        lse("tensor<?x?xf32>"), idx("tensor<?xi32>"),
        cache(c.cache.tensorType()) {}
  std::string q, lse, idx, cache;
};

std::string kvArgs(const Cfg &c, const IrTypes &t) {
  return c.cache.joint ? "%k: " + t.cache
                       : "%k: " + t.cache + ", %v: " + t.cache;
}
std::string kvOperands(const Cfg &c, const IrTypes &t) {
  return c.cache.joint ? "kv(%k : " + t.cache + ")"
                       : "kv(%k, %v : " + t.cache + ", " + t.cache + ")";
}
std::string attrs(const Cfg &c) {
  return "{cache = " + c.cache.attr() + (c.prefill ? ", causal}" : "}");
}
std::string tail(const Cfg &c, const IrTypes &t) {
  return " outs(%o0, %l0 : " + t.q + ", " + t.lse + ") " + attrs(c) +
         "\n  return %r#0, %r#1 : " + t.q + ", " + t.lse + "\n}\n";
}
std::string outsSig(const IrTypes &t) {
  return ", %o0: " + t.q + ", %l0: " + t.lse + ") -> (" + t.q + ", " + t.lse +
         ") attributes {llvm.emit_c_interface} {\n";
}

/// pa.decode or causal pa.prefill over one CSR table.
std::string plainModule(const Cfg &c) {
  IrTypes t(c);
  std::ostringstream os;
  std::string pages = " pages(%ip, %ix, %lp : " + t.idx + ", " + t.idx +
                      ", " + t.idx + ")";
  if (c.prefill) {
    os << "func.func @plain(%q: " << t.q << ", %qo: " << t.idx << ", "
       << kvArgs(c, t) << ", %ip: " << t.idx << ", %ix: " << t.idx
       << ", %lp: " << t.idx << outsSig(t);
    os << "  %r:2 = pa.prefill q(%q, %qo : " << t.q << ", " << t.idx << ") "
       << kvOperands(c, t) << pages << tail(c, t);
  } else {
    os << "func.func @plain(%q: " << t.q << ", " << kvArgs(c, t)
       << ", %ip: " << t.idx << ", %ix: " << t.idx << ", %lp: " << t.idx
       << outsSig(t);
    os << "  %r:2 = pa.decode q(%q : " << t.q << ") " << kvOperands(c, t)
       << pages << tail(c, t);
  }
  return os.str();
}

/// pa.cascade with L levels (causal on the last level for prefill).
std::string cascadeModule(const Cfg &c, int64_t L) {
  IrTypes t(c);
  auto list = [&](const char *p) {
    std::string s;
    for (int64_t l = 0; l < L; ++l)
      s += (l ? ", %" : "%") + std::string(p) + std::to_string(l);
    return s;
  };
  std::string types;
  for (int64_t l = 0; l < L; ++l)
    types += (l ? ", " : "") + t.idx;
  std::ostringstream os;
  os << "func.func @cascade(%q: " << t.q << ", " << kvArgs(c, t);
  for (const char *p : {"qo", "ip", "ix", "lp"})
    for (int64_t l = 0; l < L; ++l)
      os << ", %" << p << l << ": " << t.idx;
  os << outsSig(t);
  os << "  %r:2 = pa.cascade q(%q : " << t.q << ") " << kvOperands(c, t)
     << " qo_indptrs(" << list("qo") << " : " << types << ")"
     << " kv_indptrs(" << list("ip") << " : " << types << ")"
     << " kv_indices(" << list("ix") << " : " << types << ")"
     << " kv_last_page_lens(" << list("lp") << " : " << types << ")"
     << tail(c, t);
  return os.str();
}

Cfg randomConfig(Rng &rng, int idx) {
  Cfg c;
  c.cache = randomCacheConfig(rng, idx, {8, 16, 32, 12});
  // Small pages give deep sharing within a short batch.
  if (c.cache.pageSize > 8)
    c.cache.pageSize = rng.uniformInt(1, 8);
  c.prefill = idx % 3 == 2;
  return c;
}

/// Counts of cascade shapes over the whole test.
struct ShapeStats {
  int64_t cases = 0, shared = 0, maxLevels = 0, cascadePages = 0,
          flatPages = 0, reordered = 0;
};

/// A random batch through the pool: returns its sequence ids (in a random
/// order) and qo lengths; "" or a harness error.
std::string buildBatch(Rng &rng, pa::rt::PagePool &pool, int64_t P,
                       bool prefill, std::vector<int64_t> &ids,
                       std::vector<int32_t> &qoLens) {
  std::vector<std::vector<int32_t>> templates(rng.uniformInt(1, 3));
  for (auto &t : templates)
    for (int64_t i = 0, n = rng.uniformInt(P, 6 * P + 3); i < n; ++i)
      t.push_back(static_cast<int32_t>(rng.uniformInt(0, 50)));
  const int64_t B = rng.uniformInt(1, 9);
  int32_t fresh = 1000;
  for (int64_t b = 0; b < B; ++b) {
    int64_t id = 0;
    if (!ids.empty() && rng.chance(0.3)) {
      if (pa::rt::Status s = pool.fork(rng.pick(ids), id); !s)
        return "fork: " + s.message;
    } else {
      const auto &t = rng.pick(templates);
      std::vector<int32_t> toks(
          t.begin(), t.begin() + rng.uniformInt(0, static_cast<int64_t>(t.size())));
      for (int64_t i = 0, n = rng.uniformInt(0, 2 * P); i < n; ++i)
        toks.push_back(fresh++);
      int64_t cached = 0;
      std::vector<int32_t> slots;
      if (pa::rt::Status s =
              pool.addSequence(toks.data(), static_cast<int64_t>(toks.size()),
                               id, cached, slots);
          !s)
        return "add: " + s.message;
    }
    ids.push_back(id);
  }
  // The step's queries: 1 (decode) or 1..3 new tokens per request.
  std::vector<int64_t> counts;
  std::vector<int32_t> toks;
  for (size_t b = 0; b < ids.size(); ++b) {
    counts.push_back(prefill ? rng.uniformInt(1, 3) : 1);
    qoLens.push_back(static_cast<int32_t>(counts.back()));
    for (int64_t i = 0; i < counts.back(); ++i)
      toks.push_back(fresh++);
  }
  std::vector<int32_t> slots;
  std::vector<pa::rt::PageCopy> copies;
  if (pa::rt::Status s = pool.append(ids.data(), counts.data(),
                                     static_cast<int64_t>(ids.size()),
                                     toks.data(), slots, copies);
      !s)
    return "append: " + s.message;
  // A random request order (the cascade must reorder where needed).
  std::vector<size_t> perm(ids.size());
  for (size_t i = 0; i < perm.size(); ++i)
    perm[i] = i;
  if (rng.chance(0.5))
    rng.shuffle(perm);
  std::vector<int64_t> ids2;
  std::vector<int32_t> qo2;
  for (size_t i : perm) {
    ids2.push_back(ids[i]);
    qo2.push_back(qoLens[i]);
  }
  ids = ids2;
  qoLens = qo2;
  return "";
}

std::string runCase(JitModule &plain, const Cfg &c, Rng &rng, int caseIdx,
                    OpStats &plainStats, OpStats *const cascadeStats[2],
                    ShapeStats &shapes) {
  const int64_t P = c.cache.pageSize, D = c.cache.headDim;
  const int64_t numPages = 160;
  std::unique_ptr<pa::rt::PagePool> pool;
  pa::rt::PagePoolConfig pc;
  pc.numPages = numPages;
  pc.pageSize = P;
  if (pa::rt::Status s = pa::rt::PagePool::create(pc, pool); !s)
    return "harness bug: " + s.message;
  std::vector<int64_t> ids;
  std::vector<int32_t> qoLens;
  if (std::string e = buildBatch(rng, *pool, P, c.prefill, ids, qoLens);
      !e.empty())
    return "harness bug: " + e;
  const int64_t B = static_cast<int64_t>(ids.size());
  pa::rt::CsrTable full;
  if (pa::rt::Status s = pa::rt::buildCsrTable(*pool, ids.data(), B, full); !s)
    return "csr table: " + s.message;
  pa::rt::AutoCascadeOptions opts;
  opts.maxLevels = kMaxLevels;
  opts.minSharePages = caseIdx % 4 == 3 ? 2 : 1;
  pa::rt::AutoCascade ac;
  if (pa::rt::Status s = pa::rt::buildAutoCascade(
          full.indptr, full.indices, full.lastPageLen, B, P, numPages,
          c.prefill ? qoLens.data() : nullptr, opts, ac);
      !s)
    return "auto cascade: " + s.message;
  const int64_t L = static_cast<int64_t>(ac.levels.size());
  ++shapes.cases;
  shapes.shared += L > 1;
  shapes.maxLevels = std::max(shapes.maxLevels, L);
  shapes.cascadePages += ac.cascadePages;
  shapes.flatPages += ac.flatPages;
  for (int64_t r = 0; r < B; ++r)
    if (ac.order[r] != r) {
      ++shapes.reordered;
      break;
    }

  // Inputs: a random cache, q in the batch's order.
  std::vector<int32_t> qoIndptr{0};
  for (int32_t q : qoLens)
    qoIndptr.push_back(qoIndptr.back() + q);
  const int64_t Nq = qoIndptr.back();
  ref::PagedKV kv;
  std::vector<HostArray> cache;
  randomCache(rng, c.cache, numPages, kv, cache);
  const int64_t Hq = c.cache.kvHeads * rng.uniformInt(1, 4);
  std::vector<double> q =
      randomValues(rng, Nq * Hq * D, c.cache.elem, -2, 2);
  HostArray qArr = HostArray::fromDoubles(c.cache.elem, q, {Nq, Hq, D});

  ref::PageTable pt;
  pt.indptr = full.indptr;
  pt.indices = full.indices;
  pt.lastPageLen = full.lastPageLen;
  pt.pageSize = P;
  std::ostringstream d;
  d << "B=" << B << " Hq=" << Hq << " qo_len=" << join(qoLens) << " "
    << describeTable(pt) << " | order=" << join(ac.order);
  for (int64_t l = 0; l < L; ++l)
    d << " | level " << l << ": qo_indptr=" << join(ac.levels[l].qoIndptr)
      << " kv_indptr=" << join(ac.levels[l].table.indptr)
      << " kv_indices=" << join(ac.levels[l].table.indices)
      << " last=" << join(ac.levels[l].table.lastPageLen);
  const std::string desc = d.str();

  // Plain run over the full tables, checked against the oracle.
  PageTableArrays pta = pageTableArrays(pt);
  HostArray qoArr = HostArray::fromI32(qoIndptr);
  HostArray o(c.cache.elem, {Nq, Hq, D}), lse(Elem::F32, {Nq, Hq});
  o.fillBytes(0xFF);
  lse.fillBytes(0xFF);
  std::vector<HostArray *> args{&qArr};
  if (c.prefill)
    args.push_back(&qoArr);
  for (HostArray &a : cache)
    args.push_back(&a);
  args.insert(args.end(), {&pta.indptr, &pta.indices, &pta.lastPageLen, &o,
                           &lse});
  if (std::string err = plain.call("plain", args); !err.empty())
    return "plain: " + err + " (" + desc + ")";
  ref::AttnOptions ro;
  ro.mask = c.prefill ? ref::MaskMode::Causal : ref::MaskMode::None;
  if (std::string e = checkAgainstOracle(
          [&] {
            return c.prefill ? ref::prefill(q, Hq, qoIndptr, kv, pt, ro)
                             : ref::decode(q, Hq, kv, pt, ro);
          },
          o, lse, Nq, c.cache.elem, plainStats, desc);
      !e.empty())
    return "plain vs oracle: " + e;

  // The cascade: q's rows in the cascade's request order.
  std::vector<int64_t> rowMap; // cascade row -> batch row
  for (int64_t r = 0; r < B; ++r) {
    const int32_t b = ac.order[r];
    for (int32_t i = qoIndptr[b]; i < qoIndptr[b + 1]; ++i)
      rowMap.push_back(i);
  }
  if (static_cast<int64_t>(rowMap.size()) != Nq)
    return "cascade rows: " + std::to_string(rowMap.size()) + " != " +
           std::to_string(Nq);
  const int64_t rowElems = Hq * D;
  std::vector<double> qc(static_cast<size_t>(Nq * rowElems));
  for (int64_t r = 0; r < Nq; ++r)
    std::copy(q.begin() + rowMap[r] * rowElems,
              q.begin() + (rowMap[r] + 1) * rowElems,
              qc.begin() + r * rowElems);
  HostArray qcArr = HostArray::fromDoubles(c.cache.elem, qc, {Nq, Hq, D});
  // The plain run's states, permuted into cascade order, as the expected
  // states of the cascade.
  ref::States plainStates;
  plainStates.n = Nq;
  plainStates.numHeads = Hq;
  plainStates.headDim = D;
  for (int64_t r = 0; r < Nq; ++r) {
    for (int64_t i = 0; i < rowElems; ++i)
      plainStates.o.push_back(o.get(rowMap[r] * rowElems + i));
    for (int64_t h = 0; h < Hq; ++h)
      plainStates.lse.push_back(lse.get(rowMap[r] * Hq + h));
  }
  std::vector<HostArray> qoA, ipA, ixA, lpA;
  for (const pa::rt::CascadeLevel &lv : ac.levels) {
    qoA.push_back(HostArray::fromI32(lv.qoIndptr));
    ipA.push_back(HostArray::fromI32(lv.table.indptr));
    ixA.push_back(HostArray::fromI32(lv.table.indices));
    lpA.push_back(HostArray::fromI32(lv.table.lastPageLen));
  }
  // pa.cascade lowered directly (one pass over the levels' keys), and
  // through pa-cascade-decompose (a pa.prefill per level + pa.merge: what
  // the GPU runs).
  for (int decompose = 0; decompose < 2; ++decompose) {
    PipelineConfig pcfg;
    pcfg.cascadeDecompose = decompose != 0;
    std::string err;
    JitModule *cm = compile(cascadeModule(c, L), pcfg, err);
    if (!cm)
      return "cascade module (L=" + std::to_string(L) + ", " + pcfg.str() +
             ") failed to compile: " + err;
    HostArray oc(c.cache.elem, {Nq, Hq, D}), lsec(Elem::F32, {Nq, Hq});
    oc.fillBytes(0xFF);
    lsec.fillBytes(0xFF);
    std::vector<HostArray *> cargs{&qcArr};
    for (HostArray &a : cache)
      cargs.push_back(&a);
    for (auto *v : {&qoA, &ipA, &ixA, &lpA})
      for (HostArray &a : *v)
        cargs.push_back(&a);
    cargs.insert(cargs.end(), {&oc, &lsec});
    if (std::string e = cm->call("cascade", cargs); !e.empty())
      return "cascade (" + pcfg.str() + "): " + e + " (" + desc + ")";
    if (std::string e = checkStates(oc, lsec, plainStates, Nq, c.cache.elem,
                                    *cascadeStats[decompose], desc);
        !e.empty())
      return "cascade (" + pcfg.str() + ") vs plain: " + e;
  }
  return "";
}

TEST(PACPUDifferential, AutoCascadeEqualsPlainAttention) {
  OpStats plainStats("auto-cascade: plain decode/prefill vs oracle");
  OpStats direct("auto-cascade: pa.cascade of the pool's levels vs plain");
  OpStats decomposed("auto-cascade: the same, cascade-decompose=true, vs "
                     "plain");
  ShapeStats shapes;
  runDifferentialTest(
      "AutoCascade", 21, 0xCA5CADE, kConfigs, kCasesPerConfig,
      {&plainStats, &direct, &decomposed}, [&](Rng &crng, int ci) {
        Cfg c = randomConfig(crng, ci);
        return DiffConfig{
            c.str(), plainModule(c), PipelineConfig{},
            [c, &plainStats, &direct, &decomposed,
             &shapes](JitModule &m, Rng &rng, int k) {
              OpStats *const cascadeStats[2] = {&direct, &decomposed};
              return runCase(m, c, rng, k, plainStats, cascadeStats, shapes);
            }};
      });
  std::cout << "[pa-cpu-diff] auto-cascade: " << shapes.cases << " batches, "
            << shapes.shared << " with shared levels (up to "
            << shapes.maxLevels << " levels), " << shapes.reordered
            << " reordered; pages read " << shapes.cascadePages
            << " (cascade) vs " << shapes.flatPages << " (plain)\n";
  // The generator must produce sharing, or the test proves nothing.
  EXPECT_GT(shapes.shared, shapes.cases / 2);
  EXPECT_GE(shapes.maxLevels, 3);
  EXPECT_GT(shapes.reordered, 0);
  EXPECT_LT(shapes.cascadePages, shapes.flatPages);
}

} // namespace
