//===- PagedAttention.cpp - paged addressing and the merge algebra --------===//
//
// The IR building blocks shared by convert-pa-to-loops and
// convert-pa-to-gpu; see PagedAttention.h.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/PagedAttention.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::pa;

using Pred = arith::CmpIPredicate;

void mlir::pa::emitIndptrChecks(Emitter &e, Value indptr, StringRef name,
                                Value length, StringRef lengthName) {
  Value n = e.dim(indptr, 0);
  e.assertTrue(e.cmpi(Pred::sge, n, e.idx(1)),
               (name + " must have at least one entry (B + 1)").str());
  e.assertTrue(e.cmpi(Pred::eq, e.load(indptr, {e.idx(0)}), e.i32(0)),
               (name + "[0] must be 0").str());
  e.forEach(e.idx(1), n, [&](Value b) {
    Value prev = e.load(indptr, {e.sub(b, e.idx(1))});
    e.assertTrue(e.cmpi(Pred::sle, prev, e.load(indptr, {b})),
                 (name + " must be non-decreasing").str());
  });
  if (!length)
    return;
  Value last = e.loadIdx(indptr, e.sub(n, e.idx(1)));
  e.assertTrue(e.cmpi(Pred::sle, last, length),
               (name + "[B] exceeds the length of " + lengthName).str());
}

void mlir::pa::emitEntryCount(Emitter &e, Value array, StringRef name,
                              Value entries, StringRef what) {
  e.assertTrue(e.cmpi(Pred::eq, e.dim(array, 0), entries),
               (name + " must have " + what + " entries").str());
}

void PageTable::emitChecks(Emitter &e, StringRef suffix) const {
  if (!checked)
    return;
  std::string ip = ("kv_indptr" + suffix).str();
  if (indices)
    emitIndptrChecks(e, indptr, ip, e.dim(indices, 0),
                     ("kv_indices" + suffix).str());
  else
    emitIndptrChecks(e, indptr, ip);
  emitEntryCount(e, last, ("kv_last_page_len" + suffix).str(),
                 e.sub(e.dim(indptr, 0), e.idx(1)),
                 "B (one fewer than " + ip + ")");
}

void PageTable::emitRaggedChecks(Emitter &e, Value rowsIndptr, StringRef name,
                                 Value rows, StringRef rowsName,
                                 StringRef suffix) const {
  emitChecks(e, suffix);
  std::string ip = (name + suffix).str();
  emitIndptrChecks(e, rowsIndptr, ip, rows, rowsName);
  emitEntryCount(e, rowsIndptr, ip, e.dim(indptr, 0),
                 ("B + 1 (as many as kv_indptr" + suffix + ")").str());
}

void PageTable::emitDecodeChecks(Emitter &e, Value batch) const {
  emitChecks(e);
  e.assertTrue(e.cmpi(arith::CmpIPredicate::eq, e.dim(indptr, 0),
                      e.add(batch, e.idx(1))),
               "kv_indptr must have B + 1 entries (B = rows of q)");
}

Value PageTable::kvLen(Emitter &e, Value b) const {
  Value start = e.loadIdx(indptr, b);
  Value end = e.loadIdx(indptr, e.add(b, e.idx(1)));
  Value npages = e.sub(end, start);
  Value hasPages = e.cmpi(Pred::sgt, npages, e.idx(0));
  Value lastI32 = e.load(last, {b});
  if (checked) {
    Value inRange = e.andi(e.cmpi(Pred::sge, lastI32, e.i32(1)),
                           e.cmpi(Pred::sle, lastI32, e.i32(pageSize)));
    Value ok = e.select(
        hasPages, inRange,
        arith::ConstantOp::create(e.b, e.loc, e.b.getBoolAttr(true)));
    e.assertTrue(ok,
                 ("kv_last_page_len out of [1, " + Twine(pageSize) + "]").str());
  }
  Value full = e.mul(e.sub(npages, e.idx(1)), e.idx(pageSize));
  return e.select(hasPages, e.add(full, e.toIndex(lastI32)), e.idx(0));
}

Value PageTable::pageEntry(Emitter &e, Value base, Value t) const {
  return e.load(indices, {e.add(base, e.divui(t, e.idx(pageSize)))});
}

std::pair<Value, Value> PageTable::locate(Emitter &e, Value base, Value t,
                                          Value numPages) const {
  Value page = e.toIndex(pageEntry(e, base, t));
  if (checked) {
    assert(numPages && "a checked page table needs the number of pages");
    Value ok = e.andi(e.cmpi(Pred::sge, page, e.idx(0)),
                      e.cmpi(Pred::slt, page, numPages));
    e.assertTrue(ok, "kv_indices entry out of range [0, num_pages)");
  }
  return {page, e.remui(t, e.idx(pageSize))};
}

SmallVector<Value> Cache::indices(Emitter &e, bool isV, Value page, Value slot,
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

int64_t Cache::pageElems(bool isV) const {
  auto t = cast<MemRefType>(memref(isV).getType());
  if (!t.getLayout().isIdentity())
    return ShapedType::kDynamic;
  ArrayRef<int64_t> shape = t.getShape();
  int64_t n = 1;
  for (int64_t d : shape.drop_front()) {
    if (ShapedType::isDynamic(d))
      return ShapedType::kDynamic;
    n *= d;
  }
  return n;
}

Value Cache::offsetInPage(Emitter &e, bool isV, Value slot, Value head,
                          Value d) const {
  assert(!ShapedType::isDynamic(pageElems(isV)) && "a page of static shape");
  ArrayRef<int64_t> shape = cast<MemRefType>(memref(isV).getType()).getShape();
  SmallVector<Value> idx = indices(e, isV, Value(), slot, head, d);
  // Row-major: the last index has stride 1, each earlier one the product
  // of the dims after it.
  Value off = idx.back();
  int64_t stride = 1;
  for (size_t k = idx.size() - 1; k > 1; --k) {
    stride *= shape[k];
    off = e.add(e.mul(idx[k - 1], e.idx(stride)), off);
  }
  return off;
}

Value Cache::scale(Emitter &e, bool isV, Value head) const {
  if (!fp8())
    return e.f32(1.0);
  Value s = isV ? scales.v : scales.k;
  bool perTensor = cast<ShapedType>(s.getType()).getDimSize(0) == 1;
  return e.load(s, {perTensor ? e.idx(0) : head});
}

Value Cache::loadF32(Emitter &e, bool isV, Value page, Value slot, Value head,
                     Value d, Value scale) const {
  Value x = e.toF32(load(e, isV, page, slot, head, d));
  return fp8() ? e.mul(x, scale) : x;
}

void Cache::storeRow(Emitter &e, bool isV, Value x, Value page, Value slot,
                     Value head, Value d, Value scale) const {
  if (fp8())
    x = emitQuantize(e, x, scale, elementType());
  store(e, isV, x, page, slot, head, d);
}

void Cache::emitScaleChecks(Emitter &e) const {
  if (!fp8())
    return;
  for (Value s : {scales.k, scales.v})
    e.forEach(e.idx(0), e.dim(s, 0), [&](Value i) {
      Value x = e.load(s, {i});
      // x > 0 and x < inf (false for NaN).
      Value ok = e.andi(e.cmpf(arith::CmpFPredicate::OGT, x, e.f32(0)),
                        e.cmpf(arith::CmpFPredicate::OLT, x,
                               e.f32(std::numeric_limits<double>::infinity())));
      e.assertTrue(ok, "fp8 KV cache scales must be finite and > 0");
    });
}

Value mlir::pa::emitQuantize(Emitter &e, Value x, Value scale, Type fp8) {
  double largest =
      APFloat::getLargest(cast<FloatType>(fp8).getFloatSemantics())
          .convertToDouble();
  auto vt = dyn_cast<VectorType>(x.getType());
  // A scalar, or its splat over x's shape.
  auto like = [&](Value s) -> Value {
    if (!vt)
      return s;
    return vector::BroadcastOp::create(e.b, e.loc,
                                       vt.clone(e.b.getF32Type()), s);
  };
  Type f32 = vt ? Type(vt.clone(e.b.getF32Type())) : e.b.getF32Type();
  Value wide = x;
  if (getElementTypeOrSelf(x.getType()) != e.b.getF32Type())
    wide = getElementTypeOrSelf(x.getType()).getIntOrFloatBitWidth() < 32
               ? Value(arith::ExtFOp::create(e.b, e.loc, f32, x))
               : Value(arith::TruncFOp::create(e.b, e.loc, f32, x));
  Value y = e.divf(wide, like(scale));
  // minimumf / maximumf propagate NaN; +-inf saturate like any overflow.
  y = arith::MaximumFOp::create(e.b, e.loc, y, like(e.f32(-largest)));
  y = arith::MinimumFOp::create(e.b, e.loc, y, like(e.f32(largest)));
  return arith::TruncFOp::create(e.b, e.loc, vt ? Type(vt.clone(fp8)) : fp8,
                                 y);
}

void mlir::pa::emitQueriesAreLastTokens(Emitter &e, Value qoLen,
                                        Value kvLen) {
  e.assertTrue(e.cmpi(Pred::sle, qoLen, kvLen),
               "qo_len > kv_len without q_positions");
}

void PackedMask::emitChecks(Emitter &e, Value qoIndptr) const {
  emitIndptrChecks(e, indptr, "mask_indptr", e.dim(bits, 0), "the packed mask");
  emitEntryCount(e, indptr, "mask_indptr", e.dim(qoIndptr, 0),
                 "B + 1 (as many as qo_indptr)");
}

Value PackedMask::segmentBase(Emitter &e, Value b, Value qoLen,
                              Value kvLen) const {
  Value base = e.loadIdx(indptr, b);
  Value bytes = e.sub(e.loadIdx(indptr, e.add(b, e.idx(1))), base);
  e.assertTrue(e.cmpi(Pred::sge, e.mul(bytes, e.idx(8)), e.mul(qoLen, kvLen)),
               "a request's mask segment is shorter than "
               "ceil(qo_len * kv_len / 8) bytes");
  return base;
}

Value PackedMask::emitBit(Emitter &e, Value base, Value bit) const {
  Value byte = e.load(bits, {e.add(base, e.divui(bit, e.idx(8)))});
  Value byte32 = arith::ExtUIOp::create(e.b, e.loc, e.b.getI32Type(), byte);
  Value shift = e.toI32(e.remui(bit, e.idx(8)));
  Value shifted = arith::ShRUIOp::create(e.b, e.loc, byte32, shift);
  return e.cmpi(Pred::ne, e.andi(shifted, e.i32(1)), e.i32(0));
}

Value mlir::pa::emitInSlidingWindow(Emitter &e, Value t, Value pos,
                                    int64_t window) {
  // |pos - t| < 2^33 (int32 positions and tokens), so the difference cannot
  // overflow; t + window could.
  return e.cmpi(Pred::slt, e.sub(pos, t), e.idx(window));
}

StateMerge::StateMerge(Emitter &e, const ExpBase &base, const StateSet &states)
    : e(e), base(base), states(states) {
  mMax = e.forLoop(states.begin, states.end, {e.negInf()},
                   [&](Value i, ValueRange r) {
                     return SmallVector<Value>{e.maxf(r[0], states.m(i))};
                   })
             .getResult(0);
  mSafe = e.select(e.cmpf(arith::CmpFPredicate::OEQ, mMax, e.negInf()),
                   e.f32(0), mMax);
  total = e.forLoop(states.begin, states.end, {e.f32(0)},
                    [&](Value i, ValueRange r) {
                      Value w = base.exp(e.sub(states.m(i), mSafe));
                      if (states.l)
                        w = e.mul(w, states.l(i));
                      return SmallVector<Value>{e.add(r[0], w)};
                    })
              .getResult(0);
  hasWeight = e.cmpf(arith::CmpFPredicate::OGT, total, e.f32(0));
}

Value StateMerge::element(Value d, int64_t width) {
  // A scalar, or its splat over the vector<width x f32> of the elements.
  auto spread = [&](Value x) -> Value {
    if (width == 1)
      return x;
    return vector::BroadcastOp::create(
        e.b, e.loc, VectorType::get({width}, e.b.getF32Type()), x);
  };
  Value zero = spread(e.f32(0));
  Value sum = e.forLoop(states.begin, states.end, {zero},
                        [&](Value i, ValueRange r) {
                          Value w = base.exp(e.sub(states.m(i), mSafe));
                          Value contrib = e.select(
                              e.cmpf(arith::CmpFPredicate::OGT, w, e.f32(0)),
                              e.mul(spread(w), states.acc(i, d)), zero);
                          return SmallVector<Value>{e.add(r[0], contrib)};
                        })
                  .getResult(0);
  return e.select(hasWeight, e.divf(sum, spread(total)), zero);
}

Value StateMerge::lse(bool base2) {
  Value v = e.add(mMax, base.log(total));
  if (base2 != base.base2)
    v = e.mul(v, e.f32(base2 ? 1.0 / std::log(2.0) : std::log(2.0)));
  return e.select(hasWeight, v, e.negInf());
}
