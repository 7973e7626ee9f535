//===- BundleWriter.cpp - kernels of the GPU pipeline to a bundle ----------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Bundle/BundleWriter.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::pa;
namespace rt = ::pa::rt;

namespace {

/// The manifest element type of a kernel argument.
FailureOr<rt::ElemType> elemTypeOf(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  rt::ElemType e;
  if (!rt::fromString(s, e))
    return failure();
  return e;
}

} // namespace

FailureOr<rt::Manifest>
mlir::pa::manifestFromKernels(ModuleOp module, const BundleOptions &options,
                              KernelABI *decodeShape,
                              KernelABI *prefillShape) {
  rt::Manifest m;
  m.config = options.config;
  bool ok = true;
  module.walk([&](gpu::GPUFuncOp func) {
    if (!func.isKernel())
      return;
    FailureOr<KernelABI> abi = decodeKernelABI(func);
    if (failed(abi)) {
      ok = false;
      return;
    }
    if (abi->kind == "decode" && decodeShape)
      *decodeShape = *abi;
    ::pa::rt::KernelSpec k;
    if (!::pa::rt::fromString(abi->kind, k.kind)) {
      func.emitError() << "kernel kind '" << abi->kind
                       << "' is not one the runtime knows";
      ok = false;
      return;
    }
    // @decode_split and @prefill_split both merge with merge_segments over
    // the same types: one kernel serves both.
    if (k.kind == ::pa::rt::KernelKind::MergeSegments &&
        m.find(::pa::rt::KernelKind::MergeSegments))
      return;
    k.file = options.file;
    k.symbol = func.getName().str();
    if (abi->args.size() != func.getFunctionType().getNumInputs()) {
      func.emitError() << "'pa.kernel' names " << abi->args.size()
                       << " argument roles for "
                       << func.getFunctionType().getNumInputs()
                       << " kernel arguments";
      ok = false;
      return;
    }
    for (auto [role, type] :
         llvm::zip(abi->args, func.getFunctionType().getInputs())) {
      ::pa::rt::ArgSpec arg;
      auto mt = dyn_cast<MemRefType>(type);
      FailureOr<::pa::rt::ElemType> e =
          mt ? elemTypeOf(mt.getElementType()) : FailureOr<::pa::rt::ElemType>();
      if (!::pa::rt::fromString(role, arg.role) || failed(e)) {
        func.emitError() << "argument '" << role << "' (" << type
                         << ") has no runtime role / element type";
        ok = false;
        return;
      }
      arg.rank = mt.getRank();
      arg.type = *e;
      k.args.push_back(arg);
    }
    for (int i = 0; i < 3; ++i) {
      const GridExtentABI &g = abi->grid[i];
      ::pa::rt::GridExtent &x = k.launch.grid[i];
      if (g.symbol.empty()) {
        x.symbol = ::pa::rt::GridSymbol::Literal;
        x.value = g.value;
      } else if (!::pa::rt::fromString(g.symbol, x.symbol) ||
                 x.symbol == ::pa::rt::GridSymbol::Literal) {
        func.emitError() << "grid symbol '" << g.symbol << "' is unknown";
        ok = false;
        return;
      }
      k.launch.block[i] = abi->block[i];
    }
    k.launch.sharedBytes = abi->smem;
    if (k.kind == ::pa::rt::KernelKind::SelectTopK)
      k.topkRatio = options.topkRatio;
    if (k.kind == ::pa::rt::KernelKind::PlanSplitKV)
      k.planChunk = options.planChunk;
    if (k.kind == ::pa::rt::KernelKind::MLADecode) {
      // The options of the MLA op (no masks; one query per request).
      ::pa::rt::PrefillSpec p = options.prefill;
      p.queriesPerTile = 1;
      k.prefill = p;
    }
    if (abi->mergeTogether > 0)
      k.mergeTogether = abi->mergeTogether;
    if (::pa::rt::isPrefillKind(k.kind)) {
      // The prefill line: the flags the op was built with, and the queries
      // of one request per tile (tile_q packs group rows per query).
      int64_t group = options.config.group;
      if (abi->tileQ <= 0 || abi->tileQ % group != 0) {
        func.emitError() << "prefill kernel: tile_q = " << abi->tileQ
                         << " is not a positive multiple of the group "
                         << group;
        ok = false;
        return;
      }
      ::pa::rt::PrefillSpec p = options.prefill;
      p.queriesPerTile = abi->tileQ / group;
      k.prefill = p;
      if (k.kind == ::pa::rt::KernelKind::Prefill && prefillShape)
        *prefillShape = *abi;
    }
    m.kernels.push_back(std::move(k));
  });
  if (!ok)
    return failure();
  return m;
}

FailureOr<std::string>
mlir::pa::kernelsToBinary(ModuleOp kernels,
                          const LowerToNVVMOptions &options) {
  OwningOpRef<ModuleOp> module = kernels.clone();
  PassManager pm(kernels.getContext());
  buildGPUKernelsToBinaryPipeline(pm, options);
  if (failed(pm.run(*module)))
    return failure();
  std::string object;
  module->walk([&](gpu::BinaryOp bin) {
    for (Attribute a : bin.getObjects())
      if (auto obj = dyn_cast<gpu::ObjectAttr>(a))
        object = obj.getObject().getValue().str();
  });
  if (object.empty()) {
    kernels.emitError() << "the pipeline produced no gpu.binary";
    return failure();
  }
  return object;
}

LogicalResult mlir::pa::writeBundle(
    StringRef dir, const rt::Manifest &manifest,
    ArrayRef<std::pair<std::string, std::string>> files) {
  // What the runtime will read: the printed manifest must parse back to the
  // same manifest.
  std::string text = rt::printManifest(manifest);
  rt::Manifest reparsed;
  if (rt::Status s = rt::parseManifest(text, reparsed); !s) {
    llvm::errs() << "the runtime would reject the manifest: " << s.message
                 << "\n";
    return failure();
  }
  if (reparsed != manifest) {
    llvm::errs() << "the manifest does not round-trip\n";
    return failure();
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    llvm::errs() << "cannot create " << dir << ": " << ec.message() << "\n";
    return failure();
  }
  auto write = [&](StringRef name, StringRef data) {
    SmallString<128> path(dir);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec) {
      llvm::errs() << "cannot write " << path << ": " << ec.message()
                   << "\n";
      return false;
    }
    os << data;
    return true;
  };
  if (!write("bundle.manifest", text))
    return failure();
  for (const auto &[name, data] : files)
    if (!write(name, data))
      return failure();
  return success();
}
