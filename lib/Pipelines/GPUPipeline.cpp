//===- GPUPipeline.cpp - the pa-lower-to-nvvm pipeline ----------------------===//
//
// A pa program (tensor form) to NVVM and a binary (PTX text or cubin) in a
// gpu.binary op; the host side keeps its gpu.launch_func ops (the runtime
// launches the kernels itself from a bundle written by pa-compile, whose
// manifest comes from the kernels' `pa.kernel` ABI attributes, read between
// the two halves below).
//
//===----------------------------------------------------------------------===//

#include "PipelineUtils.h"

#include "PagedAttn/Conversion/Passes.h"
#include "PagedAttn/Pipelines/Pipelines.h"
#include "PagedAttn/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

std::string mlir::pa::mmaForChip(StringRef mma, StringRef chip) {
  return mma == "auto" && chip != "sm_90a" ? "mma.sync" : mma.str();
}

void mlir::pa::buildPAToGPUKernelsPipeline(OpPassManager &pm,
                                           const LowerToNVVMOptions &opts) {
  addFrontPasses(pm, /*cascadeDecompose=*/true, opts.splitKVChunk,
                 opts.splitKVWorkList);
  ConvertPAToGPUOptions tile;
  tile.ctaThreads = opts.ctaThreads;
  tile.laneBytes = opts.laneBytes;
  tile.headsPerCTA = opts.headsPerCTA;
  tile.prefillWarps = opts.prefillWarps;
  tile.prefillTileKV = opts.prefillTileKV;
  tile.prefillWarpRows = opts.prefillWarpRows;
  tile.prefillKVWarps = opts.prefillKVWarps;
  tile.decodeKernel = opts.decodeKernel;
  tile.decodeTileKV = opts.decodeTileKV;
  tile.decodeKVStages = opts.decodeKVStages;
  tile.mlaRowBlocks = opts.mlaRowBlocks;
  tile.mlaWarpBlocks = opts.mlaWarpBlocks;
  tile.mlaConsumerSync = opts.mlaConsumerSync;
  tile.splitKVMerge = opts.splitKVMerge;
  tile.prefillMma = mmaForChip(opts.prefillMma, opts.chip);
  tile.mlaMma = mmaForChip(opts.mlaMma, opts.chip);
  // convert-pa-to-gpu makes prefill and decode kernels over tile ops; the
  // next stages give their tiles shared memory, then tensor cores or (the
  // CUDA-core decode) lane groups with shuffles (docs/GPU.md).
  pm.addPass(createConvertPAToGPU(tile));
  pa::PAPromoteTilesOptions promote;
  promote.pageListRounds = opts.pageListRounds;
  promote.rowPadBytes = opts.rowPadBytes;
  promote.smemLayout = opts.smemLayout;
  promote.fp8Widen = opts.fp8Widen;
  pm.addPass(pa::createPAPromoteTiles(promote));
  pa::PATileToMmaOptions mma;
  mma.rescaleThreshold = opts.rescaleThreshold;
  mma.narrowPv = opts.narrowPv;
  pm.addPass(pa::createPATileToMma(mma));
  pm.addPass(pa::createPATileToSimt());
  pm.addPass(createPAWarpShuffleReduce());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::pa::buildGPUKernelsToBinaryPipeline(
    OpPassManager &pm, const LowerToNVVMOptions &opts) {
  pa::PAFP8ToNVVMOptions fp8;
  fp8.chip = opts.chip;
  pm.addNestedPass<gpu::GPUModuleOp>(pa::createPAFP8ToNVVM(fp8));
  pm.addNestedPass<gpu::GPUModuleOp>(pa::createPAMmaSyncBF16ToNVVM());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertNVGPUToNVVMPass());
  pa::PACpAsyncL2PrefetchOptions prefetch;
  prefetch.bytes = opts.l2PrefetchBytes;
  pm.addNestedPass<gpu::GPUModuleOp>(pa::createPACpAsyncL2Prefetch(prefetch));
  pm.addNestedPass<gpu::GPUModuleOp>(createSCFToControlFlowPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.indexBitwidth = 64;
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(nvvm));
  pm.addNestedPass<gpu::GPUModuleOp>(pa::createPAWgmmaSmemAlign());
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = opts.chip;
  target.optLevel = 3;
  // LLVM writes the chip's least PTX version (7.0 for sm_80, 7.8 for
  // sm_89), but the copies' L2 prefetch hint (cp.async ... .L2::128B,
  // pa-cp-async-l2-prefetch) needs PTX ISA 7.4 and the fp8 conversions on
  // sm_89 need 8.1: below sm_90, PTX 8.1.
  if (std::optional<unsigned> sm = pa::smVersion(opts.chip); sm && *sm < 90)
    target.features = "+ptx81";
  pm.addPass(createGpuNVVMAttachTarget(target));
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = opts.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void mlir::pa::buildLowerToNVVMPipeline(OpPassManager &pm,
                                        const LowerToNVVMOptions &opts) {
  buildPAToGPUKernelsPipeline(pm, opts);
  buildGPUKernelsToBinaryPipeline(pm, opts);
}
