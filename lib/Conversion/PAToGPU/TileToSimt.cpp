//===- TileToSimt.cpp - decode tile math onto CUDA-core lane groups -------===//
//
// pa-tile-to-simt, the last tile stage of the CUDA-core decode (docs/GPU.md,
// "CUDA-core decode"): after pa-promote-tiles, the Q, K and V tiles of a
// kSimtAttr kernel are views of shared memory (warp-local K / V rows, warp
// w holding keys [w K / W, (w + 1) K / W) of each tile) and the scores and
// the state are still f32 buffers. Each warp is split into lane groups of
// L = D * bytes / laneBytes lanes; lane i of a group holds laneBytes / 16
// chunks of 16 bytes of every row (chunks i, i + L, ...: each 16-byte load
// of a quarter warp covers whole 128-byte lines), and the group takes the
// warp's keys u G + g (G = 32 / L groups, u < keys / (W G)):
//
//   prelude              q rows of the tile's h heads in registers (f32,
//                        scaled by sm_scale, times log2 e without
//                        soft-cap / ALiBi)
//   pa.tile.qk           per key: its chunks from shared memory (16-byte
//                        loads), h dot products, each reduced over the
//                        group's lanes (gpu.subgroup_reduce, cluster L:
//                        pa-warp-shuffle-reduce makes butterflies)
//   pa.tile.mask         soft-cap, ALiBi, the masks (key bound, causal,
//                        window) in an scf.if on `masked_if`; base 2
//   pa.tile.softmax_update
//                        per head: the group's running max, ex2, rescale
//   pa.tile.pv           per key: its V chunks, acc += p v (FMA)
//   pa.tile.store        the states of the W G lane groups to shared memory
//                        (over the tiles, after the last copies land), then
//                        the CTA merges each (head, dim) with the merge
//                        operator and writes o and lse
//
// Every lane group holds the same scores for its keys (the reduction's
// result is uniform over its lanes), so the softmax needs no exchange.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "TileLowering.h"

#include "PagedAttn/Conversion/PagedAttention.h"
#include "PagedAttn/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

namespace mlir::pa {
#define GEN_PASS_DEF_PATILETOSIMT
#include "PagedAttn/Conversion/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;
using FPred = arith::CmpFPredicate;

namespace {

constexpr llvm::StringLiteral kPass = "pa-tile-to-simt";

/// What the lane groups specialize on, read off the kernel's tile IR and
/// its ABI.
struct SimtConfig : TileMaskOptions {
  Type elem;
  int64_t headDim = 0, rows = 0, keys = 0, warps = 0, laneBytes = 16;
  int64_t group = 1;
  double smScale = 1.0;
  bool lseBase2 = false;

  int64_t bytes() const { return elem.getIntOrFloatBitWidth() / 8; }
  /// Elements per 16-byte chunk, chunks per lane, lanes per row.
  int64_t chunkElems() const { return 16 / bytes(); }
  int64_t parts() const { return laneBytes / 16; }
  int64_t lanes() const { return headDim * bytes() / laneBytes; }
  /// Lane groups per warp, keys of a tile per warp and per lane group.
  int64_t laneGroups() const { return 32 / lanes(); }
  int64_t warpKeys() const { return keys / warps; }
  int64_t groupKeys() const { return warpKeys() / laneGroups(); }
  /// Lane groups of the CTA (the states the store merges).
  int64_t slots() const { return warps * laneGroups(); }
};

class SimtLowering : TileStateLowering {
public:
  SimtLowering(KernelEmitter &e, const SimtConfig &c, const KernelTileOps &ops)
      : TileStateLowering(e.b, kPass), e(e), b(e.b), loc(e.loc), c(c),
        ops(ops) {}

  LogicalResult run(gpu::GPUFuncOp func);

private:
  KernelEmitter &e;
  OpBuilder &b;
  Location loc;
  const SimtConfig &c;
  const KernelTileOps &ops;
  gpu::GPUFuncOp func;
  bool swizzle = false;
  Value tid, lane, warp, laneGroup, laneInGroup;
  /// The first key of this lane group in a tile (warp's block + group).
  Value keyOff;
  /// q[j * parts + p]: chunk p of head j's row (f32, scaled).
  SmallVector<Value> q;
  /// Per tile row (head j): its query's position (i32) and ALiBi slope.
  SmallVector<Value> pos32, slope;
  /// The kernel's first pa.tile.mask (erased once lowered: what the masks
  /// read is taken from it by the prelude) and its key bound.
  TileMaskOp maskOp;
  Value keyEnd;

  Type f32() { return b.getF32Type(); }
  VectorType chunkF32() { return VectorType::get({c.chunkElems()}, f32()); }
  /// Whether the scores need soft-cap or ALiBi (kept in natural-log scale
  /// until the mask, which goes to base 2).
  bool natural() const { return c.softCap || c.alibi; }
  /// Chunk p of this lane's part of row `row` of `t`, widened to f32.
  Value loadChunk(const SharedTile &t, Value row, int64_t p) {
    Value r = e.add(e.idx(t.row0), row);
    Value col =
        e.add(e.idx(t.col0), e.mul(e.add(laneInGroup, e.idx(p * c.lanes())),
                                   e.idx(c.chunkElems())));
    if (swizzle)
      col = swizzleCol(e, r, col, c.chunkElems());
    Value v = vector::LoadOp::create(
        b, loc, VectorType::get({c.chunkElems()}, c.elem), t.base,
        ValueRange{r, col}, /*nontemporal=*/false, llvm::MaybeAlign(16));
    return c.elem.isF32()
               ? v
               : arith::ExtFOp::create(b, loc, chunkF32(), v).getResult();
  }
  /// Row `u` of this lane group's keys in a K / V tile.
  Value keyRow(int64_t u) { return e.add(keyOff, e.idx(u * c.laneGroups())); }
  LogicalResult emitPrelude(Operation *before) override;
  SmallVector<Value> initState() override {
    SmallVector<Value> st(c.rows, e.negInf());
    st.append(c.rows, e.f32(0));
    st.append(c.rows * c.parts(), e.splat(e.f32(0), chunkF32()));
    return st;
  }
  void qk(TileQKOp op, TileEnv &env) override;
  void applyMask(TileMaskOp op, TileEnv &env) override;
  void softmaxUpdate(TileEnv &env) override;
  void pv(TilePVOp op, TileEnv &env) override;
  void store(TileStoreOp op, TileEnv &env) override;
  SmallVector<Value> logits(ArrayRef<Value> s, Value t0, bool masked);
};

LogicalResult SimtLowering::emitPrelude(Operation *before) {
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPoint(before);
  if (maskOp) {
    for (Value v : {maskOp.getRow0(), maskOp.getRows(), maskOp.getPos0(),
                    maskOp.getKvHead(), maskOp.getEnd()})
      if (v.getParentRegion() != before->getParentRegion() &&
          !v.getParentRegion()->isProperAncestor(before->getParentRegion()))
        return maskOp.emitOpError()
               << kPass
               << " needs the mask's rows, positions and key bound defined "
                  "before the KV loop";
    keyEnd = maskOp.getEnd();
    for (int64_t r = 0; r < c.rows; ++r) {
      TileRowPlace row =
          tileRowPlace(e, e.idx(r), c.group, maskOp.getRow0(), maskOp.getRows(),
                       maskOp.getKvHead(), Value());
      pos32.push_back(e.toI32(c.positions
                                  ? e.loadIdx(maskOp.getQPositions(), row.row)
                                  : e.add(maskOp.getPos0(), row.qi)));
      slope.push_back(c.alibi ? e.load(maskOp.getAlibiSlopes(), {row.head})
                              : Value());
    }
  }
  // Every head's q chunks in registers, scaled once.
  TileQKOp first = ops.qks.front();
  SharedTile qt = *sharedTile(kPass, first, first.getQ());
  Value scale =
      e.splat(e.f32(natural() ? c.smScale : c.smScale * kLog2e), chunkF32());
  for (int64_t j = 0; j < c.rows; ++j)
    for (int64_t p = 0; p < c.parts(); ++p)
      q.push_back(e.mul(loadChunk(qt, e.idx(j), p), scale));
  return success();
}

void SimtLowering::qk(TileQKOp op, TileEnv &env) {
  SharedTile k = *sharedTile(kPass, op, op.getK());
  // s[j * groupKeys + u]: head j's score of key u, uniform over the group.
  SmallVector<Value> s(c.rows * c.groupKeys());
  for (int64_t u = 0; u < c.groupKeys(); ++u) {
    SmallVector<Value> kc;
    for (int64_t p = 0; p < c.parts(); ++p)
      kc.push_back(loadChunk(k, keyRow(u), p));
    for (int64_t j = 0; j < c.rows; ++j) {
      Value part;
      for (int64_t p = 0; p < c.parts(); ++p) {
        Value d = e.dot(q[j * c.parts() + p], kc[p], c.chunkElems());
        part = part ? e.add(part, d) : d;
      }
      s[j * c.groupKeys() + u] =
          c.lanes() == 1
              ? part
              : gpu::SubgroupReduceOp::create(
                    b, loc, part, gpu::AllReduceOperation::ADD,
                    /*uniform=*/false, static_cast<uint32_t>(c.lanes()))
                    .getResult();
    }
  }
  env.s = s;
}

SmallVector<Value> SimtLowering::logits(ArrayRef<Value> s, Value t0,
                                        bool masked) {
  Value start32 = e.toI32(e.add(t0, keyOff));
  Value end32 = e.toI32(keyEnd);
  SmallVector<Value> out;
  for (int64_t j = 0; j < c.rows; ++j)
    for (int64_t u = 0; u < c.groupKeys(); ++u) {
      Value x = s[j * c.groupKeys() + u];
      Value t32 = e.add(start32, e.i32(u * c.laneGroups()));
      if (c.softCap) {
        Value cap = e.f32(*c.softCap);
        x = e.mul(cap, e.tanh(e.divf(x, cap)));
      }
      if (c.alibi) {
        Value dist =
            arith::SIToFPOp::create(b, loc, f32(), e.sub(t32, pos32[j]));
        x = LLVM::FMAOp::create(b, loc, slope[j], dist, x);
      }
      if (natural())
        x = e.mul(x, e.f32(kLog2e));
      if (masked) {
        Value vis = e.cmpi(Pred::slt, t32, end32);
        if (c.causal)
          vis = e.andi(vis, e.cmpi(Pred::sle, t32, pos32[j]));
        if (c.window && *c.window < (int64_t(1) << 31))
          vis = e.andi(
              vis, e.cmpi(Pred::slt, e.sub(pos32[j], t32), e.i32(*c.window)));
        x = e.select(vis, x, e.negInf());
      }
      out.push_back(x);
    }
  return out;
}

void SimtLowering::applyMask(TileMaskOp op, TileEnv &env) {
  Value t0 = op.getT0();
  if (!op.getMaskedIf()) {
    env.s = logits(env.s, t0, /*masked=*/true);
    return;
  }
  SmallVector<Type> types(env.s.size(), f32());
  env.s = e.ifThenElse(
      op.getMaskedIf(), types,
      [&]() { return logits(env.s, t0, /*masked=*/true); },
      [&]() { return logits(env.s, t0, /*masked=*/false); });
}

void SimtLowering::softmaxUpdate(TileEnv &env) {
  SmallVector<Value> next(env.state);
  SmallVector<Value> p(env.s.size());
  for (int64_t j = 0; j < c.rows; ++j) {
    Value m = env.state[j], l = env.state[c.rows + j];
    Value mx = m;
    for (int64_t u = 0; u < c.groupKeys(); ++u)
      mx = e.maxf(mx, env.s[j * c.groupKeys() + u]);
    Value safe = e.select(e.cmpf(FPred::OEQ, mx, e.negInf()), e.f32(0), mx);
    Value alpha = e.ex2(e.sub(m, safe));
    Value sum = e.mul(l, alpha);
    for (int64_t u = 0; u < c.groupKeys(); ++u) {
      Value pu = e.ex2(e.sub(env.s[j * c.groupKeys() + u], safe));
      p[j * c.groupKeys() + u] = pu;
      sum = e.add(sum, pu);
    }
    next[j] = mx;
    next[c.rows + j] = sum;
    Value a = e.splat(alpha, chunkF32());
    for (int64_t part = 0; part < c.parts(); ++part) {
      int64_t i = 2 * c.rows + j * c.parts() + part;
      next[i] = e.mul(env.state[i], a);
    }
  }
  env.state = next;
  env.s = p;
}

void SimtLowering::pv(TilePVOp op, TileEnv &env) {
  SharedTile v = *sharedTile(kPass, op, op.getV());
  for (int64_t u = 0; u < c.groupKeys(); ++u)
    for (int64_t part = 0; part < c.parts(); ++part) {
      Value vc = loadChunk(v, keyRow(u), part);
      for (int64_t j = 0; j < c.rows; ++j) {
        Value &acc = env.state[2 * c.rows + j * c.parts() + part];
        acc = LLVM::FMAOp::create(
            b, loc, e.splat(env.s[j * c.groupKeys() + u], chunkF32()), vc, acc);
      }
    }
}

void SimtLowering::store(TileStoreOp op, TileEnv &env) {
  MLIRContext *ctx = b.getContext();
  int64_t slots = c.slots(), h = c.rows, d = c.headDim;
  // Scratch over the tiles: (m, l) of each lane group and head, then its
  // accumulator rows: [2][slots][h] and [slots][h][D] floats.
  int64_t floats = slots * h * (2 + d);
  if (FailureOr<KernelABI> abi = decodeKernelABI(func);
      succeeded(abi) && abi->smem < floats * 4)
    setSharedMemory(func, floats * 4);
  // The copies still in flight (the zero-filled tiles past the last one)
  // land and every warp is done reading K / V first.
  auto token = nvgpu::DeviceAsyncTokenType::get(ctx);
  Value none =
      nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, token, ValueRange{});
  nvgpu::DeviceAsyncWaitOp::create(b, loc, none, b.getI32IntegerAttr(0));
  gpu::BarrierOp::create(b, loc);
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value raw = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), wg));
  Value scratch = memref::ViewOp::create(
      b, loc, MemRefType::get({floats}, f32(), MemRefLayoutAttrInterface(), wg),
      raw, e.idx(0), ValueRange{});
  Value slot = e.add(e.mul(warp, e.idx(c.laneGroups())), laneGroup);
  int64_t accBase = 2 * slots * h;
  Value first = e.cmpi(Pred::eq, laneInGroup, e.idx(0));
  for (int64_t j = 0; j < h; ++j) {
    Value at = e.add(e.mul(slot, e.idx(h)), e.idx(j));
    e.ifThen(first, [&]() {
      e.store(env.state[j], scratch, {at});
      e.store(env.state[h + j], scratch, {e.add(at, e.idx(slots * h))});
    });
    for (int64_t p = 0; p < c.parts(); ++p) {
      Value col = e.mul(e.add(laneInGroup, e.idx(p * c.lanes())),
                        e.idx(c.chunkElems()));
      vector::StoreOp::create(
          b, loc, env.state[2 * h + j * c.parts() + p], scratch,
          ValueRange{e.add(e.idx(accBase), e.add(e.mul(at, e.idx(d)), col))},
          /*nontemporal=*/false, llvm::MaybeAlign(16));
    }
  }
  gpu::BarrierOp::create(b, loc);
  // Thread idx merges (head j, dim d) over the lane groups (base 2).
  Type oElem = cast<MemRefType>(op.getO().getType()).getElementType();
  int64_t threads = c.warps * 32;
  scf::ForOp::create(
      b, loc, tid, e.idx(h * d), e.idx(threads), ValueRange{},
      [&](OpBuilder &, Location, Value idx, ValueRange) {
        Value j = e.divui(idx, e.idx(d));
        Value dd = e.remui(idx, e.idx(d));
        auto at = [&](Value g) { return e.add(e.mul(g, e.idx(h)), j); };
        auto ex2 = [&](Value x) { return e.ex2(x); };
        auto lg2 = [&](Value x) { return e.lg2(x); };
        auto mOf = [&](Value g) { return e.load(scratch, {at(g)}); };
        auto lOf = [&](Value g) {
          return e.load(scratch, {e.add(at(g), e.idx(slots * h))});
        };
        auto accOf = [&](Value g, Value x) {
          return e.load(scratch, {e.add(e.idx(accBase),
                                        e.add(e.mul(at(g), e.idx(d)), x))});
        };
        StateMerge merge(e, ExpBase{/*base2=*/true, ex2, lg2},
                         StateSet{e.idx(0), e.idx(slots), mOf, lOf, accOf});
        Value o = merge.element(dd);
        TileRowPlace row =
            tileRowPlace(e, j, c.group, op.getRow0(), op.getRows(),
                         op.getKvHead(), op.getRowStride());
        e.ifThen(row.valid, [&]() {
          e.store(e.fromF32(o, oElem), op.getO(), {row.row, row.head, dd});
          e.ifThen(e.cmpi(Pred::eq, dd, e.idx(0)), [&]() {
            e.store(merge.lse(c.lseBase2), op.getLse(), {row.row, row.head});
          });
        });
        scf::YieldOp::create(b, loc);
      });
}

LogicalResult SimtLowering::run(gpu::GPUFuncOp kernel) {
  func = kernel;
  swizzle = func->hasAttr(kSmemSwizzleAttr);
  b.setInsertionPointToStart(&func.getBody().front());
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = e.remui(tid, e.idx(32));
  warp = e.divui(tid, e.idx(32));
  laneGroup = e.divui(lane, e.idx(c.lanes()));
  laneInGroup = e.remui(lane, e.idx(c.lanes()));
  keyOff = e.add(e.mul(warp, e.idx(c.warpKeys())), laneGroup);
  maskOp = ops.masks.front();
  TileEnv env;
  if (failed(lowerBlock(func.getBody().front(), env)))
    return failure();
  eraseDeadTileBuffers(func, ops);
  return success();
}

/// Reads the lane-group configuration off `func`'s tile IR and ABI (an
/// error at the op that does not fit).
LogicalResult makeConfig(gpu::GPUFuncOp func, SimtConfig &c,
                         const KernelTileOps &ops) {
  ArrayRef<TileQKOp> qks = ops.qks;
  ArrayRef<TileMaskOp> masks = ops.masks;
  TileQKOp qk = qks[0];
  Value scores = ops.scores;
  if (failed(sharedTile(kPass, qk, qk.getQ())) ||
      failed(sharedTile(kPass, qk, qk.getK())))
    return failure();
  auto qt = cast<MemRefType>(qk.getQ().getType());
  auto kt = cast<MemRefType>(qk.getK().getType());
  c.elem = qt.getElementType();
  c.rows = qt.getDimSize(0);
  c.headDim = qt.getDimSize(1);
  c.keys = kt.getDimSize(0);
  FailureOr<KernelABI> abi = decodeKernelABI(func);
  if (failed(abi))
    return func.emitOpError()
           << kPass
           << " needs the kernel's pa.kernel ABI (its block size "
              "and lane bytes)";
  c.warps = abi->block[0] / 32;
  c.laneBytes = abi->laneBytes;
  int64_t rowBytes = c.headDim * c.elem.getIntOrFloatBitWidth() / 8;
  if (!(c.elem.isF16() || c.elem.isBF16() || c.elem.isF32()) ||
      kt.getElementType() != c.elem ||
      (c.laneBytes != 16 && c.laneBytes != 32) || rowBytes % c.laneBytes != 0 ||
      !llvm::isPowerOf2_64(rowBytes / c.laneBytes) ||
      rowBytes / c.laneBytes > 32 || c.warps <= 0 || abi->kvWarps != c.warps ||
      c.keys % (c.warps * c.laneGroups()) != 0)
    return qk.emitOpError()
           << kPass
           << " needs f16 / bf16 / f32 tiles of one type, lane_bytes 16 or "
              "32 dividing a row into a power of two <= 32 of lanes, and "
              "every warp splitting the keys (kv_warps = warps) into whole "
              "lane groups; got Q "
           << qt << ", K " << kt << ", lane_bytes " << c.laneBytes << ", "
           << c.warps << " warps, kv_warps " << abi->kvWarps;
  // The store's scratch of every lane group's state must fit the 227 KiB
  // of shared memory a CTA can have.
  int64_t scratch = c.slots() * c.rows * (2 + c.headDim) * 4;
  if (scratch > 227 * 1024)
    return qk.emitOpError()
           << kPass << ": the states of " << c.slots() << " lane groups x "
           << c.rows << " heads need " << scratch
           << " bytes of shared memory, more than the 232448 a CTA can have "
              "(fewer heads per CTA or threads)";
  if (failed(ops.checkUniformQKs(kPass)))
    return failure();
  for (TileQKOp op : qks)
    if (op.getKScale())
      return op.emitOpError()
             << kPass
             << " has no fp8 path (k_scale): fp8 caches run on the "
                "tensor-core decode";
  if (auto sc = qk.getScale())
    c.smScale = sc->convertToDouble();
  TileStoreOp st = ops.store;
  if (st.getVScale())
    return st.emitOpError()
           << kPass
           << " has no fp8 path (v_scale): fp8 caches run on the "
              "tensor-core decode";
  c.group = st.getGroup();
  c.lseBase2 = st.getLseBase2();
  if (masks.empty() || masks.size() != qks.size())
    return func.emitOpError()
           << kPass << " expects one pa.tile.mask after every pa.tile.qk";
  if (failed(readMaskOptions(kPass, masks, c.group, scores, c)))
    return failure();
  if (c.customMask)
    return TileMaskOp(masks.front()).emitOpError()
           << kPass << " has no custom-mask path (a decode has none)";
  return success();
}

struct PATileToSimt final : pa::impl::PATileToSimtBase<PATileToSimt> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<gpu::GPUFuncOp> funcs;
    getOperation().walk([&](gpu::GPUFuncOp func) {
      if (func->hasAttr(kSimtAttr) && holdsTileOps(func))
        funcs.push_back(func);
    });
    for (gpu::GPUFuncOp func : funcs) {
      SimtConfig c;
      FailureOr<KernelTileOps> ops = KernelTileOps::collect(func, kPass);
      if (failed(ops) || failed(makeConfig(func, c, *ops)))
        return signalPassFailure();
      OpBuilder b(func);
      KernelEmitter e{{b, func.getLoc()}};
      if (failed(SimtLowering(e, c, *ops).run(func)))
        return signalPassFailure();
    }
  }
};

} // namespace
