//===- GPUPipeline.cpp - the pa-lower-to-nvvm pipeline ----------------------===//
//
// A pa program (tensor form) to NVVM and a binary (PTX text or cubin) in a
// gpu.binary op; the host side keeps its gpu.launch_func ops (the runtime
// launches the kernels itself from a bundle written by pa-compile).
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/Passes.h"
#include "PagedAttn/Pipelines/Pipelines.h"
#include "PagedAttn/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::pa::buildLowerToNVVMPipeline(OpPassManager &pm,
                                        const LowerToNVVMOptions &opts) {
  pm.addPass(createCanonicalizerPass());
  if (opts.splitKV) {
    PASplitKVOptions split;
    split.workList = true;
    pm.addNestedPass<func::FuncOp>(createPASplitKV(split));
  }
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  ConvertPAToGPUOptions tile;
  tile.threads = opts.threads;
  tile.unroll = opts.unroll;
  tile.laneBytes = opts.laneBytes;
  pm.addPass(createConvertPAToGPU(tile));
  pm.addPass(createPAWarpShuffleReduce());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createSCFToControlFlowPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.indexBitwidth = 64;
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(nvvm));
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = opts.chip;
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = opts.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void mlir::pa::registerGPUPipelines() {
  PassPipelineRegistration<LowerToNVVMOptions>(
      "pa-lower-to-nvvm",
      "Lower a pa decode program to GPU kernels: optional split-KV (work "
      "list from the runtime planner), One-Shot Bufferize, convert-pa-to-gpu "
      "(tiling + workgroup-memory merge), pa-warp-shuffle-reduce, "
      "convert-gpu-to-nvvm, nvvm-attach-target, gpu-module-to-binary",
      buildLowerToNVVMPipeline);
}
