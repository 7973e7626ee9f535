//===- MaskToGPU.cpp - pa.pack_mask to a GPU kernel -----------------------===//
//
// convert-pa-to-gpu's mask family: a memref-form pa.pack_mask (mask[n] of
// i1 or i8 ragged by indptr[B + 1] -> packed bytes and packed_indptr, the
// layout of pa.prefill's custom mask and FlashInfer's segment_packbits)
// becomes the kernel `pa_pack_mask` (ABI kind `pack_mask`), a CTA per
// segment b (grid x = B):
//
//   start = sum_{i < b} ceil(n_i / 8): the CTA's threads sum the earlier
//   segments' byte counts (B terms) into a shared counter; thread 0 writes
//   packed_indptr[b + 1] = start + ceil(n_b / 8) (CTA 0 also
//   packed_indptr[0] = 0);
//   thread t builds bytes k = t, t + threads, ...: bit j of byte k is
//   mask[indptr[b] + 8k + j] != 0 where 8k + j < n_b, else 0.
//
// Each CTA reads its B-entry prefix again: O(B) per CTA, fine for the
// batches of a prefill (thousands of requests), not for millions.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/PagedAttention.h"

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;

LogicalResult gpukernel::buildPackMask(PackMaskOp op, gpu::GPUModuleOp kmod,
                                       StringRef name, int64_t threads) {
  IRMapping m;
  FailureOr<gpu::GPUFuncOp> kernel =
      createSegmentKernel(op, kmod, name, "pack_mask", threads, m);
  if (failed(kernel))
    return failure();
  gpu::GPUFuncOp func = *kernel;
  Location loc = op.getLoc();
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, loc}};
    Value counter = func.getWorkgroupAttributions()[0];
    Value mask = m.lookup(op.getMask());
    Value indptr = m.lookup(op.getIndptr());
    Value packed = m.lookup(op.getOuts()[0]);
    Value packedIndptr = m.lookup(op.getOuts()[1]);
    Type maskElem = cast<MemRefType>(mask.getType()).getElementType();
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value seg = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value first = e.cmpi(Pred::eq, tid, e.idx(0));
    // ceil(n_i / 8) of segment i.
    auto bytesOf = [&](Value i) {
      Value hi = e.loadIdx(indptr, e.add(i, e.idx(1)));
      Value lo = e.loadIdx(indptr, i);
      Value n = e.sub(hi, lo);
      return e.divui(e.add(n, e.idx(7)), e.idx(8));
    };
    Value start = e.ctaSumBefore(counter, tid, seg, threads, bytesOf);
    Value bytes = bytesOf(seg);
    e.ifThen(first, [&]() {
      Value end = e.add(start, bytes);
      e.store(e.toI32(end), packedIndptr, {e.add(seg, e.idx(1))});
      e.ifThen(e.cmpi(Pred::eq, seg, e.idx(0)),
               [&]() { e.store(e.i32(0), packedIndptr, {e.idx(0)}); });
    });
    Value base = e.loadIdx(indptr, seg);
    Value hi = e.loadIdx(indptr, e.add(seg, e.idx(1)));
    Value n = e.sub(hi, base);
    scf::ForOp::create(
        b, loc, tid, bytes, e.idx(threads), ValueRange{},
        [&](OpBuilder &, Location, Value k, ValueRange) {
          Value byte = e.i32(0);
          for (int64_t j = 0; j < 8; ++j) {
            Value bit = e.add(e.mul(k, e.idx(8)), e.idx(j));
            Value inside = e.cmpi(Pred::ult, bit, n);
            // Past the segment, read element 0 of it (in bounds: the
            // segment has an element whenever it has a byte) and drop it.
            Value at = e.select(inside, e.add(base, bit), base);
            Value x = e.load(mask, {at});
            Value set = maskElem.isInteger(1)
                            ? x
                            : e.cmpi(Pred::ne, x,
                                     arith::ConstantOp::create(
                                         b, loc,
                                         b.getIntegerAttr(maskElem, 0)));
            Value on = e.andi(inside, set);
            Value one = arith::ExtUIOp::create(b, loc, b.getI32Type(), on);
            Value shifted = arith::ShLIOp::create(b, loc, one, e.i32(j));
            byte = arith::OrIOp::create(b, loc, byte, shifted);
          }
          Value b8 = arith::TruncIOp::create(b, loc, b.getI8Type(), byte);
          e.store(b8, packed, {e.add(start, k)});
          scf::YieldOp::create(b, loc);
        });
    gpu::ReturnOp::create(b, loc);
  }
  OpBuilder b(op);
  Emitter e{b, loc};
  Value batch = e.sub(e.dim(op.getIndptr(), 0), e.idx(1));
  launch(b, op, func, {batch, e.idx(1), e.idx(1)}, threads);
  return success();
}
