//===- PrefillToGPU.cpp - pa.prefill to a tensor-core GPU kernel ----------===//
//
// The prefill / append kernel (FlashAttention-2 shape, mma.sync m16n8k16,
// f16 or bf16 in, f32 accumulate):
//
//   CTA (query tile x, KV head hk = y, request b = z) of W warps, each warp
//     M = 16 or 32 rows (one or two m16 blocks sharing every K/V fragment);
//     tile row r (BM = W * M rows) = query q0 + r / g of query head
//     hk * g + r % g (the GQA group packed into the rows), so each K/V tile
//     is read once for the whole group
//   dynamic shared memory, rows padded by 16 bytes (ldmatrix's 8 rows of a
//   column block fall into distinct banks): Q [BM][D+8],
//   K [2][BN][D+8], V [2][BN][D+8] (two stages, two tiles per loop
//   iteration so that the stage of every access is a constant)
//   Q -> shared (cp.async) -> A fragments (ldmatrix.x4), held in registers
//   when they fit (M = 16, D <= 128), else reloaded each step
//   K/V tile 0 -> stage 0 (cp.async through the page table, 16 bytes each,
//   zero-filled past the CTA's keys)
//   for KV tile j: issue tile j+1 into the other stage (its pages looked
//   up during step j-1), look up the pages of tile j+2, wait for tile j
//     S = Q K^T                  ldmatrix.x4 of K, mma.sync
//     scale, soft-cap, ALiBi, and on the tiles that need it the masks
//     (key bound, causal, window, custom bits), in base 2
//     online softmax per row     max over the 4 lanes of a quad (shuffles)
//     P -> f16/bf16 A fragments in registers (the C layout of two n8 tiles
//     is the A layout of one k16 step)
//     O += P V                   ldmatrix.x4.trans of V, mma.sync
//   o = acc / l, lse = m + log2(l) (natural: * ln 2); row sums reduced over
//   the quad once at the end.
//
// The key range of a tile: [kvLo, kvHi) with kvHi = the last query's
// position + 1 under `causal` and kvLo = the first query's window start
// under `window` (whole tiles outside are never loaded); with explicit
// positions every key is visited and the masks decide.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/PagedAttention.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;
using FPred = arith::CmpFPredicate;

namespace {

/// f16 / bf16 elements per 16-byte copy.
constexpr int64_t kChunk = 8;

/// Static facts the kernel specializes on.
struct PrefillConfig {
  Type elem;
  int64_t headDim = 0, group = 0, numKVHeads = 0, pageSize = 0;
  /// Warps, m16 row blocks per warp (16 or 32 query-tile rows a warp),
  /// keys per KV tile and the padded shared-memory row (elements).
  int64_t warps = 4, mTiles = 1, keys = 0, stride = 0;
  bool causal = false, positions = false, customMask = false, alibi = false;
  double smScale = 1.0;
  std::optional<double> softCap;
  std::optional<int64_t> window;
  bool lseBase2 = false;

  int64_t threads() const { return warps * 32; }
  int64_t tileRows() const { return warps * 16 * mTiles; }
  /// Row halves (8 rows of a C fragment) a thread holds.
  int64_t rowHalves() const { return 2 * mTiles; }
  int64_t dTiles() const { return headDim / 8; }
  /// State layout: m[rowHalves], l[rowHalves], acc[mTiles][dTiles], pages.
  int64_t accIndex(int64_t mt, int64_t dn) const {
    return 2 * rowHalves() + mt * dTiles() + dn;
  }
  int64_t accEnd() const { return accIndex(mTiles, 0); }
  int64_t queriesPerTile() const { return tileRows() / group; }
  int64_t chunksPerRow() const { return headDim / kChunk; }
  /// Rows of the shared-memory view: Q, then K and V of two stages.
  int64_t smemRows() const { return tileRows() + 4 * keys; }
  int64_t smemBytes() const { return smemRows() * stride * 2; }
};

LogicalResult makePrefillConfig(PrefillOp op, const PrefillShape &shape,
                                PrefillConfig &c) {
  for (Value v : op->getOperands())
    if (!isIdentityMemRef(v.getType()))
      return op.emitOpError()
             << "convert-pa-to-gpu expects identity-layout memrefs";
  auto qt = cast<MemRefType>(op.getQ().getType());
  if (qt.isDynamicDim(1) || qt.isDynamicDim(2))
    return op.emitOpError()
           << "convert-pa-to-gpu needs static query heads and head dim";
  PagedKVAttr cache = op.getCache();
  c.elem = qt.getElementType();
  if (!c.elem.isF16() && !c.elem.isBF16())
    return op.emitOpError() << "pa.prefill on the GPU runs on tensor cores "
                               "and needs f16 or bf16 data, got "
                            << c.elem;
  c.headDim = cache.getHeadDim();
  if (c.headDim % 16 != 0 || c.headDim > 256)
    return op.emitOpError() << "pa.prefill on the GPU needs a head dim that is "
                               "a multiple of 16 and at most 256, got "
                            << c.headDim;
  c.numKVHeads = cache.getNumKVHeads();
  c.pageSize = cache.getPageSize();
  c.group = qt.getDimSize(1) / c.numKVHeads;
  // Up to D = 128: 8 warps of 32 rows (two m16 blocks sharing each K/V
  // fragment) over 32-key tiles (H200, 2026-11-23, causal 4 x 8192, GQA 4:
  // 307 TFLOP/s, vs 281 for 8 x 16 rows / 64 keys and 249 for 4 x 16 / 64;
  // docs/PERFORMANCE.md). Above D = 128 the accumulators of 16 rows already
  // fill the registers: 4 warps of 16 rows, 32 keys.
  c.warps = shape.warps > 0 ? shape.warps : (c.headDim <= 128 ? 8 : 4);
  c.keys = shape.tileKV > 0 ? shape.tileKV : 32;
  c.mTiles = shape.warpRows > 0 ? shape.warpRows / 16
                                : (c.headDim <= 128 ? 2 : 1);
  if ((c.warps != 4 && c.warps != 8) || c.keys % 16 != 0 || c.keys > 128 ||
      (shape.warpRows != 0 && shape.warpRows != 16 && shape.warpRows != 32))
    return op.emitOpError() << "prefill-warps must be 4 or 8, "
                               "prefill-tile-kv a multiple of 16 up to 128 "
                               "and prefill-warp-rows 16 or 32";
  if (c.group > c.tileRows())
    return op.emitOpError() << "pa.prefill on the GPU packs a GQA group into "
                               "the "
                            << c.tileRows() << " rows of a query tile; group "
                            << c.group << " is larger";
  c.stride = c.headDim + kChunk;
  c.causal = op.getCausal();
  c.positions = bool(op.getQPositions());
  c.customMask = bool(op.getCustomMask());
  c.alibi = bool(op.getAlibiSlopes());
  AttentionOptions opts =
      cast<AttentionOpInterface>(op.getOperation()).getAttentionOptions();
  c.smScale = opts.smScale ? *opts.smScale : 1.0 / std::sqrt(double(c.headDim));
  c.softCap = opts.softCap;
  c.window = opts.window;
  c.lseBase2 = opts.lseBase2;
  return success();
}

/// Emits the body of the prefill kernel.
class PrefillKernel {
public:
  PrefillKernel(KernelEmitter &e, const PrefillConfig &c, PrefillOp op,
                IRMapping &m)
      : e(e), b(e.b), loc(e.loc), c(c) {
    q = m.lookup(op.getQ());
    qoIndptr = m.lookup(op.getQoIndptr());
    cache.attr = op.getCache();
    for (Value v : op.getKvCache())
      cache.tensors.push_back(m.lookup(v));
    PageTable pt = pageTableOf(cast<PagedOpInterface>(op.getOperation()),
                               /*checked=*/false);
    pages = PageTable{m.lookup(pt.indptr), m.lookup(pt.indices),
                      m.lookup(pt.last), pt.pageSize, /*checked=*/false};
    if (op.getQPositions())
      qPositions = m.lookup(op.getQPositions());
    if (op.getCustomMask())
      mask = PackedMask{m.lookup(op.getCustomMask()),
                        m.lookup(op.getMaskIndptr())};
    if (op.getAlibiSlopes())
      alibi = m.lookup(op.getAlibiSlopes());
    o = m.lookup(cast<AttentionOpInterface>(op.getOperation()).getO());
    lse = m.lookup(cast<AttentionOpInterface>(op.getOperation()).getLse());
  }

  void emit();

private:
  KernelEmitter &e;
  OpBuilder &b;
  Location loc;
  const PrefillConfig &c;
  Value q, qoIndptr, qPositions, alibi, o, lse;
  Cache cache;
  PageTable pages;
  PackedMask mask;

  // Per CTA.
  Value tid, lane, warp, request, kvHead, smem;
  Value qoStart, qoLen, kvLen, q0, rows, kvLo, kvHi, pageBase, maskBase;
  // Without q_positions: the positions of the tile's first and last query.
  Value firstPos, lastPos;
  // Per thread: the tile rows it holds, row half h of m block mt at
  // rowInfo[2 * mt + h] (C fragment rows lane / 4 and lane / 4 + 8).
  struct Row {
    Value valid, head, row, pos32, slope, maskBit0;
  };
  SmallVector<Row> rowInfo;
  Value laneCol; // 2 * (lane % 4)

  Type f32() { return b.getF32Type(); }
  VectorType fragC() { return VectorType::get({2, 2}, f32()); }
  VectorType fragA() { return VectorType::get({4, 2}, c.elem); }
  VectorType fragB() { return VectorType::get({2, 2}, c.elem); }
  Value minIdx(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value maxIdx(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value ceilDiv(Value x, int64_t d) {
    return e.divui(e.add(x, e.idx(d - 1)), e.idx(d));
  }

  /// Shared-memory rows of K (isV = false) or V of `stage` (static, so that
  /// every shared-memory address is a per-thread base plus a constant).
  Value kvRow0(bool isV, int64_t stage) {
    return e.idx(c.tileRows() + ((isV ? 2 : 0) + stage) * c.keys);
  }
  /// One 16-byte cp.async from `src[srcIdx]` to smem[row][col], reading 16
  /// bytes when `valid` and zero-filling otherwise.
  Value copy16(Value src, ValueRange srcIdx, Value row, Value col,
               Value valid) {
    Value n = e.select(valid, e.idx(kChunk), e.idx(0));
    return nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), smem,
        ValueRange{row, col}, src, srcIdx, b.getIndexAttr(kChunk), n,
        b.getUnitAttr());
  }
  void issueQ(SmallVectorImpl<Value> &tokens);
  /// Rounds of 16-byte chunks a thread copies per K (or V) tile.
  int64_t chunkRounds() const {
    return llvm::divideCeil(c.keys * c.chunksPerRow(), c.threads());
  }
  /// Chunk round `i` of this thread in a tile of rows of D elements (Q or
  /// K/V): its row and first column.
  std::pair<Value, Value> chunk(int64_t i);
  Value kvChunkValid(int64_t i, Value t);
  /// The pages of this thread's chunks of K/V tile `tile` (global loads of
  /// kv_indices, issued a tile ahead of their copies).
  SmallVector<Value> lookupPages(Value tile);
  /// cp.async of this thread's chunks of K/V tile `tile` into `stage`.
  void issueKV(Value tile, int64_t stage, ValueRange tilePages,
               SmallVectorImpl<Value> &tokens);
  Value commit(ArrayRef<Value> tokens) {
    return nvgpu::DeviceAsyncCreateGroupOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tokens);
  }
  void wait(Value group, int32_t pending) {
    nvgpu::DeviceAsyncWaitOp::create(b, loc, group,
                                     b.getI32IntegerAttr(pending));
  }
  Value ldmatrix(Value row, Value col, bool transpose) {
    return nvgpu::LdMatrixOp::create(b, loc, fragA(), smem,
                                     ValueRange{row, col}, transpose, 4);
  }
  /// Rows [r, r + 2) of a 4x2 fragment as a 2x2 B fragment.
  Value half(Value frag, int64_t r) {
    Value v = ub::PoisonOp::create(b, loc, fragB());
    for (int64_t i = 0; i < 2; ++i)
      v = vector::InsertOp::create(
          b, loc, vector::ExtractOp::create(b, loc, frag, r + i), v, i);
    return v;
  }
  Value mma(Value a, Value bf, Value acc) {
    return nvgpu::MmaSyncOp::create(b, loc, a, bf, acc,
                                    ArrayRef<int64_t>{16, 8, 16});
  }
  /// A 2-D fragment from its elements in row-major order, built row by row
  /// (the LLVM lowering of vectors handles 1-D rows inserted into n-D
  /// arrays, not n-D vector.from_elements).
  Value fragment(VectorType t, ArrayRef<Value> elems) {
    int64_t cols = t.getDimSize(1);
    VectorType rowT = VectorType::get({cols}, t.getElementType());
    Value v = ub::PoisonOp::create(b, loc, t);
    for (int64_t r = 0; r < t.getDimSize(0); ++r) {
      Value row = vector::FromElementsOp::create(
          b, loc, rowT, elems.slice(r * cols, cols));
      v = vector::InsertOp::create(b, loc, row, v, r);
    }
    return v;
  }
  Value elem(Value v, int64_t h, int64_t i) {
    return vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{h, i});
  }
  Value quadReduce(Value x, bool isMax) {
    for (int64_t off : {1, 2}) {
      Value y = gpu::ShuffleOp::create(b, loc, x, e.i32(off), e.i32(32),
                                       gpu::ShuffleMode::XOR)
                    .getShuffleResult();
      x = isMax ? e.maxf(x, y) : e.add(x, y);
    }
    return x;
  }
  /// The factor from what logits() returns to base-2 logits: sm_scale *
  /// log2(e) for raw scores (no soft-cap or ALiBi), 1 otherwise.
  double postScale() const {
    return (c.softCap || c.alibi) ? 1.0 : c.smScale * kLog2e;
  }
  /// The S fragments of m block `mt` as logits over postScale() (raw
  /// scores, or base-2 logits after the score modifiers), -inf where masked
  /// when `masked`.
  SmallVector<Value> logits(ArrayRef<Value> s, int64_t mt, Value tileStart,
                            bool masked);
  /// A fragment of Q: m block `mt`, k step `kk` (ldmatrix.x4).
  Value qFragment(int64_t mt, int64_t kk);
  /// One KV tile held in `stage`: returns the new state (m0, m1, l0, l1,
  /// acc..., pages of tile + 2).
  SmallVector<Value> step(Value tile, int64_t stage, ValueRange state,
                          ArrayRef<Value> qFrag);
  /// Fills rowInfo: what the KV loop's masks need, or (forStore) the
  /// output row, head and validity, recomputed after the loop.
  void computeRows(bool forStore);
  void store(ValueRange state);
};

void PrefillKernel::issueQ(SmallVectorImpl<Value> &tokens) {
  int64_t chunks = c.tileRows() * c.chunksPerRow();
  int64_t live = c.queriesPerTile() * c.group;
  for (int64_t i = 0; i < chunks / c.threads(); ++i) {
    auto [r, col] = chunk(i);
    Value qi = e.divui(r, e.idx(c.group));
    Value head = e.add(e.mul(kvHead, e.idx(c.group)),
                       e.remui(r, e.idx(c.group)));
    Value valid = e.andi(e.cmpi(Pred::ult, r, e.idx(live)),
                         e.cmpi(Pred::ult, qi, rows));
    Value qrow = e.add(e.add(qoStart, q0), e.select(valid, qi, e.idx(0)));
    tokens.push_back(copy16(q, {qrow, head, col}, r, col, valid));
  }
}

std::pair<Value, Value> PrefillKernel::chunk(int64_t i) {
  int64_t cpr = c.chunksPerRow();
  Value id = e.add(tid, e.idx(i * c.threads()));
  return {e.divui(id, e.idx(cpr)), e.mul(e.remui(id, e.idx(cpr)), e.idx(kChunk))};
}

/// i1: chunk `i` of this thread reads key `t` (inside the CTA's keys, and
/// inside the tile for a last partial round of chunks).
Value PrefillKernel::kvChunkValid(int64_t i, Value t) {
  int64_t chunks = c.keys * c.chunksPerRow();
  Value valid = e.cmpi(Pred::ult, t, kvHi);
  if ((i + 1) * c.threads() > chunks)
    valid = e.andi(valid, e.cmpi(Pred::ult, e.add(tid, e.idx(i * c.threads())),
                                 e.idx(chunks)));
  return valid;
}

SmallVector<Value> PrefillKernel::lookupPages(Value tile) {
  Value start = e.add(kvLo, e.mul(tile, e.idx(c.keys)));
  SmallVector<Value> out;
  for (int64_t i = 0; i < chunkRounds(); ++i) {
    Value t = e.add(start, chunk(i).first);
    // The page of a key past the CTA's range is never looked up (the
    // request may own no page at all); its copy reads nothing.
    // Kept as i32 (kv_indices' type) while carried to the next step.
    out.push_back(e.ifThenElse(
        kvChunkValid(i, t), b.getI32Type(),
        [&]() -> SmallVector<Value> {
          return {pages.pageEntry(e, pageBase, t)};
        },
        [&]() -> SmallVector<Value> { return {e.i32(0)}; })[0]);
  }
  return out;
}

void PrefillKernel::issueKV(Value tile, int64_t stage, ValueRange tilePages,
                            SmallVectorImpl<Value> &tokens) {
  Value start = e.add(kvLo, e.mul(tile, e.idx(c.keys)));
  Value kRow0 = kvRow0(false, stage), vRow0 = kvRow0(true, stage);
  int64_t chunks = c.keys * c.chunksPerRow();
  for (int64_t i = 0; i < chunkRounds(); ++i) {
    auto [r, col] = chunk(i);
    Value t = e.add(start, r);
    Value valid = kvChunkValid(i, t);
    Value slot = e.remui(t, e.idx(c.pageSize));
    auto copyKV = [&](SmallVectorImpl<Value> &out) {
      for (bool isV : {false, true})
        out.push_back(copy16(
            cache.memref(isV),
            cache.indices(e, isV, e.toIndex(tilePages[i]), slot, kvHead, col),
            e.add(isV ? vRow0 : kRow0, r), col, valid));
    };
    if ((i + 1) * c.threads() <= chunks) {
      copyKV(tokens);
      continue;
    }
    // A last partial round (e.g. D = 96: 1.5 rounds): the threads past the
    // tile's chunks copy nothing, not even zeros, since their row would lie
    // outside the tile. (The commit groups a thread's copies regardless of
    // the tokens it is given.)
    Value inTile = e.cmpi(Pred::ult, e.add(tid, e.idx(i * c.threads())),
                          e.idx(chunks));
    e.ifThen(inTile, [&]() {
      SmallVector<Value> inner;
      copyKV(inner);
    });
  }
}

Value PrefillKernel::qFragment(int64_t mt, int64_t kk) {
  Value row = e.add(e.mul(warp, e.idx(16 * c.mTiles)),
                    e.add(e.idx(16 * mt), e.remui(lane, e.idx(16))));
  Value col = e.add(e.idx(kk * 16), e.mul(e.divui(lane, e.idx(16)), e.idx(8)));
  return ldmatrix(row, col, /*transpose=*/false);
}

SmallVector<Value> PrefillKernel::logits(ArrayRef<Value> s, int64_t mt,
                                         Value tileStart, bool masked) {
  // Without score modifiers the scores stay raw here: the softmax scales
  // them inside the exponent's FMA (postScale()).
  bool mods = c.softCap || c.alibi;
  double scale = c.smScale;
  if (c.softCap)
    scale /= *c.softCap;
  Value scaleV = e.f32(scale), log2e = e.f32(kLog2e);
  Value start32 = e.toI32(e.add(tileStart, laneCol));
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
            Value on = e.ifThenElse(
                e.andi(row.valid, vis), b.getI1Type(),
                [&]() -> SmallVector<Value> {
                  return {mask.emitBit(e, maskBase, bit)};
                },
                [&]() -> SmallVector<Value> {
                  return {arith::ConstantIntOp::create(b, loc, 0, 1)};
                })[0];
            vis = on;
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

SmallVector<Value> PrefillKernel::step(Value tile, int64_t stage,
                                       ValueRange state,
                                       ArrayRef<Value> qFrag) {
  int64_t kSteps = c.headDim / 16, nTiles = c.keys / 8;
  int64_t mT = c.mTiles, halves = c.rowHalves(), dTiles = c.dTiles();
  int64_t accEnd = c.accEnd();
  // Prefetch tile + 1 into the other stage (its readers passed the barrier
  // that ended the previous step) with the pages looked up one step ago,
  // look up the pages of tile + 2, then wait for this tile.
  SmallVector<Value> tokens;
  issueKV(e.add(tile, e.idx(1)), 1 - stage, state.drop_front(accEnd), tokens);
  SmallVector<Value> pagesAhead = lookupPages(e.add(tile, e.idx(2)));
  wait(commit(tokens), 1);
  gpu::BarrierOp::create(b, loc);

  // S = Q K^T: s[mt * nTiles + n]. k steps outer: the accumulators of a
  // step are independent, so its mma.sync pipeline; each K fragment serves
  // the mT row blocks of the warp.
  Value kRow0 = kvRow0(false, stage), vRow0 = kvRow0(true, stage);
  Value l8 = e.remui(lane, e.idx(8)), l16 = e.divui(lane, e.idx(16));
  Value lMid = e.remui(e.divui(lane, e.idx(8)), e.idx(2));
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(fragC(), b.getF32FloatAttr(0)));
  SmallVector<Value> s(mT * nTiles, zero);
  for (int64_t kk = 0; kk < kSteps; ++kk) {
    Value kcol = e.add(e.idx(kk * 16), e.mul(lMid, e.idx(8)));
    SmallVector<Value> a;
    for (int64_t mt = 0; mt < mT; ++mt)
      a.push_back(qFrag.empty() ? qFragment(mt, kk) : qFrag[mt * kSteps + kk]);
    for (int64_t np = 0; np < nTiles / 2; ++np) {
      Value krow = e.add(kRow0, e.add(e.idx(np * 16),
                                      e.add(e.mul(l16, e.idx(8)), l8)));
      Value kf = ldmatrix(krow, kcol, /*transpose=*/false);
      Value b0 = half(kf, 0), b1 = half(kf, 2);
      for (int64_t mt = 0; mt < mT; ++mt) {
        Value &s0 = s[mt * nTiles + 2 * np];
        Value &s1 = s[mt * nTiles + 2 * np + 1];
        s0 = mma(a[mt], b0, s0);
        s1 = mma(a[mt], b1, s1);
      }
    }
  }

  // Logits; the mask only on tiles that need it.
  Value tileStart = e.add(kvLo, e.mul(tile, e.idx(c.keys)));
  Value tileEnd = e.add(tileStart, e.idx(c.keys));
  Value needMask = e.cmpi(Pred::ugt, tileEnd, kvLen);
  if (c.customMask || (c.positions && (c.causal || c.window))) {
    needMask = arith::ConstantIntOp::create(b, loc, 1, 1);
  } else {
    // Here causal / window imply no q_positions: firstPos / lastPos exist.
    if (c.causal)
      needMask = arith::OrIOp::create(
          b, loc, needMask,
          e.cmpi(Pred::sgt, tileEnd, e.add(firstPos, e.idx(1))));
    if (c.window)
      needMask = arith::OrIOp::create(
          b, loc, needMask,
          e.cmpi(Pred::sge, e.sub(lastPos, tileStart), e.idx(*c.window)));
  }
  auto allLogits = [&](bool masked) {
    SmallVector<Value> out;
    for (int64_t mt = 0; mt < mT; ++mt)
      out.append(logits(ArrayRef<Value>(s).slice(mt * nTiles, nTiles), mt,
                        tileStart, masked));
    return out;
  };
  SmallVector<Type> sTypes(mT * nTiles, fragC());
  SmallVector<Value> x = e.ifThenElse(
      needMask, sTypes, [&]() { return allLogits(true); },
      [&]() { return allLogits(false); });

  // Online softmax per row half (base 2).
  Value post = e.f32(postScale());
  SmallVector<Value> next(state.begin(), state.begin() + accEnd);
  next.append(pagesAhead);
  SmallVector<Value> mUse(halves), alpha(halves), rowSum(halves, e.f32(0));
  for (int64_t mt = 0; mt < mT; ++mt)
    for (int64_t h = 0; h < 2; ++h) {
      int64_t r = 2 * mt + h;
      Value mx = e.negInf();
      for (int64_t n = 0; n < nTiles; ++n)
        for (int64_t i = 0; i < 2; ++i)
          mx = e.maxf(mx, elem(x[mt * nTiles + n], h, i));
      mx = quadReduce(mx, /*isMax=*/true);
      // Logits are x * post; post > 0 keeps the maximum's place.
      Value mNew = e.maxf(state[r], e.mul(mx, post));
      mUse[r] = e.select(e.cmpf(FPred::OEQ, mNew, e.negInf()), e.f32(0), mNew);
      alpha[r] = e.ex2(e.sub(state[r], mUse[r]));
      next[r] = mNew;
    }
  SmallVector<Value> negM;
  for (Value m : mUse)
    negM.push_back(arith::NegFOp::create(b, loc, m));
  // p[mt * nTiles + n][h * 2 + i] = 2^(x * post - m), one FMA per score.
  SmallVector<SmallVector<Value, 4>> p(mT * nTiles);
  for (int64_t mt = 0; mt < mT; ++mt)
    for (int64_t n = 0; n < nTiles; ++n)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < 2; ++i) {
          int64_t r = 2 * mt + h;
          Value pi = e.ex2(LLVM::FMAOp::create(
              b, loc, elem(x[mt * nTiles + n], h, i), post, negM[r]));
          rowSum[r] = e.add(rowSum[r], pi);
          p[mt * nTiles + n].push_back(pi);
        }
  for (int64_t r = 0; r < halves; ++r)
    next[halves + r] =
        LLVM::FMAOp::create(b, loc, state[halves + r], alpha[r], rowSum[r]);
  // acc *= alpha (row-wise).
  for (int64_t mt = 0; mt < mT; ++mt)
    for (int64_t dn = 0; dn < dTiles; ++dn) {
      Value acc = state[c.accIndex(mt, dn)];
      SmallVector<Value> v;
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < 2; ++i)
          v.push_back(e.mul(elem(acc, h, i), alpha[2 * mt + h]));
      next[c.accIndex(mt, dn)] = fragment(fragC(), v);
    }

  // P as A fragments: k step kk covers n tiles 2kk and 2kk + 1; fragment
  // order (rows lo, k lo), (rows hi, k lo), (lo, hi), (hi, hi).
  SmallVector<Value> pa; // pa[mt * (nTiles / 2) + kk]
  for (int64_t mt = 0; mt < mT; ++mt)
    for (int64_t kk = 0; kk < nTiles / 2; ++kk) {
      SmallVector<Value> v;
      for (int64_t part = 0; part < 2; ++part)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t i = 0; i < 2; ++i)
            v.push_back(e.fromF32(p[mt * nTiles + 2 * kk + part][h * 2 + i],
                                  c.elem));
      pa.push_back(fragment(fragA(), v));
    }

  // O += P V, k steps outer (independent accumulators within a step); each
  // V fragment serves the mT row blocks.
  for (int64_t kk = 0; kk < nTiles / 2; ++kk) {
    Value vrow = e.add(vRow0, e.add(e.idx(kk * 16),
                                    e.add(e.mul(lMid, e.idx(8)), l8)));
    for (int64_t dp = 0; dp < dTiles / 2; ++dp) {
      Value vcol = e.add(e.idx(dp * 16), e.mul(l16, e.idx(8)));
      Value vf = ldmatrix(vrow, vcol, /*transpose=*/true);
      Value b0 = half(vf, 0), b1 = half(vf, 2);
      for (int64_t mt = 0; mt < mT; ++mt) {
        Value a = pa[mt * (nTiles / 2) + kk];
        Value &o0 = next[c.accIndex(mt, 2 * dp)];
        Value &o1 = next[c.accIndex(mt, 2 * dp + 1)];
        o0 = mma(a, b0, o0);
        o1 = mma(a, b1, o1);
      }
    }
  }
  // The stage is rewritten by the next step's prefetch.
  gpu::BarrierOp::create(b, loc);
  return next;
}

void PrefillKernel::computeRows(bool forStore) {
  rowInfo.assign(c.rowHalves(), Row());
  int64_t qpt = c.queriesPerTile();
  for (int64_t half = 0; half < c.rowHalves(); ++half) {
    Row &row = rowInfo[half];
    Value r;
    if (forStore) {
      // In i32 from the thread id, unlike the loop's copy, so that the rows
      // are recomputed here rather than kept live across the KV loop.
      Value t32 = e.toI32(tid);
      Value r32 = e.add(
          e.mul(arith::DivUIOp::create(b, loc, t32, e.i32(32)),
                e.i32(16 * c.mTiles)),
          e.add(arith::DivUIOp::create(
                    b, loc, arith::RemUIOp::create(b, loc, t32, e.i32(32)),
                    e.i32(4)),
                e.i32(8 * half)));
      r = e.toIndex(r32);
    } else {
      r = e.add(e.mul(warp, e.idx(16 * c.mTiles)),
                e.add(e.divui(lane, e.idx(4)), e.idx(8 * half)));
    }
    Value qi = e.divui(r, e.idx(c.group));
    row.head = e.add(e.mul(kvHead, e.idx(c.group)),
                     e.remui(r, e.idx(c.group)));
    row.valid = e.andi(e.cmpi(Pred::ult, r, e.idx(qpt * c.group)),
                       e.cmpi(Pred::ult, qi, rows));
    Value qiSafe = e.select(row.valid, qi, e.idx(0));
    row.row = e.add(e.add(qoStart, q0), qiSafe);
    if (forStore)
      continue;
    row.pos32 = e.toI32(qPositions
                            ? e.loadIdx(qPositions, row.row)
                            : e.sub(e.add(kvLen, e.add(q0, qiSafe)), qoLen));
    if (alibi)
      row.slope = e.load(alibi, {row.head});
    if (mask.bits)
      row.maskBit0 = e.mul(e.add(q0, qiSafe), kvLen);
  }
}

void PrefillKernel::store(ValueRange state) {
  computeRows(/*forStore=*/true);
  Value toBase = e.f32(c.lseBase2 ? 1.0 : kLn2);
  Value quad0 = e.cmpi(Pred::eq, e.remui(lane, e.idx(4)), e.idx(0));
  int64_t halves = c.rowHalves();
  for (int64_t mt = 0; mt < c.mTiles; ++mt)
    for (int64_t h = 0; h < 2; ++h) {
      int64_t r = 2 * mt + h;
      const Row &row = rowInfo[r];
      Value l = quadReduce(state[halves + r], /*isMax=*/false);
      Value some = e.cmpf(FPred::OGT, l, e.f32(0));
      Value inv = e.select(some, e.divf(e.f32(1), l), e.f32(0));
      Value lseV = e.select(some, e.mul(e.add(state[r], e.lg2(l)), toBase),
                            e.negInf());
      e.ifThen(row.valid, [&]() {
        VectorType out = VectorType::get({2}, c.elem);
        for (int64_t dn = 0; dn < c.dTiles(); ++dn) {
          Value acc = state[c.accIndex(mt, dn)];
          Value v = vector::FromElementsOp::create(
              b, loc, out,
              ValueRange{e.fromF32(e.mul(elem(acc, h, 0), inv), c.elem),
                         e.fromF32(e.mul(elem(acc, h, 1), inv), c.elem)});
          // Two elements at an even column: 4-byte aligned.
          vector::StoreOp::create(
              b, loc, v, o,
              ValueRange{row.row, row.head, e.add(e.idx(dn * 8), laneCol)},
              /*nontemporal=*/false, llvm::MaybeAlign(4));
        }
        e.ifThen(quad0, [&]() { e.store(lseV, lse, {row.row, row.head}); });
      });
    }
}

void PrefillKernel::emit() {
  MLIRContext *ctx = b.getContext();
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value raw = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), wg));
  smem = memref::ViewOp::create(
      b, loc,
      MemRefType::get({c.smemRows(), c.stride}, c.elem,
                      MemRefLayoutAttrInterface(), wg),
      raw, e.idx(0), ValueRange{});
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = e.remui(tid, e.idx(32));
  warp = e.divui(tid, e.idx(32));
  laneCol = e.mul(e.remui(lane, e.idx(4)), e.idx(2));
  Value tileX = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  kvHead = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  request = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  qoStart = e.loadIdx(qoIndptr, request);
  qoLen = e.sub(e.loadIdx(qoIndptr, e.add(request, e.idx(1))), qoStart);
  int64_t qpt = c.queriesPerTile();
  Value numTiles = ceilDiv(qoLen, qpt);
  e.ifThen(e.cmpi(Pred::ult, tileX, numTiles), [&]() {
    // Under a causal mask the last tiles see the most keys: run them first.
    Value tile = c.causal ? e.sub(e.sub(numTiles, e.idx(1)), tileX) : tileX;
    q0 = e.mul(tile, e.idx(qpt));
    rows = minIdx(e.idx(qpt), e.sub(qoLen, q0));
    kvLen = pages.kvLen(e, request);
    pageBase = pages.pageBase(e, request);
    kvLo = e.idx(0);
    kvHi = kvLen;
    if (!c.positions) {
      firstPos = e.sub(e.add(kvLen, q0), qoLen);
      lastPos = e.sub(e.add(firstPos, rows), e.idx(1));
      if (c.causal)
        kvHi = minIdx(kvLen, e.add(lastPos, e.idx(1)));
      if (c.window) {
        Value lo = maxIdx(e.idx(0), e.add(e.sub(firstPos, e.idx(*c.window)),
                                          e.idx(1)));
        kvLo = e.mul(e.divui(lo, e.idx(c.keys)), e.idx(c.keys));
      }
    }
    Value numKV = ceilDiv(maxIdx(e.sub(kvHi, kvLo), e.idx(0)), c.keys);

    // The two rows of each C fragment this thread holds.
    computeRows(/*forStore=*/false);
    if (mask.bits)
      maskBase = e.loadIdx(mask.indptr, request);

    // Q and the first K/V tile in flight; Q fragments into registers.
    SmallVector<Value> qTokens, kvTokens;
    issueQ(qTokens);
    Value qGroup = commit(qTokens);
    issueKV(e.idx(0), /*stage=*/0, lookupPages(e.idx(0)), kvTokens);
    commit(kvTokens);
    SmallVector<Value> pagesAhead = lookupPages(e.idx(1));
    wait(qGroup, 1);
    gpu::BarrierOp::create(b, loc);
    // Q fragments stay in registers when they fit beside the accumulators
    // (one m block up to D = 128); otherwise each step reloads them.
    SmallVector<Value> qFrag; // qFrag[mt * kSteps + kk]
    if (c.mTiles * c.headDim <= 128)
      for (int64_t mt = 0; mt < c.mTiles; ++mt)
        for (int64_t kk = 0; kk < c.headDim / 16; ++kk)
          qFrag.push_back(qFragment(mt, kk));

    SmallVector<Value> init(c.rowHalves(), e.negInf());
    init.append(c.rowHalves(), e.f32(0));
    Value zero = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(fragC(), b.getF32FloatAttr(0)));
    init.append(c.mTiles * c.dTiles(), zero);
    init.append(pagesAhead);
    // Two tiles per iteration, stage 0 then stage 1, so that the stage of
    // every shared-memory access is a constant.
    scf::ForOp loop = e.forLoop(
        e.idx(0), ceilDiv(numKV, 2), init, [&](Value pair, ValueRange state) {
          Value j = e.mul(pair, e.idx(2));
          SmallVector<Value> mid = step(j, 0, state, qFrag);
          Value j1 = e.add(j, e.idx(1));
          return e.ifThenElse(
              e.cmpi(Pred::ult, j1, numKV), ValueRange(mid).getTypes(),
              [&]() { return step(j1, 1, mid, qFrag); },
              [&]() { return mid; });
        });
    store(loop.getResults());
  });
}

} // namespace

LogicalResult mlir::pa::gpukernel::checkPrefill(PrefillOp op,
                                                const PrefillShape &shape) {
  PrefillConfig c;
  return makePrefillConfig(op, shape, c);
}

LogicalResult mlir::pa::gpukernel::buildPrefillKernel(PrefillOp op,
                                                      gpu::GPUModuleOp kmod,
                                                      StringRef name,
                                                      const PrefillShape &shape) {
  PrefillConfig c;
  if (failed(makePrefillConfig(op, shape, c)))
    return failure();
  KernelABI abi;
  abi.kind = "prefill";
  abi.args = argRoles(op);
  abi.grid = {GridExtentABI{"q_tiles"}, GridExtentABI{"kv_heads"},
              GridExtentABI{"batch"}};
  abi.block = {c.threads(), 1, 1};
  abi.smem = c.smemBytes();
  abi.tileQ = c.tileRows();
  abi.tileKV = c.keys;
  IRMapping m;
  gpu::GPUFuncOp func = createKernel(kmod, op, name, TypeRange{}, abi, m);
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, op.getLoc()}};
    PrefillKernel kernel(e, c, op, m);
    kernel.emit();
    gpu::ReturnOp::create(b, op.getLoc());
  }
  // Host launch: a bound on every request's query tiles (the runtime
  // launches the exact maximum, "q_tiles"), the KV heads, the requests.
  OpBuilder b(op);
  Location loc = op.getLoc();
  Emitter e{b, loc};
  Value n = e.dim(op.getQ(), 0);
  Value tiles = arith::MaxSIOp::create(
      b, loc, e.idx(1),
      e.divui(e.add(n, e.idx(c.queriesPerTile() - 1)),
              e.idx(c.queriesPerTile())));
  Value batch = e.sub(e.dim(op.getQoIndptr(), 0), e.idx(1));
  launch(b, op, func, {tiles, e.idx(c.numKVHeads), batch}, c.threads(),
         c.smemBytes());
  return success();
}
