//===- LoopUtils.h - IR-building helpers of the pa -> loops lowering -*- C++ -*-===//
//
// Small builders shared by the op families of convert-pa-to-loops: constants,
// index loads, f32 conversion, loops, paged-cache and page-table addressing.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_LIB_CONVERSION_PATOLOOPS_LOOPUTILS_H
#define PAGEDATTN_LIB_CONVERSION_PATOLOOPS_LOOPUTILS_H

#include "PagedAttn/Dialect/PA.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::pa::loops {

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
    return scf::ForOp::create(
        b, loc, lb, ub, idx(1), init,
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

/// A CSR page table `(kv_indptr, kv_indices, kv_last_page_len)` with page
/// size P: kv lengths and token locations.
struct PageTable {
  Value indptr, indices, last;
  int64_t pageSize;

  /// Index of the request's first page in kv_indices.
  Value pageBase(Emitter &e, Value b) const { return e.loadIdx(indptr, b); }
  /// kv_len[b] = 0 without pages, else (npages - 1) * P + last_page_len[b];
  /// asserts 1 <= last_page_len <= P for requests with pages.
  Value kvLen(Emitter &e, Value b) const {
    Value start = e.loadIdx(indptr, b);
    Value end = e.loadIdx(indptr, e.add(b, e.idx(1)));
    Value npages = e.sub(end, start);
    Value lastI32 = e.load(last, {b});
    Value hasPages = e.cmpi(arith::CmpIPredicate::sgt, npages, e.idx(0));
    Value inRange =
        e.andi(e.cmpi(arith::CmpIPredicate::sge, lastI32, e.i32(1)),
               e.cmpi(arith::CmpIPredicate::sle, lastI32, e.i32(pageSize)));
    e.assertTrue(e.select(hasPages, inRange,
                          arith::ConstantOp::create(e.b, e.loc,
                                                    e.b.getBoolAttr(true))),
                 ("kv_last_page_len out of [1, " + Twine(pageSize) + "]").str());
    Value full = e.mul(e.sub(npages, e.idx(1)), e.idx(pageSize));
    Value len = e.add(full, e.toIndex(lastI32));
    return e.select(hasPages, len, e.idx(0));
  }
  /// (page, slot) of token t given the request's page base; asserts the page
  /// index is within [0, numPages).
  std::pair<Value, Value> locate(Emitter &e, Value base, Value t,
                                 Value numPages) const {
    Value p = e.add(base, e.divui(t, e.idx(pageSize)));
    Value page = e.loadIdx(indices, p);
    Value ok = e.andi(e.cmpi(arith::CmpIPredicate::sge, page, e.idx(0)),
                      e.cmpi(arith::CmpIPredicate::slt, page, numPages));
    e.assertTrue(ok, "kv_indices entry out of range [0, num_pages)");
    return {page, e.remui(t, e.idx(pageSize))};
  }
};

/// The page table `pages(...)` of an op with one (decode, prefill, append,
/// scatter, decode_partial).
template <typename OpTy>
PageTable pageTableOf(OpTy op) {
  return PageTable{op.getKvIndptr(), op.getKvIndices(), op.getKvLastPageLen(),
                   op.getCache().getPageSize()};
}

/// A paged KV cache (joint `[N, 2, ...]` or split K and V) of a layout.
struct Cache {
  PagedKVAttr attr;
  SmallVector<Value, 2> tensors;

  bool joint() const { return tensors.size() == 1; }
  Value numPages(Emitter &e) const { return e.dim(tensors[0], 0); }
  Type elementType() const {
    return cast<MemRefType>(tensors[0].getType()).getElementType();
  }
  SmallVector<Value> indices(Emitter &e, bool isV, Value page, Value slot,
                             Value head, Value d) const {
    SmallVector<Value> idx{page};
    if (joint())
      idx.push_back(e.idx(isV ? 1 : 0));
    if (attr.getLayout() == KVLayout::NHD)
      idx.append({slot, head, d});
    else
      idx.append({head, slot, d});
    return idx;
  }
  Value memref(bool isV) const {
    return joint() ? tensors[0] : tensors[isV ? 1 : 0];
  }
  Value load(Emitter &e, bool isV, Value page, Value slot, Value head,
             Value d) const {
    return e.load(memref(isV), indices(e, isV, page, slot, head, d));
  }
  void store(Emitter &e, bool isV, Value v, Value page, Value slot, Value head,
             Value d) const {
    e.store(v, memref(isV), indices(e, isV, page, slot, head, d));
  }
};

/// True when every operand of `op` is a memref (the form this lowering
/// accepts).
inline bool hasMemRefSemantics(Operation *op) {
  return llvm::all_of(op->getOperandTypes(),
                      [](Type t) { return isa<MemRefType>(t); });
}

} // namespace mlir::pa::loops

#endif // PAGEDATTN_LIB_CONVERSION_PATOLOOPS_LOOPUTILS_H
