//===- CacheBlendToGPU.cpp - kv_deviation / select_topk to GPU kernels ----===//
//
// convert-pa-to-gpu's CacheBlend family (docs/GPU.md, "CacheBlend ops"):
//
// - pa.kv_deviation (new_rows[N, H, D], cached_rows[N, H, D] -> dev[N])
//   becomes `pa_kv_deviation` (ABI kind `kv_deviation`): a warp per token,
//   4 warps a CTA (grid x = ceil(N / 4): the runtime's `batch` symbol for
//   this kind is that CTA count, its rows N are the dims' rows), each
//   lane summing (new - cached)^2 over 16-byte vectors of the token's
//   H x D slice in f32, a warp reduction (gpu.subgroup_reduce, lowered to
//   butterfly shuffles by pa-warp-shuffle-reduce), lane 0 storing the
//   square root. Bandwidth-bound: each element is read once.
// - pa.select_topk (deviation ragged by indptr[B + 1], ratio r) becomes
//   `pa_select_topk` (ABI kind `select_topk`): a CTA of 512 threads per
//   request b.
//   1. k_b = ceil(r * n_b) of the float64 product (the oracle's rounding),
//      and the request's first output slot
//      sum_{i < b} k_i, summed by the CTA's threads (B terms) into a
//      shared counter; thread 0 writes out_indptr[b + 1] (CTA 0 also
//      out_indptr[0] = 0).
//   2. The k-th largest deviation as an order-preserving 32-bit key
//      (x + 0.0 so that -0.0 == +0.0; sign-flipped bits): built bit by bit
//      from the top, keeping each bit when at least k keys are >= the
//      candidate (32 counting passes over the request's deviations, all
//      threads, a shared counter each). No sort: the work is 33 passes
//      over n_b values, whatever k.
//   3. Warp 0 walks the request's tokens in order, 32 at a time: keys above
//      the threshold are selected, and of those equal to it the first
//      k - (number above) by index (ties to the lower index), ranked with
//      vote.sync ballots and popc; each selected token's index is written
//      at its rank, so positions come out in increasing order.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/PagedAttention.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;

namespace {

constexpr int64_t kWarp = 32;
/// kv_deviation: tokens (warps) per CTA.
constexpr int64_t kDeviationWarps = 4;
/// select_topk: threads of a request's CTA. Its 33 counting passes scale
/// with them (H100, 2026-11-25: 40.6 us for one request of 4096 tokens
/// with 128 threads).
constexpr int64_t kTopKThreads = 512;

LogicalResult checkIdentity(Operation *op) {
  for (Value v : op->getOperands())
    if (!isIdentityMemRef(v.getType()))
      return op->emitOpError()
             << "convert-pa-to-gpu expects identity-layout memrefs";
  return success();
}

KernelABI rowsABI(Operation *op, StringRef kind, int64_t threads) {
  KernelABI abi;
  abi.kind = kind.str();
  abi.args = argRoles(op);
  abi.grid = {GridExtentABI{"batch"}, GridExtentABI{"", 1},
              GridExtentABI{"", 1}};
  abi.block = {threads, 1, 1};
  return abi;
}

/// The order-preserving unsigned key of an f32 deviation: -0.0 and +0.0
/// map to one key; a larger float has a larger key (as unsigned).
Value orderKey(KernelEmitter &e, Value x) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Value plusZero = e.add(x, e.f32(0)); // -0.0 + 0.0 = +0.0
  Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), plusZero);
  Value neg = e.cmpi(Pred::slt, bits, e.i32(0));
  Value ones = e.i32(-1);
  Value sign = e.i32(INT32_MIN);
  Value flip = e.select(neg, ones, sign);
  return arith::XOrIOp::create(b, loc, bits, flip);
}

/// popc of an i32.
Value popc(KernelEmitter &e, Value x) {
  return LLVM::CtPopOp::create(e.b, e.loc, e.b.getI32Type(), x);
}

/// A 32-lane ballot of `pred`.
Value ballot(KernelEmitter &e, Value pred) {
  return NVVM::VoteSyncOp::create(e.b, e.loc, e.b.getI32Type(), e.i32(-1),
                                  pred, NVVM::VoteSyncKind::ballot);
}

} // namespace

LogicalResult gpukernel::buildKVDeviation(KVDeviationOp op,
                                          gpu::GPUModuleOp kmod,
                                          StringRef name) {
  if (failed(checkIdentity(op)))
    return failure();
  auto nt = cast<MemRefType>(op.getNewRows().getType());
  int64_t h = nt.getDimSize(1), d = nt.getDimSize(2);
  if (ShapedType::isDynamic(h) || ShapedType::isDynamic(d))
    return op.emitOpError() << "pa.kv_deviation on the GPU needs static "
                               "heads and head dim (the rows' [H, D])";
  Type elem = nt.getElementType();
  int64_t width = 16 / (elem.getIntOrFloatBitWidth() / 8);
  while (width > 1 && d % width != 0)
    width /= 2;
  int64_t threads = kDeviationWarps * kWarp;
  KernelABI abi = rowsABI(op, "kv_deviation", threads);
  IRMapping m;
  gpu::GPUFuncOp func = createKernel(kmod, op, name, TypeRange{}, abi, m);
  Location loc = op.getLoc();
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, loc}};
    Value fresh = m.lookup(op.getNewRows());
    Value cached = m.lookup(op.getCachedRows());
    Value dev = m.lookup(op.getOuts()[0]);
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value cta = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value warp = e.divui(tid, e.idx(kWarp));
    Value lane = e.remui(tid, e.idx(kWarp));
    Value t = e.add(e.mul(cta, e.idx(kDeviationWarps)), warp);
    auto vecT = VectorType::get({width}, elem);
    auto f32Vec = VectorType::get({width}, b.getF32Type());
    int64_t perHead = d / width;
    // The whole warp takes the branch or not (t is per warp).
    e.ifThen(e.cmpi(Pred::ult, t, e.dim(dev, 0)), [&]() {
      Value zero = e.splat(e.f32(0), f32Vec);
      Value acc =
          e.forLoop(lane, e.idx(h * perHead), e.idx(kWarp), {zero},
                    [&](Value i, ValueRange r) -> SmallVector<Value> {
                      Value hh = e.divui(i, e.idx(perHead));
                      Value dd = e.mul(e.remui(i, e.idx(perHead)),
                                       e.idx(width));
                      auto load = [&](Value src) -> Value {
                        Value v = vector::LoadOp::create(
                            b, loc, vecT, src, ValueRange{t, hh, dd}, false,
                            llvm::MaybeAlign(width *
                                             elem.getIntOrFloatBitWidth() /
                                             8));
                        if (!elem.isF32())
                          v = arith::ExtFOp::create(b, loc, f32Vec, v);
                        return v;
                      };
                      Value x = load(fresh);
                      Value y = load(cached);
                      Value diff = arith::SubFOp::create(b, loc, x, y);
                      return {LLVM::FMAOp::create(b, loc, diff, diff, r[0])
                                  .getResult()};
                    })
              .getResult(0);
      Value part = vector::ReductionOp::create(
          b, loc, vector::CombiningKind::ADD, acc);
      Value sum = gpu::SubgroupReduceOp::create(
          b, loc, part, gpu::AllReduceOperation::ADD, /*uniform=*/true);
      e.ifThen(e.cmpi(Pred::eq, lane, e.idx(0)), [&]() {
        // sqrt.rn: correctly rounded, as the CPU lowering's math.sqrt (the
        // llvm.intr.sqrt form would become a libdevice call).
        Value root = e.inlinePtx("sqrt.rn.f32 $0, $1;", sum);
        e.store(root, dev, {t});
      });
    });
    gpu::ReturnOp::create(b, loc);
  }
  OpBuilder b(op);
  Emitter e{b, loc};
  Value n = e.dim(op.getOuts()[0], 0);
  Value ctas = e.divui(e.add(n, e.idx(kDeviationWarps - 1)),
                       e.idx(kDeviationWarps));
  launch(b, op, func, {ctas, e.idx(1), e.idx(1)}, threads);
  return success();
}

LogicalResult gpukernel::buildSelectTopK(SelectTopKOp op,
                                         gpu::GPUModuleOp kmod,
                                         StringRef name) {
  if (failed(checkIdentity(op)))
    return failure();
  int64_t threads = kTopKThreads;
  MLIRContext *ctx = op.getContext();
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  // Two counters (alternating between passes) and the output base.
  auto smem = MemRefType::get({3}, IntegerType::get(ctx, 32),
                              MemRefLayoutAttrInterface(), wg);
  KernelABI abi = rowsABI(op, "select_topk", threads);
  IRMapping m;
  gpu::GPUFuncOp func = createKernel(kmod, op, name, TypeRange{smem}, abi, m);
  Location loc = op.getLoc();
  double ratio = op.getRatio().convertToDouble();
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, loc}};
    Value counters = func.getWorkgroupAttributions()[0];
    Value dev = m.lookup(op.getDeviation());
    Value indptr = m.lookup(op.getIndptr());
    Value positions = m.lookup(op.getOuts()[0]);
    Value outIndptr = m.lookup(op.getOuts()[1]);
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value req = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value first = e.cmpi(Pred::eq, tid, e.idx(0));
    Type f64 = b.getF64Type(), i64 = b.getI64Type();
    // k_i = ceil(r * n_i) (float64), at most n_i.
    auto kOf = [&](Value i) {
      Value hi = e.loadIdx(indptr, e.add(i, e.idx(1)));
      Value lo = e.loadIdx(indptr, i);
      Value n = e.sub(hi, lo);
      Value n64 = arith::IndexCastOp::create(b, loc, i64, n);
      Value nf = arith::SIToFPOp::create(b, loc, f64, n64);
      Value prod = arith::MulFOp::create(
          b, loc, arith::ConstantOp::create(b, loc, b.getF64FloatAttr(ratio)),
          nf);
      // ceil of a product >= 0: truncate, add 1 if something was cut off
      // (exact below 2^53; llvm.intr.ceil would become a libdevice call).
      Value t64 = arith::FPToSIOp::create(b, loc, i64, prod);
      Value back = arith::SIToFPOp::create(b, loc, f64, t64);
      Value cut = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                        back, prod);
      Value k64 = arith::AddIOp::create(
          b, loc, t64, arith::ExtUIOp::create(b, loc, i64, cut));
      Value k = arith::IndexCastOp::create(b, loc, b.getIndexType(), k64);
      return arith::MinSIOp::create(b, loc, k, n).getResult();
    };
    auto addTo = [&](int64_t c, Value x) {
      memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi, x,
                                  counters, ValueRange{e.idx(c)});
    };
    auto setTo = [&](int64_t c, Value x) {
      e.ifThen(first, [&]() { e.store(x, counters, {e.idx(c)}); });
    };
    // 1. The output base: sum_{i < req} k_i.
    setTo(0, e.i32(0));
    setTo(1, e.i32(0));
    setTo(2, e.i32(0));
    gpu::BarrierOp::create(b, loc);
    Value partial =
        e.forLoop(tid, req, e.idx(threads), {e.idx(0)},
                  [&](Value i, ValueRange r) -> SmallVector<Value> {
                    return {e.add(r[0], kOf(i))};
                  })
            .getResult(0);
    addTo(2, e.toI32(partial));
    gpu::BarrierOp::create(b, loc);
    Value base = e.toIndex(e.load(counters, {e.idx(2)}));
    Value start = e.loadIdx(indptr, req);
    Value n = e.sub(e.loadIdx(indptr, e.add(req, e.idx(1))), start);
    Value k = kOf(req);
    e.ifThen(first, [&]() {
      e.store(e.toI32(e.add(base, k)), outIndptr, {e.add(req, e.idx(1))});
      e.ifThen(e.cmpi(Pred::eq, req, e.idx(0)),
               [&]() { e.store(e.i32(0), outIndptr, {e.idx(0)}); });
    });
    Value k32 = e.toI32(k);
    auto keyAt = [&](Value j) {
      return orderKey(e, e.load(dev, {e.add(start, j)}));
    };
    // count(key `pred` bound) over the request, all threads, into shared
    // counter `c` (zero on entry); returns the total after a barrier.
    auto countKeys = [&](arith::CmpIPredicate pred, Value bound, Value c) {
      Value mine =
          e.forLoop(tid, n, e.idx(threads), {e.i32(0)},
                    [&](Value j, ValueRange r) -> SmallVector<Value> {
                      Value hit = e.cmpi(pred, keyAt(j), bound);
                      Value one = arith::ExtUIOp::create(
                          b, loc, b.getI32Type(), hit);
                      return {e.add(r[0], one)};
                    })
              .getResult(0);
      memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi, mine,
                                  counters, ValueRange{c});
      gpu::BarrierOp::create(b, loc);
      return e.load(counters, {c});
    };
    // 2. The threshold: the largest key T with count(key >= T) >= k, built
    // from the top bit (k = 0: no pass selects anything below).
    Value threshold =
        e.forLoop(e.idx(0), e.idx(32), {e.i32(0)},
                  [&](Value i, ValueRange r) -> SmallVector<Value> {
                    Value bit = e.toI32(e.sub(e.idx(31), i));
                    Value cand = arith::OrIOp::create(
                        b, loc, r[0],
                        arith::ShLIOp::create(b, loc, e.i32(1), bit));
                    // Counter (i % 2) counts this pass; thread 0 then zeroes
                    // the other one for the next pass (read by nobody in
                    // this one), ordered by the second barrier.
                    Value parity = e.remui(i, e.idx(2));
                    Value total = countKeys(Pred::uge, cand, parity);
                    Value other = e.sub(e.idx(1), parity);
                    e.ifThen(first, [&]() {
                      e.store(e.i32(0), counters, {other});
                    });
                    gpu::BarrierOp::create(b, loc);
                    Value keep = e.cmpi(Pred::sge, total, k32);
                    return {e.select(keep, cand, r[0])};
                  })
            .getResult(0);
    // The last pass (31, odd) counted into counter 1 and zeroed counter 0:
    // it counts the keys above T.
    Value above = countKeys(Pred::ugt, threshold, e.idx(0));
    Value need = e.sub(k32, above); // keys equal to T to take, by index
    // 3. Warp 0 writes the selected indices in increasing order.
    Value warp0 = e.cmpi(Pred::ult, tid, e.idx(kWarp));
    Value any = e.cmpi(Pred::sgt, k32, e.i32(0));
    e.ifThen(e.andi(warp0, any),
             [&]() {
               Value lane = tid;
               Value lt = NVVM::LaneMaskLtOp::create(b, loc, b.getI32Type());
               e.forLoop(
                   e.idx(0), n, e.idx(kWarp), {e.i32(0), e.i32(0)},
                   [&](Value c0, ValueRange r) -> SmallVector<Value> {
                     Value j = e.add(c0, lane);
                     Value in = e.cmpi(Pred::ult, j, n);
                     Value key = keyAt(e.select(in, j, e.idx(0)));
                     Value gt = e.andi(in, e.cmpi(Pred::ugt, key, threshold));
                     Value eq = e.andi(in, e.cmpi(Pred::eq, key, threshold));
                     Value eqMask = ballot(e, eq);
                     Value eqRank = e.add(
                         r[0], popc(e, arith::AndIOp::create(b, loc, eqMask,
                                                             lt)));
                     Value take = arith::OrIOp::create(
                         b, loc, gt,
                         e.andi(eq, e.cmpi(Pred::slt, eqRank, need)));
                     Value selMask = ballot(e, take);
                     Value off = e.add(
                         r[1], popc(e, arith::AndIOp::create(b, loc, selMask,
                                                             lt)));
                     e.ifThen(take, [&]() {
                       e.store(e.toI32(j), positions,
                               {e.add(base, e.toIndex(off))});
                     });
                     return {e.add(r[0], popc(e, eqMask)),
                             e.add(r[1], popc(e, selMask))};
                   });
             });
    gpu::ReturnOp::create(b, loc);
  }
  OpBuilder b(op);
  Emitter e{b, loc};
  Value batch = e.sub(e.dim(op.getIndptr(), 0), e.idx(1));
  launch(b, op, func, {batch, e.idx(1), e.idx(1)}, threads);
  return success();
}
