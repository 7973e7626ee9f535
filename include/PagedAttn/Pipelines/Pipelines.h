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

struct LowerToNVVMOptions : public PassPipelineOptions<LowerToNVVMOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("Target SM (sm_80, sm_90, ...)"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("gpu-module-to-binary format: isa (PTX), bin (cubin), "
                     "fatbin"),
      llvm::cl::init("isa")};
  PassOptions::Option<bool> splitKV{
      *this, "split-kv",
      llvm::cl::desc("Rewrite pa.decode into split-KV with the work list as "
                     "function arguments (runtime planner)"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> threads{
      *this, "threads", llvm::cl::desc("Threads per CTA"), llvm::cl::init(128)};
  PassOptions::Option<int64_t> unroll{
      *this, "unroll", llvm::cl::desc("Tokens per lane group in flight"),
      llvm::cl::init(4)};
  PassOptions::Option<int64_t> laneBytes{
      *this, "lane-bytes",
      llvm::cl::desc("Bytes of a K/V row per lane and token (16 or 32)"),
      llvm::cl::init(16)};
};

/// Adds the passes of `pa-lower-to-nvvm` to `pm` (a module pass manager).
void buildLowerToNVVMPipeline(OpPassManager &pm,
                              const LowerToNVVMOptions &opts);

/// Registers `pa-lower-to-nvvm`.
void registerGPUPipelines();

} // namespace pa
} // namespace mlir

#endif // PAGEDATTN_PIPELINES_PIPELINES_H
