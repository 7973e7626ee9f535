//===- KernelBuilder.h - shared pieces of the pa GPU kernels ----*- C++ -*-===//
//
// Private to convert-pa-to-gpu: the emitter of kernel code (special-function
// unit math, fused dots), the kernel module, kernel creation with its
// `pa.kernel` ABI and the host-side launch. PAToGPU.cpp (decode,
// merge_segments), PrefillToGPU.cpp (prefill's tiling), PromoteTiles.cpp
// and TileToMma.cpp (its later stages) build on it.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_LIB_CONVERSION_PATOGPU_KERNELBUILDER_H
#define PAGEDATTN_LIB_CONVERSION_PATOGPU_KERNELBUILDER_H

#include "PagedAttn/Conversion/Emitter.h"
#include "PagedAttn/Conversion/KernelABI.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
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
  Value inlinePtx(StringRef text, Value x) {
    MLIRContext *ctx = b.getContext();
    return LLVM::InlineAsmOp::create(
               b, loc, b.getF32Type(), ValueRange{x},
               StringAttr::get(ctx, text), StringAttr::get(ctx, "=f,f"),
               /*has_side_effects=*/UnitAttr(), /*is_align_stack=*/UnitAttr(),
               LLVM::TailCallKindAttr::get(ctx, LLVM::TailCallKind::None),
               LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
               /*operand_attrs=*/ArrayAttr())
        .getResult(0);
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
};

/// True for a memref with the identity layout (what the kernels index).
inline bool isIdentityMemRef(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  return m && m.getLayout().isIdentity();
}

/// Returns (or creates) `gpu.module @pa_kernels` in `module`.
gpu::GPUModuleOp getKernelModule(ModuleOp module);

/// A kernel `name` taking `op`'s operands, with workgroup buffers `smem` and
/// the ABI attribute `abi`; `mapping` maps the operands to the kernel's
/// arguments.
gpu::GPUFuncOp createKernel(gpu::GPUModuleOp kmod, Operation *op,
                            StringRef name, TypeRange smem,
                            const KernelABI &abi, IRMapping &mapping);

/// Replaces `op` by a launch of `func` over `grid` CTAs of `threads`, with
/// `dynamicSmem` bytes of dynamic shared memory.
void launch(OpBuilder &b, Operation *op, gpu::GPUFuncOp func,
            std::array<Value, 3> grid, int64_t threads,
            int64_t dynamicSmem = 0);

/// Records `bytes` of dynamic shared memory in the ABI of `func` (which
/// must carry one) and in its launches.
void setSharedMemory(gpu::GPUFuncOp func, int64_t bytes);

/// The runtime role of each operand of `op`, in order (the kernel's
/// arguments; docs/Runtime.md spells them).
SmallVector<std::string> argRoles(Operation *op);

/// The tile kernel shape asked for by the pass options (0: default): for a
/// prefill the prefill-* options, for the tensor-core decode its KV tile
/// and K/V stages (decode-tile-kv, decode-kv-stages).
struct PrefillShape {
  int64_t warps = 0, tileKV = 0, warpRows = 0, kvWarps = 0, kvStages = 0;
};

/// Checks that convert-pa-to-gpu can build the tile kernel of `op` (a
/// pa.prefill or pa.prefill_partial, or a pa.decode / pa.decode_partial
/// with the tensor-core decode; an error at the op naming what it cannot
/// handle otherwise), before any IR changes.
LogicalResult checkTileKernel(Operation *op, const PrefillShape &shape);

/// Builds the kernel of `op` (as checkTileKernel; named `name`, in `kmod`)
/// over tile ops, the first stage of the tile pipeline, and replaces `op` by
/// its launch (PrefillToGPU.cpp).
LogicalResult buildTileKernel(Operation *op, gpu::GPUModuleOp kmod,
                              StringRef name, const PrefillShape &shape);

} // namespace mlir::pa::gpukernel

#endif // PAGEDATTN_LIB_CONVERSION_PATOGPU_KERNELBUILDER_H
