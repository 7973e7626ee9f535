//===- MLAWgmma.cpp - pa.mla_decode on Hopper warpgroup MMAs --------------===//
//
// convert-pa-to-gpu's MLA decode with mla-mma=wgmma (or auto from 64 query
// heads; docs/GPU.md, "MLA decode on wgmma"). MLA decode at 128 heads is
// compute-bound (2 x 1088 FLOP per head and token against 1152 bytes), and
// the mma.sync kernel is bound by the shared-memory reads of its ldmatrix
// fragments. Here a CTA takes 64 query heads (one m64 block; heads past H
// are zero rows) of a request and a split of its keys, with two warpgroups
// that read their operands straight from shared memory and work on
// different tiles at once (the roles of FlashInfer's FA3 MLA kernel):
//
//   * Q (q_nope | q_pe) and the K/V tiles of 64 tokens (two stages) in
//     wgmma's 128-byte swizzle layout (wgmmaIndex: width / 64 column blocks
//     of [64][64]); each stage has an mbarrier, and its P tile in its first
//     D_kpe block (dead once S has read it).
//   * the producer warpgroup (warps 0-3): waits until the consumer is done
//     with tile t - 1 (named barrier), copies tile t + 1 into that stage
//     (cp.async through the page table, MLAKernelBase::copyTile; a
//     cp.async.mbarrier.arrive per thread), waits for P of tile t (named
//     barrier) and runs O += P V over output columns [0, D_ckv / 2): wgmma
//     m64n(D_ckv / 2)k16 over the tile's 4 k steps (A = P, B = the tile's
//     first D_ckv columns, MN-major), rescaled by the consumer's factors.
//   * the consumer warpgroup (warps 4-7): waits for tile t's mbarrier phase,
//     S = Q K^T over the tile's 64 keys (wgmma m64n64k16 over width / 16 k
//     steps, A = Q, B = K, both K-major), the online softmax of the whole
//     row (no exchange between warpgroups), P and the rescale factors to
//     shared memory, `bar.arrive` for the producer, then O += P V over
//     columns [D_ckv / 2, D_ckv) and `bar.arrive` once the stage is read.
//   So the consumer's S of tile t + 1 runs while the producer's O += P V of
//   tile t does; the consumer never waits at a named barrier.
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

#include <vector>

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;
using FPred = arith::CmpFPredicate;

namespace {

constexpr int64_t kRows = kMLAWgmmaRows;
constexpr int64_t kKeys = kMLATileKeys;

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
  /// Named barriers between the warpgroups, one per stage (the consumer
  /// arrives, the producer waits): P and the rescale factors of the
  /// stage's tile written; the stage's tile read by the consumer.
  static constexpr int64_t kPReady = 1, kEmpty = 1 + kMLAStages;
  /// (Immediate barrier ids, one branch per stage: ptxas then reserves the
  /// 5 barriers used rather than all 16.) With mla-consumer-sync the
  /// consumer waits too (bar.sync): compute-sanitizer's racecheck then
  /// reports no hazard, where after the bar.arrive hand-offs it reports
  /// some at the merge after the KV loop (bench/results/
  /// mla-roles_2026-11-27_h200.md).
  void namedBarrier(int64_t first, Value stage, bool arrive) {
    static_assert(kMLAStages == 2, "one branch per stage");
    auto emit = [&](int64_t id) {
      std::string text = (arrive && !s.consumerSync ? "bar.arrive "
                                                    : "bar.sync ") +
                         std::to_string(id) + ", 256;";
      e.inlineAsm(text, "", {}, {}, /*sideEffects=*/true);
    };
    Value first0 = e.cmpi(Pred::eq, stage, e.idx(0));
    e.ifThen(first0, [&]() { emit(first); });
    e.ifThen(e.cmpi(Pred::ne, stage, e.idx(0)), [&]() { emit(first + 1); });
  }
  /// The shared address (32 bits) of stage `stage`'s mbarrier.
  Value mbarrier(Value stage) {
    Value byte = e.add(e.idx(s.mbarOffset()), e.mul(stage, e.idx(8)));
    return arith::TruncIOp::create(
        b, loc, b.getI32Type(),
        e.add(wg.address(smem),
              arith::IndexCastOp::create(b, loc, b.getI64Type(), byte)));
  }
  /// Wait until phase `phase` (0 / 1) of stage `stage`'s mbarrier completed.
  void waitStage(Value stage, Value phase) {
    Value p = arith::IndexCastOp::create(b, loc, b.getI32Type(), phase);
    e.inlineAsm("{\n.reg .pred P1;\nLAB_WAIT:\n"
                "mbarrier.try_wait.parity.shared::cta.b64 P1, [$0], $1;\n"
                "@!P1 bra LAB_WAIT;\n}",
                "r,r", {}, {mbarrier(stage), p}, /*sideEffects=*/true);
  }
  /// The producer warpgroup's copies of tile `tile` into its stage, their
  /// completion tracked by the stage's mbarrier.
  void copyStage(Value cache, const PageTable &pt, Value tile, Value page) {
    Value stage = e.remui(tile, e.idx(kMLAStages));
    Value base = stageBase(stage);
    copyTile(cache, pt, e.add(kvStart, e.mul(tile, e.idx(kKeys))), smem,
             [&](Value r, Value col) -> SmallVector<Value> {
               return {swizzled(base, r, col)};
             },
             page, warpInGroup, 4);
    e.inlineAsm("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];", "r",
                {}, {mbarrier(stage)}, /*sideEffects=*/true);
  }
  /// First element of stage `stage`'s P tile ([64][64], swizzled).
  Value pBase(Value stage) {
    if (s.pInStage())
      return e.add(stageBase(stage),
                   e.idx(s.ckv / 64 * s.blockElems()));
    return e.add(e.idx(s.pOffset() / s.elemBytes()),
                 e.mul(stage, e.idx(s.blockElems())));
  }
  /// Index in `red` of stage `stage`'s rescale factor of row `row`, and of
  /// the final row statistic `which` (0 max, 1 sum).
  Value scaleIndex(Value stage, Value row) {
    return e.add(e.mul(stage, e.idx(kRows)), row);
  }
  Value statIndex(int64_t which, Value row) {
    return e.add(e.idx((kMLAStages + which) * kRows), row);
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
  // The warpgroup and the warp within it through a shuffle from lane 0
  // (CUTLASS's canonical_warp_group_idx): ptxas then knows them warp-uniform,
  // so the role branches are uniform and the descriptors derived in them
  // stay in uniform registers.
  auto uniform = [&](Value v) {
    Value s0 = gpu::ShuffleOp::create(b, loc, e.toI32(v), e.i32(0), e.i32(32),
                                      gpu::ShuffleMode::IDX)
                   .getShuffleResult();
    return e.toIndex(s0);
  };
  group = uniform(e.divui(warp, e.idx(4)));
  warpInGroup = uniform(e.remui(warp, e.idx(4)));
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
  Value addr = wg.address(smem);
  Value tiles = numTiles();
  bool onePage = pagePerTile();
  Value producer = e.cmpi(Pred::eq, group, e.idx(0));

  // The stages' mbarriers (tile t's copies landed: the producers' 128
  // cp.async.mbarrier.arrive), set up before anyone arrives.
  e.ifThen(e.cmpi(Pred::eq, tid, e.idx(0)), [&]() {
    for (int64_t st = 0; st < kMLAStages; ++st)
      e.inlineAsm("mbarrier.init.shared::cta.b64 [$0], 128;", "r", {},
                  {mbarrier(e.idx(st))}, /*sideEffects=*/true);
  });
  gpu::BarrierOp::create(b, loc);

  // Q (everyone) and tile 0 (the producers) in flight; Q waited for here,
  // tile 0 through its mbarrier.
  copyQ(qNope, qPe, smem, [&](Value r, Value col) -> SmallVector<Value> {
    return {swizzled(e.idx(0), r, col)};
  });
  e.ifThen(e.andi(producer, e.cmpi(Pred::ugt, tiles, e.idx(0))), [&]() {
    copyStage(cache, pt, e.idx(0),
              onePage ? tilePage(pt, e.idx(0), tiles) : Value());
  });
  commitAndWait(/*wait=*/true);
  wg.fenceProxyAsync();
  gpu::BarrierOp::create(b, loc);

  // Descriptors: K-major ones (Q, K, P) from the start of shared memory
  // (Q's place), MN-major ones (V: 64-column blocks 64 rows x 128 bytes
  // apart).
  Value descK = wg.descriptor(addr, 16);
  Value descV = wg.descriptor(addr, kKeys * 128);
  Value groupColBytes =
      e.mul(group, e.idx(groupCols() / 64 * kRows * 128));
  int64_t accRegs = groupCols() / 2;
  Value quad0 = e.cmpi(Pred::eq, quadCol, e.idx(0));

  // O = alpha O + P V over the warpgroup's columns of tile t's stage.
  auto pv = [&](Value stage, ValueRange acc, std::array<Value, 2> alpha) {
    SmallVector<Value> out;
    for (int64_t r = 0; r < accRegs; ++r)
      out.push_back(e.mul(acc[r], alpha[(r / 2) % 2]));
    out = wg.fenceOperands(out);
    Value stageBytes = e.mul(stageBase(stage), e.idx(s.elemBytes()));
    Value vDesc = advanceBy(descV, e.add(stageBytes, groupColBytes));
    Value pDesc = advanceBy(descK, e.mul(pBase(stage), e.idx(s.elemBytes())));
    wg.fence();
    for (int64_t kk = 0; kk < kKeys / 16; ++kk)
      out = wg.mmaAsync(groupCols(), out, wg.advance(pDesc, kk * 32), {},
                        wg.advance(vDesc, kk * 16 * 128), /*transB=*/true);
    wg.commitAndWait(0);
    return wg.fenceOperands(out);
  };

  // Results of both roles: m[2], l[2] (the consumer's; the producer's are
  // placeholders), acc[accRegs].
  SmallVector<Type> types(4 + accRegs, f32());
  SmallVector<Value> st = e.ifThenElse(
      producer, types,
      [&]() -> SmallVector<Value> {
        // The producer warpgroup: copies tile t + 1 into its stage (once the
        // consumer is done with tile t - 1 there), then O += P V of tile t
        // over output columns [0, D_ckv / 2) once the consumer has written
        // P and the rescale factors.
        SmallVector<Value> init(accRegs, e.f32(0));
        if (onePage)
          init.push_back(tilePage(pt, e.idx(1), tiles));
        auto loop = e.forLoop(
            e.idx(0), tiles, init,
            [&](Value t, ValueRange carried) -> SmallVector<Value> {
              Value nextT = e.add(t, e.idx(1));
              Value nextStage = e.remui(nextT, e.idx(kMLAStages));
              e.ifThen(e.cmpi(Pred::ult, nextT, tiles), [&]() {
                e.ifThen(e.cmpi(Pred::uge, nextT, e.idx(kMLAStages)),
                         [&]() { namedBarrier(kEmpty, nextStage, false); });
                copyStage(cache, pt, nextT,
                          onePage ? carried.back() : Value());
              });
              commitAndWait(/*wait=*/false);
              Value pageAfter =
                  onePage ? tilePage(pt, e.add(t, e.idx(2)), tiles) : Value();
              Value stage = e.remui(t, e.idx(kMLAStages));
              namedBarrier(kPReady, stage, false);
              wg.fenceProxyAsync();
              std::array<Value, 2> alpha;
              for (int64_t h = 0; h < 2; ++h)
                alpha[h] = e.load(red, {scaleIndex(stage, accRow(h))});
              SmallVector<Value> next =
                  pv(stage, carried.take_front(accRegs), alpha);
              if (onePage)
                next.push_back(pageAfter);
              return next;
            });
        SmallVector<Value> out{e.negInf(), e.negInf(), e.f32(0), e.f32(0)};
        for (int64_t r = 0; r < accRegs; ++r)
          out.push_back(loop.getResult(r));
        return out;
      },
      [&]() -> SmallVector<Value> {
        // The consumer warpgroup: S = Q K^T over the tile's 64 keys, the
        // online softmax, P and the rescale factors for the producer, then
        // O += P V over output columns [D_ckv / 2, D_ckv).
        SmallVector<Value> init{e.negInf(), e.negInf(), e.f32(0), e.f32(0)};
        for (int64_t i = 0; i < accRegs; ++i)
          init.push_back(e.f32(0));
        double qkScale =
            s.softCap ? s.smScale / *s.softCap : s.smScale * kLog2e;
        int64_t kSteps = s.width() / 16;
        Value laneCol = e.mul(quadCol, e.idx(2));
        auto loop = e.forLoop(
            e.idx(0), tiles, init,
            [&](Value t, ValueRange st) -> SmallVector<Value> {
              Value stage = e.remui(t, e.idx(kMLAStages));
              Value phase = e.remui(e.divui(t, e.idx(kMLAStages)), e.idx(2));
              waitStage(stage, phase);
              wg.fenceProxyAsync();
              Value t0 = e.add(kvStart, e.mul(t, e.idx(kKeys)));
              Value stageBytes =
                  e.mul(stageBase(stage), e.idx(s.elemBytes()));

              // S = Q K^T: k step kk is in column block kk / 4 at byte
              // (kk % 4) * 32 of each 128-byte line.
              int64_t blockBytes = kRows * 128;
              Value kDesc = advanceBy(descK, stageBytes);
              wg.fence();
              SmallVector<Value> sAcc;
              for (int64_t kk = 0; kk < kSteps; ++kk) {
                int64_t off = (kk / 4) * blockBytes + (kk % 4) * 32;
                sAcc = wg.mmaAsync(kKeys, sAcc, wg.advance(descK, off), {},
                                   wg.advance(kDesc, off), /*transB=*/false);
              }
              wg.commitAndWait(0);
              sAcc = wg.fenceOperands(sAcc);

              // Keys past the split's end at -inf: register 4 j + 2 h + i is
              // row accRow(h), key 8 j + 2 (lane % 4) + i, valid where 8 j +
              // i < kvEnd - (t0 + 2 (lane % 4)) (32-bit, one compare each).
              // With a positive scale and no soft-cap x holds the raw scores
              // (the scale folds into the exponent's fma and the row maximum);
              // else the base-2 logits.
              bool foldScale = !s.softCap && qkScale > 0;
              Value room = arith::SubIOp::create(
                  b, loc, e.toI32(kvEnd), e.toI32(e.add(t0, laneCol)));
              std::array<SmallVector<Value>, 2> x;
              for (int64_t j = 0; j < kKeys / 8; ++j)
                for (int64_t h = 0; h < 2; ++h)
                  for (int64_t i = 0; i < 2; ++i) {
                    Value v = sAcc[4 * j + 2 * h + i];
                    if (!foldScale)
                      v = e.mul(v, e.f32(qkScale));
                    if (s.softCap)
                      v = e.mul(e.tanh(v), e.f32(*s.softCap * kLog2e));
                    Value valid = e.cmpi(Pred::slt, e.i32(8 * j + i), room);
                    x[h].push_back(e.select(valid, v, e.negInf()));
                  }
              // Pairwise trees: short dependence chains.
              // Level by level in place: pairs (2k, 2k + 1) into k, an odd
              // last value moved up.
              auto tree = [&](ArrayRef<Value> in, auto op) {
                assert(!in.empty() && "a tree over no values");
                std::vector<Value> vs(in.begin(), in.end());
                for (size_t n = vs.size(); n > 1; n = (n + 1) / 2) {
                  for (size_t k = 0; k < n / 2; ++k)
                    vs[k] = op(vs[2 * k], vs[2 * k + 1]);
                  if (n % 2)
                    vs[n / 2] = vs[n - 1];
                }
                return vs[0];
              };
              double xScale = foldScale ? qkScale : 1.0;
              SmallVector<Value> next(st.begin(), st.end());
              std::array<Value, 2> alpha;
              VectorType two = VectorType::get({2}, s.elem);
              Value pElem = pBase(stage);
              for (int64_t h = 0; h < 2; ++h) {
                Value row = accRow(h);
                Value mx = tree(x[h], [&](Value a, Value c) {
                  return e.maxf(a, c);
                });
                mx = quadReduce(mx, /*isMax=*/true);
                if (foldScale)
                  mx = e.mul(mx, e.f32(qkScale));
                Value m = e.maxf(st[h], mx);
                Value mUse =
                    e.select(e.cmpf(FPred::OEQ, m, e.negInf()), e.f32(0), m);
                alpha[h] = e.ex2(e.sub(st[h], mUse));
                next[h] = m;
                Value negM = arith::NegFOp::create(b, loc, mUse);
                for (Value &v : x[h])
                  v = e.ex2(
                      LLVM::FMAOp::create(b, loc, v, e.f32(xScale), negM));
                Value sum = tree(x[h], [&](Value a, Value c) {
                  return e.add(a, c);
                });
                next[2 + h] =
                    LLVM::FMAOp::create(b, loc, st[2 + h], alpha[h], sum);
                Value a = alpha[h];
                e.ifThen(quad0,
                         [&]() { e.store(a, red, {scaleIndex(stage, row)}); });
                for (int64_t j = 0; j < kKeys / 8; ++j) {
                  Value pv2 = vector::FromElementsOp::create(
                      b, loc, two,
                      ValueRange{e.fromF32(x[h][2 * j], s.elem),
                                 e.fromF32(x[h][2 * j + 1], s.elem)});
                  Value key = e.add(e.idx(8 * j), laneCol);
                  vector::StoreOp::create(
                      b, loc, pv2, smem, ValueRange{swizzled(pElem, row, key)},
                      /*nontemporal=*/false,
                      llvm::MaybeAlign(2 * s.elemBytes()));
                }
              }
              wg.fenceProxyAsync();
              namedBarrier(kPReady, stage, /*arrive=*/true);
              SmallVector<Value> acc =
                  pv(stage, st.drop_front(4), alpha);
              // The stage is free for tile t + 2 (the producer waits for
              // this only where that tile exists).
              e.ifThen(e.cmpi(Pred::ult, e.add(t, e.idx(kMLAStages)), tiles),
                       [&]() { namedBarrier(kEmpty, stage, true); });
              for (int64_t r = 0; r < accRegs; ++r)
                next[4 + r] = acc[r];
              return next;
            });
        return SmallVector<Value>(loop.getResults());
      });

  // Every copy has landed (the consumer waited for each tile's mbarrier);
  // the producers' wait keeps no cp.async of theirs outstanding at the exit.
  commitAndWait(/*wait=*/true);
  // The consumer's row maxima and sums (l: quad-reduced) to both.
  e.ifThen(e.cmpi(Pred::eq, group, e.idx(1)), [&]() {
    for (int64_t h = 0; h < 2; ++h) {
      Value l = quadReduce(st[2 + h], /*isMax=*/false);
      Value m = st[h];
      Value row = accRow(h);
      e.ifThen(quad0, [&]() {
        e.store(m, red, {statIndex(0, row)});
        e.store(l, red, {statIndex(1, row)});
      });
    }
  });
  gpu::BarrierOp::create(b, loc);
  std::array<Value, 2> m, l;
  for (int64_t h = 0; h < 2; ++h) {
    m[h] = e.load(red, {statIndex(0, accRow(h))});
    l[h] = e.load(red, {statIndex(1, accRow(h))});
  }

  Value colBase = e.add(e.mul(group, e.idx(groupCols())),
                        e.mul(quadCol, e.idx(2)));
  auto storeState = [&](Value outO, Value outLse, Value row) {
    Type oElem = cast<MemRefType>(outO.getType()).getElementType();
    int64_t oBytes = oElem.getIntOrFloatBitWidth() / 8;
    for (int64_t h = 0; h < 2; ++h) {
      Value head = e.add(head0, accRow(h));
      auto [inv, lseV] = finalRow(m[h], l[h]);
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
