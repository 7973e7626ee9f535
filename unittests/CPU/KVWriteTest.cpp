//===- KVWriteTest.cpp - CPU lowering of the cache writes vs pa::ref ------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// pa.append_kv, pa.append_kv_slots (negative slots skipped) and pa.scatter_kv
// write into a random cache; the whole cache is compared bit for bit with the
// reference's (what is not written must keep its random value).
//
//===----------------------------------------------------------------------===//

#include "JitHarness.h"

#include "gtest/gtest.h"

using namespace pa_cpu_test;

namespace {

constexpr int kConfigs = 30;
constexpr int kCasesPerConfig = 15;
constexpr uint64_t kConfigSalt = 0x3C7A;

enum class WriteOp { Append, Slots, Scatter };

/// Head dims of the random cache configurations.
const std::vector<int64_t> kHeadDims = {1, 4, 8, 16, 32, 64, 12};

/// The module of `op`: one function @kv_write (not @write: the lowering's
/// pa-assert-to-stderr calls libc's write).
std::string writeModule(WriteOp op, const CacheConfig &c) {
  std::string ct = c.tensorType(), it = "tensor<?xi32>";
  std::string rt = "tensor<?x" + std::to_string(c.kvHeads) + "x" +
                   std::to_string(c.headDim) + "x" + elemName(c.elem) + ">";
  std::string cacheArgs = c.joint ? "%k: " + ct : "%k: " + ct + ", %v: " + ct;
  std::string cacheOuts =
      c.joint ? "%k : " + ct : "%k, %v : " + ct + ", " + ct;
  std::string results = c.joint ? ct : ct + ", " + ct;
  std::string res = c.joint ? "%r" : "%r:2";
  std::string ret = c.joint ? "%r" : "%r#0, %r#1";
  std::ostringstream os;
  switch (op) {
  case WriteOp::Append:
    os << "func.func @kv_write(%kn: " << rt << ", %vn: " << rt
       << ", %ai: " << it << ", %ip: " << it << ", %ix: " << it
       << ", %lp: " << it << ", " << cacheArgs << ") -> (" << results
       << ") attributes {llvm.emit_c_interface} {\n  " << res
       << " = pa.append_kv new(%kn, %vn, %ai : " << rt << ", " << rt << ", "
       << it << ") pages(%ip, %ix, %lp : " << it << ", " << it << ", " << it
       << ") outs(" << cacheOuts << ") {cache = " << c.attr() << "}\n";
    break;
  case WriteOp::Slots:
    os << "func.func @kv_write(%kn: " << rt << ", %vn: " << rt << ", %s: " << it
       << ", " << cacheArgs << ") -> (" << results
       << ") attributes {llvm.emit_c_interface} {\n  " << res
       << " = pa.append_kv_slots new(%kn, %vn : " << rt << ", " << rt
       << ") slots(%s : " << it << ") outs(" << cacheOuts
       << ") {cache = " << c.attr() << "}\n";
    break;
  case WriteOp::Scatter:
    os << "func.func @kv_write(%kr: " << rt << ", %vr: " << rt
       << ", %ri: " << it << ", %pos: " << it << ", %ip: " << it
       << ", %ix: " << it << ", %lp: " << it << ", " << cacheArgs << ") -> ("
       << results << ") attributes {llvm.emit_c_interface} {\n  " << res
       << " = pa.scatter_kv new(%kr, %vr, %ri : " << rt << ", " << rt << ", "
       << it << ") positions(%pos : " << it << ") pages(%ip, %ix, %lp : " << it
       << ", " << it << ", " << it << ") outs(" << cacheOuts
       << ") {cache = " << c.attr() << "}\n";
    break;
  }
  os << "  return " << ret << " : " << results << "\n}\n";
  return os.str();
}

/// Compares the cache operands with the reference cache; describes the first
/// differing element.
std::string compareCache(const CacheConfig &c, const ref::PagedKV &expected,
                         const std::vector<HostArray> &got) {
  std::vector<HostArray> want = cacheArrays(c, expected);
  for (size_t a = 0; a < want.size(); ++a) {
    if (want[a].sameBits(got[a]))
      continue;
    int64_t diffs = 0, first = -1;
    for (int64_t i = 0; i < want[a].numel(); ++i) {
      double x = got[a].get(i), y = want[a].get(i);
      if (!(x == y) || std::signbit(x) != std::signbit(y)) {
        if (first < 0)
          first = i;
        ++diffs;
      }
    }
    if (first < 0)
      continue; // NaN payloads etc. cannot occur; treat as equal
    // Decode the flat index into the operand's dims.
    std::vector<int64_t> idx(want[a].rank());
    int64_t rest = first;
    for (int64_t d = want[a].rank() - 1; d >= 0; --d) {
      idx[d] = rest % want[a].shape()[d];
      rest /= want[a].shape()[d];
    }
    std::ostringstream os;
    os << diffs << " cache elements differ; first at "
       << (c.joint ? "kv" : (a == 0 ? "k" : "v")) << join(idx) << ": got "
       << got[a].get(first) << ", expected " << want[a].get(first);
    return os.str();
  }
  return "";
}

std::string runWriteCase(WriteOp op, JitModule &m, const CacheConfig &c,
                         Rng &rng, int caseIdx, OpStats &stats) {
  const int64_t P = c.pageSize, H = c.kvHeads, D = c.headDim;
  std::ostringstream desc;
  ref::PagedKV kv;
  std::vector<HostArray> cache;
  std::vector<HostArray> owned; // operands other than the cache
  std::vector<HostArray *> args;
  ref::PagedKV expected;
  owned.reserve(16);
  auto own = [&](HostArray a) {
    owned.push_back(std::move(a));
    return &owned.back();
  };
  try {
    if (op == WriteOp::Append || op == WriteOp::Scatter) {
      int64_t B = caseIdx == 0 ? 0 : rng.uniformInt(1, 6);
      std::vector<int64_t> lens(B), rowLens(B);
      for (int64_t b = 0; b < B; ++b) {
        lens[b] = caseIdx == 2 ? rng.uniformInt(1, 3) * P
                               : sampleLen(rng, P, 60);
        if (caseIdx == 3)
          lens[b] = rng.uniformInt(1, P); // a single page
        int64_t maxRows = std::min<int64_t>(lens[b], 12);
        double r = rng.uniform(0, 1);
        if (caseIdx == 1 || r < 0.15)
          rowLens[b] = 0;
        else if (r < 0.3 && lens[b] <= 16)
          rowLens[b] = lens[b]; // the whole request
        else
          rowLens[b] = rng.uniformInt(0, maxRows);
      }
      int64_t used = 0;
      for (int64_t l : lens)
        used += pagesFor(l, P);
      int64_t numPages = used + rng.uniformInt(0, 4);
      randomCache(rng, c, numPages, kv, cache);
      PagePool pool(rng, numPages);
      ref::PageTable pt = makePageTable(rng, P, lens, pool);
      std::vector<int32_t> rowIndptr = indptrOf(rowLens);
      int64_t N = rowIndptr.back();
      std::vector<double> kn = randomValues(rng, N * H * D, c.elem, -1, 1);
      std::vector<double> vn = randomValues(rng, N * H * D, c.elem, -1, 1);
      args.push_back(own(HostArray::fromDoubles(c.elem, kn, {N, H, D})));
      args.push_back(own(HostArray::fromDoubles(c.elem, vn, {N, H, D})));
      args.push_back(own(HostArray::fromI32(rowIndptr)));
      desc << "num_pages=" << numPages << " " << describeTable(pt)
           << " rows_indptr=" << join(rowIndptr);
      expected = kv;
      if (op == WriteOp::Append) {
        ref::appendKV(expected, pt, rowIndptr, kn, vn);
      } else {
        std::vector<int32_t> positions;
        for (int64_t b = 0; b < B; ++b) {
          std::vector<int32_t> all(lens[b]);
          for (int64_t t = 0; t < lens[b]; ++t)
            all[t] = static_cast<int32_t>(t);
          rng.shuffle(all);
          positions.insert(positions.end(), all.begin(),
                           all.begin() + rowLens[b]);
        }
        desc << " positions=" << join(positions);
        args.push_back(own(HostArray::fromI32(positions)));
        ref::scatterKV(expected, pt, rowIndptr, positions, kn, vn);
      }
      PageTableArrays pta = pageTableArrays(pt);
      args.push_back(own(std::move(pta.indptr)));
      args.push_back(own(std::move(pta.indices)));
      args.push_back(own(std::move(pta.lastPageLen)));
    } else {
      int64_t numPages = caseIdx == 0 ? 0 : rng.uniformInt(1, 10);
      int64_t slotsTotal = numPages * P;
      int64_t N = rng.uniformInt(0, std::min<int64_t>(20, slotsTotal + 4));
      std::vector<int32_t> all(slotsTotal);
      for (int64_t s = 0; s < slotsTotal; ++s)
        all[s] = static_cast<int32_t>(s);
      rng.shuffle(all);
      std::vector<int32_t> slots(N);
      size_t next = 0;
      for (int64_t r = 0; r < N; ++r) {
        if (next >= all.size() || rng.chance(caseIdx == 1 ? 1.0 : 0.25))
          slots[r] = rng.pick(std::vector<int32_t>{
              -1, -2, static_cast<int32_t>(-P), -1000000,
              std::numeric_limits<int32_t>::min()});
        else
          slots[r] = all[next++];
      }
      randomCache(rng, c, numPages, kv, cache);
      std::vector<double> kn = randomValues(rng, N * H * D, c.elem, -1, 1);
      std::vector<double> vn = randomValues(rng, N * H * D, c.elem, -1, 1);
      args.push_back(own(HostArray::fromDoubles(c.elem, kn, {N, H, D})));
      args.push_back(own(HostArray::fromDoubles(c.elem, vn, {N, H, D})));
      args.push_back(own(HostArray::fromI32(slots)));
      desc << "num_pages=" << numPages << " slots=" << join(slots);
      expected = kv;
      ref::appendKVSlots(expected, slots, kn, vn);
    }
  } catch (const ref::Error &e) {
    return std::string("harness bug: the oracle rejected the input: ") +
           e.what() + " (" + desc.str() + ")";
  }
  for (HostArray &a : cache)
    args.push_back(&a);
  if (std::string err = m.call("kv_write", args); !err.empty())
    return err + " (" + desc.str() + ")";
  stats.addExact();
  std::string diff = compareCache(c, expected, cache);
  if (!diff.empty())
    return diff + " (" + desc.str() + ")";
  return "";
}

void runWriteTest(WriteOp op, const std::string &testName, uint64_t defaultSeed,
                  const std::string &statName) {
  OpStats stats(statName, false);
  runDifferentialTest(testName, defaultSeed, kConfigSalt, kConfigs,
                      kCasesPerConfig, {&stats}, [&](Rng &crng, int ci) {
                        CacheConfig c = randomCacheConfig(crng, ci, kHeadDims);
                        return DiffConfig{
                            c.str(), writeModule(op, c), PipelineConfig{},
                            [op, c, &stats](JitModule &m, Rng &rng, int k) {
                              return runWriteCase(op, m, c, rng, k, stats);
                            }};
                      });
}

} // namespace

TEST(PACPUDifferential, AppendKV) {
  runWriteTest(WriteOp::Append, "AppendKV", 21, "pa.append_kv");
}

TEST(PACPUDifferential, AppendKVSlots) {
  runWriteTest(WriteOp::Slots, "AppendKVSlots", 22, "pa.append_kv_slots");
}

TEST(PACPUDifferential, ScatterKV) {
  runWriteTest(WriteOp::Scatter, "ScatterKV", 23, "pa.scatter_kv");
}
