//===- CacheBlendTest.cpp - pack_mask, kv_deviation, select_topk vs ref ---===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// pa.pack_mask (i1 and i8 masks; integer outputs exact), pa.kv_deviation
// (f32 / f16 rows; relative L2 error) and pa.select_topk (ties to the lower
// index, ceil(ratio * n) per request; integer outputs exact).
//
//===----------------------------------------------------------------------===//

#include "JitHarness.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace pa_cpu_test;

namespace {

constexpr uint64_t kConfigSalt = 0xCB1E;

//===----------------------------------------------------------------------===//
// pa.pack_mask
//===----------------------------------------------------------------------===//

std::string packModule(Elem maskElem) {
  std::string mt = std::string("tensor<?x") + elemName(maskElem) + ">";
  std::string it = "tensor<?xi32>", bt = "tensor<?xi8>";
  std::ostringstream os;
  os << "func.func @pack(%m: " << mt << ", %ip: " << it << ", %p0: " << bt
     << ", %pi0: " << it << ") -> (" << bt << ", " << it
     << ") attributes {llvm.emit_c_interface} {\n"
     << "  %r:2 = pa.pack_mask mask(%m, %ip : " << mt << ", " << it
     << ") outs(%p0, %pi0 : " << bt << ", " << it << ")\n"
     << "  return %r#0, %r#1 : " << bt << ", " << it << "\n}\n";
  return os.str();
}

std::string runPackCase(JitModule &m, Elem maskElem, Rng &rng, int caseIdx,
                        OpStats &stats) {
  int64_t B = caseIdx == 0 ? 0 : rng.uniformInt(1, 8);
  std::vector<int64_t> lens(B);
  for (int64_t &n : lens) {
    double r = rng.uniform(0, 1);
    n = r < 0.15   ? 0
        : r < 0.35 ? 8 * rng.uniformInt(1, 4)
        : r < 0.45 ? rng.uniformInt(100, 300)
                   : rng.uniformInt(1, 40);
  }
  std::vector<int32_t> indptr = indptrOf(lens);
  int64_t total = indptr.back();
  std::vector<uint8_t> bits(total), raw(total);
  double density = rng.pick(std::vector<double>{0.0, 0.1, 0.5, 0.9, 1.0});
  for (int64_t i = 0; i < total; ++i) {
    bits[i] = rng.chance(density) ? 1 : 0;
    if (maskElem == Elem::I1 || !bits[i])
      raw[i] = bits[i];
    else // i8: any nonzero byte is true
      raw[i] = static_cast<uint8_t>(
          rng.pick(std::vector<int>{1, 1, 2, 0x7F, 0x80, 0xFF, 3}));
  }
  auto [packed, packedIndptr] = ref::packMask(bits, indptr);
  HostArray maskArr = HostArray::fromBytes(maskElem, raw);
  HostArray ipArr = HostArray::fromI32(indptr);
  HostArray p(Elem::I8, {static_cast<int64_t>(packed.size())});
  HostArray pi(Elem::I32, {B + 1});
  p.fillBytes(0xA5);
  pi.fillBytes(0xA5);
  std::string desc = "bit indptr=" + join(indptr);
  if (std::string err = m.call("pack", {&maskArr, &ipArr, &p, &pi});
      !err.empty())
    return err + " (" + desc + ")";
  stats.addExact();
  if (pi.toI32() != packedIndptr)
    return "packed_indptr " + join(pi.toI32()) + " != expected " +
           join(packedIndptr) + " (" + desc + ")";
  std::vector<uint8_t> got = p.toBytes();
  for (size_t i = 0; i < packed.size(); ++i)
    if (got[i] != packed[i]) {
      std::ostringstream os;
      os << "packed byte " << i << " = 0x" << std::hex << int(got[i])
         << ", expected 0x" << int(packed[i]) << std::dec << " (" << desc
         << ")";
      return os.str();
    }
  return "";
}

//===----------------------------------------------------------------------===//
// pa.kv_deviation
//===----------------------------------------------------------------------===//

struct DevConfig {
  Elem elem = Elem::F32;
  int64_t H = 0, D = 0; // 0: dynamic
  std::string rowType() const {
    return "tensor<?x" + (H ? std::to_string(H) : std::string("?")) + "x" +
           (D ? std::to_string(D) : std::string("?")) + "x" + elemName(elem) +
           ">";
  }
  std::string str() const { return rowType(); }
};

std::string devModule(const DevConfig &c) {
  std::string rt = c.rowType(), dt = "tensor<?xf32>";
  std::ostringstream os;
  os << "func.func @dev(%n: " << rt << ", %c: " << rt << ", %d0: " << dt
     << ") -> " << dt << " attributes {llvm.emit_c_interface} {\n"
     << "  %r = pa.kv_deviation ins(%n, %c : " << rt << ", " << rt
     << ") outs(%d0 : " << dt << ")\n  return %r : " << dt << "\n}\n";
  return os.str();
}

std::string runDevCase(JitModule &m, const DevConfig &c, Rng &rng,
                       int caseIdx, OpStats &stats) {
  int64_t N = caseIdx == 0 ? 0 : rng.uniformInt(1, 40);
  int64_t H = c.H ? c.H : rng.uniformInt(1, 8);
  int64_t D = c.D ? c.D : rng.uniformInt(1, 64);
  std::vector<double> kn = randomValues(rng, N * H * D, c.elem, -1, 1);
  std::vector<double> kc = kn;
  // Rows whose cached copy deviates by a random amount; others identical
  // (deviation 0); case 1: nothing deviates.
  for (int64_t t = 0; t < N; ++t) {
    if (caseIdx == 1 || rng.chance(0.2))
      continue;
    double scale = rng.pick(std::vector<double>{1e-3, 0.05, 1.0, 4.0});
    for (int64_t i = 0; i < H * D; ++i)
      kc[t * H * D + i] = roundTo(c.elem, kn[t * H * D + i] +
                                              scale * rng.uniform(-1, 1));
  }
  HostArray nArr = HostArray::fromDoubles(c.elem, kn, {N, H, D});
  HostArray cArr = HostArray::fromDoubles(c.elem, kc, {N, H, D});
  HostArray dev(Elem::F32, {N});
  dev.fillBytes(0xFF);
  std::string desc = "N=" + std::to_string(N) + " H=" + std::to_string(H) +
                     " D=" + std::to_string(D);
  if (std::string err = m.call("dev", {&nArr, &cArr, &dev}); !err.empty())
    return err + " (" + desc + ")";
  std::vector<double> expected;
  try {
    expected = ref::kvDeviation(kn, kc, N, H, D);
  } catch (const ref::Error &e) {
    return std::string("harness bug: ") + e.what();
  }
  StateResult r;
  r.oErr = relL2(dev, expected, N);
  for (int64_t t = 0; t < N; ++t)
    if (expected[t] == 0 && dev.get(t) != 0 && r.problem.empty())
      r.problem = "deviation[" + std::to_string(t) + "] = " +
                  std::to_string(dev.get(t)) + " for identical rows";
  stats.add(r, c.elem);
  if (!r.problem.empty() || !(r.oErr <= oTolerance(c.elem)))
    return "deviation rel L2 err = " + std::to_string(r.oErr) + " " +
           r.problem + " (" + desc + ")";
  return "";
}

//===----------------------------------------------------------------------===//
// pa.select_topk
//===----------------------------------------------------------------------===//

std::string topkModule(double ratio) {
  std::string it = "tensor<?xi32>", ft = "tensor<?xf32>";
  std::ostringstream os;
  os << "func.func @topk(%d: " << ft << ", %ip: " << it << ", %p0: " << it
     << ", %pi0: " << it << ") -> (" << it << ", " << it
     << ") attributes {llvm.emit_c_interface} {\n"
     << "  %r:2 = pa.select_topk ins(%d, %ip : " << ft << ", " << it
     << ") outs(%p0, %pi0 : " << it << ", " << it << ") {ratio = "
     << fmtF64(ratio) << " : f64}\n"
     << "  return %r#0, %r#1 : " << it << ", " << it << "\n}\n";
  return os.str();
}

std::string runTopkCase(JitModule &m, double ratio, Rng &rng, int caseIdx,
                        OpStats &stats) {
  int64_t B = caseIdx == 0 ? 0 : rng.uniformInt(1, 6);
  std::vector<int64_t> lens(B);
  for (int64_t &n : lens)
    n = rng.chance(0.15) ? 0 : rng.uniformInt(1, 40);
  std::vector<int32_t> indptr = indptrOf(lens);
  int64_t total = indptr.back();
  bool ties = caseIdx == 1 || rng.chance(0.5);
  std::vector<double> dev(total);
  for (double &d : dev)
    d = ties ? static_cast<double>(rng.uniformInt(0, 3))
             : roundTo(Elem::F32, rng.uniform(0, 10));
  std::pair<std::vector<int32_t>, std::vector<int32_t>> expected;
  try {
    expected = ref::selectTopK(dev, indptr, ratio);
  } catch (const ref::Error &e) {
    return std::string("harness bug: ") + e.what();
  }
  int64_t K = static_cast<int64_t>(expected.first.size());
  int64_t cap = K + rng.uniformInt(0, 3);
  HostArray dArr = HostArray::fromDoubles(Elem::F32, dev, {total});
  HostArray ipArr = HostArray::fromI32(indptr);
  HostArray pos(Elem::I32, {cap}), pi(Elem::I32, {B + 1});
  pos.fillBytes(0xA5);
  pi.fillBytes(0xA5);
  std::string desc = "indptr=" + join(indptr) + " deviation=" + join(dev);
  if (std::string err = m.call("topk", {&dArr, &ipArr, &pos, &pi});
      !err.empty())
    return err + " (" + desc + ")";
  stats.addExact();
  if (pi.toI32() != expected.second)
    return "out_indptr " + join(pi.toI32()) + " != expected " +
           join(expected.second) + " (" + desc + ")";
  std::vector<int32_t> got = pos.toI32();
  got.resize(K);
  if (got != expected.first)
    return "positions " + join(got) + " != expected " + join(expected.first) +
           " (" + desc + ")";
  return "";
}

} // namespace

TEST(PACPUDifferential, PackMask) {
  OpStats stats("pa.pack_mask", false);
  // Two configurations (i1 and i8 masks), 200 cases each.
  runDifferentialTest(
      "PackMask", 31, kConfigSalt, 2, 200, {&stats}, [&](Rng &, int ci) {
        Elem e = ci == 0 ? Elem::I1 : Elem::I8;
        return DiffConfig{elemName(e), packModule(e), PipelineConfig{},
                          [e, &stats](JitModule &m, Rng &rng, int k) {
                            return runPackCase(m, e, rng, k, stats);
                          }};
      });
}

TEST(PACPUDifferential, KVDeviation) {
  OpStats stats("pa.kv_deviation", false);
  runDifferentialTest(
      "KVDeviation", 32, kConfigSalt, 16, 30, {&stats}, [&](Rng &crng, int ci) {
        DevConfig c;
        c.elem = ci % 2 ? Elem::F16 : Elem::F32;
        if (ci >= 2) { // the first two fully dynamic
          c.H = crng.chance(0.7) ? crng.uniformInt(1, 8) : 0;
          c.D = crng.chance(0.7)
                    ? crng.pick(std::vector<int64_t>{1, 4, 8, 16, 32, 64, 12})
                    : 0;
        }
        return DiffConfig{c.str(), devModule(c), PipelineConfig{},
                          [c, &stats](JitModule &m, Rng &rng, int k) {
                            return runDevCase(m, c, rng, k, stats);
                          }};
      });
}

TEST(PACPUDifferential, SelectTopK) {
  OpStats stats("pa.select_topk", false);
  const std::vector<double> ratios = {0.01, 0.1, 0.15,  0.25, 1.0 / 3.0,
                                      0.5,  0.7, 0.999, 1.0};
  runDifferentialTest(
      "SelectTopK", 33, kConfigSalt, 16, 30, {&stats}, [&](Rng &crng, int ci) {
        double ratio = ci < static_cast<int>(ratios.size())
                           ? ratios[ci]
                           : crng.uniform(0.01, 1.0);
        return DiffConfig{"ratio=" + fmtF64(ratio), topkModule(ratio),
                          PipelineConfig{},
                          [ratio, &stats](JitModule &m, Rng &rng, int k) {
                            return runTopkCase(m, ratio, rng, k, stats);
                          }};
      });
}
