//===- Pipelines.cpp - shared front passes and pipeline registration ------===//

#include "PipelineUtils.h"

#include "PagedAttn/Pipelines/Pipelines.h"
#include "PagedAttn/Dialect/PA.h"
#include "PagedAttn/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::pa::addFrontPasses(OpPassManager &pm, bool cascadeDecompose,
                              int64_t splitKVChunk, bool splitKVWorkList,
                              int64_t shardDevices, bool shardRoundRobin) {
  pm.addPass(createCanonicalizerPass());
  // Sharding runs on a cascade's levels (pa-shard-kv rejects pa.cascade).
  if (cascadeDecompose || shardDevices > 0)
    pm.addNestedPass<func::FuncOp>(createPACascadeDecompose());
  if (shardDevices > 0) {
    PAShardKVOptions shard;
    shard.devices = shardDevices;
    shard.roundRobin = shardRoundRobin;
    pm.addNestedPass<func::FuncOp>(createPAShardKV(shard));
  }
  if (splitKVChunk > 0 || splitKVWorkList) {
    PASplitKVOptions split;
    if (splitKVChunk > 0)
      split.chunkSize = splitKVChunk;
    split.workList = splitKVWorkList;
    pm.addPass(createPASplitKV(split));
  }
  // Tensors -> buffers: function arguments become identity-layout memrefs,
  // results equivalent to arguments (the outs) are dropped.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
}

namespace {
/// Checks the options every pipeline shares; returns an error message or "".
template <typename T>
std::string checkSplitKV(const mlir::pa::SplitKVPipelineOptions<T> &o) {
  if (o.splitKVChunk < 0)
    return "split-kv-chunk must be >= 0 (0: no split)";
  if (o.splitKVChunk > 0 && o.splitKVWorkList)
    return "split-kv-chunk and split-kv-work-list exclude each other (an "
           "in-IR plan or a run-time work list)";
  return "";
}

std::string checkNVVM(const mlir::pa::LowerToNVVMOptions &o) {
  std::string err = checkSplitKV(o);
  if (!err.empty())
    return err;
  if (o.splitKVChunk > 0)
    return "split-kv-chunk plans the work list in the IR (pa.plan_split_kv) "
           "into buffers the program allocates on the host; on the GPU use "
           "split-kv-work-list=true (the runtime's planner, or "
           "pa_plan_split_kv on the device, fills the work list)";
  if (o.ctaThreads <= 0 || o.ctaThreads % 32 != 0 || o.ctaThreads > 1024)
    return "cta-threads must be a multiple of 32 in [32, 1024]";
  if (o.laneBytes != 0 && o.laneBytes != 16 && o.laneBytes != 32)
    return "lane-bytes must be 16 or 32 (0: the tuned default)";
  if (o.headsPerCTA < 0)
    return "heads-per-cta must be >= 0 (0: the tuned default)";
  if (o.prefillWarps != 0 && o.prefillWarps != 4 && o.prefillWarps != 8)
    return "prefill-warps must be 4 or 8 (0: 8 up to head dim 128, else 4)";
  if (o.prefillTileKV != 0 && o.prefillTileKV != 16 && o.prefillTileKV != 32 &&
      o.prefillTileKV != 64 && o.prefillTileKV != 128)
    return "prefill-tile-kv must be 16, 32, 64 or 128 (0: 32)";
  if (!(o.rescaleThreshold >= 0 && o.rescaleThreshold <= 15))
    return "rescale-threshold must lie in [0, 15] (0: rescale whenever the "
           "maximum grows)";
  if (o.pageListRounds < 0)
    return "page-list-rounds must be >= 0 (0: page-table entries always in "
           "registers)";
  if (o.rowPadBytes != 0 && o.rowPadBytes != 16 && o.rowPadBytes != 32)
    return "row-pad-bytes must be 16 or 32 (0: 32 in decode kernels, else 16)";
  if (o.smemLayout != "swizzle" && o.smemLayout != "pad")
    return "smem-layout must be swizzle or pad";
  if (o.fp8Widen != "registers" && o.fp8Widen != "shared")
    return "fp8-widen must be registers or shared";
  if (o.l2PrefetchBytes != 0 && o.l2PrefetchBytes != 64 &&
      o.l2PrefetchBytes != 128 && o.l2PrefetchBytes != 256)
    return "l2-prefetch-bytes must be 64, 128 or 256 (0: none)";
  if (o.prefillWarpRows != 0 && o.prefillWarpRows != 16 &&
      o.prefillWarpRows != 32)
    return "prefill-warp-rows must be 16 or 32 (0: 32 up to head dim 128, else 16)";
  if (o.prefillKVWarps != 0 && o.prefillKVWarps != 1 &&
      o.prefillKVWarps != 4 && o.prefillKVWarps != 8)
    return "prefill-kv-warps must be 1 or prefill-warps: 1, 4 or 8 (0: 1)";
  if (o.decodeKernel != "auto" && o.decodeKernel != "cuda-core" &&
      o.decodeKernel != "tensor-core")
    return "decode-kernel must be auto, cuda-core or tensor-core";
  if (o.decodeTileKV < 0 || o.decodeTileKV % 16 != 0 || o.decodeTileKV > 256)
    return "decode-tile-kv must be a multiple of 16 up to 256 (tensor-core: "
           "64 or 128; 0: the kernel's default)";
  if (o.mlaRowBlocks != 0 && o.mlaRowBlocks != 1 && o.mlaRowBlocks != 2)
    return "mla-row-blocks must be 1 or 2 (0: 2 above 16 heads, else 1)";
  if (o.mlaWarpBlocks < 0 || o.mlaWarpBlocks > 2)
    return "mla-warp-blocks must be 1 or mla-row-blocks (0: 1)";
  if (o.decodeKVStages != 0 &&
      (o.decodeKVStages < 2 || o.decodeKVStages > 4))
    return "decode-kv-stages must be 2, 3 or 4 (0: 2)";
  if (o.splitKVMerge != "fused" && o.splitKVMerge != "separate")
    return "split-kv-merge must be fused or separate";
  if (o.prefillMma != "mma.sync" && o.prefillMma != "wgmma" &&
      o.prefillMma != "auto")
    return "prefill-mma must be mma.sync, wgmma or auto";
  if (o.prefillMma == "wgmma" && o.chip != "sm_90a")
    return "prefill-mma=wgmma needs chip=sm_90a (wgmma is an sm_90a "
           "instruction), got chip=" +
           o.chip.getValue();
  if (o.mlaMma != "mma.sync" && o.mlaMma != "wgmma" && o.mlaMma != "auto")
    return "mla-mma must be mma.sync, wgmma or auto";
  if (o.mlaMma == "wgmma" && o.chip != "sm_90a")
    return "mla-mma=wgmma needs chip=sm_90a (wgmma is an sm_90a "
           "instruction), got chip=" +
           o.chip.getValue();
  if (o.format != "isa" && o.format != "bin" && o.format != "fatbin")
    return "format must be isa, bin or fatbin";
  return "";
}

/// Registers `name` with option checking: a bad option is an error naming
/// it, not a silently different pipeline.
template <typename Options>
void registerChecked(
    StringRef name, StringRef description,
    void (*build)(OpPassManager &, const Options &),
    std::string (*check)(const Options &)) {
  registerPassPipeline(
      name, description,
      [=](OpPassManager &pm, StringRef optionsStr,
          function_ref<LogicalResult(const Twine &)> errorHandler) {
        Options options;
        if (failed(options.parseFromString(optionsStr)))
          return failure();
        std::string err = check(options);
        if (!err.empty())
          return errorHandler(Twine(name) + ": " + err);
        build(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(Options());
      });
}
} // namespace

void mlir::pa::registerPAPipelines() {
  registerChecked<LowerToCPUOptions>(
      "pa-lower-to-cpu",
      "Lower a pa program (tensor or memref form) to LLVM dialect IR that "
      "mlir-runner / ExecutionEngine execute: canonicalize, optional "
      "cascade decomposition, sharding of decodes over simulated devices "
      "and split-KV, One-Shot Bufferize, buffer "
      "deallocation, convert-pa-to-loops (every op), upstream lowerings to "
      "LLVM",
      buildLowerToCPUPipeline, +[](const LowerToCPUOptions &o) {
        std::string error = checkSplitKV(o);
        if (error.empty() && o.shardDevices < 0)
          error = "shard-devices must be >= 0 (0: no sharding)";
        return error;
      });
  registerChecked<LowerToNVVMOptions>(
      "pa-lower-to-nvvm",
      "Lower a pa program to GPU kernels (every op; pa.cascade as a "
      "prefill per "
      "level and a pa.merge): pa-cascade-decompose, optional split-KV work "
      "list, One-Shot "
      "Bufferize, convert-pa-to-gpu (tiling, kernel ABI), "
      "pa-warp-shuffle-reduce, pa-mma-sync-bf16-to-nvvm, "
      "convert-nvgpu-to-nvvm, convert-gpu-to-nvvm, nvvm-attach-target, "
      "gpu-module-to-binary",
      buildLowerToNVVMPipeline, checkNVVM);
}

void mlir::pa::registerPipelineDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registry.insert<PADialect>();
  registerBufferizableOpInterfaceExternalModels(registry);
}
