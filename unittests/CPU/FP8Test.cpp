//===- FP8Test.cpp - CPU lowering over fp8 KV caches vs pa::ref -----------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// FP8 KV caches (f8E4M3FN, f8E5M2) with per-tensor or per-KV-head K and V
// scales, through pa-lower-to-cpu + the JIT:
//
//   * pa-expand-fp8's conversions against APFloat: extf of every fp8 code,
//     truncf of f32 / f16 values around every rounding boundary, overflow,
//     subnormals and NaN;
//   * pa.decode (also split by pa-split-kv into pa.decode_partial +
//     pa.merge_segments), pa.prefill and pa.cascade (a shared prefix and
//     per-request suffixes, directly and through pa-cascade-decompose)
//     against the float64 oracle over the same fp8 values: the oracle
//     dequantizes exactly those values, so the attention math is held to
//     the tolerance of q's element type (relative L2 of o: f32 1e-5, f16
//     2e-3, bf16 8e-3, i.e. about the rounding of o to that type; lse is
//     f32);
//   * pa.append_kv, pa.append_kv_slots and pa.scatter_kv: quantize on
//     write, including saturation, +-inf and NaN rows; the whole cache is
//     compared byte for byte with the oracle's.
//
//===----------------------------------------------------------------------===//

#include "JitHarness.h"

#include "gtest/gtest.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

#include <cmath>

using namespace pa_cpu_test;
using llvm::APFloat;
using llvm::APInt;

namespace {

constexpr uint64_t kConfigSalt = 0xF8F8;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

//===----------------------------------------------------------------------===//
// fp8 codes (through APFloat, independent of the oracle and the lowering)
//===----------------------------------------------------------------------===//

const llvm::fltSemantics &semOf(ref::FP8Format f) {
  return f == ref::FP8Format::E4M3FN ? APFloat::Float8E4M3FN()
                                     : APFloat::Float8E5M2();
}
const char *typeName(ref::FP8Format f) {
  return f == ref::FP8Format::E4M3FN ? "f8E4M3FN" : "f8E5M2";
}

/// The value of fp8 code `byte`.
double decodeFP8(uint8_t byte, ref::FP8Format f) {
  APFloat v(semOf(f), APInt(8, byte));
  bool lost;
  v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
  return v.convertToDouble();
}

/// The code of `x`, rounded to nearest even by APFloat (exact for values of
/// the format).
uint8_t encodeFP8(double x, ref::FP8Format f) {
  APFloat v(x);
  bool lost;
  v.convert(semOf(f), APFloat::rmNearestTiesToEven, &lost);
  return static_cast<uint8_t>(v.bitcastToAPInt().getZExtValue());
}

/// Same value (NaN equals NaN; the sign of zero counts).
bool sameValue(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

//===----------------------------------------------------------------------===//
// pa-expand-fp8 against APFloat
//===----------------------------------------------------------------------===//

/// @ext: out[i] = extf(in[i]) : fp8 -> f32; @trunc32 / @trunc16: out[i] =
/// truncf(in[i]) : f32 / f16 -> fp8.
std::string conversionModule(ref::FP8Format f) {
  std::string t = typeName(f);
  std::ostringstream os;
  auto loop = [&](const std::string &name, const std::string &from,
                  const std::string &to, const std::string &op) {
    os << "func.func @" << name << "(%in: memref<?x" << from
       << ">, %out: memref<?x" << to
       << ">) attributes {llvm.emit_c_interface} {\n"
       << "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : "
          "index\n  %n = memref.dim %in, %c0 : memref<?x"
       << from << ">\n  scf.for %i = %c0 to %n step %c1 {\n"
       << "    %x = memref.load %in[%i] : memref<?x" << from << ">\n"
       << "    %y = arith." << op << " %x : " << from << " to " << to << "\n"
       << "    memref.store %y, %out[%i] : memref<?x" << to << ">\n  }\n"
       << "  return\n}\n";
  };
  loop("ext", t, "f32", "extf");
  loop("trunc32", "f32", t, "truncf");
  loop("trunc16", "f16", t, "truncf");
  return os.str();
}

/// f32 inputs around every boundary of the format: every value, the
/// midpoints between neighbours and one f32 ulp on either side, the
/// overflow threshold, subnormals, zeros, infinities, NaN, f32 denormals,
/// and random values over the whole exponent range.
std::vector<float> truncInputs(ref::FP8Format f, Rng &rng) {
  std::vector<double> values;
  for (int b = 0; b < 256; ++b) {
    double v = decodeFP8(static_cast<uint8_t>(b), f);
    if (std::isfinite(v))
      values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  std::vector<float> in;
  auto addAround = [&](double x) {
    float v = static_cast<float>(x);
    in.push_back(v);
    in.push_back(std::nextafter(v, std::numeric_limits<float>::infinity()));
    in.push_back(std::nextafter(v, -std::numeric_limits<float>::infinity()));
  };
  for (size_t i = 0; i < values.size(); ++i) {
    addAround(values[i]);
    if (i + 1 < values.size())
      addAround((values[i] + values[i + 1]) / 2);
  }
  double max = ref::fp8Max(f);
  double topUlp = max - values[values.size() - 2];
  for (double x : {max + topUlp / 2, max + topUlp, 2 * max, 1e30, 3.0e38}) {
    addAround(x);
    addAround(-x);
  }
  for (float x : {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(),
                  -std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min(),
                  -std::numeric_limits<float>::min()})
    in.push_back(x);
  for (int i = 0; i < 20000; ++i) {
    double mag = std::ldexp(rng.uniform(1, 2),
                            static_cast<int>(rng.uniformInt(-30, 17)));
    in.push_back(static_cast<float>(rng.chance(0.5) ? mag : -mag));
  }
  return in;
}

void checkConversions(ref::FP8Format f) {
  std::string err;
  JitModule *m = compile(conversionModule(f), PipelineConfig{}, err);
  ASSERT_NE(m, nullptr) << err;
  const char *name = typeName(f);

  // extf of every code.
  std::vector<uint8_t> codes(256);
  for (int b = 0; b < 256; ++b)
    codes[b] = static_cast<uint8_t>(b);
  HostArray in = HostArray::fromBytes(Elem::I8, codes);
  HostArray out(Elem::F32, {256});
  ASSERT_EQ(m->call("ext", {&in, &out}), "");
  for (int b = 0; b < 256; ++b)
    EXPECT_TRUE(sameValue(out.get(b), decodeFP8(static_cast<uint8_t>(b), f)))
        << "extf " << name << " code " << b << ": got " << out.get(b)
        << ", APFloat " << decodeFP8(static_cast<uint8_t>(b), f);

  // truncf from f32 and f16.
  uint64_t seed = baseSeed(std::string("FP8Conversions") + name, 31);
  std::cout << "[pa-cpu-diff] FP8Conversions " << name << " base seed " << seed
            << std::endl;
  Rng rng(seed);
  std::vector<float> xs = truncInputs(f, rng);
  for (bool half : {false, true}) {
    std::vector<double> vals(xs.begin(), xs.end());
    if (half) // f16 inputs: the same values rounded to f16 (inf beyond)
      for (double &v : vals)
        v = roundTo(Elem::F16, v);
    int64_t n = static_cast<int64_t>(vals.size());
    HostArray src =
        HostArray::fromDoubles(half ? Elem::F16 : Elem::F32, vals, {n});
    HostArray dst(Elem::I8, {n});
    ASSERT_EQ(m->call(half ? "trunc16" : "trunc32", {&src, &dst}), "");
    std::vector<uint8_t> got = dst.toBytes();
    int failures = 0;
    for (int64_t i = 0; i < n && failures < 10; ++i) {
      double x = src.get(i);
      uint8_t want = encodeFP8(x, f);
      bool ok = got[i] == want || (std::isnan(decodeFP8(want, f)) &&
                                   std::isnan(decodeFP8(got[i], f)));
      if (!ok) {
        ++failures;
        ADD_FAILURE() << "truncf " << (half ? "f16" : "f32") << " -> " << name
                      << " of " << x << " (seed " << seed << "): got code "
                      << int(got[i]) << " = " << decodeFP8(got[i], f)
                      << ", APFloat code " << int(want) << " = "
                      << decodeFP8(want, f);
      }
    }
    std::cout << "[pa-cpu-diff] FP8Conversions " << name << " truncf from "
              << (half ? "f16" : "f32") << ": " << n << " values" << std::endl;
  }
}

//===----------------------------------------------------------------------===//
// Configurations
//===----------------------------------------------------------------------===//

struct FP8Config {
  CacheConfig cache; // cache.elem: the element type of q / the rows written
  ref::FP8Format format = ref::FP8Format::E4M3FN;
  bool kPerHead = false, vPerHead = false;
  std::optional<float> smScale, softCap;
  bool causal = false;
  int64_t chunk = 0; // split-KV chunk of the decode test
  /// > 0: a static GQA group (query heads kvHeads * group), which
  /// pa-tile-attention needs; 0: query heads vary per case.
  int64_t group = 0;

  std::string cacheType() const {
    std::ostringstream os;
    os << "tensor<?x" << (cache.joint ? "2x" : "");
    if (cache.layout == ref::KVLayout::NHD)
      os << cache.pageSize << "x" << cache.kvHeads;
    else
      os << cache.kvHeads << "x" << cache.pageSize;
    os << "x" << cache.headDim << "x" << typeName(format) << ">";
    return os.str();
  }
  std::string scaleType(bool perHead) const {
    return "tensor<" + std::to_string(perHead ? cache.kvHeads : 1) + "xf32>";
  }
  /// `scales(%ks, %vs : T, T)`
  std::string scales() const {
    return " scales(%ks, %vs : " + scaleType(kPerHead) + ", " +
           scaleType(vPerHead) + ")";
  }
  std::string scaleArgs() const {
    return ", %ks: " + scaleType(kPerHead) + ", %vs: " + scaleType(vPerHead);
  }
  std::string cacheArgs() const {
    return cache.joint ? "%k: " + cacheType()
                       : "%k: " + cacheType() + ", %v: " + cacheType();
  }
  std::string cacheOperands() const {
    return cache.joint ? "%k : " + cacheType()
                       : "%k, %v : " + cacheType() + ", " + cacheType();
  }
  std::string attrDict() const {
    std::ostringstream os;
    os << "{cache = " << cache.attr();
    if (causal)
      os << ", causal";
    if (smScale)
      os << ", sm_scale = " << fmtF32(*smScale) << " : f32";
    if (softCap)
      os << ", logits_soft_cap = " << fmtF32(*softCap) << " : f32";
    os << "}";
    return os.str();
  }
  std::string str() const {
    std::ostringstream os;
    os << (cache.layout == ref::KVLayout::NHD ? "NHD" : "HND")
       << " P=" << cache.pageSize << " Hkv=" << cache.kvHeads
       << " D=" << cache.headDim << " " << typeName(format) << " "
       << (cache.joint ? "joint" : "split") << " k_scale "
       << (kPerHead ? "per-head" : "per-tensor") << ", v_scale "
       << (vPerHead ? "per-head" : "per-tensor") << ", "
       << elemName(cache.elem);
    if (causal)
      os << " causal";
    if (smScale)
      os << " sm_scale=" << *smScale;
    if (softCap)
      os << " soft_cap=" << *softCap;
    if (chunk)
      os << " split-kv chunk=" << chunk;
    if (group)
      os << " group=" << group;
    return os.str();
  }
  ref::AttnOptions refOptions() const {
    ref::AttnOptions o;
    if (smScale)
      o.smScale = static_cast<double>(*smScale);
    if (softCap)
      o.logitsSoftCap = static_cast<double>(*softCap);
    o.mask = causal ? ref::MaskMode::Causal : ref::MaskMode::None;
    return o;
  }
};

/// Configuration `idx`: both formats and all four scale granularities
/// cycle in the first eight; layout, storage, q's element type and the page
/// size vary.
FP8Config randomFP8Config(Rng &rng, int idx) {
  FP8Config c;
  c.cache = randomCacheConfig(rng, idx, {4, 8, 16, 32, 12});
  c.format = idx % 2 == 0 ? ref::FP8Format::E4M3FN : ref::FP8Format::E5M2;
  c.kPerHead = (idx / 2) % 2 == 1;
  c.vPerHead = (idx / 4) % 2 == 1;
  c.cache.elem =
      std::vector<Elem>{Elem::F32, Elem::F16, Elem::BF16}[(idx / 8 + idx) % 3];
  c.cache.layout = (idx / 3) % 2 == 0 ? ref::KVLayout::NHD : ref::KVLayout::HND;
  if (c.cache.kvHeads == 1 && (c.kPerHead || c.vPerHead))
    c.cache.kvHeads = 2; // make per-head scales differ from per-tensor ones
  if (rng.chance(0.3))
    c.smScale = rng.pick(std::vector<float>{0.5f, 0.125f, 0.3f});
  if (rng.chance(0.2))
    c.softCap = rng.pick(std::vector<float>{1.5f, 5.0f});
  return c;
}

//===----------------------------------------------------------------------===//
// Caches
//===----------------------------------------------------------------------===//

/// A random fp8 cache: elements are mostly values spread over the format's
/// range (x * max for x uniform in [-1, 1), rounded), some random codes
/// (subnormals, zeros; NaN and inf only in pages no request reads when
/// `specials`), and scales that bring the values to about [-1, 1].
ref::PagedKV randomFP8Cache(Rng &rng, const FP8Config &c, int64_t numPages) {
  const CacheConfig &cc = c.cache;
  ref::PagedKV kv(cc.layout, numPages, cc.pageSize, cc.kvHeads, cc.headDim);
  double max = ref::fp8Max(c.format);
  for (std::vector<double> *vals : {&kv.k, &kv.v})
    for (double &x : *vals) {
      if (rng.chance(0.1)) {
        double v =
            decodeFP8(static_cast<uint8_t>(rng.uniformInt(0, 255)), c.format);
        x = std::isfinite(v) ? v : 0.0;
      } else {
        x = ref::quantizeFP8(rng.uniform(-1, 1) * max, c.format);
      }
    }
  auto scales = [&](bool perHead) {
    std::vector<double> s(perHead ? cc.kvHeads : 1);
    for (double &x : s) // f32 values: the operands are f32
      x = static_cast<float>(rng.uniform(0.5, 2.0) / max);
    return s;
  };
  kv.fp8 = ref::FP8Scales{c.format, scales(c.kPerHead), scales(c.vPerHead)};
  return kv;
}

/// The cache operands (bytes) of an fp8 reference cache.
std::vector<HostArray> fp8CacheArrays(const FP8Config &c,
                                      const ref::PagedKV &kv) {
  pa::test::CacheGeometry g = c.cache.geometry();
  std::vector<HostArray> arrays;
  for (int a = 0; a < g.numBuffers(); ++a)
    arrays.emplace_back(Elem::I8, c.cache.shape(kv.numPages));
  for (int which = 0; which < 2; ++which) {
    const std::vector<double> &vals = which == 0 ? kv.k : kv.v;
    uint8_t *dst = static_cast<uint8_t *>(arrays[g.bufferOf(which)].data());
    for (int64_t i = 0; i < static_cast<int64_t>(vals.size()); ++i)
      dst[g.offsetOfRef(i, which)] = encodeFP8(vals[i], c.format);
  }
  return arrays;
}

HostArray scaleArray(const std::vector<double> &s) {
  return HostArray::fromDoubles(Elem::F32, s, {static_cast<int64_t>(s.size())});
}

//===----------------------------------------------------------------------===//
// Attention: decode (+ split-KV) and prefill
//===----------------------------------------------------------------------===//

std::string qType(const FP8Config &c) {
  std::string heads =
      c.group ? std::to_string(c.cache.kvHeads * c.group) : std::string("?");
  return "tensor<?x" + heads + "x" + std::to_string(c.cache.headDim) + "x" +
         elemName(c.cache.elem) + ">";
}

std::string attentionModule(const FP8Config &c, bool prefill) {
  std::string q = qType(c), it = "tensor<?xi32>", lse = "tensor<?x?xf32>";
  std::ostringstream os;
  os << "func.func @fp8_attn(%q: " << q;
  if (prefill)
    os << ", %qo: " << it;
  os << ", " << c.cacheArgs() << c.scaleArgs() << ", %ip: " << it
     << ", %ix: " << it << ", %lp: " << it << ", %o0: " << q << ", %l0: " << lse
     << ") -> (" << q << ", " << lse
     << ") attributes {llvm.emit_c_interface} {\n";
  os << "  %r:2 = "
     << (prefill ? "pa.prefill q(%q, %qo : " + q + ", " + it
                 : "pa.decode q(%q : " + q)
     << ") kv(" << c.cacheOperands() << ")" << c.scales()
     << " pages(%ip, %ix, %lp : " << it << ", " << it << ", " << it
     << ") outs(%o0, %l0 : " << q << ", " << lse << ") " << c.attrDict()
     << "\n  return %r#0, %r#1 : " << q << ", " << lse << "\n}\n";
  return os.str();
}

std::string runAttentionCase(JitModule &m, const FP8Config &c, bool prefill,
                             Rng &rng, int caseIdx, OpStats &stats) {
  const int64_t P = c.cache.pageSize, D = c.cache.headDim;
  int64_t B = caseIdx == 0 ? 0 : rng.uniformInt(1, 4);
  std::vector<int64_t> lens(B), qoLens(B, 1);
  for (int64_t b = 0; b < B; ++b) {
    lens[b] = caseIdx == 1 && b == 0 ? 0 : sampleLen(rng, P, 70);
    if (prefill)
      qoLens[b] = rng.uniformInt(0, std::min<int64_t>(lens[b], 5));
  }
  int64_t numPages = totalPages(lens, P) + rng.uniformInt(0, 3);
  ref::PagedKV kv = randomFP8Cache(rng, c, numPages);
  std::vector<HostArray> cache = fp8CacheArrays(c, kv);
  HostArray ks = scaleArray(kv.fp8->kScale), vs = scaleArray(kv.fp8->vScale);
  PagePool pool(rng, numPages);
  ref::PageTable pt = makePageTable(rng, P, lens, pool);
  PageTableArrays pta = pageTableArrays(pt);
  std::vector<int32_t> qoIndptr = indptrOf(qoLens);
  int64_t rows = prefill ? qoIndptr.back() : B;
  int64_t hq = c.cache.kvHeads * (c.group ? c.group : rng.uniformInt(1, 4));
  std::vector<double> q = randomValues(rng, rows * hq * D, c.cache.elem, -2, 2);
  HostArray qArr = HostArray::fromDoubles(c.cache.elem, q, {rows, hq, D});
  HostArray qoArr = HostArray::fromI32(qoIndptr);
  HostArray o(c.cache.elem, {rows, hq, D}), lse(Elem::F32, {rows, hq});
  o.fillBytes(0xFF);
  lse.fillBytes(0xFF);

  std::string desc =
      "B=" + std::to_string(B) + " Hq=" + std::to_string(hq) +
      " num_pages=" + std::to_string(numPages) +
      " k_scale=" + join(kv.fp8->kScale) + " v_scale=" + join(kv.fp8->vScale) +
      " " + describeTable(pt) + (prefill ? " qo_indptr=" + join(qoIndptr) : "");
  std::vector<HostArray *> args{&qArr};
  if (prefill)
    args.push_back(&qoArr);
  for (HostArray &a : cache)
    args.push_back(&a);
  args.insert(args.end(), {&ks, &vs, &pta.indptr, &pta.indices,
                           &pta.lastPageLen, &o, &lse});
  if (std::string err = m.call("fp8_attn", args); !err.empty())
    return err + " (" + desc + ")";
  return checkAgainstOracle(
      [&] {
        return prefill ? ref::prefill(q, hq, qoIndptr, kv, pt, c.refOptions())
                       : ref::decode(q, hq, kv, pt, c.refOptions());
      },
      o, lse, rows, c.cache.elem, stats, desc);
}

/// With `tiled`, through pa-tile-attention (the GPU kernels' tiling: the
/// tiles hold the fp8 values, pa.tile.qk and pa.tile.store apply the KV
/// head's scales) with a static group and tile sizes from one group up.
void runAttentionTest(const std::string &testName, bool prefill,
                      uint64_t defaultSeed, bool tiled = false) {
  std::string what = prefill ? "pa.prefill (fp8 cache" : "pa.decode (fp8 cache";
  OpStats stats(what + (tiled ? ", tile-attention)" : ")"));
  runDifferentialTest(
      testName, defaultSeed, kConfigSalt, 24, 10, {&stats},
      [&](Rng &crng, int ci) {
        FP8Config c = randomFP8Config(crng, ci);
        PipelineConfig pc;
        if (tiled) {
          c.group = crng.pick(std::vector<int64_t>{1, 2, 4, 5});
          pc.tileQ = c.group * crng.pick(std::vector<int64_t>{1, 2, 16});
          pc.tileKV = crng.pick(std::vector<int64_t>{1, 3, 16, 64});
        }
        if (prefill) {
          c.causal = ci % 3 != 2;
        } else if (ci % 3 == 1) { // decode_partial + merge_segments
          pc.splitKVChunk = crng.pick(std::vector<int64_t>{1, 7, 16});
          c.chunk = pc.splitKVChunk;
        }
        return DiffConfig{c.str(), attentionModule(c, prefill), pc,
                          [c, prefill, &stats](JitModule &m, Rng &rng, int k) {
                            return runAttentionCase(m, c, prefill, rng, k,
                                                    stats);
                          }};
      });
}

//===----------------------------------------------------------------------===//
// Cascade: a shared prefix level and a per-request level
//===----------------------------------------------------------------------===//

std::string cascadeModule(const FP8Config &c) {
  std::string q = qType(c), it = "tensor<?xi32>", lse = "tensor<?x?xf32>";
  std::string two = it + ", " + it;
  std::ostringstream os;
  os << "func.func @fp8_cascade(%q: " << q << ", " << c.cacheArgs()
     << c.scaleArgs();
  for (const char *p : {"qo", "ip", "ix", "lp"})
    for (int l = 0; l < 2; ++l)
      os << ", %" << p << l << ": " << it;
  os << ", %o0: " << q << ", %l0: " << lse << ") -> (" << q << ", " << lse
     << ") attributes {llvm.emit_c_interface} {\n"
     << "  %r:2 = pa.cascade q(%q : " << q << ") kv(" << c.cacheOperands()
     << ")" << c.scales() << " qo_indptrs(%qo0, %qo1 : " << two
     << ") kv_indptrs(%ip0, %ip1 : " << two
     << ") kv_indices(%ix0, %ix1 : " << two
     << ") kv_last_page_lens(%lp0, %lp1 : " << two << ") outs(%o0, %l0 : " << q
     << ", " << lse << ") " << c.attrDict() << "\n  return %r#0, %r#1 : " << q
     << ", " << lse << "\n}\n";
  return os.str();
}

std::string runCascadeCase(JitModule &m, const FP8Config &c, Rng &rng,
                           int caseIdx, OpStats &stats) {
  const int64_t P = c.cache.pageSize, D = c.cache.headDim;
  int64_t B = caseIdx == 0 ? 0 : rng.uniformInt(1, 4);
  std::vector<int64_t> qoLens(B), suffix(B);
  for (int64_t b = 0; b < B; ++b) {
    qoLens[b] = rng.uniformInt(0, 3);
    // Causal positions are those of the last level: qo_len <= kv_len.
    suffix[b] = std::max(sampleLen(rng, P, 30), c.causal ? qoLens[b] : 0);
  }
  std::vector<int32_t> qo1 = indptrOf(qoLens);
  int64_t Nq = qo1.back();
  std::vector<int32_t> qo0 = {0, static_cast<int32_t>(Nq)};
  std::vector<int64_t> prefix = {caseIdx == 1 ? 0 : sampleLen(rng, P, 40)};
  int64_t numPages =
      totalPages(prefix, P) + totalPages(suffix, P) + rng.uniformInt(0, 2);
  ref::PagedKV kv = randomFP8Cache(rng, c, numPages);
  std::vector<HostArray> cache = fp8CacheArrays(c, kv);
  HostArray ks = scaleArray(kv.fp8->kScale), vs = scaleArray(kv.fp8->vScale);
  PagePool pool(rng, numPages);
  std::vector<ref::PageTable> levels = {makePageTable(rng, P, prefix, pool),
                                        makePageTable(rng, P, suffix, pool)};
  PageTableArrays t0 = pageTableArrays(levels[0]),
                  t1 = pageTableArrays(levels[1]);
  HostArray qo0Arr = HostArray::fromI32(qo0), qo1Arr = HostArray::fromI32(qo1);
  int64_t hq = c.cache.kvHeads * rng.uniformInt(1, 3);
  std::vector<double> q = randomValues(rng, Nq * hq * D, c.cache.elem, -2, 2);
  HostArray qArr = HostArray::fromDoubles(c.cache.elem, q, {Nq, hq, D});
  HostArray o(c.cache.elem, {Nq, hq, D}), lse(Elem::F32, {Nq, hq});
  o.fillBytes(0xFF);
  lse.fillBytes(0xFF);
  std::string desc = "Nq=" + std::to_string(Nq) + " Hq=" + std::to_string(hq) +
                     " qo_indptr=" + join(qo1) +
                     " prefix: " + describeTable(levels[0]) +
                     " suffixes: " + describeTable(levels[1]);
  std::vector<HostArray *> args{&qArr};
  for (HostArray &a : cache)
    args.push_back(&a);
  args.insert(args.end(),
              {&ks, &vs, &qo0Arr, &qo1Arr, &t0.indptr, &t1.indptr, &t0.indices,
               &t1.indices, &t0.lastPageLen, &t1.lastPageLen, &o, &lse});
  if (std::string err = m.call("fp8_cascade", args); !err.empty())
    return err + " (" + desc + ")";
  return checkAgainstOracle(
      [&] {
        return ref::cascade(q, hq, {qo0, qo1}, levels, kv, c.refOptions());
      },
      o, lse, Nq, c.cache.elem, stats, desc);
}

void runCascadeTest(const std::string &testName, uint64_t defaultSeed) {
  OpStats stats("pa.cascade (fp8 cache)");
  runDifferentialTest(
      testName, defaultSeed, kConfigSalt, 16, 8, {&stats},
      [&](Rng &crng, int ci) {
        FP8Config c = randomFP8Config(crng, ci);
        c.causal = ci % 2 == 0;
        PipelineConfig pc;
        pc.cascadeDecompose = ci % 4 >= 2; // prefill per level + pa.merge
        std::string desc =
            c.str() + (pc.cascadeDecompose ? " cascade-decompose" : "");
        return DiffConfig{desc, cascadeModule(c), pc,
                          [c, &stats](JitModule &m, Rng &rng, int k) {
                            return runCascadeCase(m, c, rng, k, stats);
                          }};
      });
}

//===----------------------------------------------------------------------===//
// Cache writes: quantize on write
//===----------------------------------------------------------------------===//

enum class WriteOp { Append, Slots, Scatter };

std::string writeModule(WriteOp op, const FP8Config &c) {
  std::string it = "tensor<?xi32>", ct = c.cacheType();
  std::string rt = "tensor<?x" + std::to_string(c.cache.kvHeads) + "x" +
                   std::to_string(c.cache.headDim) + "x" +
                   elemName(c.cache.elem) + ">";
  std::string results = c.cache.joint ? ct : ct + ", " + ct;
  std::string res = c.cache.joint ? "%r" : "%r:2";
  std::string ret = c.cache.joint ? "%r" : "%r#0, %r#1";
  std::string pages =
      " pages(%ip, %ix, %lp : " + it + ", " + it + ", " + it + ")";
  std::ostringstream os;
  os << "func.func @kv_write(%kn: " << rt << ", %vn: " << rt;
  switch (op) {
  case WriteOp::Append:
    os << ", %ai: " << it << ", %ip: " << it << ", %ix: " << it
       << ", %lp: " << it;
    break;
  case WriteOp::Slots:
    os << ", %s: " << it;
    break;
  case WriteOp::Scatter:
    os << ", %ri: " << it << ", %pos: " << it << ", %ip: " << it
       << ", %ix: " << it << ", %lp: " << it;
    break;
  }
  os << c.scaleArgs() << ", " << c.cacheArgs() << ") -> (" << results
     << ") attributes {llvm.emit_c_interface} {\n  " << res << " = ";
  switch (op) {
  case WriteOp::Append:
    os << "pa.append_kv new(%kn, %vn, %ai : " << rt << ", " << rt << ", " << it
       << ")" << pages;
    break;
  case WriteOp::Slots:
    os << "pa.append_kv_slots new(%kn, %vn : " << rt << ", " << rt
       << ") slots(%s : " << it << ")";
    break;
  case WriteOp::Scatter:
    os << "pa.scatter_kv new(%kn, %vn, %ri : " << rt << ", " << rt << ", " << it
       << ") positions(%pos : " << it << ")" << pages;
    break;
  }
  os << c.scales() << " outs(" << c.cacheOperands()
     << ") {cache = " << c.cache.attr() << "}\n  return " << ret << " : "
     << results << "\n}\n";
  return os.str();
}

/// Rows of `elem` values: mostly in [-1.2, 1.2] (with scales of 0.5 .. 2 /
/// max, some saturate), some small ones (subnormal codes); with `specials`
/// also values far out of range, +-inf and NaN.
std::vector<double> randomRows(Rng &rng, int64_t n, Elem elem, bool specials) {
  std::vector<double> v(n);
  for (double &x : v) {
    double r = rng.uniform(0, 1);
    if (specials && r < 0.03)
      x = rng.pick(std::vector<double>{kNaN, kInf, -kInf});
    else if (specials && r < 0.08)
      x = rng.uniform(-1e4, 1e4); // beyond max * scale: saturates
    else
      x = rng.uniform(-1.2, 1.2) * (rng.chance(0.2) ? 1e-3 : 1.0);
    x = roundTo(elem, x);
  }
  return v;
}

/// Compares the written cache with the oracle's, code by code. The lowering
/// computes x / scale in f32 before rounding to fp8; where that rounding of
/// the quotient moves it across an fp8 rounding boundary the code may be the
/// f32 path's instead of the oracle's (double rounding): such elements must
/// be exactly the f32 path's value and are counted, not failed.
std::string compareFP8Cache(const FP8Config &c, const ref::PagedKV &before,
                            const ref::PagedKV &expected,
                            const std::vector<HostArray> &got,
                            const std::vector<double> &kRows,
                            const std::vector<double> &vRows,
                            const std::vector<int64_t> &rowOfElement,
                            int64_t &doubleRounded) {
  pa::test::CacheGeometry g = c.cache.geometry();
  const int64_t H = c.cache.kvHeads, D = c.cache.headDim;
  int64_t diffs = 0;
  std::string first;
  for (int which = 0; which < 2; ++which) {
    const std::vector<double> &want = which == 0 ? expected.k : expected.v;
    const std::vector<double> &old = which == 0 ? before.k : before.v;
    const std::vector<double> &rowsIn = which == 0 ? kRows : vRows;
    const uint8_t *bytes =
        static_cast<const uint8_t *>(got[g.bufferOf(which)].data());
    for (int64_t i = 0; i < static_cast<int64_t>(want.size()); ++i) {
      double x = decodeFP8(bytes[g.offsetOfRef(i, which)], c.format);
      if (sameValue(x, want[i]))
        continue;
      // Element i of head h was written from row r: the f32 path's value.
      int64_t r = rowOfElement[i];
      if (r >= 0) {
        int64_t h = (i / D) % H, d = i % D;
        if (c.cache.layout == ref::KVLayout::HND)
          h = (i / (D * c.cache.pageSize)) % H;
        double s = expected.fp8->scaleOf(which == 1, h);
        float q32 = static_cast<float>(rowsIn[(r * H + h) * D + d]) /
                    static_cast<float>(s);
        if (sameValue(x, ref::quantizeFP8(q32, c.format))) {
          ++doubleRounded;
          continue;
        }
      }
      if (diffs++ == 0) {
        std::ostringstream os;
        os << (which ? "V" : "K") << " element " << i << " (row " << r
           << "): got " << x << ", expected " << want[i] << " (before "
           << old[i] << ")";
        first = os.str();
      }
    }
  }
  if (!diffs)
    return "";
  return std::to_string(diffs) + " cache elements differ; first: " + first;
}

std::string runWriteCase(WriteOp op, JitModule &m, const FP8Config &c, Rng &rng,
                         int caseIdx, OpStats &stats, int64_t &doubleRounded) {
  const int64_t P = c.cache.pageSize, H = c.cache.kvHeads, D = c.cache.headDim;
  bool specials = caseIdx % 2 == 1;
  std::ostringstream desc;
  std::vector<HostArray> owned;
  owned.reserve(16);
  std::vector<HostArray *> args;
  auto own = [&](HostArray a) {
    owned.push_back(std::move(a));
    return &owned.back();
  };
  ref::PagedKV kv, expected;
  std::vector<double> kn, vn;
  // Where each written element comes from: the row (or -1), per K/V offset.
  std::vector<int64_t> rowOf;
  auto markRow = [&](int64_t page, int64_t slot, int64_t r) {
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < D; ++d)
        rowOf[kv.offset(page, slot, h, d)] = r;
  };
  try {
    if (op == WriteOp::Slots) {
      int64_t numPages = caseIdx == 0 ? 0 : rng.uniformInt(1, 6);
      int64_t total = numPages * P;
      int64_t N = rng.uniformInt(0, std::min<int64_t>(12, total + 3));
      std::vector<int32_t> all(total);
      for (int64_t s = 0; s < total; ++s)
        all[s] = static_cast<int32_t>(s);
      rng.shuffle(all);
      std::vector<int32_t> slots(N);
      size_t next = 0;
      for (int64_t r = 0; r < N; ++r)
        slots[r] = next < all.size() && !rng.chance(0.2) ? all[next++] : -1;
      kv = randomFP8Cache(rng, c, numPages);
      rowOf.assign(kv.k.size(), -1);
      kn = randomRows(rng, N * H * D, c.cache.elem, specials);
      vn = randomRows(rng, N * H * D, c.cache.elem, specials);
      args.push_back(own(HostArray::fromDoubles(c.cache.elem, kn, {N, H, D})));
      args.push_back(own(HostArray::fromDoubles(c.cache.elem, vn, {N, H, D})));
      args.push_back(own(HostArray::fromI32(slots)));
      desc << "num_pages=" << numPages << " slots=" << join(slots);
      expected = kv;
      ref::appendKVSlots(expected, slots, kn, vn);
      for (int64_t r = 0; r < N; ++r)
        if (slots[r] >= 0)
          markRow(slots[r] / P, slots[r] % P, r);
    } else {
      int64_t B = caseIdx == 0 ? 0 : rng.uniformInt(1, 4);
      std::vector<int64_t> lens(B), rowLens(B);
      for (int64_t b = 0; b < B; ++b) {
        lens[b] = sampleLen(rng, P, 40);
        rowLens[b] = rng.uniformInt(0, std::min<int64_t>(lens[b], 8));
      }
      int64_t numPages = totalPages(lens, P) + rng.uniformInt(0, 3);
      kv = randomFP8Cache(rng, c, numPages);
      rowOf.assign(kv.k.size(), -1);
      PagePool pool(rng, numPages);
      ref::PageTable pt = makePageTable(rng, P, lens, pool);
      std::vector<int32_t> rowIndptr = indptrOf(rowLens);
      int64_t N = rowIndptr.back();
      kn = randomRows(rng, N * H * D, c.cache.elem, specials);
      vn = randomRows(rng, N * H * D, c.cache.elem, specials);
      args.push_back(own(HostArray::fromDoubles(c.cache.elem, kn, {N, H, D})));
      args.push_back(own(HostArray::fromDoubles(c.cache.elem, vn, {N, H, D})));
      args.push_back(own(HostArray::fromI32(rowIndptr)));
      desc << "num_pages=" << numPages << " " << describeTable(pt)
           << " rows_indptr=" << join(rowIndptr);
      expected = kv;
      if (op == WriteOp::Append) {
        ref::appendKV(expected, pt, rowIndptr, kn, vn);
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < rowLens[b]; ++j) {
            auto [page, slot] = pt.locate(b, lens[b] - rowLens[b] + j);
            markRow(page, slot, rowIndptr[b] + j);
          }
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
        for (int64_t b = 0; b < B; ++b)
          for (int64_t r = rowIndptr[b]; r < rowIndptr[b + 1]; ++r) {
            auto [page, slot] = pt.locate(b, positions[r]);
            markRow(page, slot, r);
          }
      }
      PageTableArrays pta = pageTableArrays(pt);
      args.push_back(own(std::move(pta.indptr)));
      args.push_back(own(std::move(pta.indices)));
      args.push_back(own(std::move(pta.lastPageLen)));
    }
  } catch (const ref::Error &e) {
    return std::string("harness bug: the oracle rejected the input: ") +
           e.what() + " (" + desc.str() + ")";
  }
  args.push_back(own(scaleArray(kv.fp8->kScale)));
  args.push_back(own(scaleArray(kv.fp8->vScale)));
  desc << " k_scale=" << join(kv.fp8->kScale)
       << " v_scale=" << join(kv.fp8->vScale);
  std::vector<HostArray> cache = fp8CacheArrays(c, kv);
  for (HostArray &a : cache)
    args.push_back(&a);
  if (std::string err = m.call("kv_write", args); !err.empty())
    return err + " (" + desc.str() + ")";
  stats.addExact();
  std::string diff =
      compareFP8Cache(c, kv, expected, cache, kn, vn, rowOf, doubleRounded);
  return diff.empty() ? "" : diff + " (" + desc.str() + ")";
}

void runWriteTest(WriteOp op, const std::string &testName, uint64_t defaultSeed,
                  const std::string &statName) {
  OpStats stats(statName, false);
  int64_t doubleRounded = 0;
  runDifferentialTest(
      testName, defaultSeed, kConfigSalt, 16, 10, {&stats},
      [&](Rng &crng, int ci) {
        FP8Config c = randomFP8Config(crng, ci);
        return DiffConfig{
            c.str(), writeModule(op, c), PipelineConfig{},
            [op, c, &stats, &doubleRounded](JitModule &m, Rng &rng, int k) {
              return runWriteCase(op, m, c, rng, k, stats, doubleRounded);
            }};
      });
  std::cout << "[pa-cpu-diff] " << statName << ": " << doubleRounded
            << " elements took the f32 quotient's rounding (double rounding "
               "at an fp8 tie)"
            << std::endl;
}

} // namespace

TEST(PACPUDifferential, FP8ConversionsE4M3FN) {
  checkConversions(ref::FP8Format::E4M3FN);
}

TEST(PACPUDifferential, FP8ConversionsE5M2) {
  checkConversions(ref::FP8Format::E5M2);
}

TEST(PACPUDifferential, FP8Decode) {
  runAttentionTest("FP8Decode", /*prefill=*/false, 41);
}

TEST(PACPUDifferential, FP8Prefill) {
  runAttentionTest("FP8Prefill", /*prefill=*/true, 42);
}

TEST(PACPUDifferential, FP8DecodeTiled) {
  runAttentionTest("FP8DecodeTiled", /*prefill=*/false, 47, /*tiled=*/true);
}

TEST(PACPUDifferential, FP8PrefillTiled) {
  runAttentionTest("FP8PrefillTiled", /*prefill=*/true, 48, /*tiled=*/true);
}

TEST(PACPUDifferential, FP8Cascade) { runCascadeTest("FP8Cascade", 46); }

TEST(PACPUDifferential, FP8AppendKV) {
  runWriteTest(WriteOp::Append, "FP8AppendKV", 43, "pa.append_kv (fp8 cache)");
}

TEST(PACPUDifferential, FP8AppendKVSlots) {
  runWriteTest(WriteOp::Slots, "FP8AppendKVSlots", 44,
               "pa.append_kv_slots (fp8 cache)");
}

TEST(PACPUDifferential, FP8ScatterKV) {
  runWriteTest(WriteOp::Scatter, "FP8ScatterKV", 45,
               "pa.scatter_kv (fp8 cache)");
}
