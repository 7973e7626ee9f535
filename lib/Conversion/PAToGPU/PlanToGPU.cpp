//===- PlanToGPU.cpp - pa.plan_split_kv to a GPU kernel -------------------===//
//
// convert-pa-to-gpu's planning family: a memref-form pa.plan_split_kv
// (kv_indptr[B + 1], kv_last_page_len[B] -> the fixed-chunk work list
// work_indptr[B + 1], work_request / work_start / work_end[Wcap]) becomes
// the kernel `pa_plan_split_kv` (ABI kind `plan_split_kv`), a CTA per
// request b (grid x = B), so that a split-KV decode can be planned on the
// device (a CUDA graph replays it with new lengths, no host round trip):
//
//   n_i = ceil(kv_len_i / C) (0 for a request without tokens), kv_len from
//   the page table as in docs/Semantics.md section 3;
//   start = sum_{i < b} n_i: the CTA's threads sum the earlier requests'
//   items into a shared counter; thread 0 writes work_indptr[b + 1] =
//   start + n_b (CTA 0 also work_indptr[0] = 0);
//   thread t writes items c = t, t + threads, ... < n_b at w = start + c:
//   work_request[w] = b, work_start[w] = c * C, work_end[w] = min((c + 1)
//   * C, kv_len_b); items past the outs' capacity (their dim) are not
//   written (the runtime sizes them by workListBound and checks).
//
// O(B) per CTA, as pa.pack_mask's kernel (MaskToGPU.cpp).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/PagedAttention.h"

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;

LogicalResult gpukernel::buildPlanSplitKV(PlanSplitKVOp op,
                                          gpu::GPUModuleOp kmod,
                                          StringRef name, int64_t threads) {
  IRMapping m;
  FailureOr<gpu::GPUFuncOp> kernel =
      createSegmentKernel(op, kmod, name, "plan_split_kv", threads, m);
  if (failed(kernel))
    return failure();
  gpu::GPUFuncOp func = *kernel;
  Location loc = op.getLoc();
  int64_t chunk = static_cast<int64_t>(op.getChunkSize());
  int64_t pageSize = static_cast<int64_t>(op.getPageSize());
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, loc}};
    Value counter = func.getWorkgroupAttributions()[0];
    Value indptr = m.lookup(op.getKvIndptr());
    Value last = m.lookup(op.getKvLastPageLen());
    Value workIndptr = m.lookup(op.getOuts()[0]);
    Value request = m.lookup(op.getOuts()[1]);
    Value startOut = m.lookup(op.getOuts()[2]);
    Value endOut = m.lookup(op.getOuts()[3]);
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value req = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value first = e.cmpi(Pred::eq, tid, e.idx(0));
    // kv_len and item count of request i.
    auto kvLen = [&](Value i) {
      Value lo = e.loadIdx(indptr, i);
      Value hi = e.loadIdx(indptr, e.add(i, e.idx(1)));
      Value pages = e.sub(hi, lo);
      Value lastLen = e.loadIdx(last, i);
      Value full = e.mul(e.sub(pages, e.idx(1)), e.idx(pageSize));
      Value len = e.add(full, lastLen);
      return e.select(e.cmpi(Pred::sgt, pages, e.idx(0)), len, e.idx(0));
    };
    auto itemsOf = [&](Value len) {
      return e.divui(e.add(len, e.idx(chunk - 1)), e.idx(chunk));
    };
    Value start = e.ctaSumBefore(counter, tid, req, threads, [&](Value i) {
      return itemsOf(kvLen(i));
    });
    Value len = kvLen(req);
    Value items = itemsOf(len);
    e.ifThen(first, [&]() {
      e.store(e.toI32(e.add(start, items)), workIndptr,
              {e.add(req, e.idx(1))});
      e.ifThen(e.cmpi(Pred::eq, req, e.idx(0)),
               [&]() { e.store(e.i32(0), workIndptr, {e.idx(0)}); });
    });
    Value capacity = e.dim(request, 0);
    Value reqI32 = e.toI32(req);
    scf::ForOp::create(
        b, loc, tid, items, e.idx(threads), ValueRange{},
        [&](OpBuilder &, Location, Value c, ValueRange) {
          Value w = e.add(start, c);
          e.ifThen(e.cmpi(Pred::ult, w, capacity), [&]() {
            Value lo = e.mul(c, e.idx(chunk));
            Value hi = e.add(lo, e.idx(chunk));
            Value end = e.select(e.cmpi(Pred::ult, hi, len), hi, len);
            e.store(reqI32, request, {w});
            e.store(e.toI32(lo), startOut, {w});
            e.store(e.toI32(end), endOut, {w});
          });
          scf::YieldOp::create(b, loc);
        });
    gpu::ReturnOp::create(b, loc);
  }
  OpBuilder b(op);
  Emitter e{b, loc};
  Value batch = e.dim(op.getKvLastPageLen(), 0);
  launch(b, op, func, {batch, e.idx(1), e.idx(1)}, threads);
  return success();
}
