//===- MmaSyncBF16ToNVVM.cpp - bf16 nvgpu.mma.sync to nvvm.mma.sync -------===//
//
// pa-mma-sync-bf16-to-nvvm: see the pass description.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::pa {
#define GEN_PASS_DEF_PAMMASYNCBF16TONVVM
#include "PagedAttn/Conversion/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;

namespace {

/// nvgpu.mma.sync m16n8k16 bf16 x bf16 + f32 -> nvvm.mma.sync.
struct MmaSyncBF16 final : OpRewritePattern<nvgpu::MmaSyncOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nvgpu::MmaSyncOp op,
                                PatternRewriter &rw) const override {
    auto aT = cast<VectorType>(op.getMatrixA().getType());
    auto bT = cast<VectorType>(op.getMatrixB().getType());
    auto cT = cast<VectorType>(op.getMatrixC().getType());
    SmallVector<int64_t> shape;
    for (Attribute a : op.getMmaShape())
      shape.push_back(cast<IntegerAttr>(a).getInt());
    if (!aT.getElementType().isBF16() || !bT.getElementType().isBF16())
      return rw.notifyMatchFailure(op, "not bf16");
    if (shape != SmallVector<int64_t>{16, 8, 16} ||
        aT.getShape() != ArrayRef<int64_t>{4, 2} ||
        bT.getShape() != ArrayRef<int64_t>{2, 2} ||
        cT.getShape() != ArrayRef<int64_t>{2, 2} ||
        !cT.getElementType().isF32())
      return op.emitOpError()
             << "pa-mma-sync-bf16-to-nvvm handles m16n8k16 with "
                "vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32> only";
    Location loc = op.getLoc();
    Type i32 = rw.getI32Type(), f32 = rw.getF32Type();
    auto regs = [&](Value frag, int64_t rows) {
      SmallVector<Value> out;
      for (int64_t r = 0; r < rows; ++r) {
        Value row = vector::ExtractOp::create(rw, loc, frag, r);
        Value asI32 = vector::BitCastOp::create(
            rw, loc, VectorType::get({1}, i32), row);
        out.push_back(vector::ExtractOp::create(rw, loc, asI32, 0));
      }
      return out;
    };
    SmallVector<Value> a = regs(op.getMatrixA(), 4);
    SmallVector<Value> b = regs(op.getMatrixB(), 2);
    SmallVector<Value> c;
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t i = 0; i < 2; ++i)
        c.push_back(vector::ExtractOp::create(rw, loc, op.getMatrixC(),
                                              ArrayRef<int64_t>{r, i}));
    auto resT = LLVM::LLVMStructType::getLiteral(rw.getContext(),
                                                 {f32, f32, f32, f32});
    Value d = NVVM::MmaOp::create(
        rw, loc, resT, a, b, c, shape, std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                      NVVM::MMATypes::bf16},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    // Rows inserted one by one: the LLVM lowering of vectors handles 1-D
    // rows of an n-D array, not an n-D vector.from_elements.
    VectorType rowT = VectorType::get({2}, f32);
    Value res = ub::PoisonOp::create(rw, loc, cT);
    for (int64_t r = 0; r < 2; ++r) {
      Value row = vector::FromElementsOp::create(
          rw, loc, rowT,
          ValueRange{LLVM::ExtractValueOp::create(rw, loc, d, 2 * r),
                     LLVM::ExtractValueOp::create(rw, loc, d, 2 * r + 1)});
      res = vector::InsertOp::create(rw, loc, row, res, r);
    }
    rw.replaceOp(op, res);
    return success();
  }
};

struct PAMmaSyncBF16ToNVVM final
    : pa::impl::PAMmaSyncBF16ToNVVMBase<PAMmaSyncBF16ToNVVM> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<MmaSyncBF16>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
