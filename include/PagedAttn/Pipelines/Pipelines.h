//===- Pipelines.h - named pa pipelines -------------------------*- C++ -*-===//
//
// `pa-lower-to-cpu`: a pa program (tensor or memref form) to LLVM dialect IR
// that MLIR's ExecutionEngine / mlir-runner execute.
// `pa-lower-to-nvvm`: a pa program to GPU kernels in a gpu.binary (PTX or
// cubin), in two halves that pa-compile runs apart so that it can read the
// kernels' ABI attributes in between.
//
// Both share one vocabulary: `split-kv-chunk` / `split-kv-work-list` choose
// the split-KV rewrite, and the kernel-shape knobs carry the names of the
// convert-pa-to-gpu options (and of pa-compile's flags).
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_PIPELINES_PIPELINES_H
#define PAGEDATTN_PIPELINES_PIPELINES_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace pa {

/// The split-KV options every pipeline takes.
template <typename T>
struct SplitKVPipelineOptions : public PassPipelineOptions<T> {
  using PassOptions = ::mlir::detail::PassOptions;
  PassOptions::Option<int64_t> splitKVChunk{
      *this, "split-kv-chunk",
      llvm::cl::desc("If > 0, rewrite pa.decode into split-KV with chunks of "
                     "this many tokens planned in the IR (pa.plan_split_kv, "
                     "host only) + merge"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> splitKVWorkList{
      *this, "split-kv-work-list",
      llvm::cl::desc("Rewrite pa.decode into split-KV over a work list that "
                     "the enclosing function takes as arguments (filled by "
                     "the runtime planner)"),
      llvm::cl::init(false)};
};

struct LowerToCPUOptions : public SplitKVPipelineOptions<LowerToCPUOptions> {
  PassOptions::Option<bool> cascadeDecompose{
      *this, "cascade-decompose",
      llvm::cl::desc("Rewrite pa.cascade into per-level attention + merge "
                     "before lowering"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> tileAttention{
      *this, "tile-attention",
      llvm::cl::desc("Lower pa.prefill through the tile-level IR "
                     "(pa-tile-attention) instead of directly to loops"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> tileQ{
      *this, "tile-q",
      llvm::cl::desc("With tile-attention: rows of a query tile"),
      llvm::cl::init(64)};
  PassOptions::Option<int64_t> tileKV{
      *this, "tile-kv",
      llvm::cl::desc("With tile-attention: tokens of a K/V tile"),
      llvm::cl::init(64)};
  PassOptions::Option<int64_t> shardDevices{
      *this, "shard-devices",
      llvm::cl::desc("Context parallelism (pa-shard-kv): every pa.decode's "
                     "and pa.prefill's pages (a cascade's levels: "
                     "decomposed first) over this many simulated devices, "
                     "run one after the other (0: off)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> shardRoundRobin{
      *this, "shard-round-robin",
      llvm::cl::desc("With shard-devices: page j of a request on device j "
                     "mod N (default: contiguous ranges)"),
      llvm::cl::init(false)};
};

/// Adds the passes of `pa-lower-to-cpu` to `pm` (a module pass manager):
/// canonicalize, optional rewrites, One-Shot Bufferize (function boundaries,
/// identity layouts, equivalent results dropped), buffer deallocation (every
/// buffer a function allocates and does not return is freed; entry points
/// return their outs in place), convert-pa-to-loops, and the upstream
/// lowerings to the LLVM dialect (failed run-time checks print on stderr).
/// Functions keep their memref arguments; mark them `llvm.emit_c_interface`
/// to call them from C++.
void buildLowerToCPUPipeline(OpPassManager &pm, const LowerToCPUOptions &opts);

struct LowerToNVVMOptions : public SplitKVPipelineOptions<LowerToNVVMOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("Target SM (sm_80, sm_90, ...)"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("gpu-module-to-binary format: isa (PTX), bin (cubin), "
                     "fatbin"),
      llvm::cl::init("isa")};
  PassOptions::Option<int64_t> ctaThreads{
      *this, "cta-threads",
      llvm::cl::desc("Threads per CTA of the attention kernels"),
      llvm::cl::init(128)};
  PassOptions::Option<int64_t> laneBytes{
      *this, "lane-bytes",
      llvm::cl::desc("CUDA-core decode: bytes of a K/V row per lane, 16 or 32 "
                     "(0: the tuned default)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> headsPerCTA{
      *this, "heads-per-cta",
      llvm::cl::desc("CUDA-core decode: query heads of a GQA group that one "
                     "CTA handles, a divisor of the group (0: the tuned "
                     "default)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> prefillWarps{
      *this, "prefill-warps",
      llvm::cl::desc("Warps per CTA of the prefill kernel: 4 or 8 (0: 8 up "
                     "to head dim 128, else 4)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> prefillWarpRows{
      *this, "prefill-warp-rows",
      llvm::cl::desc("Query-tile rows per warp of the prefill kernel: 16 or "
                     "32 (0: 32 up to head dim 128, else 16)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> prefillTileKV{
      *this, "prefill-tile-kv",
      llvm::cl::desc("Keys per K/V tile of the prefill kernel: 16, 32, 64 or "
                     "128 (0: 32)"),
      llvm::cl::init(0)};
  PassOptions::Option<double> rescaleThreshold{
      *this, "rescale-threshold",
      llvm::cl::desc("pa-tile-to-mma's lazy rescaling: base-2 growth of a "
                     "row's maximum before the accumulators are rescaled, "
                     "in [0, 15] (0: whenever it grows)"),
      llvm::cl::init(8.0)};
  PassOptions::Option<bool> narrowPv{
      *this, "narrow-pv",
      llvm::cl::desc("pa-tile-to-mma: kernels whose tiles hold at most 8 "
                     "valid rows (the tensor-core decode of groups up to "
                     "8) compute O^T += V^T P^T, half the accumulators"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> pageListRounds{
      *this, "page-list-rounds",
      llvm::cl::desc("pa-promote-tiles: chunk rounds per thread and K / V "
                     "tile from which a tile's page-table entries go "
                     "through a page list in shared memory (warp-local "
                     "tiles: warp shuffles) (0: never)"),
      llvm::cl::init(8)};
  PassOptions::Option<int64_t> l2PrefetchBytes{
      *this, "l2-prefetch-bytes",
      llvm::cl::desc("pa-cp-async-l2-prefetch: L2 prefetch size of the "
                     "kernels' cp.async copies: 64, 128 or 256 (0: none)"),
      llvm::cl::init(128)};
  PassOptions::Option<int64_t> rowPadBytes{
      *this, "row-pad-bytes",
      llvm::cl::desc("pa-promote-tiles: padding of a padded shared-memory "
                     "row, 16 or 32 bytes (0: 32 in decode kernels, else 16)"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> smemLayout{
      *this, "smem-layout",
      llvm::cl::desc("pa-promote-tiles: shared-memory rows swizzled (head "
                     "dims that are a multiple of 64; others padded) or "
                     "padded: swizzle or pad"),
      llvm::cl::init("swizzle")};
  PassOptions::Option<std::string> fp8Widen{
      *this, "fp8-widen",
      llvm::cl::desc("pa-promote-tiles: fp8 caches widened in registers "
                     "after ldmatrix (head dims that are a multiple of 128, "
                     "swizzled rows; others as shared) or in shared memory: "
                     "registers or shared"),
      llvm::cl::init("registers")};
  PassOptions::Option<int64_t> prefillKVWarps{
      *this, "prefill-kv-warps",
      llvm::cl::desc("Warps of the prefill kernel that split each KV tile's "
                     "keys rather than its rows: 1 or prefill-warps (0: 1)"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> decodeKernel{
      *this, "decode-kernel",
      llvm::cl::desc("Decode kernel: auto, cuda-core or tensor-core (auto: "
                     "tensor-core for 16-bit data with GQA groups 4..32 or "
                     "a head dim the CUDA-core kernel cannot split)"),
      llvm::cl::init("auto")};
  PassOptions::Option<int64_t> decodeTileKV{
      *this, "decode-tile-kv",
      llvm::cl::desc("Keys per K/V tile of the decode: tensor-core 64 or 128 "
                     "(0: 64), CUDA-core a multiple of 16 up to 256 (0: 64 up "
                     "to 4 heads of 16-bit data up to D = 128, else 32)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> mlaRowBlocks{
      *this, "mla-row-blocks",
      llvm::cl::desc("16-head row blocks per CTA of the pa.mla_decode "
                     "kernel: 1 or 2 (0: 2 above 16 heads, else 1)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> mlaWarpBlocks{
      *this, "mla-warp-blocks",
      llvm::cl::desc("16-head row blocks per warp of the pa.mla_decode "
                     "kernel: 1 or mla-row-blocks (0: 1)"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> mlaMma{
      *this, "mla-mma",
      llvm::cl::desc("Tensor-core instructions of the pa.mla_decode kernel: "
                     "mma.sync (sm_80 and later), wgmma (Hopper warpgroup "
                     "MMAs, 64 heads a CTA; needs chip=sm_90a) or auto "
                     "(wgmma for chip=sm_90a from 64 query heads where the "
                     "shape fits it, else mma.sync)"),
      llvm::cl::init("auto")};
  PassOptions::Option<bool> mlaConsumerSync{
      *this, "mla-consumer-sync",
      llvm::cl::desc("wgmma MLA decode: bar.sync for the consumer "
                     "warpgroup's bar.arrive (slower; for compute-sanitizer's "
                     "racecheck)"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> decodeKVStages{
      *this, "decode-kv-stages",
      llvm::cl::desc(
          "K/V tiles of the tensor-core decode in shared memory at "
          "once: 2, 3 or 4 (0: 2; 3 for a one-pass GQA decode over an "
          "fp8 cache at a head dim that is a multiple of 128 and "
          "for the MHA CUDA-core decode)"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> prefillMma{
      *this, "prefill-mma",
      llvm::cl::desc("Tensor-core instructions of the prefill kernels: "
                     "mma.sync (sm_80 and later), wgmma (Hopper warpgroup "
                     "MMAs; needs chip=sm_90a and a head dim that is a "
                     "multiple of 64) or auto (wgmma for chip=sm_90a where "
                     "the op fits it, else mma.sync)"),
      llvm::cl::init("auto")};
  PassOptions::Option<std::string> splitKVMerge{
      *this, "split-kv-merge",
      llvm::cl::desc("Split-KV decode: fused (decode_partial and its merge in "
                     "one kernel, decode_split) or separate (two kernels)"),
      llvm::cl::init("fused")};
};

/// The prefill-mma / mla-mma value convert-pa-to-gpu gets for pipeline
/// option value `mma` and target `chip`: `auto` (wgmma where the op fits
/// it) only for chip=sm_90a, whose instruction wgmma is; mma.sync
/// otherwise.
std::string mmaForChip(llvm::StringRef mma, llvm::StringRef chip);

/// Adds the first half of `pa-lower-to-nvvm`: canonicalize, optional
/// split-KV, One-Shot Bufferize, convert-pa-to-gpu (kernels annotated with
/// their ABI), pa-warp-shuffle-reduce. The result holds the `gpu.module`.
void buildPAToGPUKernelsPipeline(OpPassManager &pm,
                                 const LowerToNVVMOptions &opts);
/// Adds the second half: the gpu.module to NVVM and to a gpu.binary.
void buildGPUKernelsToBinaryPipeline(OpPassManager &pm,
                                     const LowerToNVVMOptions &opts);
/// Both halves: `pa-lower-to-nvvm`.
void buildLowerToNVVMPipeline(OpPassManager &pm,
                              const LowerToNVVMOptions &opts);

/// Registers `pa-lower-to-cpu` and `pa-lower-to-nvvm` with the global pass
/// pipeline registry.
void registerPAPipelines();

/// Registers what the pipelines need in a context: every upstream dialect,
/// extension and LLVM IR translation, the pa dialect and its bufferization
/// models. pa-opt, pa-compile, the CPU JIT tests and examples/consumer
/// start from it.
void registerPipelineDialects(DialectRegistry &registry);

} // namespace pa
} // namespace mlir

#endif // PAGEDATTN_PIPELINES_PIPELINES_H
