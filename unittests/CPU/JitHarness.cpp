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

double roundTo(Elem elem, double v) {
  return isFloat(elem) ? pa::test::roundTo(dtypeOf(elem), v) : v;
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

pa::rt::DType dtypeOf(Elem e) {
  switch (e) {
  case Elem::F16:
    return pa::rt::DType::F16;
  case Elem::BF16:
    return pa::rt::DType::BF16;
  case Elem::F32:
    return pa::rt::DType::F32;
  default:
    throw std::logic_error(std::string("dtypeOf: ") + elemName(e) +
                           " is not a float type");
  }
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
  case Elem::F32:
  case Elem::F16:
  case Elem::BF16:
    return pa::test::loadElement(p, i, dtypeOf(elem_));
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
  case Elem::F32:
  case Elem::F16:
  case Elem::BF16:
    pa::test::storeElement(p, i, dtypeOf(elem_), v);
    return;
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
     << " split-kv-chunk=" << splitKVChunk;
  if (tileQ > 0)
    os << " tile-attention=1 tile-q=" << tileQ << " tile-kv=" << tileKV;
  if (shardDevices > 0)
    os << " shard-devices=" << shardDevices
       << " shard-round-robin=" << (shardRoundRobin ? 1 : 0);
  os << "}";
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
    mlir::pa::registerPipelineDialects(registry);
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
  if (cfg.tileQ > 0) {
    opts.tileAttention = true;
    opts.tileQ = cfg.tileQ;
    opts.tileKV = cfg.tileKV;
  }
  opts.shardDevices = cfg.shardDevices;
  opts.shardRoundRobin = cfg.shardRoundRobin;
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

std::vector<double> randomValues(Rng &rng, int64_t n, Elem elem, double lo,
                                 double hi) {
  return isFloat(elem) ? pa::test::randomValues(rng, n, dtypeOf(elem), lo, hi)
                       : pa::test::randomValues(rng, n, lo, hi);
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
  return geometry().bufferShape(numPages);
}

CacheConfig randomCacheConfig(Rng &rng, int idx,
                              const std::vector<int64_t> &headDims) {
  static const std::vector<int64_t> fixedP = {1, 16, 64, 3, 5, 7};
  CacheConfig c;
  c.pageSize = idx < static_cast<int>(fixedP.size()) ? fixedP[idx]
                                                     : rng.uniformInt(1, 64);
  c.kvHeads = rng.uniformInt(1, 4);
  c.headDim = rng.pick(headDims);
  c.layout = idx % 2 == 0 ? ref::KVLayout::NHD : ref::KVLayout::HND;
  c.joint = (idx / 2) % 2 == 0;
  c.elem = (idx / 4) % 2 == 0 ? Elem::F32 : Elem::F16;
  return c;
}

pa::test::CacheGeometry CacheConfig::geometry() const {
  pa::test::CacheGeometry g;
  g.layout = layout == ref::KVLayout::NHD ? pa::rt::CacheLayout::NHD
                                          : pa::rt::CacheLayout::HND;
  g.storage = joint ? pa::rt::KVStorage::Joint : pa::rt::KVStorage::Split;
  g.pageSize = pageSize;
  g.kvHeads = kvHeads;
  g.headDim = headDim;
  return g;
}

std::string CacheConfig::str() const {
  std::ostringstream os;
  os << (layout == ref::KVLayout::NHD ? "NHD" : "HND") << " P=" << pageSize
     << " Hkv=" << kvHeads << " D=" << headDim << " " << elemName(elem) << " "
     << (joint ? "joint" : "split");
  return os.str();
}

std::vector<HostArray> cacheArrays(const CacheConfig &cfg,
                                   const ref::PagedKV &kv) {
  std::vector<HostArray> arrays;
  for (const std::vector<uint8_t> &bytes :
       pa::test::cacheBuffers(cfg.geometry(), dtypeOf(cfg.elem), kv)) {
    arrays.emplace_back(cfg.elem, cfg.shape(kv.numPages));
    if (!bytes.empty())
      std::memcpy(arrays.back().data(), bytes.data(), bytes.size());
  }
  return arrays;
}

void randomCache(Rng &rng, const CacheConfig &cfg, int64_t numPages,
                 ref::PagedKV &kv, std::vector<HostArray> &arrays) {
  kv = pa::test::randomPagedKV(rng, cfg.layout, numPages, cfg.pageSize,
                               cfg.kvHeads, cfg.headDim, dtypeOf(cfg.elem));
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

/// o is rounded to its element type at the end: f16's unit roundoff is
/// 2^-11 (2e-3 is four of them), bf16's 2^-8 (8e-3 is two).
double oTolerance(Elem e) {
  return e == Elem::F32 ? 1e-5 : (e == Elem::BF16 ? 8e-3 : 2e-3);
}
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

std::string checkStates(const HostArray &o, const HostArray &lse,
                        const ref::States &expected, int64_t rows, Elem e,
                        OpStats &stats, const std::string &desc) {
  StateResult r = compareStates(o, lse, expected, rows);
  stats.add(r, e);
  return r.ok(e) ? "" : r.str() + " (" + desc + ")";
}

std::string checkAgainstOracle(const std::function<ref::States()> &oracle,
                               const HostArray &o, const HostArray &lse,
                               int64_t rows, Elem e, OpStats &stats,
                               const std::string &desc) {
  ref::States expected;
  try {
    expected = oracle();
  } catch (const ref::Error &e) {
    return std::string("harness bug: the oracle rejected the input: ") +
           e.what() + " (" + desc + ")";
  }
  return checkStates(o, lse, expected, rows, e, stats, desc);
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

} // namespace pa_cpu_test
