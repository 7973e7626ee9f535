//===- SplitKVMerge.cpp - split-KV decode and its merge in one launch -----===//
//
// With `split-kv-merge=fused` (the default), convert-pa-to-gpu builds a
// pa.decode_partial and the pa.merge_segments right after it that merges its
// states over its own work_indptr as one kernel, `pa_decode_split` (ABI kind
// `decode_split`). Its arguments are the decode_partial kernel's, then the
// merge's o and lse, then `merge_counters` ([B, Hq] i32, 0 or the merge
// together flag between launches). A CTA handles work item w of request r
// for the query heads [h0, h0 + n) of its KV head (or head chunk):
//
//   it writes its partial rows o_part[w], lse_part[w] as decode_partial does;
//   every thread: k = work_indptr[r + 1] - work_indptr[r] (loaded before
//     the fence), fence.sc.gpu (membar.gl), then bar.sync;
//   thread 0: the CTA is the last of its request if k == 1 or
//     atom.add(counters[r, h0], 1) == k - 1; the last one fences and puts
//     the counter back to 0;
//   bar.red.or.pred hands "last" to every thread;
//   the last CTA merges rows [work_indptr[r], work_indptr[r + 1]) of its
//     heads (merge_segments' arithmetic, 4 elements a thread) into o[r] and
//     lse[r].
//
// The merge together (emitArrival with a together flag V, kMergeTogetherFlag;
// the decode's and the MLA decode's): a counter at V at launch means every CTA
// is resident (the runtime's cooperative launch). Thread 0 then polls it,
// from the count its own atom.add saw, until the request's k arrivals are
// in (a trap after kMergeTogetherMaxWaitNs), fences, arrives a second time
// (an atom.add whose answer emitArrivalRelease reads after the merge: the
// last CTA to leave puts the counter back to V); every CTA merges a
// share (emitMergeShare: a slot per group of lanes, the group's states
// folded with shuffles; MLAKernelBase::mergeShare for MLA).
//
// A request with no work item (kv_len 0) has no CTA of its own: the CTA of
// the first item after it (of the last item for those at the end, CTA 0 if
// the list is empty) writes its o = 0, lse = -inf.
//
// The host side allocates the counters (gpu.alloc, gpu.memset 0: the last
// CTA's merge) around the launch; the runtime keeps them in the decode plan,
// at 0 or V as the plan merges.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/PagedAttention.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;

/// Rows a step of the last CTA's merge (loads issued together) and of a
/// lane's rows in the merge together (at most 2 up to 64 items).
constexpr int64_t kMergeRowsStep = 8;
constexpr int64_t kMergeShareStep = 2;

MergeSegmentsOp gpukernel::fusableMerge(DecodePartialOp op) {
  ValueRange outs = op.getOuts();
  auto definedBefore = [&](Value v) {
    Operation *d = v.getDefiningOp();
    return !d || d->getBlock() != op->getBlock() || d->isBeforeInBlock(op);
  };
  for (Operation *next = op->getNextNode(); next;
       next = next->getNextNode()) {
    if (auto merge = dyn_cast<MergeSegmentsOp>(next)) {
      if (merge.getOPart() == outs[0] && merge.getLsePart() == outs[1] &&
          merge.getSegments() == op.getWorkIndptr() &&
          merge.getLseBase2() == op.getLseBase2() &&
          llvm::all_of(merge.getOuts(), definedBefore))
        return merge;
      return {};
    }
    // Anything that may touch memory between the two keeps them apart.
    if (!isMemoryEffectFree(next))
      return {};
  }
  return {};
}

SmallVector<Value> gpukernel::fusedMergeOperands(OpBuilder &b,
                                                 MergeSegmentsOp merge) {
  Location loc = merge.getLoc();
  Emitter e{b, loc};
  Value o = merge.getOuts()[0], lse = merge.getOuts()[1];
  auto ot = cast<MemRefType>(o.getType());
  auto type = MemRefType::get({ShapedType::kDynamic, ot.getDimSize(1)},
                              b.getI32Type());
  SmallVector<Value> sizes{e.dim(o, 0)};
  auto counters = gpu::AllocOp::create(b, loc, type, /*asyncToken=*/Type(),
                                       ValueRange{}, sizes, ValueRange{},
                                       /*hostShared=*/false);
  gpu::MemsetOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{},
                        counters.getMemref(), e.i32(0));
  return {o, lse, counters.getMemref()};
}

void gpukernel::finishFusedLaunch(MergeSegmentsOp merge, Value counters) {
  OpBuilder b(merge);
  gpu::DeallocOp::create(b, merge.getLoc(), /*asyncToken=*/Type(),
                         ValueRange{}, counters);
  merge.erase();
}

Value gpukernel::safeShift(KernelEmitter &e, Value x) {
  return e.select(e.cmpf(arith::CmpFPredicate::OEQ, x, e.negInf()), e.f32(0),
                  x);
}

Value gpukernel::mergedLse(KernelEmitter &e, Value shift, Value w,
                           bool lseBase2) {
  Value lse = e.add(shift, e.lg2(w));
  if (!lseBase2)
    lse = e.mul(lse, e.f32(kLn2));
  return e.select(e.cmpf(arith::CmpFPredicate::OGT, w, e.f32(0)), lse,
                  e.negInf());
}

Value gpukernel::invOrZero(KernelEmitter &e, Value w, Value num) {
  return e.select(e.cmpf(arith::CmpFPredicate::OGT, w, e.f32(0)),
                  e.divf(num ? num : e.f32(1), w), e.f32(0));
}

MergeState gpukernel::foldRows(KernelEmitter &e, MergeState st,
                               ArrayRef<Value> lse2, ArrayRef<Value> o,
                               ArrayRef<Value> in) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  auto vec = st.acc ? dyn_cast<VectorType>(st.acc.getType()) : VectorType();
  auto spread = [&](Value x) -> Value { return vec ? e.splat(x, vec) : x; };
  SmallVector<Value> x;
  Value mx = st.m;
  for (auto [l, inside] : llvm::zip(lse2, in)) {
    x.push_back(e.select(inside, l, e.negInf()));
    mx = e.maxf(mx, x.back());
  }
  Value shift = safeShift(e, mx);
  // The state so far, from its shift to the new one (0 when it had none).
  Value scale = e.ex2(e.sub(st.m, shift));
  Value w = e.mul(st.w, scale);
  Value acc = st.acc ? e.mul(st.acc, spread(scale)) : Value();
  for (auto [j, xj] : llvm::enumerate(x)) {
    Value wj = e.ex2(e.sub(xj, shift));
    Value counts = e.cmpf(arith::CmpFPredicate::OGT, wj, e.f32(0));
    w = e.add(w, e.select(counts, wj, e.f32(0)));
    if (acc)
      acc = e.select(counts, LLVM::FMAOp::create(b, loc, spread(wj), o[j], acc),
                     acc);
  }
  return {mx, w, acc};
}

SmallVector<Value> gpukernel::forRowSteps(
    KernelEmitter &e, Value count, Value first, Value spread,
    int64_t rowsPerStep, ValueRange init,
    function_ref<SmallVector<Value>(ArrayRef<Value>, ArrayRef<Value>,
                                    ValueRange)>
        body) {
  Value last = e.sub(count, e.idx(1));
  // A constant spread gives a constant step (visible in the IR).
  Value step = e.mul(spread, e.idx(rowsPerStep));
  if (std::optional<int64_t> c = getConstantIntValue(spread))
    step = e.idx(*c * rowsPerStep);
  scf::ForOp loop =
      e.forLoop(e.idx(0), count, step, init,
                [&](Value c0, ValueRange r) -> SmallVector<Value> {
                  SmallVector<Value> rows, in;
                  for (int64_t j = 0; j < rowsPerStep; ++j) {
                    Value i = e.add(c0, e.add(first, e.mul(spread, e.idx(j))));
                    Value inside = e.cmpi(Pred::ult, i, count);
                    in.push_back(inside);
                    rows.push_back(e.select(inside, i, last));
                  }
                  return body(rows, in, r);
                });
  return SmallVector<Value>(loop.getResults());
}

namespace {

/// The fused merge's reads and writes of one output slot, head h, elements
/// [d, d + width) (width 4 where the head dim allows, else 1): both the
/// last CTA's merge and the merge together's share go through them.
struct SlotIO {
  KernelEmitter &e;
  const FusedMerge &m;
  int64_t width;

  /// The lse of partial row `row` in base 2.
  Value lse(Value row, Value h) const {
    return e.mul(e.load(m.lsePart, {row, h}),
                 e.f32(m.lseBase2 ? 1.0 : kLog2e));
  }
  /// The o of partial row `row` (f32; a vector when width > 1).
  Value o(Value row, Value h, Value d) const {
    if (width == 1)
      return e.load(m.oPart, {row, h, d});
    return vector::LoadOp::create(
        e.b, e.loc, VectorType::get({width}, e.b.getF32Type()), m.oPart,
        ValueRange{row, h, d});
  }
  /// The unnormalized state of slot (h, d) over the rows begin + i for i in
  /// [0, count) from `first`, `spread` apart, `step` rows' loads a step
  /// (forRowSteps / foldRows).
  MergeState fold(Value begin, Value count, Value first, Value spread,
                  int64_t step, Value h, Value d) const {
    Value zero = e.f32(0);
    if (width > 1)
      zero = e.splat(zero, VectorType::get({width}, e.b.getF32Type()));
    SmallVector<Value> st = forRowSteps(
        e, count, first, spread, step, {e.negInf(), e.f32(0), zero},
        [&](ArrayRef<Value> rows, ArrayRef<Value> in,
            ValueRange r) -> SmallVector<Value> {
          SmallVector<Value> lses, os;
          for (Value i : rows) {
            Value row = e.add(begin, i);
            lses.push_back(lse(row, h));
            os.push_back(o(row, h, d));
          }
          MergeState next = foldRows(e, {r[0], r[1], r[2]}, lses, os, in);
          return {next.m, next.w, next.acc};
        });
    return {st[0], st[1], st[2]};
  }
  /// Stores the merged `o` (f32) into row `request` of o and, in the slot
  /// of d = 0, `lse()` (in the merge's base) into lse.
  void store(Value request, Value h, Value d, Value o,
             function_ref<Value()> lse) const {
    Type oElem = cast<MemRefType>(m.o.getType()).getElementType();
    if (width == 1) {
      e.store(e.fromF32(o, oElem), m.o, {request, h, d});
    } else {
      if (!oElem.isF32())
        o = arith::TruncFOp::create(e.b, e.loc,
                                    VectorType::get({width}, oElem), o);
      vector::StoreOp::create(e.b, e.loc, o, m.o, ValueRange{request, h, d});
    }
    e.ifThen(e.cmpi(Pred::eq, d, e.idx(0)),
             [&]() { e.store(lse(), m.lse, {request, h}); });
  }
};

/// merge_segments over rows [begin, end) for the CTA's heads, written to
/// row `request` of o / lse: thread i handles (head j, elements [d, d + W))
/// with W = 4 where the head dim allows, over the rows kMergeRowsStep at a
/// time (foldRows). One CTA merges all of a request's rows: a rolled loop
/// paid an L2 round trip per row (H100, 2026-11-25: 128 rows of 1 x 8192
/// took 13 us longer than merge_segments' CTA per head), then three passes
/// (maximum, weights, elements) unrolled by 8 two round trips at 8 rows.
void emitMergeRows(KernelEmitter &e, const FusedMerge &m, Value request,
                   Value begin, Value end, const CTAHeads &heads,
                   int64_t headDim, int64_t threads) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  int64_t width = headDim % 4 == 0 ? 4 : 1;
  int64_t perHead = headDim / width;
  SlotIO io{e, m, width};
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  scf::ForOp::create(
      b, loc, tid, e.idx(heads.count * perHead), e.idx(threads), ValueRange{},
      [&](OpBuilder &, Location, Value idx, ValueRange) {
        Value j = e.divui(idx, e.idx(perHead));
        Value d = e.mul(e.remui(idx, e.idx(perHead)), e.idx(width));
        Value h = e.add(heads.first, j);
        auto merge = [&]() {
          MergeState st = io.fold(begin, e.sub(end, begin), e.idx(0), e.idx(1),
                                  kMergeRowsStep, h, d);
          Value inv = invOrZero(e, st.w);
          Value o = e.mul(
              st.acc, width == 1
                          ? inv
                          : e.splat(inv, cast<VectorType>(st.acc.getType())));
          io.store(request, h, d, o, [&]() {
            return mergedLse(e, safeShift(e, st.m), st.w, m.lseBase2);
          });
        };
        if (heads.valid)
          e.ifThen(e.cmpi(Pred::ult, j, heads.valid), merge);
        else
          merge();
        scf::YieldOp::create(b, loc);
      });
}

/// The merge together's share of CTA `k` of the S = end - begin CTAs of
/// `request`: the output slots [k T / S, (k + 1) T / S) of the T = heads x
/// D / W of the CTA's heads. A group of R = min(32, 2^ceil(log2 S)) lanes
/// takes a slot: lane r merges rows begin + r, begin + r + R, ...
/// (foldRows), then the group folds its R states with xor shuffles, so
/// that a slot costs one or two rows' loads in each lane rather than S in
/// one (at S = 33 or 64 splits of one request, GQA 8's 256 slots). The
/// share's integer arithmetic is 32-bit with R's divisions as shifts, and
/// the fold carries unnormalized states (no division until the store):
/// 64-bit divisions by S and R and four divisions a fold step took the
/// CUDA-core MHA decode from 124 to 156 registers (sm_90a, 2026-11-27).
void emitMergeShare(KernelEmitter &e, const FusedMerge &m, Value request,
                    Value begin, Value end, Value k, const CTAHeads &heads,
                    int64_t headDim, int64_t threads) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  int64_t width = headDim % 4 == 0 ? 4 : 1;
  int64_t perHead = headDim / width;
  auto vecF32 = VectorType::get({width}, b.getF32Type());
  SlotIO io{e, m, width};
  // 32-bit: e.divui / e.sub are of index (64-bit) values.
  auto mul = [&](Value x, Value y) -> Value {
    return arith::MulIOp::create(b, loc, x, y);
  };
  auto div = [&](Value x, Value y) -> Value {
    return arith::DivUIOp::create(b, loc, x, y);
  };
  auto sub = [&](Value x, Value y) -> Value {
    return arith::SubIOp::create(b, loc, x, y);
  };
  auto shr = [&](Value x, Value y) -> Value {
    return arith::ShRUIOp::create(b, loc, x, y);
  };
  Value splits = e.toI32(e.sub(end, begin));
  Value total = e.i32(heads.count * perHead);
  Value k32 = e.toI32(k);
  Value lo = div(mul(k32, total), splits);
  Value hi = div(mul(e.add(k32, e.i32(1)), total), splits);
  // R = 2^log: the smallest power of two >= S, at most a warp.
  Value log = e.i32(5);
  for (int64_t l = 4; l >= 0; --l)
    log = e.select(e.cmpi(Pred::ule, splits, e.i32(int64_t(1) << l)),
                   e.i32(l), log);
  Value lanes = arith::ShLIOp::create(b, loc, e.i32(1), log);
  Value tid = e.toI32(gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  Value lane = e.andi(tid, sub(lanes, e.i32(1)));
  Value group = shr(tid, log);
  Value groups = shr(e.i32(threads), log);
  // The lane's rows: begin + lane + i R.
  Value laneIdx = e.toIndex(lane), lanesIdx = e.toIndex(lanes);
  auto spread = [&](Value x) -> Value {
    return width == 1 ? x : e.splat(x, vecF32);
  };
  auto shuffle = [&](Value x, int64_t offset) {
    return gpu::ShuffleOp::create(b, loc, x, e.i32(offset), e.i32(32),
                                  gpu::ShuffleMode::XOR)
        .getShuffleResult();
  };
  // Every lane of a warp runs the same rounds (the shuffles); a lane past
  // the share's slots merges no rows and stores nothing.
  e.forLoop(e.toIndex(lo), e.toIndex(hi), e.toIndex(groups), ValueRange{},
            [&](Value base, ValueRange) -> SmallVector<Value> {
    Value slot = e.add(base, e.toIndex(group));
    Value j = e.divui(slot, e.idx(perHead));
    Value d = e.mul(e.remui(slot, e.idx(perHead)), e.idx(width));
    Value h = e.add(heads.first, j);
    Value active = e.cmpi(Pred::ult, slot, e.toIndex(hi));
    if (heads.valid)
      active = e.andi(active, e.cmpi(Pred::ult, j, heads.valid));
    // The lane's rows, kMergeShareStep a step (foldRows), into its
    // unnormalized state: shift M, weight s, acc = s o (an empty lane: M =
    // 0, s = 0, acc = 0).
    MergeState st =
        io.fold(begin, e.select(active, e.toIndex(splits), e.idx(0)), laneIdx,
                lanesIdx, kMergeShareStep, h, d);
    Value shift = safeShift(e, st.m), weight = st.w, acc = st.acc;
    for (int64_t offset = 16; offset >= 1; offset /= 2) {
      Value oShift = shuffle(shift, offset), oWeight = shuffle(weight, offset);
      Value oAcc;
      if (width == 1) {
        oAcc = shuffle(acc, offset);
      } else {
        oAcc = spread(e.f32(0));
        for (int64_t i = 0; i < width; ++i)
          oAcc = vector::InsertOp::create(
              b, loc,
              shuffle(vector::ExtractOp::create(b, loc, acc, i), offset),
              oAcc, i);
      }
      // Lanes `offset` apart are of one group when offset < R; an empty
      // state (weight 0) counts for nothing whatever its shift.
      Value within = e.cmpi(Pred::ult, e.i32(offset), lanes);
      Value mine = e.cmpf(arith::CmpFPredicate::OGT, weight, e.f32(0));
      Value theirs = e.andi(
          within, e.cmpf(arith::CmpFPredicate::OGT, oWeight, e.f32(0)));
      Value mx = e.select(mine, e.select(theirs, e.maxf(shift, oShift), shift),
                          oShift);
      Value a = e.select(mine, e.ex2(e.sub(shift, mx)), e.f32(0));
      Value c = e.select(theirs, e.ex2(e.sub(oShift, mx)), e.f32(0));
      Value any = arith::OrIOp::create(b, loc, mine, theirs);
      shift = e.select(any, mx, shift);
      // A lane of another group (or an empty one) adds nothing, even a
      // non-finite acc (0 x inf would be NaN).
      weight = e.add(e.mul(weight, a),
                     e.select(theirs, e.mul(oWeight, c), e.f32(0)));
      acc = e.add(e.mul(acc, spread(a)),
                  e.select(theirs, e.mul(oAcc, spread(c)), spread(e.f32(0))));
    }
    e.ifThen(e.andi(active, e.cmpi(Pred::eq, laneIdx, e.idx(0))), [&]() {
      Value some = e.cmpf(arith::CmpFPredicate::OGT, weight, e.f32(0));
      io.store(request, h, d,
               e.select(some, e.divf(acc, spread(weight)), spread(e.f32(0))),
               [&]() { return mergedLse(e, shift, weight, m.lseBase2); });
    });
    return {};
  });
}

} // namespace

void gpukernel::emitArriveAndMerge(KernelEmitter &e, const FusedMerge &m,
                                   Value request, const CTAHeads &heads,
                                   int64_t headDim, int64_t threads,
                                   Value item, int64_t togetherFlag) {
  // The request's row bounds (work_indptr[r], work_indptr[r + 1]) load
  // before the fence, so that their round trip overlaps its wait instead
  // of following it (the plan's arrays are not written by the kernel; the
  // partial rows themselves are read only after the arrival). Every thread's
  // partial stores are performed device-wide before the CTA counts its arrival.
  Value begin = e.loadIdx(m.workIndptr, request);
  Value end = e.loadIdx(m.workIndptr, e.add(request, e.idx(1)));
  NVVM::MembarOp::create(e.b, e.loc, NVVM::MemScopeKind::GPU);
  gpu::BarrierOp::create(e.b, e.loc);
  if (togetherFlag <= 0) {
    emitArriveAndMergeRows(e, m, request, begin, end, heads, headDim, threads,
                           /*fenced=*/true);
    return;
  }
  Arrival a = emitArrival(e, m, request, e.sub(end, begin), heads,
                          /*fenced=*/true, togetherFlag);
  e.ifThen(a.together, [&]() {
    emitMergeShare(e, m, request, begin, end, e.sub(item, begin), heads,
                   headDim, threads);
  });
  e.ifThen(a.last, [&]() {
    emitMergeRows(e, m, request, begin, end, heads, headDim, threads);
  });
  emitArrivalRelease(e, m, request, e.sub(end, begin), heads, a,
                     togetherFlag);
}

Arrival gpukernel::emitArrival(KernelEmitter &e, const FusedMerge &m,
                               Value request, Value items,
                               const CTAHeads &heads, bool fenced,
                               int64_t togetherFlag) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  MLIRContext *ctx = b.getContext();
  Type i1 = b.getI1Type(), i32 = b.getI32Type();
  if (!fenced) {
    NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
    gpu::BarrierOp::create(b, loc);
  }
  SmallVector<Value, 2> counter{request, heads.first};
  Value count = e.toI32(items);
  Value no = arith::ConstantIntOp::create(b, loc, 0, 1);
  Value yes = arith::ConstantIntOp::create(b, loc, 1, 1);
  // Thread 0: the last CTA's test, after waiting for every CTA when the
  // counter asks for the merge together.
  auto lastOf = [&](Value old) {
    Value isLast = e.cmpi(Pred::eq, old, e.sub(count, e.i32(1)));
    e.ifThen(isLast, [&]() {
      // The merge after this reads the other CTAs' rows after this fence;
      // then the counter goes back to 0, ready for the next launch (after
      // the fence, which thus does not wait for the store).
      NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
      e.store(e.i32(0), m.counters, counter);
    });
    return SmallVector<Value>{no, isLast};
  };
  auto waitForAll = [&](Value old) -> SmallVector<Value> {
    // All resident (the runtime launched the grid cooperatively): poll
    // the counter with atomic reads (at the L2, where the arrivals are)
    // until the request's arrivals are in, starting from those this CTA's
    // own arrival saw (the last one to arrive never polls); a wait past
    // kMergeTogetherMaxWaitNs of %globaltimer traps (a launch error rather
    // than a hang should the grid not be resident).
    Value flag = e.i32(togetherFlag);
    auto clock = [&]() {
      return e.inlineAsm("mov.u64 $0, %globaltimer;", "=l", b.getI64Type(),
                         ValueRange{}, /*sideEffects=*/true)[0];
    };
    Value start = clock();
    Value seen = e.add(arith::XOrIOp::create(b, loc, old, flag), e.i32(1));
    auto poll = scf::WhileOp::create(
        b, loc, TypeRange{i32}, ValueRange{seen},
        [&](OpBuilder &nb, Location, ValueRange args) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value waited = arith::SubIOp::create(b, loc, clock(), start);
          Value waiting = e.andi(
              e.cmpi(Pred::ult, args[0], count),
              e.cmpi(Pred::ult, waited,
                     arith::ConstantIntOp::create(b, loc, b.getI64Type(),
                                                  kMergeTogetherMaxWaitNs)));
          scf::ConditionOp::create(b, loc, waiting, args);
        },
        [&](OpBuilder &nb, Location nloc, ValueRange) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value now = memref::AtomicRMWOp::create(
              b, loc, arith::AtomicRMWKind::addi, e.i32(0), m.counters,
              counter);
          scf::YieldOp::create(b, loc,
                               ValueRange{arith::XOrIOp::create(b, loc, now,
                                                                flag)});
        });
    e.ifThen(e.cmpi(Pred::ult, poll.getResult(0), count),
             [&]() { LLVM::Trap::create(b, loc); });
    // The other CTAs' rows are read after this fence.
    NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
    // A second arrival once this CTA is done polling, after the fence so
    // that the fence does not wait for it: its answer emitArrivalRelease
    // reads after the merge (the round trip overlaps the merge's loads).
    // The request's last one puts the counter back to the flag for the
    // next launch (no CTA polls it any more).
    Value left = memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi,
                                             e.i32(1), m.counters, counter);
    return {yes, no, left};
  };
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value none = e.i32(0);
  auto withLeft = [&](SmallVector<Value> v) {
    v.push_back(none);
    return v;
  };
  SmallVector<Value> flags = e.ifThenElse(
      e.cmpi(Pred::eq, tid, e.idx(0)), TypeRange{i1, i1, i32},
      [&]() -> SmallVector<Value> {
        return e.ifThenElse(
            e.cmpi(Pred::eq, items, e.idx(1)), TypeRange{i1, i1, i32},
            [&]() -> SmallVector<Value> { return {no, yes, none}; },
            [&]() -> SmallVector<Value> {
              Value old = memref::AtomicRMWOp::create(
                  b, loc, arith::AtomicRMWKind::addi, e.i32(1), m.counters,
                  counter);
              if (togetherFlag <= 0)
                return withLeft(lastOf(old));
              Value together = e.cmpi(
                  Pred::ne, e.andi(old, e.i32(togetherFlag)), e.i32(0));
              return e.ifThenElse(
                  together, TypeRange{i1, i1, i32},
                  [&]() { return waitForAll(old); },
                  [&]() { return withLeft(lastOf(old)); });
            });
      },
      [&]() -> SmallVector<Value> { return {no, no, none}; });
  // bar.red.or hands thread 0's answers to every thread.
  auto broadcast = [&](Value bit) {
    Value any = NVVM::BarrierOp::create(
                    b, loc, i32, /*barrierId=*/Value(),
                    /*numberOfThreads=*/Value(),
                    NVVM::BarrierReductionAttr::get(
                        ctx, NVVM::BarrierReduction::OR),
                    arith::ExtUIOp::create(b, loc, i32, bit))
                    .getResult(0);
    return e.cmpi(Pred::ne, any, e.i32(0));
  };
  Arrival a;
  a.together = togetherFlag > 0 ? broadcast(flags[0]) : no;
  a.last = broadcast(flags[1]);
  a.left = flags[2];
  return a;
}

void gpukernel::emitArrivalRelease(KernelEmitter &e, const FusedMerge &m,
                                   Value request, Value items,
                                   const CTAHeads &heads, const Arrival &a,
                                   int64_t togetherFlag) {
  if (togetherFlag <= 0)
    return;
  Value flag = e.i32(togetherFlag);
  Value count = e.toI32(items);
  Value tid = gpu::ThreadIdOp::create(e.b, e.loc, gpu::Dimension::x);
  Value lastToLeave = e.cmpi(
      Pred::eq, arith::XOrIOp::create(e.b, e.loc, a.left, flag),
      e.sub(e.add(count, count), e.i32(1)));
  e.ifThen(e.andi(e.andi(a.together, e.cmpi(Pred::eq, tid, e.idx(0))),
                  lastToLeave),
           [&]() { e.store(flag, m.counters, {request, heads.first}); });
}

void gpukernel::emitArriveAndMergeRows(KernelEmitter &e, const FusedMerge &m,
                                       Value request, Value begin, Value end,
                                       const CTAHeads &heads, int64_t headDim,
                                       int64_t threads, bool fenced) {
  Value merges =
      emitArrival(e, m, request, e.sub(end, begin), heads, fenced).last;
  e.ifThen(merges, [&]() {
    emitMergeRows(e, m, request, begin, end, heads, headDim, threads);
  });
}

void gpukernel::emitEmptyRequests(KernelEmitter &e, const FusedMerge &m,
                                  Value x, Value items, Value request,
                                  Value prev, const CTAHeads &heads,
                                  int64_t headDim, int64_t threads) {
  Value batch = e.sub(e.dim(m.workIndptr, 0), e.idx(1));
  // A request without items is the merge of no rows: o = 0, lse = -inf.
  auto emitEmptyRange = [&](Value lo, Value hi) {
    e.forEach(lo, hi, [&](Value r) {
      emitMergeRows(e, m, r, e.idx(0), e.idx(0), heads, headDim, threads);
    });
  };
  Value first = e.cmpi(Pred::eq, x, e.idx(0));
  e.ifThen(e.cmpi(Pred::ult, x, items), [&]() {
    // Those between item x - 1's request and item x's.
    emitEmptyRange(e.select(first, e.idx(0), e.add(prev, e.idx(1))), request);
    // Those after the last item's.
    e.ifThen(e.cmpi(Pred::eq, x, e.sub(items, e.idx(1))),
             [&]() { emitEmptyRange(e.add(request, e.idx(1)), batch); });
  });
  e.ifThen(e.andi(first, e.cmpi(Pred::eq, items, e.idx(0))), [&]() {
    emitEmptyRange(e.idx(0), batch);
  });
}
