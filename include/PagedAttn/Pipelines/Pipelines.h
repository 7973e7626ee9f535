//===- Pipelines.h - named pa pipelines -------------------------*- C++ -*-===//
//
// `pa-lower-to-cpu`: a pa program (tensor or memref form) to LLVM dialect IR
// that MLIR's ExecutionEngine / mlir-runner execute.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_PIPELINES_PIPELINES_H
#define PAGEDATTN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace pa {

struct LowerToCPUOptions : public PassPipelineOptions<LowerToCPUOptions> {
  PassOptions::Option<bool> cascadeDecompose{
      *this, "cascade-decompose",
      llvm::cl::desc("Rewrite pa.cascade into per-level attention + merge "
                     "before lowering"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> splitKVChunk{
      *this, "split-kv-chunk",
      llvm::cl::desc("If > 0, rewrite pa.decode into split-KV (chunks of this "
                     "many tokens + merge) before lowering"),
      llvm::cl::init(0)};
};

/// Adds the passes of `pa-lower-to-cpu` to `pm` (a module pass manager):
/// canonicalize, optional rewrites, One-Shot Bufferize (function boundaries,
/// identity layouts, equivalent results dropped), convert-pa-to-loops, and the
/// upstream lowerings to the LLVM dialect. Functions keep their memref
/// arguments; mark them `llvm.emit_c_interface` to call them from C++.
void buildLowerToCPUPipeline(OpPassManager &pm, const LowerToCPUOptions &opts);

/// Registers `pa-lower-to-cpu` with the global pass pipeline registry.
void registerPipelines();

} // namespace pa
} // namespace mlir

#endif // PAGEDATTN_PIPELINES_PIPELINES_H
