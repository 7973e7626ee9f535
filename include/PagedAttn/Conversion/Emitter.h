//===- Emitter.h - IR-building helpers of the pa lowerings ------*- C++ -*-===//
//
// Small builders shared by every lowering of pa (convert-pa-to-loops and
// convert-pa-to-gpu): constants, arithmetic that picks the int or float op,
// index loads, f32 conversion, loops and ifs, run-time assertions. The paged
// addressing and the merge algebra built on them are in PagedAttention.h.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_CONVERSION_EMITTER_H
#define PAGEDATTN_CONVERSION_EMITTER_H

#include "PagedAttn/Dialect/PA.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::pa {

/// An OpBuilder at a location with the handful of ops the lowering needs.
struct Emitter {
  OpBuilder &b;
  Location loc;

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value i32(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  Value negInf() { return f32(-std::numeric_limits<double>::infinity()); }

  Value add(Value x, Value y) {
    if (isa<FloatType>(getElementTypeOrSelf(x.getType())))
      return arith::AddFOp::create(b, loc, x, y);
    return arith::AddIOp::create(b, loc, x, y);
  }
  Value sub(Value x, Value y) {
    if (isa<FloatType>(getElementTypeOrSelf(x.getType())))
      return arith::SubFOp::create(b, loc, x, y);
    return arith::SubIOp::create(b, loc, x, y);
  }
  Value mul(Value x, Value y) {
    if (isa<FloatType>(getElementTypeOrSelf(x.getType())))
      return arith::MulFOp::create(b, loc, x, y);
    return arith::MulIOp::create(b, loc, x, y);
  }
  Value divf(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value divui(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value remui(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  Value cmpi(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value cmpf(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value andi(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value maxf(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value log(Value x) { return math::LogOp::create(b, loc, x); }
  Value sqrt(Value x) { return math::SqrtOp::create(b, loc, x); }
  Value tanh(Value x) { return math::TanhOp::create(b, loc, x); }

  Value dim(Value memref, int64_t d) {
    return memref::DimOp::create(b, loc, memref, d);
  }
  Value load(Value memref, ValueRange indices) {
    return memref::LoadOp::create(b, loc, memref, indices);
  }
  void store(Value v, Value memref, ValueRange indices) {
    memref::StoreOp::create(b, loc, v, memref, indices);
  }
  /// Loads element `i` of a 1-D i32 memref as an index.
  Value loadIdx(Value memref, Value i) {
    Value v = load(memref, {i});
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  }
  Value toIndex(Value i32v) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), i32v);
  }
  Value toI32(Value index) {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
  }
  /// Index -> f32 (through i64; the values are small).
  Value indexToF32(Value index) {
    Value i = arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
    return arith::SIToFPOp::create(b, loc, b.getF32Type(), i);
  }
  /// Any float -> f32.
  Value toF32(Value x) {
    Type t = x.getType();
    if (t.isF32())
      return x;
    if (t.getIntOrFloatBitWidth() < 32)
      return arith::ExtFOp::create(b, loc, b.getF32Type(), x);
    return arith::TruncFOp::create(b, loc, b.getF32Type(), x);
  }
  /// f32 -> `t`.
  Value fromF32(Value x, Type t) {
    if (t.isF32())
      return x;
    if (t.getIntOrFloatBitWidth() < 32)
      return arith::TruncFOp::create(b, loc, t, x);
    return arith::ExtFOp::create(b, loc, t, x);
  }

  /// `for (iv = lb; iv < ub; iv += 1)` with loop-carried `init`.
  scf::ForOp forLoop(Value lb, Value ub, ValueRange init,
                     function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return forLoop(lb, ub, idx(1), init, body);
  }
  /// `for (iv = lb; iv < ub; iv += step)` with loop-carried `init`.
  scf::ForOp forLoop(Value lb, Value ub, Value step, ValueRange init,
                     function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return scf::ForOp::create(
        b, loc, lb, ub, step, init,
        [&](OpBuilder &nb, Location nloc, Value iv, ValueRange args) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          SmallVector<Value> yields = body(iv, args);
          scf::YieldOp::create(b, loc, yields);
        });
  }
  /// A loop without carried values.
  void forEach(Value lb, Value ub, function_ref<void(Value)> body) {
    forLoop(lb, ub, {}, [&](Value iv, ValueRange) {
      body(iv);
      return SmallVector<Value>{};
    });
  }
  /// `if (cond) then() else elseFn()` yielding values of `types` (non-empty;
  /// use ifThen for an if without results).
  SmallVector<Value> ifThenElse(Value cond, TypeRange types,
                                function_ref<SmallVector<Value>()> thenFn,
                                function_ref<SmallVector<Value>()> elseFn) {
    assert(!types.empty() && "ifThenElse yields values; use ifThen");
    auto ifOp = scf::IfOp::create(b, loc, types, cond, /*withElse=*/true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    scf::YieldOp::create(b, loc, thenFn());
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    scf::YieldOp::create(b, loc, elseFn());
    return SmallVector<Value>(ifOp.getResults());
  }
  void ifThen(Value cond, function_ref<void()> thenFn) {
    auto ifOp = scf::IfOp::create(b, loc, TypeRange(), cond,
                                  /*withElse=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(ifOp.getThenRegion().front().getTerminator());
    thenFn();
  }
  /// `if (cond) then() else elseFn()` without results.
  void ifElse(Value cond, function_ref<void()> thenFn,
              function_ref<void()> elseFn) {
    auto ifOp = scf::IfOp::create(b, loc, TypeRange(), cond,
                                  /*withElse=*/true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(ifOp.getThenRegion().front().getTerminator());
    thenFn();
    b.setInsertionPoint(ifOp.getElseRegion().front().getTerminator());
    elseFn();
  }
  void assertTrue(Value cond, StringRef msg) {
    cf::AssertOp::create(b, loc, cond, msg);
  }
  Value alloc(Type elem, ValueRange dynSizes) {
    SmallVector<int64_t> shape(dynSizes.size(), ShapedType::kDynamic);
    return memref::AllocOp::create(b, loc, MemRefType::get(shape, elem),
                                   dynSizes);
  }
  void dealloc(Value m) { memref::DeallocOp::create(b, loc, m); }
};

} // namespace mlir::pa

#endif // PAGEDATTN_CONVERSION_EMITTER_H
