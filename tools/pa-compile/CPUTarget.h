//===- CPUTarget.h - pa-compile --target cpu: a host shared library -*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The CPU half of pa-compile: the program of one configuration through
// `pa-lower-to-cpu` (the CPU semantics of every op, with its run-time
// checks), LLVM's host code generator, and the system C compiler as the
// linker, into a shared library that the Python package (and any C caller)
// loads without MLIR: `kernels_cpu.so`, one `_mlir_ciface_<fn>` per program
// function, and `cpu.manifest`, the functions' arguments (docs/Runtime.md,
// "CPU bundles").
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TOOLS_PACOMPILE_CPUTARGET_H
#define PAGEDATTN_TOOLS_PACOMPILE_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <map>
#include <string>

namespace pa::compile {

/// The argument attribute that names a program function's argument (its
/// role, as the kernel ABI names it).
inline constexpr const char *kArgNameAttr = "pa.arg_name";

/// Writes `dir`/cpu.manifest and `dir`/kernels_cpu.so for `program` (tensor
/// form, every function public, arguments named by kArgNameAttr). The
/// manifest begins with `configLine`; `extra` maps a function name to lines
/// printed in its entry (its attention options, a top-k ratio). Errors go
/// to llvm::errs().
mlir::LogicalResult
emitCPUBundle(mlir::ModuleOp program, llvm::StringRef configLine,
              const std::map<std::string, std::string> &extra,
              llvm::StringRef dir);

} // namespace pa::compile

#endif // PAGEDATTN_TOOLS_PACOMPILE_CPUTARGET_H
