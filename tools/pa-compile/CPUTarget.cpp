//===- CPUTarget.cpp - pa-compile --target cpu: a host shared library -----===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#include "CPUTarget.h"

#include "PagedAttn/Pipelines/Pipelines.h"
#include "PagedAttn/Runtime/Bundle.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;

namespace {

/// "memref RANK DTYPE" of a function argument or result (tensor form: the
/// memref the CPU lowering passes for it), or failure.
FailureOr<std::string> describe(Type t) {
  auto shaped = dyn_cast<ShapedType>(t);
  if (!shaped || !shaped.hasRank())
    return failure();
  std::string elem;
  llvm::raw_string_ostream os(elem);
  os << shaped.getElementType();
  ::pa::rt::ElemType e;
  if (!::pa::rt::fromString(elem, e))
    return failure();
  return "memref " + std::to_string(shaped.getRank()) + " " + elem;
}

/// The manifest: the configuration, then per function its arguments (name,
/// memref rank, element type), its results (the outs it returns) and the
/// lines of `extra`.
FailureOr<std::string>
printCPUManifest(ModuleOp program, StringRef configLine,
                 const std::map<std::string, std::string> &extra) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "pa-cpu-bundle 1\n" << configLine << "\n";
  bool ok = true;
  program.walk([&](func::FuncOp f) {
    os << "function " << f.getName() << "\n";
    for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i) {
      auto name = f.getArgAttrOfType<StringAttr>(i, ::pa::compile::kArgNameAttr);
      FailureOr<std::string> d = describe(f.getArgumentTypes()[i]);
      if (!name || failed(d)) {
        f.emitError() << "argument " << i
                      << " has no name or no memref form for the CPU "
                         "manifest";
        ok = false;
        return;
      }
      os << "arg " << name.getValue() << " " << *d << "\n";
    }
    for (Type r : f.getResultTypes()) {
      FailureOr<std::string> d = describe(r);
      if (failed(d)) {
        f.emitError() << "result type " << r << " has no memref form";
        ok = false;
        return;
      }
      os << "result " << *d << "\n";
    }
    auto it = extra.find(f.getName().str());
    if (it != extra.end())
      os << it->second;
  });
  os << "end\n";
  if (!ok)
    return failure();
  return text;
}

/// A target machine for generic x86-64 (or the host's architecture
/// elsewhere), position-independent: a bundle built on one machine loads
/// on another of the same architecture.
std::unique_ptr<llvm::TargetMachine> hostTargetMachine() {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    llvm::errs() << "pa-compile: no LLVM target for " << triple.str() << ": "
                 << error << "\n";
    return nullptr;
  }
  StringRef cpu = triple.getArch() == llvm::Triple::x86_64 ? "x86-64"
                                                             : "generic";
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, cpu, "", llvm::TargetOptions(), llvm::Reloc::PIC_));
}

} // namespace

namespace pa::compile {

LogicalResult emitCPUBundle(ModuleOp program, StringRef configLine,
                            const std::map<std::string, std::string> &extra,
                            StringRef dir) {
  FailureOr<std::string> manifest =
      printCPUManifest(program, configLine, extra);
  if (failed(manifest))
    return failure();

  // The CPU semantics of every op, C-callable wrappers for each function.
  OwningOpRef<ModuleOp> module = program.clone();
  module->walk([&](func::FuncOp f) {
    f->setAttr("llvm.emit_c_interface", UnitAttr::get(f.getContext()));
  });
  PassManager pm(program.getContext());
  mlir::pa::LowerToCPUOptions opts;
  mlir::pa::buildLowerToCPUPipeline(pm, opts);
  if (failed(pm.run(*module)))
    return failure();

  llvm::LLVMContext llvmCtx;
  std::unique_ptr<llvm::Module> ir = translateModuleToLLVMIR(*module, llvmCtx);
  if (!ir) {
    llvm::errs() << "pa-compile: translation to LLVM IR failed\n";
    return failure();
  }
  std::unique_ptr<llvm::TargetMachine> tm = hostTargetMachine();
  if (!tm)
    return failure();
  ir->setTargetTriple(tm->getTargetTriple());
  ir->setDataLayout(tm->createDataLayout());
  if (llvm::Error e = makeOptimizingTransformer(2, 0, tm.get())(ir.get())) {
    llvm::errs() << "pa-compile: LLVM optimization failed: "
                 << llvm::toString(std::move(e)) << "\n";
    return failure();
  }

  auto path = [&](StringRef name) {
    SmallString<128> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  std::string object = path("kernels_cpu.o"), library = path("kernels_cpu.so");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(object, ec);
    if (ec) {
      llvm::errs() << "pa-compile: cannot write " << object << ": "
                   << ec.message() << "\n";
      return failure();
    }
    llvm::legacy::PassManager codegen;
    if (tm->addPassesToEmitFile(codegen, os, nullptr,
                                llvm::CodeGenFileType::ObjectFile)) {
      llvm::errs() << "pa-compile: the target cannot emit an object file\n";
      return failure();
    }
    codegen.run(*ir);
  }

  // The system C compiler links the object (libc and libm: malloc, expf,
  // logf, and the run-time checks' write and abort).
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc) {
    llvm::errs() << "pa-compile: --target cpu links with the system C "
                    "compiler, and 'cc' is not on PATH\n";
    return failure();
  }
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(
      *cc, {*cc, "-shared", "-o", library, object, "-lm"}, std::nullopt, {},
      0, 0, &message);
  (void)llvm::sys::fs::remove(object);
  if (rc != 0) {
    llvm::errs() << "pa-compile: linking " << library << " with " << *cc
                 << " failed (" << rc << ")" << (message.empty() ? "" : ": ")
                 << message << "\n";
    return failure();
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path("cpu.manifest"), ec);
  if (ec) {
    llvm::errs() << "pa-compile: cannot write cpu.manifest: " << ec.message()
                 << "\n";
    return failure();
  }
  os << *manifest;
  return success();
}

} // namespace pa::compile
