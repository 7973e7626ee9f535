//===- JitHarness.h - JIT + helpers of the CPU differential tests -*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The CPU differential tests compile a pa program (tensor form, one
// `func.func ... attributes {llvm.emit_c_interface}` per op) through
// `pa::buildLowerToCPUPipeline`, JIT it with MLIR's ExecutionEngine and
// compare what it computes with the float64 oracle `pa::ref`.
//
// This header provides
//   * the JIT: compile() (cached per module text and pipeline options) and
//     JitModule::call(), which calls `_mlir_ciface_<name>` with pointers to
//     StridedMemRefType descriptors (rank 1..5, row-major, identity layout);
//   * HostArray: a row-major host array in the memory representation of the
//     lowered code (f32, IEEE f16 bits, bf16 bits, i32, i8, i1 as bytes);
//   * random generation of page tables, paged caches, lengths (through the
//     test-support library, PagedAttn/TestSupport, which the GPU runner and
//     the runtime tests share);
//   * comparison with the tolerances of the project, seeds and statistics;
//   * runDifferentialTest(), the driver loop every test runs (configurations,
//     compile, cases, failure reports, summary lines).
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_UNITTESTS_CPU_JITHARNESS_H
#define PAGEDATTN_UNITTESTS_CPU_JITHARNESS_H

#include "PagedAttn/Reference/Reference.h"
#include "PagedAttn/Runtime/Bundle.h"
#include "PagedAttn/TestSupport/Cache.h"
#include "PagedAttn/TestSupport/Numbers.h"
#include "PagedAttn/TestSupport/Random.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace pa_cpu_test {

namespace ref = pa::ref;

//===----------------------------------------------------------------------===//
// Number formats (PATestSupport)
//===----------------------------------------------------------------------===//

using pa::test::bf16ToFloat;
using pa::test::floatToBF16;
using pa::test::floatToHalf;
using pa::test::halfToFloat;

//===----------------------------------------------------------------------===//
// Host arrays
//===----------------------------------------------------------------------===//

enum class Elem { F32, F16, BF16, I32, I8, I1 };

/// MLIR spelling of an element type ("f32", "f16", "bf16", "i32", "i8", "i1").
const char *elemName(Elem e);
/// Bytes per element in memory.
int64_t elemBytes(Elem e);
bool isFloat(Elem e);
/// The runtime dtype of a float element type (F32, F16, BF16).
pa::rt::DType dtypeOf(Elem e);

/// A row-major array in the representation the JIT code reads and writes.
class HostArray {
public:
  HostArray() = default;
  HostArray(Elem elem, std::vector<int64_t> shape);

  static HostArray fromI32(const std::vector<int32_t> &v);
  static HostArray fromI32(const std::vector<int32_t> &v,
                           std::vector<int64_t> shape);
  static HostArray fromBytes(Elem elem, const std::vector<uint8_t> &v);
  /// Rounds every value to `elem` (float element types only).
  static HostArray fromDoubles(Elem elem, const std::vector<double> &v,
                               std::vector<int64_t> shape);

  Elem elem() const { return elem_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }

  /// Element i as a double (integers exactly, halves widened).
  double get(int64_t i) const;
  /// Stores v at i, rounded to the element type (integers are truncated).
  void set(int64_t i, double v);
  int32_t getI32(int64_t i) const;
  void setI32(int64_t i, int32_t v);

  std::vector<double> toDoubles() const;
  std::vector<int32_t> toI32() const;
  std::vector<uint8_t> toBytes() const;

  /// Fills every byte with `byte` (poisons outs: 0xFF gives NaN floats).
  void fillBytes(uint8_t byte);

  void *data();
  const void *data() const;
  /// True if both arrays hold exactly the same bytes and shape.
  bool sameBits(const HostArray &other) const;

private:
  Elem elem_ = Elem::F32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::vector<uint64_t> storage_; // 8-byte aligned
};

//===----------------------------------------------------------------------===//
// JIT
//===----------------------------------------------------------------------===//

struct PipelineConfig {
  bool cascadeDecompose = false;
  int64_t splitKVChunk = 0;
  /// pa-tile-attention with these tile sizes (0: prefill straight to loops).
  int64_t tileQ = 0, tileKV = 0;
  /// pa-shard-kv over this many simulated devices (0: off).
  int64_t shardDevices = 0;
  bool shardRoundRobin = false;
  std::string str() const;
};

class JitModule {
public:
  virtual ~JitModule();
  /// Calls `_mlir_ciface_<fn>` with one memref descriptor per array (in
  /// order). Returns an empty string on success, else the error.
  ///
  /// Results: the pipeline should drop results equivalent to the outs, and
  /// then the function returns nothing. Where it keeps them (LLVM 22's
  /// drop-equivalent-buffer-results skips public functions), the wrapper
  /// takes a result pointer first; result k is then taken to be the k-th of
  /// the last `#results` arguments (the outs, as the tests write them): if it
  /// is not that very buffer, its contents are copied into it (counted by
  /// numCopiedResults()).
  virtual std::string call(const std::string &fn,
                           const std::vector<HostArray *> &args) = 0;
};

/// Parses `mlirText`, runs pa-lower-to-cpu with `cfg` and creates an
/// ExecutionEngine. Cached per (text, cfg): a second call is free. Returns
/// null and sets `error` (diagnostics included) on failure.
JitModule *compile(const std::string &mlirText, const PipelineConfig &cfg,
                   std::string &error);

/// Total wall time spent in compile() (parse + pipeline + JIT), in seconds,
/// and the number of modules compiled.
double totalCompileSeconds();
int64_t numCompiledModules();
/// Results that came back in a buffer other than their out argument (the
/// harness copies them into the out); 0 when every op wrote its outs.
int64_t numCopiedResults();

//===----------------------------------------------------------------------===//
// Seeds, random numbers
//===----------------------------------------------------------------------===//

using pa::test::baseSeed;
using pa::test::mixSeed;
using pa::test::Rng;

/// `n` values uniform in [lo, hi), rounded to `elem`, as doubles.
std::vector<double> randomValues(Rng &rng, int64_t n, Elem elem, double lo,
                                 double hi);
/// Rounds a double through `elem` (f32: through float, f16/bf16: through
/// their bits).
double roundTo(Elem elem, double v);

//===----------------------------------------------------------------------===//
// Paged KV caches and page tables
//===----------------------------------------------------------------------===//

struct CacheConfig {
  ref::KVLayout layout = ref::KVLayout::NHD;
  int64_t pageSize = 16, kvHeads = 1, headDim = 8;
  Elem elem = Elem::F32;
  bool joint = true;

  /// `#pa.paged_kv<...>`
  std::string attr() const;
  /// Tensor type of one cache operand (`tensor<?x2xPxHxDxT>`, ...).
  std::string tensorType() const;
  /// Shape of one cache operand for `numPages` pages.
  std::vector<int64_t> shape(int64_t numPages) const;
  int64_t numOperands() const { return joint ? 1 : 2; }
  /// Where the cache's elements live in the operands.
  pa::test::CacheGeometry geometry() const;
  std::string str() const;
};

/// A cache configuration for configuration `idx` of a test: the first ones
/// have the interesting page sizes (1, 16, 64, 3, 5, 7), then random 1..64;
/// layouts, joint/split and f32/f16 cycle so that every combination
/// appears; the head dim is one of `headDims`.
CacheConfig randomCacheConfig(Rng &rng, int idx,
                              const std::vector<int64_t> &headDims);

using pa::test::indptrOf;
using pa::test::makePageTable;
using pa::test::PagePool;
using pa::test::pagesFor;
using pa::test::sampleLen;
using pa::test::totalPages;

/// A random cache of `numPages` pages, values uniform in [-1, 1) rounded to
/// the element type: the reference view `kv` and the operand arrays `arrays`
/// (1 joint or 2 split) hold the same values.
void randomCache(Rng &rng, const CacheConfig &cfg, int64_t numPages,
                 ref::PagedKV &kv, std::vector<HostArray> &arrays);
/// The cache operand arrays for a reference cache.
std::vector<HostArray> cacheArrays(const CacheConfig &cfg,
                                   const ref::PagedKV &kv);

/// Index arrays of a page table as operands.
struct PageTableArrays {
  HostArray indptr, indices, lastPageLen;
};
PageTableArrays pageTableArrays(const ref::PageTable &pt);

/// "kv_len=[..] kv_indptr=[..] kv_indices=[..] last_page_len=[..]" (for
/// failure messages).
std::string describeTable(const ref::PageTable &pt);

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

/// Tolerances of the project (by the data's element type).
double oTolerance(Elem e);   // relative L2: 1e-5 f32, 2e-3 f16, 8e-3 bf16
double lseTolerance(Elem e); // absolute: 1e-4 f32, 2e-3 f16/bf16

/// ||x - ref|| / max(||ref||, tiny) over the first `n` elements; NaN/inf in x
/// gives +inf.
double relL2(const HostArray &x, const std::vector<double> &expected,
             int64_t n);

/// Compares lse: exactly -inf where the reference is -inf, finite and within
/// `tol` elsewhere. Returns the largest absolute error over finite entries;
/// sets `problem` (non-empty) on a -inf/NaN mismatch.
double lseError(const HostArray &lse, const std::vector<double> &expected,
                int64_t n, std::string &problem);

struct StateResult {
  double oErr = 0, lseErr = 0;
  std::string problem;
  bool ok(Elem e) const {
    return problem.empty() && oErr <= oTolerance(e) &&
           lseErr <= lseTolerance(e);
  }
  std::string str() const;
};

/// Compares (o, lse) with the first `rows` rows of a reference state.
StateResult compareStates(const HostArray &o, const HostArray &lse,
                          const ref::States &expected, int64_t rows);

/// Per-op case counts and largest errors, printed at the end of each test.
struct OpStats {
  explicit OpStats(std::string name, bool hasLse = true)
      : name(std::move(name)), hasLse(hasLse),
        copiedAtStart(numCopiedResults()),
        compileAtStart(totalCompileSeconds()) {}
  /// Records a compared case; `e` is the element type of the data (the
  /// errors are reported per type: f16 data has larger rounding error).
  void add(const StateResult &r, Elem e = Elem::F32) {
    ++cases;
    maxO = std::max(maxO, r.oErr);
    maxLse = std::max(maxLse, r.lseErr);
    if (e == Elem::F32) {
      maxOF32 = std::max(maxOF32, r.oErr);
      maxLseF32 = std::max(maxLseF32, r.lseErr);
    }
  }
  void addExact() { ++cases; }
  void print() const;
  std::string name;
  bool hasLse;
  int64_t copiedAtStart;
  double compileAtStart;
  int64_t cases = 0;
  int64_t configs = 0;
  double maxO = 0, maxLse = 0;       // over all cases
  double maxOF32 = 0, maxLseF32 = 0; // over f32 cases only
};

/// compareStates() over the first `rows` rows, recorded in `stats` as data
/// of element type `e`; returns "" within e's tolerances, else the errors
/// and " (<desc>)".
std::string checkStates(const HostArray &o, const HostArray &lse,
                        const ref::States &expected, int64_t rows, Elem e,
                        OpStats &stats, const std::string &desc);

/// Evaluates the oracle, then checkStates() against its states: "" if the
/// kernel's (o, lse) match the oracle's, else what went wrong. An oracle
/// that rejects the input (pa::ref::Error: a bug of the harness, whose
/// inputs are valid) gives "harness bug: the oracle rejected the input:
/// <why> (<desc>)".
std::string checkAgainstOracle(const std::function<ref::States()> &oracle,
                               const HostArray &o, const HostArray &lse,
                               int64_t rows, Elem e, OpStats &stats,
                               const std::string &desc);

//===----------------------------------------------------------------------===//
// Test driver
//===----------------------------------------------------------------------===//

/// Stop a test after this many failing cases (the first ones tell enough).
constexpr int kMaxFailuresPerTest = 5;

/// One static configuration of a differential test, as its test builds it.
struct DiffConfig {
  /// The configuration in words (failure reports).
  std::string desc;
  /// The module compiled for it and the pipeline options it is compiled with.
  std::string module;
  PipelineConfig pipeline;
  /// Runs case `caseIdx` of the configuration on `m` with the case's own
  /// random numbers; returns "" if it passed, else what went wrong.
  std::function<std::string(JitModule &m, Rng &rng, int caseIdx)> runCase;
};

/// The driver of a differential test:
///   * prints "[pa-cpu-diff] <testName> base seed <seed>", where seed is
///     baseSeed(testName, defaultSeed);
///   * for configuration ci in [0, numConfigs): makeConfig(crng, ci) with
///     crng = Rng(mixSeed(seed, ci, configSalt)); compiles its module (a
///     failure is reported as case -1 and the configuration skipped), counts
///     it in every `stats`, and runs cases k in [0, casesPerConfig), each
///     with Rng(mixSeed(seed, ci, k));
///   * reports each failing case with ADD_FAILURE (test, seed, configuration,
///     case, message) and stops after kMaxFailuresPerTest failures;
///   * prints every `stats` (in order) at the end.
void runDifferentialTest(
    const std::string &testName, uint64_t defaultSeed, uint64_t configSalt,
    int numConfigs, int casesPerConfig, const std::vector<OpStats *> &stats,
    const std::function<DiffConfig(Rng &crng, int ci)> &makeConfig);

//===----------------------------------------------------------------------===//
// Misc
//===----------------------------------------------------------------------===//

template <typename T> std::string join(const std::vector<T> &v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i)
    os << (i ? "," : "") << v[i];
  os << "]";
  return os.str();
}

/// Prints a float so that parsing it as f32 (or f64) gives the value back.
std::string fmtF32(float v);
std::string fmtF64(double v);

} // namespace pa_cpu_test

#endif // PAGEDATTN_UNITTESTS_CPU_JITHARNESS_H
