//===- MLAToGPU.cpp - pa.mla_decode to a tensor-core GPU kernel -----------===//
//
// convert-pa-to-gpu's MLA family (docs/GPU.md, "MLA decode"): a memref-form
// pa.mla_decode becomes the kernel `pa_mla_decode` (ABI kind `mla_decode`):
// the mma.sync kernel below, or with mla-mma=wgmma (auto: from 64 heads on
// sm_90a) the warpgroup-MMA kernel of MLAWgmma.cpp. MLAKernelBase (here,
// MLAKernel.h) holds what both share: the split, the copies, the final row,
// the splits' merge.
//
// MLA decode is a GQA decode whose group is every query head (there is one
// latent "KV head") with a wide head: scores over D_ckv + D_kpe (576), the
// output over D_ckv (512), and V the first D_ckv columns of K (each token's
// row of the cache is read once for both). A CTA takes 16 x R query heads
// (R = `mla-row-blocks`, 1 or 2) of one request: grid (batch, ceil(H / 16R)),
// 4 R warps; warp w works on row block w / 4 (16 heads, one m16 block) and
// "slot" w % 4:
//
//   * K/V: tiles of 64 tokens in dynamic shared memory, two stages, copied
//     with cp.async (16 bytes, .cg) through the page table: warp w copies
//     rows w, w + 4R, ... (a row's 72 chunks by consecutive lanes, so every
//     copy instruction reads contiguous bytes; one page lookup per tile, a
//     tile ahead, where the page size is a multiple of 64, else per row),
//     tokens past kv_len zero-filled. Q (q_nope | q_pe, rows past H zero)
//     is copied once. Rows are padded by 16 bytes (ldmatrix without bank
//     conflicts).
//   * S = Q K^T: the warp's 16 rows x the slot's 16 keys of the tile,
//     ldmatrix + mma.sync m16n8k16 over the 576 columns, the k steps spread
//     over 4 independent accumulator sets so that the mma chain pipelines.
//     With one block per warp the first Q fragments stay in registers
//     (kQRegisterBudget below).
//   * softmax across the 4 slots of a row block through shared memory: row
//     maxima (barrier), then P = 2^(s - m) written to a shared P tile in the
//     data type and the row sums (barrier); every warp then holds the same
//     running (m, l) of its 16 rows.
//   * O += P V: the warp's 16 rows x its slot's D_ckv / 4 output columns
//     (128: 16 n8 accumulators), P and V (.trans) by ldmatrix.
//   * the store: o = acc / l (two elements per store), lse by slot 0;
//     a request without tokens gives o = 0, lse = -inf.
//
// Three CTA barriers per tile: after the tile's copies land (which also
// frees the other stage for the next tile's copies, issued right after),
// after the row maxima, after P.
//
//===----------------------------------------------------------------------===//

#include "MLAKernel.h"

#include "PagedAttn/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;
using FPred = arith::CmpFPredicate;

namespace {

constexpr int64_t kTileKeys = kMLATileKeys;
constexpr int64_t kSlots = kMLASlots;
constexpr int64_t kSlotKeys = kTileKeys / kSlots;
constexpr int64_t kStages = kMLAStages;
constexpr int64_t kKSplit = 4;    ///< independent accumulator sets of S
/// With one m16 block per warp, the Q fragments of the first
/// kQRegisterBudget - D_ckv / 32 k steps (20 of 36 for DeepSeek's 512 +
/// 64) stay in registers across the KV loop, next to the D_ckv / 32 output
/// accumulators: shared-memory reads bound the kernel, and Q was a third
/// of them. Measured (H200, 2026-11-26, 128 heads, 2 accumulator sets):
/// 64 x 8192 903 -> 799 us with 20 steps held, 785 with 24; all 36 spill,
/// and 24 spills a few bytes at small page sizes (bench/results/
/// mla-q-registers_2026-11-26_h200.md).
constexpr int64_t kQRegisterBudget = 36;
/// The splits' merges (MLAKernelBase::headStats / mergeSlots): every load
/// of a step over the rows is issued before its math, rows past S clamped
/// to the last and weighted 0, so that a merge costs one L2 round trip per
/// step rather than one per row (a rolled loop did that).
/// headStats: rows a thread reads a step (the CTA's threads split the rows
/// threads / heads ways).
constexpr int64_t kStatsRows = 8;
/// The last CTA's merge (mergeSplits: forced, or a grid that does not fit
/// at once, up to 32 splits) reads every row alone on one SM, bound by its
/// bandwidth: 8 output slots a thread at a time, 2 rows a step (as before;
/// 4 rows wasted loads on rows past S and ran 2 us slower at 2 splits).
constexpr int64_t kMergeSplitsSlots = 8;
constexpr int64_t kMergeSplitsRows = 2;
/// The merge together's share (mergeShare), a short latency-bound read: at
/// most a slot a thread (many splits) 16 rows a step, else 4 slots a thread
/// 4 rows a step.
constexpr int64_t kMergeFewSlotsRows = 16;
constexpr int64_t kMergeShareSlots = 4;
constexpr int64_t kMergeShareRows = 4;

/// Why the wgmma kernel cannot take `s` (empty: it can).
std::string wgmmaMisfit(const MLAShape &s) {
  if (s.width() % 64 != 0)
    return "D_ckv + D_kpe a multiple of 64 (whole 128-byte swizzle lines)";
  if (s.ckv % (64 * kMLAWgmmaGroups) != 0 ||
      s.ckv / kMLAWgmmaGroups > 256)
    return "D_ckv a multiple of 128 up to 512 (each warpgroup's half of "
           "the output one wgmma of N <= 256)";
  if (s.smemBytes() > kMaxSmem)
    return "Q and two 64-token stages in " + std::to_string(kMaxSmem) +
           " bytes of shared memory (" + std::to_string(s.smemBytes()) +
           " needed)";
  return "";
}

} // namespace

bool mlir::pa::mlaAutoPicksWgmma(int64_t heads, int64_t ckv, int64_t kpe) {
  // The wgmma kernel's 64-head tile from 64 heads (measured,
  // docs/PERFORMANCE.md "MLA decode on wgmma"); data of 16 bits.
  MLAShape w;
  w.heads = heads;
  w.ckv = ckv;
  w.kpe = kpe;
  w.wgmma = true;
  return heads >= kMLAWgmmaRows && wgmmaMisfit(w).empty();
}

namespace {

FailureOr<MLAShape> mlaShape(MLADecodeOp op, const MLAKernelOptions &opts) {
  int64_t rowBlocks = opts.rowBlocks, warpBlocks = opts.warpBlocks;
  for (Value v : op->getOperands())
    if (!isIdentityMemRef(v.getType()))
      return op.emitOpError()
             << "convert-pa-to-gpu expects identity-layout memrefs";
  MLAShape s;
  s.consumerSync = opts.consumerSync;
  auto qt = cast<MemRefType>(op.getQNope().getType());
  s.elem = qt.getElementType();
  if (!s.elem.isF16() && !s.elem.isBF16())
    return op.emitOpError()
           << "MLA decode on the GPU needs f16 or bf16 data (tensor cores), "
              "got "
           << s.elem << " (f32 runs on pa-lower-to-cpu)";
  s.heads = qt.getDimSize(1);
  if (ShapedType::isDynamic(s.heads))
    return op.emitOpError()
           << "MLA decode on the GPU needs a static number of query heads "
              "(dim 1 of q_nope)";
  PagedMLAAttr cache = op.getCache();
  s.ckv = cache.getCkvDim();
  s.kpe = cache.getKpeDim();
  s.pageSize = cache.getPageSize();
  if (s.ckv % (16 * kSlots) != 0)
    return op.emitOpError() << "MLA decode on the GPU needs D_ckv to be a "
                               "multiple of 64 (4 warps x 16 columns), got "
                            << s.ckv;
  if (s.kpe % 16 != 0)
    return op.emitOpError() << "MLA decode on the GPU needs D_kpe to be a "
                               "multiple of 16 (mma k steps), got "
                            << s.kpe;
  if (rowBlocks == 0)
    rowBlocks = s.heads > 16 ? 2 : 1;
  if (rowBlocks != 1 && rowBlocks != 2)
    return op.emitOpError() << "mla-row-blocks must be 1 or 2 (0: 2 above "
                               "16 heads, else 1), got "
                            << rowBlocks;
  s.rowBlocks = rowBlocks;
  if (warpBlocks == 0)
    warpBlocks = 1;
  if (warpBlocks != 1 && warpBlocks != rowBlocks)
    return op.emitOpError() << "mla-warp-blocks must be 1 or mla-row-blocks ("
                            << rowBlocks << "), got " << warpBlocks;
  s.warpBlocks = warpBlocks;
  if (opts.mma != "mma.sync" && opts.mma != "wgmma" && opts.mma != "auto")
    return op.emitOpError() << "mla-mma must be mma.sync, wgmma or auto, got '"
                            << opts.mma << "'";
  if (opts.mma == "wgmma") {
    MLAShape w = s;
    w.wgmma = true;
    std::string misfit = wgmmaMisfit(w);
    if (!misfit.empty())
      return op.emitOpError() << "mla-mma=wgmma needs " << misfit;
    s.wgmma = true;
  } else if (opts.mma == "auto") {
    s.wgmma = mlaAutoPicksWgmma(s.heads, s.ckv, s.kpe);
  }
  if (s.smemBytes() > kMaxSmem)
    return op.emitOpError()
           << "MLA decode on the GPU: D_ckv + D_kpe = " << s.width()
           << " needs " << s.smemBytes()
           << " bytes of shared memory, more than the " << kMaxSmem
           << " a CTA may have"
           << (rowBlocks > 1 ? " (use mla-row-blocks=1)"
                             : " (two stages of 64-token tiles)");
  s.smScale = op.getSmScale().convertToDouble();
  if (auto c = op.getLogitsSoftCap())
    s.softCap = c->convertToDouble();
  s.lseBase2 = op.getLseBase2();
  return s;
}

} // namespace

//===----------------------------------------------------------------------===//
// MLAKernelBase (MLAKernel.h)
//===----------------------------------------------------------------------===//

void MLAKernelBase::setup(const PageTable &pt, Value req, Value firstHead) {
  request = req;
  head0 = firstHead;
  kvLen = pt.kvLen(e, request);
  pageBase = pt.pageBase(e, request);
  // Split-KV: CTA z of S takes a chunk of ceil(kv_len / S) keys rounded up
  // to whole tiles (CTAs past the end have no keys).
  splits = gpu::GridDimOp::create(b, loc, gpu::Dimension::z);
  z = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Value perSplit = e.divui(e.add(kvLen, e.sub(splits, e.idx(1))), splits);
  Value chunk = e.mul(e.divui(e.add(perSplit, e.idx(kTileKeys - 1)),
                              e.idx(kTileKeys)),
                      e.idx(kTileKeys));
  kvStart = arith::MinUIOp::create(b, loc, e.mul(z, chunk), kvLen);
  kvEnd = arith::MinUIOp::create(b, loc, e.add(kvStart, chunk), kvLen);
}

std::pair<Value, Value> MLAKernelBase::finalRow(Value m, Value l) {
  return {invOrZero(e, l), mergedLse(e, m, l, s.lseBase2)};
}

Value MLAKernelBase::sharedView(ArrayRef<int64_t> shape, Type elem,
                                int64_t offset) {
  auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                       gpu::AddressSpace::Workgroup);
  Value raw = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), wg));
  return memref::ViewOp::create(
      b, loc, MemRefType::get(shape, elem, MemRefLayoutAttrInterface(), wg),
      raw, e.idx(offset), ValueRange{});
}

Value MLAKernelBase::numTiles() {
  return e.divui(e.add(e.sub(kvEnd, kvStart), e.idx(kTileKeys - 1)),
                 e.idx(kTileKeys));
}

Value MLAKernelBase::copy16(Value src, ValueRange srcIdx, Value dst,
                            ValueRange dstIdx, Value valid) {
  Value n = e.select(valid, e.idx(8), e.idx(0));
  return nvgpu::DeviceAsyncCopyOp::create(
      b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), dst, dstIdx,
      src, srcIdx, b.getIndexAttr(8), n, b.getUnitAttr());
}

void MLAKernelBase::commitAndWait(bool wait) {
  Value g = nvgpu::DeviceAsyncCreateGroupOp::create(
      b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), ValueRange{});
  if (wait)
    nvgpu::DeviceAsyncWaitOp::create(b, loc, g, b.getI32IntegerAttr(0));
}

void MLAKernelBase::copyQ(Value qNope, Value qPe, Value dst, TileIndex at) {
  // Chunk c of the part (q_nope: D_ckv / 8 chunks a row; q_pe: D_kpe / 8)
  // for c = tid, tid + threads, ...; heads past H are zero-filled.
  auto part = [&](Value src, int64_t cols, int64_t col0) {
    int64_t perRow = cols / 8, total = s.rows() * perRow;
    for (int64_t i = 0; i * s.threads() < total; ++i) {
      Value c = e.add(tid, e.idx(i * s.threads()));
      auto body = [&]() {
        Value r = e.divui(c, e.idx(perRow));
        Value col = e.mul(e.remui(c, e.idx(perRow)), e.idx(8));
        Value h = e.add(head0, r);
        Value valid = e.cmpi(Pred::ult, h, e.idx(s.heads));
        Value hs = e.select(valid, h, e.idx(0));
        copy16(src, {request, hs, col}, dst, at(r, e.add(col, e.idx(col0))),
               valid);
      };
      if ((i + 1) * s.threads() <= total)
        body();
      else
        e.ifThen(e.cmpi(Pred::ult, c, e.idx(total)), body);
    }
  };
  part(qNope, s.ckv, 0);
  part(qPe, s.kpe, s.ckv);
}

Value MLAKernelBase::tilePage(const PageTable &pt, Value tile, Value tiles) {
  return e.ifThenElse(
      e.cmpi(Pred::ult, tile, tiles), {b.getIndexType()},
      [&]() -> SmallVector<Value> {
        Value t0 = e.add(kvStart, e.mul(tile, e.idx(kTileKeys)));
        return {e.toIndex(pt.pageEntry(e, pageBase, t0))};
      },
      [&]() -> SmallVector<Value> { return {e.idx(0)}; })[0];
}

void MLAKernelBase::copyTile(Value cache, const PageTable &pt, Value t0,
                             Value dst, TileIndex at, Value tilePage,
                             Value copyWarp, int64_t copyWarps) {
  int64_t perRow = s.width() / 8;
  if (!copyWarp) {
    copyWarp = warp;
    copyWarps = s.warps();
  }
  for (int64_t i = 0; i < kTileKeys / copyWarps; ++i) {
    Value r = e.add(copyWarp, e.idx(i * copyWarps));
    Value t = e.add(t0, r);
    Value valid = e.cmpi(Pred::ult, t, kvEnd);
    // A token past kv_len has no page (a request without tokens may have
    // no kv_indices entry at all): its lookup is skipped.
    Value page = tilePage ? tilePage
                          : e.ifThenElse(
                                valid, {b.getIndexType()},
                                [&]() -> SmallVector<Value> {
                                  return {e.toIndex(
                                      pt.pageEntry(e, pageBase, t))};
                                },
                                [&]() -> SmallVector<Value> {
                                  return {e.idx(0)};
                                })[0];
    Value slotInPage = e.remui(t, e.idx(s.pageSize));
    for (int64_t j = 0; j * 32 < perRow; ++j) {
      Value cc = e.add(lane, e.idx(32 * j));
      auto body = [&]() {
        Value col = e.mul(cc, e.idx(8));
        copy16(cache, {page, slotInPage, col}, dst, at(r, col), valid);
      };
      if ((j + 1) * 32 <= perRow)
        body();
      else
        e.ifThen(e.cmpi(Pred::ult, cc, e.idx(perRow)), body);
    }
  }
}

void MLAKernelBase::finish(
    const FusedMerge &split,
    function_ref<void(Value outO, Value outLse, Value row)> storeState) {
  e.ifThen(e.cmpi(Pred::eq, splits, e.idx(1)),
           [&]() { storeState(split.o, split.lse, request); });
  e.ifThen(e.cmpi(Pred::ne, splits, e.idx(1)), [&]() {
    // Split-KV: the partial state of chunk z, then the merge: by every
    // split together, or by the last CTA of the request's splits alone (the
    // fused split-KV decode's arrival).
    Value begin = e.mul(request, splits);
    storeState(split.oPart, split.lsePart, e.add(begin, z));
    CTAHeads heads{head0, s.rows(), Value()};
    Arrival a = emitArrival(e, split, request, splits, heads,
                            /*fenced=*/false, kMergeTogetherFlag);
    e.ifThen(a.together, [&]() { mergeShare(split, begin); });
    e.ifThen(a.last, [&]() { mergeSplits(split, begin); });
    emitArrivalRelease(e, split, request, splits, heads, a,
                       kMergeTogetherFlag);
  });
}

/// The thread index read afresh (an asm statement CSE leaves alone), so
/// that no index computed before the KV loop is reused after it and kept
/// live across it (the wgmma kernel's loop holds 225+ registers: reusing
/// them spilled there).
static Value freshThreadId(KernelEmitter &e) {
  return e.toIndex(e.inlineAsm("mov.u32 $0, %tid.x;", "=r",
                               e.b.getI32Type(), ValueRange{},
                               /*sideEffects=*/true)[0]);
}

void MLAKernelBase::mergeSlots(const FusedMerge &m, Value begin,
                               ArrayRef<MergeSlot> slots,
                               int64_t rowsPerStep) {
  auto vec4 = VectorType::get({4}, f32());
  Value zero = e.splat(e.f32(0), vec4);
  Value toLog2 = e.f32(m.lseBase2 ? 1.0 : kLog2e);
  SmallVector<Value> acc = forRowSteps(
      e, splits, e.idx(0), e.idx(1), rowsPerStep,
      SmallVector<Value>(slots.size(), zero),
      [&](ArrayRef<Value> rows, ArrayRef<Value> in,
          ValueRange r) -> SmallVector<Value> {
        // Every load of the step first, then their math.
        SmallVector<Value> lses, os;
        for (Value i : rows) {
          Value row = e.add(begin, i);
          for (const MergeSlot &sl : slots) {
            lses.push_back(e.load(m.lsePart, {row, sl.hg}));
            os.push_back(vector::LoadOp::create(
                b, loc, vec4, m.oPart, ValueRange{row, sl.hg, sl.d},
                /*nontemporal=*/false, llvm::MaybeAlign(16)));
          }
        }
        SmallVector<Value> next(r.begin(), r.end());
        for (auto [j, inside] : llvm::enumerate(in)) {
          for (auto [k, sl] : llvm::enumerate(slots)) {
            size_t at = j * slots.size() + k;
            Value w = e.ex2(e.sub(e.mul(lses[at], toLog2), sl.shift));
            // A row past S, or an empty split (lse -inf), weighs 0.
            Value counts = e.andi(inside, e.cmpf(FPred::OGT, w, e.f32(0)));
            next[k] = e.select(
                counts,
                LLVM::FMAOp::create(b, loc, e.splat(w, vec4), os[at], next[k]),
                next[k]);
          }
        }
        return next;
      });
  Type oElem = cast<MemRefType>(m.o.getType()).getElementType();
  for (auto [k, sl] : llvm::enumerate(slots)) {
    Value inv = invOrZero(e, sl.total);
    Value o = arith::MulFOp::create(b, loc, acc[k], e.splat(inv, vec4));
    if (!oElem.isF32())
      o = arith::TruncFOp::create(b, loc, VectorType::get({4}, oElem), o);
    auto store = [&]() {
      vector::StoreOp::create(
          b, loc, o, m.o, ValueRange{request, sl.hg, sl.d},
          /*nontemporal=*/false,
          llvm::MaybeAlign(4 * oElem.getIntOrFloatBitWidth() / 8));
    };
    if (sl.valid)
      e.ifThen(sl.valid, store);
    else
      store();
  }
}

Value MLAKernelBase::headStats(const FusedMerge &m, Value begin, Value lo,
                               Value hi) {
  // The P = threads / rows partitions of the rows: thread (p, h) reads the
  // lse of head h in rows p, p + P, ... (kStatsRows a step; a warp's
  // loads one or two lines), folded online (foldRows): M the largest (-inf:
  // none), W = sum 2^(lse_i - M). Then, through shared memory (the Q
  // region, dead after the KV loop), thread h < rows folds the P states
  // (the merge operator's m* and L). A head past H reads head 0's rows and
  // writes nothing (headAt).
  int64_t rows = s.rows(), parts = s.threads() / rows;
  Value partial = sharedView({2, parts, rows}, f32(), 0);
  Value stats = sharedView({2, rows}, f32(), 2 * parts * rows * 4);
  Value toLog2 = e.f32(m.lseBase2 ? 1.0 : kLog2e);
  Value tid = freshThreadId(e);
  Value h = e.remui(tid, e.idx(rows)), p = e.divui(tid, e.idx(rows));
  Value hg = headAt(h).first;
  SmallVector<Value> mw = forRowSteps(
      e, splits, p, e.idx(parts), kStatsRows, {e.negInf(), e.f32(0)},
      [&](ArrayRef<Value> rowIdx, ArrayRef<Value> in,
          ValueRange r) -> SmallVector<Value> {
        SmallVector<Value> lses;
        for (Value i : rowIdx)
          lses.push_back(e.mul(e.load(m.lsePart, {e.add(begin, i), hg}),
                               toLog2));
        MergeState next = foldRows(e, {r[0], r[1], Value()}, lses, {}, in);
        return {next.m, next.w};
      });
  e.store(mw[0], partial, {e.idx(0), p, h});
  e.store(mw[1], partial, {e.idx(1), p, h});
  gpu::BarrierOp::create(b, loc);
  e.ifThen(e.cmpi(Pred::ult, tid, e.idx(rows)), [&]() {
    auto [hg, valid] = headAt(tid);
    Value mx = e.negInf();
    for (int64_t q = 0; q < parts; ++q)
      mx = e.maxf(mx, e.load(partial, {e.idx(0), e.idx(q), tid}));
    Value shift = safeShift(e, mx);
    Value total = e.f32(0);
    for (int64_t q = 0; q < parts; ++q)
      total = e.add(total,
                    e.mul(e.load(partial, {e.idx(1), e.idx(q), tid}),
                          e.ex2(e.sub(e.load(partial, {e.idx(0), e.idx(q),
                                                       tid}),
                                      shift))));
    e.store(shift, stats, {e.idx(0), tid});
    e.store(total, stats, {e.idx(1), tid});
    // The merged lse, by the CTA whose slots hold the head's first.
    Value first = e.mul(tid, e.idx(s.ckv / 4));
    Value mine = e.andi(valid, e.andi(e.cmpi(Pred::uge, first, lo),
                                      e.cmpi(Pred::ult, first, hi)));
    e.ifThen(mine, [&]() {
      e.store(mergedLse(e, shift, total, m.lseBase2), m.lse, {request, hg});
    });
  });
  gpu::BarrierOp::create(b, loc);
  return stats;
}

std::pair<Value, Value> MLAKernelBase::headAt(Value h) {
  Value hg = e.add(head0, h);
  Value valid = e.cmpi(Pred::ult, hg, e.idx(s.heads));
  return {e.select(valid, hg, e.idx(0)), valid};
}

MLAKernelBase::MergeSlot MLAKernelBase::slotAt(Value stats, Value idx) {
  int64_t slotsPerHead = s.ckv / 4;
  Value h = e.divui(idx, e.idx(slotsPerHead));
  auto [hg, valid] = headAt(h);
  return MergeSlot{hg, valid,
                   e.mul(e.remui(idx, e.idx(slotsPerHead)), e.idx(4)),
                   e.load(stats, {e.idx(0), h}), e.load(stats, {e.idx(1), h})};
}

void MLAKernelBase::mergeSplits(const FusedMerge &m, Value begin) {
  // The merge operator over the S partial rows [begin, begin + S) of the
  // CTA's heads: headStats, then every thread its `perThread` output slots
  // (4 consecutive f32 of a head), kMergeSplitsSlots at a time, over the
  // rows in registers (mergeSlots), o = acc / total.
  int64_t perThread = s.rows() * (s.ckv / 4) / s.threads();
  Value stats = headStats(m, begin, e.idx(0), e.idx(s.rows() * s.ckv / 4));
  Value tid = freshThreadId(e);
  for (int64_t k0 = 0; k0 < perThread; k0 += kMergeSplitsSlots) {
    SmallVector<MergeSlot> chunk;
    for (int64_t k = k0; k < std::min(k0 + kMergeSplitsSlots, perThread); ++k)
      chunk.push_back(slotAt(stats, e.add(tid, e.idx(k * s.threads()))));
    mergeSlots(m, begin, chunk, kMergeSplitsRows);
  }
}

void MLAKernelBase::mergeShare(const FusedMerge &m, Value begin) {
  // Split z of S takes the output slots [z n / S, (z + 1) n / S) of the n =
  // (valid heads) x D_ckv / 4 of the CTA's heads: headStats, then the
  // share's slots threads apart (a warp's consecutive slots one line of a
  // row): a slot a thread with many splits (a share of at most `threads`
  // slots), else kMergeShareSlots a thread at a time.
  int64_t slotsPerHead = s.ckv / 4;
  Value validHeads = arith::MinUIOp::create(
      b, loc, e.idx(s.rows()), e.sub(e.idx(s.heads), head0));
  Value n = e.mul(validHeads, e.idx(slotsPerHead));
  Value lo = e.divui(e.mul(z, n), splits);
  Value hi = e.divui(e.mul(e.add(z, e.idx(1)), n), splits);
  Value stats = headStats(m, begin, lo, hi);
  Value tid = freshThreadId(e);
  Value few = e.cmpi(Pred::ule, e.sub(hi, lo), e.idx(s.threads()));
  e.ifThen(few, [&]() {
    Value idx = e.add(lo, tid);
    e.ifThen(e.cmpi(Pred::ult, idx, hi), [&]() {
      mergeSlots(m, begin, {slotAt(stats, idx)}, kMergeFewSlotsRows);
    });
  });
  e.ifThen(e.cmpi(Pred::ugt, e.sub(hi, lo), e.idx(s.threads())), [&]() {
    int64_t step = kMergeShareSlots * s.threads();
    e.forLoop(lo, hi, e.idx(step), ValueRange{},
              [&](Value base, ValueRange) -> SmallVector<Value> {
                SmallVector<MergeSlot> chunk;
                for (int64_t k = 0; k < kMergeShareSlots; ++k) {
                  Value idx = e.add(base, e.add(tid, e.idx(k * s.threads())));
                  Value inShare = e.cmpi(Pred::ult, idx, hi);
                  // A slot past the share reads the share's first.
                  MergeSlot sl = slotAt(stats, e.select(inShare, idx, lo));
                  sl.valid = inShare;
                  chunk.push_back(sl);
                }
                mergeSlots(m, begin, chunk, kMergeShareRows);
                return {};
              });
  });
}

namespace {

/// The mma.sync kernel's body.
class MLAKernel : MLAKernelBase {
public:
  MLAKernel(KernelEmitter &e, const MLAShape &s) : MLAKernelBase(e, s) {}

  void build(Value qNope, Value qPe, Value cache, const PageTable &pt,
             const FusedMerge &split);

private:
  /// The warp's first m16 block (of the CTA's rowBlocks) and its slot.
  Value rowBlock, slot, smem, pTile, red;

  /// Index of the f32 row statistic `which` (0 max, 1 sum) of row `r` of
  /// m16 block `mblock` written by slot `sl`.
  Value redIndex(int64_t which, Value mblock, Value sl, Value r) {
    Value blk = e.add(e.mul(e.add(e.mul(e.idx(which), e.idx(s.rowBlocks)),
                                  mblock),
                            e.idx(kSlots)),
                      sl);
    return e.add(e.mul(blk, e.idx(16)), r);
  }
  /// First shared-memory row of K/V stage `stage` (an index).
  Value stageRow(Value stage) {
    return e.add(e.idx(s.rows()), e.mul(stage, e.idx(kTileKeys)));
  }
  SmallVector<Value> at(Value row0, Value r, Value col) {
    return {e.add(row0, r), col};
  }
};

void MLAKernel::build(Value qNope, Value qPe, Value cache, const PageTable &pt,
                      const FusedMerge &split) {
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = e.remui(tid, e.idx(32));
  warp = e.divui(tid, e.idx(32));
  rowBlock = e.mul(e.divui(warp, e.idx(kSlots)), e.idx(s.warpBlocks));
  slot = e.remui(warp, e.idx(kSlots));
  setup(pt, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
        e.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::y),
              e.idx(s.rows())));

  smem = sharedView({s.rows() + kStages * kTileKeys, s.stride()}, s.elem, 0);
  pTile = sharedView({s.rows(), s.pStride()}, s.elem, s.pOffset());
  red = sharedView({s.redFloats()}, f32(), s.redOffset());

  // Q and the first K/V tile in flight.
  copyQ(qNope, qPe, smem, [&](Value r, Value col) -> SmallVector<Value> {
    return {r, col};
  });
  Value tiles = numTiles();
  bool onePage = pagePerTile();
  Value row0 = stageRow(e.idx(0));
  copyTile(cache, pt, kvStart, smem,
           [&](Value r, Value col) { return at(row0, r, col); },
           onePage ? tilePage(pt, e.idx(0), tiles) : Value());
  commitAndWait(/*wait=*/false);
  int64_t nAcc = s.slotCols() / 8, kSteps = s.width() / 16;
  Value l8 = e.remui(lane, e.idx(8)), l16 = e.divui(lane, e.idx(16));
  Value lMid = e.remui(e.divui(lane, e.idx(8)), e.idx(2));
  Value quadRow = e.divui(lane, e.idx(4));
  Value laneCol = e.mul(e.remui(lane, e.idx(4)), e.idx(2));
  Value quad0 = e.cmpi(Pred::eq, e.remui(lane, e.idx(4)), e.idx(0));
  int64_t wb = s.warpBlocks;
  // m16 block mb of the warp: its first row, the ldmatrix row of its A
  // fragments, and its index among the CTA's blocks.
  auto blockOf = [&](int64_t mb) { return e.add(rowBlock, e.idx(mb)); };
  auto blockRow0 = [&](int64_t mb) { return e.mul(blockOf(mb), e.idx(16)); };
  auto aRow = [&](int64_t mb) {
    return e.add(blockRow0(mb), e.remui(lane, e.idx(16)));
  };
  Value aColOff = e.mul(l16, e.idx(8));
  Value colBase = e.mul(slot, e.idx(s.slotCols()));
  double qkScale = s.softCap ? s.smScale / *s.softCap
                             : s.smScale * kLog2e;
  // Accumulator sets of S per (block, n tile): enough independent mma
  // chains (8) without holding too many fragments.
  int64_t qHeld = wb == 1 ? std::clamp<int64_t>(kQRegisterBudget - nAcc, 0,
                                                  kSteps)
                            : 0;
  int64_t kSplit = qHeld > 0 ? 2 : kKSplit / wb;
  // State per block mb: m[2], l[2] (row halves lane / 4 and lane / 4 + 8),
  // acc[nAcc].
  auto mIdx = [&](int64_t mb, int64_t h) { return mb * 2 + h; };
  auto lIdx = [&](int64_t mb, int64_t h) { return 2 * wb + mb * 2 + h; };
  auto accIdx = [&](int64_t mb, int64_t d) {
    return 4 * wb + mb * nAcc + d;
  };
  SmallVector<Value> init;
  for (int64_t i = 0; i < 2 * wb; ++i)
    init.push_back(e.negInf());
  for (int64_t i = 0; i < 2 * wb; ++i)
    init.push_back(e.f32(0));
  for (int64_t i = 0; i < wb * nAcc; ++i)
    init.push_back(zeroC());
  // With a page per tile, the page of the next tile to copy (loaded one
  // tile ahead).
  if (onePage)
    init.push_back(tilePage(pt, e.idx(1), tiles));
  // The held Q fragments, loaded once Q has landed (with tile 0).
  SmallVector<Value> qFrag;
  if (qHeld > 0) {
    commitAndWait(/*wait=*/true);
    gpu::BarrierOp::create(b, loc);
    for (int64_t kk = 0; kk < qHeld; ++kk)
      qFrag.push_back(ldmatrix(smem, aRow(0), e.add(e.idx(kk * 16), aColOff),
                               /*transpose=*/false));
  }
  auto loop = e.forLoop(
      e.idx(0), tiles, init,
      [&](Value t, ValueRange st) -> SmallVector<Value> {
        // Tile t has landed (this thread's copies, then everyone's); every
        // warp is done with tile t - 1, whose stage takes tile t + 1.
        commitAndWait(/*wait=*/true);
        gpu::BarrierOp::create(b, loc);
        Value t0 = e.add(kvStart, e.mul(t, e.idx(kTileKeys)));
        Value stage = e.remui(t, e.idx(kStages));
        Value nextT = e.add(t, e.idx(1));
        e.ifThen(e.cmpi(Pred::ult, nextT, tiles), [&]() {
          Value nextRow0 = stageRow(e.remui(nextT, e.idx(kStages)));
          copyTile(cache, pt, e.add(kvStart, e.mul(nextT, e.idx(kTileKeys))),
                   smem,
                   [&](Value r, Value col) { return at(nextRow0, r, col); },
                   onePage ? st.back() : Value());
        });
        commitAndWait(/*wait=*/false);
        Value pageAfter =
            onePage ? tilePage(pt, e.add(t, e.idx(2)), tiles) : Value();
        Value kv0 = stageRow(stage);

        // S = Q K^T over the slot's 16 keys, for each of the warp's blocks:
        // sAcc[(set * wb + mb) * 2 + n].
        SmallVector<Value> sAcc(2 * wb * kSplit, zeroC());
        Value krow = e.add(kv0, e.add(e.mul(slot, e.idx(kSlotKeys)),
                                      e.add(e.mul(l16, e.idx(8)), l8)));
        for (int64_t kk = 0; kk < kSteps; ++kk) {
          Value kf = ldmatrix(smem, krow,
                              e.add(e.idx(kk * 16), e.mul(lMid, e.idx(8))),
                              /*transpose=*/false);
          Value b0 = half(kf, 0), b1 = half(kf, 2);
          int64_t set = kk % kSplit;
          for (int64_t mb = 0; mb < wb; ++mb) {
            Value a = kk < qHeld ? qFrag[kk]
                                 : ldmatrix(smem, aRow(mb),
                                            e.add(e.idx(kk * 16), aColOff),
                                            /*transpose=*/false);
            Value &s0 = sAcc[(set * wb + mb) * 2];
            Value &s1 = sAcc[(set * wb + mb) * 2 + 1];
            s0 = mma(a, b0, s0);
            s1 = mma(a, b1, s1);
          }
        }
        // Base-2 logits, keys past the split's end at -inf:
        // x[mb][h][n * 2 + i].
        Value key0 = e.add(t0, e.add(e.mul(slot, e.idx(kSlotKeys)), laneCol));
        SmallVector<SmallVector<SmallVector<Value>>> x(
            wb, SmallVector<SmallVector<Value>>(2));
        for (int64_t mb = 0; mb < wb; ++mb)
          for (int64_t n = 0; n < 2; ++n) {
            Value sum = sAcc[mb * 2 + n];
            for (int64_t set = 1; set < kSplit; ++set)
              sum = arith::AddFOp::create(b, loc, sum,
                                          sAcc[(set * wb + mb) * 2 + n]);
            for (int64_t h = 0; h < 2; ++h)
              for (int64_t i = 0; i < 2; ++i) {
                Value v = e.mul(elem(sum, h, i), e.f32(qkScale));
                if (s.softCap)
                  v = e.mul(e.tanh(v), e.f32(*s.softCap * kLog2e));
                Value key = e.add(key0, e.idx(n * 8 + i));
                x[mb][h].push_back(
                    e.select(e.cmpi(Pred::ult, key, kvEnd), v, e.negInf()));
              }
          }
        // Row maxima across the 4 slots.
        for (int64_t mb = 0; mb < wb; ++mb)
          for (int64_t h = 0; h < 2; ++h) {
            Value mx = x[mb][h][0];
            for (Value v : ArrayRef<Value>(x[mb][h]).drop_front())
              mx = e.maxf(mx, v);
            mx = quadReduce(mx, /*isMax=*/true);
            Value r = e.add(quadRow, e.idx(8 * h));
            e.ifThen(quad0, [&]() {
              e.store(mx, red, {redIndex(0, blockOf(mb), slot, r)});
            });
          }
        gpu::BarrierOp::create(b, loc);
        SmallVector<Value> next(st.begin(), st.end());
        SmallVector<Value> alpha(2 * wb);
        VectorType two = VectorType::get({2}, s.elem);
        for (int64_t mb = 0; mb < wb; ++mb)
          for (int64_t h = 0; h < 2; ++h) {
            Value r = e.add(quadRow, e.idx(8 * h));
            Value mx = st[mIdx(mb, h)];
            for (int64_t sl = 0; sl < kSlots; ++sl)
              mx = e.maxf(mx, e.load(red, {redIndex(0, blockOf(mb),
                                                    e.idx(sl), r)}));
            Value mUse =
                e.select(e.cmpf(FPred::OEQ, mx, e.negInf()), e.f32(0), mx);
            alpha[mb * 2 + h] = e.ex2(e.sub(st[mIdx(mb, h)], mUse));
            next[mIdx(mb, h)] = mx;
            Value sum = e.f32(0);
            for (Value &v : x[mb][h]) {
              v = e.ex2(e.sub(v, mUse));
              sum = e.add(sum, v);
            }
            sum = quadReduce(sum, /*isMax=*/false);
            e.ifThen(quad0, [&]() {
              e.store(sum, red, {redIndex(1, blockOf(mb), slot, r)});
            });
            // P of the slot's keys into the shared P tile.
            for (int64_t n = 0; n < 2; ++n) {
              Value pv = vector::FromElementsOp::create(
                  b, loc, two,
                  ValueRange{e.fromF32(x[mb][h][n * 2], s.elem),
                             e.fromF32(x[mb][h][n * 2 + 1], s.elem)});
              Value col = e.add(e.mul(slot, e.idx(kSlotKeys)),
                                e.add(e.idx(n * 8), laneCol));
              vector::StoreOp::create(b, loc, pv, pTile,
                                      ValueRange{e.add(blockRow0(mb), r), col},
                                      /*nontemporal=*/false,
                                      llvm::MaybeAlign(2 * s.elemBytes()));
            }
          }
        gpu::BarrierOp::create(b, loc);
        for (int64_t mb = 0; mb < wb; ++mb) {
          for (int64_t h = 0; h < 2; ++h) {
            Value r = e.add(quadRow, e.idx(8 * h));
            Value sum = e.f32(0);
            for (int64_t sl = 0; sl < kSlots; ++sl)
              sum = e.add(sum, e.load(red, {redIndex(1, blockOf(mb),
                                                     e.idx(sl), r)}));
            next[lIdx(mb, h)] = LLVM::FMAOp::create(
                b, loc, st[lIdx(mb, h)], alpha[mb * 2 + h], sum);
          }
          for (int64_t d = 0; d < nAcc; ++d) {
            SmallVector<Value> v;
            for (int64_t h = 0; h < 2; ++h)
              for (int64_t i = 0; i < 2; ++i)
                v.push_back(e.mul(elem(st[accIdx(mb, d)], h, i),
                                  alpha[mb * 2 + h]));
            next[accIdx(mb, d)] = fragment(fragC(), v);
          }
        }
        // O += P V over the slot's columns; each V fragment serves the
        // warp's blocks.
        for (int64_t kk = 0; kk < kTileKeys / 16; ++kk) {
          SmallVector<Value> pa;
          for (int64_t mb = 0; mb < wb; ++mb)
            pa.push_back(ldmatrix(pTile, aRow(mb),
                                  e.add(e.idx(kk * 16), aColOff),
                                  /*transpose=*/false));
          Value vrow =
              e.add(kv0, e.add(e.idx(kk * 16), e.add(e.mul(lMid, e.idx(8)),
                                                     l8)));
          for (int64_t dp = 0; dp < nAcc / 2; ++dp) {
            Value vcol =
                e.add(colBase, e.add(e.idx(dp * 16), e.mul(l16, e.idx(8))));
            Value vf = ldmatrix(smem, vrow, vcol, /*transpose=*/true);
            Value b0 = half(vf, 0), b1 = half(vf, 2);
            for (int64_t mb = 0; mb < wb; ++mb) {
              Value &o0 = next[accIdx(mb, 2 * dp)];
              Value &o1 = next[accIdx(mb, 2 * dp + 1)];
              o0 = mma(pa[mb], b0, o0);
              o1 = mma(pa[mb], b1, o1);
            }
          }
        }
        if (onePage)
          next.back() = pageAfter;
        return next;
      });
  // No copy is left in flight at the exit.
  commitAndWait(/*wait=*/true);

  ValueRange st = loop.getResults();
  // o = acc / l and lse of the thread's rows into row `row` of `outO` /
  // `outLse` (o's element type theirs): the request's final state, or a
  // split's f32 partial state.
  auto storeState = [&](Value outO, Value outLse, Value row) {
    Type oElem = cast<MemRefType>(outO.getType()).getElementType();
    int64_t oBytes = oElem.getIntOrFloatBitWidth() / 8;
    for (int64_t mb = 0; mb < wb; ++mb)
      for (int64_t h = 0; h < 2; ++h) {
        Value r = e.add(blockRow0(mb), e.add(quadRow, e.idx(8 * h)));
        Value head = e.add(head0, r);
        auto [inv, lseV] = finalRow(st[mIdx(mb, h)], st[lIdx(mb, h)]);
        e.ifThen(e.cmpi(Pred::ult, head, e.idx(s.heads)), [&]() {
          VectorType out = VectorType::get({2}, oElem);
          for (int64_t d = 0; d < nAcc; ++d) {
            Value a = st[accIdx(mb, d)];
            Value v = vector::FromElementsOp::create(
                b, loc, out,
                ValueRange{e.fromF32(e.mul(elem(a, h, 0), inv), oElem),
                           e.fromF32(e.mul(elem(a, h, 1), inv), oElem)});
            vector::StoreOp::create(
                b, loc, v, outO,
                ValueRange{row, head,
                           e.add(colBase, e.add(e.idx(d * 8), laneCol))},
                /*nontemporal=*/false, llvm::MaybeAlign(2 * oBytes));
          }
          e.ifThen(e.andi(quad0, e.cmpi(Pred::eq, slot, e.idx(0))),
                   [&]() { e.store(lseV, outLse, {row, head}); });
        });
      }
  };
  finish(split, storeState);
}

} // namespace

LogicalResult gpukernel::checkMLAKernel(MLADecodeOp op,
                                        const MLAKernelOptions &opts) {
  return success(succeeded(mlaShape(op, opts)));
}

LogicalResult gpukernel::buildMLADecode(MLADecodeOp op, gpu::GPUModuleOp kmod,
                                        StringRef name,
                                        const MLAKernelOptions &opts) {
  FailureOr<MLAShape> shape = mlaShape(op, opts);
  if (failed(shape))
    return failure();
  const MLAShape &s = *shape;
  Location loc = op.getLoc();
  // The split-KV path's buffers, on the host: partial states [B, H, D_ckv]
  // f32 and [B, H], arrival counters [B, H] i32 at 0. The launch below runs
  // one split (grid z = 1), which leaves them untouched; the runtime picks
  // the splits (grid symbol kv_splits) and passes [B x S] partial rows.
  OpBuilder hb(op);
  Emitter he{hb, loc};
  Value batch = he.dim(op.getQNope(), 0);
  auto alloc = [&](ArrayRef<int64_t> shape, Type elem) {
    return gpu::AllocOp::create(hb, loc, MemRefType::get(shape, elem),
                                /*asyncToken=*/Type(), ValueRange{},
                                ValueRange{batch}, ValueRange{},
                                /*hostShared=*/false)
        .getMemref();
  };
  int64_t dyn = ShapedType::kDynamic;
  Value oPart = alloc({dyn, s.heads, s.ckv}, hb.getF32Type());
  Value lsePart = alloc({dyn, s.heads}, hb.getF32Type());
  Value counters = alloc({dyn, s.heads}, hb.getI32Type());
  gpu::MemsetOp::create(hb, loc, /*asyncToken=*/Type(), ValueRange{},
                        counters, he.i32(0));
  SmallVector<Value> extra{oPart, lsePart, counters};

  KernelABI abi;
  abi.kind = "mla_decode";
  abi.args = argRoles(op);
  abi.args.append({"o_part", "lse_part", "merge_counters"});
  abi.grid = {GridExtentABI{"batch"}, GridExtentABI{"", s.headBlocks()},
              GridExtentABI{"kv_splits"}};
  abi.block = {s.threads(), 1, 1};
  abi.smem = s.smemBytes();
  abi.tileQ = s.rows();
  abi.tileKV = kTileKeys;
  abi.kvStages = kStages;
  abi.mergeTogether = kMergeTogetherFlag;
  IRMapping map;
  gpu::GPUFuncOp func =
      createKernel(kmod, op, name, TypeRange{}, abi, map, extra);
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, loc}};
    PageTable pt{map.lookup(op.getKvIndptr()), map.lookup(op.getKvIndices()),
                 map.lookup(op.getKvLastPageLen()), s.pageSize,
                 /*checked=*/false};
    FusedMerge split;
    split.oPart = map.lookup(oPart);
    split.lsePart = map.lookup(lsePart);
    split.counters = map.lookup(counters);
    split.o = map.lookup(op.getOuts()[0]);
    split.lse = map.lookup(op.getOuts()[1]);
    split.lseBase2 = s.lseBase2;
    if (s.wgmma) {
      func->setAttr(kWgmmaAttr, UnitAttr::get(func.getContext()));
      buildMLAWgmmaBody(e, s, map.lookup(op.getQNope()),
                        map.lookup(op.getQPe()), map.lookup(op.getKvCache()),
                        pt, split);
    } else {
      MLAKernel k(e, s);
      k.build(map.lookup(op.getQNope()), map.lookup(op.getQPe()),
              map.lookup(op.getKvCache()), pt, split);
    }
    gpu::ReturnOp::create(b, loc);
  }
  OpBuilder after(op->getContext());
  after.setInsertionPointAfter(op);
  launch(hb, op, func, {batch, he.idx(s.headBlocks()), he.idx(1)},
         s.threads(), s.smemBytes(), extra);
  for (Value v : extra)
    gpu::DeallocOp::create(after, loc, /*asyncToken=*/Type(), ValueRange{},
                           v);
  return success();
}
