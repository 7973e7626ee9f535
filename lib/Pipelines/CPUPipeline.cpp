//===- CPUPipeline.cpp - the pa-lower-to-cpu pipeline ------------------------===//

#include "PipelineUtils.h"

#include "PagedAttn/Conversion/Passes.h"
#include "PagedAttn/Pipelines/Pipelines.h"
#include "PagedAttn/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::pa::buildLowerToCPUPipeline(OpPassManager &pm,
                                       const LowerToCPUOptions &opts) {
  addFrontPasses(pm, opts.cascadeDecompose, opts.splitKVChunk,
                 opts.splitKVWorkList, opts.shardDevices, opts.shardRoundRobin);
  if (opts.tileAttention) {
    PATileAttentionOptions tile;
    tile.tileQ = opts.tileQ;
    tile.tileKV = opts.tileKV;
    pm.addNestedPass<func::FuncOp>(createPATileAttention(tile));
  }
  // Free what the program allocates and does not return (One-Shot Bufferize
  // inserts no deallocations): the split-KV work list and partial states,
  // the per-level states of a cascade. Before convert-pa-to-loops, whose
  // scratch buffers come with their own deallocations (the ownership-based
  // pass accepts no input that already has some). Entry functions then
  // return their outs in place rather than as clones the host would have to
  // free; any clone left (a function called in the module, ownership known
  // only at run time) becomes an alloc + copy.
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createPAEntryResultsInPlace());
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createConvertPAToLoops());
  pm.addPass(createCanonicalizerPass());
  // fp8 caches: LLVM has no f8 types, so their conversions become integer
  // arithmetic (loads and stores lower to i8 as they are).
  pm.addPass(createPAExpandFP8());
  // Loops -> LLVM.
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createPAAssertToStderr());
  pm.addPass(memref::createExpandStridedMetadataPass());
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}
