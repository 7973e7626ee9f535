//===- TileToMma.cpp - tile math onto mma.sync register fragments ---------===//
//
// pa-tile-to-mma, the third stage of the prefill GPU pipeline (docs/GPU.md):
// after pa-promote-tiles, Q / K / V tiles are f16 / bf16 views of shared
// memory and the scores S and the state (m, l, acc) are still f32 buffers.
// This pass splits every tile's rows over the warps of the CTA (warp w owns
// rows [w M, (w + 1) M), M = 16 or 32: one or two m16 blocks that share
// every K/V fragment) and keeps S and the state in registers as mma.sync
// fragments (m16n8k16, f32 accumulate; a thread holds rows lane / 4 and
// lane / 4 + 8 of each m block):
//
//   pa.tile.init_state   m = -inf, l = 0, acc = 0 fragments
//   pa.tile.qk           nvgpu.ldmatrix.x4 of Q (held in registers when one
//                        m block and D <= 128) and K, nvgpu.mma.sync, k steps
//                        outer so the accumulators of a step are independent
//   pa.tile.mask         scale, soft-cap, ALiBi; the masks (key bound,
//                        causal, window, custom bits) in an scf.if on
//                        `masked_if`; logits in base 2. Without soft-cap or
//                        ALiBi the scores stay raw until the exponent
//   pa.tile.softmax_update
//                        row max over the 4 lanes of a quad
//                        (gpu.subgroup_reduce, cluster 4: pa-warp-shuffle-
//                        reduce makes it shuffles), p = 2^(x c - m) as one
//                        FMA and one ex2, l and acc rescaled
//   pa.tile.pv           P converted to f16 / bf16 A fragments in registers
//                        (the C layout of two n8 tiles is the A layout of a
//                        k16 step), ldmatrix.x4.trans of V, mma.sync; with
//                        narrow rows (at most 8 valid rows: the decode of
//                        groups up to 8) transposed, O^T += V^T P^T, half
//                        the accumulators (MmaConfig::narrow)
//   pa.tile.store        row sums reduced over the quad, o = acc / l,
//                        lse = m + log2 l (times ln 2 unless base 2); rows
//                        without a visible key give 0 and -inf
//
// The buffers' values become SSA values: scf.for and scf.if that the state
// lives across get it as extra iter_args / results.
//
// fp8 K / V tiles (pa-promote-tiles' fp8-widen=registers: the cache's
// bytes, XOR-swizzled like the 16-bit rows) are read through a 16-bit view
// of the same shared memory and widened after ldmatrix (arith.extf of 4
// bytes, cvt.rn.f16x2.e4m3x2 / e5m2x2 by pa-fp8-to-nvvm; MmaConfig::fp8):
//   K: one 8x8 ldmatrix matrix of 16-bit words is 8 keys x 16 dims, lane
//      (g, t) holding dims 4t .. 4t + 3 of key g: a whole B fragment of a
//      k16 step whose k index 2t + i is dim 4t + i and 2t + 8 + i dim
//      4t + 2 + i. Q's 16-element groups are permuted the same way in
//      shared memory once before the KV loop (new[8h + 2t + i] =
//      old[4t + 2h + i]), so that its ldmatrix fragments match.
//   V: ldmatrix.trans of the words gives lane (g, t) dims 2g, 2g + 1 of
//      keys 2t, 2t + 1; one byte permute makes them the pairs (2g: keys
//      2t, 2t + 1) and (2g + 1: keys 2t, 2t + 1), the rows g and g + 8 of
//      an A fragment of V^T (narrow rows) or n column g of two B fragments
//      (O += P V). Accumulator row (column) g of the 16 dims of fragment
//      f (f = 2c + p) is dim 16 f + 2g (16 c + 2g + p); the stores write
//      o from that layout.
//
// A kernel with kWgmmaAttr (prefill-mma=wgmma) computes qk and pv with
// Hopper's warpgroup MMAs instead (qkWgmma, pvWgmma): warp w is warp w % 4
// of warpgroup w / 4, whose m64 rows are its 4 warps' 16 rows each, and a
// wgmma m64nN accumulator is, per warp, the C fragments of N / 8 n8 tiles
// in order, so every other tile op is lowered as above.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "TileLowering.h"

#include "PagedAttn/Conversion/PagedAttention.h"
#include "PagedAttn/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <array>

namespace mlir::pa {
#define GEN_PASS_DEF_PATILETOMMA
#include "PagedAttn/Conversion/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;
using FPred = arith::CmpFPredicate;

namespace {

constexpr llvm::StringLiteral kPass = "pa-tile-to-mma";

/// What the fragments specialize on, read off the kernel's tile IR.
struct MmaConfig : TileMaskOptions {
  Type elem;
  int64_t headDim = 0, group = 1, warps = 0, mTiles = 1, keys = 0;
  /// Warps that split each KV tile's keys (the ABI's kv_warps): warp w
  /// takes row block w / kvWarps and keys [(w % kvWarps) K, ... + K) of the
  /// tile, K = keys / kvWarps, with a softmax state of its own.
  int64_t kvWarps = 1;
  double smScale = 1.0;
  /// Lazy rescaling: a row's reference maximum moves only when a tile's
  /// maximum exceeds it by more than this (base 2); 0: whenever it grows.
  double rescaleThreshold = 0;
  /// An fp8 cache's K scale (pa.tile.qk's k_scale) and V scale
  /// (pa.tile.store's v_scale) of the CTA's KV head: f32 values defined
  /// before the KV loop; null without.
  Value kScale, vScale;
  bool lseBase2 = false;
  /// Warpgroup MMAs (kWgmmaAttr): qk and pv as wgmma.mma_async over
  /// descriptors of the shared tiles.
  bool wgmma = false;
  /// Narrow rows (narrow-pv, mma.sync, one m block whose valid rows are
  /// its first 8: the decode of a group of at most 8 heads): O += P V is
  /// computed transposed, O^T += V^T P^T, head dims as the m16 rows and the
  /// tile's rows as the n8 columns, so a thread holds D / 4 accumulators
  /// instead of D / 2 (P^T's B fragments are P's row-half-0 C fragments;
  /// V^T's A fragments one ldmatrix.x4.trans each). Row half 1 keeps no
  /// softmax state; the store merges and writes from the O^T layout.
  bool narrow = false;
  /// The fp8 type of K and V tiles in that type (pa-promote-tiles'
  /// fp8-widen=registers), widened in registers after ldmatrix (see the
  /// file comment); null otherwise.
  Type fp8;

  int64_t rowHalves() const { return 2 * mTiles; }
  /// acc fragments: mTiles x D / 8 C fragments, or D / 16 O^T ones.
  int64_t accFrags() const { return narrow ? headDim / 16 : mTiles * dTiles(); }
  int64_t dTiles() const { return headDim / 8; }
  int64_t warpKeys() const { return keys / kvWarps; }
  int64_t rowWarps() const { return warps / kvWarps; }
  int64_t nTiles() const { return warpKeys() / 8; }
  int64_t kSteps() const { return headDim / 16; }
};

/// The state (m[rowHalves], l[rowHalves], acc[mTiles * dTiles]) and the
/// S (then P) fragments s[mt * nTiles + n].
using Env = TileEnv;

class MmaLowering : MmaFragments, TileStateLowering {
public:
  MmaLowering(KernelEmitter &e, const MmaConfig &c, const KernelTileOps &ops)
      : MmaFragments{e, c.elem}, TileStateLowering(e.b, kPass), e(e),
        b(e.b), loc(e.loc), c(c), ops(ops) {}

  LogicalResult run(gpu::GPUFuncOp func);

private:
  KernelEmitter &e;
  OpBuilder &b;
  Location loc;
  const MmaConfig &c;
  const KernelTileOps &ops;
  gpu::GPUFuncOp func;
  Value tid, lane, warp, laneCol;
  /// The warp's row block, and its first key in a KV tile (key split).
  Value warpRow, keyOff;
  /// Per thread: the tile rows it holds, row half h of m block mt at
  /// rowInfo[2 * mt + h] (C fragment rows lane / 4 and lane / 4 + 8).
  struct Row {
    Value valid, head, row, pos32, slope, maskBit0;
  };
  SmallVector<Row> rowInfo;
  /// Q fragments held in registers (qFrag[mt * kSteps + kk]), or empty.
  SmallVector<Value> qFrag;
  /// The Q tile in shared memory (of the kernel's first pa.tile.qk, found
  /// by the prelude before the tile ops are lowered): the staged store
  /// reuses its rows.
  std::optional<SharedTile> qTile;
  /// What the masks read, from the kernel's (first) pa.tile.mask.
  Value kvLen, maskBase;
  TileMaskOp maskOp;
  PackedMask mask;

  Type f32() { return b.getF32Type(); }
  /// Row `r` of the warp's keys in a K / V tile.
  Value keyRow(Value r) { return c.kvWarps > 1 ? e.add(keyOff, r) : r; }
  /// The shared tiles are XOR-swizzled (kSmemSwizzleAttr on the kernel).
  bool swizzle = false;
  /// Indices of element (row, col) of `t` in its shared buffer.
  std::pair<Value, Value> at(const SharedTile &t, Value row, Value col) {
    if (c.wgmma)
      return wgmmaIndex(e, t.row0, t.rows, c.headDim, row,
                        e.add(e.idx(t.col0), col));
    Value r = e.add(e.idx(t.row0), row), cc = e.add(e.idx(t.col0), col);
    return {r, swizzle ? swizzleCol(e, r, cc, 8) : cc};
  }
  using MmaFragments::ldmatrix;
  /// Column kk * 16 + half * 8 of an ldmatrix (kk static; half per lane, 0
  /// or 1): what `ldmatrix` below reads unswizzled.
  Value ldmatrixCol(int64_t kk, Value half) {
    return e.add(e.idx(kk * 16), e.mul(half, e.idx(8)));
  }
  /// ldmatrix x4 of `t` at row `row`, column `col` = ldmatrixCol(kk,
  /// half). Swizzled: the column's 128-byte line (kk / 4) is a constant
  /// offset and the chunk within it (2 (kk % 4) + half) ^ (row % 8) is
  /// (2 (kk % 4)) ^ (half ^ row % 8): one value a lane XORed with one of 4
  /// constants, rather than one computed column per kk (registers that the
  /// prefill kernels spill).
  Value ldmatrix(const SharedTile &t, Value row, Value col, int64_t kk,
                 Value half, bool transpose) {
    if (!swizzle)
      return ldmatrix(t.base, e.add(e.idx(t.row0), row),
                      e.add(e.idx(t.col0), col), transpose);
    if (t.col0 % 64 != 0) {
      auto [r, cc] = at(t, row, col);
      return ldmatrix(t.base, r, cc, transpose);
    }
    Value r = e.add(e.idx(t.row0), row);
    Value lanePart = arith::XOrIOp::create(b, loc, e.mul(half, e.idx(8)),
                                           swizzleMask(e, r, 8));
    Value swz = e.add(e.idx(t.col0 + (kk / 4) * 64),
                      arith::XOrIOp::create(b, loc, lanePart,
                                            e.idx((kk % 4) * 16)));
    return ldmatrix(t.base, r, swz, transpose);
  }
  /// The factor from what logits() returns to base-2 logits: sm_scale *
  /// log2(e) for raw scores (no soft-cap or ALiBi), 1 otherwise (times the
  /// K scale, where there is one, for raw scores).
  double postScale() const {
    return (c.softCap || c.alibi) ? 1.0 : c.smScale * kLog2e;
  }
  /// Index of the state's acc fragment (m block mt, n8 column tile dn).
  int64_t accIndex(int64_t mt, int64_t dn) const {
    return 2 * c.rowHalves() + mt * c.dTiles() + dn;
  }

  /// Computes what every KV tile reuses (the rows a thread holds for the
  /// masks, Q fragments) once, before `before`.
  LogicalResult emitPrelude(Operation *before) override;
  SmallVector<Value> initState() override {
    SmallVector<Value> st(c.rowHalves(), e.negInf());
    st.append(c.rowHalves(), e.f32(0));
    st.append(c.accFrags(), zeroC());
    return st;
  }
  /// Where tile row `r` goes (tileRowPlace; `qiSafe`: its query, 0 for an
  /// invalid row).
  Row tileRow(Value r, Value row0, Value rows, Value kvHead, Value rowStride,
              Value *qiSafe = nullptr) {
    TileRowPlace p =
        tileRowPlace(e, r, c.group, row0, rows, kvHead, rowStride);
    Row row;
    row.valid = p.valid;
    row.head = p.head;
    row.row = p.row;
    if (qiSafe)
      *qiSafe = p.qi;
    return row;
  }
  /// The rows a thread holds: tile query i writes row row0 + i * stride
  /// (stride 1 when `rowStride` is null; stores only).
  void computeRows(bool forStore, Value row0, Value rows, Value kvHead,
                   Value pos0, Value qrow0, Value rowStride = Value());
  Value qFragment(const SharedTile &q, int64_t mt, int64_t kk);
  void qk(TileQKOp op, Env &env) override;
  /// wgmma (c.wgmma). Descriptors of the shared tiles, from the prelude:
  /// K-major ones (Q, K) and MN-major ones (V, leading byte offset the
  /// span of a 64-column block of a K / V tile) at the start of shared
  /// memory, and that of the warpgroup's first row of Q.
  Value descK, descV, descQ;
  /// Rows of the Q tile (the span of its 64-column blocks).
  int64_t qRows = 0;
  /// The warpgroup MMAs' helpers (KernelBuilder.h).
  WgmmaOps wg{e, c.elem};
  void qkWgmma(TileQKOp op, Env &env);
  void pvWgmma(TilePVOp op, Env &env);
  void applyMask(TileMaskOp op, Env &env) override;
  SmallVector<Value> logits(ArrayRef<Value> s, int64_t mt, Value tileStart,
                            bool masked);
  void softmaxUpdate(Env &env) override;
  void pv(TilePVOp op, Env &env) override;
  /// Narrow rows: `rowValue` (a value of row half 0, row lane / 4) of row
  /// 2 (lane % 4) + i, the row of column i of the thread's O^T fragments,
  /// shuffled from lane 8 (lane % 4) + 4 i (every lane must run it).
  Value columnValue(Value rowValue, int64_t i) {
    Value src = e.toI32(
        e.add(e.mul(e.remui(lane, e.idx(4)), e.idx(8)), e.idx(4 * i)));
    return gpu::ShuffleOp::create(b, loc, rowValue, src, e.i32(32),
                                  gpu::ShuffleMode::IDX)
        .getShuffleResult();
  }
  /// pv of narrow rows: O^T += V^T P^T (MmaConfig::narrow).
  void pvNarrow(TilePVOp op, Env &env);
  /// The store of narrow rows: the key warps merge the O^T fragments with
  /// the m / l of each thread's two columns, and o is written from the O^T
  /// layout.
  void storeNarrow(TileStoreOp op, ArrayRef<Value> m, ArrayRef<Value> l,
                   ArrayRef<Value> accT, Type oElem);
  void store(TileStoreOp op, Env &env) override;
  /// A row's output scale 1 / l (times the V scale; 0 without a visible
  /// key) and its lse (m + log2 l in the lse's base; -inf without a key).
  std::pair<Value, Value> finalRow(Value m, Value l) {
    return {invOrZero(e, l, c.vScale), mergedLse(e, m, l, c.lseBase2)};
  }
  /// Row half h of accumulator fragment `a` times `inv`, as two elements
  /// of o's type.
  Value outPair(Value a, int64_t h, Value inv, Type oElem) {
    return vector::FromElementsOp::create(
        b, loc, VectorType::get({2}, oElem),
        ValueRange{e.fromF32(e.mul(elem(a, h, 0), inv), oElem),
                   e.fromF32(e.mul(elem(a, h, 1), inv), oElem)});
  }
  /// Fragments f = 2c and 2c + 1 of an fp8 kernel's O (row half h) times
  /// `inv`: dims 16 c + 4 (lane % 4) .. + 3 in order.
  Value outQuad(Value even, Value odd, int64_t h, Value inv, Type oElem) {
    SmallVector<Value> xs;
    for (int64_t i = 0; i < 2; ++i)
      for (Value a : {even, odd})
        xs.push_back(e.fromF32(e.mul(elem(a, h, i), inv), oElem));
    return vector::FromElementsOp::create(b, loc,
                                          VectorType::get({4}, oElem), xs);
  }
  /// fp8: the 16-bit view of the shared memory of fp8 tile `t` (the same
  /// rows, D / 2 words a row), made once per buffer.
  SharedTile words(const SharedTile &t);
  DenseMap<Value, Value> wordViews;
  /// fp8: the four fp8 values in row `r` of an ldmatrix result (one 32-bit
  /// register), byte-permuted by `perm`, widened to Q's type as two pairs
  /// (vector<2>: the rows fragments are built of; one vector of four would
  /// be folded into a 2-D shape_cast, which the LLVM lowering lacks).
  SmallVector<Value> widen(Value frag, int64_t r, ArrayRef<int64_t> perm);
  /// fp8: V's keys [16 kk, 16 kk + 16) of the dims of 16-byte chunks 2 dp2
  /// and 2 dp2 + 1 (one 16-bit ldmatrix.x4.trans of `vw`, matrix j = keys
  /// 8 (j % 2) .., chunk 2 dp2 + j / 2), widened: for chunk 2 dp2 + s, the
  /// pairs (dim 2g, dim 2g + 1) of keys 2t, 2t + 1, then of keys 8 + 2t,
  /// 9 + 2t. In that order they are the rows of V^T's A fragment (narrow
  /// rows); pairs p and 2 + p the B fragment of n tile 2 (2 dp2 + s) + p.
  std::array<SmallVector<Value>, 2> vChunks8(const SharedTile &vw, int64_t kk,
                                             int64_t dp2);
  /// A 2-D fragment of type `t` from its rows.
  Value fragmentOfRows(VectorType t, ArrayRef<Value> rows) {
    Value v = ub::PoisonOp::create(b, loc, t);
    for (auto [i, row] : llvm::enumerate(rows))
      v = vector::InsertOp::create(b, loc, row, v, static_cast<int64_t>(i));
    return v;
  }
  /// fp8: permutes Q's 16-element groups in shared memory to match the K
  /// fragments (see the file comment), behind a CTA barrier.
  void permuteQ(const SharedTile &q);
  /// The store through the warp's Q rows in shared memory (see store()).
  void storeStaged(TileStoreOp op, const SharedTile &q, ArrayRef<Value> m,
                   ArrayRef<Value> l, ArrayRef<Value> acc, Type oElem);
  /// Key split: merges the warps' states of each row block into the
  /// state of its warp with key offset 0, through shared memory; `m`, `l`
  /// (quad-reduced) and `acc` are the thread's, replaced by the merged
  /// ones; element (h, i) of acc fragment f belongs to the row of m / l
  /// slot `slotOf(f, h, i)`. Emits the store's body (`finish`) for the
  /// merging warps only.
  void mergeKeyWarps(SmallVectorImpl<Value> &m, SmallVectorImpl<Value> &l,
                     SmallVectorImpl<Value> &acc,
                     function_ref<int64_t(int64_t, int64_t, int64_t)> slotOf,
                     function_ref<void()> finish);
};

LogicalResult MmaLowering::emitPrelude(Operation *before) {
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPoint(before);
  auto defined = [&](Value v) {
    return !v || v.getParentRegion()->isProperAncestor(
                     before->getParentRegion()) ||
           v.getParentRegion() == before->getParentRegion();
  };
  if (maskOp) {
    for (Value v : {maskOp.getRow0(), maskOp.getRows(), maskOp.getPos0(),
                    maskOp.getKvHead(), maskOp.getEnd(),
                    maskOp.getMaskByte0(), maskOp.getMaskQrow0(),
                    maskOp.getMaskKvLen()})
      if (!defined(v) || (v.getDefiningOp() &&
                          before->isBeforeInBlock(v.getDefiningOp()) &&
                          v.getDefiningOp()->getBlock() ==
                              before->getBlock()))
        return maskOp.emitOpError()
               << "pa-tile-to-mma needs the mask's rows, positions and key "
                  "bound defined before the KV loop";
    kvLen = maskOp.getEnd();
    if (mask.bits)
      maskBase = maskOp.getMaskByte0();
    computeRows(/*forStore=*/false, maskOp.getRow0(), maskOp.getRows(),
                maskOp.getKvHead(), maskOp.getPos0(), maskOp.getMaskQrow0());
  }
  // Q fragments stay in registers when they fit beside the accumulators
  // (one m block up to D = 128); otherwise each step reloads them.
  TileQKOp first = ops.qks.front();
  if (first)
    qTile = *sharedTile(kPass, first, first.getQ());
  if (first && c.fp8)
    permuteQ(*qTile);
  if (first && c.wgmma) {
    Type i64 = b.getI64Type();
    Value addr = wg.address(qTile->base);
    // K-major swizzled layouts ignore the leading byte offset (1 by
    // convention); V's is the distance between its 64-column blocks.
    descK = wg.descriptor(addr, 16);
    descV = wg.descriptor(addr, c.keys * 128);
    qRows = qTile->rows;
    Value group = arith::IndexCastOp::create(b, loc, i64,
                                             e.divui(warp, e.idx(4)));
    descQ = e.add(wg.advance(descK, qTile->row0 * c.headDim * 2),
                  arith::MulIOp::create(
                      b, loc, group,
                      arith::ConstantOp::create(
                          b, loc, b.getIntegerAttr(i64, 64 * 128 / 16))));
  }
  if (first && !c.wgmma && c.mTiles * c.headDim <= 128) {
    SharedTile q = *sharedTile(kPass, first, first.getQ());
    for (int64_t mt = 0; mt < c.mTiles; ++mt)
      for (int64_t kk = 0; kk < c.kSteps(); ++kk)
        qFrag.push_back(qFragment(q, mt, kk));
  }
  return success();
}

void MmaLowering::computeRows(bool forStore, Value row0, Value rows,
                              Value kvHead, Value pos0, Value qrow0,
                              Value rowStride) {
  rowInfo.assign(c.rowHalves(), Row());
  for (int64_t h = 0; h < c.rowHalves(); ++h) {
    Row &row = rowInfo[h];
    Value r;
    if (forStore) {
      // In i32 from the thread id, unlike the loop's copy, so that the rows
      // are recomputed here rather than kept live across the KV loop.
      Value t32 = e.toI32(tid);
      Value r32 = e.add(
          e.mul(arith::DivUIOp::create(b, loc, t32, e.i32(32 * c.kvWarps)),
                e.i32(16 * c.mTiles)),
          e.add(arith::DivUIOp::create(
                    b, loc, arith::RemUIOp::create(b, loc, t32, e.i32(32)),
                    e.i32(4)),
                e.i32(8 * h)));
      r = e.toIndex(r32);
    } else {
      r = e.add(e.mul(warpRow, e.idx(16 * c.mTiles)),
                e.add(e.divui(lane, e.idx(4)), e.idx(8 * h)));
    }
    Value qiSafe;
    row = tileRow(r, row0, rows, kvHead, rowStride, &qiSafe);
    if (forStore)
      continue;
    row.pos32 = e.toI32(maskOp.getQPositions()
                            ? e.loadIdx(maskOp.getQPositions(), row.row)
                            : e.add(pos0, qiSafe));
    if (Value slopes = maskOp.getAlibiSlopes())
      row.slope = e.load(slopes, {row.head});
    if (mask.bits)
      row.maskBit0 = e.mul(e.add(qrow0, qiSafe), maskOp.getMaskKvLen());
  }
}

SharedTile MmaLowering::words(const SharedTile &t) {
  SharedTile w = t;
  Value &view = wordViews[t.base];
  if (!view) {
    // The fp8 buffer is a memref.view of the dynamic shared memory
    // (pa-promote-tiles; checked by makeConfig): the same bytes as words.
    auto src = t.base.getDefiningOp<memref::ViewOp>();
    auto mt = cast<MemRefType>(t.base.getType());
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointAfter(src);
    view = memref::ViewOp::create(
        b, loc,
        MemRefType::get({mt.getDimSize(0), mt.getDimSize(1) / 2}, c.elem,
                        MemRefLayoutAttrInterface(), mt.getMemorySpace()),
        src.getSource(), src.getByteShift(), ValueRange{});
  }
  w.base = view;
  w.col0 = t.col0 / 2;
  return w;
}

SmallVector<Value> MmaLowering::widen(Value frag, int64_t r,
                                      ArrayRef<int64_t> perm) {
  // The byte permute on the whole register (one prmt), then its two
  // 16-bit halves (which the cvt reads as they are: no byte extraction).
  Value word = vector::ExtractOp::create(b, loc, frag, r);
  Value bytes = vector::BitCastOp::create(
      b, loc, VectorType::get({4}, b.getI8Type()), word);
  if (!llvm::equal(perm, ArrayRef<int64_t>{0, 1, 2, 3}))
    bytes = vector::ShuffleOp::create(b, loc, bytes, bytes, perm);
  Value halves = vector::BitCastOp::create(
      b, loc, VectorType::get({2}, b.getI16Type()), bytes);
  SmallVector<Value> out;
  for (int64_t p = 0; p < 2; ++p) {
    Value half = vector::ShuffleOp::create(b, loc, halves, halves,
                                           ArrayRef<int64_t>{p});
    Value pair = vector::BitCastOp::create(
        b, loc, VectorType::get({2}, b.getI8Type()), half);
    Value f8 = arith::BitcastOp::create(b, loc, VectorType::get({2}, c.fp8),
                                        pair);
    out.push_back(
        arith::ExtFOp::create(b, loc, VectorType::get({2}, c.elem), f8));
  }
  return out;
}

std::array<SmallVector<Value>, 2>
MmaLowering::vChunks8(const SharedTile &vw, int64_t kk, int64_t dp2) {
  Value l16 = e.divui(lane, e.idx(16));
  Value vrow = keyRow(e.add(e.idx(kk * 16), e.remui(lane, e.idx(16))));
  Value vf = ldmatrix(vw, vrow, ldmatrixCol(dp2, l16), dp2, l16,
                      /*transpose=*/true);
  std::array<SmallVector<Value>, 2> out;
  for (int64_t s = 0; s < 2; ++s) {
    out[s] = widen(vf, 2 * s, {0, 2, 1, 3});
    out[s].append(widen(vf, 2 * s + 1, {0, 2, 1, 3}));
  }
  return out;
}

void MmaLowering::permuteQ(const SharedTile &q) {
  // Every thread of the CTA permutes whole 16-element groups (two 16-byte
  // chunks of one row, each where the swizzle puts it), so that no other
  // thread touches its data; the barrier orders the permuted rows before
  // every warp's ldmatrix.
  int64_t perRow = c.headDim / 16, groups = q.rows * perRow;
  int64_t threads = c.warps * 32;
  auto chunkT = VectorType::get({8}, c.elem);
  for (int64_t i = 0; i * threads < groups; ++i) {
    Value id = e.add(tid, e.idx(i * threads));
    auto permute = [&]() {
      Value row = e.divui(id, e.idx(perRow));
      Value col = e.mul(e.remui(id, e.idx(perRow)), e.idx(16));
      auto [r0, c0] = at(q, row, col);
      auto [r1, c1] = at(q, row, e.add(col, e.idx(8)));
      Value lo = vector::LoadOp::create(b, loc, chunkT, q.base,
                                        ValueRange{r0, c0});
      Value hi = vector::LoadOp::create(b, loc, chunkT, q.base,
                                        ValueRange{r1, c1});
      // new[8 h + 2 t + i] = old[4 t + 2 h + i].
      Value nlo = vector::ShuffleOp::create(
          b, loc, lo, hi, ArrayRef<int64_t>{0, 1, 4, 5, 8, 9, 12, 13});
      Value nhi = vector::ShuffleOp::create(
          b, loc, lo, hi, ArrayRef<int64_t>{2, 3, 6, 7, 10, 11, 14, 15});
      vector::StoreOp::create(b, loc, nlo, q.base, ValueRange{r0, c0});
      vector::StoreOp::create(b, loc, nhi, q.base, ValueRange{r1, c1});
    };
    if ((i + 1) * threads <= groups)
      permute();
    else
      e.ifThen(e.cmpi(Pred::ult, id, e.idx(groups)), permute);
  }
  gpu::BarrierOp::create(b, loc);
}

Value MmaLowering::qFragment(const SharedTile &q, int64_t mt, int64_t kk) {
  Value row = e.add(e.mul(warpRow, e.idx(16 * c.mTiles)),
                    e.add(e.idx(16 * mt), e.remui(lane, e.idx(16))));
  Value half = e.divui(lane, e.idx(16));
  Value col = ldmatrixCol(kk, half);
  return ldmatrix(q, row, col, kk, half, /*transpose=*/false);
}

void MmaLowering::qk(TileQKOp op, Env &env) {
  if (c.wgmma)
    return qkWgmma(op, env);
  int64_t mT = c.mTiles, nTiles = c.nTiles();
  SharedTile q = *sharedTile(kPass, op, op.getQ()), k = *sharedTile(kPass, op, op.getK());
  // S = Q K^T: s[mt * nTiles + n]. k steps outer: the accumulators of a
  // step are independent, so their mma.sync pipeline; each K fragment
  // serves the mT row blocks of the warp.
  Value l8 = e.remui(lane, e.idx(8)), l16 = e.divui(lane, e.idx(16));
  Value lMid = e.remui(e.divui(lane, e.idx(8)), e.idx(2));
  Value zero = zeroC();
  SmallVector<Value> s(mT * nTiles, zero);
  if (c.fp8) {
    // Two k steps a 16-bit ldmatrix.x4: matrix j = keys 8 (j % 2) ..,
    // chunk 2 kk2 + j / 2 of the row (lanes 16 .. 31 the second chunk),
    // each a whole B fragment once widened.
    SharedTile kw = words(k);
    Value r16 = e.remui(lane, e.idx(16));
    for (int64_t kk2 = 0; kk2 < c.kSteps() / 2; ++kk2) {
      Value kcol = ldmatrixCol(kk2, l16);
      // The A fragments of the two k steps, a[mt * 2 + (kk - 2 kk2)].
      SmallVector<Value> a;
      for (int64_t mt = 0; mt < mT; ++mt)
        for (int64_t kk = 2 * kk2; kk < 2 * kk2 + 2; ++kk)
          a.push_back(qFrag.empty() ? qFragment(q, mt, kk)
                                    : qFrag[mt * c.kSteps() + kk]);
      for (int64_t np = 0; np < nTiles / 2; ++np) {
        Value kf = ldmatrix(kw, keyRow(e.add(e.idx(np * 16), r16)), kcol,
                            kk2, l16, /*transpose=*/false);
        for (int64_t j = 0; j < 4; ++j) {
          Value bf = fragmentOfRows(fragB(), widen(kf, j, {0, 1, 2, 3}));
          for (int64_t mt = 0; mt < mT; ++mt) {
            Value &acc = s[mt * nTiles + 2 * np + j % 2];
            acc = mma(a[mt * 2 + j / 2], bf, acc);
          }
        }
      }
    }
    env.s = s;
    return;
  }
  for (int64_t kk = 0; kk < c.kSteps(); ++kk) {
    Value kcol = ldmatrixCol(kk, lMid);
    SmallVector<Value> a;
    for (int64_t mt = 0; mt < mT; ++mt)
      a.push_back(qFrag.empty() ? qFragment(q, mt, kk)
                                : qFrag[mt * c.kSteps() + kk]);
    for (int64_t np = 0; np < nTiles / 2; ++np) {
      Value krow =
          keyRow(e.add(e.idx(np * 16), e.add(e.mul(l16, e.idx(8)), l8)));
      Value kf = ldmatrix(k, krow, kcol, kk, lMid, /*transpose=*/false);
      Value b0 = half(kf, 0), b1 = half(kf, 2);
      for (int64_t mt = 0; mt < mT; ++mt) {
        Value &s0 = s[mt * nTiles + 2 * np];
        Value &s1 = s[mt * nTiles + 2 * np + 1];
        s0 = mma(a[mt], b0, s0);
        s1 = mma(a[mt], b1, s1);
      }
    }
  }
  env.s = s;
}

SmallVector<Value> MmaLowering::logits(ArrayRef<Value> s, int64_t mt,
                                       Value tileStart, bool masked) {
  // Without score modifiers the scores stay raw here: the softmax scales
  // them inside the exponent's FMA (postScale()).
  bool mods = c.softCap || c.alibi;
  double scale = c.smScale;
  if (c.softCap)
    scale /= *c.softCap;
  Value scaleV = e.f32(scale), log2e = e.f32(kLog2e);
  if (mods && c.kScale)
    scaleV = e.mul(scaleV, c.kScale);
  Value start32 = e.toI32(e.add(keyRow(tileStart), laneCol));
  Value kvLen32 = e.toI32(kvLen);
  SmallVector<Value> out;
  for (auto [n, frag] : llvm::enumerate(s)) {
    SmallVector<Value> xs;
    for (int64_t h = 0; h < 2; ++h) {
      const Row &row = rowInfo[2 * mt + h];
      for (int64_t i = 0; i < 2; ++i) {
        Value x = elem(frag, h, i);
        if (mods)
          x = e.mul(x, scaleV);
        Value t32 = e.add(start32, e.i32(int64_t(n) * 8 + i));
        if (c.softCap)
          x = e.mul(e.tanh(x), e.f32(*c.softCap));
        if (c.alibi) {
          Value dist = arith::SIToFPOp::create(b, loc, f32(),
                                               e.sub(t32, row.pos32));
          x = LLVM::FMAOp::create(b, loc, row.slope, dist, x);
        }
        if (mods)
          x = e.mul(x, log2e);
        if (masked) {
          Value vis = e.cmpi(Pred::slt, t32, kvLen32);
          if (c.causal)
            vis = e.andi(vis, e.cmpi(Pred::sle, t32, row.pos32));
          if (c.window && *c.window < (int64_t(1) << 31))
            vis = e.andi(vis, e.cmpi(Pred::slt, e.sub(row.pos32, t32),
                                     e.i32(*c.window)));
          if (c.customMask) {
            Value bit = e.add(row.maskBit0, arith::IndexCastOp::create(
                                                b, loc, b.getIndexType(),
                                                t32));
            // Rows past the tile's queries read no mask byte.
            vis = e.ifThenElse(
                e.andi(row.valid, vis), b.getI1Type(),
                [&]() -> SmallVector<Value> {
                  return {mask.emitBit(e, maskBase, bit)};
                },
                [&]() -> SmallVector<Value> {
                  return {arith::ConstantIntOp::create(b, loc, 0, 1)};
                })[0];
          }
          x = e.select(vis, x, e.negInf());
        }
        xs.push_back(x);
      }
    }
    out.push_back(fragment(fragC(), xs));
  }
  return out;
}

void MmaLowering::applyMask(TileMaskOp op, Env &env) {
  int64_t mT = c.mTiles, nTiles = c.nTiles();
  auto allLogits = [&](bool masked) {
    SmallVector<Value> out;
    for (int64_t mt = 0; mt < mT; ++mt)
      out.append(logits(ArrayRef<Value>(env.s).slice(mt * nTiles, nTiles),
                        mt, op.getT0(), masked));
    return out;
  };
  if (!op.getMaskedIf()) {
    env.s = allLogits(true);
    return;
  }
  SmallVector<Type> types(mT * nTiles, fragC());
  env.s = e.ifThenElse(
      op.getMaskedIf(), types, [&]() { return allLogits(true); },
      [&]() { return allLogits(false); });
}

void MmaLowering::softmaxUpdate(Env &env) {
  int64_t mT = c.mTiles, nTiles = c.nTiles(), halves = c.rowHalves();
  ArrayRef<Value> state = env.state;
  SmallVector<Value> next(state);
  const SmallVector<Value> &x = env.s;
  // Online softmax per row half (base 2). state[r] is the reference maximum
  // the row's exponents are taken against; with lazy rescaling it moves
  // only when the tile's maximum exceeds it by more than the threshold, so
  // p = 2^(x - m) <= 2^threshold and most tiles leave acc alone.
  Value post = e.f32(postScale());
  if (c.kScale && !(c.softCap || c.alibi))
    post = e.mul(post, c.kScale);
  const bool lazy = c.rescaleThreshold > 0;
  SmallVector<Value> mUse(halves), alpha(halves), rowSum(halves, e.f32(0));
  Value anyMoved;
  // Narrow rows: row half 1 holds no valid row and keeps its initial state.
  auto live = [&](int64_t r) { return !c.narrow || r % 2 == 0; };
  for (int64_t mt = 0; mt < mT; ++mt)
    for (int64_t h = 0; h < 2; ++h) {
      int64_t r = 2 * mt + h;
      if (!live(r)) {
        mUse[r] = e.f32(0);
        alpha[r] = e.f32(1);
        continue;
      }
      Value mx = e.negInf();
      for (int64_t n = 0; n < nTiles; ++n)
        for (int64_t i = 0; i < 2; ++i)
          mx = e.maxf(mx, elem(x[mt * nTiles + n], h, i));
      mx = quadReduce(mx, /*isMax=*/true);
      // Logits are x * post; post > 0 keeps the maximum's place.
      Value mNew = e.maxf(state[r], e.mul(mx, post));
      if (lazy) {
        // Moves when mNew > m + T (from -inf: on the first finite score).
        Value moved = e.cmpf(FPred::OGT, mNew,
                             e.add(state[r], e.f32(c.rescaleThreshold)));
        mNew = e.select(moved, mNew, state[r]);
        anyMoved = anyMoved ? arith::OrIOp::create(b, loc, anyMoved, moved)
                                  .getResult()
                            : moved;
      }
      mUse[r] = e.select(e.cmpf(FPred::OEQ, mNew, e.negInf()), e.f32(0), mNew);
      alpha[r] = e.ex2(e.sub(state[r], mUse[r]));
      next[r] = mNew;
    }
  SmallVector<Value> negM;
  for (Value m : mUse)
    negM.push_back(arith::NegFOp::create(b, loc, m));
  // p[mt * nTiles + n][h * 2 + i] = 2^(x * post - m), one FMA per score.
  SmallVector<Value> p;
  for (int64_t mt = 0; mt < mT; ++mt)
    for (int64_t n = 0; n < nTiles; ++n) {
      SmallVector<Value> v;
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < 2; ++i) {
          int64_t r = 2 * mt + h;
          if (!live(r)) {
            v.push_back(e.f32(0));
            continue;
          }
          Value pi = e.ex2(LLVM::FMAOp::create(
              b, loc, elem(x[mt * nTiles + n], h, i), post, negM[r]));
          rowSum[r] = e.add(rowSum[r], pi);
          v.push_back(pi);
        }
      p.push_back(fragment(fragC(), v));
    }
  for (int64_t r = 0; r < halves; ++r)
    if (live(r))
      next[halves + r] = LLVM::FMAOp::create(b, loc, state[halves + r],
                                             alpha[r], rowSum[r]);
  // The factor of acc element (f, h, i): row-wise, or for O^T (narrow) per
  // column: the alpha of the column's row (columnValue). Lazily, the thread
  // rescales only when one of its rows (columns) moved its maximum (alpha
  // is exactly 1 otherwise: ex2(0)).
  SmallVector<Value> colAlpha;
  if (c.narrow) {
    for (int64_t i = 0; i < 2; ++i) {
      colAlpha.push_back(columnValue(alpha[0], i));
      if (lazy) {
        Value moved = e.cmpf(FPred::UNE, colAlpha[i], e.f32(1));
        anyMoved = i ? arith::OrIOp::create(b, loc, anyMoved, moved).getResult()
                     : moved;
      }
    }
  }
  auto factor = [&](int64_t f, int64_t h, int64_t i) {
    return c.narrow ? colAlpha[i] : alpha[2 * (f / c.dTiles()) + h];
  };
  auto rescaled = [&]() {
    SmallVector<Value> out;
    for (int64_t f = 0; f < c.accFrags(); ++f) {
      Value acc = state[accIndex(0, f)];
      SmallVector<Value> v;
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < 2; ++i)
          v.push_back(e.mul(elem(acc, h, i), factor(f, h, i)));
      out.push_back(fragment(fragC(), v));
    }
    return out;
  };
  SmallVector<Value> accs;
  if (lazy) {
    SmallVector<Value> old;
    for (int64_t f = 0; f < c.accFrags(); ++f)
      old.push_back(state[accIndex(0, f)]);
    SmallVector<Type> types(old.size(), fragC());
    accs = e.ifThenElse(anyMoved, types, rescaled, [&]() { return old; });
  } else {
    accs = rescaled();
  }
  for (int64_t f = 0; f < c.accFrags(); ++f)
    next[accIndex(0, f)] = accs[f];
  env.state = next;
  env.s = p;
}

/// P as A fragments: k step kk covers n tiles 2kk and 2kk + 1; fragment
/// order (rows lo, k lo), (rows hi, k lo), (lo, hi), (hi, hi) (the A
/// fragment of mma.sync m16n8k16 and, per warp, of wgmma m64nNk16).
static SmallVector<Value> pFragments(MmaFragments &f, KernelEmitter &e,
                                     const MmaConfig &c, ArrayRef<Value> s) {
  int64_t nTiles = c.nTiles();
  SmallVector<Value> pa; // pa[mt * (nTiles / 2) + kk]
  for (int64_t mt = 0; mt < c.mTiles; ++mt)
    for (int64_t kk = 0; kk < nTiles / 2; ++kk) {
      SmallVector<Value> vals;
      for (int64_t part = 0; part < 2; ++part)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t i = 0; i < 2; ++i)
            vals.push_back(e.fromF32(
                f.elem(s[mt * nTiles + 2 * kk + part], h, i), c.elem));
      pa.push_back(f.fragment(f.fragA(), vals));
    }
  return pa;
}

void MmaLowering::pv(TilePVOp op, Env &env) {
  if (c.wgmma)
    return pvWgmma(op, env);
  if (c.narrow)
    return pvNarrow(op, env);
  int64_t mT = c.mTiles, nTiles = c.nTiles();
  SharedTile v = *sharedTile(kPass, op, op.getV());
  SmallVector<Value> pa = pFragments(*this, e, c, env.s);
  // O += P V, k steps outer (independent accumulators within a step); each
  // V fragment serves the mT row blocks.
  Value l8 = e.remui(lane, e.idx(8)), l16 = e.divui(lane, e.idx(16));
  Value lMid = e.remui(e.divui(lane, e.idx(8)), e.idx(2));
  SmallVector<Value> &next = env.state;
  if (c.fp8) {
    // Chunk cc of V gives the B fragments of n tiles 2 cc (column g: dim
    // 16 cc + 2g) and 2 cc + 1 (dim 16 cc + 2g + 1) (vChunks8).
    SharedTile vw = words(v);
    for (int64_t kk = 0; kk < nTiles / 2; ++kk) {
      for (int64_t dp2 = 0; dp2 < c.headDim / 32; ++dp2) {
        std::array<SmallVector<Value>, 2> chunks = vChunks8(vw, kk, dp2);
        for (int64_t sub = 0; sub < 2; ++sub) {
          int64_t cc = 2 * dp2 + sub;
          for (int64_t p = 0; p < 2; ++p) {
            Value bf = fragmentOfRows(
                fragB(), {chunks[sub][p], chunks[sub][2 + p]});
            for (int64_t mt = 0; mt < mT; ++mt) {
              Value &o = next[accIndex(mt, 2 * cc + p)];
              o = mma(pa[mt * (nTiles / 2) + kk], bf, o);
            }
          }
        }
      }
    }
    return;
  }
  for (int64_t kk = 0; kk < nTiles / 2; ++kk) {
    Value vrow =
        keyRow(e.add(e.idx(kk * 16), e.add(e.mul(lMid, e.idx(8)), l8)));
    for (int64_t dp = 0; dp < c.dTiles() / 2; ++dp) {
      Value vcol = ldmatrixCol(dp, l16);
      Value vf = ldmatrix(v, vrow, vcol, dp, l16, /*transpose=*/true);
      Value b0 = half(vf, 0), b1 = half(vf, 2);
      for (int64_t mt = 0; mt < mT; ++mt) {
        Value a = pa[mt * (nTiles / 2) + kk];
        Value &o0 = next[accIndex(mt, 2 * dp)];
        Value &o1 = next[accIndex(mt, 2 * dp + 1)];
        o0 = mma(a, b0, o0);
        o1 = mma(a, b1, o1);
      }
    }
  }
}

void MmaLowering::pvNarrow(TilePVOp op, Env &env) {
  SharedTile v = *sharedTile(kPass, op, op.getV());
  // O^T += V^T P^T per k step of 16 keys: B = P^T, whose fragment is row
  // half 0 of the C fragments of S's n tiles 2 kk and 2 kk + 1 (rows
  // lane / 4, keys 2 (lane % 4) + {0, 1} of each); A = V^T for head dims
  // [16 dp, 16 dp + 16): ldmatrix.x4.trans of the 8x8 blocks (keys lo,
  // dims lo), (lo, hi), (hi, lo), (hi, hi), lanes 8 j .. 8 j + 7 giving
  // block j's rows.
  Value l8 = e.remui(lane, e.idx(8)), l16 = e.divui(lane, e.idx(16));
  Value lMid = e.remui(e.divui(lane, e.idx(8)), e.idx(2));
  SmallVector<Value> &next = env.state;
  for (int64_t kk = 0; kk < c.nTiles() / 2; ++kk) {
    SmallVector<Value> vals;
    for (int64_t part = 0; part < 2; ++part)
      for (int64_t i = 0; i < 2; ++i)
        vals.push_back(e.fromF32(elem(env.s[2 * kk + part], 0, i), c.elem));
    Value pT = fragment(fragB(), vals);
    if (c.fp8) {
      // Chunk cc of V is the A fragment of O^T fragment cc, rows g / g + 8
      // = dims 16 cc + 2g / + 1 (vChunks8).
      SharedTile vw = words(v);
      for (int64_t dp2 = 0; dp2 < c.headDim / 32; ++dp2) {
        std::array<SmallVector<Value>, 2> chunks = vChunks8(vw, kk, dp2);
        for (int64_t sub = 0; sub < 2; ++sub) {
          Value &o = next[accIndex(0, 2 * dp2 + sub)];
          o = mma(fragmentOfRows(fragA(), chunks[sub]), pT, o);
        }
      }
      continue;
    }
    Value vrow =
        keyRow(e.add(e.idx(kk * 16), e.add(e.mul(l16, e.idx(8)), l8)));
    for (int64_t dp = 0; dp < c.accFrags(); ++dp) {
      Value vcol = ldmatrixCol(dp, lMid);
      Value vT = ldmatrix(v, vrow, vcol, dp, lMid, /*transpose=*/true);
      Value &o = next[accIndex(0, dp)];
      o = mma(vT, pT, o);
    }
  }
}

void MmaLowering::qkWgmma(TileQKOp op, Env &env) {
  // S = Q K^T for the warpgroup's 64 rows: A = its Q rows, B = the K tile
  // (N = the tile's keys), both K-major, k steps of 16 columns: step kk is
  // in 64-column block kk / 4 at byte (kk % 4) * 32 of each 128-byte line.
  SharedTile k = *sharedTile(kPass, op, op.getK());
  wg.fence();
  SmallVector<Value> acc;
  for (int64_t kk = 0; kk < c.kSteps(); ++kk) {
    int64_t inLine = (kk % 4) * 32;
    Value a = wg.advance(descQ, (kk / 4) * qRows * 128 + inLine);
    Value bd = wg.advance(descK, k.row0 * c.headDim * 2 +
                                  (kk / 4) * k.rows * 128 + inLine);
    acc = wg.mmaAsync(c.keys, acc, a, {}, bd, /*transB=*/false);
  }
  wg.commitAndWait(0);
  acc = wg.fenceOperands(acc);
  // Accumulator registers 4 j .. 4 j + 3: the C fragment of n8 tile j.
  env.s.clear();
  for (int64_t j = 0; j < c.nTiles(); ++j)
    env.s.push_back(fragment(fragC(), ArrayRef<Value>(acc).slice(4 * j, 4)));
}

void MmaLowering::pvWgmma(TilePVOp op, Env &env) {
  // O += P V: A = P from registers (k step kk: keys [16 kk, 16 kk + 16)),
  // B = rows 16 kk .. of the V tile, MN-major (transposed), N = D.
  SharedTile v = *sharedTile(kPass, op, op.getV());
  SmallVector<Value> pa = pFragments(*this, e, c, env.s);
  SmallVector<Value> vals;
  for (int64_t dn = 0; dn < c.dTiles(); ++dn)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 2; ++i)
        vals.push_back(elem(env.state[accIndex(0, dn)], h, i));
  auto i32x1 = VectorType::get({1}, b.getI32Type());
  for (Value frag : pa)
    for (int64_t r = 0; r < 4; ++r) {
      Value pair = vector::ExtractOp::create(b, loc, frag, r);
      vals.push_back(vector::ExtractOp::create(
          b, loc, vector::BitCastOp::create(b, loc, i32x1, pair), 0));
    }
  vals = wg.fenceOperands(vals);
  int64_t accRegs = c.headDim / 2;
  SmallVector<Value> acc(vals.begin(), vals.begin() + accRegs);
  ArrayRef<Value> aRegs = ArrayRef<Value>(vals).drop_front(accRegs);
  wg.fence();
  for (int64_t kk = 0; kk < c.keys / 16; ++kk)
    acc = wg.mmaAsync(c.headDim, acc, Value(), aRegs.slice(4 * kk, 4),
                      wg.advance(descV, v.row0 * c.headDim * 2 + kk * 16 * 128),
                     /*transB=*/true);
  wg.commitAndWait(0);
  acc = wg.fenceOperands(acc);
  for (int64_t dn = 0; dn < c.dTiles(); ++dn)
    env.state[accIndex(0, dn)] =
        fragment(fragC(), ArrayRef<Value>(acc).slice(4 * dn, 4));
}

void MmaLowering::store(TileStoreOp op, Env &env) {
  ArrayRef<Value> state = env.state;
  int64_t halves = c.rowHalves();
  SmallVector<Value> m(state.take_front(halves)), l;
  for (int64_t r = 0; r < halves; ++r)
    l.push_back(quadReduce(state[halves + r], /*isMax=*/false));
  SmallVector<Value> acc(state.drop_front(2 * halves));
  // o's element type: the data type, or f32 for partial states.
  Type oElem = cast<MemRefType>(op.getO().getType()).getElementType();
  if (c.narrow)
    return storeNarrow(op, m, l, acc, oElem);
  // Staged store: a warp of a row split (kv_warps = 1) owns its Q rows in
  // shared memory, which it no longer reads; its o rows go there first and
  // then out as 16-byte chunks, a warp writing whole rows (rather than 4
  // bytes per lane, half of every 32-byte sector). f16 / bf16 outputs of
  // the whole-row kernels (not the f32 partial states).
  if (c.kvWarps == 1 && !oElem.isF32() && !op.getRowStride() && qTile &&
      c.headDim % 8 == 0) {
    storeStaged(op, *qTile, m, l, acc, oElem);
    return;
  }
  auto finish = [&]() {
    computeRows(/*forStore=*/true, op.getRow0(), op.getRows(), op.getKvHead(),
                Value(), Value(), op.getRowStride());
    Value quad0 = e.cmpi(Pred::eq, e.remui(lane, e.idx(4)), e.idx(0));
    for (int64_t mt = 0; mt < c.mTiles; ++mt)
      for (int64_t h = 0; h < 2; ++h) {
        int64_t r = 2 * mt + h;
        const Row &row = rowInfo[r];
        auto [inv, lseV] = finalRow(m[r], l[r]);
        e.ifThen(row.valid, [&]() {
          int64_t bytes = oElem.getIntOrFloatBitWidth() / 8;
          for (int64_t cc = 0; c.fp8 && cc < c.headDim / 16; ++cc) {
            // Dims 16 cc + 4 (lane % 4) .. + 3 (see the file comment).
            Value v = outQuad(acc[mt * c.dTiles() + 2 * cc],
                              acc[mt * c.dTiles() + 2 * cc + 1], h, inv,
                              oElem);
            vector::StoreOp::create(
                b, loc, v, op.getO(),
                ValueRange{row.row, row.head,
                           e.add(e.idx(cc * 16), e.mul(laneCol, e.idx(2)))},
                /*nontemporal=*/false, llvm::MaybeAlign(4 * bytes));
          }
          for (int64_t dn = 0; !c.fp8 && dn < c.dTiles(); ++dn) {
            Value v = outPair(acc[mt * c.dTiles() + dn], h, inv, oElem);
            // Two elements at an even column: aligned to two elements.
            vector::StoreOp::create(
                b, loc, v, op.getO(),
                ValueRange{row.row, row.head, e.add(e.idx(dn * 8), laneCol)},
                /*nontemporal=*/false,
                llvm::MaybeAlign(2 * oElem.getIntOrFloatBitWidth() / 8));
          }
          e.ifThen(quad0, [&]() {
            e.store(lseV, op.getLse(), {row.row, row.head});
          });
        });
      }
  };
  if (c.kvWarps > 1)
    mergeKeyWarps(
        m, l, acc,
        [&](int64_t f, int64_t h, int64_t) {
          return 2 * (f / c.dTiles()) + h;
        },
        finish);
  else
    finish();
}

void MmaLowering::storeNarrow(TileStoreOp op, ArrayRef<Value> m,
                              ArrayRef<Value> l, ArrayRef<Value> accT,
                              Type oElem) {
  // Column i of a thread's O^T fragments is tile row q_i = 2 (lane % 4) +
  // i: four shuffles give the thread its columns' m / l (columnValue), the
  // key warps merge per column, and o[q_i, dims 16 dp + 8 h + lane / 4] is
  // written element by element (the 8 lanes of a row write 8 consecutive
  // dims: 16- or 32-byte runs).
  SmallVector<Value> mc, lc;
  for (int64_t i = 0; i < 2; ++i) {
    mc.push_back(columnValue(m[0], i));
    lc.push_back(columnValue(l[0], i));
  }
  SmallVector<Value> acc(accT);
  auto finish = [&]() {
    Value firstRow = e.cmpi(Pred::ult, lane, e.idx(4));
    Value dim0 = e.divui(lane, e.idx(4));
    for (int64_t i = 0; i < 2; ++i) {
      Value q = e.add(e.mul(e.remui(lane, e.idx(4)), e.idx(2)), e.idx(i));
      Row row = tileRow(q, op.getRow0(), op.getRows(), op.getKvHead(),
                        op.getRowStride());
      auto [inv, lseV] = finalRow(mc[i], lc[i]);
      e.ifThen(row.valid, [&]() {
        // fp8: rows g / g + 8 of fragment dp are dims 16 dp + 2g / + 1.
        Value dim2 = e.mul(dim0, e.idx(2));
        for (int64_t dp = 0; c.fp8 && dp < c.accFrags(); ++dp) {
          Value v = vector::FromElementsOp::create(
              b, loc, VectorType::get({2}, oElem),
              ValueRange{
                  e.fromF32(e.mul(elem(acc[dp], 0, i), inv), oElem),
                  e.fromF32(e.mul(elem(acc[dp], 1, i), inv), oElem)});
          vector::StoreOp::create(
              b, loc, v, op.getO(),
              ValueRange{row.row, row.head, e.add(dim2, e.idx(16 * dp))},
              /*nontemporal=*/false,
              llvm::MaybeAlign(2 * oElem.getIntOrFloatBitWidth() / 8));
        }
        for (int64_t dp = 0; !c.fp8 && dp < c.accFrags(); ++dp)
          for (int64_t h = 0; h < 2; ++h)
            e.store(e.fromF32(e.mul(elem(acc[dp], h, i), inv), oElem),
                    op.getO(),
                    {row.row, row.head, e.add(dim0, e.idx(16 * dp + 8 * h))});
        e.ifThen(firstRow, [&]() {
          e.store(lseV, op.getLse(), {row.row, row.head});
        });
      });
    }
  };
  mergeKeyWarps(
      mc, lc, acc, [](int64_t, int64_t, int64_t i) { return i; }, finish);
}

void MmaLowering::storeStaged(TileStoreOp op, const SharedTile &q,
                              ArrayRef<Value> m, ArrayRef<Value> l,
                              ArrayRef<Value> acc, Type oElem) {
  // Rows of the warp's block in the Q tile (recomputed from the thread id,
  // as computeRows does for stores, rather than kept live).
  Value t32 = e.toI32(tid);
  Value warpRow0 = e.toIndex(
      e.mul(arith::DivUIOp::create(b, loc, t32, e.i32(32)),
            e.i32(16 * c.mTiles)));
  Value lane0 = e.toIndex(arith::RemUIOp::create(b, loc, t32, e.i32(32)));
  Value quadRow = e.divui(lane0, e.idx(4));
  Value col2 = e.mul(e.remui(lane0, e.idx(4)), e.idx(2));
  Value quad0 = e.cmpi(Pred::eq, e.remui(lane0, e.idx(4)), e.idx(0));
  computeRows(/*forStore=*/true, op.getRow0(), op.getRows(), op.getKvHead(),
              Value(), Value());
  // Every lane's last read of the warp's Q rows (the loop's ldmatrix) before
  // any lane overwrites them: lanes need not run in lockstep. With wgmma the
  // rows were read by the warpgroup's instructions: a barrier of its 128
  // threads (named barrier 1 + warpgroup; 0 is the CTA's).
  if (c.wgmma)
    NVVM::BarrierOp::create(
        b, loc, TypeRange{},
        e.add(e.i32(1), arith::DivUIOp::create(b, loc, t32, e.i32(128))),
        e.i32(128), NVVM::BarrierReductionAttr(), Value());
  else
    NVVM::SyncWarpOp::create(b, loc, e.i32(-1));
  for (int64_t mt = 0; mt < c.mTiles; ++mt)
    for (int64_t h = 0; h < 2; ++h) {
      int64_t r = 2 * mt + h;
      auto [inv, lseV] = finalRow(m[r], l[r]);
      e.ifThen(e.andi(rowInfo[r].valid, quad0), [&]() {
        e.store(lseV, op.getLse(), {rowInfo[r].row, rowInfo[r].head});
      });
      Value srow = e.add(warpRow0, e.add(quadRow, e.idx(16 * mt + 8 * h)));
      for (int64_t cc = 0; c.fp8 && cc < c.headDim / 16; ++cc) {
        // Dims 16 cc + 4 (lane % 4) .. + 3 (see the file comment).
        Value v = outQuad(acc[mt * c.dTiles() + 2 * cc],
                          acc[mt * c.dTiles() + 2 * cc + 1], h, inv, oElem);
        auto [r, cc4] =
            at(q, srow, e.add(e.idx(cc * 16), e.mul(col2, e.idx(2))));
        vector::StoreOp::create(b, loc, v, q.base, ValueRange{r, cc4},
                                /*nontemporal=*/false, llvm::MaybeAlign(8));
      }
      for (int64_t dn = 0; !c.fp8 && dn < c.dTiles(); ++dn) {
        Value v = outPair(acc[mt * c.dTiles() + dn], h, inv, oElem);
        auto [r, cc] = at(q, srow, e.add(e.idx(dn * 8), col2));
        vector::StoreOp::create(b, loc, v, q.base, ValueRange{r, cc},
                                /*nontemporal=*/false, llvm::MaybeAlign(4));
      }
    }
  // The warp's lanes read each other's rows.
  NVVM::SyncWarpOp::create(b, loc, e.i32(-1));
  int64_t cpr = c.headDim / 8, rows = 16 * c.mTiles;
  VectorType chunk = VectorType::get({8}, oElem);
  for (int64_t i = 0; i < rows * cpr / 32; ++i) {
    Value id = e.add(lane0, e.idx(32 * i));
    Value rloc = e.divui(id, e.idx(cpr));
    Value col = e.mul(e.remui(id, e.idx(cpr)), e.idx(8));
    auto [r, cc] = at(q, e.add(warpRow0, rloc), col);
    Value v = vector::LoadOp::create(b, loc, chunk, q.base, ValueRange{r, cc},
                                     /*nontemporal=*/false,
                                     llvm::MaybeAlign(16));
    Row row = tileRow(e.add(warpRow0, rloc), op.getRow0(), op.getRows(),
                      op.getKvHead(), Value());
    e.ifThen(row.valid, [&]() {
      vector::StoreOp::create(b, loc, v, op.getO(),
                              ValueRange{row.row, row.head, col},
                              /*nontemporal=*/false, llvm::MaybeAlign(16));
    });
  }
}

void MmaLowering::mergeKeyWarps(
    SmallVectorImpl<Value> &m, SmallVectorImpl<Value> &l,
    SmallVectorImpl<Value> &acc,
    function_ref<int64_t(int64_t, int64_t, int64_t)> slotOf,
    function_ref<void()> finish) {
  MLIRContext *ctx = b.getContext();
  int64_t halves = m.size(), frags = acc.size(), others = c.kvWarps - 1;
  // Scratch per (row block, key warp k >= 1): (m, l) of each row half, then
  // the two rows of each acc fragment, lane-interleaved so that a warp's
  // accesses are contiguous: [halves][32] x 2 floats, [frags][2][32] x 2
  // floats. (Rows of 2, not 4-float vectors: the lowering has no n-D to
  // 1-D shape_cast.)
  int64_t slotFloats = 32 * (2 * halves + 4 * frags);
  int64_t bytes = c.rowWarps() * others * slotFloats * 4;
  if (FailureOr<KernelABI> abi = decodeKernelABI(func);
      succeeded(abi) && abi->smem < bytes)
    setSharedMemory(func, bytes);
  // The scratch reuses the tiles' shared memory: the copies still in flight
  // (the pipeline's zero-filled tile past the last one) land and every warp
  // is done reading K / V first.
  auto token = nvgpu::DeviceAsyncTokenType::get(ctx);
  Value none = nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, token,
                                                       ValueRange{});
  nvgpu::DeviceAsyncWaitOp::create(b, loc, none, b.getI32IntegerAttr(0));
  gpu::BarrierOp::create(b, loc);
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value raw = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), wg));
  Value scratch = memref::ViewOp::create(
      b, loc,
      MemRefType::get({c.rowWarps() * others * slotFloats}, f32(),
                      MemRefLayoutAttrInterface(), wg),
      raw, e.idx(0), ValueRange{});
  Value keyWarp = e.remui(warp, e.idx(c.kvWarps));
  auto slot = [&](Value k) {
    return e.mul(e.add(e.mul(warpRow, e.idx(others)), e.sub(k, e.idx(1))),
                 e.idx(slotFloats));
  };
  auto mlAt = [&](Value base, int64_t r) {
    return e.add(base, e.add(e.idx(64 * r), e.mul(lane, e.idx(2))));
  };
  auto accAt = [&](Value base, int64_t f, int64_t h) {
    return e.add(base, e.add(e.idx(64 * (halves + 2 * f + h)),
                             e.mul(lane, e.idx(2))));
  };
  VectorType v2 = VectorType::get({2}, f32());
  Value first = e.cmpi(Pred::eq, keyWarp, e.idx(0));
  e.ifThen(e.cmpi(Pred::ne, keyWarp, e.idx(0)), [&]() {
    Value base = slot(keyWarp);
    for (int64_t r = 0; r < halves; ++r)
      vector::StoreOp::create(
          b, loc, vector::FromElementsOp::create(b, loc, v2,
                                                 ValueRange{m[r], l[r]}),
          scratch, ValueRange{mlAt(base, r)}, /*nontemporal=*/false,
          llvm::MaybeAlign(8));
    for (int64_t f = 0; f < frags; ++f)
      for (int64_t h = 0; h < 2; ++h)
        vector::StoreOp::create(
            b, loc, vector::ExtractOp::create(b, loc, acc[f], h), scratch,
            ValueRange{accAt(base, f, h)}, /*nontemporal=*/false,
            llvm::MaybeAlign(8));
  });
  gpu::BarrierOp::create(b, loc);
  e.ifThen(first, [&]() {
    // The merge operator over the row block's warps (base 2): M = max m_k,
    // L = sum l_k 2^(m_k - M), acc = sum acc_k 2^(m_k - M).
    SmallVector<SmallVector<Value>> mk(halves), lk(halves);
    SmallVector<SmallVector<Value>> acck(frags);
    for (int64_t r = 0; r < halves; ++r) {
      mk[r].push_back(m[r]);
      lk[r].push_back(l[r]);
    }
    for (int64_t f = 0; f < frags; ++f)
      acck[f].push_back(acc[f]);
    for (int64_t k = 1; k <= others; ++k) {
      Value base = slot(e.idx(k));
      for (int64_t r = 0; r < halves; ++r) {
        Value v = vector::LoadOp::create(b, loc, v2, scratch,
                                         ValueRange{mlAt(base, r)});
        mk[r].push_back(vector::ExtractOp::create(b, loc, v, 0));
        lk[r].push_back(vector::ExtractOp::create(b, loc, v, 1));
      }
      for (int64_t f = 0; f < frags; ++f) {
        SmallVector<Value> xs;
        for (int64_t h = 0; h < 2; ++h) {
          Value v = vector::LoadOp::create(b, loc, v2, scratch,
                                           ValueRange{accAt(base, f, h)});
          for (int64_t i = 0; i < 2; ++i)
            xs.push_back(vector::ExtractOp::create(b, loc, v, i));
        }
        acck[f].push_back(fragment(fragC(), xs));
      }
    }
    SmallVector<SmallVector<Value>> w(halves);
    for (int64_t r = 0; r < halves; ++r) {
      Value mx = mk[r][0];
      for (Value x : ArrayRef(mk[r]).drop_front())
        mx = e.maxf(mx, x);
      Value safe =
          e.select(e.cmpf(FPred::OEQ, mx, e.negInf()), e.f32(0), mx);
      Value sum = e.f32(0);
      for (int64_t k = 0; k <= others; ++k) {
        w[r].push_back(e.ex2(e.sub(mk[r][k], safe)));
        sum = LLVM::FMAOp::create(b, loc, lk[r][k], w[r][k], sum);
      }
      m[r] = mx;
      l[r] = sum;
    }
    for (int64_t f = 0; f < frags; ++f) {
      SmallVector<Value> xs;
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < 2; ++i) {
          Value x = e.f32(0);
          for (int64_t k = 0; k <= others; ++k)
            x = LLVM::FMAOp::create(b, loc, elem(acck[f][k], h, i),
                                    w[slotOf(f, h, i)][k], x);
          xs.push_back(x);
        }
      acc[f] = fragment(fragC(), xs);
    }
    finish();
  });
}

LogicalResult MmaLowering::run(gpu::GPUFuncOp kernel) {
  func = kernel;
  swizzle = func->hasAttr(kSmemSwizzleAttr);
  b.setInsertionPointToStart(&func.getBody().front());
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = e.remui(tid, e.idx(32));
  warp = e.divui(tid, e.idx(32));
  warpRow = warp;
  if (c.kvWarps > 1) {
    warpRow = e.divui(warp, e.idx(c.kvWarps));
    keyOff = e.mul(e.remui(warp, e.idx(c.kvWarps)), e.idx(c.warpKeys()));
  }
  laneCol = e.mul(e.remui(lane, e.idx(4)), e.idx(2));
  if (!ops.masks.empty())
    maskOp = ops.masks.front();
  if (maskOp)
    mask = PackedMask{maskOp.getCustomMask(), Value()};
  Env env;
  if (failed(lowerBlock(func.getBody().front(), env)))
    return failure();
  // The buffers now unused: the state, the scores and the shared views.
  eraseDeadTileBuffers(func, ops);
  return success();
}

/// Reads the fragment configuration off `func`'s tile ops (an error at the
/// op that does not fit).
LogicalResult makeConfig(gpu::GPUFuncOp func, MmaConfig &c,
                         const KernelTileOps &ops) {
  ArrayRef<TileQKOp> qks = ops.qks;
  ArrayRef<TileMaskOp> masks = ops.masks;
  TileQKOp qk = qks[0];
  Value scores = ops.scores;
  FailureOr<SharedTile> q = sharedTile(kPass, qk, qk.getQ());
  if (failed(q) || failed(sharedTile(kPass, qk, qk.getK())))
    return failure();
  auto qt = cast<MemRefType>(qk.getQ().getType());
  auto kt = cast<MemRefType>(qk.getK().getType());
  c.elem = qt.getElementType();
  c.headDim = qt.getDimSize(1);
  c.keys = kt.getDimSize(0);
  int64_t rows = qt.getDimSize(0);
  FailureOr<KernelABI> abi = decodeKernelABI(func);
  if (failed(abi))
    return func.emitOpError()
           << "pa-tile-to-mma needs the kernel's pa.kernel ABI (its block "
              "size)";
  c.warps = abi->block[0] / 32;
  c.kvWarps = abi->kvWarps;
  c.mTiles = c.warps > 0 ? rows / (16 * c.rowWarps()) : 0;
  if (c.elem.isF32() || c.headDim % 16 != 0 ||
      c.keys % (16 * c.kvWarps) != 0 || (c.mTiles != 1 && c.mTiles != 2) ||
      rows != 16 * c.rowWarps() * c.mTiles)
    return qk.emitOpError()
           << "pa-tile-to-mma needs f16 / bf16 tiles, a head dim that is a "
              "multiple of 16, 16 keys or a multiple per key-splitting warp ("
           << c.kvWarps << ") and 16 or 32 query-tile rows per row block of "
              "the "
           << abi->block[0] << " threads; got Q " << qt << ", K " << kt;
  c.wgmma = func->hasAttr(kWgmmaAttr);
  if (c.wgmma) {
    // Every tile in the one shared buffer, unpadded ([..][D] rows), each
    // starting on a 1024-byte boundary (wgmmaIndex, WgmmaOps::descriptor).
    SmallVector<Value> all;
    for (TileQKOp op : qks)
      all.append({op.getQ(), op.getK()});
    func.walk([&](TilePVOp op) { all.push_back(op.getV()); });
    Value base = q->base;
    bool sameBase = llvm::all_of(all, [&](Value t) {
      FailureOr<SharedTile> st = sharedTile(kPass, qk, t);
      return succeeded(st) && st->base == base && st->col0 == 0 &&
             (st->row0 * c.headDim * 2) % 1024 == 0;
    });
    if (c.mTiles != 1 || c.kvWarps != 1 || c.warps % 4 != 0 ||
        c.headDim % 64 != 0 || c.keys % 16 != 0 || c.keys > 256 ||
        cast<MemRefType>(base.getType()).getDimSize(1) != c.headDim ||
        !sameBase)
      return qk.emitOpError()
             << "pa-tile-to-mma: a " << kWgmmaAttr
             << " kernel needs warpgroups of 4 warps of 16 rows, no key "
                "split, a head dim that is a multiple of 64, at most 256 "
                "keys a tile (a multiple of 16) and every tile in one "
                "unpadded shared buffer on a 1024-byte boundary; got Q "
             << qt << ", K " << kt << ", " << c.warps << " warps";
  }
  if (failed(ops.checkUniformQKs(kPass)))
    return failure();
  // fp8 K / V (pa-promote-tiles' fp8-widen=registers): both, mma.sync,
  // pairs of k steps, views of a memref.view of the shared memory.
  Type kElem = kt.getElementType();
  if (isFP8CacheType(kElem))
    c.fp8 = kElem;
  bool kvOk = kElem == c.elem || c.fp8;
  func.walk([&](TilePVOp op) {
    kvOk &= cast<MemRefType>(op.getV().getType()).getElementType() == kElem;
    if (c.fp8) {
      FailureOr<SharedTile> v = sharedTile(kPass, op, op.getV());
      kvOk &= succeeded(v) && v->base.getDefiningOp<memref::ViewOp>();
    }
  });
  if (c.fp8)
    kvOk &= sharedTile(kPass, qk, qk.getK())
                ->base.getDefiningOp<memref::ViewOp>() != nullptr;
  if (!kvOk || (c.fp8 && (c.wgmma || c.headDim % 32 != 0)))
    return qk.emitOpError()
           << "pa-tile-to-mma needs K and V of the queries' type, or both "
              "of one fp8 type in views of a memref.view of shared memory "
              "with mma.sync and a head dim that is a multiple of 32; got Q "
           << qt << ", K " << kt;
  if (auto sc = qk.getScale())
    c.smScale = sc->convertToDouble();
  c.kScale = qk.getKScale();
  TileStoreOp st = ops.store;
  c.vScale = st.getVScale();
  c.group = st.getGroup();
  c.lseBase2 = st.getLseBase2();
  // Narrow rows: the store's rows (queries) a constant whose rows x group
  // tile rows fit row half 0 of the one m block (tileRowPlace: tile row r
  // is valid iff r / group < rows), kept in place (no row stride).
  if (c.narrow) {
    std::optional<int64_t> rowsC = getConstantIntValue(st.getRows());
    c.narrow = !c.wgmma && c.mTiles == 1 && c.kvWarps > 1 &&
               !st.getRowStride() && rowsC && *rowsC * c.group <= 8;
  }
  return readMaskOptions(kPass, masks, c.group, scores, c);
}

struct PATileToMma final : pa::impl::PATileToMmaBase<PATileToMma> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<gpu::GPUFuncOp> funcs;
    getOperation().walk([&](gpu::GPUFuncOp func) {
      // CUDA-core kernels are pa-tile-to-simt's.
      if (holdsTileOps(func) && !func->hasAttr(kSimtAttr))
        funcs.push_back(func);
    });
    if (!(rescaleThreshold >= 0 && rescaleThreshold <= 15)) {
      getOperation().emitError()
          << "pa-tile-to-mma: rescale-threshold must lie in [0, 15] (p = "
             "2^(x - m) must stay finite in f16), got "
          << rescaleThreshold;
      return signalPassFailure();
    }
    for (gpu::GPUFuncOp func : funcs) {
      MmaConfig c;
      c.rescaleThreshold = rescaleThreshold;
      c.narrow = narrowPv;
      FailureOr<KernelTileOps> ops = KernelTileOps::collect(func, kPass);
      if (failed(ops) || failed(makeConfig(func, c, *ops)))
        return signalPassFailure();
      OpBuilder b(func);
      KernelEmitter e{{b, func.getLoc()}};
      if (failed(MmaLowering(e, c, *ops).run(func)))
        return signalPassFailure();
    }
  }
};

} // namespace
