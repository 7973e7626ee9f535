//===- BundleWriter.h - kernels of the GPU pipeline to a bundle -*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// From the output of the kernel half of `pa-lower-to-nvvm` (a module whose
// gpu.module holds kernels carrying the `pa.kernel` ABI attribute) to a
// kernel bundle the runtime loads (docs/Runtime.md, "Kernel bundles"): the
// manifest read off the ABI attributes, the binary from the binary half of
// the pipeline, and the files. pa-compile and any other tool that lowers a
// pa program (examples/consumer) share it.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_BUNDLE_BUNDLEWRITER_H
#define PAGEDATTN_BUNDLE_BUNDLEWRITER_H

#include "PagedAttn/Conversion/KernelABI.h"
#include "PagedAttn/Pipelines/Pipelines.h"
#include "PagedAttn/Runtime/Bundle.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::pa {

/// What the ABI attributes do not say: the configuration, the options the
/// prefill ops were built with (queriesPerTile is filled in per kernel),
/// select_topk's ratio, plan_split_kv's chunk and the binary file the
/// kernels live in.
struct BundleOptions {
  ::pa::rt::BundleConfig config;
  ::pa::rt::PrefillSpec prefill;
  double topkRatio = 0.15;
  /// plan_split_kv's chunk (its `plan chunk C` line).
  int64_t planChunk = 256;
  std::string file = "kernels.cubin";
};

/// The manifest of the kernels in `module`'s gpu.module, from their
/// `pa.kernel` attributes (argument roles and element types, launch rule).
/// `decodeShape` / `prefillShape` (optional) receive the decode and prefill
/// kernels' ABI. Errors are emitted at the kernel.
FailureOr<::pa::rt::Manifest>
manifestFromKernels(ModuleOp module, const BundleOptions &options,
                    KernelABI *decodeShape = nullptr,
                    KernelABI *prefillShape = nullptr);

/// Runs the binary half of pa-lower-to-nvvm (`options.format`: "bin" for a
/// cubin, "isa" for PTX) on a copy of `kernels`; returns the gpu.binary's
/// object.
FailureOr<std::string> kernelsToBinary(ModuleOp kernels,
                                       const LowerToNVVMOptions &options);

/// Writes `dir`/bundle.manifest (printed, and checked to parse back to
/// `manifest`) and `dir`/<file> for each (file, contents) pair; creates
/// `dir`. Errors go to llvm::errs().
LogicalResult
writeBundle(StringRef dir, const ::pa::rt::Manifest &manifest,
            ArrayRef<std::pair<std::string, std::string>> files);

} // namespace mlir::pa

#endif // PAGEDATTN_BUNDLE_BUNDLEWRITER_H
