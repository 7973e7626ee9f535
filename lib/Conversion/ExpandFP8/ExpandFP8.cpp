//===- ExpandFP8.cpp - f8E4M3FN / f8E5M2 conversions to integer arithmetic ===//
//
// The pa-expand-fp8 pass: scalar arith.extf / arith.truncf between an fp8
// type (f8E4M3FN, f8E5M2) and f16 / bf16 / f32 become bit manipulation on
// i32, so that the LLVM lowering (which stores fp8 as i8 but has no fp8
// arithmetic) can take them. The results are those of APFloat's conversions.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <optional>

namespace mlir::pa {
#define GEN_PASS_DEF_PAEXPANDFP8
#include "PagedAttn/Conversion/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;

namespace {

/// The bit layout of an fp8 format: sign, `expBits` exponent bits with
/// `bias`, `manBits` mantissa bits; which codes are NaN or infinite.
struct FP8Format {
  int expBits, manBits, bias;
  bool hasInf;           // f8E5M2: exponent all ones, mantissa 0 is +-inf
  int64_t maxFiniteCode; // largest finite magnitude (without the sign)
  int64_t overflowCode;  // what a too-large magnitude becomes (inf or NaN)
  int64_t nanCode;       // the quiet NaN truncf produces

  static std::optional<FP8Format> of(Type t) {
    if (isa<Float8E4M3FNType>(t)) // S.EEEE.MMM, bias 7, NaN = S.1111.111
      return FP8Format{4, 3, 7, false, 0x7E, 0x7F, 0x7F};
    if (isa<Float8E5M2Type>(t)) // S.EEEEE.MM, bias 15, IEEE-like
      return FP8Format{5, 2, 15, true, 0x7B, 0x7C, 0x7E};
    return std::nullopt;
  }
};

/// i32 / f32 constants and the few ops the expansions use.
struct Builder32 {
  PatternRewriter &b;
  Location loc;

  Value c(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  Value f(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value andi(Value x, int64_t m) {
    return arith::AndIOp::create(b, loc, x, c(m));
  }
  Value shl(Value x, int64_t s) {
    return arith::ShLIOp::create(b, loc, x, c(s));
  }
  Value shr(Value x, int64_t s) {
    return arith::ShRUIOp::create(b, loc, x, c(s));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value ori(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, int64_t v) {
    return arith::CmpIOp::create(b, loc, p, x, c(v));
  }
  Value sel(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  Value toF32(Value bits) {
    return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
  }
  Value toI32(Value f) {
    return arith::BitcastOp::create(b, loc, b.getI32Type(), f);
  }
};

/// f32 -> `to` (f16, bf16 or f32) or the reverse; exact where used.
Value convertFloat(PatternRewriter &b, Location loc, Value x, Type to) {
  Type from = x.getType();
  if (from == to)
    return x;
  if (cast<FloatType>(from).getWidth() < cast<FloatType>(to).getWidth())
    return arith::ExtFOp::create(b, loc, to, x);
  return arith::TruncFOp::create(b, loc, to, x);
}

bool isWideFloat(Type t) { return t.isF16() || t.isBF16() || t.isF32(); }

/// arith.extf %x : fp8 to f16|bf16|f32
///
///   w = zext(bitcast(x)); e = (w >> M) & emask; m = w & mmask
///   normal (e > 0):     (e + 127 - bias) << 23 | m << (23 - M)
///   subnormal (e == 0): bits(float(m) * 2^(1 - bias - M))   (+-0 for m = 0)
///   NaN / inf codes:    0x7FC00000 / 0x7F800000
///   result = bitcast(sign << 24 | magnitude) : f32, then to the target type
struct ExpandFP8ExtF final : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<FP8Format> fmt = FP8Format::of(op.getIn().getType());
    if (!fmt || !isWideFloat(op.getType()))
      return rewriter.notifyMatchFailure(op, "not a scalar fp8 extension");
    Builder32 b{rewriter, op.getLoc()};
    const int M = fmt->manBits, E = fmt->expBits;
    Value byte = arith::BitcastOp::create(rewriter, b.loc, rewriter.getI8Type(),
                                          op.getIn());
    Value w =
        arith::ExtUIOp::create(rewriter, b.loc, rewriter.getI32Type(), byte);
    Value sign = b.shl(b.andi(w, 0x80), 24);
    Value e = b.andi(b.shr(w, M), (1 << E) - 1);
    Value m = b.andi(w, (1 << M) - 1);
    Value normal =
        b.ori(b.shl(b.add(e, b.c(127 - fmt->bias)), 23), b.shl(m, 23 - M));
    Value mf =
        arith::UIToFPOp::create(rewriter, b.loc, rewriter.getF32Type(), m);
    Value sub = b.toI32(arith::MulFOp::create(
        rewriter, b.loc, mf, b.f(std::ldexp(1.0, 1 - fmt->bias - M))));
    Value mag = b.sel(b.cmp(arith::CmpIPredicate::eq, e, 0), sub, normal);
    if (fmt->hasInf) {
      Value special = b.cmp(arith::CmpIPredicate::eq, e, (1 << E) - 1);
      Value inf = b.cmp(arith::CmpIPredicate::eq, m, 0);
      mag = b.sel(special, b.sel(inf, b.c(0x7F800000), b.c(0x7FC00000)), mag);
    } else {
      Value nan = b.cmp(arith::CmpIPredicate::eq, b.andi(w, 0x7F), 0x7F);
      mag = b.sel(nan, b.c(0x7FC00000), mag);
    }
    Value f32 = b.toF32(b.ori(sign, mag));
    rewriter.replaceOp(op, convertFloat(rewriter, b.loc, f32, op.getType()));
    return success();
  }
};

/// arith.truncf %x : f16|bf16|f32 to fp8 (round to nearest even)
///
///   u = bits(f32(x)); a = u & 0x7FFFFFFF
///   normal (a >= bits(2^(1 - bias))): round a to M mantissa bits (add half
///     an ulp minus one plus the kept lsb, shift), rebias the exponent
///   subnormal: bits(float(a) + 2^(1 - bias + 23 - M)) - bits(that power):
///     the f32 addition rounds to the fp8 subnormal spacing (ties to even)
///   code > largest finite -> inf (f8E5M2) / NaN (f8E4M3FN); NaN -> NaN
///   result = bitcast(trunc((u >> 24 & 0x80) | code)) : fp8
struct ExpandFP8TruncF final : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<FP8Format> fmt = FP8Format::of(op.getType());
    if (!fmt || !isWideFloat(op.getIn().getType()))
      return rewriter.notifyMatchFailure(op, "not a scalar fp8 truncation");
    if (std::optional<arith::RoundingMode> rm = op.getRoundingmode();
        rm && *rm != arith::RoundingMode::to_nearest_even)
      return rewriter.notifyMatchFailure(op, "rounding mode is not "
                                             "to_nearest_even");
    Builder32 b{rewriter, op.getLoc()};
    const int M = fmt->manBits, shift = 23 - M;
    Value x = convertFloat(rewriter, b.loc, op.getIn(), rewriter.getF32Type());
    Value u = b.toI32(x);
    Value sign = b.andi(b.shr(u, 24), 0x80);
    Value a = b.andi(u, 0x7FFFFFFF);
    // Normal: round to nearest even at bit `shift`, then rebias.
    Value lsb = b.andi(b.shr(a, shift), 1);
    Value rounded =
        b.shr(b.add(a, b.add(b.c((1 << (shift - 1)) - 1), lsb)), shift);
    Value normal = b.sub(rounded, b.c((127 - fmt->bias) << M));
    // Subnormal: let the f32 adder round at the subnormal spacing.
    int64_t magicBits = static_cast<int64_t>(127 - fmt->bias + shift + 1) << 23;
    Value magic = b.toF32(b.c(magicBits));
    Value sum = arith::AddFOp::create(rewriter, b.loc, b.toF32(a), magic);
    Value sub = b.sub(b.toI32(sum), b.c(magicBits));
    Value isNormal = b.cmp(arith::CmpIPredicate::uge, a,
                           static_cast<int64_t>(128 - fmt->bias) << 23);
    Value code = b.sel(isNormal, normal, sub);
    code = b.sel(b.cmp(arith::CmpIPredicate::sgt, code, fmt->maxFiniteCode),
                 b.c(fmt->overflowCode), code);
    code = b.sel(b.cmp(arith::CmpIPredicate::ugt, a, 0x7F800000),
                 b.c(fmt->nanCode), code);
    Value byte = arith::TruncIOp::create(rewriter, b.loc, rewriter.getI8Type(),
                                         b.ori(sign, code));
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, op.getType(), byte);
    return success();
  }
};

/// True if `op` converts to or from an fp8 type this pass handles.
bool isFP8Conversion(Operation *op) {
  if (!isa<arith::ExtFOp, arith::TruncFOp>(op))
    return false;
  auto fp8 = [](Type t) {
    return FP8Format::of(getElementTypeOrSelf(t)).has_value();
  };
  return fp8(op->getOperand(0).getType()) || fp8(op->getResult(0).getType());
}

struct PAExpandFP8 final : pa::impl::PAExpandFP8Base<PAExpandFP8> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    pa::populatePAExpandFP8Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // What the patterns did not take cannot be lowered to LLVM either.
    WalkResult r = getOperation()->walk([](Operation *op) {
      if (!isFP8Conversion(op))
        return WalkResult::advance();
      op->emitOpError() << "pa-expand-fp8 expands scalar conversions between "
                           "f8E4M3FN / f8E5M2 and f16, bf16 or f32 that "
                           "round to nearest even only";
      return WalkResult::interrupt();
    });
    if (r.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

void mlir::pa::populatePAExpandFP8Patterns(RewritePatternSet &patterns) {
  patterns.add<ExpandFP8ExtF, ExpandFP8TruncF>(patterns.getContext());
}
