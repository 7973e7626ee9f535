//===- MLATest.cpp - CPU lowering of pa.mla_decode vs pa::ref -------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// pa.mla_decode (multi-head latent attention over a paged
// [num_pages, P, D_ckv + D_kpe] cache) run through pa-lower-to-cpu + the JIT
// on random inputs and compared with the float64 reference pa::ref::mlaDecode.
//
// The configurations cover every combination of element type (f32, f16,
// bf16), widths (DeepSeek's D_ckv 512 + D_kpe 64, and 64 + 16 for speed) and
// page size (1, 16, 64 and the non-power of two 5); the options (sm_scale,
// soft-cap, lse_base2) vary with them. Batch, number of pages and (except in
// the configurations with a static H = 16) the number of heads are dynamic in
// the module, so one module serves every case of its configuration: H is 16
// or 128 with the DeepSeek widths and any of 1, 3, 16, 128 with the small
// ones. Lengths are ragged, with empty batches, empty requests and full last
// pages among the first cases.
//
//===----------------------------------------------------------------------===//

#include "JitHarness.h"

#include "gtest/gtest.h"

#include <cmath>
#include <optional>

using namespace pa_cpu_test;

namespace {

constexpr uint64_t kConfigSalt = 0x37A1DEC;

struct MLAConfig {
  Elem elem = Elem::F32;
  int64_t pageSize = 16, ckv = 64, kpe = 16;
  /// Static H in the module (0: dynamic, random per case).
  int64_t staticHeads = 0;
  float smScale = 0.125f;
  std::optional<float> softCap;
  bool lseBase2 = false;

  bool deepseek() const { return ckv == 512; }

  std::string attrDict() const {
    std::ostringstream os;
    os << "{cache = #pa.paged_mla<page_size = " << pageSize << ", ckv = " << ckv
       << ", kpe = " << kpe << ">, sm_scale = " << fmtF32(smScale) << " : f32";
    if (softCap)
      os << ", logits_soft_cap = " << fmtF32(*softCap) << " : f32";
    if (lseBase2)
      os << ", lse_base2";
    os << "}";
    return os.str();
  }

  std::string str() const {
    std::ostringstream os;
    os << elemName(elem) << " P=" << pageSize << " D_ckv=" << ckv
       << " D_kpe=" << kpe;
    if (staticHeads)
      os << " H=" << staticHeads << " (static)";
    os << " sm_scale=" << smScale;
    if (softCap)
      os << " soft_cap=" << *softCap;
    if (lseBase2)
      os << " lse_base2";
    return os.str();
  }

  ref::MLAOptions refOptions() const {
    ref::MLAOptions o;
    o.smScale = static_cast<double>(smScale);
    if (softCap)
      o.logitsSoftCap = static_cast<double>(*softCap);
    o.lseBase2 = lseBase2;
    return o;
  }
};

/// Configuration `ci` of 24: every (element type, widths, page size); the
/// options at random.
MLAConfig makeConfig(Rng &rng, int ci) {
  static const Elem elems[] = {Elem::F32, Elem::F16, Elem::BF16};
  static const int64_t pageSizes[] = {1, 16, 64, 5};
  MLAConfig c;
  c.elem = elems[ci % 3];
  bool deepseek = (ci / 3) % 2 == 0;
  c.ckv = deepseek ? 512 : 64;
  c.kpe = deepseek ? 64 : 16;
  c.pageSize = pageSizes[(ci / 6) % 4];
  if (ci % 4 == 1)
    c.staticHeads = 16;
  // DeepSeek's scale (that of the model before absorption, 1/sqrt(128 + 64)),
  // the one of the absorbed width, and arbitrary ones (a large one only with
  // the small widths: over 576 elements it makes the scores so large that
  // f32 accumulation alone nears the lse tolerance).
  std::vector<float> scales = {
      static_cast<float>(1.0 / std::sqrt(192.0)),
      static_cast<float>(1.0 / std::sqrt(double(c.ckv + c.kpe))), 0.125f};
  if (!deepseek)
    scales.push_back(0.5f);
  c.smScale = rng.pick(scales);
  if (rng.chance(0.3))
    c.softCap = rng.pick(std::vector<float>{1.5f, 5.0f, 30.0f});
  c.lseBase2 = rng.chance(0.3);
  return c;
}

std::string mlaModule(const MLAConfig &c) {
  std::string h = c.staticHeads ? std::to_string(c.staticHeads) : "?";
  std::string t = elemName(c.elem);
  std::string qn =
      "tensor<?x" + h + "x" + std::to_string(c.ckv) + "x" + t + ">";
  std::string qp =
      "tensor<?x" + h + "x" + std::to_string(c.kpe) + "x" + t + ">";
  std::string kv = "tensor<?x" + std::to_string(c.pageSize) + "x" +
                   std::to_string(c.ckv + c.kpe) + "x" + t + ">";
  std::string lse = "tensor<?x" + h + "xf32>", idx = "tensor<?xi32>";
  std::ostringstream os;
  os << "func.func @mla(%qn: " << qn << ", %qp: " << qp << ", %kv: " << kv
     << ", %ip: " << idx << ", %ix: " << idx << ", %lp: " << idx
     << ", %o0: " << qn << ", %l0: " << lse << ") -> (" << qn << ", " << lse
     << ") attributes {llvm.emit_c_interface} {\n"
     << "  %r:2 = pa.mla_decode q(%qn, %qp : " << qn << ", " << qp
     << ") kv(%kv : " << kv << ") pages(%ip, %ix, %lp : " << idx << ", " << idx
     << ", " << idx << ") outs(%o0, %l0 : " << qn << ", " << lse << ") "
     << c.attrDict() << "\n  return %r#0, %r#1 : " << qn << ", " << lse
     << "\n}\n";
  return os.str();
}

/// kv lengths of case `caseIdx`; the first cases are the edge cases.
std::vector<int64_t> mlaLens(Rng &rng, int caseIdx, int64_t P, int64_t maxBatch,
                             int64_t maxLen) {
  std::vector<int64_t> lens;
  switch (caseIdx) {
  case 0: // empty batch
    return lens;
  case 1: // empty requests only
    lens.assign(rng.uniformInt(1, 3), 0);
    return lens;
  case 2: // last_page_len == P everywhere
    for (int64_t b = 0, n = rng.uniformInt(1, 3); b < n; ++b)
      lens.push_back(rng.uniformInt(1, std::max<int64_t>(1, maxLen / P)) * P);
    return lens;
  case 3: // empty requests between non-empty ones
    lens = {rng.uniformInt(1, maxLen), 0, rng.uniformInt(1, maxLen), 0};
    return lens;
  default:
    for (int64_t b = 0, n = rng.uniformInt(1, maxBatch); b < n; ++b)
      lens.push_back(pa::test::sampleLen(rng, P, maxLen));
    return lens;
  }
}

std::string runMLACase(JitModule &m, const MLAConfig &c, Rng &rng, int caseIdx,
                       OpStats &stats) {
  const int64_t P = c.pageSize, ckv = c.ckv, kpe = c.kpe;
  // DeepSeek widths with 128 heads are ~10x the work of the small ones:
  // fewer and shorter requests.
  std::vector<int64_t> lens =
      mlaLens(rng, caseIdx, P, c.deepseek() ? 3 : 6, c.deepseek() ? 40 : 90);
  const int64_t B = static_cast<int64_t>(lens.size());
  int64_t H = c.staticHeads;
  if (!H)
    H = c.deepseek() ? (caseIdx % 2 ? 128 : 16)
                     : rng.pick(std::vector<int64_t>{1, 3, 16, 128});

  const int64_t numPages = totalPages(lens, P) + rng.uniformInt(0, 3);
  ref::PagedMLA kv(numPages, P, ckv, kpe);
  kv.data = randomValues(rng, kv.numElements(), c.elem, -1, 1);
  HostArray kvArr =
      HostArray::fromDoubles(c.elem, kv.data, {numPages, P, ckv + kpe});
  PagePool pool(rng, numPages);
  ref::PageTable pt = makePageTable(rng, P, lens, pool);
  PageTableArrays pta = pageTableArrays(pt);
  std::vector<double> qNope = randomValues(rng, B * H * ckv, c.elem, -2, 2);
  std::vector<double> qPe = randomValues(rng, B * H * kpe, c.elem, -2, 2);
  HostArray qnArr = HostArray::fromDoubles(c.elem, qNope, {B, H, ckv});
  HostArray qpArr = HostArray::fromDoubles(c.elem, qPe, {B, H, kpe});
  HostArray o(c.elem, {B, H, ckv});
  HostArray lse(Elem::F32, {B, H});
  o.fillBytes(0xFF);
  lse.fillBytes(0xFF);

  std::string desc = "B=" + std::to_string(B) + " H=" + std::to_string(H) +
                     " num_pages=" + std::to_string(numPages) + " " +
                     describeTable(pt);
  std::vector<HostArray *> args{&qnArr,      &qpArr,       &kvArr,
                                &pta.indptr, &pta.indices, &pta.lastPageLen,
                                &o,          &lse};
  if (std::string err = m.call("mla", args); !err.empty())
    return err + " (" + desc + ")";
  return checkAgainstOracle(
      [&] { return ref::mlaDecode(qNope, qPe, H, kv, pt, c.refOptions()); }, o,
      lse, B, c.elem, stats, desc);
}

} // namespace

TEST(PACPUDifferential, MLADecode) {
  OpStats stats("pa.mla_decode");
  runDifferentialTest(
      "MLADecode", 7, kConfigSalt, 24, 12, {&stats}, [&](Rng &crng, int ci) {
        MLAConfig c = makeConfig(crng, ci);
        return DiffConfig{c.str(), mlaModule(c), PipelineConfig{},
                          [c, &stats](JitModule &m, Rng &rng, int k) {
                            return runMLACase(m, c, rng, k, stats);
                          }};
      });
}
