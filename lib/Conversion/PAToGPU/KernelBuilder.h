//===- KernelBuilder.h - shared pieces of the pa GPU kernels ----*- C++ -*-===//
//
// Private to convert-pa-to-gpu: the emitter of kernel code (special-function
// unit math, fused dots), the kernel module, kernel creation with its
// `pa.kernel` ABI and the host-side launch. PAToGPU.cpp (the pass,
// merge_segments), PrefillToGPU.cpp (the prefill and decode tiling),
// PromoteTiles.cpp, TileToMma.cpp and TileToSimt.cpp (the later stages)
// build on it.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_LIB_CONVERSION_PATOGPU_KERNELBUILDER_H
#define PAGEDATTN_LIB_CONVERSION_PATOGPU_KERNELBUILDER_H

#include "PagedAttn/Conversion/Emitter.h"
#include "PagedAttn/Conversion/KernelABI.h"
#include "PagedAttn/Dialect/PA.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

#include <array>

namespace mlir::pa::gpukernel {

constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;

/// Extra builders for kernel code.
struct KernelEmitter : Emitter {
  /// Inline PTX `text` with `constraints` over `operands`, one result of
  /// each of `types` (several come back through a struct), with side
  /// effects when `sideEffects` (kept in order with the ops around it); no
  /// result for empty `types`.
  SmallVector<Value> inlineAsm(StringRef text, StringRef constraints,
                               TypeRange types, ValueRange operands,
                               bool sideEffects) {
    MLIRContext *ctx = b.getContext();
    SmallVector<Type> result;
    if (types.size() == 1)
      result.push_back(types[0]);
    else if (!types.empty())
      result.push_back(LLVM::LLVMStructType::getLiteral(
          ctx, SmallVector<Type>(types.begin(), types.end())));
    auto op = LLVM::InlineAsmOp::create(
        b, loc, result, operands, StringAttr::get(ctx, text),
        StringAttr::get(ctx, constraints),
        sideEffects ? UnitAttr::get(ctx) : UnitAttr(),
        /*is_align_stack=*/UnitAttr(),
        LLVM::TailCallKindAttr::get(ctx, LLVM::TailCallKind::None),
        LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
        /*operand_attrs=*/ArrayAttr());
    if (types.empty())
      return {};
    Value r = op.getResult(0);
    if (types.size() == 1)
      return {r};
    SmallVector<Value> out;
    for (int64_t i = 0, n = types.size(); i < n; ++i)
      out.push_back(LLVM::ExtractValueOp::create(b, loc, r, i));
    return out;
  }
  /// f32 -> f32 through one PTX instruction `text` ($0 = $1 op).
  Value inlinePtx(StringRef text, Value x) {
    return inlineAsm(text, "=f,f", b.getF32Type(), x, /*sideEffects=*/false)
        .front();
  }
  /// 2^x with the special-function unit (ex2.approx; ex2(-inf) = 0).
  Value ex2(Value x) { return inlinePtx("ex2.approx.ftz.f32 $0, $1;", x); }
  /// log2(x) (lg2.approx).
  Value lg2(Value x) { return inlinePtx("lg2.approx.ftz.f32 $0, $1;", x); }
  /// tanh(x) = 1 - 2 / (2^(2 x log2 e) + 1).
  Value tanh(Value x) {
    Value e2 = ex2(mul(x, f32(2.0 * kLog2e)));
    return sub(f32(1), divf(f32(2), add(e2, f32(1))));
  }
  Value splat(Value x, VectorType t) {
    return vector::BroadcastOp::create(b, loc, t, x);
  }
  /// <x, y> over `n` lanes of two f32 vectors as a chain of fused
  /// multiply-adds (fma.rn.f32; a mul + add pair would not fuse). The kernels
  /// use llvm.intr.fma, not math.fma: convert-gpu-to-nvvm turns the latter
  /// into a libdevice call (__nv_fmaf) that ptxas cannot resolve unless
  /// libdevice is found and linked.
  Value dot(Value x, Value y, int64_t n) {
    Value acc;
    for (int64_t i = 0; i < n; ++i) {
      Value xi = vector::ExtractOp::create(b, loc, x, i);
      Value yi = vector::ExtractOp::create(b, loc, y, i);
      acc = acc ? LLVM::FMAOp::create(b, loc, xi, yi, acc).getResult()
                : mul(xi, yi);
    }
    return acc;
  }
  /// sum_{i < upto} term(i) (index) in every thread of a CTA of `threads`
  /// threads (thread id `tid`): thread 0 zeroes the workgroup i32
  /// `counter`, each thread adds its strided share atomically, barriers on
  /// both sides. The O(B) prefix of the CTA-per-segment kernels
  /// (pa.pack_mask, pa.plan_split_kv).
  Value ctaSumBefore(Value counter, Value tid, Value upto, int64_t threads,
                     function_ref<Value(Value)> term) {
    ifThen(cmpi(arith::CmpIPredicate::eq, tid, idx(0)),
           [&]() { store(i32(0), counter, {idx(0)}); });
    gpu::BarrierOp::create(b, loc);
    Value mine = forLoop(tid, upto, idx(threads), {idx(0)},
                         [&](Value i, ValueRange r) -> SmallVector<Value> {
                           return {add(r[0], term(i))};
                         })
                     .getResult(0);
    memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi,
                                toI32(mine), counter, ValueRange{idx(0)});
    gpu::BarrierOp::create(b, loc);
    return toIndex(load(counter, {idx(0)}));
  }
};

/// The register-level pieces of the tensor-core kernels (TileToMma.cpp,
/// MLAToGPU.cpp): mma.sync m16n8k16 fragments with f32 accumulators and
/// `elemType` (f16 / bf16) operands.
struct MmaFragments {
  KernelEmitter &em;
  Type elemType;

  /// C / D: 2x2 f32 (rows lane / 4 and lane / 4 + 8, columns 2 (lane % 4)
  /// + {0, 1}); A: 4x2 elements; B: 2x2 elements.
  VectorType fragC() const {
    return VectorType::get({2, 2}, em.b.getF32Type());
  }
  VectorType fragA() const { return VectorType::get({4, 2}, elemType); }
  VectorType fragB() const { return VectorType::get({2, 2}, elemType); }
  Value zeroC() {
    return arith::ConstantOp::create(
        em.b, em.loc,
        DenseElementsAttr::get(fragC(), em.b.getF32FloatAttr(0)));
  }
  /// ldmatrix x4 at base[row][col] (workgroup memory): an A fragment, or
  /// (split by half()) two B fragments.
  Value ldmatrix(Value base, Value row, Value col, bool transpose) {
    return nvgpu::LdMatrixOp::create(em.b, em.loc, fragA(), base,
                                     ValueRange{row, col}, transpose, 4);
  }
  /// Rows [r, r + 2) of a 4x2 fragment as a 2x2 B fragment.
  Value half(Value frag, int64_t r) {
    Value v = ub::PoisonOp::create(em.b, em.loc, fragB());
    for (int64_t i = 0; i < 2; ++i)
      v = vector::InsertOp::create(
          em.b, em.loc, vector::ExtractOp::create(em.b, em.loc, frag, r + i),
          v, i);
    return v;
  }
  Value mma(Value a, Value bf, Value acc) {
    return nvgpu::MmaSyncOp::create(em.b, em.loc, a, bf, acc,
                                    ArrayRef<int64_t>{16, 8, 16});
  }
  /// A 2-D fragment from its elements in row-major order, built row by row
  /// (the LLVM lowering of vectors handles 1-D rows inserted into n-D
  /// arrays, not n-D vector.from_elements).
  Value fragment(VectorType t, ArrayRef<Value> elems) {
    int64_t cols = t.getDimSize(1);
    VectorType rowT = VectorType::get({cols}, t.getElementType());
    Value v = ub::PoisonOp::create(em.b, em.loc, t);
    for (int64_t r = 0; r < t.getDimSize(0); ++r) {
      Value row = vector::FromElementsOp::create(
          em.b, em.loc, rowT, elems.slice(r * cols, cols));
      v = vector::InsertOp::create(em.b, em.loc, row, v, r);
    }
    return v;
  }
  Value elem(Value v, int64_t h, int64_t i) {
    return vector::ExtractOp::create(em.b, em.loc, v,
                                     ArrayRef<int64_t>{h, i});
  }
  /// Max or sum over the 4 lanes of a quad (the threads of a C row).
  Value quadReduce(Value x, bool isMax) {
    return gpu::SubgroupReduceOp::create(
        em.b, em.loc, x,
        isMax ? gpu::AllReduceOperation::MAXIMUMF
              : gpu::AllReduceOperation::ADD,
        /*uniform=*/false, /*cluster_size=*/4u);
  }
};

/// pa-promote-tiles' XOR swizzle (docs/GPU.md, Stage 2): a kernel with this
/// unit attribute holds its shared tiles of Q's element type unpadded,
/// 16-byte chunk c of shared row r at chunk c ^ (r % 8) of that row (rows
/// of a multiple of 128 bytes). The 8 rows an ldmatrix reads then fall into
/// distinct banks while every row starts on a 128-byte line, as in global
/// memory (16-byte padding shifts half of the rows off their 32-byte
/// sectors, 32-byte padding gives 2-way conflicts).
inline constexpr llvm::StringLiteral kSmemSwizzleAttr = "pa.smem_swizzle";

/// What a swizzled tile XORs into the columns of shared row `row`, of
/// `chunkElems` elements per 16-byte chunk: (row % 8) * chunkElems.
inline Value swizzleMask(Emitter &e, Value row, int64_t chunkElems) {
  return e.mul(e.andi(row, e.idx(7)), e.idx(chunkElems));
}

/// Where element `col` of shared row `row` lies in a swizzled tile of
/// `chunkElems` elements per 16-byte chunk (col ^ swizzleMask; the
/// element's place within its chunk is kept).
inline Value swizzleCol(Emitter &e, Value row, Value col,
                        int64_t chunkElems) {
  return arith::XOrIOp::create(e.b, e.loc, col,
                               swizzleMask(e, row, chunkElems));
}

/// A prefill kernel whose tile matmuls are Hopper warpgroup MMAs
/// (wgmma.mma_async, sm_90a; convert-pa-to-gpu's prefill-mma=wgmma): Q, K
/// and V are read from shared memory through wgmma matrix descriptors, so
/// pa-promote-tiles stores each [n][D] tile in the canonical 128-byte
/// swizzle layout those describe (wgmmaIndex) and pa-tile-to-mma emits
/// wgmma rather than ldmatrix / mma.sync.
inline constexpr llvm::StringLiteral kWgmmaAttr = "pa.wgmma";

/// A decode kernel whose tile math runs on CUDA cores (convert-pa-to-gpu's
/// decode-kernel=cuda-core, and auto's choice for MHA, small groups, f32 and
/// groups above 32): pa-tile-to-simt lowers its tile ops to lane groups that
/// read K / V rows from shared memory, 16 or 32 bytes a lane, with
/// shuffle-reduced dot products; pa-tile-to-mma leaves it alone.
inline constexpr llvm::StringLiteral kSimtAttr = "pa.simt";

/// Where element (row, col) of the [rows][D] tile that starts at shared row
/// `row0` lies in shared memory of [..][D] rows in a kWgmmaAttr kernel: the
/// tile is D / 64 column blocks of [rows][64], one after the other, each
/// row of a block one 128-byte line with its 16-byte chunk c at c ^ (row %
/// 8) (row0 % 8 == 0). At tile offset (col / 64) * rows * 64 + row * 64 +
/// ((col % 64) ^ (row % 8) * 8) elements, so that the 8 rows of a core
/// matrix are 1024 contiguous bytes (a descriptor's stride byte offset) and
/// the column blocks `rows` * 128 bytes apart (its leading byte offset).
inline std::pair<Value, Value> wgmmaIndex(Emitter &e, int64_t row0,
                                          int64_t rows, int64_t headDim,
                                          Value row, Value col) {
  Value inBlock = arith::XOrIOp::create(e.b, e.loc, e.remui(col, e.idx(64)),
                                        swizzleMask(e, row, 8));
  Value line = e.add(e.mul(e.divui(col, e.idx(64)), e.idx(rows)), row);
  int64_t linesPerRow = headDim / 64;
  return {e.add(e.idx(row0), e.divui(line, e.idx(linesPerRow))),
          e.add(e.mul(e.remui(line, e.idx(linesPerRow)), e.idx(64)),
                inBlock)};
}

/// Hopper's warpgroup MMAs (wgmma.mma_async, sm_90a) with f32 accumulators
/// over `elemType` (f16 / bf16) operands in wgmma's 128-byte swizzle layout
/// (wgmmaIndex): pa-tile-to-mma's kWgmmaAttr kernels and the MLA decode's
/// wgmma kernel (MLAWgmma.cpp). Wgmma.cpp.
struct WgmmaOps {
  KernelEmitter &em;
  Type elemType;

  /// The shared-memory address of `memref`'s first element (i64).
  Value address(Value memref);
  /// A matrix descriptor of a swizzled operand at shared address `addr`:
  /// stride byte offset 1024 (8 rows of 128 bytes), `leadingBytes` the
  /// leading byte offset (K-major operands ignore it: 16 by convention;
  /// MN-major ones: the distance between 64-column blocks).
  Value descriptor(Value addr, int64_t leadingBytes);
  /// `desc` advanced by `bytes` (a multiple of 16).
  Value advance(Value desc, int64_t bytes);
  /// The values of `vs` passed through an empty asm statement with side
  /// effects, so that the compiler moves neither their definitions nor
  /// their uses across the wgmma fence / wait it sits beside (CUTLASS's
  /// warpgroup_fence_operand).
  SmallVector<Value> fenceOperands(ArrayRef<Value> vs);
  /// wgmma.mma_async m64n`n`k16: D = A B + `acc` (empty `acc`: D = A B), A
  /// from the descriptor `aDesc` or, when that is null, from the four
  /// registers `aRegs` (an m16n8k16 A fragment per warp); B from `bDesc`
  /// (transposed: MN-major). Returns the n / 2 accumulators of the thread:
  /// registers 4 j .. 4 j + 3 are the m16n8 C fragment of n8 tile j of the
  /// warp's 16 rows.
  SmallVector<Value> mmaAsync(int64_t n, ArrayRef<Value> acc, Value aDesc,
                              ArrayRef<Value> aRegs, Value bDesc,
                              bool transB);
  /// wgmma.fence (before the first MMA of a group reads registers written
  /// since), and commit_group + wait_group `pending`.
  void fence();
  void commit();
  void wait(int64_t pending);
  void commitAndWait(int64_t pending) {
    commit();
    wait(pending);
  }
  /// fence.proxy.async for shared memory: makes this thread's generic-proxy
  /// writes (cp.async landed, st.shared) visible to wgmma's async proxy.
  void fenceProxyAsync();
};

/// True for a memref with the identity layout (what the kernels index).
inline bool isIdentityMemRef(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  return m && m.getLayout().isIdentity();
}

/// Returns (or creates) `gpu.module @pa_kernels` in `module`.
gpu::GPUModuleOp getKernelModule(ModuleOp module);

/// A kernel `name` taking `op`'s operands and then `extra`'s, with workgroup
/// buffers `smem` and the ABI attribute `abi`; `mapping` maps them to the
/// kernel's arguments.
gpu::GPUFuncOp createKernel(gpu::GPUModuleOp kmod, Operation *op,
                            StringRef name, TypeRange smem,
                            const KernelABI &abi, IRMapping &mapping,
                            ValueRange extra = {});

/// Replaces `op` by a launch of `func` over `grid` CTAs of `threads`, with
/// `dynamicSmem` bytes of dynamic shared memory, passing `op`'s operands
/// and then `extra`.
void launch(OpBuilder &b, Operation *op, gpu::GPUFuncOp func,
            std::array<Value, 3> grid, int64_t threads,
            int64_t dynamicSmem = 0, ValueRange extra = {});

/// Records `bytes` of dynamic shared memory in the ABI of `func` (which
/// must carry one) and in its launches.
void setSharedMemory(gpu::GPUFuncOp func, int64_t bytes);

/// The runtime role of each operand of `op`, in order (the kernel's
/// arguments; docs/Runtime.md spells them).
SmallVector<std::string> argRoles(Operation *op);

/// The kernel of a CTA-per-segment op (pa.pack_mask, pa.plan_split_kv):
/// checks that the operands are identity-layout memrefs and `threads` a
/// positive multiple of 32 (errors at the op), and creates kernel `name`
/// of ABI kind `kind` over grid (batch, 1, 1) x (threads, 1, 1) with one
/// workgroup i32, the counter of KernelEmitter::ctaSumBefore (the kernel's
/// first workgroup attribution).
FailureOr<gpu::GPUFuncOp> createSegmentKernel(Operation *op,
                                              gpu::GPUModuleOp kmod,
                                              StringRef name, StringRef kind,
                                              int64_t threads,
                                              IRMapping &mapping);

/// The tensor-core instructions of a prefill kernel (prefill-mma): mma.sync,
/// wgmma, or wgmma where the op fits it (prefillFitsWgmma), else mma.sync.
enum class PrefillMma { Sync, Wgmma, Auto };

/// The tile kernel shape asked for by the pass options (0: default): for a
/// prefill the prefill-* options, for the tensor-core decode its KV tile
/// and K/V stages (decode-tile-kv, decode-kv-stages).
struct PrefillShape {
  int64_t warps = 0, tileKV = 0, warpRows = 0, kvWarps = 0, kvStages = 0;
  PrefillMma mma = PrefillMma::Sync;
  /// The CUDA-core decode (kSimtAttr): its CTA threads, bytes of a K / V
  /// row per lane and query heads per CTA (0: tuned).
  bool simt = false;
  int64_t threads = 0, laneBytes = 0, headsPerCTA = 0;
};

/// Checks that convert-pa-to-gpu can build the tile kernel of `op` (a
/// pa.prefill or pa.prefill_partial, or a pa.decode / pa.decode_partial
/// with the tensor-core decode; an error at the op naming what it cannot
/// handle otherwise), before any IR changes.
LogicalResult checkTileKernel(Operation *op, const PrefillShape &shape);

/// Builds the kernel of `op` (as checkTileKernel; named `name`, in `kmod`)
/// over tile ops, the first stage of the tile pipeline, and replaces `op` by
/// its launch (PrefillToGPU.cpp). A decode_partial with `merge`
/// (fusableMerge) becomes the fused decode_split kernel, and `merge` goes.
LogicalResult buildTileKernel(Operation *op, gpu::GPUModuleOp kmod,
                              StringRef name, const PrefillShape &shape,
                              MergeSegmentsOp merge = {});

/// Builds the kernel of a pa.append_kv_slots (CTA per new row, `threads`
/// threads over its 16-byte vectors; CacheToGPU.cpp) and replaces `op` by
/// its launch.
LogicalResult buildAppendKVSlots(AppendKVSlotsOp op, gpu::GPUModuleOp kmod,
                                 StringRef name, int64_t threads);

/// CacheToGPU.cpp: a memref-form pa.append_kv (page-table append) or
/// pa.scatter_kv becomes the kernel `name` (a CTA per row, the row's request
/// found by binary search over its indptr), launched in its place.
LogicalResult buildAppendKV(AppendKVOp op, gpu::GPUModuleOp kmod,
                            StringRef name, int64_t threads);
LogicalResult buildScatterKV(ScatterKVOp op, gpu::GPUModuleOp kmod,
                             StringRef name, int64_t threads);
/// CacheBlendToGPU.cpp: pa.kv_deviation (a warp per token, 4 a CTA) and
/// pa.select_topk (a CTA per request) become the kernel `name`.
LogicalResult buildKVDeviation(KVDeviationOp op, gpu::GPUModuleOp kmod,
                               StringRef name);
LogicalResult buildSelectTopK(SelectTopKOp op, gpu::GPUModuleOp kmod,
                              StringRef name);

/// MaskToGPU.cpp: a memref-form pa.pack_mask becomes the kernel `name` (a
/// CTA per segment), launched in its place.
LogicalResult buildPackMask(PackMaskOp op, gpu::GPUModuleOp kmod,
                            StringRef name, int64_t threads);

/// PlanToGPU.cpp: a memref-form pa.plan_split_kv becomes the kernel `name`
/// (a CTA per request writing its fixed-chunk work items), launched in its
/// place.
LogicalResult buildPlanSplitKV(PlanSplitKVOp op, gpu::GPUModuleOp kmod,
                               StringRef name, int64_t threads);

/// MergeToGPU.cpp: a memref-form pa.merge becomes the kernel `name` (ABI
/// kind `merge`, a CTA per row of lse[R, H], other ranks reshaped to it
/// first), launched in its place.
LogicalResult buildMerge(MergeOp op, gpu::GPUModuleOp kmod, StringRef name,
                         int64_t threads);
/// MergeToGPU.cpp: a memref-form pa.merge_states becomes the kernel `name`
/// (ABI kind `merge_states`, a CTA per row s of o_states[S, N, H, D]).
LogicalResult buildMergeStates(MergeStatesOp op, gpu::GPUModuleOp kmod,
                               StringRef name, int64_t threads);

/// convert-pa-to-gpu's options of the MLA decode kernel: m16 row blocks per
/// CTA (`mla-row-blocks`, 0: the default) of which each warp takes
/// `warpBlocks` (`mla-warp-blocks`, 0: 1), for the mma.sync kernel; `mma`
/// (`mla-mma`): mma.sync, wgmma (MLAWgmma.cpp) or auto (wgmma from 64
/// heads where the shape fits it); `consumerSync` (`mla-consumer-sync`):
/// the wgmma kernel's consumer waits at its named barriers.
struct MLAKernelOptions {
  int64_t rowBlocks = 0, warpBlocks = 0;
  std::string mma = "mma.sync";
  bool consumerSync = false;
};
/// Whether buildMLADecode can build a kernel for a memref-form
/// pa.mla_decode with `opts`, an error at the op otherwise, before any IR
/// changes.
LogicalResult checkMLAKernel(MLADecodeOp op, const MLAKernelOptions &opts);
/// MLAToGPU.cpp: a memref-form pa.mla_decode becomes the tensor-core kernel
/// `name` (ABI kind `mla_decode`, a CTA per request and block of query
/// heads), launched in its place.
LogicalResult buildMLADecode(MLADecodeOp op, gpu::GPUModuleOp kmod,
                             StringRef name, const MLAKernelOptions &opts);
//===----------------------------------------------------------------------===//
// Split-KV decode in one launch (SplitKVMerge.cpp)
//===----------------------------------------------------------------------===//

/// The merge_segments right after `op` that merges its partial states over
/// its own work_indptr (with the same lse base), with nothing between them
/// that touches memory; null if there is none.
MergeSegmentsOp fusableMerge(DecodePartialOp op);

/// The fused kernel's extra arguments on the host, created at `b`: the
/// merge's o and lse and the arrival counters ([B, Hq] i32, gpu.alloc and
/// gpu.memset to 0).
SmallVector<Value> fusedMergeOperands(OpBuilder &b, MergeSegmentsOp merge);

/// The roles of the fused kernel's arguments: `op`'s, then o, lse,
/// merge_counters.
SmallVector<std::string> fusedArgRoles(DecodePartialOp op);

/// After the fused launch: frees the counters (where `merge` was) and erases
/// `merge`.
void finishFusedLaunch(MergeSegmentsOp merge, Value counters);

/// The merge fused into a decode_partial kernel, mapped into the kernel.
struct FusedMerge {
  Value oPart, lsePart, workIndptr, workRequest, o, lse, counters;
  bool lseBase2 = false;
};

/// The fused merge's operands inside the kernel: `op`'s partial states and
/// work list, and `extra` (fusedMergeOperands), mapped by `m`.
FusedMerge mapFusedMerge(DecodePartialOp op, ValueRange extra,
                         const IRMapping &m);

/// The query heads a CTA computes: [first, first + count), of which only
/// the first `valid` (an index; null: all) exist (a partial head chunk).
struct CTAHeads {
  Value first;
  int64_t count = 0;
  Value valid;
};

/// After the CTA of work item `item` of `request` wrote its partial rows
/// for `heads`: counts its arrival, and the last CTA of the request merges
/// the request's rows into o / lse (SplitKVMerge.cpp describes the
/// protocol). With `togetherFlag` > 0 (kMergeTogetherFlag) a counter at
/// that value at launch asks for the merge together instead: every CTA of
/// the request merges a share of the output, a group of lanes a slot.
/// Every thread of the CTA must reach it.
void emitArriveAndMerge(KernelEmitter &e, const FusedMerge &m, Value request,
                        const CTAHeads &heads, int64_t headDim,
                        int64_t threads, Value item = Value(),
                        int64_t togetherFlag = 0);

/// What a CTA's arrival tells every thread of it (i1 values, the same in
/// every thread): `last`, it arrived last and merges the rows alone;
/// `together`, every CTA of the request arrived and each merges a share.
struct Arrival {
  Value together, last;
  /// Thread 0 of a CTA that merges together: the counter its second
  /// arrival saw (emitArrivalRelease); 0 elsewhere.
  Value left;
};
/// The arrival of a CTA of `request` that wrote its partial rows for
/// `heads`, one of `items` (an index) CTAs of the request (SplitKVMerge.cpp
/// describes the protocol; with `fenced` the caller has already fenced and
/// barriered after its partial stores). With `togetherFlag` > 0 a counter
/// that starts at that value (above any count of arrivals) asks for the
/// merge together: thread 0 waits until the request's `items` arrivals are
/// in (every CTA resident: a cooperative launch; after
/// kMergeTogetherMaxWaitNs it traps); else `together` is false. Every
/// thread of the CTA must reach it.
Arrival emitArrival(KernelEmitter &e, const FusedMerge &m, Value request,
                    Value items, const CTAHeads &heads, bool fenced,
                    int64_t togetherFlag = 0);
/// After the merge of a CTA whose arrival `a` (emitArrival with the same
/// `togetherFlag`) merged together: the request's last CTA to leave (its
/// second arrival, made when it stopped polling, saw 2 items - 1 others)
/// puts the counter back to the flag for the next launch. Nothing when
/// togetherFlag <= 0.
void emitArrivalRelease(KernelEmitter &e, const FusedMerge &m, Value request,
                        Value items, const CTAHeads &heads, const Arrival &a,
                        int64_t togetherFlag);
/// The arrival counter's value at launch that selects the merge together
/// (ABI `merge_together`; emitArrival's together flag): every CTA of the
/// grid is resident (a cooperative launch), each waits for its request's
/// splits and merges a share of them; the kernel leaves the counter at this
/// value for the next launch. 0 at launch: the last CTA of a request merges
/// them alone (and leaves it at 0). Above any count of arrivals, which stay
/// below 2^30.
constexpr int64_t kMergeTogetherFlag = int64_t(1) << 30;
/// The merge together's longest wait for a request's CTAs before it gives
/// up and traps (ns of %globaltimer): far past any launch's time, and past
/// what compute-sanitizer's racecheck needs (a bound of 2^22 polls, about
/// 3 s unsupervised, trapped under it on 2026-11-27).
constexpr int64_t kMergeTogetherMaxWaitNs = int64_t(60) * 1000 * 1000 * 1000;
/// emitArriveAndMerge for a CTA whose request's partial rows are [begin,
/// end) of m.oPart / m.lsePart (m.workIndptr unused); with `fenced` the
/// caller has already fenced and barriered after its partial stores.
void emitArriveAndMergeRows(KernelEmitter &e, const FusedMerge &m,
                            Value request, Value begin, Value end,
                            const CTAHeads &heads, int64_t headDim,
                            int64_t threads, bool fenced = false);
/// Writes o = 0, lse = -inf for `heads` of the requests without work items
/// that CTA `x` answers for (those just before its item's request; for the
/// last item those after it; every request for CTA 0 of an empty list).
/// `items` = work_indptr[B], `request` / `prev` = work_request[x] /
/// work_request[max(x - 1, 0)] (read only where x < items): the caller
/// loads them where the kernel starts, so that no dependent load is left
/// on its tail.
void emitEmptyRequests(KernelEmitter &e, const FusedMerge &m, Value x,
                       Value items, Value request, Value prev,
                       const CTAHeads &heads, int64_t headDim, int64_t threads);

/// A split-KV merge's unnormalized state over the rows folded so far, in
/// base 2: the largest lse `m` (-inf: none), `w` = sum_i 2^(lse_i - m') and
/// `acc` = sum_i 2^(lse_i - m') o_i with m' = safeShift(m) (f32 or a vector
/// of f32; null: the statistics alone). The merged o is acc / w and the
/// lse m' + log2 w, o = 0 and lse = -inf where w = 0 (no row, or all
/// empty).
struct MergeState {
  Value m, w, acc;
};
/// `x` with -inf as 0: the shift that keeps every weight finite.
Value safeShift(KernelEmitter &e, Value x);
/// The lse of a state of total weight `w` relative to `shift` (both base
/// 2): shift + log2 w, in base e (x ln 2) unless `lseBase2`; -inf where w
/// is not positive (no row or visible key, or all empty). A merged split-KV
/// state's, and a kernel's final row's (shift: the row's maximum).
Value mergedLse(KernelEmitter &e, Value shift, Value w, bool lseBase2);
/// The output scale of a state of total weight `w`: `num` / w (1 / w
/// without `num`), 0 where w is not positive.
Value invOrZero(KernelEmitter &e, Value w, Value num = Value());
/// Folds rows into `st`: row j's base-2 lse `lse2[j]` and (with st.acc) its
/// o `o[j]`, counted where `in[j]` and its weight is positive (an empty
/// split's lse is -inf; a row of weight 0 never reaches acc, whatever its
/// o). One step of a merge: every row's loads are issued before this.
MergeState foldRows(KernelEmitter &e, MergeState st, ArrayRef<Value> lse2,
                    ArrayRef<Value> o, ArrayRef<Value> in);
/// A loop over rows [0, count) in steps of `rowsPerStep` rows `spread`
/// apart, starting at `first`: `body(rows, in, carried)` gets the step's
/// row indices (clamped to count - 1, so that their loads stay in bounds)
/// and whether each is one of the count; `init` / the results are the
/// loop's carried values. The split-KV merges issue a step's loads
/// together: a merge of a few rows is one L2 round trip rather than one a
/// row.
SmallVector<Value>
forRowSteps(KernelEmitter &e, Value count, Value first, Value spread,
            int64_t rowsPerStep, ValueRange init,
            function_ref<SmallVector<Value>(ArrayRef<Value>, ArrayRef<Value>,
                                            ValueRange)>
                body);

} // namespace mlir::pa::gpukernel

#endif // PAGEDATTN_LIB_CONVERSION_PATOGPU_KERNELBUILDER_H
