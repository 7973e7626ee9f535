//===- PAToGPU.cpp - convert-pa-to-gpu: pa ops to GPU kernels -------------===//
//
// The pass itself: which kernel each pa op becomes, checked before any IR
// changes, and the pieces of the attention kernels' host side (kernel
// module, creation with its ABI, launch). The kernels are built by their
// own files: the decode and prefill attention kernels as tile IR
// (PrefillToGPU.cpp; pa-promote-tiles and pa-tile-to-mma /
// pa-tile-to-simt finish them), merge_segments here, the others in
// CacheToGPU.cpp, MergeToGPU.cpp, MLAToGPU.cpp, CacheBlendToGPU.cpp,
// MaskToGPU.cpp and PlanToGPU.cpp.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/KernelABI.h"
#include "PagedAttn/Conversion/PagedAttention.h"
#include "PagedAttn/Conversion/PrefillTiling.h"
#include "PagedAttn/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace mlir::pa {
#define GEN_PASS_DEF_CONVERTPATOGPU
#include "PagedAttn/Conversion/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

namespace {

/// merge_segments: a CTA per (segment, head); threads walk the head dim.
LogicalResult tileMergeSegments(MergeSegmentsOp op, gpu::GPUModuleOp kmod,
                                StringRef name, int64_t threads) {
  for (Value v : op->getOperands())
    if (!isIdentityMemRef(v.getType()))
      return op.emitOpError()
             << "convert-pa-to-gpu expects identity-layout memrefs";
  KernelABI abi;
  abi.kind = "merge_segments";
  abi.args = argRoles(op);
  abi.grid = {GridExtentABI{"batch"}, GridExtentABI{"num_q_heads"},
              GridExtentABI{"", 1}};
  abi.block = {threads, 1, 1};
  IRMapping m;
  gpu::GPUFuncOp func = createKernel(kmod, op, name, TypeRange{}, abi, m);
  Value op_ = m.lookup(op.getOPart()), lp = m.lookup(op.getLsePart());
  Value seg = m.lookup(op.getSegments());
  Value o = m.lookup(op.getOuts()[0]), lse = m.lookup(op.getOuts()[1]);
  bool base2 = op.getLseBase2();
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, op.getLoc()}};
    Location loc = op.getLoc();
    Type oElem = cast<MemRefType>(o.getType()).getElementType();
    Value s = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value begin = e.loadIdx(seg, s);
    Value end = e.loadIdx(seg, e.add(s, e.idx(1)));
    Value h = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
    Value dims = e.dim(o, 2);
    Value toLog2 = e.f32(base2 ? 1.0 : kLog2e);
    scf::ForOp::create(
        b, loc, tid, dims, e.idx(threads), ValueRange{},
        [&](OpBuilder &, Location, Value d, ValueRange) {
          auto ex2 = [&](Value x) { return e.ex2(x); };
          auto lg2 = [&](Value x) { return e.lg2(x); };
          auto lseOf = [&](Value i) {
            return e.mul(e.load(lp, {i, h}), toLog2);
          };
          auto oOf = [&](Value i, Value dd) {
            return e.toF32(e.load(op_, {i, h, dd}));
          };
          StateMerge merge(e, ExpBase{/*base2=*/true, ex2, lg2},
                           StateSet{begin, end, lseOf, /*l=*/nullptr, oOf});
          e.store(e.fromF32(merge.element(d), oElem), o, {s, h, d});
          e.ifThen(e.cmpi(arith::CmpIPredicate::eq, d, e.idx(0)), [&]() {
            e.store(merge.lse(base2), lse, {s, h});
          });
          scf::YieldOp::create(b, loc);
        });
    gpu::ReturnOp::create(b, loc);
  }
  OpBuilder b(op);
  Value segs = memref::DimOp::create(b, op.getLoc(), op.getOuts()[0], 0);
  Value heads = memref::DimOp::create(b, op.getLoc(), op.getOuts()[0], 1);
  Value one = arith::ConstantIndexOp::create(b, op.getLoc(), 1);
  launch(b, op, func, {segs, heads, one}, threads);
  return success();
}

/// The `decode-kernel=auto` rule: the tensor-core decode for f16 / bf16
/// data with a head dim that is a multiple of 16 up to 256 and a GQA group
/// of 4 to 32 heads (on an H200, 2026-11-24, D = 128: 1.4-3.8x faster than
/// the CUDA-core kernel at groups 8 and 16, from 14% faster to 1% slower at
/// group 4, 5-10% slower for MHA: docs/PERFORMANCE.md), or of any group
/// whose head dim the CUDA-core kernel cannot split into a power of two of
/// 16-byte lanes (80, 96, 112, 192, ...), or over an fp8 cache (which only
/// the tensor-core decode reads).
bool autoTensorCoreDecode(Operation *op) {
  auto a = cast<AttentionOpInterface>(op);
  auto qt = cast<ShapedType>(a.getQ().getType());
  Type elem = qt.getElementType();
  int64_t d = a.getCache().getHeadDim();
  if ((!elem.isF16() && !elem.isBF16()) || d % 16 != 0 || d > 256 ||
      qt.isDynamicDim(1))
    return false;
  int64_t group = qt.getDimSize(1) / a.getCache().getNumKVHeads();
  bool laneFit = llvm::isPowerOf2_64(d / 8) && d / 8 <= 32;
  bool fp8 = isFP8CacheType(
      cast<ShapedType>(a.getKvCache()[0].getType()).getElementType());
  return group <= 32 && (group >= 4 || !laneFit || fp8);
}

struct ConvertPAToGPU final : pa::impl::ConvertPAToGPUBase<ConvertPAToGPU> {
  using Base::Base;

  PrefillShape prefillShape() const {
    PrefillMma mma = prefillMma == "wgmma"  ? PrefillMma::Wgmma
                     : prefillMma == "auto" ? PrefillMma::Auto
                                            : PrefillMma::Sync;
    return PrefillShape{prefillWarps,   prefillTileKV, prefillWarpRows,
                        prefillKVWarps, 0,             mma};
  }
  MLAKernelOptions mlaOptions() const {
    return MLAKernelOptions{mlaRowBlocks, mlaWarpBlocks, mlaMma,
                            mlaConsumerSync};
  }
  /// Whether a decode op gets the tensor-core kernel: asked for, or with
  /// `auto` (the default) where it is measured to win or the only one that
  /// can (autoTensorCoreDecode).
  bool tensorCoreDecode(Operation *op) const {
    return decodeKernel == "tensor-core" ||
           (decodeKernel == "auto" && autoTensorCoreDecode(op));
  }
  /// The shape of `op`'s tile kernel, if it has one.
  std::optional<PrefillShape> tileShape(Operation *op) const {
    if (isa<PrefillOp, PrefillPartialOp>(op))
      return prefillShape();
    if (!isa<DecodeOp, DecodePartialOp>(op))
      return std::nullopt;
    PrefillShape s{0, decodeTileKV, 0, 0, decodeKVStages};
    if (!tensorCoreDecode(op)) {
      s.simt = true;
      s.threads = ctaThreads;
      s.laneBytes = laneBytes;
      s.headsPerCTA = headsPerCTA;
    }
    return s;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Preconditions, before any IR changes: every pa op is one this pass
    // lowers, in the memref form.
    if (decodeKernel != "cuda-core" && decodeKernel != "tensor-core" &&
        decodeKernel != "auto") {
      module.emitError() << "convert-pa-to-gpu: decode-kernel must be "
                            "auto, cuda-core or tensor-core, got '"
                         << decodeKernel << "'";
      return signalPassFailure();
    }
    if (prefillMma != "mma.sync" && prefillMma != "wgmma" &&
        prefillMma != "auto") {
      module.emitError() << "convert-pa-to-gpu: prefill-mma must be mma.sync, "
                            "wgmma or auto, got '"
                         << prefillMma << "'";
      return signalPassFailure();
    }
    if (splitKVMerge != "fused" && splitKVMerge != "separate") {
      module.emitError() << "convert-pa-to-gpu: split-kv-merge must be "
                            "fused or separate, got '"
                         << splitKVMerge << "'";
      return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    WalkResult walk = module.walk([&](Operation *op) {
      if (!isa_and_present<PADialect>(op->getDialect()))
        return WalkResult::advance();
      if (!isa<DecodeOp, DecodePartialOp, MergeSegmentsOp, PrefillOp,
               PrefillPartialOp, AppendKVSlotsOp, AppendKVOp, ScatterKVOp,
               MergeOp, MergeStatesOp, KVDeviationOp, SelectTopKOp,
               PackMaskOp, PlanSplitKVOp, MLADecodeOp>(op)) {
        op->emitOpError()
            << "is not supported on the GPU yet: convert-pa-to-gpu lowers "
               "pa.decode, pa.decode_partial, pa.merge_segments, pa.prefill, "
               "pa.prefill_partial, pa.append_kv_slots, pa.append_kv, "
               "pa.scatter_kv, pa.merge, pa.merge_states, pa.kv_deviation, "
               "pa.select_topk, pa.pack_mask, pa.plan_split_kv and "
               "pa.mla_decode (use pa-lower-to-cpu for the other ops)";
        return WalkResult::interrupt();
      }
      if (!hasMemRefSemantics(op)) {
        op->emitOpError() << "convert-pa-to-gpu expects the memref form; run "
                             "one-shot-bufferize first";
        return WalkResult::interrupt();
      }
      std::optional<PrefillShape> s = tileShape(op);
      if (auto a = dyn_cast<AttentionOpInterface>(op);
          a && s && s->simt &&
          isFP8CacheType(cast<ShapedType>(a.getKvCache()[0].getType())
                             .getElementType())) {
        op->emitOpError()
            << "the CUDA-core decode has no FP8 KV cache path: FP8 caches "
               "run on the tensor-core decode (decode-kernel=auto or "
               "tensor-core, f16 / bf16 queries, a head dim that is a "
               "multiple of 16 up to 256, GQA groups up to 32)";
        return WalkResult::interrupt();
      }
      if (s && failed(checkTileKernel(op, *s)))
        return WalkResult::interrupt();
      if (auto m = dyn_cast<MLADecodeOp>(op);
          m && failed(checkMLAKernel(m, mlaOptions())))
        return WalkResult::interrupt();
      ops.push_back(op);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    if (ops.empty())
      return;
    // split-kv-merge=fused: each decode_partial and the merge_segments of
    // its states become one kernel (SplitKVMerge.cpp).
    DenseMap<Operation *, MergeSegmentsOp> fuseWith;
    DenseSet<Operation *> fused;
    if (splitKVMerge == "fused")
      for (Operation *op : ops)
        if (auto d = dyn_cast<DecodePartialOp>(op))
          if (MergeSegmentsOp m = fusableMerge(d)) {
            fuseWith[op] = m;
            fused.insert(m);
          }
    gpu::GPUModuleOp kmod = getKernelModule(module);
    for (Operation *op : ops) {
      if (fused.contains(op))
        continue; // built with its decode_partial
      std::optional<PrefillShape> tiled = tileShape(op);
      LogicalResult r =
          TypeSwitch<Operation *, LogicalResult>(op)
              .Case([&](DecodeOp d) {
                return buildTileKernel(d, kmod, "pa_decode", *tiled);
              })
              .Case([&](DecodePartialOp d) {
                MergeSegmentsOp merge = fuseWith.lookup(op);
                StringRef name =
                    merge ? "pa_decode_split" : "pa_decode_partial";
                return buildTileKernel(d, kmod, name, *tiled, merge);
              })
              .Case([&](PrefillOp p) {
                return buildTileKernel(p, kmod, "pa_prefill", *tiled);
              })
              .Case([&](PrefillPartialOp p) {
                return buildTileKernel(p, kmod, "pa_prefill_partial", *tiled);
              })
              .Case([&](MergeSegmentsOp d) {
                return tileMergeSegments(d, kmod, "pa_merge_segments",
                                         ctaThreads);
              })
              .Case([&](AppendKVSlotsOp a) {
                return buildAppendKVSlots(a, kmod, "pa_append_kv_slots",
                                          ctaThreads);
              })
              .Case([&](AppendKVOp a) {
                return buildAppendKV(a, kmod, "pa_append_kv", ctaThreads);
              })
              .Case([&](ScatterKVOp a) {
                return buildScatterKV(a, kmod, "pa_scatter_kv", ctaThreads);
              })
              .Case([&](KVDeviationOp d) {
                return buildKVDeviation(d, kmod, "pa_kv_deviation");
              })
              .Case([&](SelectTopKOp t) {
                return buildSelectTopK(t, kmod, "pa_select_topk");
              })
              .Case([&](PackMaskOp p) {
                return buildPackMask(p, kmod, "pa_pack_mask", ctaThreads);
              })
              .Case([&](PlanSplitKVOp p) {
                return buildPlanSplitKV(p, kmod, "pa_plan_split_kv",
                                        ctaThreads);
              })
              .Case([&](MergeOp m) {
                return buildMerge(m, kmod, "pa_merge", ctaThreads);
              })
              .Case([&](MergeStatesOp m) {
                return buildMergeStates(m, kmod, "pa_merge_states",
                                        ctaThreads);
              })
              .Case([&](MLADecodeOp m) {
                return buildMLADecode(m, kmod, "pa_mla_decode",
                                      mlaOptions());
              });
      if (failed(r))
        return signalPassFailure();
    }
  }
};
} // namespace

gpu::GPUModuleOp gpukernel::getKernelModule(ModuleOp module) {
  if (auto m = module.lookupSymbol<gpu::GPUModuleOp>("pa_kernels"))
    return m;
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(module.getContext()));
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  return gpu::GPUModuleOp::create(b, module.getLoc(), "pa_kernels");
}

FailureOr<gpu::GPUFuncOp>
gpukernel::createSegmentKernel(Operation *op, gpu::GPUModuleOp kmod,
                               StringRef name, StringRef kind,
                               int64_t threads, IRMapping &mapping) {
  for (Value v : op->getOperands())
    if (!isIdentityMemRef(v.getType()))
      return op->emitOpError()
             << "convert-pa-to-gpu expects identity-layout memrefs";
  if (threads % 32 != 0 || threads <= 0)
    return op->emitOpError()
           << "cta-threads must be a positive multiple of 32";
  MLIRContext *ctx = op->getContext();
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto counter = MemRefType::get({1}, IntegerType::get(ctx, 32),
                                 MemRefLayoutAttrInterface(), wg);
  KernelABI abi;
  abi.kind = kind.str();
  abi.args = argRoles(op);
  abi.grid = {GridExtentABI{"batch"}, GridExtentABI{"", 1},
              GridExtentABI{"", 1}};
  abi.block = {threads, 1, 1};
  return createKernel(kmod, op, name, TypeRange{counter}, abi, mapping);
}

gpu::GPUFuncOp gpukernel::createKernel(gpu::GPUModuleOp kmod, Operation *op,
                                       StringRef name, TypeRange smem,
                                       const KernelABI &abi,
                                       IRMapping &mapping, ValueRange extra) {
  OpBuilder b(kmod.getBodyRegion());
  b.setInsertionPointToEnd(kmod.getBody());
  SmallVector<Value> args(op->getOperands());
  args.append(extra.begin(), extra.end());
  auto type =
      FunctionType::get(op->getContext(), ValueRange(args).getTypes(), {});
  auto func = gpu::GPUFuncOp::create(b, op->getLoc(), name, type, smem);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func->setAttr(kKernelABIAttrName, encodeKernelABI(op->getContext(), abi));
  SymbolTable(kmod).insert(func);
  for (auto [v, arg] : llvm::zip(args, func.getArguments()))
    mapping.map(v, arg);
  return func;
}

void gpukernel::launch(OpBuilder &b, Operation *op, gpu::GPUFuncOp func,
                       std::array<Value, 3> grid, int64_t threads,
                       int64_t dynamicSmem, ValueRange extra) {
  Location loc = op->getLoc();
  SmallVector<Value> args(op->getOperands());
  args.append(extra.begin(), extra.end());
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value nt = arith::ConstantIndexOp::create(b, loc, threads);
  gpu::LaunchFuncOp::create(b, loc, func, {grid[0], grid[1], grid[2]},
                            {nt, one, one},
                            dynamicSmem > 0 ? Value(arith::ConstantOp::create(
                                                  b, loc, b.getI32IntegerAttr(dynamicSmem)))
                                            : Value(),
                            args);
  op->erase();
}

void gpukernel::setSharedMemory(gpu::GPUFuncOp func, int64_t bytes) {
  FailureOr<KernelABI> abi = decodeKernelABI(func);
  abi->smem = bytes;
  func->setAttr(kKernelABIAttrName, encodeKernelABI(func.getContext(), *abi));
  auto kmod = func->getParentOfType<gpu::GPUModuleOp>();
  auto module = kmod->getParentOfType<ModuleOp>();
  module.walk([&](gpu::LaunchFuncOp launch) {
    if (launch.getKernelModuleName() != kmod.getName() ||
        launch.getKernelName() != func.getName())
      return;
    OpBuilder b(launch);
    Value size = arith::ConstantOp::create(b, launch.getLoc(),
                                           b.getI32IntegerAttr(bytes));
    launch.getDynamicSharedMemorySizeMutable().assign(size);
  });
}

SmallVector<std::string> gpukernel::argRoles(Operation *op) {
  SmallVector<std::string> roles;
  auto add = [&](std::initializer_list<const char *> names) {
    roles.append(names.begin(), names.end());
  };
  if (auto a = dyn_cast<AttentionOpInterface>(op);
      a && !isa<PrefillOp, PrefillPartialOp>(op)) {
    bool partial = isa<DecodePartialOp>(op);
    add({"q"});
    if (a.getKvCache().size() == 1)
      add({"kv"});
    else
      add({"k", "v"});
    if (a.getKScale())
      add({"k_scale", "v_scale"});
    add({"kv_indptr", "kv_indices", "kv_last_page_len"});
    if (partial)
      add({"work_indptr", "work_request", "work_start", "work_end"});
    if (a.getAlibiSlopes())
      add({"alibi_slopes"});
    if (partial)
      add({"o_part", "lse_part"});
    else
      add({"o", "lse"});
  } else if (isa<PrefillOp, PrefillPartialOp>(op)) {
    PrefillOperands p(op);
    add({"q", "qo_indptr"});
    if (p.kvCache.size() == 1)
      add({"kv"});
    else
      add({"k", "v"});
    if (cast<AttentionOpInterface>(op).getKScale())
      add({"k_scale", "v_scale"});
    add({"kv_indptr", "kv_indices", "kv_last_page_len"});
    if (isa<PrefillPartialOp>(op))
      roles.append(std::begin(PrefillPartialOp::kWorkListNames),
                   std::end(PrefillPartialOp::kWorkListNames));
    if (p.qPositions)
      add({"q_positions"});
    if (p.customMask)
      add({"custom_mask", "mask_indptr"});
    if (p.alibiSlopes)
      add({"alibi_slopes"});
    if (isa<PrefillPartialOp>(op))
      add({"o_part", "lse_part"});
    else
      add({"o", "lse"});
  } else if (isa<MergeSegmentsOp>(op)) {
    add({"o_part", "lse_part", "work_indptr", "o", "lse"});
  } else if (auto a = dyn_cast<AppendKVSlotsOp>(op)) {
    add({"k_new", "v_new", "slot_mapping"});
    if (a.getKScale())
      add({"k_scale", "v_scale"});
    if (a.getOuts().size() == 1)
      add({"kv"});
    else
      add({"k", "v"});
  } else if (isa<AppendKVOp, ScatterKVOp>(op)) {
    auto scatter = dyn_cast<ScatterKVOp>(op);
    Value kScale =
        scatter ? scatter.getKScale() : cast<AppendKVOp>(op).getKScale();
    add({"k_new", "v_new"});
    if (scatter)
      add({"rows_indptr", "positions"});
    else
      add({"append_indptr"});
    add({"kv_indptr", "kv_indices", "kv_last_page_len"});
    if (kScale)
      add({"k_scale", "v_scale"});
    if (cast<DestinationStyleOpInterface>(op).getNumDpsInits() == 1)
      add({"kv"});
    else
      add({"k", "v"});
  } else if (isa<PackMaskOp>(op)) {
    add({"mask", "mask_segments", "custom_mask", "mask_indptr"});
  } else if (isa<PlanSplitKVOp>(op)) {
    add({"kv_indptr", "kv_last_page_len", "work_indptr", "work_request",
         "work_start", "work_end"});
  } else if (isa<KVDeviationOp>(op)) {
    add({"new_rows", "cached_rows", "deviation"});
  } else if (isa<SelectTopKOp>(op)) {
    add({"deviation", "dev_indptr", "positions", "out_indptr"});
  } else if (auto m = dyn_cast<MergeOp>(op)) {
    for (int64_t i = 0; i < m.getNumStates(); ++i) {
      roles.push_back("o_" + std::to_string(i));
      roles.push_back("lse_" + std::to_string(i));
    }
    add({"o", "lse"});
  } else if (isa<MergeStatesOp>(op)) {
    add({"o_states", "lse_states", "o", "lse"});
  } else if (isa<MLADecodeOp>(op)) {
    add({"q_nope", "q_pe", "ckv_kpe", "kv_indptr", "kv_indices",
         "kv_last_page_len", "o", "lse"});
  }
  assert(roles.size() == op->getNumOperands() && "a role per operand");
  return roles;
}

SmallVector<std::string> gpukernel::fusedArgRoles(DecodePartialOp op) {
  SmallVector<std::string> roles = argRoles(op);
  roles.append({"o", "lse", "merge_counters"});
  return roles;
}

FusedMerge gpukernel::mapFusedMerge(DecodePartialOp op, ValueRange extra,
                                    const IRMapping &m) {
  FusedMerge f;
  f.oPart = m.lookup(op.getOuts()[0]);
  f.lsePart = m.lookup(op.getOuts()[1]);
  f.workIndptr = m.lookup(op.getWorkIndptr());
  f.workRequest = m.lookup(op.getWorkRequest());
  f.o = m.lookup(extra[0]);
  f.lse = m.lookup(extra[1]);
  f.counters = m.lookup(extra[2]);
  f.lseBase2 = op.getLseBase2();
  return f;
}

