//===- pa-compile.cpp - compile a configuration to a kernel bundle ---------===//
//
// Builds the pa program of one configuration with the dialect's builders:
// with `--kernels decode` (the default) plain decode and the split-KV form
// (decode_partial over a run-time work list + merge_segments, which
// convert-pa-to-gpu fuses into one kernel, decode_split, unless
// --split-kv-merge separate); with
// `--kernels prefill` one ragged batch prefill (`pa.prefill`, with the mask,
// positions, ALiBi and options its flags ask for); `--kernels all` both. It lowers it with `pa-lower-to-nvvm` (the same
// pipeline and the same tuned kernel shape as `pa-opt --pa-lower-to-nvvm`),
// and writes a kernel bundle: the cubin, the PTX, the IR, and
// `bundle.manifest`, printed by pa::rt::printManifest from the `pa.kernel`
// ABI attributes convert-pa-to-gpu puts on each kernel (docs/Runtime.md);
// a prefill kernel's `prefill` line comes from the flags and its tile_q.
// With the default prefill shape up to head dim 128 (8 warps: a 256-row
// query tile) it also compiles the 4-warp shape (128 rows, 2 CTAs per SM)
// as kernel `prefill_short` into prefill_short.cubin / .ptx: a second run
// of the pipeline on a program with @prefill alone. The runtime's planner
// launches it for short batches (docs/Runtime.md); --prefill-variants one,
// or any prefill shape flag, compiles only `prefill`.
//
//   pa-compile --head-dim 128 --page-size 16 --kv-heads 8 --group 4 \
//              --layout nhd --dtype f16 --kv joint --chip sm_90 -o DIR
//   pa-compile --kernels prefill --causal ... -o DIR
//
//===----------------------------------------------------------------------===//

#include "CPUTarget.h"

#include "PagedAttn/Bundle/BundleWriter.h"
#include "PagedAttn/Conversion/KernelABI.h"
#include "PagedAttn/Conversion/Passes.h"
#include "PagedAttn/Dialect/PA.h"
#include "PagedAttn/Pipelines/Pipelines.h"
#include "PagedAttn/Runtime/Bundle.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

using namespace mlir;
namespace cl = llvm::cl;
namespace rt = ::pa::rt;
using ::pa::compile::kArgNameAttr;

static cl::OptionCategory category("pa-compile options");
static cl::opt<int64_t> headDim("head-dim", cl::init(128), cl::desc("D"),
                                cl::cat(category));
static cl::opt<int64_t> pageSize("page-size", cl::init(16), cl::desc("P"),
                                 cl::cat(category));
static cl::opt<int64_t> kvHeads("kv-heads", cl::init(8), cl::desc("Hkv"),
                                cl::cat(category));
static cl::opt<int64_t> group("group", cl::init(4), cl::desc("Hq / Hkv"),
                              cl::cat(category));
static cl::opt<std::string> layout("layout", cl::init("nhd"),
                                   cl::desc("nhd | hnd"), cl::cat(category));
static cl::opt<std::string> dtype("dtype", cl::init("f16"),
                                  cl::desc("f16 | bf16 | f32"),
                                  cl::cat(category));
static cl::opt<std::string> kvForm("kv", cl::init("joint"),
                                   cl::desc("joint | split"),
                                   cl::cat(category));
static cl::opt<std::string>
    kvDtype("kv-dtype", cl::init(""),
            cl::desc("The cache's element type: e4m3 (f8E4M3FN) | e5m2 "
                     "(f8E5M2) for an fp8 cache whose kernels take K / V "
                     "scales (default: --dtype)"),
            cl::cat(category));
static cl::opt<std::string>
    kvScale("kv-scale", cl::init("tensor"),
            cl::desc("The scales of an fp8 cache: tensor ([1]) | head "
                     "([kv-heads])"),
            cl::cat(category));
static cl::opt<std::string>
    target("target", cl::init("gpu"),
           cl::desc("gpu: CUDA kernels (cubin, PTX) and bundle.manifest | "
                    "cpu: the same program through pa-lower-to-cpu into "
                    "kernels_cpu.so and cpu.manifest (docs/Runtime.md, "
                    "\"CPU bundles\"; links with the system cc)"),
           cl::cat(category));
static cl::opt<std::string> chip(
    "chip", cl::init("sm_90a"),
    cl::desc("sm_80 | sm_90 | sm_90a | ... (sm_90a: H100 / H200, whose "
             "prefill kernels then use wgmma, see --prefill-mma)"),
                                 cl::cat(category));
static cl::opt<int64_t> ctaThreads("cta-threads", cl::init(128),
                                   cl::desc("Threads per CTA"),
                                   cl::cat(category));
static cl::opt<int64_t> laneBytes(
    "lane-bytes", cl::init(0),
    cl::desc("CUDA-core decode: bytes of a K/V row per lane, 16 or 32 (0: "
             "tuned)"),
    cl::cat(category));
static cl::opt<int64_t> headsPerCTA(
    "heads-per-cta", cl::init(0),
    cl::desc("CUDA-core decode: query heads of a GQA group per CTA, a "
             "divisor of the group (0: tuned)"),
    cl::cat(category));
static cl::opt<int64_t> prefillWarps(
    "prefill-warps", cl::init(0),
    cl::desc("Warps per CTA of the prefill kernel: 4 or 8 (0: 8 up to head dim 128, else 4)"),
    cl::cat(category));
static cl::opt<int64_t> prefillTileKV(
    "prefill-tile-kv", cl::init(0),
    cl::desc("Keys per K/V tile of the prefill kernel: 16, 32, 64, 128 (0: "
             "32)"),
    cl::cat(category));
static cl::opt<double> rescaleThreshold(
    "rescale-threshold", cl::init(8.0),
    cl::desc("Tensor-core kernels' lazy rescaling: base-2 growth of a row's "
             "maximum before the accumulators are rescaled, in [0, 15] (0: "
             "whenever it grows)"),
    cl::cat(category));
static cl::opt<bool> narrowPv(
    "narrow-pv", cl::init(true),
    cl::desc("Tensor-core decode of groups up to 8: O^T += V^T P^T (half "
             "the accumulator registers); --narrow-pv=0: O += P V"),
    cl::cat(category));
static cl::opt<int64_t> pageListRounds(
    "page-list-rounds", cl::init(8),
    cl::desc("Tiled kernels: chunk rounds per thread and K / V tile from "
             "which a tile's page-table entries go through a page list in "
             "shared memory (the tensor-core decode's warp-local tiles: "
             "warp shuffles) rather than registers (0: never)"),
    cl::cat(category));
static cl::opt<int64_t> rowPadBytes(
    "row-pad-bytes", cl::init(0),
    cl::desc("Padding of the tile kernels' padded shared-memory rows: 16 "
             "(conflict-free ldmatrix) or 32 bytes (sector-aligned copies) "
             "(0: 32 in decode kernels, else 16)"),
    cl::cat(category));
static cl::opt<std::string> smemLayout(
    "smem-layout", cl::init("swizzle"),
    cl::desc("The tile kernels' shared-memory rows: swizzle (16-byte chunk "
             "c of row r at c ^ r % 8, unpadded, where the head dim is a "
             "multiple of 64; other head dims padded) or pad (padded rows "
             "everywhere)"),
    cl::cat(category));
static cl::opt<std::string> fp8Widen(
    "fp8-widen", cl::init("registers"),
    cl::desc("fp8 caches: registers (the tensor-core kernels read the fp8 "
             "bytes with ldmatrix and widen the fragments; head dims that "
             "are a multiple of 128 with swizzled rows, others as shared) "
             "or shared (each K / V tile widened into shared memory of the "
             "queries' type first)"),
    cl::cat(category));
static cl::opt<std::string> prefillMma(
    "prefill-mma", cl::init("auto"),
    cl::desc("Tensor-core instructions of the prefill kernels: mma.sync "
             "(ldmatrix + mma.sync, sm_80 and later), wgmma (Hopper "
             "warpgroup MMAs over shared-memory descriptors; needs --chip "
             "sm_90a and a head dim that is a multiple of 64) or auto "
             "(wgmma for --chip sm_90a where the prefill fits it, else "
             "mma.sync)"),
    cl::cat(category));
static cl::opt<int64_t> l2PrefetchBytes(
    "l2-prefetch-bytes", cl::init(128),
    cl::desc("L2 prefetch size of the kernels' cp.async copies (K / V "
             "tiles): 64, 128 or 256 (0: none)"),
    cl::cat(category));
static cl::opt<int64_t> prefillWarpRows(
    "prefill-warp-rows", cl::init(0),
    cl::desc("Query-tile rows per warp of the prefill kernel: 16 or 32 (0: "
             "32 up to head dim 128, else 16)"),
    cl::cat(category));
static cl::opt<int64_t> prefillKVWarps(
    "prefill-kv-warps", cl::init(0),
    cl::desc("Warps of the prefill kernel that split each KV tile's keys "
             "rather than its rows: 1 or --prefill-warps (0: 1)"),
    cl::cat(category));
static cl::opt<std::string> decodeKernel(
    "decode-kernel", cl::init("auto"),
    cl::desc("auto (tensor-core for f16/bf16 with GQA groups 4..32 or a head "
             "dim the CUDA-core kernel cannot split, else cuda-core) | "
             "cuda-core (lane groups) | tensor-core (the tile pipeline: the "
             "group's heads as mma rows, 4 warps splitting each KV tile)"),
    cl::cat(category));
static cl::opt<int64_t> decodeTileKV(
    "decode-tile-kv", cl::init(0),
    cl::desc("Keys per K/V tile of the decode: tensor-core 64 or 128 (0: "
             "64), CUDA-core a multiple of 16 up to 256 (0: tuned)"),
    cl::cat(category));
static cl::opt<int64_t> decodeKVStages(
    "decode-kv-stages", cl::init(0),
    cl::desc(
        "K/V tiles of the tensor-core decode in shared memory at once: "
        "2, 3 or 4 (0: 2; 3 for a one-pass GQA decode over an fp8 cache at a "
        "head dim that is a multiple of 128 and for the MHA CUDA-core "
        "decode)"),
    cl::cat(category));
static cl::opt<std::string> splitKVMerge(
    "split-kv-merge", cl::init("fused"),
    cl::desc("fused (split-KV decode in one kernel, decode_split: the last "
             "CTA of a request merges) | separate (decode_partial + "
             "merge_segments)"),
    cl::cat(category));
static cl::opt<std::string> prefillVariants(
    "prefill-variants", cl::init("auto"),
    cl::desc("auto: with the default prefill shape up to head dim 128, also "
             "compile the 4-warp shape as kernel prefill_short (the planner "
             "runs it for short batches) | one: only the prefill kernel"),
    cl::cat(category));
static cl::opt<bool> prefillSplit(
    "prefill-split", cl::init(true),
    cl::desc("prefill: also compile split-KV prefill (prefill_partial + "
             "merge_segments; the planner runs it when a batch's query tiles "
             "would leave SMs idle), with the prefill_short shape when the "
             "bundle has it"),
    cl::cat(category));
static cl::opt<std::string> kernelSet(
    "kernels", cl::init("decode"),
    cl::desc("decode (decode + split-KV kernels) | prefill | all | mla "
             "(pa.mla_decode over a latent cache: --head-dim is D_ckv, "
             "--mla-heads the query heads, --kpe D_kpe; needs --sm-scale)"),
    cl::cat(category));
static cl::opt<int64_t> mlaHeads(
    "mla-heads", cl::init(16),
    cl::desc("--kernels mla: query heads H (q_nope [B, H, D_ckv])"),
    cl::cat(category));
static cl::opt<int64_t> kpe("kpe", cl::init(64),
                            cl::desc("--kernels mla: D_kpe, the rotary part "
                                     "of the latent cache's rows"),
                            cl::cat(category));
static cl::opt<int64_t> mlaWarpBlocks(
    "mla-warp-blocks", cl::init(0),
    cl::desc("--kernels mla: 16-head row blocks per warp, 1 or "
             "--mla-row-blocks (0: 1)"),
    cl::cat(category));
static cl::opt<int64_t> mlaRowBlocks(
    "mla-row-blocks", cl::init(0),
    cl::desc("--kernels mla: 16-head row blocks per CTA, 1 or 2 (0: 2 above "
             "16 heads, else 1)"),
    cl::cat(category));
static cl::opt<std::string> mlaMma(
    "mla-mma", cl::init("auto"),
    cl::desc("--kernels mla: tensor-core instructions, mma.sync (sm_80 and "
             "later), wgmma (Hopper warpgroup MMAs, 64 heads a CTA; needs "
             "--chip sm_90a) or auto (wgmma for --chip sm_90a from 64 "
             "heads, else mma.sync)"),
    cl::cat(category));
static cl::opt<bool> mlaConsumerSync(
    "mla-consumer-sync", cl::init(false),
    cl::desc("--kernels mla, wgmma kernel: the consumer warpgroup waits at "
             "the named barriers it only arrives at otherwise (slower; for "
             "compute-sanitizer's racecheck, which reports hazards after "
             "bar.arrive hand-offs)"),
    cl::cat(category));
static cl::opt<bool> causal("causal", cl::init(false),
                            cl::desc("prefill: causal mask"),
                            cl::cat(category));
static cl::opt<int64_t> window("window", cl::init(0),
                               cl::desc("prefill: sliding window in tokens "
                                        "(0: none)"),
                               cl::cat(category));
static cl::opt<double> softCap("logits-soft-cap", cl::init(0),
                               cl::desc("prefill: logits soft-cap (0: none)"),
                               cl::cat(category));
static cl::opt<double> smScale("sm-scale", cl::init(0),
                               cl::desc("prefill: score scale (0: "
                                        "1/sqrt(head-dim))"),
                               cl::cat(category));
static cl::opt<bool> lseBase2("lse-base2", cl::init(false),
                              cl::desc("prefill: report lse in base 2"),
                              cl::cat(category));
static cl::opt<double> topkRatio(
    "topk-ratio", cl::init(0.15),
    cl::desc("select_topk (--kernels all): the fraction of each request's "
             "tokens to select, in (0, 1] (CacheBlend's recompute ratio)"),
    cl::cat(category));
static cl::opt<int64_t> planChunk(
    "plan-chunk", cl::init(256),
    cl::desc("plan_split_kv (--kernels all): tokens per split-KV work item "
             "of the device planner (pa.plan_split_kv's chunk_size), >= 1"),
    cl::cat(category));
static cl::opt<bool> alibi("alibi", cl::init(false),
                           cl::desc("prefill: ALiBi slopes argument"),
                           cl::cat(category));
static cl::opt<bool> positions("positions", cl::init(false),
                               cl::desc("prefill: explicit query positions "
                                        "argument (q_positions)"),
                               cl::cat(category));
static cl::opt<bool> customMask("custom-mask", cl::init(false),
                                cl::desc("prefill: packed custom mask "
                                         "arguments (custom_mask, "
                                         "mask_indptr)"),
                                cl::cat(category));
static cl::opt<std::string> outDir("o", cl::Required,
                                   cl::desc("Output bundle directory"),
                                   cl::cat(category));

namespace {
using rt::kMaxConfigValue;

/// What `--kernels` asks for.
bool wantMLA() { return kernelSet == "mla"; }
bool wantDecode() { return kernelSet == "decode" || kernelSet == "all"; }
bool wantPrefill() { return kernelSet == "prefill" || kernelSet == "all"; }

/// The warps of the short-batch prefill shape (prefill_short) and the rows
/// of its query tile (4 warps x the default 32 rows up to head dim 128).
constexpr int64_t kShortPrefillWarps = 4, kShortPrefillRows = 128;

/// True when the bundle's prefill kernels use wgmma (--prefill-mma, for
/// --chip sm_90a with auto).
bool prefillWgmma() {
  std::string mma = mlir::pa::mmaForChip(prefillMma, chip);
  return mma == "wgmma" ||
         (mma == "auto" &&
          mlir::pa::prefillFitsWgmma(headDim, !kvDtype.empty(), prefillWarps,
                                     prefillWarpRows, prefillKVWarps,
                                     prefillTileKV));
}

/// True when the bundle gets a second prefill kernel, prefill_short: the
/// prefill kernel has the default shape (no shape flag; 0 is the default),
/// whose 8 warps x 32 rows up to head dim 128 leave room for the 4-warp
/// tile (above 128 the default is already 4 warps), a GQA group fits the
/// smaller tile, and --prefill-variants is auto.
bool wantPrefillShort() {
  return wantPrefill() && !prefillWgmma() && prefillVariants == "auto" &&
         prefillWarps == 0 &&
         prefillWarpRows == 0 && prefillTileKV == 0 && prefillKVWarps == 0 &&
         headDim <= 128 &&
         group <= kShortPrefillRows;
}

/// Rejects bad flags with a message naming them; true if all are good.
bool checkFlags() {
  bool ok = true;
  auto fail = [&](const Twine &msg) {
    llvm::errs() << "pa-compile: " << msg << "\n";
    ok = false;
  };
  if (target != "gpu" && target != "cpu")
    fail("--target must be gpu or cpu, got '" + target + "'");
  if (planChunk < 1)
    fail("--plan-chunk " + Twine(planChunk.getValue()) + " must be >= 1");
  if (!(topkRatio > 0) || topkRatio > 1)
    fail("--topk-ratio " + Twine(std::to_string(topkRatio.getValue())) +
         " is out of (0, 1]");
  auto inRange = [&](const cl::opt<int64_t> &o, int64_t lo, int64_t hi) {
    if (o < lo || o > hi)
      fail("--" + o.ArgStr + " " + Twine(o.getValue()) + " is out of [" +
           Twine(lo) + ", " + Twine(hi) + "]");
  };
  inRange(headDim, 1, kMaxConfigValue);
  inRange(pageSize, 1, kMaxConfigValue);
  inRange(kvHeads, 1, kMaxConfigValue);
  inRange(group, 1, kMaxConfigValue);
  inRange(ctaThreads, 32, 1024);
  if (ctaThreads % 32 != 0)
    fail("--cta-threads must be a multiple of 32");
  if (laneBytes != 0 && laneBytes != 16 && laneBytes != 32)
    fail("--lane-bytes must be 16 or 32 (0: tuned)");
  inRange(headsPerCTA, 0, kMaxConfigValue);
  if (prefillWarps != 0 && prefillWarps != 4 && prefillWarps != 8)
    fail("--prefill-warps must be 4 or 8 (0: 8 up to head dim 128, else 4)");
  if (prefillTileKV != 0 && prefillTileKV != 16 && prefillTileKV != 32 &&
      prefillTileKV != 64 && prefillTileKV != 128)
    fail("--prefill-tile-kv must be 16, 32, 64 or 128 (0: 32)");
  if (!(rescaleThreshold >= 0 && rescaleThreshold <= 15))
    fail("--rescale-threshold must lie in [0, 15] (0: whenever the maximum "
         "grows)");
  inRange(pageListRounds, 0, kMaxConfigValue);
  if (smemLayout != "swizzle" && smemLayout != "pad")
    fail("--smem-layout must be swizzle or pad, got '" + smemLayout.getValue() +
         "'");
  if (fp8Widen != "registers" && fp8Widen != "shared")
    fail("--fp8-widen must be registers or shared, got '" +
         fp8Widen.getValue() + "'");
  if (prefillMma != "mma.sync" && prefillMma != "wgmma" &&
      prefillMma != "auto")
    fail("--prefill-mma must be mma.sync, wgmma or auto, got '" +
         prefillMma.getValue() + "'");
  if (prefillMma == "wgmma" && chip != "sm_90a")
    fail("--prefill-mma wgmma needs --chip sm_90a (wgmma is an sm_90a "
         "instruction), got --chip " + chip.getValue());
  if (rowPadBytes != 0 && rowPadBytes != 16 && rowPadBytes != 32)
    fail("--row-pad-bytes must be 16 or 32 (0: 32 in decode kernels, else "
         "16)");
  if (l2PrefetchBytes != 0 && l2PrefetchBytes != 64 && l2PrefetchBytes != 128 &&
      l2PrefetchBytes != 256)
    fail("--l2-prefetch-bytes must be 64, 128 or 256 (0: none)");
  if (prefillWarpRows != 0 && prefillWarpRows != 16 && prefillWarpRows != 32)
    fail("--prefill-warp-rows must be 16 or 32 (0: 32 up to head dim 128, else 16)");
  if (prefillKVWarps != 0 && prefillKVWarps != 1 && prefillKVWarps != 4 &&
      prefillKVWarps != 8)
    fail("--prefill-kv-warps must be 1 or --prefill-warps (0: 1)");
  if (decodeKernel != "auto" && decodeKernel != "cuda-core" &&
      decodeKernel != "tensor-core")
    fail("--decode-kernel must be auto, cuda-core or tensor-core, got '" +
         decodeKernel + "'");
  if (decodeTileKV < 0 || decodeTileKV % 16 != 0 || decodeTileKV > 256)
    fail("--decode-tile-kv must be a multiple of 16 up to 256 (tensor-core: "
         "64 or 128; 0: the kernel's default)");
  if (splitKVMerge != "fused" && splitKVMerge != "separate")
    fail("--split-kv-merge must be fused or separate, got '" + splitKVMerge +
         "'");
  if (decodeKVStages != 0 && (decodeKVStages < 2 || decodeKVStages > 4))
    fail("--decode-kv-stages must be 2, 3 or 4 (0: 2)");
  if (prefillVariants != "auto" && prefillVariants != "one")
    fail("--prefill-variants must be auto or one, got '" + prefillVariants +
         "'");
  rt::CacheLayout l;
  rt::DType d;
  rt::KVStorage s;
  if (!rt::fromString(layout.getValue(), l))
    fail("--layout must be nhd or hnd, got '" + layout + "'");
  if (!rt::fromString(dtype.getValue(), d))
    fail("--dtype must be f16, bf16 or f32, got '" + dtype + "'");
  if (!rt::fromString(kvForm.getValue(), s))
    fail("--kv must be joint or split, got '" + kvForm + "'");
  rt::KVDType kd;
  rt::KVScale ks;
  if (!kvDtype.empty() && !rt::fromString(kvDtype.getValue(), kd))
    fail("--kv-dtype must be e4m3 or e5m2 (or absent: the --dtype), got '" +
         kvDtype + "'");
  if (!rt::fromString(kvScale.getValue(), ks))
    fail("--kv-scale must be tensor or head, got '" + kvScale + "'");
  if (kvDtype.empty() && kvScale.getNumOccurrences())
    fail("--kv-scale is an fp8 cache option: it needs --kv-dtype");
  if (!kvDtype.empty() && dtype == "f32")
    fail("--kv-dtype " + kvDtype + " needs --dtype f16 or bf16 (the fp8 "
         "kernels run on tensor cores)");
  if (!StringRef(chip.getValue()).starts_with("sm_"))
    fail("--chip must name an SM, e.g. sm_90, got '" + chip + "'");
  if (!wantDecode() && !wantPrefill() && !wantMLA())
    fail("--kernels must be decode, prefill, all or mla, got '" + kernelSet +
         "'");
  if (wantMLA()) {
    inRange(mlaHeads, 1, kMaxConfigValue);
    inRange(kpe, 1, kMaxConfigValue);
    if (mlaRowBlocks != 0 && mlaRowBlocks != 1 && mlaRowBlocks != 2)
      fail("--mla-row-blocks must be 1 or 2 (0: 2 above 16 heads, else 1)");
    if (mlaWarpBlocks < 0 || mlaWarpBlocks > 2)
      fail("--mla-warp-blocks must be 1 or --mla-row-blocks (0: 1)");
    if (mlaMma != "mma.sync" && mlaMma != "wgmma" && mlaMma != "auto")
      fail("--mla-mma must be mma.sync, wgmma or auto, got '" +
           mlaMma.getValue() + "'");
    if (mlaMma == "wgmma" && chip != "sm_90a")
      fail("--mla-mma wgmma needs --chip sm_90a (wgmma is an sm_90a "
           "instruction), got --chip " + chip.getValue());
    if (!smScale.getNumOccurrences() || smScale == 0)
      fail("--kernels mla needs --sm-scale (with absorbed weights the scale "
           "is the model's 1/sqrt(qk_nope_head_dim + qk_rope_head_dim), "
           "which the shapes do not tell; DeepSeek V2/V3: 0.0721687836)");
    if (!kvDtype.empty())
      fail("--kernels mla has no fp8 latent cache (--kv-dtype)");
    for (const cl::Option *o : std::initializer_list<const cl::Option *>{
             &kvHeads, &group, &layout, &kvForm, &causal, &window, &alibi,
             &positions, &customMask})
      if (o->getNumOccurrences())
        fail("--" + o->ArgStr + " does not apply to --kernels mla (one "
             "latent cache [pages, P, D_ckv + D_kpe], --mla-heads query "
             "heads, no masks)");
  } else {
    for (const cl::Option *o : std::initializer_list<const cl::Option *>{
             &mlaHeads, &kpe, &mlaRowBlocks, &mlaWarpBlocks, &mlaMma,
             &mlaConsumerSync})
      if (o->getNumOccurrences())
        fail("--" + o->ArgStr + " is an MLA option: it needs --kernels mla");
  }
  inRange(window, 0, std::numeric_limits<int32_t>::max());
  // The op stores both as f32: they must be finite there.
  auto realFlag = [&](const cl::opt<double> &o) {
    double v = o.getValue();
    if (std::isfinite(v) && v >= 0 && std::isfinite(static_cast<float>(v)))
      return;
    char text[32];
    std::snprintf(text, sizeof(text), "%g", v);
    fail("--" + o.ArgStr + " " + text +
         " must be a finite f32 value >= 0 (0: " +
         (&o == &softCap ? "none" : "1/sqrt(head-dim)") + ")");
  };
  realFlag(softCap);
  realFlag(smScale);
  if (customMask && causal)
    fail("--custom-mask excludes --causal (the mask says what is visible)");
  if (customMask && window > 0)
    fail("--custom-mask excludes --window");
  if (!wantPrefill() && !wantMLA()) {
    // Prefill options would be silently ignored: reject them.
    for (const cl::Option *o : std::initializer_list<const cl::Option *>{
             &causal, &window, &softCap, &smScale, &lseBase2, &alibi,
             &positions, &customMask, &prefillVariants, &prefillSplit})
      if (o->getNumOccurrences())
        fail("--" + o->ArgStr + " is a prefill option: it needs --kernels "
             "prefill or all");
  }
  return ok;
}

/// The inputs of a program function: types and the names of their roles
/// (those of the kernel ABI's arguments, docs/Runtime.md), which the CPU
/// target's manifest lists (CPUTarget.h).
struct Signature {
  SmallVector<Type> types;
  SmallVector<std::string> names;
  Signature &add(Type t, StringRef name) {
    types.push_back(t);
    names.push_back(name.str());
    return *this;
  }
  Signature &append(const Signature &o) {
    types.append(o.types.begin(), o.types.end());
    names.append(o.names.begin(), o.names.end());
    return *this;
  }
};

/// Types and attributes of the configuration.
struct ProgramTypes {
  RankedTensorType q, lse, part, cache, index, mask, slopes;
  /// An fp8 cache's K / V scales ([1] or [Hkv] f32); null otherwise.
  RankedTensorType scale;
  mlir::pa::PagedKVAttr attr;
  bool joint;

  /// The cache operands and, for an fp8 cache, the two scales.
  Signature cacheInputs() const {
    Signature in;
    if (joint)
      in.add(cache, "kv");
    else
      in.add(cache, "k").add(cache, "v");
    if (scale)
      in.add(scale, "k_scale").add(scale, "v_scale");
    return in;
  }
  /// Arguments the cache operands take (cacheInputs().size()).
  int cacheArgs() const { return (joint ? 1 : 2) + (scale ? 2 : 0); }
  /// The scales among the function arguments `a`, whose cache operands
  /// start at `first`.
  mlir::pa::KVScales scales(ValueRange a, int first) const {
    if (!scale)
      return {};
    int s = first + (joint ? 1 : 2);
    return {a[s], a[s + 1]};
  }
};

ProgramTypes programTypes(MLIRContext *ctx) {
  Builder b(ctx);
  Type elem = dtype == "f16"    ? Type(b.getF16Type())
              : dtype == "bf16" ? Type(b.getBF16Type())
                                : Type(b.getF32Type());
  int64_t dyn = ShapedType::kDynamic, hq = kvHeads * group;
  bool nhd = layout == "nhd";
  ProgramTypes t;
  t.joint = kvForm == "joint";
  t.q = RankedTensorType::get({dyn, hq, headDim}, elem);
  t.lse = RankedTensorType::get({dyn, hq}, b.getF32Type());
  t.part = RankedTensorType::get({dyn, hq, headDim}, b.getF32Type());
  SmallVector<int64_t> shape{dyn};
  if (t.joint)
    shape.push_back(2);
  if (nhd)
    shape.append({pageSize, kvHeads, headDim});
  else
    shape.append({kvHeads, pageSize, headDim});
  Type cacheElem = elem;
  if (kvDtype == "e4m3")
    cacheElem = b.getType<Float8E4M3FNType>();
  else if (kvDtype == "e5m2")
    cacheElem = b.getType<Float8E5M2Type>();
  t.cache = RankedTensorType::get(shape, cacheElem);
  if (!kvDtype.empty())
    t.scale = RankedTensorType::get({kvScale == "head" ? kvHeads.getValue() : 1},
                                    b.getF32Type());
  t.index = RankedTensorType::get({dyn}, b.getI32Type());
  t.mask = RankedTensorType::get({dyn}, b.getI8Type());
  t.slopes = RankedTensorType::get({hq}, b.getF32Type());
  t.attr = mlir::pa::PagedKVAttr::get(ctx, nhd ? mlir::pa::KVLayout::NHD : mlir::pa::KVLayout::HND,
                                pageSize, kvHeads, headDim);
  return t;
}

/// A public function `name` with `inputs`, returning `results`; `body` gets
/// the arguments and returns the values to return.
void buildFunc(OpBuilder &b, Location loc, StringRef name,
               const Signature &inputs, TypeRange results,
               function_ref<SmallVector<Value>(OpBuilder &, ValueRange)> body) {
  auto func = func::FuncOp::create(b, loc, name,
                                   b.getFunctionType(inputs.types, results));
  for (auto [i, n] : llvm::enumerate(inputs.names))
    func.setArgAttr(i, kArgNameAttr, b.getStringAttr(n));
  Block *entry = func.addEntryBlock();
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(entry);
  SmallVector<Value> ret = body(b, entry->getArguments());
  func::ReturnOp::create(b, loc, ret);
}

/// The attention options of the prefill flags (0 = unset).
mlir::pa::AttentionOptions prefillOptions() {
  mlir::pa::AttentionOptions o;
  if (smScale > 0)
    o.smScale = smScale;
  if (softCap > 0)
    o.softCap = softCap;
  if (window > 0)
    o.window = window;
  o.lseBase2 = lseBase2;
  return o;
}

/// The inputs @prefill and @prefill_split share: q, qo_indptr, the cache
/// and page table, `workArrays` work-list arrays, then the optional
/// q_positions, custom mask and ALiBi slopes the flags ask for.
Signature prefillInputs(const ProgramTypes &t, bool split) {
  Signature in;
  in.add(t.q, "q").add(t.index, "qo_indptr");
  in.append(t.cacheInputs());
  in.add(t.index, "kv_indptr")
      .add(t.index, "kv_indices")
      .add(t.index, "kv_last_page_len");
  if (split)
    for (StringRef n : {"work_request", "work_qo_start", "work_qo_end",
                        "work_kv_start", "work_kv_end", "work_partial_row",
                        "work_partial_stride"})
      in.add(t.index, n);
  if (positions)
    in.add(t.index, "q_positions");
  if (customMask)
    in.add(t.mask, "custom_mask").add(t.index, "mask_indptr");
  if (alibi)
    in.add(t.slopes, "alibi_slopes");
  return in;
}

/// @prefill(q, qo_indptr, kv..., [k_scale, v_scale], kv_indptr,
///          kv_indices, kv_last_page_len, [q_positions], [custom_mask,
///          mask_indptr], [alibi_slopes], o, lse): one pa.prefill with the
///          flags' masking and options.
void buildPrefill(OpBuilder &b, Location loc, const ProgramTypes &t) {
  int nkv = t.joint ? 1 : 2;
  Signature in = prefillInputs(t, /*split=*/false);
  in.add(t.q, "o").add(t.lse, "lse");
  buildFunc(b, loc, "prefill", in, {t.q, t.lse},
            [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
              int i = 2 + t.cacheArgs();
              mlir::pa::PageTableOperands pages{a[i], a[i + 1], a[i + 2]};
              i += 3;
              mlir::pa::PrefillMasking masking;
              masking.causal = causal;
              if (positions)
                masking.qPositions = a[i++];
              if (customMask) {
                masking.customMask = a[i++];
                masking.maskIndptr = a[i++];
              }
              Value slopes = alibi ? a[i++] : Value();
              auto op = mlir::pa::PrefillOp::create(
                  b, loc, a[0], a[1], a.slice(2, nkv), pages,
                  ValueRange{a[i], a[i + 1]}, t.attr, masking,
                  prefillOptions(), slopes, t.scales(a, 2));
              return {op.getResult(0), op.getResult(1)};
            });
}

/// @prefill_split(q, qo_indptr, kv..., [k_scale, v_scale], kv_indptr,
///                kv_indices,
///                kv_last_page_len, work_request, work_qo_start,
///                work_qo_end, work_kv_start, work_kv_end, work_partial_row,
///                work_partial_stride, [q_positions], [custom_mask,
///                mask_indptr], [alibi_slopes], o_part, lse_part,
///                merge_indptr, o, lse): pa.prefill_partial over a work list
/// (pa::rt::planPrefill's) and pa.merge_segments per query row.
void buildPrefillSplit(OpBuilder &b, Location loc, const ProgramTypes &t) {
  int nkv = t.joint ? 1 : 2;
  Signature in = prefillInputs(t, /*split=*/true);
  in.add(t.part, "o_part")
      .add(t.lse, "lse_part")
      .add(t.index, "merge_indptr")
      .add(t.q, "o")
      .add(t.lse, "lse");
  buildFunc(
      b, loc, "prefill_split", in, {t.q, t.lse},
      [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
        int i = 2 + t.cacheArgs();
        ValueRange pages = a.slice(i, 3);
        i += 3;
        ValueRange work = a.slice(i, 7);
        i += 7;
        Value qPositions = positions ? a[i++] : Value();
        Value mask = customMask ? a[i++] : Value();
        Value maskIndptr = customMask ? a[i++] : Value();
        Value slopes = alibi ? a[i++] : Value();
        mlir::pa::AttentionOptions o = prefillOptions();
        mlir::pa::KVScales scales = t.scales(a, 2);
        auto part = mlir::pa::PrefillPartialOp::create(
            b, loc, TypeRange{t.part, t.lse}, a[0], a[1], a.slice(2, nkv),
            scales.k, scales.v, pages[0], pages[1],
            pages[2], work[0], work[1], work[2], work[3], work[4], work[5],
            work[6], qPositions, mask, maskIndptr, slopes,
            ValueRange{a[i], a[i + 1]}, t.attr,
            causal ? b.getUnitAttr() : UnitAttr(), o.getSmScaleAttr(b),
            o.getSoftCapAttr(b), o.getWindowAttr(b), o.getLseBase2Attr(b));
        auto merge = mlir::pa::MergeSegmentsOp::create(
            b, loc, TypeRange{t.q, t.lse}, part.getResult(0),
            part.getResult(1), a[i + 2], ValueRange{a[i + 3], a[i + 4]},
            /*lse_base2=*/lseBase2.getValue());
        return {merge.getResult(0), merge.getResult(1)};
      });
}

/// @merge(o_0, lse_0, o_1, lse_1, o, lse): pa.merge of two states (the
/// cascade's level merge); @merge_states(o_states, lse_states, o, lse):
/// pa.merge_states of S stacked states per row.
void buildMerges(OpBuilder &b, Location loc, const ProgramTypes &t) {
  Signature merge;
  merge.add(t.q, "o_0").add(t.lse, "lse_0").add(t.q, "o_1").add(t.lse,
                                                                  "lse_1");
  merge.add(t.q, "o").add(t.lse, "lse");
  buildFunc(b, loc, "merge", merge, {t.q, t.lse},
            [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
              auto op = mlir::pa::MergeOp::create(
                  b, loc, TypeRange{t.q, t.lse}, a.take_front(4),
                  a.slice(4, 2), /*lse_base2=*/false);
              return {op.getResult(0), op.getResult(1)};
            });
  int64_t dyn = ShapedType::kDynamic;
  auto oStates = RankedTensorType::get(
      {dyn, dyn, t.q.getDimSize(1), t.q.getDimSize(2)},
      t.q.getElementType());
  auto lseStates = RankedTensorType::get({dyn, dyn, t.q.getDimSize(1)},
                                         t.lse.getElementType());
  Signature states;
  states.add(oStates, "o_states").add(lseStates, "lse_states");
  states.add(t.q, "o").add(t.lse, "lse");
  buildFunc(b, loc, "merge_states", states, {t.q, t.lse},
            [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
              auto op = mlir::pa::MergeStatesOp::create(
                  b, loc, TypeRange{t.q, t.lse}, a[0], a[1], a.slice(2, 2),
                  /*lse_base2=*/false);
              return {op.getResult(0), op.getResult(1)};
            });
}

/// The cache writes through the page table and the CacheBlend ops:
/// @append_kv(k_new, v_new, append_indptr, pages..., [scales], kv...),
/// @scatter_kv(k_rows, v_rows, rows_indptr, positions, pages..., [scales],
/// kv...), @kv_deviation(new_rows, cached_rows, dev) and
/// @select_topk(dev, indptr, positions, out_indptr) with --topk-ratio,
/// @pack_mask(mask, indptr, packed, packed_indptr).
void buildCacheBlend(OpBuilder &b, Location loc, const ProgramTypes &t) {
  int nkv = t.joint ? 1 : 2;
  RankedTensorType rows = RankedTensorType::get(
      {ShapedType::kDynamic, kvHeads, headDim}, t.q.getElementType());
  RankedTensorType dev =
      RankedTensorType::get({ShapedType::kDynamic}, b.getF32Type());
  SmallVector<Type> caches(nkv, t.cache);
  auto scalesAt = [&](ValueRange a, int i) -> mlir::pa::KVScales {
    if (!t.scale)
      return {};
    return {a[i], a[i + 1]};
  };
  for (bool scatter : {false, true}) {
    Signature in;
    in.add(rows, "k_new").add(rows, "v_new");
    if (scatter)
      in.add(t.index, "rows_indptr").add(t.index, "positions");
    else
      in.add(t.index, "append_indptr");
    in.add(t.index, "kv_indptr")
        .add(t.index, "kv_indices")
        .add(t.index, "kv_last_page_len");
    if (t.scale)
      in.add(t.scale, "k_scale").add(t.scale, "v_scale");
    if (t.joint)
      in.add(t.cache, "kv");
    else
      in.add(t.cache, "k").add(t.cache, "v");
    buildFunc(b, loc, scatter ? "scatter_kv" : "append_kv", in, caches,
              [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
                int p = scatter ? 4 : 3;
                mlir::pa::PageTableOperands pages{a[p], a[p + 1], a[p + 2]};
                int c0 = p + 3 + (t.scale ? 2 : 0);
                mlir::pa::KVScales sc = scalesAt(a, p + 3);
                Operation *op =
                    scatter ? mlir::pa::ScatterKVOp::create(
                                  b, loc, a[0], a[1], a[2], a[3], pages,
                                  a.slice(c0, nkv), t.attr, sc)
                                  .getOperation()
                            : mlir::pa::AppendKVOp::create(
                                  b, loc, a[0], a[1], a[2], pages,
                                  a.slice(c0, nkv), t.attr, sc)
                                  .getOperation();
                return SmallVector<Value>(op->getResults());
              });
  }
  Signature deviation;
  deviation.add(rows, "new_rows").add(rows, "cached_rows").add(dev,
                                                               "deviation");
  buildFunc(b, loc, "kv_deviation", deviation, {dev},
            [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
              auto op = mlir::pa::KVDeviationOp::create(
                  b, loc, TypeRange{dev}, a[0], a[1], ValueRange{a[2]});
              return {op.getResult(0)};
            });
  RankedTensorType bytes =
      RankedTensorType::get({ShapedType::kDynamic}, b.getI8Type());
  Signature pack;
  pack.add(bytes, "mask").add(t.index, "mask_segments");
  pack.add(bytes, "custom_mask").add(t.index, "mask_indptr");
  buildFunc(b, loc, "pack_mask", pack, {bytes, t.index},
            [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
              auto op = mlir::pa::PackMaskOp::create(
                  b, loc, TypeRange{bytes, t.index}, a[0], a[1],
                  ValueRange{a[2], a[3]});
              return {op.getResult(0), op.getResult(1)};
            });
  Signature topk;
  topk.add(dev, "deviation").add(t.index, "dev_indptr");
  topk.add(t.index, "positions").add(t.index, "out_indptr");
  buildFunc(b, loc, "select_topk", topk, {t.index, t.index},
            [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
              auto op = mlir::pa::SelectTopKOp::create(
                  b, loc, TypeRange{t.index, t.index}, a[0], a[1],
                  ValueRange{a[2], a[3]},
                  b.getF64FloatAttr(topkRatio.getValue()));
              return {op.getResult(0), op.getResult(1)};
            });
}

/// @plan_split_kv(kv_indptr, kv_last_page_len, work_indptr, work_request,
/// work_start, work_end): pa.plan_split_kv with --plan-chunk, the split-KV
/// work list on the device.
void buildPlanSplitKV(OpBuilder &b, Location loc, const ProgramTypes &t) {
  Signature in;
  for (StringRef n : {"kv_indptr", "kv_last_page_len", "work_indptr",
                      "work_request", "work_start", "work_end"})
    in.add(t.index, n);
  SmallVector<Type> outs(4, t.index);
  buildFunc(b, loc, "plan_split_kv", in, outs,
            [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
              auto op = mlir::pa::PlanSplitKVOp::create(
                  b, loc, TypeRange(outs), a[0], a[1], a.slice(2, 4),
                  b.getI64IntegerAttr(pageSize),
                  b.getI64IntegerAttr(planChunk));
              return SmallVector<Value>(op.getResults());
            });
}

/// --kernels mla: @mla_decode(q_nope, q_pe, ckv_kpe, kv_indptr, kv_indices,
/// kv_last_page_len, o, lse), pa.mla_decode with --sm-scale,
/// --logits-soft-cap and --lse-base2.
OwningOpRef<ModuleOp> buildMLAProgram(MLIRContext *ctx) {
  Location loc = UnknownLoc::get(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module->getBody());
  Type elem = dtype == "f16"    ? Type(b.getF16Type())
              : dtype == "bf16" ? Type(b.getBF16Type())
                                : Type(b.getF32Type());
  int64_t dyn = ShapedType::kDynamic, h = mlaHeads;
  auto qNope = RankedTensorType::get({dyn, h, headDim}, elem);
  auto qPe = RankedTensorType::get({dyn, h, kpe}, elem);
  auto cache = RankedTensorType::get({dyn, pageSize, headDim + kpe}, elem);
  auto lse = RankedTensorType::get({dyn, h}, b.getF32Type());
  auto index = RankedTensorType::get({dyn}, b.getI32Type());
  Signature in;
  in.add(qNope, "q_nope").add(qPe, "q_pe").add(cache, "ckv_kpe");
  in.add(index, "kv_indptr")
      .add(index, "kv_indices")
      .add(index, "kv_last_page_len");
  in.add(qNope, "o").add(lse, "lse");
  auto attr = mlir::pa::PagedMLAAttr::get(ctx, pageSize, headDim, kpe);
  mlir::pa::AttentionOptions o;
  o.smScale = smScale.getValue();
  if (softCap > 0)
    o.softCap = softCap.getValue();
  o.lseBase2 = lseBase2;
  buildFunc(b, loc, "mla_decode", in, {qNope, lse},
            [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
              mlir::pa::PageTableOperands pages{a[3], a[4], a[5]};
              auto op = mlir::pa::MLADecodeOp::create(
                  b, loc, a[0], a[1], a[2], pages, ValueRange{a[6], a[7]},
                  attr, o);
              return {op.getResult(0), op.getResult(1)};
            });
  return module;
}

/// The program: with `decode` @decode (one pass), @decode_split
/// (work-list split-KV) and @append_kv_slots (the cache write); with
/// `prefill` @prefill, and with `split` @prefill_split; with both @merge
/// and @merge_states (pa_merge, pa_merge_states, and the cascade's merges)
/// and the CacheBlend kernels (buildCacheBlend).
OwningOpRef<ModuleOp> buildProgram(MLIRContext *ctx, bool decode,
                                   bool prefill, bool split) {
  ProgramTypes t = programTypes(ctx);
  Location loc = UnknownLoc::get(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module->getBody());
  if (prefill)
    buildPrefill(b, loc, t);
  if (prefill && split)
    buildPrefillSplit(b, loc, t);
  if (prefill && decode) {
    buildMerges(b, loc, t);
    buildCacheBlend(b, loc, t);
    buildPlanSplitKV(b, loc, t);
  }
  if (!decode)
    return module;
  int nkv = t.joint ? 1 : 2, nc = t.cacheArgs();

  // @decode(q, kv..., [k_scale, v_scale], kv_indptr, kv_indices,
  //         kv_last_page_len, o, lse)
  Signature in;
  in.add(t.q, "q").append(t.cacheInputs());
  in.add(t.index, "kv_indptr")
      .add(t.index, "kv_indices")
      .add(t.index, "kv_last_page_len");
  in.add(t.q, "o").add(t.lse, "lse");
  buildFunc(b, loc, "decode", in, {t.q, t.lse},
            [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
              mlir::pa::PageTableOperands pages{a[1 + nc], a[2 + nc],
                                                a[3 + nc]};
              auto op = mlir::pa::DecodeOp::create(
                  b, loc, a[0], a.slice(1, nkv), pages,
                  ValueRange{a[4 + nc], a[5 + nc]}, t.attr,
                  mlir::pa::AttentionOptions(), Value(), t.scales(a, 1));
              return {op.getResult(0), op.getResult(1)};
            });

  // @decode_split(q, kv..., [k_scale, v_scale], pages..., work_indptr,
  //               work_request, work_start, work_end, o_part, lse_part, o,
  //               lse)
  Signature inSplit;
  inSplit.add(t.q, "q").append(t.cacheInputs());
  for (StringRef n : {"kv_indptr", "kv_indices", "kv_last_page_len",
                      "work_indptr", "work_request", "work_start", "work_end"})
    inSplit.add(t.index, n);
  inSplit.add(t.part, "o_part").add(t.lse, "lse_part");
  inSplit.add(t.q, "o").add(t.lse, "lse");
  buildFunc(b, loc, "decode_split", inSplit, {t.q, t.lse},
            [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
              int i = 1 + nc;
              mlir::pa::PageTableOperands pages{a[i], a[i + 1], a[i + 2]};
              mlir::pa::WorkListOperands work{a[i + 3], a[i + 4], a[i + 5],
                                        a[i + 6]};
              auto part = mlir::pa::DecodePartialOp::create(
                  b, loc, a[0], a.slice(1, nkv), pages, work,
                  ValueRange{a[i + 7], a[i + 8]}, t.attr,
                  mlir::pa::AttentionOptions(), Value(), t.scales(a, 1));
              auto merge = mlir::pa::MergeSegmentsOp::create(
                  b, loc, TypeRange{t.q, t.lse}, part.getResult(0),
                  part.getResult(1), work.indptr,
                  ValueRange{a[i + 9], a[i + 10]}, /*lse_base2=*/false);
              return {merge.getResult(0), merge.getResult(1)};
            });

  // @append_kv_slots(k_new, v_new, slot_mapping, [k_scale, v_scale],
  //                  kv...) -> kv...: the cache write of a decode step.
  RankedTensorType rows = RankedTensorType::get(
      {ShapedType::kDynamic, kvHeads, headDim}, t.q.getElementType());
  Signature inAppend;
  inAppend.add(rows, "k_new").add(rows, "v_new").add(t.index,
                                                      "slot_mapping");
  if (t.scale)
    inAppend.add(t.scale, "k_scale").add(t.scale, "v_scale");
  SmallVector<Type> caches(nkv, t.cache);
  if (t.joint)
    inAppend.add(t.cache, "kv");
  else
    inAppend.add(t.cache, "k").add(t.cache, "v");
  buildFunc(b, loc, "append_kv_slots", inAppend, caches,
            [&](OpBuilder &b, ValueRange a) -> SmallVector<Value> {
              int c0 = t.scale ? 5 : 3;
              auto op = mlir::pa::AppendKVSlotsOp::create(
                  b, loc, TypeRange(caches), a[0], a[1], a[2],
                  t.scale ? a[3] : Value(), t.scale ? a[4] : Value(),
                  a.slice(c0, nkv), t.attr);
              return SmallVector<Value>(op->getResults());
            });
  return module;
}

/// The pipeline options: the flags, with 0 meaning the tuned default;
/// `warps` > 0 overrides --prefill-warps (prefill_short).
void setPipelineOptions(mlir::pa::LowerToNVVMOptions &opts, StringRef format,
                        int64_t warps = 0, StringRef mla = "") {
  opts.chip = chip;
  opts.prefillMma = prefillMma;
  opts.format = format.str();
  opts.ctaThreads = ctaThreads;
  opts.laneBytes = laneBytes;
  opts.headsPerCTA = headsPerCTA;
  opts.prefillWarps = warps > 0 ? warps : prefillWarps.getValue();
  opts.prefillTileKV = prefillTileKV;
  opts.rescaleThreshold = rescaleThreshold;
  opts.narrowPv = narrowPv;
  opts.pageListRounds = pageListRounds;
  opts.l2PrefetchBytes = l2PrefetchBytes;
  opts.rowPadBytes = rowPadBytes;
  opts.smemLayout = smemLayout;
  opts.fp8Widen = fp8Widen;
  opts.prefillWarpRows = prefillWarpRows;
  opts.prefillKVWarps = prefillKVWarps;
  opts.decodeKernel = decodeKernel;
  opts.decodeTileKV = decodeTileKV;
  opts.decodeKVStages = decodeKVStages;
  opts.splitKVMerge = splitKVMerge;
  opts.mlaRowBlocks = mlaRowBlocks;
  opts.mlaWarpBlocks = mlaWarpBlocks;
  opts.mlaMma = mla.empty() ? mlaMma.getValue() : mla.str();
  opts.mlaConsumerSync = mlaConsumerSync;
}

/// The bundle configuration of the flags.
rt::BundleConfig configFromFlags() {
  rt::BundleConfig c;
  c.headDim = headDim;
  c.pageSize = pageSize;
  c.kvHeads = wantMLA() ? 1 : kvHeads.getValue();
  c.group = wantMLA() ? mlaHeads.getValue() : group.getValue();
  if (wantMLA())
    c.kpeDim = kpe;
  (void)rt::fromString(layout.getValue(), c.layout);
  (void)rt::fromString(dtype.getValue(), c.dtype);
  (void)rt::fromString(kvForm.getValue(), c.kv);
  if (!kvDtype.empty()) {
    (void)rt::fromString(kvDtype.getValue(), c.kvDtype);
    (void)rt::fromString(kvScale.getValue(), c.kvScale);
  }
  return c;
}

/// What the kernels' ABI attributes do not say: the flags.
mlir::pa::BundleOptions bundleOptions() {
  mlir::pa::BundleOptions o;
  o.config = configFromFlags();
  o.prefill.causal = causal;
  o.prefill.window = window;
  o.prefill.softCap = static_cast<float>(softCap.getValue());
  o.prefill.smScale = static_cast<float>(smScale.getValue());
  o.prefill.lseBase2 = lseBase2;
  o.topkRatio = topkRatio.getValue();
  o.planChunk = planChunk;
  return o;
}

/// The binary half of the pipeline on `kernels` (format "bin" or "isa").
FailureOr<std::string> toBinary(ModuleOp kernels, StringRef format,
                                int64_t warps = 0) {
  mlir::pa::LowerToNVVMOptions opts;
  setPipelineOptions(opts, format, warps);
  return mlir::pa::kernelsToBinary(kernels, opts);
}

/// What one run of the pipeline made of a program.
struct Compiled {
  rt::Manifest manifest;
  mlir::pa::KernelABI shape, prefillShape;
  std::string cubin, ptx;
  /// The program's text (prefill_short only: prefill_short.mlir).
  std::string source;
  /// Milliseconds from the program to the cubin.
  double ms = 0;
};

/// Lowers a copy of `program` with the kernel half of pa-lower-to-nvvm
/// (prefill warps `warps`, 0: the flag's; mla-mma `mla`, empty: the
/// flag's), reads the manifest's kernels from their ABI attributes, and
/// runs the binary half to a cubin and to PTX.
LogicalResult compileProgram(ModuleOp program, int64_t warps, Compiled &out,
                             StringRef mla = "") {
  auto t0 = std::chrono::steady_clock::now();
  OwningOpRef<ModuleOp> kernels = program.clone();
  PassManager pm(program.getContext());
  mlir::pa::LowerToNVVMOptions opts;
  setPipelineOptions(opts, "bin", warps, mla);
  mlir::pa::buildPAToGPUKernelsPipeline(pm, opts);
  if (failed(pm.run(*kernels)))
    return failure();
  FailureOr<rt::Manifest> manifest = mlir::pa::manifestFromKernels(
      *kernels, bundleOptions(), &out.shape, &out.prefillShape);
  if (failed(manifest))
    return failure();
  out.manifest = std::move(*manifest);
  FailureOr<std::string> cubin = toBinary(*kernels, "bin", warps);
  auto t1 = std::chrono::steady_clock::now();
  if (failed(cubin))
    return failure();
  FailureOr<std::string> ptx = toBinary(*kernels, "isa", warps);
  if (failed(ptx))
    return failure();
  out.cubin = std::move(*cubin);
  out.ptx = std::move(*ptx);
  out.ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  return success();
}

/// Compiles the prefill_short kernel: @prefill (and, with `split`,
/// @prefill_split) on a fresh module with kShortPrefillWarps, into its own
/// binary files; appends its kernels to `manifest` (prefill as
/// prefill_short, prefill_partial, and merge_segments unless `manifest` has
/// it).
LogicalResult compilePrefillShort(MLIRContext *ctx, rt::Manifest &manifest,
                                  bool split, Compiled &out) {
  OwningOpRef<ModuleOp> program =
      buildProgram(ctx, /*decode=*/false, /*prefill=*/true, split);
  if (failed(verify(*program)) ||
      failed(compileProgram(*program, kShortPrefillWarps, out)))
    return failure();
  llvm::raw_string_ostream os(out.source);
  program->print(os);
  size_t expected = split ? 3 : 1;
  if (out.manifest.kernels.size() != expected ||
      !out.manifest.find(rt::KernelKind::Prefill)) {
    llvm::errs() << "pa-compile: the short prefill program gave "
                 << out.manifest.kernels.size() << " kernels, expected "
                 << expected << " (prefill"
                 << (split ? ", prefill_partial, merge_segments" : "")
                 << ")\n";
    return failure();
  }
  for (rt::KernelSpec k : out.manifest.kernels) {
    if (k.kind == rt::KernelKind::Prefill)
      k.kind = rt::KernelKind::PrefillShort;
    else if (manifest.find(k.kind))
      continue; // merge_segments of the decode kernels
    k.file = "prefill_short.cubin";
    manifest.kernels.push_back(std::move(k));
  }
  return success();
}

/// True when an MLA bundle gets mla_decode_small beside its wgmma
/// mla_decode: --mla-mma auto for --chip sm_90a where auto picks wgmma.
bool wantMLASmall() {
  return wantMLA() && mlir::pa::mmaForChip(mlaMma, chip) == "auto" &&
         mlir::pa::mlaAutoPicksWgmma(mlaHeads, headDim, kpe);
}

/// Compiles the MLA program once more with --mla-mma mma.sync into its own
/// binary files and appends its kernel to `manifest` as mla_decode_small.
LogicalResult compileMLASmall(MLIRContext *ctx, rt::Manifest &manifest,
                              Compiled &out) {
  OwningOpRef<ModuleOp> program = buildMLAProgram(ctx);
  if (failed(verify(*program)) ||
      failed(compileProgram(*program, /*warps=*/0, out, "mma.sync")))
    return failure();
  if (out.manifest.kernels.size() != 1 ||
      !out.manifest.find(rt::KernelKind::MLADecode)) {
    llvm::errs() << "pa-compile: the small MLA program gave "
                 << out.manifest.kernels.size()
                 << " kernels, expected 1 (mla_decode)\n";
    return failure();
  }
  rt::KernelSpec k = out.manifest.kernels.front();
  k.kind = rt::KernelKind::MLADecodeSmall;
  k.file = "mla_small.cubin";
  manifest.kernels.push_back(std::move(k));
  return success();
}

/// --target cpu: the program of the flags (every function, split-KV forms
/// included) into a CPU bundle in --o.
int compileForCPU(MLIRContext *ctx) {
  OwningOpRef<ModuleOp> program =
      wantMLA() ? buildMLAProgram(ctx)
                : buildProgram(ctx, wantDecode(), wantPrefill(),
                               wantPrefill());
  if (failed(verify(*program)))
    return 1;
  if (std::error_code ec = llvm::sys::fs::create_directories(outDir)) {
    llvm::errs() << "pa-compile: cannot create " << outDir << ": "
                 << ec.message() << "\n";
    return 1;
  }
  rt::Manifest configOnly;
  configOnly.config = configFromFlags();
  std::string printed = rt::printManifest(configOnly);
  size_t start = printed.find("config ");
  std::string configLine =
      printed.substr(start, printed.find('\n', start) - start);
  // The options the functions were built with, which a caller must know.
  auto exact = [](double v) { // reads back as the same double
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.17g", v);
    return std::string(buf);
  };
  std::string prefillLine =
      llvm::formatv("options causal {0} window {1} soft_cap {2} sm_scale {3} "
                    "lse_base2 {4}\n",
                    causal ? 1 : 0, window.getValue(), exact(softCap),
                    exact(smScale), lseBase2 ? 1 : 0);
  std::map<std::string, std::string> extra = {
      {"prefill", prefillLine},
      {"prefill_split", prefillLine},
      {"mla_decode", prefillLine},
      {"select_topk", "topk ratio " + exact(topkRatio) + "\n"},
      {"plan_split_kv",
       "plan chunk " + std::to_string(planChunk.getValue()) + "\n"}};
  auto t0 = std::chrono::steady_clock::now();
  if (failed(::pa::compile::emitCPUBundle(*program, configLine, extra, outDir)))
    return 1;
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - t0)
                  .count();
  std::string source;
  llvm::raw_string_ostream os(source);
  program->print(os);
  SmallString<128> path(outDir.getValue());
  llvm::sys::path::append(path, "program.mlir");
  std::error_code ec;
  llvm::raw_fd_ostream file(path, ec);
  if (ec) {
    llvm::errs() << "pa-compile: cannot write " << path << ": "
                 << ec.message() << "\n";
    return 1;
  }
  file << source;
  llvm::outs() << llvm::formatv(
      "pa-compile: {0} (CPU: kernels_cpu.so, {1:F1} ms)\n", outDir.getValue(),
      ms);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "PagedAttn bundle compiler: writes the kernels of one "
          "configuration (--kernels decode: decode and decode_split, or "
          "with --split-kv-merge separate decode_partial and merge_segments; "
          "prefill: prefill and, with the default shape up to "
          "head dim 128, prefill_short; all: both, merge and merge_states "
          "(pa_merge, pa_merge_states, cascades), append_kv, scatter_kv, "
          "kv_deviation, select_topk (CacheBlend), pack_mask and "
          "plan_split_kv) and their "
          "manifest "
          "to a bundle directory\n",
          &llvm::errs()))
    return 2;
  if (!checkFlags())
    return 2;
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  DialectRegistry registry;
  mlir::pa::registerPipelineDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  if (target == "cpu")
    return compileForCPU(&ctx);

  // Split-KV prefill goes with the short shape when there is one.
  bool haveShort = wantPrefillShort();
  bool split = wantPrefill() && prefillSplit;
  OwningOpRef<ModuleOp> program =
      wantMLA() ? buildMLAProgram(&ctx)
                : buildProgram(&ctx, wantDecode(), wantPrefill(),
                               split && !haveShort);
  if (failed(verify(*program)))
    return 1;
  std::string source;
  {
    llvm::raw_string_ostream os(source);
    program->print(os);
  }

  Compiled primary;
  if (failed(compileProgram(*program, /*warps=*/0, primary)))
    return 1;
  rt::Manifest *manifest = &primary.manifest;
  const mlir::pa::KernelABI &shape = primary.shape,
                            &prefillShape = primary.prefillShape;
  // The short-batch prefill shape: a second run of the pipeline.
  Compiled shortPrefill;
  if (haveShort &&
      failed(compilePrefillShort(&ctx, *manifest, split, shortPrefill))) {
    llvm::errs() << "pa-compile: compiling the short prefill kernel "
                    "(prefill_short, --prefill-warps "
                 << kShortPrefillWarps
                 << ") failed; --prefill-variants one skips it\n";
    return 1;
  }

  // The MLA decode for few keys beside the wgmma one: a second run.
  bool haveMLASmall = wantMLASmall();
  Compiled mlaSmall;
  if (haveMLASmall && failed(compileMLASmall(&ctx, *manifest, mlaSmall))) {
    llvm::errs() << "pa-compile: compiling the small MLA kernel "
                    "(mla_decode_small, --mla-mma mma.sync) failed; "
                    "--mla-mma wgmma skips it\n";
    return 1;
  }

  std::vector<std::pair<std::string, std::string>> files = {
      {"program.mlir", source},
      {"kernels.cubin", primary.cubin},
      {"kernels.ptx", primary.ptx}};
  if (haveMLASmall) {
    files.push_back({"mla_small.cubin", mlaSmall.cubin});
    files.push_back({"mla_small.ptx", mlaSmall.ptx});
  }
  if (haveShort) {
    files.push_back({"prefill_short.cubin", shortPrefill.cubin});
    files.push_back({"prefill_short.ptx", shortPrefill.ptx});
    files.push_back({"prefill_short.mlir", shortPrefill.source});
  }
  if (failed(mlir::pa::writeBundle(outDir, *manifest, files))) {
    llvm::errs() << "pa-compile: writing the bundle " << outDir
                 << " failed\n";
    return 1;
  }
  SmallString<128> dir(outDir.getValue());
  auto path = [&](StringRef name) {
    SmallString<128> p = dir;
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  // A second file from an earlier run with the short kernel would be stale.
  if (!haveShort)
    for (StringRef stale :
         {"prefill_short.cubin", "prefill_short.ptx", "prefill_short.mlir"})
      (void)llvm::sys::fs::remove(path(stale));
  if (!haveMLASmall)
    for (StringRef stale : {"mla_small.cubin", "mla_small.ptx"})
      (void)llvm::sys::fs::remove(path(stale));
  auto printShort = [&] {
    if (!haveShort)
      return;
    const mlir::pa::KernelABI &s = shortPrefill.prefillShape;
    llvm::outs() << llvm::formatv(
        "pa-compile: prefill_short tile_q {0}, tile_kv {1}, smem {2} ({3} "
        "bytes cubin, {4:F1} ms to cubin)\n",
        s.tileQ, s.tileKV, s.smem, shortPrefill.cubin.size(),
        shortPrefill.ms);
  };
  if (wantMLA()) {
    const rt::KernelSpec *k = manifest->find(rt::KernelKind::MLADecode);
    llvm::outs() << llvm::formatv(
        "pa-compile: {0} ({1} bytes cubin, {2:F1} ms to cubin; mla_decode "
        "{3} threads, smem {4})\n",
        outDir.getValue(), primary.cubin.size(), primary.ms,
        k ? k->launch.block[0] : 0, k ? k->launch.sharedBytes : 0);
    if (const rt::KernelSpec *sk =
            manifest->find(rt::KernelKind::MLADecodeSmall))
      llvm::outs() << llvm::formatv(
          "pa-compile: mla_decode_small {0} threads, smem {1} ({2} bytes "
          "cubin, {3:F1} ms to cubin)\n",
          sk->launch.block[0], sk->launch.sharedBytes, mlaSmall.cubin.size(),
          mlaSmall.ms);
    return 0;
  }
  if (!wantDecode()) {
    llvm::outs() << llvm::formatv(
        "pa-compile: {0} ({1} bytes cubin, {2:F1} ms to cubin; prefill tile_q "
        "{3}, tile_kv {4}, smem {5})\n",
        outDir.getValue(), primary.cubin.size(), primary.ms, prefillShape.tileQ,
        prefillShape.tileKV, prefillShape.smem);
    printShort();
    return 0;
  }
  if (shape.laneBytes == 0)
    llvm::outs() << llvm::formatv(
        "pa-compile: {0} ({1} bytes cubin, {2:F1} ms to cubin; tensor-core "
        "decode tile_q {3}, tile_kv {4}, kv_warps {5}, smem {6})\n",
        outDir.getValue(), primary.cubin.size(), primary.ms, shape.tileQ,
        shape.tileKV, shape.kvWarps, shape.smem);
  else
    llvm::outs() << llvm::formatv(
        "pa-compile: {0} ({1} bytes cubin, {2:F1} ms to cubin; CUDA-core "
        "decode {3} heads per CTA, {4} bytes/lane, tile_kv {5}, kv_warps {6}, "
        "smem {7})\n",
        outDir.getValue(), primary.cubin.size(), primary.ms, shape.headsPerCTA,
        shape.laneBytes, shape.tileKV, shape.kvWarps, shape.smem);
  if (wantPrefill())
    llvm::outs() << llvm::formatv(
        "pa-compile: prefill tile_q {0}, tile_kv {1}, smem {2}\n",
        prefillShape.tileQ, prefillShape.tileKV, prefillShape.smem);
  printShort();
  return 0;
}
