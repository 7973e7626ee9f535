//===- FP8ToNVVM.cpp - fp8 arith.extf / truncf to the hardware conversions ===//
//
// pa-fp8-to-nvvm: see the pass description.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/Passes.h"
#include "PagedAttn/Dialect/PA.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::pa {
#define GEN_PASS_DEF_PAFP8TONVVM
#include "PagedAttn/Conversion/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;

namespace {

/// The concatenation of `parts` (a power of two of equal 1-D vectors) by a
/// tree of vector.shuffle, which, unlike strided slices, lowers to LLVM as
/// is.
Value joinPairs(PatternRewriter &rw, Location loc, SmallVector<Value> parts) {
  while (parts.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i < parts.size(); i += 2) {
      int64_t w = cast<VectorType>(parts[i].getType()).getDimSize(0);
      next.push_back(vector::ShuffleOp::create(
          rw, loc, parts[i], parts[i + 1],
          llvm::to_vector(llvm::seq<int64_t>(0, 2 * w))));
    }
    parts = std::move(next);
  }
  return parts[0];
}

/// The conversions take fp8 scalars and 1-D vectors of 2, 4, 8, ...
/// elements (`vt` null: a scalar); an error at `op` otherwise.
LogicalResult checkShape(Operation *op, VectorType vt) {
  if (vt && (vt.getRank() != 1 || vt.getDimSize(0) < 2 ||
             !llvm::isPowerOf2_64(vt.getDimSize(0))))
    return op->emitOpError()
           << "pa-fp8-to-nvvm converts fp8 scalars and 1-D vectors of 2, "
              "4, 8, ... elements, got "
           << vt;
  return success();
}

/// arith.extf fp8 -> f16 / bf16 / f32 (scalar, or a vector of a power of
/// two >= 2 elements).
struct ExtFFromFP8 final : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rw) const override {
    Type srcElem = getElementTypeOrSelf(op.getIn().getType());
    if (!pa::isFP8CacheType(srcElem))
      return rw.notifyMatchFailure(op, "not from fp8");
    Type dstElem = getElementTypeOrSelf(op.getType());
    auto vt = dyn_cast<VectorType>(op.getIn().getType());
    if (failed(checkShape(op, vt)))
      return failure();
    if (!dstElem.isF16() && !dstElem.isBF16() && !dstElem.isF32())
      return op.emitOpError()
             << "pa-fp8-to-nvvm widens fp8 to f16, bf16 or f32, got "
             << dstElem;
    Location loc = op.getLoc();
    Type i8 = rw.getI8Type(), f16 = rw.getF16Type();
    auto pairT = VectorType::get({2}, i8);
    auto halfT = VectorType::get({2}, f16);
    int64_t n = vt ? vt.getDimSize(0) : 1;
    // The source bits as vector<n or 2 x i8>.
    Value bits;
    if (vt) {
      bits = arith::BitcastOp::create(rw, loc, VectorType::get({n}, i8),
                                      op.getIn());
    } else {
      Value byte = arith::BitcastOp::create(rw, loc, i8, op.getIn());
      bits = vector::BroadcastOp::create(rw, loc, pairT, byte);
    }
    // One cvt per pair; the pairs concatenated again (joinPairs).
    SmallVector<Value> parts;
    for (int64_t j = 0; j < std::max<int64_t>(n, 2); j += 2) {
      Value pair = vt ? vector::ShuffleOp::create(rw, loc, bits, bits,
                                                  ArrayRef<int64_t>{j, j + 1})
                      : bits;
      parts.push_back(NVVM::ConvertF8x2ToF16x2Op::create(
          rw, loc, halfT, pair, /*relu=*/false, srcElem));
    }
    Value half = joinPairs(rw, loc, parts);
    if (!vt)
      half = vector::ExtractOp::create(rw, loc, half, 0);
    // Every fp8 value is exact in f16, f32 and bf16.
    Value out = half;
    if (dstElem.isF32() || dstElem.isBF16())
      out = arith::ExtFOp::create(rw, loc, vt ? Type(VectorType::get({n},
                                                     rw.getF32Type()))
                                              : rw.getF32Type(),
                                  out);
    if (dstElem.isBF16())
      out = arith::TruncFOp::create(rw, loc, op.getType(), out);
    rw.replaceOp(op, out);
    return success();
  }
};

/// arith.truncf f32 -> fp8 (scalar, or a vector of a power of two >= 2
/// elements): cvt.rn.satfinite.{e4m3,e5m2}x2.f32 per pair. Saturating to
/// the largest finite value is what emitQuantize's clamp already did, so
/// the result is arith.truncf's (round to nearest even); NaN stays NaN.
struct TruncFToFP8 final : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rw) const override {
    Type dstElem = getElementTypeOrSelf(op.getType());
    if (!pa::isFP8CacheType(dstElem))
      return rw.notifyMatchFailure(op, "not to fp8");
    auto vt = dyn_cast<VectorType>(op.getIn().getType());
    if (failed(checkShape(op, vt)))
      return failure();
    if (!getElementTypeOrSelf(op.getIn().getType()).isF32())
      return op.emitOpError()
             << "pa-fp8-to-nvvm narrows f32 to fp8, got "
             << getElementTypeOrSelf(op.getIn().getType());
    Location loc = op.getLoc();
    Type i8 = rw.getI8Type();
    auto pairT = VectorType::get({2}, i8);
    int64_t n = vt ? vt.getDimSize(0) : 1;
    Value zero = arith::ConstantOp::create(rw, loc, rw.getF32FloatAttr(0));
    SmallVector<Value> parts;
    for (int64_t j = 0; j < std::max<int64_t>(n, 2); j += 2) {
      // cvt packs its first operand into the high byte.
      Value lo = vt ? vector::ExtractOp::create(rw, loc, op.getIn(), j)
                    : op.getIn();
      Value hi = vt ? vector::ExtractOp::create(rw, loc, op.getIn(), j + 1)
                    : zero;
      parts.push_back(NVVM::ConvertF32x2ToF8x2Op::create(
          rw, loc, pairT, hi, lo, NVVM::FPRoundingMode::RN,
          NVVM::SaturationMode::SATFINITE, /*relu=*/false, dstElem));
    }
    Value bytes = joinPairs(rw, loc, parts);
    Value out;
    if (vt) {
      out = arith::BitcastOp::create(rw, loc, op.getType(), bytes);
    } else {
      Value byte = vector::ExtractOp::create(rw, loc, bytes, 0);
      out = arith::BitcastOp::create(rw, loc, op.getType(), byte);
    }
    rw.replaceOp(op, out);
    return success();
  }
};

struct PAFP8ToNVVM final : pa::impl::PAFP8ToNVVMBase<PAFP8ToNVVM> {
  using Base::Base;

  void runOnOperation() override {
    // An older chip has no conversion: an error at the first op that needs
    // one (LLVM's instruction selection would abort the process).
    std::optional<unsigned> sm = pa::smVersion(chip);
    if (!chip.empty() && !sm) {
      getOperation()->emitError()
          << "pa-fp8-to-nvvm: chip must name an SM (sm_89, sm_90a, ...), got '"
          << chip << "'";
      return signalPassFailure();
    }
    if (sm && *sm < pa::kFP8MinSM) {
      WalkResult r = getOperation()->walk([&](Operation *op) {
        Type in = isa<arith::ExtFOp, arith::TruncFOp>(op)
                      ? getElementTypeOrSelf(op->getOperand(0).getType())
                      : Type();
        Type out =
            in ? getElementTypeOrSelf(op->getResult(0).getType()) : Type();
        if (!in || (!pa::isFP8CacheType(in) && !pa::isFP8CacheType(out)))
          return WalkResult::advance();
        op->emitOpError() << "an fp8 conversion on the GPU needs sm_"
                          << pa::kFP8MinSM << " or later (cvt.rn.f16x2.e4m3x2 "
                          << "and its kin), got chip " << chip;
        return WalkResult::interrupt();
      });
      if (r.wasInterrupted())
        return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<ExtFFromFP8, TruncFToFP8>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

std::optional<unsigned> mlir::pa::smVersion(StringRef chip) {
  unsigned sm = 0;
  if (!chip.consume_front("sm_") || chip.consumeInteger(10, sm))
    return std::nullopt;
  return sm;
}
