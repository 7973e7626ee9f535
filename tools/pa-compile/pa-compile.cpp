//===- pa-compile.cpp - compile a decode configuration to a kernel bundle ---===//
//
// Writes the pa program of one decode configuration (plain decode, and the
// split-KV form: decode_partial over a run-time work list + merge_segments),
// runs `pa-lower-to-nvvm` on it and writes a kernel bundle: the cubin, the
// PTX, the IR, and `bundle.manifest` (kernels, their arguments and launch
// rules; see docs/Runtime.md).
//
//   pa-compile --head-dim 128 --page-size 16 --kv-heads 8 --group 4 \
//              --layout nhd --dtype f16 --kv joint --chip sm_90 -o DIR
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Dialect/PA.h"
#include "PagedAttn/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<int64_t> headDim("head-dim", cl::init(128), cl::desc("D"));
static cl::opt<int64_t> pageSize("page-size", cl::init(16), cl::desc("P"));
static cl::opt<int64_t> kvHeads("kv-heads", cl::init(8), cl::desc("Hkv"));
static cl::opt<int64_t> group("group", cl::init(4), cl::desc("Hq / Hkv"));
static cl::opt<std::string> layout("layout", cl::init("nhd"),
                                   cl::desc("nhd | hnd"));
static cl::opt<std::string> dtype("dtype", cl::init("f16"),
                                  cl::desc("f16 | bf16 | f32"));
static cl::opt<std::string> kvForm("kv", cl::init("joint"),
                                   cl::desc("joint | split"));
static cl::opt<std::string> chip("chip", cl::init("sm_90"),
                                 cl::desc("sm_80 | sm_90 | ..."));
static cl::opt<int64_t> threads("cta-threads", cl::init(128),
                               cl::desc("Threads per CTA"));
static cl::opt<int64_t> unroll(
    "tokens-in-flight", cl::init(0),
    cl::desc("Tokens per lane group in flight (0: the tuned default, see "
             "tunedShape)"));
static cl::opt<int64_t> laneBytes(
    "lane-bytes", cl::init(0),
    cl::desc("Bytes of a K/V row per lane and token (16 or 32; 0: the tuned "
             "default, see tunedShape)"));
static cl::opt<std::string> outDir("o", cl::Required,
                                   cl::desc("Output bundle directory"));

namespace {
std::string cacheType() {
  bool nhd = layout == "nhd";
  std::string inner =
      nhd ? llvm::formatv("{0}x{1}x{2}", pageSize, kvHeads, headDim).str()
          : llvm::formatv("{0}x{1}x{2}", kvHeads, pageSize, headDim).str();
  if (kvForm == "joint")
    return llvm::formatv("tensor<?x2x{0}x{1}>", inner, dtype).str();
  return llvm::formatv("tensor<?x{0}x{1}>", inner, dtype).str();
}

/// The program: @decode (one pass) and @decode_split (work-list split-KV).
std::string program() {
  int64_t hq = kvHeads * group;
  std::string q = llvm::formatv("tensor<?x{0}x{1}x{2}>", hq, headDim, dtype);
  std::string lse = llvm::formatv("tensor<?x{0}xf32>", hq);
  std::string part = llvm::formatv("tensor<?x{0}x{1}xf32>", hq, headDim);
  std::string kv = cacheType();
  bool joint = kvForm == "joint";
  std::string kvArgs = joint ? "%kv: " + kv : "%k: " + kv + ", %v: " + kv;
  std::string kvUse = joint ? "%kv : " + kv : "%k, %v : " + kv + ", " + kv;
  std::string cache =
      llvm::formatv("#pa.paged_kv<{0}, page_size = {1}, kv_heads = {2}, "
                    "head_dim = {3}>",
                    layout, pageSize, kvHeads, headDim);
  std::string idx = "tensor<?xi32>";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "func.func @decode(%q: " << q << ", " << kvArgs << ", %ip: " << idx
     << ", %ix: " << idx << ", %lp: " << idx << ", %o: " << q
     << ", %lse: " << lse << ") -> (" << q << ", " << lse << ") {\n"
     << "  %r:2 = pa.decode q(%q : " << q << ") kv(" << kvUse
     << ") pages(%ip, %ix, %lp : " << idx << ", " << idx << ", " << idx
     << ") outs(%o, %lse : " << q << ", " << lse << ") {cache = " << cache
     << "}\n  return %r#0, %r#1 : " << q << ", " << lse << "\n}\n";
  os << "func.func @decode_split(%q: " << q << ", " << kvArgs
     << ", %ip: " << idx << ", %ix: " << idx << ", %lp: " << idx
     << ", %wi: " << idx << ", %wr: " << idx << ", %ws: " << idx
     << ", %we: " << idx << ", %op: " << part << ", %lpart: " << lse
     << ", %o: " << q << ", %lse: " << lse << ") -> (" << q << ", " << lse
     << ") {\n"
     << "  %p:2 = pa.decode_partial q(%q : " << q << ") kv(" << kvUse
     << ") pages(%ip, %ix, %lp : " << idx << ", " << idx << ", " << idx
     << ") work(%wi, %wr, %ws, %we : " << idx << ", " << idx << ", " << idx
     << ", " << idx << ") outs(%op, %lpart : " << part << ", " << lse
     << ") {cache = " << cache << "}\n"
     << "  %r:2 = pa.merge_segments states(%p#0, %p#1 : " << part << ", "
     << lse << ") segments(%wi : " << idx << ") outs(%o, %lse : " << q << ", "
     << lse << ")\n  return %r#0, %r#1 : " << q << ", " << lse << "\n}\n";
  return s;
}

/// The manifest; argument roles follow the op operand order that
/// convert-pa-to-gpu gives its kernels.
std::string manifest() {
  std::string s;
  llvm::raw_string_ostream os(s);
  bool joint = kvForm == "joint";
  auto kvArgs = [&]() {
    if (joint)
      os << "arg kv memref 5 " << dtype << "\n";
    else
      os << "arg k memref 4 " << dtype << "\narg v memref 4 " << dtype
         << "\n";
  };
  auto pages = [&]() {
    os << "arg kv_indptr memref 1 i32\narg kv_indices memref 1 i32\n"
       << "arg kv_last_page_len memref 1 i32\n";
  };
  os << "pa-bundle 1\n"
     << "config head_dim " << headDim << " page_size " << pageSize
     << " kv_heads " << kvHeads << " group " << group << " layout " << layout
     << " dtype " << dtype << " kv " << kvForm << "\n";
  os << "kernel decode kernels.cubin pa_decode\narg q memref 3 " << dtype
     << "\n";
  kvArgs();
  pages();
  os << "arg o memref 3 " << dtype << "\narg lse memref 2 f32\n"
     << "launch grid batch kv_heads 1 block " << threads << " 1 1 smem 0\n";
  os << "kernel decode_partial kernels.cubin pa_decode_partial\n"
     << "arg q memref 3 " << dtype << "\n";
  kvArgs();
  pages();
  os << "arg work_indptr memref 1 i32\narg work_request memref 1 i32\n"
     << "arg work_start memref 1 i32\narg work_end memref 1 i32\n"
     << "arg o_part memref 3 f32\narg lse_part memref 2 f32\n"
     << "launch grid work_capacity kv_heads 1 block " << threads
     << " 1 1 smem 0\n";
  os << "kernel merge_segments kernels.cubin pa_merge_segments\n"
     << "arg o_part memref 3 f32\narg lse_part memref 2 f32\n"
     << "arg work_indptr memref 1 i32\narg o memref 3 " << dtype
     << "\narg lse memref 2 f32\n"
     << "launch grid batch num_q_heads 1 block " << threads
     << " 1 1 smem 0\nend\n";
  return s;
}

/// The kernel shape measured best on an H200 (docs/PERFORMANCE.md,
/// 2026-11-21): small GQA groups (2..4 heads per KV head with 16-bit data)
/// take 32 bytes per lane and 4 tokens in flight, which halves the lanes that
/// repeat each score's softmax and shuffles; MHA and large groups (whose q
/// and accumulators would not fit the registers twice as wide) take 16 bytes
/// per lane and 8 tokens in flight (2 for groups of 8, which spill at 8).
std::pair<int64_t, int64_t> tunedShape() {
  int64_t bytes = dtype == "f32" ? 4 : 2;
  bool wide = group >= 2 && group * (32 / bytes) <= 64 &&
              (headDim * bytes) % 32 == 0 && (headDim * bytes / 32) <= 32;
  int64_t lb = laneBytes > 0 ? laneBytes.getValue() : (wide ? 32 : 16);
  // Large groups keep 8 q rows and accumulators per lane: fewer tokens in
  // flight keep them in registers.
  int64_t u = unroll > 0 ? unroll.getValue()
                         : (lb == 32 ? 4 : (group >= 8 ? 2 : 8));
  return {lb, u};
}

/// Lowers `source` with `format` and returns the gpu.binary's object.
FailureOr<std::string> compile(MLIRContext &ctx, StringRef source,
                               StringRef format) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &ctx);
  if (!module)
    return failure();
  PassManager pm(&ctx);
  pa::LowerToNVVMOptions opts;
  opts.chip = chip;
  opts.format = format.str();
  opts.threads = threads;
  auto [lb, u] = tunedShape();
  opts.unroll = u;
  opts.laneBytes = lb;
  pa::buildLowerToNVVMPipeline(pm, opts);
  if (failed(pm.run(*module)))
    return failure();
  std::string object;
  module->walk([&](gpu::BinaryOp bin) {
    for (Attribute a : bin.getObjects())
      if (auto obj = dyn_cast<gpu::ObjectAttr>(a))
        object = obj.getObject().getValue().str();
  });
  if (object.empty()) {
    llvm::errs() << "pa-compile: no gpu.binary produced\n";
    return failure();
  }
  return object;
}

bool writeFile(StringRef path, StringRef data) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    llvm::errs() << "pa-compile: cannot write " << path << ": " << ec.message()
                 << "\n";
    return false;
  }
  os << data;
  return true;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "PagedAttn decode bundle compiler\n");
  if ((layout != "nhd" && layout != "hnd") ||
      (dtype != "f16" && dtype != "bf16" && dtype != "f32") ||
      (kvForm != "joint" && kvForm != "split")) {
    llvm::errs() << "pa-compile: bad --layout/--dtype/--kv\n";
    return 2;
  }
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registry.insert<pa::PADialect>();
  pa::registerBufferizableOpInterfaceExternalModels(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  if (std::error_code ec = llvm::sys::fs::create_directories(outDir)) {
    llvm::errs() << "pa-compile: cannot create " << outDir << "\n";
    return 1;
  }
  std::string source = program();
  auto t0 = std::chrono::steady_clock::now();
  FailureOr<std::string> cubin = compile(ctx, source, "bin");
  auto t1 = std::chrono::steady_clock::now();
  if (failed(cubin))
    return 1;
  FailureOr<std::string> ptx = compile(ctx, source, "isa");
  if (failed(ptx))
    return 1;
  SmallString<128> dir(outDir.getValue());
  auto path = [&](StringRef name) {
    SmallString<128> p = dir;
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  if (!writeFile(path("program.mlir"), source) ||
      !writeFile(path("kernels.cubin"), *cubin) ||
      !writeFile(path("kernels.ptx"), *ptx) ||
      !writeFile(path("bundle.manifest"), manifest()))
    return 1;
  double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  auto [lb, u] = tunedShape();
  llvm::outs() << llvm::formatv("pa-compile: {0} ({1} bytes cubin, {2:F1} ms "
                                "to cubin; {3} bytes/lane, {4} tokens in "
                                "flight)\n",
                                outDir.getValue(), cubin->size(), ms, lb, u);
  return 0;
}
