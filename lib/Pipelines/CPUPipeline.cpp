//===- CPUPipeline.cpp - the pa-lower-to-cpu pipeline ------------------------===//

#include "PagedAttn/Conversion/Passes.h"
#include "PagedAttn/Pipelines/Pipelines.h"
#include "PagedAttn/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::pa::buildLowerToCPUPipeline(OpPassManager &pm,
                                       const LowerToCPUOptions &opts) {
  pm.addPass(createCanonicalizerPass());
  if (opts.cascadeDecompose)
    pm.addNestedPass<func::FuncOp>(createPACascadeDecompose());
  if (opts.splitKVChunk > 0) {
    PASplitKVOptions split;
    split.chunkSize = opts.splitKVChunk;
    pm.addNestedPass<func::FuncOp>(createPASplitKV(split));
  }
  // Tensors -> buffers: function arguments become identity-layout memrefs,
  // results equivalent to arguments (the outs) are dropped.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  pm.addPass(createConvertPAToLoops());
  pm.addPass(createCanonicalizerPass());
  // Loops -> LLVM.
  pm.addPass(createSCFToControlFlowPass());
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

void mlir::pa::registerPipelines() {
  PassPipelineRegistration<LowerToCPUOptions>(
      "pa-lower-to-cpu",
      "Lower a pa program (tensor or memref form) to LLVM dialect IR that "
      "mlir-runner / ExecutionEngine execute: canonicalize, optional "
      "cascade decomposition and split-KV, One-Shot Bufferize, "
      "convert-pa-to-loops, upstream lowerings to LLVM",
      buildLowerToCPUPipeline);
}
