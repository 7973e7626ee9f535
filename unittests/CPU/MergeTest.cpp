//===- MergeTest.cpp - CPU lowering of the state merges vs pa::ref --------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// pa.merge (2..6 states, o of rank 2..4), pa.merge_states ([S, N, H, D],
// N = 0 included) and pa.merge_segments (ragged segments, empty ones
// included), natural and base-2 lse, with -inf states (all-(-inf) rows: the
// merge of -inf states is the identity (0, -inf)) and widely spread lse
// (weights that underflow).
//
//===----------------------------------------------------------------------===//

#include "JitHarness.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace pa_cpu_test;

namespace {

constexpr int kConfigs = 30;
constexpr int kCasesPerConfig = 15;
constexpr uint64_t kConfigSalt = 0x3E76E;
constexpr double kLn2 = 0.69314718055994530942;
const double kNegInf = -std::numeric_limits<double>::infinity();

/// Element types of (states' o, result o).
struct TypePair {
  Elem in, out;
};
TypePair pickTypes(int idx, bool allowNarrowing) {
  switch (idx % (allowNarrowing ? 3 : 2)) {
  case 0:
    return {Elem::F32, Elem::F32};
  case 1:
    return {Elem::F16, Elem::F16};
  default:
    return {Elem::F32, Elem::F16};
  }
}

/// Random lse values: mostly moderate, some -inf, some widely spread; with
/// `allNegInf` every value is -inf.
std::vector<double> randomLse(Rng &rng, int64_t n, bool allNegInf,
                              double negInfP) {
  std::vector<double> v(n);
  const bool wide = rng.chance(0.25);
  for (double &x : v) {
    if (allNegInf || rng.chance(negInfP))
      x = kNegInf;
    else
      x = roundTo(Elem::F32, wide ? rng.uniform(-120, 120) : rng.uniform(-8, 8));
  }
  return v;
}

/// Natural-log lse of stored base-2 (or natural) values.
std::vector<double> toNatural(const std::vector<double> &lse, bool base2) {
  std::vector<double> v = lse;
  if (base2)
    for (double &x : v)
      x *= kLn2;
  return v;
}
void fromNatural(ref::States &s, bool base2) {
  if (base2)
    for (double &x : s.lse)
      x /= kLn2;
}

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string r;
  for (int64_t d : s)
    r += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return r;
}

//===----------------------------------------------------------------------===//
// pa.merge
//===----------------------------------------------------------------------===//

struct MergeConfig {
  int64_t numStates = 2, rank = 3, staticD = 0; // 0: dynamic D
  Elem elem = Elem::F32;
  bool base2 = false;
  std::string oType() const {
    std::string s = "tensor<";
    for (int64_t i = 0; i < rank - 1; ++i)
      s += "?x";
    s += (staticD ? std::to_string(staticD) : "?") + "x" + elemName(elem) +
         ">";
    return s;
  }
  std::string lseType() const {
    std::string s = "tensor<";
    for (int64_t i = 0; i < rank - 1; ++i)
      s += "?x";
    return s + "f32>";
  }
  std::string str() const {
    std::ostringstream os;
    os << "states=" << numStates << " o=" << oType() << " lse=" << lseType()
       << (base2 ? " lse_base2" : "");
    return os.str();
  }
  std::string module() const {
    std::string ot = oType(), lt = lseType();
    std::ostringstream os;
    os << "func.func @merge(";
    for (int64_t i = 0; i < numStates; ++i)
      os << "%so" << i << ": " << ot << ", %sl" << i << ": " << lt << ", ";
    os << "%o0: " << ot << ", %l0: " << lt << ") -> (" << ot << ", " << lt
       << ") attributes {llvm.emit_c_interface} {\n  %r:2 = pa.merge states(";
    for (int64_t i = 0; i < numStates; ++i)
      os << (i ? ", " : "") << "%so" << i << ", %sl" << i;
    os << " : ";
    for (int64_t i = 0; i < numStates; ++i)
      os << (i ? ", " : "") << ot << ", " << lt;
    os << ") outs(%o0, %l0 : " << ot << ", " << lt << ")"
       << (base2 ? " {lse_base2}" : "") << "\n  return %r#0, %r#1 : " << ot
       << ", " << lt << "\n}\n";
    return os.str();
  }
};

std::string runMergeCase(JitModule &m, const MergeConfig &c, Rng &rng,
                         int caseIdx, OpStats &stats) {
  // lse shape (rank-1 dims), then D.
  std::vector<int64_t> lseShape;
  for (int64_t i = 0; i < c.rank - 1; ++i)
    lseShape.push_back(caseIdx == 0 && i == 0 ? 0 : rng.uniformInt(1, 6));
  int64_t D = c.staticD ? c.staticD : rng.uniformInt(1, 40);
  int64_t n = 1;
  for (int64_t d : lseShape)
    n *= d;
  std::vector<int64_t> oShape = lseShape;
  oShape.push_back(D);
  const bool allNegInf = caseIdx == 1; // merge of -inf states only
  std::vector<HostArray> os, ls;
  std::vector<ref::States> states;
  for (int64_t s = 0; s < c.numStates; ++s) {
    ref::States st;
    st.n = n;
    st.numHeads = 1;
    st.headDim = D;
    st.o = randomValues(rng, n * D, c.elem, -1, 1);
    std::vector<double> stored =
        randomLse(rng, n, allNegInf, caseIdx == 2 ? 0.6 : 0.2);
    st.lse = toNatural(stored, c.base2);
    os.push_back(HostArray::fromDoubles(c.elem, st.o, oShape));
    ls.push_back(HostArray::fromDoubles(Elem::F32, stored, lseShape));
    states.push_back(std::move(st));
  }
  HostArray o(c.elem, oShape), lse(Elem::F32, lseShape);
  o.fillBytes(0xFF);
  lse.fillBytes(0xFF);
  std::vector<HostArray *> args;
  for (int64_t s = 0; s < c.numStates; ++s)
    args.insert(args.end(), {&os[s], &ls[s]});
  args.insert(args.end(), {&o, &lse});
  std::string desc = "o shape " + shapeStr(oShape);
  if (std::string err = m.call("merge", args); !err.empty())
    return err + " (" + desc + ")";
  return checkAgainstOracle(
      [&] {
        ref::States merged = states[0];
        for (int64_t s = 1; s < c.numStates; ++s)
          merged = ref::merge(merged, states[s]);
        fromNatural(merged, c.base2);
        return merged;
      },
      o, lse, n, c.elem, stats, desc);
}

//===----------------------------------------------------------------------===//
// pa.merge_states
//===----------------------------------------------------------------------===//

struct StackConfig {
  int64_t staticD = 0;
  TypePair types;
  bool base2 = false;
  std::string dStr() const {
    return staticD ? std::to_string(staticD) : std::string("?");
  }
  std::string str() const {
    std::ostringstream os;
    os << "D=" << dStr() << " states " << elemName(types.in) << " -> o "
       << elemName(types.out) << (base2 ? " lse_base2" : "");
    return os.str();
  }
};

StackConfig randomStackConfig(Rng &rng, int idx) {
  StackConfig c;
  c.staticD =
      rng.chance(0.6) ? rng.pick(std::vector<int64_t>{1, 4, 8, 16, 32, 64}) : 0;
  c.types = pickTypes(idx, true);
  c.base2 = rng.chance(0.3);
  return c;
}

/// The tolerances of a merge of stacked states: f32 only where both the
/// states and the result are f32.
Elem stackTolerance(const StackConfig &c) {
  return c.types.in == Elem::F32 && c.types.out == Elem::F32 ? Elem::F32
                                                             : Elem::F16;
}

std::string mergeStatesModule(const StackConfig &c) {
  std::string st = "tensor<?x?x?x" + c.dStr() + "x" + elemName(c.types.in) +
                   ">",
              sl = "tensor<?x?x?xf32>",
              ot = "tensor<?x?x" + c.dStr() + "x" + elemName(c.types.out) +
                   ">",
              lt = "tensor<?x?xf32>";
  std::ostringstream os;
  os << "func.func @merge_states(%os: " << st << ", %ls: " << sl
     << ", %o0: " << ot << ", %l0: " << lt << ") -> (" << ot << ", " << lt
     << ") attributes {llvm.emit_c_interface} {\n"
     << "  %r:2 = pa.merge_states states(%os, %ls : " << st << ", " << sl
     << ") outs(%o0, %l0 : " << ot << ", " << lt << ")"
     << (c.base2 ? " {lse_base2}" : "") << "\n  return %r#0, %r#1 : " << ot
     << ", " << lt << "\n}\n";
  return os.str();
}

std::string runMergeStatesCase(JitModule &m, const StackConfig &c, Rng &rng,
                               int caseIdx, OpStats &stats) {
  int64_t S = caseIdx == 0 ? 0 : rng.uniformInt(1, 8);
  int64_t N = caseIdx == 2 ? 0 : rng.uniformInt(1, 5);
  int64_t H = rng.uniformInt(1, 6);
  int64_t D = c.staticD ? c.staticD : rng.uniformInt(1, 40);
  std::vector<double> oStates =
      randomValues(rng, S * N * H * D, c.types.in, -1, 1);
  std::vector<double> stored =
      randomLse(rng, S * N * H, caseIdx == 1, caseIdx == 3 ? 0.6 : 0.2);
  HostArray osArr = HostArray::fromDoubles(c.types.in, oStates, {S, N, H, D});
  HostArray lsArr = HostArray::fromDoubles(Elem::F32, stored, {S, N, H});
  HostArray o(c.types.out, {S, H, D}), lse(Elem::F32, {S, H});
  o.fillBytes(0xFF);
  lse.fillBytes(0xFF);
  std::string desc = "S=" + std::to_string(S) + " N=" + std::to_string(N) +
                     " H=" + std::to_string(H) + " D=" + std::to_string(D);
  if (std::string err = m.call("merge_states", {&osArr, &lsArr, &o, &lse});
      !err.empty())
    return err + " (" + desc + ")";
  return checkAgainstOracle(
      [&] {
        ref::States expected =
            ref::mergeN(oStates, toNatural(stored, c.base2), S, N, H, D);
        fromNatural(expected, c.base2);
        return expected;
      },
      o, lse, S, stackTolerance(c), stats, desc);
}

//===----------------------------------------------------------------------===//
// pa.merge_segments
//===----------------------------------------------------------------------===//

std::string mergeSegmentsModule(const StackConfig &c) {
  std::string pt = "tensor<?x?x" + c.dStr() + "x" + elemName(c.types.in) +
                   ">",
              ot = "tensor<?x?x" + c.dStr() + "x" + elemName(c.types.out) +
                   ">",
              lt = "tensor<?x?xf32>", it = "tensor<?xi32>";
  std::ostringstream os;
  os << "func.func @merge_segments(%op: " << pt << ", %lp: " << lt
     << ", %seg: " << it << ", %o0: " << ot << ", %l0: " << lt << ") -> ("
     << ot << ", " << lt << ") attributes {llvm.emit_c_interface} {\n"
     << "  %r:2 = pa.merge_segments states(%op, %lp : " << pt << ", " << lt
     << ") segments(%seg : " << it << ") outs(%o0, %l0 : " << ot << ", " << lt
     << ")" << (c.base2 ? " {lse_base2}" : "")
     << "\n  return %r#0, %r#1 : " << ot << ", " << lt << "\n}\n";
  return os.str();
}

std::string runMergeSegmentsCase(JitModule &m, const StackConfig &c, Rng &rng,
                                 int caseIdx, OpStats &stats) {
  int64_t S = caseIdx == 0 ? 0 : rng.uniformInt(1, 8);
  std::vector<int64_t> segLens(S);
  for (int64_t &l : segLens)
    l = caseIdx == 2 || rng.chance(0.25) ? 0 : rng.uniformInt(1, 5);
  std::vector<int32_t> seg = indptrOf(segLens);
  int64_t used = seg.back();
  int64_t W = used + rng.uniformInt(0, 2); // rows past the last segment
  int64_t H = rng.uniformInt(1, 6);
  int64_t D = c.staticD ? c.staticD : rng.uniformInt(1, 40);
  std::vector<double> oPart = randomValues(rng, W * H * D, c.types.in, -1, 1);
  std::vector<double> stored =
      randomLse(rng, W * H, caseIdx == 1, caseIdx == 3 ? 0.6 : 0.2);
  HostArray opArr = HostArray::fromDoubles(c.types.in, oPart, {W, H, D});
  HostArray lpArr = HostArray::fromDoubles(Elem::F32, stored, {W, H});
  HostArray segArr = HostArray::fromI32(seg);
  HostArray o(c.types.out, {S, H, D}), lse(Elem::F32, {S, H});
  o.fillBytes(0xFF);
  lse.fillBytes(0xFF);
  std::string desc = "segments=" + join(seg) + " W=" + std::to_string(W) +
                     " H=" + std::to_string(H) + " D=" + std::to_string(D);
  if (std::string err =
          m.call("merge_segments", {&opArr, &lpArr, &segArr, &o, &lse});
      !err.empty())
    return err + " (" + desc + ")";
  return checkAgainstOracle(
      [&] {
        ref::States expected = ref::States::identity(S, H, D);
        std::vector<double> natural = toNatural(stored, c.base2);
        for (int64_t s = 0; s < S; ++s) {
          int64_t a = seg[s], n = seg[s + 1] - seg[s];
          std::vector<double> so(oPart.begin() + a * H * D,
                                 oPart.begin() + (a + n) * H * D);
          std::vector<double> sl(natural.begin() + a * H,
                                 natural.begin() + (a + n) * H);
          ref::States one = ref::mergeN(so, sl, 1, n, H, D);
          std::copy(one.o.begin(), one.o.end(), expected.o.begin() + s * H * D);
          std::copy(one.lse.begin(), one.lse.end(),
                    expected.lse.begin() + s * H);
        }
        fromNatural(expected, c.base2);
        return expected;
      },
      o, lse, S, stackTolerance(c), stats, desc);
}

/// A test of kConfigs configurations `makeConfig(crng, ci)` of
/// kCasesPerConfig cases each.
template <typename Config, typename MakeConfig, typename MakeModule,
          typename RunCase>
void runTest(const std::string &testName, uint64_t defaultSeed,
             const std::string &statName, MakeConfig makeConfig,
             MakeModule makeModule, RunCase runCase) {
  OpStats stats(statName);
  runDifferentialTest(
      testName, defaultSeed, kConfigSalt, kConfigs, kCasesPerConfig, {&stats},
      [&](Rng &crng, int ci) {
        Config c = makeConfig(crng, ci);
        return DiffConfig{c.str(), makeModule(c), PipelineConfig{},
                          [c, &stats, runCase](JitModule &m, Rng &rng, int k) {
                            return runCase(m, c, rng, k, stats);
                          }};
      });
}

} // namespace

TEST(PACPUDifferential, Merge) {
  runTest<MergeConfig>(
      "Merge", 11, "pa.merge",
      [](Rng &rng, int idx) {
        MergeConfig c;
        static const std::vector<int64_t> states = {2, 3, 2, 4, 1, 6};
        c.numStates = states[idx % states.size()];
        c.rank = idx < 14 ? 3 : (idx % 2 ? 2 : 4);
        c.staticD = rng.chance(0.6)
                        ? rng.pick(std::vector<int64_t>{1, 4, 8, 16, 32, 64})
                        : 0;
        c.elem = (idx / 2) % 2 ? Elem::F16 : Elem::F32;
        c.base2 = rng.chance(0.3);
        return c;
      },
      [](const MergeConfig &c) { return c.module(); }, runMergeCase);
}

TEST(PACPUDifferential, MergeStates) {
  runTest<StackConfig>("MergeStates", 12, "pa.merge_states", randomStackConfig,
                       mergeStatesModule, runMergeStatesCase);
}

TEST(PACPUDifferential, MergeSegments) {
  runTest<StackConfig>("MergeSegments", 13, "pa.merge_segments",
                       randomStackConfig, mergeSegmentsModule,
                       runMergeSegmentsCase);
}
