//===- MLAWgmma.cpp - pa.mla_decode on Hopper warpgroup MMAs --------------===//
//
// convert-pa-to-gpu's MLA decode with mla-mma=wgmma (or auto from 64 query
// heads; docs/GPU.md, "MLA decode on wgmma"). MLA decode at 128 heads is
// compute-bound (2 x 1088 FLOP per head and token against 1152 bytes), and
// the mma.sync kernel is bound by the shared-memory reads of its ldmatrix
// fragments. Here a CTA takes 64 query heads (one m64 block; heads past H
// are zero rows) of a request and a split of its keys, with two warpgroups
// that read their operands straight from shared memory:
//
//   * Q (q_nope | q_pe) and the K/V tiles of 64 tokens (two stages, cp.async
//     through the page table, MLAKernelBase::copyTile) in wgmma's 128-byte
//     swizzle layout (wgmmaIndex: width / 64 column blocks of [64][64]);
//     after each wait a fence.proxy.async makes the copies visible to the
//     async proxy wgmma reads through.
//   * S = Q K^T: warpgroup w takes keys [32 w, 32 w + 32) of the tile,
//     wgmma m64n32k16 over the width / 16 k steps (A = Q, B = K, both
//     K-major): 16 f32 a thread.
//   * the softmax: row maxima exchanged between the warpgroups through
//     shared memory (one barrier), P = 2^(s - m) written to the shared P
//     tile ([64][64], swizzled) in the data type (one barrier); each
//     warpgroup keeps the row sums of its own keys, added at the end.
//   * O += P V: warpgroup w takes output columns [w D_ckv / 2, (w + 1)
//     D_ckv / 2), wgmma m64n(D_ckv / 2)k16 over the tile's 4 k steps (A = P,
//     B = the tile's first D_ckv columns, MN-major): D_ckv / 4 f32 a thread
//     (128 for DeepSeek's 512).
//
// The grid stays (batch, head blocks, splits) but a CTA takes request
// `id / head blocks` and head block `id % head blocks` of its linear id
// in the (x, y) plane, so that the CTAs reading the same request's cache
// run side by side (not measured apart from the rest: Nsight Compute saw an
// L2 hit rate of 4% at 64 x 8192, where both head blocks run in one wave
// either way).
//
//===----------------------------------------------------------------------===//

#include "MLAKernel.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;
using FPred = arith::CmpFPredicate;

namespace {

constexpr int64_t kRows = kMLAWgmmaRows;
constexpr int64_t kKeys = kMLATileKeys;
constexpr int64_t kGroupKeys = kKeys / kMLAWgmmaGroups;

class MLAWgmmaKernel : MLAKernelBase {
public:
  MLAWgmmaKernel(KernelEmitter &e, const MLAShape &s)
      : MLAKernelBase(e, s), wg{e, s.elem} {}

  void build(Value qNope, Value qPe, Value cache, const PageTable &pt,
             const FusedMerge &split);

private:
  WgmmaOps wg;
  /// The 1-D element view of dynamic shared memory, its f32 view of the
  /// row statistics, the warpgroup, the warp within it, lane / 4 and lane
  /// % 4.
  Value smem, red, group, warpInGroup, quadRow, quadCol;

  /// The output columns of a warpgroup (N of its O += P V).
  int64_t groupCols() const { return s.ckv / kMLAWgmmaGroups; }
  /// Element offset of element `col` of row `row` of the swizzled region
  /// of 64 rows at element `base`: wgmmaIndex's layout as one offset
  /// (line * 64 + the XOR'd column). Calling wgmmaIndex and flattening its
  /// (row, column) divides by the lines of a row (9) on the copies' path:
  /// 255 registers instead of 243 and 104 bytes of spills in the 40-head
  /// kernel, so the offset is computed here.
  Value swizzled(Value base, Value row, Value col) {
    Value block = e.divui(col, e.idx(64));
    Value line = e.add(e.mul(block, e.idx(kRows)), row);
    return e.add(base, e.add(e.mul(line, e.idx(64)),
                             swizzleCol(e, row, e.remui(col, e.idx(64)), 8)));
  }
  /// First element of K/V stage `stage` (an index).
  Value stageBase(Value stage) {
    return e.mul(e.add(stage, e.idx(1)), e.idx(s.regionElems()));
  }
  /// Row half `h` of the thread's accumulator rows: 16 (warp in group) +
  /// lane / 4 + 8 h.
  Value accRow(int64_t h) {
    return e.add(e.mul(warpInGroup, e.idx(16)),
                 e.add(quadRow, e.idx(8 * h)));
  }
  /// Index of row statistic `which` (0 max, 1 sum) of row `row` by
  /// warpgroup `g`.
  Value redIndex(int64_t which, Value g, Value row) {
    return e.add(e.mul(e.add(e.mul(e.idx(which), e.idx(kMLAWgmmaGroups)), g),
                       e.idx(kRows)),
                 row);
  }
  /// A descriptor advanced by a run-time number of bytes (an index, a
  /// multiple of 16).
  Value advanceBy(Value desc, Value bytes) {
    return e.add(desc, arith::IndexCastOp::create(
                           b, loc, b.getI64Type(),
                           e.divui(bytes, e.idx(16))));
  }
};

void MLAWgmmaKernel::build(Value qNope, Value qPe, Value cache,
                           const PageTable &pt, const FusedMerge &split) {
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = e.remui(tid, e.idx(32));
  warp = e.divui(tid, e.idx(32));
  group = e.divui(warp, e.idx(4));
  warpInGroup = e.remui(warp, e.idx(4));
  quadRow = e.divui(lane, e.idx(4));
  quadCol = e.remui(lane, e.idx(4));
  // The CTAs of one request's head blocks next to each other.
  Value id = e.add(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                   e.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::y),
                         gpu::GridDimOp::create(b, loc, gpu::Dimension::x)));
  Value headBlocks = gpu::GridDimOp::create(b, loc, gpu::Dimension::y);
  setup(pt, e.divui(id, headBlocks),
        e.mul(e.remui(id, headBlocks), e.idx(kRows)));

  smem = sharedView({s.redOffset() / s.elemBytes()}, s.elem, 0);
  red = sharedView({s.redFloats()}, f32(), s.redOffset());

  // Q and the first K/V tile in flight.
  copyQ(qNope, qPe, smem, [&](Value r, Value col) -> SmallVector<Value> {
    return {swizzled(e.idx(0), r, col)};
  });
  Value tiles = numTiles();
  bool onePage = pagePerTile();
  Value base0 = stageBase(e.idx(0));
  copyTile(cache, pt, kvStart, smem,
           [&](Value r, Value col) -> SmallVector<Value> {
             return {swizzled(base0, r, col)};
           },
           onePage ? tilePage(pt, e.idx(0), tiles) : Value());
  commitAndWait(/*wait=*/false);

  // Descriptors: K-major ones (Q, K, P) from the start of shared memory
  // (Q's place), MN-major ones (V: 64-column blocks 64 rows x 128 bytes
  // apart).
  Value addr = wg.address(smem);
  Value descK = wg.descriptor(addr, 16);
  Value descV = wg.descriptor(addr, kKeys * 128);
  Value descP = wg.advance(descK, s.pOffset());
  int64_t blockBytes = kRows * 128;
  // The warpgroup's keys within a tile, and its output columns.
  Value groupKeyBytes = e.mul(group, e.idx(kGroupKeys * 128));
  Value groupColBytes = e.mul(group, e.idx(groupCols() / 64 * blockBytes));
  double qkScale = s.softCap ? s.smScale / *s.softCap : s.smScale * kLog2e;
  int64_t kSteps = s.width() / 16, accRegs = groupCols() / 2;
  Value laneCol = e.mul(quadCol, e.idx(2));
  Value quad0 = e.cmpi(Pred::eq, quadCol, e.idx(0));
  Value other = e.sub(e.idx(1), group);

  // State: m[2], l[2] (row halves; l of the warpgroup's own keys, this
  // thread's columns), acc[accRegs].
  SmallVector<Value> init{e.negInf(), e.negInf(), e.f32(0), e.f32(0)};
  for (int64_t i = 0; i < accRegs; ++i)
    init.push_back(e.f32(0));
  // With a page per tile, the page of the next tile to copy (loaded one
  // tile ahead).
  if (onePage)
    init.push_back(tilePage(pt, e.idx(1), tiles));
  auto loop = e.forLoop(
      e.idx(0), tiles, init,
      [&](Value t, ValueRange st) -> SmallVector<Value> {
        // Tile t has landed (this thread's copies, visible to the async
        // proxy, then everyone's); every warpgroup is done with tile t - 1,
        // whose stage takes tile t + 1.
        commitAndWait(/*wait=*/true);
        wg.fenceProxyAsync();
        gpu::BarrierOp::create(b, loc);
        Value t0 = e.add(kvStart, e.mul(t, e.idx(kKeys)));
        Value stage = e.remui(t, e.idx(kMLAStages));
        Value nextT = e.add(t, e.idx(1));
        Value stageBytes =
            e.mul(stageBase(stage), e.idx(s.elemBytes()));

        // S = Q K^T over the warpgroup's 32 keys: k step kk is in column
        // block kk / 4 at byte (kk % 4) * 32 of each 128-byte line.
        Value kDesc = advanceBy(descK, e.add(stageBytes, groupKeyBytes));
        wg.fence();
        SmallVector<Value> sAcc;
        for (int64_t kk = 0; kk < kSteps; ++kk) {
          int64_t off = (kk / 4) * blockBytes + (kk % 4) * 32;
          sAcc = wg.mmaAsync(kGroupKeys, sAcc, wg.advance(descK, off), {},
                             wg.advance(kDesc, off), /*transB=*/false);
        }
        // The next tile's copies while S runs (its stage was last read by
        // O += P V of tile t - 1, which every warpgroup waited for before
        // the barrier above).
        wg.commit();
        e.ifThen(e.cmpi(Pred::ult, nextT, tiles), [&]() {
          Value next = stageBase(e.remui(nextT, e.idx(kMLAStages)));
          copyTile(cache, pt, e.add(kvStart, e.mul(nextT, e.idx(kKeys))),
                   smem, [&](Value r, Value col) -> SmallVector<Value> {
                     return {swizzled(next, r, col)};
                   },
                   onePage ? st.back() : Value());
        });
        commitAndWait(/*wait=*/false);
        Value pageAfter =
            onePage ? tilePage(pt, e.add(t, e.idx(2)), tiles) : Value();
        wg.wait(0);
        sAcc = wg.fenceOperands(sAcc);

        // Base-2 logits, keys past the split's end at -inf: register 4 j +
        // 2 h + i is row accRow(h), key 32 w + 8 j + 2 (lane % 4) + i.
        Value key0 = e.add(t0, e.add(e.mul(group, e.idx(kGroupKeys)),
                                     laneCol));
        std::array<SmallVector<Value>, 2> x;
        for (int64_t j = 0; j < kGroupKeys / 8; ++j)
          for (int64_t h = 0; h < 2; ++h)
            for (int64_t i = 0; i < 2; ++i) {
              Value v = e.mul(sAcc[4 * j + 2 * h + i], e.f32(qkScale));
              if (s.softCap)
                v = e.mul(e.tanh(v), e.f32(*s.softCap * kLog2e));
              Value key = e.add(key0, e.idx(8 * j + i));
              x[h].push_back(
                  e.select(e.cmpi(Pred::ult, key, kvEnd), v, e.negInf()));
            }
        // Row maxima of the warpgroup's keys, exchanged.
        std::array<Value, 2> mx;
        for (int64_t h = 0; h < 2; ++h) {
          mx[h] = x[h][0];
          for (Value v : ArrayRef<Value>(x[h]).drop_front())
            mx[h] = e.maxf(mx[h], v);
          mx[h] = quadReduce(mx[h], /*isMax=*/true);
          Value m = mx[h];
          e.ifThen(quad0, [&]() {
            e.store(m, red, {redIndex(0, group, accRow(h))});
          });
        }
        gpu::BarrierOp::create(b, loc);
        SmallVector<Value> next(st.begin(), st.end());
        std::array<Value, 2> alpha;
        VectorType two = VectorType::get({2}, s.elem);
        for (int64_t h = 0; h < 2; ++h) {
          Value row = accRow(h);
          Value m = e.maxf(e.maxf(st[h], mx[h]),
                           e.load(red, {redIndex(0, other, row)}));
          Value mUse =
              e.select(e.cmpf(FPred::OEQ, m, e.negInf()), e.f32(0), m);
          alpha[h] = e.ex2(e.sub(st[h], mUse));
          next[h] = m;
          Value sum = e.f32(0);
          for (Value &v : x[h]) {
            v = e.ex2(e.sub(v, mUse));
            sum = e.add(sum, v);
          }
          next[2 + h] = LLVM::FMAOp::create(b, loc, st[2 + h], alpha[h], sum);
          // P of the warpgroup's keys into the shared P tile.
          Value pBase = e.idx(s.pOffset() / s.elemBytes());
          for (int64_t j = 0; j < kGroupKeys / 8; ++j) {
            Value pv = vector::FromElementsOp::create(
                b, loc, two,
                ValueRange{e.fromF32(x[h][2 * j], s.elem),
                           e.fromF32(x[h][2 * j + 1], s.elem)});
            Value key = e.add(e.mul(group, e.idx(kGroupKeys)),
                              e.add(e.idx(8 * j), laneCol));
            vector::StoreOp::create(b, loc, pv, smem,
                                    ValueRange{swizzled(pBase, row, key)},
                                    /*nontemporal=*/false,
                                    llvm::MaybeAlign(2 * s.elemBytes()));
          }
        }
        wg.fenceProxyAsync();
        gpu::BarrierOp::create(b, loc);
        // O = alpha O + P V over the warpgroup's columns.
        SmallVector<Value> acc;
        for (int64_t r = 0; r < accRegs; ++r)
          acc.push_back(e.mul(st[4 + r], alpha[(r / 2) % 2]));
        acc = wg.fenceOperands(acc);
        Value vDesc = advanceBy(descV, e.add(stageBytes, groupColBytes));
        wg.fence();
        for (int64_t kk = 0; kk < kKeys / 16; ++kk)
          acc = wg.mmaAsync(groupCols(), acc, wg.advance(descP, kk * 32), {},
                            wg.advance(vDesc, kk * 16 * 128),
                            /*transB=*/true);
        wg.commitAndWait(0);
        acc = wg.fenceOperands(acc);
        for (int64_t r = 0; r < accRegs; ++r)
          next[4 + r] = acc[r];
        if (onePage)
          next.back() = pageAfter;
        return next;
      });
  // No copy is left in flight at the exit.
  commitAndWait(/*wait=*/true);
  ValueRange st = loop.getResults();

  // l = the sums of both warpgroups' keys.
  std::array<Value, 2> l;
  for (int64_t h = 0; h < 2; ++h) {
    l[h] = quadReduce(st[2 + h], /*isMax=*/false);
    Value v = l[h];
    e.ifThen(quad0,
             [&]() { e.store(v, red, {redIndex(1, group, accRow(h))}); });
  }
  gpu::BarrierOp::create(b, loc);
  for (int64_t h = 0; h < 2; ++h)
    l[h] = e.add(l[h], e.load(red, {redIndex(1, other, accRow(h))}));

  Value colBase = e.add(e.mul(group, e.idx(groupCols())), laneCol);
  auto storeState = [&](Value outO, Value outLse, Value row) {
    Type oElem = cast<MemRefType>(outO.getType()).getElementType();
    int64_t oBytes = oElem.getIntOrFloatBitWidth() / 8;
    for (int64_t h = 0; h < 2; ++h) {
      Value head = e.add(head0, accRow(h));
      auto [inv, lseV] = finalRow(st[h], l[h]);
      e.ifThen(e.cmpi(Pred::ult, head, e.idx(s.heads)), [&]() {
        VectorType out = VectorType::get({2}, oElem);
        for (int64_t j = 0; j < groupCols() / 8; ++j) {
          Value v = vector::FromElementsOp::create(
              b, loc, out,
              ValueRange{
                  e.fromF32(e.mul(st[4 + 4 * j + 2 * h], inv), oElem),
                  e.fromF32(e.mul(st[4 + 4 * j + 2 * h + 1], inv), oElem)});
          vector::StoreOp::create(
              b, loc, v, outO,
              ValueRange{row, head, e.add(colBase, e.idx(8 * j))},
              /*nontemporal=*/false, llvm::MaybeAlign(2 * oBytes));
        }
        e.ifThen(e.andi(quad0, e.cmpi(Pred::eq, group, e.idx(0))),
                 [&]() { e.store(lseV, outLse, {row, head}); });
      });
    }
  };
  finish(split, storeState);
}

} // namespace

void gpukernel::buildMLAWgmmaBody(KernelEmitter &e, const MLAShape &s,
                                  Value qNope, Value qPe, Value cache,
                                  const PageTable &pt,
                                  const FusedMerge &split) {
  MLAWgmmaKernel(e, s).build(qNope, qPe, cache, pt, split);
}
