//===- AttentionTest.cpp - CPU lowering of the attention ops vs pa::ref ---===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// pa.decode, pa.prefill, pa.cascade, split-KV (pa.plan_split_kv,
// pa.decode_partial + pa.merge_segments, and the pipeline's split-kv-chunk
// rewrite of pa.decode) and the pipeline's cascade-decompose rewrite, run
// through pa-lower-to-cpu + the JIT on random inputs and compared with the
// float64 reference.
//
// Static configuration (cache layout, page size, kv heads, head dim, dtype,
// joint/split K/V, attention options) is fixed per compiled module; batch,
// number of pages, Hq and all ragged sizes are dynamic, so one module serves
// every random case of its configuration.
//
//===----------------------------------------------------------------------===//

#include "JitHarness.h"

#include "PagedAttn/Runtime/Planner.h"

#include "gtest/gtest.h"

#include <cmath>
#include <numeric>
#include <optional>

using namespace pa_cpu_test;

namespace {

constexpr int kConfigs = 40;
constexpr int kCasesPerConfig = 15;
constexpr uint64_t kConfigSalt = 0xC0FF1CE;

//===----------------------------------------------------------------------===//
// Static configurations
//===----------------------------------------------------------------------===//

struct AttnConfig {
  CacheConfig cache;
  std::optional<float> smScale, softCap;
  std::optional<int64_t> window;
  bool causal = false, customMask = false, positions = false, alibi = false,
       lseBase2 = false;
  int64_t levels = 0;    // cascade
  int64_t chunkSize = 0; // split-KV
  /// Hq / Hkv, static in the module when set (pa-tile-attention packs the
  /// group into its tiles); 0: random per case, dynamic in the module.
  int64_t group = 0;

  /// The attribute dictionary of the op (with `cache`).
  std::string attrDict() const {
    std::ostringstream os;
    os << "{cache = " << cache.attr();
    if (causal)
      os << ", causal";
    if (smScale)
      os << ", sm_scale = " << fmtF32(*smScale) << " : f32";
    if (softCap)
      os << ", logits_soft_cap = " << fmtF32(*softCap) << " : f32";
    if (window)
      os << ", window = " << *window << " : i64";
    if (lseBase2)
      os << ", lse_base2";
    os << "}";
    return os.str();
  }

  std::string str() const {
    std::ostringstream os;
    os << cache.str();
    if (causal)
      os << " causal";
    if (customMask)
      os << " custom-mask";
    if (positions)
      os << " q_positions";
    if (alibi)
      os << " alibi";
    if (group)
      os << " g" << group;
    if (smScale)
      os << " sm_scale=" << *smScale;
    if (softCap)
      os << " soft_cap=" << *softCap;
    if (window)
      os << " window=" << *window;
    if (lseBase2)
      os << " lse_base2";
    if (levels)
      os << " levels=" << levels;
    if (chunkSize)
      os << " chunk=" << chunkSize;
    return os.str();
  }

  ref::AttnOptions refOptions(const std::vector<double> &slopes) const {
    ref::AttnOptions o;
    if (smScale)
      o.smScale = static_cast<double>(*smScale);
    if (softCap)
      o.logitsSoftCap = static_cast<double>(*softCap);
    o.window = window;
    o.mask = customMask ? ref::MaskMode::Custom
                        : (causal ? ref::MaskMode::Causal : ref::MaskMode::None);
    if (alibi)
      o.alibiSlopes = slopes;
    o.lseBase2 = lseBase2;
    return o;
  }
};

/// Head dims of the random cache configurations.
const std::vector<int64_t> kHeadDims = {4, 8, 8, 16, 16, 32, 64, 12};

void randomCommonOptions(Rng &rng, AttnConfig &c, double p) {
  if (rng.chance(p))
    c.smScale = rng.pick(std::vector<float>{0.5f, 0.125f, 0.3f, 1.7f});
  if (rng.chance(p))
    c.softCap = rng.pick(std::vector<float>{1.5f, 5.0f, 30.0f});
  if (rng.chance(p))
    c.window = rng.pick(std::vector<int64_t>{1, 2, 5, 16, 33});
  c.alibi = rng.chance(p);
  c.lseBase2 = rng.chance(0.2);
}

AttnConfig randomDecodeConfig(Rng &rng, int idx) {
  AttnConfig c;
  c.cache = randomCacheConfig(rng, idx, kHeadDims);
  randomCommonOptions(rng, c, 0.3);
  return c;
}

AttnConfig randomPrefillConfig(Rng &rng, int idx) {
  AttnConfig c;
  c.cache = randomCacheConfig(rng, idx, kHeadDims);
  randomCommonOptions(rng, c, 0.3);
  // Mask modes cycle: none, causal, window, causal+window, custom.
  switch (idx % 5) {
  case 0:
    c.window.reset();
    break;
  case 1:
    c.causal = true;
    c.window.reset();
    break;
  case 2:
    if (!c.window)
      c.window = rng.pick(std::vector<int64_t>{1, 3, 8, 20});
    break;
  case 3:
    c.causal = true;
    if (!c.window)
      c.window = rng.pick(std::vector<int64_t>{1, 3, 8, 20});
    break;
  case 4:
    c.customMask = true;
    c.window.reset();
    break;
  }
  c.positions = rng.chance(0.3);
  return c;
}

AttnConfig randomCascadeConfig(Rng &rng, int idx) {
  AttnConfig c;
  c.cache = randomCacheConfig(rng, idx, kHeadDims);
  randomCommonOptions(rng, c, 0.25);
  c.causal = rng.chance(0.5);
  c.levels = idx % 2 == 0 ? 2 : 3;
  return c;
}

//===----------------------------------------------------------------------===//
// IR text
//===----------------------------------------------------------------------===//

struct Types {
  explicit Types(const AttnConfig &c)
      : q("tensor<?x" + heads(c) + "x" + std::to_string(c.cache.headDim) +
          "x" + elemName(c.cache.elem) + ">"),
        oPart("tensor<?x" + heads(c) + "x" + std::to_string(c.cache.headDim) +
              "xf32>"),
        lse("tensor<?x" + heads(c) + "xf32>"), idx("tensor<?xi32>"),
        f32v("tensor<?xf32>"),
        mask("tensor<?xi8>"), cache(c.cache.tensorType()) {}
  std::string q, oPart, lse, idx, f32v, mask, cache;

private:
  /// Hq in a type: static with a fixed group, else dynamic.
  static std::string heads(const AttnConfig &c) {
    return c.group ? std::to_string(c.cache.kvHeads * c.group) : "?";
  }
};

/// The end of an attention function's signature: the outs %o0, %l0 and the
/// results.
std::string outsSignature(const Types &t) {
  return ", %o0: " + t.q + ", %l0: " + t.lse + ") -> (" + t.q + ", " + t.lse +
         ") attributes {llvm.emit_c_interface} {\n";
}

/// The end of an attention function: the op's outs and attributes, and the
/// return of its two results %r.
std::string outsAndReturn(const AttnConfig &c, const Types &t) {
  return " outs(%o0, %l0 : " + t.q + ", " + t.lse + ") " + c.attrDict() +
         "\n  return %r#0, %r#1 : " + t.q + ", " + t.lse + "\n}\n";
}

/// `kv(...)` operand list and the matching function arguments.
std::string kvOperands(const AttnConfig &c, const Types &t) {
  return c.cache.joint ? "kv(%k : " + t.cache + ")"
                       : "kv(%k, %v : " + t.cache + ", " + t.cache + ")";
}
std::string kvArgs(const AttnConfig &c, const Types &t) {
  return c.cache.joint ? "%k: " + t.cache
                       : "%k: " + t.cache + ", %v: " + t.cache;
}

std::string decodeModule(const AttnConfig &c) {
  Types t(c);
  std::ostringstream os;
  os << "func.func @decode(%q: " << t.q << ", " << kvArgs(c, t) << ", %ip: "
     << t.idx << ", %ix: " << t.idx << ", %lp: " << t.idx;
  if (c.alibi)
    os << ", %al: " << t.f32v;
  os << outsSignature(t);
  os << "  %r:2 = pa.decode q(%q : " << t.q << ") " << kvOperands(c, t)
     << " pages(%ip, %ix, %lp : " << t.idx << ", " << t.idx << ", " << t.idx
     << ")";
  if (c.alibi)
    os << " alibi(%al : " << t.f32v << ")";
  os << outsAndReturn(c, t);
  return os.str();
}

/// The optional prefill arguments (q_positions, the custom mask, the ALiBi
/// slopes) that `c` has: as function arguments, and as op operands.
std::string prefillOptionalArgs(const AttnConfig &c, const Types &t) {
  std::string s;
  if (c.positions)
    s += ", %pos: " + t.idx;
  if (c.customMask)
    s += ", %m: " + t.mask + ", %mi: " + t.idx;
  if (c.alibi)
    s += ", %al: " + t.f32v;
  return s;
}
std::string prefillOptionalOperands(const AttnConfig &c, const Types &t) {
  std::string s;
  if (c.positions)
    s += " positions(%pos : " + t.idx + ")";
  if (c.customMask)
    s += " mask(%m, %mi : " + t.mask + ", " + t.idx + ")";
  if (c.alibi)
    s += " alibi(%al : " + t.f32v + ")";
  return s;
}

std::string prefillModule(const AttnConfig &c) {
  Types t(c);
  std::ostringstream os;
  os << "func.func @prefill(%q: " << t.q << ", %qo: " << t.idx << ", "
     << kvArgs(c, t) << ", %ip: " << t.idx << ", %ix: " << t.idx
     << ", %lp: " << t.idx << prefillOptionalArgs(c, t);
  os << outsSignature(t);
  os << "  %r:2 = pa.prefill q(%q, %qo : " << t.q << ", " << t.idx << ") "
     << kvOperands(c, t) << " pages(%ip, %ix, %lp : " << t.idx << ", "
     << t.idx << ", " << t.idx << ")" << prefillOptionalOperands(c, t);
  os << outsAndReturn(c, t);
  return os.str();
}

std::string cascadeModule(const AttnConfig &c) {
  Types t(c);
  int64_t L = c.levels;
  auto list = [&](const char *prefix) {
    std::string s;
    for (int64_t l = 0; l < L; ++l)
      s += (l ? ", %" : "%") + std::string(prefix) + std::to_string(l);
    return s;
  };
  auto types = [&]() {
    std::string s;
    for (int64_t l = 0; l < L; ++l)
      s += (l ? ", " : "") + t.idx;
    return s;
  };
  std::ostringstream os;
  os << "func.func @cascade(%q: " << t.q << ", " << kvArgs(c, t);
  for (const char *p : {"qo", "ip", "ix", "lp"})
    for (int64_t l = 0; l < L; ++l)
      os << ", %" << p << l << ": " << t.idx;
  if (c.alibi)
    os << ", %al: " << t.f32v;
  os << outsSignature(t);
  os << "  %r:2 = pa.cascade q(%q : " << t.q << ") " << kvOperands(c, t)
     << " qo_indptrs(" << list("qo") << " : " << types() << ")"
     << " kv_indptrs(" << list("ip") << " : " << types() << ")"
     << " kv_indices(" << list("ix") << " : " << types() << ")"
     << " kv_last_page_lens(" << list("lp") << " : " << types() << ")";
  if (c.alibi)
    os << " alibi(%al : " << t.f32v << ")";
  os << outsAndReturn(c, t);
  return os.str();
}

std::string planFunc(int64_t pageSize, int64_t chunk) {
  std::string i = "tensor<?xi32>";
  std::ostringstream os;
  os << "func.func @plan(%ip: " << i << ", %lp: " << i << ", %wi: " << i
     << ", %wr: " << i << ", %ws: " << i << ", %we: " << i << ") -> (" << i
     << ", " << i << ", " << i << ", " << i
     << ") attributes {llvm.emit_c_interface} {\n"
     << "  %r:4 = pa.plan_split_kv pages(%ip, %lp : " << i << ", " << i
     << ") outs(%wi, %wr, %ws, %we : " << i << ", " << i << ", " << i << ", "
     << i << ") {chunk_size = " << chunk << " : i64, page_size = " << pageSize
     << " : i64}\n"
     << "  return %r#0, %r#1, %r#2, %r#3 : " << i << ", " << i << ", " << i
     << ", " << i << "\n}\n";
  return os.str();
}

/// The end of a split-KV chain function: the partial op's outs and
/// attributes, pa.merge_segments of its states over `segments`, and the
/// return of both the partial and the merged states.
std::string splitChainTail(const AttnConfig &c, const Types &t,
                           const std::string &segments) {
  std::ostringstream os;
  os << " outs(%op0, %lp0 : " << t.oPart << ", " << t.lse << ") "
     << c.attrDict() << "\n";
  os << "  %r:2 = pa.merge_segments states(%p#0, %p#1 : " << t.oPart << ", "
     << t.lse << ") segments(" << segments << " : " << t.idx
     << ") outs(%o0, %l0 : " << t.q << ", " << t.lse << ")"
     << (c.lseBase2 ? " {lse_base2}" : "") << "\n";
  os << "  return %p#0, %p#1, %r#0, %r#1 : " << t.oPart << ", " << t.lse
     << ", " << t.q << ", " << t.lse << "\n}\n";
  return os.str();
}

/// decode_partial over a work list, then merge_segments over work_indptr;
/// returns both the partial states and the merged ones.
std::string partialFunc(const AttnConfig &c) {
  Types t(c);
  std::ostringstream os;
  os << "func.func @partial(%q: " << t.q << ", " << kvArgs(c, t)
     << ", %ip: " << t.idx << ", %ix: " << t.idx << ", %lp: " << t.idx
     << ", %wi: " << t.idx << ", %wr: " << t.idx << ", %ws: " << t.idx
     << ", %we: " << t.idx;
  if (c.alibi)
    os << ", %al: " << t.f32v;
  os << ", %op0: " << t.oPart << ", %lp0: " << t.lse << ", %o0: " << t.q
     << ", %l0: " << t.lse << ") -> (" << t.oPart << ", " << t.lse << ", "
     << t.q << ", " << t.lse << ") attributes {llvm.emit_c_interface} {\n";
  os << "  %p:2 = pa.decode_partial q(%q : " << t.q << ") " << kvOperands(c, t)
     << " pages(%ip, %ix, %lp : " << t.idx << ", " << t.idx << ", " << t.idx
     << ") work(%wi, %wr, %ws, %we : " << t.idx << ", " << t.idx << ", "
     << t.idx << ", " << t.idx << ")";
  if (c.alibi)
    os << " alibi(%al : " << t.f32v << ")";
  os << splitChainTail(c, t, "%wi");
  return os.str();
}

/// prefill_partial over a work list, then merge_segments over the merge
/// segments; returns both the partial states and the merged ones.
std::string prefillPartialFunc(const AttnConfig &c) {
  Types t(c);
  std::ostringstream os;
  os << "func.func @prefill_partial(%q: " << t.q << ", %qo: " << t.idx << ", "
     << kvArgs(c, t) << ", %ip: " << t.idx << ", %ix: " << t.idx
     << ", %lp: " << t.idx;
  for (int i = 0; i < 7; ++i)
    os << ", %w" << i << ": " << t.idx;
  os << prefillOptionalArgs(c, t);
  os << ", %seg: " << t.idx << ", %op0: " << t.oPart << ", %lp0: " << t.lse
     << ", %o0: " << t.q << ", %l0: " << t.lse << ") -> (" << t.oPart << ", "
     << t.lse << ", " << t.q << ", " << t.lse
     << ") attributes {llvm.emit_c_interface} {\n";
  os << "  %p:2 = pa.prefill_partial q(%q, %qo : " << t.q << ", " << t.idx
     << ") " << kvOperands(c, t) << " pages(%ip, %ix, %lp : " << t.idx << ", "
     << t.idx << ", " << t.idx << ") work(%w0, %w1, %w2, %w3, %w4, %w5, %w6 : ";
  for (int i = 0; i < 7; ++i)
    os << (i ? ", " : "") << t.idx;
  os << ")" << prefillOptionalOperands(c, t) << splitChainTail(c, t, "%seg");
  return os.str();
}

//===----------------------------------------------------------------------===//
// Random cases
//===----------------------------------------------------------------------===//

/// kv lengths of a decode-like case; the first cases are the edge cases.
std::vector<int64_t> decodeLens(Rng &rng, int caseIdx, int64_t P,
                                int64_t maxLen) {
  std::vector<int64_t> lens;
  switch (caseIdx) {
  case 0: // empty batch
    return lens;
  case 1: // empty requests
    lens.assign(rng.uniformInt(1, 3), 0);
    return lens;
  case 2: // last_page_len == P everywhere
    for (int64_t b = 0, n = rng.uniformInt(1, 4); b < n; ++b)
      lens.push_back(rng.uniformInt(1, std::max<int64_t>(1, maxLen / P)) * P);
    return lens;
  case 3: // a single page each
    for (int64_t b = 0, n = rng.uniformInt(1, 4); b < n; ++b)
      lens.push_back(rng.uniformInt(1, P));
    return lens;
  default:
    for (int64_t b = 0, n = rng.uniformInt(1, 6); b < n; ++b)
      lens.push_back(sampleLen(rng, P, maxLen));
    return lens;
  }
}

/// Everything a paged attention call reads.
struct PagedInputs {
  int64_t numPages = 0, numQHeads = 0;
  ref::PagedKV kv;
  std::vector<HostArray> cache;
  std::vector<double> q, slopes;
  HostArray qArr, slopesArr;
};

/// Random cache (with `usedPages` + a few spare pages), q of `rows` rows and
/// Hq = Hkv * g heads, ALiBi slopes.
void randomPagedInputs(Rng &rng, const AttnConfig &c, int64_t usedPages,
                       int64_t rows, PagedInputs &in) {
  in.numPages = usedPages + rng.uniformInt(0, 3);
  randomCache(rng, c.cache, in.numPages, in.kv, in.cache);
  int64_t g = c.group ? c.group : rng.uniformInt(1, 8);
  in.numQHeads = c.cache.kvHeads * g;
  in.q = randomValues(rng, rows * in.numQHeads * c.cache.headDim, c.cache.elem,
                      -2, 2);
  in.qArr = HostArray::fromDoubles(c.cache.elem, in.q,
                                   {rows, in.numQHeads, c.cache.headDim});
  in.slopes = randomValues(rng, in.numQHeads, Elem::F32, 0, 0.5);
  in.slopesArr =
      HostArray::fromDoubles(Elem::F32, in.slopes, {in.numQHeads});
}

//===----------------------------------------------------------------------===//
// Decode
//===----------------------------------------------------------------------===//

std::string runDecodeCase(JitModule &m, const AttnConfig &c, Rng &rng,
                          int caseIdx, OpStats &stats) {
  const int64_t P = c.cache.pageSize, D = c.cache.headDim;
  std::vector<int64_t> lens = decodeLens(rng, caseIdx, P, 80);
  const int64_t B = static_cast<int64_t>(lens.size());
  PagedInputs in;
  randomPagedInputs(rng, c, totalPages(lens, P), B, in);
  PagePool pool(rng, in.numPages);
  ref::PageTable pt = makePageTable(rng, P, lens, pool);
  PageTableArrays pta = pageTableArrays(pt);
  HostArray o(c.cache.elem, {B, in.numQHeads, D});
  HostArray lse(Elem::F32, {B, in.numQHeads});
  o.fillBytes(0xFF);
  lse.fillBytes(0xFF);

  std::string desc = "B=" + std::to_string(B) +
                     " Hq=" + std::to_string(in.numQHeads) +
                     " num_pages=" + std::to_string(in.numPages) + " " +
                     describeTable(pt);
  std::vector<HostArray *> args{&in.qArr};
  for (HostArray &a : in.cache)
    args.push_back(&a);
  args.insert(args.end(), {&pta.indptr, &pta.indices, &pta.lastPageLen});
  if (c.alibi)
    args.push_back(&in.slopesArr);
  args.insert(args.end(), {&o, &lse});
  if (std::string err = m.call("decode", args); !err.empty())
    return err + " (" + desc + ")";

  return checkAgainstOracle(
      [&] {
        return ref::decode(in.q, in.numQHeads, in.kv, pt,
                           c.refOptions(in.slopes));
      },
      o, lse, B, c.cache.elem, stats, desc);
}

/// Runs decode configurations through the pipeline with `pipeline`.
void runDecodeTest(const std::string &testName, const PipelineConfig &base,
                   bool randomChunk, int numConfigs, int casesPerConfig,
                   const std::string &statName) {
  OpStats stats(statName);
  runDifferentialTest(
      testName, 1, kConfigSalt, numConfigs, casesPerConfig, {&stats},
      [&](Rng &crng, int ci) {
        AttnConfig c = randomDecodeConfig(crng, ci);
        PipelineConfig pc = base;
        if (randomChunk) {
          pc.splitKVChunk = crng.pick(std::vector<int64_t>{
              1, 3, c.cache.pageSize, 2 * c.cache.pageSize, 16, 64});
          c.chunkSize = pc.splitKVChunk;
        }
        return DiffConfig{c.str(), decodeModule(c), pc,
                          [c, &stats](JitModule &m, Rng &rng, int k) {
                            return runDecodeCase(m, c, rng, k, stats);
                          }};
      });
}

//===----------------------------------------------------------------------===//
// Prefill
//===----------------------------------------------------------------------===//

/// A random ragged prefill batch for `c`: at most 5 requests of up to
/// `maxLen` keys, 0..6 queries each (sometimes a whole prefill), the paged
/// inputs, random q_positions and custom mask when `c` has them, and the
/// host arrays of all of it.
struct PrefillBatch {
  std::vector<int64_t> lens, qoLens;
  std::vector<int32_t> qoIndptr, positions, maskIndptr;
  std::vector<uint8_t> packed;
  int64_t B = 0, Nq = 0;
  PagedInputs in;
  ref::PageTable pt;
  PageTableArrays pta;
  HostArray qoArr, posArr, maskArr, maskIndptrArr;

  PrefillBatch(const AttnConfig &c, Rng &rng, int caseIdx, int64_t maxLen) {
    const int64_t P = c.cache.pageSize;
    lens = decodeLens(rng, caseIdx, P, maxLen);
    if (lens.size() > 5)
      lens.resize(5);
    B = static_cast<int64_t>(lens.size());
    qoLens.assign(B, 0);
    for (int64_t b = 0; b < B; ++b) {
      if (c.positions) {
        qoLens[b] = rng.uniformInt(0, 6);
      } else {
        qoLens[b] = rng.uniformInt(0, std::min<int64_t>(lens[b], 6));
        if (lens[b] <= 8 && rng.chance(0.2))
          qoLens[b] = lens[b]; // a whole prefill
      }
    }
    qoIndptr = indptrOf(qoLens);
    Nq = qoIndptr.back();
    randomPagedInputs(rng, c, totalPages(lens, P), Nq, in);
    PagePool pool(rng, in.numPages);
    pt = makePageTable(rng, P, lens, pool);
    pta = pageTableArrays(pt);
    qoArr = HostArray::fromI32(qoIndptr);
    if (c.positions)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < qoLens[b]; ++i)
          positions.push_back(
              static_cast<int32_t>(rng.uniformInt(0, lens[b] + 1)));
    posArr = HostArray::fromI32(positions);
    if (c.customMask) {
      std::vector<uint8_t> bits;
      std::vector<int64_t> bitLens;
      for (int64_t b = 0; b < B; ++b) {
        bitLens.push_back(qoLens[b] * lens[b]);
        for (int64_t i = 0; i < qoLens[b]; ++i) {
          double p = rng.chance(0.2)
                         ? 0.0
                         : rng.pick(std::vector<double>{0.3, 0.6, 1.0});
          for (int64_t t = 0; t < lens[b]; ++t)
            bits.push_back(rng.chance(p) ? 1 : 0);
        }
      }
      std::tie(packed, maskIndptr) = ref::packMask(bits, indptrOf(bitLens));
    }
    maskArr = HostArray::fromBytes(Elem::I8, packed);
    maskIndptrArr = HostArray::fromI32(maskIndptr);
  }

  /// The leading arguments of a prefill function: q, qo_indptr, the cache
  /// and page table, then (after `work`) q_positions, the mask and the
  /// ALiBi slopes as `c` has them.
  std::vector<HostArray *> args(const AttnConfig &c,
                                std::vector<HostArray> *work = nullptr) {
    std::vector<HostArray *> a{&in.qArr, &qoArr};
    for (HostArray &x : in.cache)
      a.push_back(&x);
    a.insert(a.end(), {&pta.indptr, &pta.indices, &pta.lastPageLen});
    if (work)
      for (HostArray &x : *work)
        a.push_back(&x);
    if (c.positions)
      a.push_back(&posArr);
    if (c.customMask)
      a.insert(a.end(), {&maskArr, &maskIndptrArr});
    if (c.alibi)
      a.push_back(&in.slopesArr);
    return a;
  }
  /// The oracle's optional inputs.
  const std::vector<int32_t> *refPositions(const AttnConfig &c) const {
    return c.positions ? &positions : nullptr;
  }
  const std::vector<uint8_t> *refMask(const AttnConfig &c) const {
    return c.customMask ? &packed : nullptr;
  }
  const std::vector<int32_t> *refMaskIndptr(const AttnConfig &c) const {
    return c.customMask ? &maskIndptr : nullptr;
  }
};

std::string runPrefillCase(JitModule &m, const AttnConfig &c, Rng &rng,
                           int caseIdx, OpStats &stats) {
  const int64_t D = c.cache.headDim;
  PrefillBatch pb(c, rng, caseIdx, 64);
  const int64_t B = pb.B, Nq = pb.Nq;
  PagedInputs &in = pb.in;
  const ref::PageTable &pt = pb.pt;
  HostArray o(c.cache.elem, {Nq, in.numQHeads, D});
  HostArray lse(Elem::F32, {Nq, in.numQHeads});
  o.fillBytes(0xFF);
  lse.fillBytes(0xFF);

  std::string desc = "B=" + std::to_string(B) +
                     " Hq=" + std::to_string(in.numQHeads) +
                     " qo_len=" + join(pb.qoLens) +
                     " num_pages=" + std::to_string(in.numPages) + " " +
                     describeTable(pt);
  if (c.positions)
    desc += " q_positions=" + join(pb.positions);
  std::vector<HostArray *> args = pb.args(c);
  args.insert(args.end(), {&o, &lse});
  if (std::string err = m.call("prefill", args); !err.empty())
    return err + " (" + desc + ")";

  return checkAgainstOracle(
      [&] {
        return ref::prefill(in.q, in.numQHeads, pb.qoIndptr, in.kv, pt,
                            c.refOptions(in.slopes), pb.refPositions(c),
                            pb.refMask(c), pb.refMaskIndptr(c));
      },
      o, lse, Nq, c.cache.elem, stats, desc);
}

//===----------------------------------------------------------------------===//
// Cascade
//===----------------------------------------------------------------------===//

/// Splits n consecutive items into `groups` non-empty consecutive groups
/// (n == 0: one empty group); returns the group sizes.
std::vector<int64_t> randomGroups(Rng &rng, int64_t n, int64_t groups) {
  if (n == 0)
    return {0};
  groups = std::max<int64_t>(1, std::min(groups, n));
  std::vector<int64_t> cuts;
  for (int64_t i = 1; i < n; ++i)
    cuts.push_back(i);
  rng.shuffle(cuts);
  cuts.resize(groups - 1);
  std::sort(cuts.begin(), cuts.end());
  std::vector<int64_t> sizes;
  int64_t prev = 0;
  for (int64_t cut : cuts) {
    sizes.push_back(cut - prev);
    prev = cut;
  }
  sizes.push_back(n - prev);
  return sizes;
}

std::string runCascadeCase(JitModule &m, const AttnConfig &c, Rng &rng,
                           int caseIdx, OpStats &stats) {
  const int64_t P = c.cache.pageSize, D = c.cache.headDim, L = c.levels;
  // The last level has one segment per request.
  int64_t B = caseIdx == 0 ? 0 : rng.uniformInt(1, 5);
  std::vector<int64_t> qoLens(B);
  for (int64_t &q : qoLens)
    q = rng.uniformInt(0, 4);
  const bool usesPositions = c.window || c.alibi;
  // Segment structure of each level, as groups of consecutive requests.
  std::vector<std::vector<int64_t>> groups(L);
  groups[L - 1] = std::vector<int64_t>(B, 1);
  if (B == 0)
    groups[L - 1] = {};
  groups[0] = randomGroups(rng, B, rng.uniformInt(1, 2));
  if (L == 3)
    groups[1] = randomGroups(rng, B, rng.uniformInt(1, std::max<int64_t>(B, 1)));
  std::vector<std::vector<int32_t>> qoIndptrs(L);
  std::vector<std::vector<int64_t>> lens(L);
  for (int64_t l = 0; l < L; ++l) {
    qoIndptrs[l].push_back(0);
    int64_t req = 0;
    const bool last = l == L - 1;
    for (int64_t g : groups[l]) {
      int64_t rows = 0;
      for (int64_t i = 0; i < g; ++i)
        rows += qoLens[req + i];
      req += g;
      qoIndptrs[l].push_back(qoIndptrs[l].back() + static_cast<int32_t>(rows));
      int64_t len = sampleLen(rng, P, last ? 30 : 40);
      if (caseIdx == 1)
        len = 0; // every level empty: fully masked rows
      if (caseIdx == 2)
        len = rng.uniformInt(1, 3) * P; // full pages
      if ((last && c.causal) || usesPositions)
        len = std::max(len, rows);
      lens[l].push_back(len);
    }
  }
  const int64_t Nq = qoIndptrs[0].back();
  int64_t used = 0;
  for (auto &ls : lens)
    used += totalPages(ls, P);
  PagedInputs in;
  randomPagedInputs(rng, c, used, Nq, in);
  PagePool pool(rng, in.numPages);
  std::vector<ref::PageTable> tables;
  std::vector<PageTableArrays> tableArrs;
  std::vector<HostArray> qoArrs;
  for (int64_t l = 0; l < L; ++l) {
    tables.push_back(makePageTable(rng, P, lens[l], pool));
    tableArrs.push_back(pageTableArrays(tables.back()));
    qoArrs.push_back(HostArray::fromI32(qoIndptrs[l]));
  }
  HostArray o(c.cache.elem, {Nq, in.numQHeads, D});
  HostArray lse(Elem::F32, {Nq, in.numQHeads});
  o.fillBytes(0xFF);
  lse.fillBytes(0xFF);

  std::ostringstream d;
  d << "Nq=" << Nq << " Hq=" << in.numQHeads << " qo_len=" << join(qoLens)
    << " num_pages=" << in.numPages;
  for (int64_t l = 0; l < L; ++l)
    d << " | level " << l << ": qo_indptr=" << join(qoIndptrs[l]) << " "
      << describeTable(tables[l]);
  std::string desc = d.str();

  std::vector<HostArray *> args{&in.qArr};
  for (HostArray &a : in.cache)
    args.push_back(&a);
  for (auto &a : qoArrs)
    args.push_back(&a);
  for (auto &t : tableArrs)
    args.push_back(&t.indptr);
  for (auto &t : tableArrs)
    args.push_back(&t.indices);
  for (auto &t : tableArrs)
    args.push_back(&t.lastPageLen);
  if (c.alibi)
    args.push_back(&in.slopesArr);
  args.insert(args.end(), {&o, &lse});
  if (std::string err = m.call("cascade", args); !err.empty())
    return err + " (" + desc + ")";

  return checkAgainstOracle(
      [&] {
        return ref::cascade(in.q, in.numQHeads, qoIndptrs, tables, in.kv,
                            c.refOptions(in.slopes));
      },
      o, lse, Nq, c.cache.elem, stats, desc);
}

void runCascadeTest(const std::string &testName, const PipelineConfig &pc,
                    int numConfigs, int casesPerConfig,
                    const std::string &statName) {
  OpStats stats(statName);
  runDifferentialTest(testName, 3, kConfigSalt, numConfigs, casesPerConfig,
                      {&stats}, [&](Rng &crng, int ci) {
                        AttnConfig c = randomCascadeConfig(crng, ci);
                        return DiffConfig{
                            c.str(), cascadeModule(c), pc,
                            [c, &stats](JitModule &m, Rng &rng, int k) {
                              return runCascadeCase(m, c, rng, k, stats);
                            }};
                      });
}

//===----------------------------------------------------------------------===//
// Split-KV
//===----------------------------------------------------------------------===//

/// The chunking rule of pa.plan_split_kv / pa::rt::planFixedChunks: chunk c
/// of request b is [c*C, min((c+1)*C, len)).
struct WorkList {
  std::vector<int32_t> indptr{0}, request, start, end;
};
WorkList planChunks(const std::vector<int64_t> &lens, int64_t C) {
  WorkList w;
  for (size_t b = 0; b < lens.size(); ++b) {
    for (int64_t s = 0; s < lens[b]; s += C) {
      w.request.push_back(static_cast<int32_t>(b));
      w.start.push_back(static_cast<int32_t>(s));
      w.end.push_back(static_cast<int32_t>(std::min(s + C, lens[b])));
    }
    w.indptr.push_back(static_cast<int32_t>(w.request.size()));
  }
  return w;
}

/// The capacity the op's contract asks for: B + ceil(kv_indptr[B]*P / C).
int64_t workCapacity(const ref::PageTable &pt, int64_t C) {
  int64_t tokens = static_cast<int64_t>(pt.indptr.back()) * pt.pageSize;
  return pt.batch() + (tokens + C - 1) / C;
}

std::string runPlanCase(JitModule &m, int64_t P, int64_t C, Rng &rng,
                        int caseIdx, OpStats &stats) {
  std::vector<int64_t> lens = decodeLens(rng, caseIdx, P, 150);
  if (caseIdx >= 4 && rng.chance(0.3))
    for (int64_t b = 0, n = rng.uniformInt(0, 4); b < n; ++b)
      lens.push_back(sampleLen(rng, P, 150));
  PagePool pool(rng, totalPages(lens, P));
  ref::PageTable pt = makePageTable(rng, P, lens, pool);
  const int64_t B = pt.batch();
  int64_t cap = workCapacity(pt, C);
  HostArray ip = HostArray::fromI32(pt.indptr);
  HostArray lp = HostArray::fromI32(pt.lastPageLen);
  HostArray wi(Elem::I32, {B + 1}), wr(Elem::I32, {cap}),
      ws(Elem::I32, {cap}), we(Elem::I32, {cap});
  for (HostArray *a : {&wi, &wr, &ws, &we})
    a->fillBytes(0xAB);
  std::string desc = "P=" + std::to_string(P) + " C=" + std::to_string(C) +
                     " " + describeTable(pt) +
                     " capacity=" + std::to_string(cap);
  if (std::string err = m.call("plan", {&ip, &lp, &wi, &wr, &ws, &we});
      !err.empty())
    return err + " (" + desc + ")";
  WorkList w = planChunks(lens, C);
  stats.addExact();
  std::vector<int32_t> gotIndptr = wi.toI32();
  if (gotIndptr != w.indptr)
    return "work_indptr " + join(gotIndptr) + " != expected " +
           join(w.indptr) + " (" + desc + ")";
  int64_t W = static_cast<int64_t>(w.request.size());
  auto prefix = [&](const HostArray &a) {
    std::vector<int32_t> v = a.toI32();
    v.resize(W);
    return v;
  };
  if (prefix(wr) != w.request || prefix(ws) != w.start ||
      prefix(we) != w.end)
    return "work items differ: request " + join(prefix(wr)) + " start " +
           join(prefix(ws)) + " end " + join(prefix(we)) +
           "; expected request " + join(w.request) + " start " +
           join(w.start) + " end " + join(w.end) + " (" + desc + ")";
  return "";
}

/// decode_partial (each work row vs the float64 state over its chunk) and
/// decode_partial + merge_segments (vs ref::decode).
/// A split-KV chain's check: the partial states (`partialRows` rows of
/// `op` / `lp`) against `expectedPart`, then the merged ones (`rows` of `o`
/// / `lse`) against the unsplit op's `expectedFull`.
std::string checkSplit(const std::string &partialOp, const std::string &fullOp,
                       const HostArray &op, const HostArray &lp,
                       const ref::States &expectedPart, int64_t partialRows,
                       const HostArray &o, const HostArray &lse,
                       const ref::States &expectedFull, int64_t rows,
                       Elem elem, OpStats &partialStats, OpStats &chainStats,
                       const std::string &desc) {
  StateResult rp = compareStates(op, lp, expectedPart, partialRows);
  partialStats.add(rp, elem);
  // Partial states are f32; the data they come from may be f16.
  if (!rp.ok(elem == Elem::F32 ? Elem::F32 : Elem::F16))
    return partialOp + " rows: " + rp.str() + " (" + desc + ")";
  StateResult rf = compareStates(o, lse, expectedFull, rows);
  chainStats.add(rf, elem);
  if (!rf.ok(elem))
    return partialOp + " + merge_segments vs " + fullOp + ": " + rf.str() +
           " (" + desc + ")";
  return "";
}

std::string runPartialCase(JitModule &m, const AttnConfig &c, Rng &rng,
                           int caseIdx, OpStats &partialStats,
                           OpStats &chainStats) {
  const int64_t P = c.cache.pageSize, D = c.cache.headDim, C = c.chunkSize;
  std::vector<int64_t> lens = decodeLens(rng, caseIdx, P, 80);
  const int64_t B = static_cast<int64_t>(lens.size());
  PagedInputs in;
  randomPagedInputs(rng, c, totalPages(lens, P), B, in);
  PagePool pool(rng, in.numPages);
  ref::PageTable pt = makePageTable(rng, P, lens, pool);
  PageTableArrays pta = pageTableArrays(pt);
  WorkList w = planChunks(lens, C);
  const int64_t W = static_cast<int64_t>(w.request.size());
  const int64_t cap = W + rng.uniformInt(0, 2);
  auto padded = [&](std::vector<int32_t> v) {
    v.resize(cap, 0);
    return HostArray::fromI32(v);
  };
  HostArray wi = HostArray::fromI32(w.indptr), wr = padded(w.request),
            ws = padded(w.start), we = padded(w.end);
  const int64_t Hq = in.numQHeads;
  HostArray op(Elem::F32, {cap, Hq, D}), lp(Elem::F32, {cap, Hq});
  HostArray o(c.cache.elem, {B, Hq, D}), lse(Elem::F32, {B, Hq});
  for (HostArray *a : {&op, &lp, &o, &lse})
    a->fillBytes(0xFF);

  std::string desc = "B=" + std::to_string(B) + " Hq=" + std::to_string(Hq) +
                     " num_pages=" + std::to_string(in.numPages) + " " +
                     describeTable(pt) + " work_indptr=" + join(w.indptr) +
                     " W=" + std::to_string(W) +
                     " capacity=" + std::to_string(cap);
  std::vector<HostArray *> args{&in.qArr};
  for (HostArray &a : in.cache)
    args.push_back(&a);
  args.insert(args.end(),
              {&pta.indptr, &pta.indices, &pta.lastPageLen, &wi, &wr, &ws, &we});
  if (c.alibi)
    args.push_back(&in.slopesArr);
  args.insert(args.end(), {&op, &lp, &o, &lse});
  if (std::string err = m.call("partial", args); !err.empty())
    return err + " (" + desc + ")";

  ref::States expectedFull, expectedPart;
  try {
    ref::AttnOptions opts = c.refOptions(in.slopes);
    expectedFull = ref::decode(in.q, Hq, in.kv, pt, opts);
    // Work item w as a prefill request of its own: one query (q of its
    // request) at position kv_len - 1, over the request's pages, with a
    // custom mask that keeps the chunk's keys only.
    ref::PageTable items;
    items.pageSize = P;
    items.indptr.push_back(0);
    std::vector<double> qItems;
    std::vector<int32_t> positions;
    std::vector<uint8_t> bits;
    std::vector<int64_t> bitLens;
    for (int64_t i = 0; i < W; ++i) {
      int64_t b = w.request[i];
      for (int32_t p = pt.indptr[b]; p < pt.indptr[b + 1]; ++p)
        items.indices.push_back(pt.indices[p]);
      items.indptr.push_back(static_cast<int32_t>(items.indices.size()));
      items.lastPageLen.push_back(pt.lastPageLen[b]);
      qItems.insert(qItems.end(), in.q.begin() + b * Hq * D,
                    in.q.begin() + (b + 1) * Hq * D);
      positions.push_back(static_cast<int32_t>(lens[b] - 1));
      for (int64_t t = 0; t < lens[b]; ++t)
        bits.push_back(t >= w.start[i] && t < w.end[i]);
      bitLens.push_back(lens[b]);
    }
    auto [packed, maskIndptr] = ref::packMask(bits, indptrOf(bitLens));
    std::vector<int32_t> qo(W + 1);
    std::iota(qo.begin(), qo.end(), 0);
    opts.mask = ref::MaskMode::Custom;
    expectedPart = ref::prefill(qItems, Hq, qo, in.kv, items, opts,
                                &positions, &packed, &maskIndptr);
  } catch (const ref::Error &e) {
    return std::string("harness bug: the oracle rejected the input: ") +
           e.what() + " (" + desc + ")";
  }
  return checkSplit("decode_partial", "decode", op, lp, expectedPart, W, o,
                    lse, expectedFull, B, c.cache.elem, partialStats,
                    chainStats, desc);
}

/// A random ragged prefill split by the runtime's planner
/// (pa::rt::planPrefill, with few CTA slots and small or forced chunks so
/// that tiles split, items shuffled): pa.prefill_partial's rows against
/// ref::prefillPartial, and merge_segments of them against ref::prefill.
std::string runPrefillPartialCase(JitModule &m, const AttnConfig &c, Rng &rng,
                                  int caseIdx, OpStats &partialStats,
                                  OpStats &chainStats) {
  const int64_t P = c.cache.pageSize, D = c.cache.headDim;
  PrefillBatch pb(c, rng, caseIdx, 80);
  const int64_t B = pb.B, Nq = pb.Nq;
  PagedInputs &in = pb.in;
  const ref::PageTable &pt = pb.pt;
  const std::vector<int32_t> &qoIndptr = pb.qoIndptr;

  // The work list: the planner's, on 1 SM with a few slots so that it
  // splits, sometimes with a forced chunk that is no multiple of anything.
  int64_t hkv = c.cache.kvHeads, qpt = rng.uniformInt(1, 4);
  int64_t forceChunk = rng.pick(std::vector<int64_t>{0, 0, 1, 3, 7, P + 1});
  pa::rt::PrefillPlan plan;
  pa::rt::Status st = pa::rt::planPrefill(
      qoIndptr, pt.indptr, pt.lastPageLen, B, Nq, P, hkv, qpt, c.causal,
      c.positions, 1, rng.uniformInt(hkv, 64), plan,
      rng.pick(std::vector<int64_t>{1, 2, 5, P}), forceChunk,
      /*forcePartial=*/true);
  if (!st)
    return "harness bug: the planner rejected the batch: " + st.message;
  if (!plan.split) // only a batch without queries has no split plan
    return Nq == 0 ? "" : "harness bug: the plan is not a split plan";
  pa::rt::PrefillWorkList w = plan.work;
  const int64_t W = w.size(), R = plan.numPartialRows;
  // The order of the items does not matter: shuffle them.
  std::vector<int64_t> order(W);
  std::iota(order.begin(), order.end(), 0);
  rng.shuffle(order);
  std::vector<std::vector<int32_t>> arrays(7);
  std::vector<ref::PrefillWorkItem> items;
  for (int64_t k : order) {
    ref::PrefillWorkItem it{w.request[k], w.qoStart[k],    w.qoEnd[k],
                            w.kvStart[k], w.kvEnd[k],      w.partialRow[k],
                            w.partialStride[k]};
    items.push_back(it);
    int32_t fields[7] = {it.request, it.qoStart,    it.qoEnd,
                         it.kvStart, it.kvEnd,      it.partialRow,
                         it.partialStride};
    for (int f = 0; f < 7; ++f)
      arrays[f].push_back(fields[f]);
  }
  std::vector<HostArray> workArr;
  for (const std::vector<int32_t> &a : arrays)
    workArr.push_back(HostArray::fromI32(a));
  HostArray seg = HostArray::fromI32(w.mergeIndptr);
  const int64_t Hq = in.numQHeads;
  HostArray op(Elem::F32, {R, Hq, D}), lp(Elem::F32, {R, Hq});
  HostArray o(c.cache.elem, {Nq, Hq, D}), lse(Elem::F32, {Nq, Hq});
  for (HostArray *a : {&op, &lp, &o, &lse})
    a->fillBytes(0xFF);

  std::string desc = "B=" + std::to_string(B) + " Hq=" + std::to_string(Hq) +
                     " qo_len=" + join(pb.qoLens) + " " + describeTable(pt) +
                     " queries/tile=" + std::to_string(qpt) +
                     " chunk=" + std::to_string(plan.kvChunk) +
                     " W=" + std::to_string(W) + " R=" + std::to_string(R);
  std::vector<HostArray *> args = pb.args(c, &workArr);
  args.insert(args.end(), {&seg, &op, &lp, &o, &lse});
  if (std::string err = m.call("prefill_partial", args); !err.empty())
    return err + " (" + desc + ")";

  ref::States expectedFull, expectedPart;
  try {
    ref::AttnOptions opts = c.refOptions(in.slopes);
    const std::vector<int32_t> *pos = pb.refPositions(c);
    const std::vector<uint8_t> *mask = pb.refMask(c);
    const std::vector<int32_t> *mi = pb.refMaskIndptr(c);
    expectedFull =
        ref::prefill(in.q, Hq, qoIndptr, in.kv, pt, opts, pos, mask, mi);
    expectedPart = ref::prefillPartial(in.q, Hq, qoIndptr, in.kv, pt, opts,
                                       items, R, pos, mask, mi);
  } catch (const ref::Error &e) {
    return std::string("harness bug: the oracle rejected the input: ") +
           e.what() + " (" + desc + ")";
  }
  return checkSplit("prefill_partial", "prefill", op, lp, expectedPart, R, o,
                    lse, expectedFull, Nq, c.cache.elem, partialStats,
                    chainStats, desc);
}

} // namespace

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

TEST(PACPUDifferential, Decode) {
  runDecodeTest("Decode", PipelineConfig{}, /*randomChunk=*/false, kConfigs,
                kCasesPerConfig, "pa.decode");
}

TEST(PACPUDifferential, DecodeTiled) {
  // pa.decode through pa-tile-attention: one query tile per request and KV
  // head (the tensor-core decode's tiling, emitPrefillQueryTile), every
  // decode option (window, soft-cap, ALiBi, lse base 2), tile rows from the
  // group up and KV tiles from 1 key.
  OpStats stats("pa.decode (tile-attention)");
  runDifferentialTest(
      "DecodeTiled", 7, kConfigSalt, 30, kCasesPerConfig, {&stats},
      [&](Rng &crng, int ci) {
        AttnConfig c = randomDecodeConfig(crng, ci);
        // A fixed group (static query heads), so that tile-q holds whole
        // groups; 0 would leave tiling off.
        c.group = crng.pick(std::vector<int64_t>{1, 2, 4, 5, 8});
        PipelineConfig pc;
        pc.tileQ = c.group * crng.pick(std::vector<int64_t>{1, 2, 16});
        pc.tileKV = crng.pick(std::vector<int64_t>{1, 3, 16, 64});
        return DiffConfig{c.str(), decodeModule(c), pc,
                          [c, &stats](JitModule &m, Rng &rng, int k) {
                            return runDecodeCase(m, c, rng, k, stats);
                          }};
      });
}

TEST(PACPUDifferential, Prefill) {
  OpStats stats("pa.prefill");
  // 45 configurations: 9 of each mask mode.
  runDifferentialTest("Prefill", 2, kConfigSalt, 45, kCasesPerConfig, {&stats},
                      [&](Rng &crng, int ci) {
                        AttnConfig c = randomPrefillConfig(crng, ci);
                        return DiffConfig{
                            c.str(), prefillModule(c), PipelineConfig{},
                            [c, &stats](JitModule &m, Rng &rng, int k) {
                              return runPrefillCase(m, c, rng, k, stats);
                            }};
                      });
}

TEST(PACPUDifferential, PrefillTiled) {
  OpStats stats("pa.prefill (tile-attention)");
  // The prefill configurations (every mask mode, 9 of each) with a fixed
  // group and tile sizes from one packed row group up.
  runDifferentialTest(
      "PrefillTiled", 3, kConfigSalt, 45, kCasesPerConfig, {&stats},
      [&](Rng &crng, int ci) {
        AttnConfig c = randomPrefillConfig(crng, ci);
        c.group = crng.pick(std::vector<int64_t>{1, 2, 4, 5, 8});
        PipelineConfig pc;
        pc.tileQ = c.group * crng.pick(std::vector<int64_t>{1, 2, 3, 8});
        pc.tileKV = crng.pick(std::vector<int64_t>{1, 3, 16, 64});
        return DiffConfig{c.str(), prefillModule(c), pc,
                          [c, &stats](JitModule &m, Rng &rng, int k) {
                            return runPrefillCase(m, c, rng, k, stats);
                          }};
      });
}

TEST(PACPUDifferential, Cascade) {
  runCascadeTest("Cascade", PipelineConfig{}, kConfigs, kCasesPerConfig,
                 "pa.cascade");
}

TEST(PACPUDifferential, CascadeDecomposed) {
  PipelineConfig pc;
  pc.cascadeDecompose = true;
  runCascadeTest("CascadeDecomposed", pc, 20, 12,
                 "pa.cascade (cascade-decompose=true)");
}

TEST(PACPUDifferential, CascadeSharded) {
  // pa-lower-to-cpu{shard-devices=3}: the cascade decomposed into its levels
  // (a prefill or decode each, and merges), every level sharded over 3
  // simulated devices (prefill levels by pa.shard_work, decode levels by
  // pa.shard_pages), against the float64 reference of the whole cascade.
  PipelineConfig pc;
  pc.shardDevices = 3;
  runCascadeTest("CascadeSharded", pc, 12, 8,
                 "pa.cascade (shard-devices = 3)");
}

TEST(PACPUDifferential, DecodeSplitKVPipeline) {
  runDecodeTest("DecodeSplitKVPipeline", PipelineConfig{},
                /*randomChunk=*/true, 20, 12,
                "pa.decode (split-kv-chunk > 0)");
}

TEST(PACPUDifferential, DecodeSharded) {
  // Context parallelism (pa-lower-to-cpu{shard-devices=N}): every decode
  // split over 1..5 simulated devices by pages (contiguous ranges or round
  // robin), one decode per device over pa.shard_pages' table and pa.merge of
  // the states, against the float64 reference over the whole cache; batches
  // with empty requests and requests of fewer pages than devices. Window
  // and ALiBi are cleared (a shard renumbers its keys; those decodes shard
  // with their positions: DecodeShardedPositional, contiguous only).
  OpStats stats("pa.decode (shard-devices > 0)");
  runDifferentialTest(
      "DecodeSharded", 8, kConfigSalt, 24, 8, {&stats},
      [&](Rng &crng, int ci) {
        AttnConfig c = randomDecodeConfig(crng, ci);
        c.window.reset();
        c.alibi = false;
        PipelineConfig pc;
        pc.shardDevices = 1 + ci % 5;
        pc.shardRoundRobin = crng.chance(0.5);
        return DiffConfig{c.str(), decodeModule(c), pc,
                          [c, &stats](JitModule &m, Rng &rng, int k) {
                            return runDecodeCase(m, c, rng, k, stats);
                          }};
      });
}

TEST(PACPUDifferential, DecodeShardedPositional) {
  // Decodes whose scores depend on key positions, sharded over 1..5
  // simulated devices by contiguous page ranges: a pa.decode_partial per
  // device over pa.shard_work's decode-form list (keys in their own
  // positions) and pa.merge of the f32 states, against the float64
  // reference over the whole cache. Every configuration has a window or
  // ALiBi (or both).
  OpStats stats("pa.decode with window / ALiBi (shard-devices > 0)");
  runDifferentialTest(
      "DecodeShardedPositional", 10, kConfigSalt, 16, 8, {&stats},
      [&](Rng &crng, int ci) {
        AttnConfig c = randomDecodeConfig(crng, ci);
        if (!c.window && !c.alibi)
          c.window = crng.uniformInt(1, 300);
        if (ci % 2)
          c.alibi = true;
        PipelineConfig pc;
        pc.shardDevices = crng.uniformInt(1, 5);
        return DiffConfig{c.str() + " devices=" +
                              std::to_string(pc.shardDevices),
                          decodeModule(c), pc,
                          [c, &stats](JitModule &m, Rng &rng, int k) {
                            return runDecodeCase(m, c, rng, k, stats);
                          }};
      });
}

TEST(PACPUDifferential, PrefillSharded) {
  // Context parallelism that keeps positions (pa-lower-to-cpu{shard-devices=N}
  // on pa.prefill): every prefill split over 1..5 simulated devices by
  // contiguous page ranges, one pa.prefill_partial per device over
  // pa.shard_work's work list (its keys in their own positions) and pa.merge
  // of the f32 states into the prefill's outs, against the float64
  // reference over the whole cache: every mask mode (causal, window,
  // custom mask, ALiBi, soft cap, q_positions) of the prefill configurations.
  OpStats stats("pa.prefill (shard-devices > 0)");
  runDifferentialTest(
      "PrefillSharded", 9, kConfigSalt, 20, kCasesPerConfig, {&stats},
      [&](Rng &crng, int ci) {
        AttnConfig c = randomPrefillConfig(crng, ci); // mask mode ci % 5
        PipelineConfig pc;
        pc.shardDevices = crng.uniformInt(1, 5);
        return DiffConfig{c.str() + " devices=" +
                              std::to_string(pc.shardDevices),
                          prefillModule(c), pc,
                          [c, &stats](JitModule &m, Rng &rng, int k) {
                            return runPrefillCase(m, c, rng, k, stats);
                          }};
      });
}

TEST(PACPUDifferential, PlanSplitKV) {
  OpStats stats("pa.plan_split_kv", false);
  runDifferentialTest(
      "PlanSplitKV", 4, kConfigSalt, 30, kCasesPerConfig, {&stats},
      [&](Rng &crng, int ci) {
        static const std::vector<int64_t> fixedP = {1, 16, 64, 3, 5, 7};
        int64_t P = ci < 6 ? fixedP[ci] : crng.uniformInt(1, 64);
        int64_t C =
            crng.pick(std::vector<int64_t>{1, 2, 7, P, 2 * P, 16, 33, 64, 256});
        std::ostringstream cs;
        cs << "P=" << P << " chunk_size=" << C;
        return DiffConfig{cs.str(), planFunc(P, C), PipelineConfig{},
                          [P, C, &stats](JitModule &m, Rng &rng, int k) {
                            return runPlanCase(m, P, C, rng, k, stats);
                          }};
      });
}

TEST(PACPUDifferential, DecodePartialMergeSegments) {
  OpStats partialStats("pa.decode_partial (rows vs per-chunk reference)");
  OpStats chainStats("pa.decode_partial + pa.merge_segments (vs decode)");
  runDifferentialTest(
      "DecodePartialMergeSegments", 5, kConfigSalt, kConfigs, kCasesPerConfig,
      {&partialStats, &chainStats}, [&](Rng &crng, int ci) {
        AttnConfig c = randomDecodeConfig(crng, ci);
        c.chunkSize = crng.pick(std::vector<int64_t>{
            1, 3, c.cache.pageSize, 2 * c.cache.pageSize, 16, 64});
        // Every other configuration through pa-tile-attention (the
        // tensor-core decode's tiling), with a fixed group so that tile-q
        // holds whole groups.
        PipelineConfig pc;
        if (ci % 2 == 1) {
          c.group = crng.pick(std::vector<int64_t>{1, 2, 4, 5});
          pc.tileQ = c.group * crng.pick(std::vector<int64_t>{1, 2, 16});
          pc.tileKV = crng.pick(std::vector<int64_t>{1, 3, 16, 64});
        }
        return DiffConfig{
            c.str(), partialFunc(c), pc,
            [c, &partialStats, &chainStats](JitModule &m, Rng &rng, int k) {
              return runPartialCase(m, c, rng, k, partialStats, chainStats);
            }};
      });
}

TEST(PACPUDifferential, PrefillPartialMergeSegments) {
  OpStats partialStats("pa.prefill_partial (rows vs reference)");
  OpStats chainStats("pa.prefill_partial + pa.merge_segments (vs prefill)");
  // The prefill configurations (every mask mode, 9 of each), through the
  // loops lowering and through pa-tile-attention (every other config).
  runDifferentialTest(
      "PrefillPartialMergeSegments", 6, kConfigSalt, 30, kCasesPerConfig,
      {&partialStats, &chainStats}, [&](Rng &crng, int ci) {
        AttnConfig c = randomPrefillConfig(crng, ci);
        PipelineConfig pc;
        if (ci % 2) {
          // A fixed group, so that tile-q can hold whole groups.
          c.group = crng.pick(std::vector<int64_t>{1, 2, 4, 5});
          pc.tileQ = c.group * crng.pick(std::vector<int64_t>{1, 2, 3});
          pc.tileKV = crng.pick(std::vector<int64_t>{1, 3, 16});
        }
        return DiffConfig{
            c.str() + (ci % 2 ? " tiled" : ""), prefillPartialFunc(c), pc,
            [c, &partialStats, &chainStats](JitModule &m, Rng &rng, int k) {
              return runPrefillPartialCase(m, c, rng, k, partialStats,
                                           chainStats);
            }};
      });
}
