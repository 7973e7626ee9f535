//===- JitHarness.cpp - JIT + helpers of the CPU differential tests -------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#include "JitHarness.h"

#include "gtest/gtest.h"

#include "PagedAttn/Dialect/PA.h"
#include "PagedAttn/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <stdexcept>

namespace pa_cpu_test {

//===----------------------------------------------------------------------===//
// Number formats
//===----------------------------------------------------------------------===//

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7FFFFFFFu;
  if (absx > 0x7F800000u) // NaN: keep it quiet, keep some payload
    return static_cast<uint16_t>(sign | 0x7E00u | ((absx >> 13) & 0x1FFu));
  if (absx >= 0x477FF000u) // rounds to >= 65520: inf
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (absx < 0x38800000u) { // below 2^-14: subnormal half (or zero)
    // value = absx as float; half subnormal unit is 2^-24.
    float af;
    std::memcpy(&af, &absx, 4);
    // af * 2^24, rounded to nearest even, is the subnormal mantissa.
    float scaled = af * 16777216.0f; // exact (power of two)
    float r = std::nearbyint(scaled); // default rounding mode: to even
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
  }
  // Normal: rebias exponent 127 -> 15, round mantissa 23 -> 10 bits.
  uint32_t mant = absx & 0x7FFFFFu;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h; // may carry into the exponent, up to inf: correct
  return static_cast<uint16_t>(sign | h);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      float v = std::ldexp(static_cast<float>(mant), -24);
      std::memcpy(&x, &v, 4);
      x |= sign;
    }
  } else if (exp == 31) {
    x = sign | 0x7F800000u | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t floatToBF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7FFFu + lsb;
  return static_cast<uint16_t>(x >> 16);
}

float bf16ToFloat(uint16_t h) {
  uint32_t x = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

double roundTo(Elem elem, double v) {
  switch (elem) {
  case Elem::F32:
    return static_cast<double>(static_cast<float>(v));
  case Elem::F16:
    return halfToFloat(floatToHalf(static_cast<float>(v)));
  case Elem::BF16:
    return bf16ToFloat(floatToBF16(static_cast<float>(v)));
  default:
    return v;
  }
}

//===----------------------------------------------------------------------===//
// HostArray
//===----------------------------------------------------------------------===//

const char *elemName(Elem e) {
  switch (e) {
  case Elem::F32:
    return "f32";
  case Elem::F16:
    return "f16";
  case Elem::BF16:
    return "bf16";
  case Elem::I32:
    return "i32";
  case Elem::I8:
    return "i8";
  case Elem::I1:
    return "i1";
  }
  return "?";
}

int64_t elemBytes(Elem e) {
  switch (e) {
  case Elem::F32:
  case Elem::I32:
    return 4;
  case Elem::F16:
  case Elem::BF16:
    return 2;
  case Elem::I8:
  case Elem::I1:
    return 1;
  }
  return 1;
}

bool isFloat(Elem e) {
  return e == Elem::F32 || e == Elem::F16 || e == Elem::BF16;
}

HostArray::HostArray(Elem elem, std::vector<int64_t> shape)
    : elem_(elem), shape_(std::move(shape)) {
  numel_ = 1;
  for (int64_t d : shape_) {
    if (d < 0)
      throw std::invalid_argument("HostArray: negative dimension");
    numel_ *= d;
  }
  int64_t bytes = numel_ * elemBytes(elem_);
  storage_.assign((bytes + 7) / 8 + 1, 0);
}

HostArray HostArray::fromI32(const std::vector<int32_t> &v) {
  return fromI32(v, {static_cast<int64_t>(v.size())});
}

HostArray HostArray::fromI32(const std::vector<int32_t> &v,
                             std::vector<int64_t> shape) {
  HostArray a(Elem::I32, std::move(shape));
  if (a.numel() != static_cast<int64_t>(v.size()))
    throw std::invalid_argument("HostArray::fromI32: size mismatch");
  if (!v.empty())
    std::memcpy(a.data(), v.data(), v.size() * 4);
  return a;
}

HostArray HostArray::fromBytes(Elem elem, const std::vector<uint8_t> &v) {
  HostArray a(elem, {static_cast<int64_t>(v.size())});
  if (!v.empty())
    std::memcpy(a.data(), v.data(), v.size());
  return a;
}

HostArray HostArray::fromDoubles(Elem elem, const std::vector<double> &v,
                                 std::vector<int64_t> shape) {
  HostArray a(elem, std::move(shape));
  if (a.numel() != static_cast<int64_t>(v.size()))
    throw std::invalid_argument("HostArray::fromDoubles: size mismatch");
  for (int64_t i = 0; i < a.numel(); ++i)
    a.set(i, v[i]);
  return a;
}

void *HostArray::data() { return storage_.data(); }
const void *HostArray::data() const { return storage_.data(); }

double HostArray::get(int64_t i) const {
  const uint8_t *p = reinterpret_cast<const uint8_t *>(storage_.data());
  switch (elem_) {
  case Elem::F32: {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  case Elem::F16: {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return halfToFloat(h);
  }
  case Elem::BF16: {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return bf16ToFloat(h);
  }
  case Elem::I32: {
    int32_t v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  case Elem::I8:
    return static_cast<int8_t>(p[i]);
  case Elem::I1:
    return p[i];
  }
  return 0;
}

void HostArray::set(int64_t i, double v) {
  uint8_t *p = reinterpret_cast<uint8_t *>(storage_.data());
  switch (elem_) {
  case Elem::F32: {
    float f = static_cast<float>(v);
    std::memcpy(p + 4 * i, &f, 4);
    return;
  }
  case Elem::F16: {
    uint16_t h = floatToHalf(static_cast<float>(v));
    std::memcpy(p + 2 * i, &h, 2);
    return;
  }
  case Elem::BF16: {
    uint16_t h = floatToBF16(static_cast<float>(v));
    std::memcpy(p + 2 * i, &h, 2);
    return;
  }
  case Elem::I32: {
    int32_t x = static_cast<int32_t>(v);
    std::memcpy(p + 4 * i, &x, 4);
    return;
  }
  case Elem::I8:
  case Elem::I1:
    p[i] = static_cast<uint8_t>(static_cast<int64_t>(v));
    return;
  }
}

int32_t HostArray::getI32(int64_t i) const {
  if (elem_ != Elem::I32)
    throw std::logic_error("getI32 on a non-i32 array");
  int32_t v;
  std::memcpy(&v, reinterpret_cast<const uint8_t *>(storage_.data()) + 4 * i,
              4);
  return v;
}

void HostArray::setI32(int64_t i, int32_t v) {
  if (elem_ != Elem::I32)
    throw std::logic_error("setI32 on a non-i32 array");
  std::memcpy(reinterpret_cast<uint8_t *>(storage_.data()) + 4 * i, &v, 4);
}

std::vector<double> HostArray::toDoubles() const {
  std::vector<double> v(numel_);
  for (int64_t i = 0; i < numel_; ++i)
    v[i] = get(i);
  return v;
}

std::vector<int32_t> HostArray::toI32() const {
  std::vector<int32_t> v(numel_);
  for (int64_t i = 0; i < numel_; ++i)
    v[i] = getI32(i);
  return v;
}

std::vector<uint8_t> HostArray::toBytes() const {
  const uint8_t *p = reinterpret_cast<const uint8_t *>(storage_.data());
  return std::vector<uint8_t>(p, p + numel_ * elemBytes(elem_));
}

void HostArray::fillBytes(uint8_t byte) {
  std::memset(storage_.data(), byte, numel_ * elemBytes(elem_));
}

bool HostArray::sameBits(const HostArray &other) const {
  return elem_ == other.elem_ && shape_ == other.shape_ &&
         std::memcmp(storage_.data(), other.storage_.data(),
                     numel_ * elemBytes(elem_)) == 0;
}

//===----------------------------------------------------------------------===//
// JIT
//===----------------------------------------------------------------------===//

std::string PipelineConfig::str() const {
  std::ostringstream os;
  os << "pa-lower-to-cpu{cascade-decompose=" << (cascadeDecompose ? 1 : 0)
     << " split-kv-chunk=" << splitKVChunk << "}";
  return os.str();
}

JitModule::~JitModule() = default;

namespace {

/// The descriptor of a ranked memref of rank <= 5 (StridedMemRefType's
/// layout: the callee reads sizes[rank] then strides[rank]).
struct MemRefDescriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizesAndStrides[10];
};

/// Results copied back into their outs (see JitModule::call).
int64_t gCopiedResults = 0;

/// What the pipeline left of a function's results: the pipeline drops
/// results equivalent to arguments (so the function returns nothing), but
/// where it keeps them `_mlir_ciface_<fn>` takes a pointer to the result
/// struct first. Results are the function's last `ranks.size()` arguments
/// (the outs, by the tests' convention); `ranks` are their memref ranks.
struct ResultInfo {
  std::vector<int64_t> ranks;
};

class EngineModule : public JitModule {
public:
  EngineModule(std::unique_ptr<mlir::ExecutionEngine> engine,
               std::map<std::string, ResultInfo> results)
      : engine(std::move(engine)), results(std::move(results)) {}

  std::string call(const std::string &fn,
                   const std::vector<HostArray *> &args) override {
    std::vector<MemRefDescriptor> descs(args.size());
    std::vector<void *> descPtrs(args.size());
    llvm::SmallVector<void *> packed;
    static uint64_t dummy[8] = {0};
    for (size_t i = 0; i < args.size(); ++i) {
      HostArray &a = *args[i];
      if (a.rank() < 1 || a.rank() > 5)
        return "argument " + std::to_string(i) + " has unsupported rank " +
               std::to_string(a.rank());
      MemRefDescriptor &d = descs[i];
      void *ptr = a.numel() == 0 ? static_cast<void *>(dummy) : a.data();
      d.allocated = d.aligned = ptr;
      d.offset = 0;
      int64_t r = a.rank();
      int64_t stride = 1;
      for (int64_t k = r - 1; k >= 0; --k) {
        d.sizesAndStrides[k] = a.shape()[k];
        d.sizesAndStrides[r + k] = stride;
        stride *= std::max<int64_t>(a.shape()[k], 1);
      }
      descPtrs[i] = &d;
    }
    // Kept results: the wrapper writes them through a leading pointer.
    const std::vector<int64_t> *ranks = nullptr;
    if (auto it = results.find(fn); it != results.end() &&
                                    !it->second.ranks.empty())
      ranks = &it->second.ranks;
    std::vector<uint64_t> resultBuf;
    void *resultPtr = nullptr;
    if (ranks) {
      if (ranks->size() > args.size())
        return "function " + fn + " has more results than arguments";
      size_t words = 0;
      for (int64_t r : *ranks)
        words += 3 + 2 * r;
      resultBuf.assign(words + 8, 0);
      resultPtr = resultBuf.data();
      packed.push_back(&resultPtr);
    }
    for (size_t i = 0; i < args.size(); ++i)
      packed.push_back(&descPtrs[i]);
    llvm::Error err = engine->invokePacked("_mlir_ciface_" + fn, packed);
    if (err) {
      std::string msg;
      llvm::raw_string_ostream os(msg);
      os << "invoking _mlir_ciface_" << fn << ": " << err;
      llvm::consumeError(std::move(err));
      return msg;
    }
    if (!ranks)
      return "";
    // Result k is the out argument args.size() - ranks.size() + k: it must
    // be that buffer (updated in place) or a new one we copy back from.
    size_t word = 0;
    for (size_t k = 0; k < ranks->size(); ++k) {
      int64_t r = (*ranks)[k];
      const uint64_t *d = resultBuf.data() + word;
      word += 3 + 2 * r;
      HostArray &out = *args[args.size() - ranks->size() + k];
      void *allocated = reinterpret_cast<void *>(d[0]);
      char *aligned = reinterpret_cast<char *>(d[1]);
      int64_t offset = static_cast<int64_t>(d[2]);
      if (out.numel() == 0 || aligned == out.data())
        continue;
      if (r != out.rank())
        return "result " + std::to_string(k) + " of " + fn +
               " has rank " + std::to_string(r) + ", its out " +
               std::to_string(out.rank());
      std::vector<int64_t> sizes(r), strides(r);
      for (int64_t j = 0; j < r; ++j) {
        sizes[j] = static_cast<int64_t>(d[3 + j]);
        strides[j] = static_cast<int64_t>(d[3 + r + j]);
        if (sizes[j] != out.shape()[j])
          return "result " + std::to_string(k) + " of " + fn +
                 " has a different shape than its out";
      }
      int64_t eb = elemBytes(out.elem());
      char *dst = static_cast<char *>(out.data());
      std::vector<int64_t> idx(r, 0);
      for (int64_t n = 0; n < out.numel(); ++n) {
        int64_t src = offset;
        for (int64_t j = 0; j < r; ++j)
          src += idx[j] * strides[j];
        std::memcpy(dst + n * eb, aligned + src * eb, eb);
        for (int64_t j = r - 1; j >= 0; --j) {
          if (++idx[j] < sizes[j])
            break;
          idx[j] = 0;
        }
      }
      // A result may be another argument (e.g. a one-state pa.merge folds to
      // its state): copy, but free only what the JIT code allocated.
      bool isArg = allocated == static_cast<void *>(dummy);
      for (HostArray *a : args)
        isArg |= allocated == a->data();
      if (!isArg)
        std::free(allocated);
      ++gCopiedResults;
    }
    return "";
  }

private:
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::map<std::string, ResultInfo> results;
};

struct JitState {
  JitState() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    mlir::DialectRegistry registry;
    mlir::registerAllDialects(registry);
    mlir::registerAllExtensions(registry);
    registry.insert<mlir::pa::PADialect>();
    mlir::pa::registerBufferizableOpInterfaceExternalModels(registry);
    mlir::registerAllToLLVMIRTranslations(registry);
    context = std::make_unique<mlir::MLIRContext>(registry);
    context->loadAllAvailableDialects();
    // The runtime libraries mlir-runner would get with --shared-libs, for
    // whatever the lowering calls (memrefCopy, f16 helpers).
#ifdef PA_MLIR_C_RUNNER_UTILS
    if (llvm::sys::fs::exists(PA_MLIR_C_RUNNER_UTILS))
      sharedLibs.push_back(PA_MLIR_C_RUNNER_UTILS);
#endif
#ifdef PA_MLIR_FLOAT16_UTILS
    if (llvm::sys::fs::exists(PA_MLIR_FLOAT16_UTILS))
      sharedLibs.push_back(PA_MLIR_FLOAT16_UTILS);
#endif
    if (const char *lvl = std::getenv("PA_JIT_OPT"))
      optLevel = std::atoi(lvl);
    dumpIR = std::getenv("PA_DUMP_IR") != nullptr;
  }
  std::unique_ptr<mlir::MLIRContext> context;
  std::vector<std::string> sharedLibs;
  std::map<std::string, std::unique_ptr<JitModule>> cache;
  std::map<std::string, std::string> failures;
  int optLevel = 0;
  bool dumpIR = false;
  bool warnedKeptResults = false;
  double compileSeconds = 0;
  int64_t compiled = 0;
};

/// Never destroyed: tearing the engines down at exit runs their ORC
/// deinitializers, which compile a platform module after the tests are over
/// (and that crashed in LLVM 22's codegen); the process exit frees it all.
JitState &state() {
  static JitState *s = new JitState;
  return *s;
}

} // namespace

JitModule *compile(const std::string &mlirText, const PipelineConfig &cfg,
                   std::string &error) {
  JitState &s = state();
  std::string key = cfg.str() + "\n" + mlirText;
  if (auto it = s.cache.find(key); it != s.cache.end())
    return it->second.get();
  if (auto it = s.failures.find(key); it != s.failures.end()) {
    error = it->second;
    return nullptr;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto finish = [&](JitModule *m, const std::string &err) -> JitModule * {
    s.compileSeconds += std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - t0)
                            .count();
    if (!m) {
      error = err;
      s.failures[key] = err;
    }
    return m;
  };

  std::string diags;
  llvm::raw_string_ostream diagOS(diags);
  mlir::ScopedDiagnosticHandler handler(
      s.context.get(), [&](mlir::Diagnostic &diag) {
        diagOS << diag.getLocation() << ": " << diag << "\n";
        for (mlir::Diagnostic &note : diag.getNotes())
          diagOS << "  note: " << note << "\n";
        return mlir::success();
      });

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(mlirText, s.context.get());
  if (!module)
    return finish(nullptr, "failed to parse the test module:\n" + diags +
                               "\n--- module ---\n" + mlirText);

  // Result ranks of the C-interface functions, before lowering.
  std::map<std::string, ResultInfo> results;
  for (auto f : module->getOps<mlir::func::FuncOp>()) {
    ResultInfo info;
    for (mlir::Type t : f.getFunctionType().getResults())
      info.ranks.push_back(mlir::cast<mlir::ShapedType>(t).getRank());
    results[f.getSymName().str()] = info;
  }

  mlir::PassManager pm(s.context.get());
  mlir::pa::LowerToCPUOptions opts;
  opts.cascadeDecompose = cfg.cascadeDecompose;
  opts.splitKVChunk = cfg.splitKVChunk;
  mlir::pa::buildLowerToCPUPipeline(pm, opts);
  if (mlir::failed(pm.run(*module)))
    return finish(nullptr, "pa-lower-to-cpu (" + cfg.str() + ") failed:\n" +
                               diags + "\n--- module ---\n" + mlirText);
  // Which results did the pipeline keep?
  for (auto &[name, info] : results) {
    auto f = module->lookupSymbol<mlir::LLVM::LLVMFuncOp>(name);
    if (!f)
      return finish(nullptr, "no llvm.func @" + name + " after lowering");
    if (mlir::isa<mlir::LLVM::LLVMVoidType>(
            f.getFunctionType().getReturnType())) {
      info.ranks.clear();
    } else if (!s.warnedKeptResults) {
      s.warnedKeptResults = true;
      std::cerr << "[pa-cpu-diff] note: pa-lower-to-cpu keeps the results of "
                   "public function @"
                << name
                << " (they are not dropped as equivalent to the outs); the "
                   "harness passes a result pointer and checks they alias "
                   "the outs\n";
    }
  }
  if (s.dumpIR) {
    llvm::errs() << "// ---- lowered (" << cfg.str() << ")\n";
    module->print(llvm::errs());
    llvm::errs() << "\n";
  }

  std::vector<llvm::StringRef> libs(s.sharedLibs.begin(), s.sharedLibs.end());
  mlir::ExecutionEngineOptions eo;
  std::function<llvm::Error(llvm::Module *)> transformer;
  if (s.optLevel > 0) {
    transformer = mlir::makeOptimizingTransformer(s.optLevel, 0, nullptr);
    eo.transformer = transformer;
  }
  eo.jitCodeGenOptLevel = s.optLevel > 0 ? llvm::CodeGenOptLevel::Default
                                         : llvm::CodeGenOptLevel::None;
  eo.sharedLibPaths = libs;
  eo.enableGDBNotificationListener = false;
  eo.enablePerfNotificationListener = false;
  auto engine = mlir::ExecutionEngine::create(*module, eo);
  if (!engine) {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    os << engine.takeError();
    return finish(nullptr, "ExecutionEngine::create failed: " + msg + "\n" +
                               diags + "\n--- module ---\n" + mlirText);
  }
  (*engine)->initialize();
  auto jit =
      std::make_unique<EngineModule>(std::move(*engine), std::move(results));
  JitModule *ptr = jit.get();
  s.cache[key] = std::move(jit);
  ++s.compiled;
  return finish(ptr, "");
}

double totalCompileSeconds() { return state().compileSeconds; }
int64_t numCopiedResults() { return gCopiedResults; }
int64_t numCompiledModules() { return state().compiled; }

//===----------------------------------------------------------------------===//
// Seeds, random numbers
//===----------------------------------------------------------------------===//

static uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t baseSeed(const std::string &testName, uint64_t defaultSeed) {
  uint64_t seed = defaultSeed;
  if (const char *env = std::getenv("PA_SEED"))
    seed = std::strtoull(env, nullptr, 0);
  uint64_t h = 1469598103934665603ull; // FNV-1a of the name
  for (char c : testName)
    h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return splitmix(seed ^ h);
}

uint64_t mixSeed(uint64_t a, uint64_t b, uint64_t c) {
  return splitmix(splitmix(splitmix(a) ^ b) ^ c);
}

int64_t Rng::uniformInt(int64_t lo, int64_t hi) {
  if (hi <= lo)
    return lo;
  uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(gen() % span);
}

double Rng::uniform(double lo, double hi) {
  double u = static_cast<double>(gen() >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * u;
}

bool Rng::chance(double p) { return uniform(0, 1) < p; }

std::vector<double> randomValues(Rng &rng, int64_t n, Elem elem, double lo,
                                 double hi) {
  std::vector<double> v(n);
  for (double &x : v)
    x = roundTo(elem, rng.uniform(lo, hi));
  return v;
}

//===----------------------------------------------------------------------===//
// Paged KV caches and page tables
//===----------------------------------------------------------------------===//

std::string CacheConfig::attr() const {
  std::ostringstream os;
  os << "#pa.paged_kv<" << (layout == ref::KVLayout::NHD ? "nhd" : "hnd")
     << ", page_size = " << pageSize << ", kv_heads = " << kvHeads
     << ", head_dim = " << headDim << ">";
  return os.str();
}

std::string CacheConfig::tensorType() const {
  std::ostringstream os;
  os << "tensor<?x" << (joint ? "2x" : "");
  if (layout == ref::KVLayout::NHD)
    os << pageSize << "x" << kvHeads;
  else
    os << kvHeads << "x" << pageSize;
  os << "x" << headDim << "x" << elemName(elem) << ">";
  return os.str();
}

std::vector<int64_t> CacheConfig::shape(int64_t numPages) const {
  std::vector<int64_t> s{numPages};
  if (joint)
    s.push_back(2);
  if (layout == ref::KVLayout::NHD) {
    s.push_back(pageSize);
    s.push_back(kvHeads);
  } else {
    s.push_back(kvHeads);
    s.push_back(pageSize);
  }
  s.push_back(headDim);
  return s;
}

std::string CacheConfig::str() const {
  std::ostringstream os;
  os << (layout == ref::KVLayout::NHD ? "NHD" : "HND") << " P=" << pageSize
     << " Hkv=" << kvHeads << " D=" << headDim << " " << elemName(elem) << " "
     << (joint ? "joint" : "split");
  return os.str();
}

PagePool::PagePool(Rng &rng, int64_t numPages) : perm(numPages) {
  for (int64_t i = 0; i < numPages; ++i)
    perm[i] = static_cast<int32_t>(i);
  rng.shuffle(perm);
}

int32_t PagePool::take() {
  if (next >= perm.size())
    throw std::logic_error("PagePool exhausted");
  return perm[next++];
}

ref::PageTable makePageTable(Rng &rng, int64_t pageSize,
                             const std::vector<int64_t> &lens,
                             PagePool &pool) {
  ref::PageTable pt;
  pt.pageSize = pageSize;
  pt.indptr.push_back(0);
  for (int64_t len : lens) {
    int64_t np = pagesFor(len, pageSize);
    for (int64_t i = 0; i < np; ++i)
      pt.indices.push_back(pool.take());
    pt.indptr.push_back(static_cast<int32_t>(pt.indices.size()));
    pt.lastPageLen.push_back(
        np == 0 ? static_cast<int32_t>(rng.uniformInt(0, pageSize))
                : static_cast<int32_t>(len - (np - 1) * pageSize));
  }
  return pt;
}

int64_t sampleLen(Rng &rng, int64_t pageSize, int64_t maxLen) {
  double r = rng.uniform(0, 1);
  if (r < 0.12 || maxLen <= 0)
    return 0;
  if (r < 0.30) { // full last page
    int64_t k = std::max<int64_t>(1, maxLen / pageSize);
    return rng.uniformInt(1, k) * pageSize;
  }
  if (r < 0.42) // at most one page
    return rng.uniformInt(1, std::min(pageSize, maxLen));
  return rng.uniformInt(1, maxLen);
}

static int64_t jointOffset(const CacheConfig &cfg, int64_t refOffset,
                           bool isV) {
  int64_t pageElems = cfg.pageSize * cfg.kvHeads * cfg.headDim;
  if (!cfg.joint)
    return refOffset;
  int64_t page = refOffset / pageElems, inner = refOffset % pageElems;
  return page * 2 * pageElems + (isV ? pageElems : 0) + inner;
}

std::vector<HostArray> cacheArrays(const CacheConfig &cfg,
                                   const ref::PagedKV &kv) {
  std::vector<HostArray> arrays;
  for (int64_t i = 0; i < cfg.numOperands(); ++i)
    arrays.emplace_back(cfg.elem, cfg.shape(kv.numPages));
  int64_t n = kv.numElements();
  for (int64_t i = 0; i < n; ++i) {
    if (cfg.joint) {
      arrays[0].set(jointOffset(cfg, i, false), kv.k[i]);
      arrays[0].set(jointOffset(cfg, i, true), kv.v[i]);
    } else {
      arrays[0].set(i, kv.k[i]);
      arrays[1].set(i, kv.v[i]);
    }
  }
  return arrays;
}

void randomCache(Rng &rng, const CacheConfig &cfg, int64_t numPages,
                 ref::PagedKV &kv, std::vector<HostArray> &arrays) {
  kv = ref::PagedKV(cfg.layout, numPages, cfg.pageSize, cfg.kvHeads,
                    cfg.headDim);
  kv.k = randomValues(rng, kv.numElements(), cfg.elem, -1, 1);
  kv.v = randomValues(rng, kv.numElements(), cfg.elem, -1, 1);
  arrays = cacheArrays(cfg, kv);
}

PageTableArrays pageTableArrays(const ref::PageTable &pt) {
  return {HostArray::fromI32(pt.indptr), HostArray::fromI32(pt.indices),
          HostArray::fromI32(pt.lastPageLen)};
}

std::string describeTable(const ref::PageTable &pt) {
  std::vector<int64_t> lens;
  for (int64_t b = 0; b < pt.batch(); ++b)
    lens.push_back(pt.kvLen(b));
  return "kv_len=" + join(lens) + " kv_indptr=" + join(pt.indptr) +
         " kv_indices=" + join(pt.indices) +
         " last_page_len=" + join(pt.lastPageLen);
}

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

double oTolerance(Elem e) { return e == Elem::F32 ? 1e-5 : 2e-3; }
double lseTolerance(Elem e) { return e == Elem::F32 ? 1e-4 : 2e-3; }

double relL2(const HostArray &x, const std::vector<double> &expected,
             int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    double a = x.get(i), b = expected[i];
    if (!std::isfinite(a))
      return std::numeric_limits<double>::infinity();
    num += (a - b) * (a - b);
    den += b * b;
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

double lseError(const HostArray &lse, const std::vector<double> &expected,
                int64_t n, std::string &problem) {
  double maxErr = 0;
  for (int64_t i = 0; i < n; ++i) {
    double a = lse.get(i), b = expected[i];
    bool refNegInf = std::isinf(b) && b < 0;
    if (std::isnan(a)) {
      if (problem.empty())
        problem = "lse[" + std::to_string(i) + "] is NaN (reference " +
                  std::to_string(b) + ")";
      continue;
    }
    if (refNegInf) {
      if (!(std::isinf(a) && a < 0) && problem.empty())
        problem = "lse[" + std::to_string(i) + "] = " + std::to_string(a) +
                  " but the reference is -inf";
      continue;
    }
    if (!std::isfinite(a)) {
      if (problem.empty())
        problem = "lse[" + std::to_string(i) + "] = " + std::to_string(a) +
                  " but the reference is " + std::to_string(b);
      continue;
    }
    maxErr = std::max(maxErr, std::fabs(a - b));
  }
  return maxErr;
}

std::string StateResult::str() const {
  std::ostringstream os;
  os << "o rel L2 err = " << oErr << ", lse max abs err = " << lseErr;
  if (!problem.empty())
    os << ", " << problem;
  return os.str();
}

StateResult compareStates(const HostArray &o, const HostArray &lse,
                          const ref::States &expected, int64_t rows) {
  StateResult r;
  int64_t hd = expected.numHeads * expected.headDim;
  r.oErr = relL2(o, expected.o, rows * hd);
  if (std::isinf(r.oErr))
    r.problem = "o has NaN/inf";
  std::string p;
  r.lseErr = lseError(lse, expected.lse, rows * expected.numHeads, p);
  if (r.problem.empty())
    r.problem = p;
  return r;
}

void OpStats::print() const {
  std::cout << "[pa-cpu-diff] " << name << ": " << cases << " cases over "
            << configs << " static configurations";
  if (hasLse)
    std::cout << "; largest o rel L2 err " << maxO << " (f32 cases: "
              << maxOF32 << "), largest lse abs err " << maxLse
              << " (f32 cases: " << maxLseF32 << ")";
  else if (maxO > 0)
    std::cout << "; largest rel L2 err " << maxO << " (f32 cases: " << maxOF32
              << ")";
  std::cout << " (compile time " << totalCompileSeconds() - compileAtStart
            << " s)" << std::endl;
  if (int64_t n = numCopiedResults() - copiedAtStart)
    std::cout << "[pa-cpu-diff] note: " << n
              << " results came back in a buffer other than their out "
                 "argument (copied into the out; e.g. a one-state pa.merge "
                 "folds to its state)"
              << std::endl;
}

//===----------------------------------------------------------------------===//
// Test driver
//===----------------------------------------------------------------------===//

namespace {
/// Reports failing cases of one test; the test stops at kMaxFailuresPerTest.
struct FailureLog {
  std::string test;
  uint64_t seed;
  int failures = 0;
  void report(int cfgIdx, const std::string &cfg, int caseIdx,
              const std::string &msg) {
    ADD_FAILURE() << test << " FAILED: seed=" << seed << " (PA_SEED env "
                  << "overrides the base seed) config#" << cfgIdx << " [" << cfg
                  << "] case#" << caseIdx << ": " << msg;
    ++failures;
  }
  bool stop() const { return failures >= kMaxFailuresPerTest; }
};
} // namespace

void runDifferentialTest(
    const std::string &testName, uint64_t defaultSeed, uint64_t configSalt,
    int numConfigs, int casesPerConfig, const std::vector<OpStats *> &stats,
    const std::function<DiffConfig(Rng &crng, int ci)> &makeConfig) {
  uint64_t seed = baseSeed(testName, defaultSeed);
  std::cout << "[pa-cpu-diff] " << testName << " base seed " << seed
            << std::endl;
  FailureLog log{testName, seed};
  for (int ci = 0; ci < numConfigs && !log.stop(); ++ci) {
    Rng crng(mixSeed(seed, ci, configSalt));
    DiffConfig c = makeConfig(crng, ci);
    std::string err;
    JitModule *m = compile(c.module, c.pipeline, err);
    if (!m) {
      log.report(ci, c.desc, -1, err);
      continue;
    }
    for (OpStats *s : stats)
      ++s->configs;
    for (int k = 0; k < casesPerConfig && !log.stop(); ++k) {
      Rng rng(mixSeed(seed, ci, k));
      std::string msg = c.runCase(*m, rng, k);
      if (!msg.empty())
        log.report(ci, c.desc, k, msg);
    }
  }
  for (const OpStats *s : stats)
    s->print();
}

//===----------------------------------------------------------------------===//
// Misc
//===----------------------------------------------------------------------===//

std::string fmtF32(float v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9e", static_cast<double>(v));
  return buf;
}

std::string fmtF64(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17e", v);
  return buf;
}

std::vector<int32_t> indptrOf(const std::vector<int64_t> &lens) {
  std::vector<int32_t> ip{0};
  for (int64_t l : lens)
    ip.push_back(static_cast<int32_t>(ip.back() + l));
  return ip;
}

} // namespace pa_cpu_test
