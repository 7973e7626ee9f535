//===- PAToGPU.cpp - tile decode / decode_partial / merge_segments to GPU --===//
//
// Kernel shape of the attention ops (see the pass description):
//
//   CTA (item, kv head hk, head chunk) item = request (decode) or work item;
//                                     a chunk = `heads` of the g query heads
//     lane group G = tid / L          L = D / V lanes, V elements = 16 bytes
//       lane l = tid % L              holds dims [l*V, l*V + V) of q, k, v
//     for t0 in [start, end) step NG*U:          NG = threads / L groups
//       load U tokens (page lookups + vector.load of K and V rows)
//       for each token, each of the g query heads of hk:
//         s = subgroup_reduce(add, <q_l, k_l>) over the L lanes
//         online softmax in base 2 (ex2), acc_l = acc_l * a + p * v_l
//     states of the NG groups -> workgroup memory -> merged by the CTA ->
//     o (q's dtype, or f32 partials) and lse
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/KernelABI.h"
#include "PagedAttn/Conversion/PagedAttention.h"
#include "PagedAttn/Conversion/PrefillTiling.h"
#include "PagedAttn/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace mlir::pa {
#define GEN_PASS_DEF_CONVERTPATOGPU
#include "PagedAttn/Conversion/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

namespace {

/// Static facts a kernel specializes on, checked before any IR changes.
struct Config {
  Type elem;
  int64_t vec = 0, headDim = 0, lanes = 0, groups = 0, threads = 0;
  int64_t group = 0, numKVHeads = 0, pageSize = 0, unroll = 1;
  /// Query heads per CTA (a chunk of the GQA group) and chunks per KV head.
  int64_t heads = 0, chunks = 1;
  int64_t laneBytes = 16;
};

/// The kernel shape asked for by the pass options (0: tuned).
struct ShapeOptions {
  int64_t threads = 128, tokensInFlight = 0, laneBytes = 0, headsPerCTA = 0;
};

/// The tuned kernel shape of an attention op with GQA group `group`, head
/// dim `headDim` and `bytes`-byte elements, for the options left at 0. The
/// figures were measured on an H200 (docs/PERFORMANCE.md) and the rule is
/// proven spill-free and within shared memory for every group 1..32, head
/// dim 64/128/256 and f16/bf16/f32 by test/Pipelines/decode-shape-sweep.mlir:
///
///   * heads per CTA: the whole group up to 8 heads; larger groups are
///     split into ceil(g / 8) chunks of equal size (the last one may be
///     shorter): q and the accumulators of every head a CTA holds live in
///     registers, and more than 8 x 8 of each spill;
///   * 32-byte lanes for 2..4 heads of 16-bit data (2..8 of f32) whose rows
///     split into at most 32 lanes of 32 bytes: half the lanes repeat each
///     score's softmax and shuffles; 32-byte lanes also whenever 16-byte
///     lanes would need more than 32 lanes (f32 with D = 256);
///   * tokens in flight: 4 with 32-byte lanes, 8 for one head with 16-byte
///     lanes, 2 for more heads (the loads in flight share the registers with
///     the heads' q and accumulators).
void tunedShape(int64_t group, int64_t headDim, int64_t bytes,
                const ShapeOptions &o, Config &c) {
  int64_t heads = o.headsPerCTA > 0 ? std::min(o.headsPerCTA, group) : group;
  if (o.headsPerCTA <= 0 && group > 8) {
    int64_t chunks = llvm::divideCeil(group, 8);
    heads = llvm::divideCeil(group, chunks);
  }
  int64_t rowBytes = headDim * bytes;
  bool fitsWide = rowBytes % 32 == 0 && rowBytes / 32 <= 32;
  bool narrowTooWide = rowBytes / 16 > 32;
  bool wide = fitsWide && ((heads >= 2 && heads * (32 / bytes) <= 64) ||
                           narrowTooWide);
  c.laneBytes = o.laneBytes > 0 ? o.laneBytes : (wide ? 32 : 16);
  c.unroll = o.tokensInFlight > 0
                 ? o.tokensInFlight
                 : (c.laneBytes == 32 ? 4 : (heads == 1 ? 8 : 2));
  c.heads = heads;
  c.chunks = llvm::divideCeil(group, heads);
  c.threads = o.threads;
}

/// Checks the operands of an attention op and fills `cfg`.
LogicalResult makeConfig(AttentionOpInterface op, const ShapeOptions &shape,
                         Config &cfg) {
  for (Value v : op->getOperands())
    if (!isIdentityMemRef(v.getType()))
      return op->emitOpError()
             << "convert-pa-to-gpu expects identity-layout memrefs";
  auto qt = cast<MemRefType>(op.getQ().getType());
  PagedKVAttr cache = op.getCache();
  if (qt.isDynamicDim(1) || qt.isDynamicDim(2))
    return op.emitOpError()
           << "convert-pa-to-gpu needs static query heads and head dim";
  cfg.elem = qt.getElementType();
  cfg.headDim = cache.getHeadDim();
  cfg.numKVHeads = cache.getNumKVHeads();
  cfg.pageSize = cache.getPageSize();
  cfg.group = qt.getDimSize(1) / cfg.numKVHeads;
  int64_t bytes = cfg.elem.getIntOrFloatBitWidth() / 8;
  tunedShape(cfg.group, cfg.headDim, bytes, shape, cfg);
  if (cfg.laneBytes != 16 && cfg.laneBytes != 32)
    return op->emitOpError() << "lane-bytes must be 16 or 32";
  if (cfg.threads % 32 != 0 || cfg.threads <= 0 || cfg.unroll <= 0)
    return op.emitOpError()
           << "cta-threads must be a multiple of 32 and tokens-in-flight > 0";
  cfg.vec = cfg.laneBytes / bytes;
  if (cfg.headDim % cfg.vec != 0)
    return op.emitOpError() << "head dim must be a multiple of " << cfg.vec
                            << " (" << cfg.laneBytes << "-byte lanes)";
  cfg.lanes = cfg.headDim / cfg.vec;
  if (!llvm::isPowerOf2_64(cfg.lanes) || cfg.lanes > 32)
    return op.emitOpError() << "head dim / " << cfg.vec
                            << " must be a power of two <= 32, got "
                            << cfg.lanes;
  if (cfg.lanes > cfg.threads)
    return op.emitOpError() << "a token's " << cfg.lanes
                            << " lanes exceed the CTA's " << cfg.threads
                            << " threads";
  cfg.groups = cfg.threads / cfg.lanes;
  // Workgroup memory of the cross-group merge: (m, l) and acc per group and
  // head; static shared memory is limited to 48 KiB per CTA.
  int64_t smemBytes = 4 * cfg.groups * cfg.heads * (2 + cfg.headDim);
  if (smemBytes > 48 * 1024) {
    int64_t fit = (48 * 1024) / (4 * cfg.groups * (2 + cfg.headDim));
    return op.emitOpError()
           << "the cross-group merge needs " << smemBytes
           << " bytes of shared memory (" << cfg.groups << " lane groups x "
           << cfg.heads << " heads), more than 48 KiB: use heads-per-cta <= "
           << fit;
  }
  return success();
}

/// Operands of an attention kernel, already mapped into the kernel.
struct AttnArgs {
  Value q, alibi, o, lse;
  Cache cache;
  PageTable pages;
  Value wIndptr, wRequest, wStart, wEnd; // decode_partial only
  /// decode_partial with its merge fused (split-kv-merge=fused).
  std::optional<FusedMerge> merge;
  std::optional<double> smScale, softCap;
  std::optional<int64_t> window;
  bool lseBase2 = false;
};

/// Emits the body of a decode / decode_partial kernel.
void emitAttentionBody(KernelEmitter &e, const Config &c, const AttnArgs &a,
                       Value smemML, Value smemAcc) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Type f32 = b.getF32Type();
  auto vecF32 = VectorType::get({c.vec}, f32);
  auto vecElem = VectorType::get({c.vec}, c.elem);
  Value item = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value hk = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value grp = e.divui(tid, e.idx(c.lanes));
  Value lane = e.remui(tid, e.idx(c.lanes));
  Value d0 = e.mul(lane, e.idx(c.vec));
  // The CTA's heads: chunk z of the group's g heads. With a partial last
  // chunk, a head past the group reads head 0 of the group (in bounds) and
  // writes nothing.
  bool partialChunks = c.group % c.heads != 0;
  Value firstHead = e.mul(hk, e.idx(c.group));
  Value chunkBase = e.idx(0);
  if (c.chunks > 1)
    chunkBase = e.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::z),
                      e.idx(c.heads));
  SmallVector<Value> heads, headValid;
  for (int64_t j = 0; j < c.heads; ++j) {
    Value inGroup = e.add(chunkBase, e.idx(j));
    Value valid = e.cmpi(arith::CmpIPredicate::slt, inGroup, e.idx(c.group));
    Value h = e.add(firstHead, inGroup);
    heads.push_back(partialChunks ? e.select(valid, h, firstHead) : h);
    headValid.push_back(valid);
  }

  auto body = [&](Value request, Value start, Value end) {
    Value ip0 = a.pages.pageBase(e, request);
    Value kvLen = a.pages.kvLen(e, request);
    if (!end)
      end = kvLen;
    Value pos = e.sub(kvLen, e.idx(1));
    bool natural = a.softCap || a.alibi;
    double scale = a.smScale.value_or(1.0 / std::sqrt((double)c.headDim));
    Value qScale = e.splat(e.f32(natural ? scale : scale * kLog2e), vecF32);
    SmallVector<Value> qv;
    for (int64_t j = 0; j < c.heads; ++j) {
      Value raw = vector::LoadOp::create(b, loc, vecElem, a.q,
                                         ValueRange{request, heads[j], d0},
                                         false, llvm::MaybeAlign(16));
      Value wide = c.elem.isF32()
                       ? raw
                       : arith::ExtFOp::create(b, loc, vecF32, raw).getResult();
      qv.push_back(e.mul(wide, qScale));
    }
    // Loop state: m[heads], l[heads], acc[heads].
    SmallVector<Value> init;
    for (int64_t j = 0; j < c.heads; ++j)
      init.push_back(e.negInf());
    for (int64_t j = 0; j < c.heads; ++j)
      init.push_back(e.f32(0));
    Value zeroVec = e.splat(e.f32(0), vecF32);
    for (int64_t j = 0; j < c.heads; ++j)
      init.push_back(zeroVec);
    Value step = e.idx(c.groups * c.unroll);
    // Token u of the block starting at t0, whether it is visible, and the
    // (clamped, always in-bounds) token to load.
    auto token = [&](Value t0, int64_t u) {
      Value t = e.add(t0, e.add(e.idx(u * c.groups), grp));
      Value valid = e.cmpi(arith::CmpIPredicate::slt, t, end);
      if (a.window)
        valid = e.andi(valid, emitInSlidingWindow(e, t, pos, *a.window));
      return std::make_tuple(t, valid, e.select(valid, t, start));
    };
    // Issues the page lookups and K/V loads of a block of U tokens.
    auto loadBlock = [&](Value t0) {
      SmallVector<Value> loaded;
      for (int64_t u = 0; u < c.unroll; ++u) {
        auto [t, valid, tc] = token(t0, u);
        (void)t;
        (void)valid;
        auto [page, slot] = a.pages.locate(e, ip0, tc);
        for (bool isV : {false, true})
          loaded.push_back(vector::LoadOp::create(
              b, loc, vecElem, a.cache.memref(isV),
              a.cache.indices(e, isV, page, slot, hk, d0), false,
              llvm::MaybeAlign(16)));
      }
      return loaded;
    };
    // Software pipelining in registers: the loop carries the loads of its
    // current block and issues the next block's loads before its arithmetic.
    // Nothing is loaded (and no page is looked up) when the range is empty.
    Value nonEmptyRange = e.cmpi(arith::CmpIPredicate::slt, start, end);
    SmallVector<Type> loadTypes(2 * c.unroll, vecElem);
    SmallVector<Value> first = e.ifThenElse(
        nonEmptyRange, loadTypes, [&]() { return loadBlock(start); },
        [&]() -> SmallVector<Value> {
          SmallVector<Value> zeros;
          Value z = e.splat(arith::ConstantOp::create(
                                b, loc, b.getFloatAttr(c.elem, 0.0)),
                            vecElem);
          for (int64_t i = 0; i < 2 * c.unroll; ++i)
            zeros.push_back(z);
          return zeros;
        });
    init.append(first);
    int64_t nState = 3 * c.heads;
    auto loop = scf::ForOp::create(
        b, loc, start, end, step, init,
        [&](OpBuilder &, Location, Value t0, ValueRange st) {
          SmallVector<Value> m(st.begin(), st.begin() + c.heads);
          SmallVector<Value> l(st.begin() + c.heads,
                               st.begin() + 2 * c.heads);
          SmallVector<Value> acc(st.begin() + 2 * c.heads,
                                 st.begin() + nState);
          SmallVector<Value> cur(st.begin() + nState, st.end());
          SmallVector<Value> next = loadBlock(e.add(t0, step));
          // Widen the block's K/V rows once; every head reuses them.
          SmallVector<Value> kf, vf, toks, valids;
          for (int64_t u = 0; u < c.unroll; ++u) {
            auto [t, valid, tc] = token(t0, u);
            (void)tc;
            toks.push_back(t);
            valids.push_back(valid);
            auto widen = [&](Value x) {
              return c.elem.isF32()
                         ? x
                         : arith::ExtFOp::create(b, loc, vecF32, x).getResult();
            };
            kf.push_back(widen(cur[2 * u]));
            vf.push_back(widen(cur[2 * u + 1]));
          }
          // Online softmax over the block: one rescale of the state per
          // block (not per token), ex2 once per score.
          for (int64_t j = 0; j < c.heads; ++j) {
            SmallVector<Value> sc;
            Value mt = m[j];
            for (int64_t u = 0; u < c.unroll; ++u) {
              Value part = e.dot(qv[j], kf[u], c.vec);
              Value s = gpu::SubgroupReduceOp::create(
                  b, loc, part, gpu::AllReduceOperation::ADD,
                  /*uniform=*/false, static_cast<uint32_t>(c.lanes));
              if (natural) {
                if (a.softCap) {
                  Value cap = e.f32(*a.softCap);
                  s = e.mul(cap, e.tanh(e.divf(s, cap)));
                }
                if (a.alibi) {
                  Value slope = e.load(a.alibi, {heads[j]});
                  s = e.add(s,
                            e.mul(slope, e.indexToF32(e.sub(toks[u], pos))));
                }
                s = e.mul(s, e.f32(kLog2e));
              }
              s = e.select(valids[u], s, e.negInf());
              sc.push_back(s);
              mt = e.maxf(mt, s);
            }
            Value mSafe =
                e.select(e.cmpf(arith::CmpFPredicate::OEQ, mt, e.negInf()),
                         e.f32(0), mt);
            Value alpha = e.ex2(e.sub(m[j], mSafe));
            Value lsum = e.mul(l[j], alpha);
            Value accj = e.mul(acc[j], e.splat(alpha, vecF32));
            for (int64_t u = 0; u < c.unroll; ++u) {
              Value p = e.ex2(e.sub(sc[u], mSafe));
              lsum = e.add(lsum, p);
              accj = LLVM::FMAOp::create(b, loc, e.splat(p, vecF32), vf[u],
                                         accj);
            }
            l[j] = lsum;
            acc[j] = accj;
            m[j] = mt;
          }
          SmallVector<Value> yields(m);
          yields.append(l);
          yields.append(acc);
          yields.append(next);
          scf::YieldOp::create(b, loc, yields);
        });
    // Publish every group's state to workgroup memory.
    Value isLane0 = e.cmpi(arith::CmpIPredicate::eq, lane, e.idx(0));
    int64_t ng = c.groups * c.heads;
    for (int64_t j = 0; j < c.heads; ++j) {
      Value slotIdx = e.add(e.mul(grp, e.idx(c.heads)), e.idx(j));
      Value accOff = e.add(e.mul(slotIdx, e.idx(c.headDim)), d0);
      vector::StoreOp::create(b, loc, loop.getResult(2 * c.heads + j), smemAcc,
                              ValueRange{accOff}, /*nontemporal=*/false,
                              llvm::MaybeAlign(16));
      e.ifThen(isLane0, [&]() {
        e.store(loop.getResult(j), smemML, {slotIdx});
        e.store(loop.getResult(c.heads + j), smemML,
                {e.add(slotIdx, e.idx(ng))});
      });
    }
    gpu::BarrierOp::create(b, loc);
    // Merge the groups' running states (m, l, acc) with the merge operator:
    // thread idx handles (head j, dim d).
    Value row = a.wIndptr ? item : request;
    Type oElem = cast<MemRefType>(a.o.getType()).getElementType();
    scf::ForOp::create(
        b, loc, tid, e.idx(c.heads * c.headDim), e.idx(c.threads),
        ValueRange{}, [&](OpBuilder &, Location, Value idx, ValueRange) {
          Value j = e.divui(idx, e.idx(c.headDim));
          Value d = e.remui(idx, e.idx(c.headDim));
          auto slotOf = [&](Value g) {
            return e.add(e.mul(g, e.idx(c.heads)), j);
          };
          auto ex2 = [&](Value x) { return e.ex2(x); };
          auto lg2 = [&](Value x) { return e.lg2(x); };
          auto mOf = [&](Value g) { return e.load(smemML, {slotOf(g)}); };
          auto lOf = [&](Value g) {
            return e.load(smemML, {e.add(slotOf(g), e.idx(ng))});
          };
          auto accOf = [&](Value g, Value dd) {
            return e.load(smemAcc,
                          {e.add(e.mul(slotOf(g), e.idx(c.headDim)), dd)});
          };
          StateMerge merge(e, ExpBase{/*base2=*/true, ex2, lg2},
                           StateSet{e.idx(0), e.idx(c.groups), mOf, lOf,
                                    accOf});
          Value o = merge.element(d);
          Value h = e.add(firstHead, e.add(chunkBase, j));
          auto write = [&]() {
            e.store(e.fromF32(o, oElem), a.o, {row, h, d});
            e.ifThen(e.cmpi(arith::CmpIPredicate::eq, d, e.idx(0)), [&]() {
              e.store(merge.lse(a.lseBase2), a.lse, {row, h});
            });
          };
          if (partialChunks)
            e.ifThen(e.cmpi(arith::CmpIPredicate::slt, e.add(chunkBase, j),
                            e.idx(c.group)),
                     write);
          else
            write();
          scf::YieldOp::create(b, loc);
        });
  };

  if (!a.wIndptr) {
    body(item, e.idx(0), Value());
    return;
  }
  Value batch = e.sub(e.dim(a.wIndptr, 0), e.idx(1));
  Value items = e.loadIdx(a.wIndptr, batch);
  CTAHeads ctaHeads{e.add(firstHead, chunkBase), c.heads, Value()};
  if (partialChunks)
    ctaHeads.valid = arith::MinUIOp::create(
        b, loc, e.idx(c.heads), e.sub(e.idx(c.group), chunkBase));
  e.ifThen(e.cmpi(arith::CmpIPredicate::slt, item, items), [&]() {
    Value request = e.loadIdx(a.wRequest, item);
    body(request, e.loadIdx(a.wStart, item), e.loadIdx(a.wEnd, item));
    if (a.merge)
      emitArriveAndMerge(e, *a.merge, request, ctaHeads, c.headDim,
                         c.threads);
  });
  if (a.merge)
    emitEmptyRequests(e, *a.merge, item, ctaHeads, c.headDim, c.threads);
}

/// The operands and options of an attention op, mapped into its kernel.
AttnArgs mapAttnArgs(AttentionOpInterface op, IRMapping &m) {
  AttnArgs a;
  a.q = m.lookup(op.getQ());
  a.cache.attr = op.getCache();
  for (Value v : op.getKvCache())
    a.cache.tensors.push_back(m.lookup(v));
  PageTable pt = pageTableOf(cast<PagedOpInterface>(op.getOperation()),
                             /*checked=*/false);
  a.pages = PageTable{m.lookup(pt.indptr), m.lookup(pt.indices),
                      m.lookup(pt.last), pt.pageSize, /*checked=*/false};
  if (op.getAlibiSlopes())
    a.alibi = m.lookup(op.getAlibiSlopes());
  a.o = m.lookup(op.getO());
  a.lse = m.lookup(op.getLse());
  AttentionOptions opts = op.getAttentionOptions();
  a.smScale = opts.smScale;
  a.softCap = opts.softCap;
  a.window = opts.window;
  a.lseBase2 = opts.lseBase2;
  return a;
}

/// Builds the kernel of a decode / decode_partial op (with `merge`, the
/// fused split-KV kernel decode_split) and launches it.
LogicalResult tileAttention(AttentionOpInterface op, gpu::GPUModuleOp kmod,
                            StringRef name, const ShapeOptions &shape,
                            MergeSegmentsOp merge = {}) {
  Config c;
  if (failed(makeConfig(op, shape, c)))
    return failure();
  MLIRContext *ctx = op.getContext();
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Type f32 = Float32Type::get(ctx);
  int64_t slots = c.groups * c.heads;
  auto smemML = MemRefType::get({2 * slots}, f32, MemRefLayoutAttrInterface(),
                                wg);
  auto smemAcc = MemRefType::get({slots * c.headDim}, f32,
                                 MemRefLayoutAttrInterface(), wg);
  auto partialOp = dyn_cast<DecodePartialOp>(op.getOperation());
  bool partial = bool(partialOp);
  KernelABI abi;
  abi.kind = merge ? "decode_split" : partial ? "decode_partial" : "decode";
  abi.args = merge ? fusedArgRoles(partialOp) : argRoles(op);
  abi.grid = {GridExtentABI{partial ? "work_capacity" : "batch"},
              GridExtentABI{"kv_heads"}, GridExtentABI{"", c.chunks}};
  abi.block = {c.threads, 1, 1};
  abi.laneBytes = c.laneBytes;
  abi.tokensInFlight = c.unroll;
  abi.headsPerCTA = c.heads;
  IRMapping m;
  OpBuilder host(op);
  SmallVector<Value> extra;
  if (merge)
    extra = fusedMergeOperands(host, merge);
  gpu::GPUFuncOp func = createKernel(kmod, op, name, TypeRange{smemML, smemAcc},
                                     abi, m, extra);
  AttnArgs a = mapAttnArgs(op, m);
  if (partial) {
    a.wIndptr = m.lookup(partialOp.getWorkIndptr());
    a.wRequest = m.lookup(partialOp.getWorkRequest());
    a.wStart = m.lookup(partialOp.getWorkStart());
    a.wEnd = m.lookup(partialOp.getWorkEnd());
  }
  if (merge)
    a.merge = mapFusedMerge(partialOp, extra, m);
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, op.getLoc()}};
    emitAttentionBody(e, c, a, func.getWorkgroupAttributions()[0],
                      func.getWorkgroupAttributions()[1]);
    gpu::ReturnOp::create(b, op.getLoc());
  }
  OpBuilder b(op);
  Value items = memref::DimOp::create(b, op.getLoc(), op.getO(), 0);
  Value hkv = arith::ConstantIndexOp::create(b, op.getLoc(), c.numKVHeads);
  Value chunks = arith::ConstantIndexOp::create(b, op.getLoc(), c.chunks);
  launch(b, op, func, {items, hkv, chunks}, c.threads, 0, extra);
  if (merge)
    finishFusedLaunch(merge, extra[2]);
  return success();
}

/// merge_segments: a CTA per (segment, head); threads walk the head dim.
LogicalResult tileMergeSegments(MergeSegmentsOp op, gpu::GPUModuleOp kmod,
                                StringRef name, int64_t threads) {
  for (Value v : op->getOperands())
    if (!isIdentityMemRef(v.getType()))
      return op.emitOpError()
             << "convert-pa-to-gpu expects identity-layout memrefs";
  KernelABI abi;
  abi.kind = "merge_segments";
  abi.args = argRoles(op);
  abi.grid = {GridExtentABI{"batch"}, GridExtentABI{"num_q_heads"},
              GridExtentABI{"", 1}};
  abi.block = {threads, 1, 1};
  IRMapping m;
  gpu::GPUFuncOp func = createKernel(kmod, op, name, TypeRange{}, abi, m);
  Value op_ = m.lookup(op.getOPart()), lp = m.lookup(op.getLsePart());
  Value seg = m.lookup(op.getSegments());
  Value o = m.lookup(op.getOuts()[0]), lse = m.lookup(op.getOuts()[1]);
  bool base2 = op.getLseBase2();
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, op.getLoc()}};
    Location loc = op.getLoc();
    Type oElem = cast<MemRefType>(o.getType()).getElementType();
    Value s = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value begin = e.loadIdx(seg, s);
    Value end = e.loadIdx(seg, e.add(s, e.idx(1)));
    Value h = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
    Value dims = e.dim(o, 2);
    Value toLog2 = e.f32(base2 ? 1.0 : kLog2e);
    scf::ForOp::create(
        b, loc, tid, dims, e.idx(threads), ValueRange{},
        [&](OpBuilder &, Location, Value d, ValueRange) {
          auto ex2 = [&](Value x) { return e.ex2(x); };
          auto lg2 = [&](Value x) { return e.lg2(x); };
          auto lseOf = [&](Value i) {
            return e.mul(e.load(lp, {i, h}), toLog2);
          };
          auto oOf = [&](Value i, Value dd) {
            return e.toF32(e.load(op_, {i, h, dd}));
          };
          StateMerge merge(e, ExpBase{/*base2=*/true, ex2, lg2},
                           StateSet{begin, end, lseOf, /*l=*/nullptr, oOf});
          e.store(e.fromF32(merge.element(d), oElem), o, {s, h, d});
          e.ifThen(e.cmpi(arith::CmpIPredicate::eq, d, e.idx(0)), [&]() {
            e.store(merge.lse(base2), lse, {s, h});
          });
          scf::YieldOp::create(b, loc);
        });
    gpu::ReturnOp::create(b, loc);
  }
  OpBuilder b(op);
  Value segs = memref::DimOp::create(b, op.getLoc(), op.getOuts()[0], 0);
  Value heads = memref::DimOp::create(b, op.getLoc(), op.getOuts()[0], 1);
  Value one = arith::ConstantIndexOp::create(b, op.getLoc(), 1);
  launch(b, op, func, {segs, heads, one}, threads);
  return success();
}

/// The `decode-kernel=auto` rule: the tensor-core decode for f16 / bf16
/// data with a head dim that is a multiple of 16 up to 256 and a GQA group
/// of 4 to 32 heads (on an H200, 2026-11-24, D = 128: 1.4-3.8x faster than
/// the CUDA-core kernel at groups 8 and 16, from 14% faster to 1% slower at
/// group 4, 5-10% slower for MHA: docs/PERFORMANCE.md), or of any group
/// whose head dim the CUDA-core kernel cannot split into a power of two of
/// 16-byte lanes (80, 96, 112, 192, ...), or over an fp8 cache (which only
/// the tensor-core decode reads).
bool autoTensorCoreDecode(Operation *op) {
  auto a = cast<AttentionOpInterface>(op);
  auto qt = cast<ShapedType>(a.getQ().getType());
  Type elem = qt.getElementType();
  int64_t d = a.getCache().getHeadDim();
  if ((!elem.isF16() && !elem.isBF16()) || d % 16 != 0 || d > 256 ||
      qt.isDynamicDim(1))
    return false;
  int64_t group = qt.getDimSize(1) / a.getCache().getNumKVHeads();
  bool laneFit = llvm::isPowerOf2_64(d / 8) && d / 8 <= 32;
  bool fp8 = isFP8CacheType(
      cast<ShapedType>(a.getKvCache()[0].getType()).getElementType());
  return group <= 32 && (group >= 4 || !laneFit || fp8);
}

struct ConvertPAToGPU final : pa::impl::ConvertPAToGPUBase<ConvertPAToGPU> {
  using Base::Base;

  PrefillShape prefillShape() const {
    PrefillMma mma = prefillMma == "wgmma"  ? PrefillMma::Wgmma
                     : prefillMma == "auto" ? PrefillMma::Auto
                                            : PrefillMma::Sync;
    return PrefillShape{prefillWarps,   prefillTileKV, prefillWarpRows,
                        prefillKVWarps, 0,             mma};
  }
  /// Whether a decode op gets the tensor-core kernel: asked for, or with
  /// `auto` (the default) where it is measured to win or the only one that
  /// can (autoTensorCoreDecode).
  bool tensorCoreDecode(Operation *op) const {
    return decodeKernel == "tensor-core" ||
           (decodeKernel == "auto" && autoTensorCoreDecode(op));
  }
  /// The shape of `op`'s tile kernel, if it has one.
  std::optional<PrefillShape> tileShape(Operation *op) const {
    if (isa<PrefillOp, PrefillPartialOp>(op))
      return prefillShape();
    if (isa<DecodeOp, DecodePartialOp>(op) && tensorCoreDecode(op))
      return PrefillShape{0, decodeTileKV, 0, 0, decodeKVStages};
    return std::nullopt;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Preconditions, before any IR changes: every pa op is one this pass
    // lowers, in the memref form.
    if (decodeKernel != "cuda-core" && decodeKernel != "tensor-core" &&
        decodeKernel != "auto") {
      module.emitError() << "convert-pa-to-gpu: decode-kernel must be "
                            "auto, cuda-core or tensor-core, got '"
                         << decodeKernel << "'";
      return signalPassFailure();
    }
    if (prefillMma != "mma.sync" && prefillMma != "wgmma" &&
        prefillMma != "auto") {
      module.emitError() << "convert-pa-to-gpu: prefill-mma must be mma.sync, "
                            "wgmma or auto, got '"
                         << prefillMma << "'";
      return signalPassFailure();
    }
    if (splitKVMerge != "fused" && splitKVMerge != "separate") {
      module.emitError() << "convert-pa-to-gpu: split-kv-merge must be "
                            "fused or separate, got '"
                         << splitKVMerge << "'";
      return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    WalkResult walk = module.walk([&](Operation *op) {
      if (!isa_and_present<PADialect>(op->getDialect()))
        return WalkResult::advance();
      if (!isa<DecodeOp, DecodePartialOp, MergeSegmentsOp, PrefillOp,
               PrefillPartialOp, AppendKVSlotsOp, AppendKVOp, ScatterKVOp,
               MergeOp, MergeStatesOp, KVDeviationOp, SelectTopKOp,
               PackMaskOp, PlanSplitKVOp, MLADecodeOp>(op)) {
        op->emitOpError()
            << "is not supported on the GPU yet: convert-pa-to-gpu lowers "
               "pa.decode, pa.decode_partial, pa.merge_segments, pa.prefill, "
               "pa.prefill_partial, pa.append_kv_slots, pa.append_kv, "
               "pa.scatter_kv, pa.merge, pa.merge_states, pa.kv_deviation, "
               "pa.select_topk, pa.pack_mask, pa.plan_split_kv and "
               "pa.mla_decode (use pa-lower-to-cpu for the other ops)";
        return WalkResult::interrupt();
      }
      if (!hasMemRefSemantics(op)) {
        op->emitOpError() << "convert-pa-to-gpu expects the memref form; run "
                             "one-shot-bufferize first";
        return WalkResult::interrupt();
      }
      std::optional<PrefillShape> s = tileShape(op);
      if (auto a = dyn_cast<AttentionOpInterface>(op);
          a && !s &&
          isFP8CacheType(cast<ShapedType>(a.getKvCache()[0].getType())
                             .getElementType())) {
        op->emitOpError()
            << "the CUDA-core decode has no FP8 KV cache path: FP8 caches "
               "run on the tensor-core decode (decode-kernel=auto or "
               "tensor-core, f16 / bf16 queries, a head dim that is a "
               "multiple of 16 up to 256, GQA groups up to 32)";
        return WalkResult::interrupt();
      }
      if (s && failed(checkTileKernel(op, *s)))
        return WalkResult::interrupt();
      if (auto m = dyn_cast<MLADecodeOp>(op);
          m && failed(checkMLAKernel(m, mlaRowBlocks, mlaWarpBlocks)))
        return WalkResult::interrupt();
      ops.push_back(op);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    if (ops.empty())
      return;
    // split-kv-merge=fused: each decode_partial and the merge_segments of
    // its states become one kernel (SplitKVMerge.cpp).
    DenseMap<Operation *, MergeSegmentsOp> fuseWith;
    DenseSet<Operation *> fused;
    if (splitKVMerge == "fused")
      for (Operation *op : ops)
        if (auto d = dyn_cast<DecodePartialOp>(op))
          if (MergeSegmentsOp m = fusableMerge(d)) {
            fuseWith[op] = m;
            fused.insert(m);
          }
    ShapeOptions shape{ctaThreads, tokensInFlight, laneBytes, headsPerCTA};
    gpu::GPUModuleOp kmod = getKernelModule(module);
    for (Operation *op : ops) {
      if (fused.contains(op))
        continue; // built with its decode_partial
      std::optional<PrefillShape> tiled = tileShape(op);
      LogicalResult r =
          TypeSwitch<Operation *, LogicalResult>(op)
              .Case([&](DecodeOp d) {
                return tiled ? buildTileKernel(d, kmod, "pa_decode", *tiled)
                             : tileAttention(d, kmod, "pa_decode", shape);
              })
              .Case([&](DecodePartialOp d) {
                MergeSegmentsOp merge = fuseWith.lookup(op);
                StringRef name =
                    merge ? "pa_decode_split" : "pa_decode_partial";
                return tiled ? buildTileKernel(d, kmod, name, *tiled, merge)
                             : tileAttention(d, kmod, name, shape, merge);
              })
              .Case([&](PrefillOp p) {
                return buildTileKernel(p, kmod, "pa_prefill", *tiled);
              })
              .Case([&](PrefillPartialOp p) {
                return buildTileKernel(p, kmod, "pa_prefill_partial", *tiled);
              })
              .Case([&](MergeSegmentsOp d) {
                return tileMergeSegments(d, kmod, "pa_merge_segments",
                                         ctaThreads);
              })
              .Case([&](AppendKVSlotsOp a) {
                return buildAppendKVSlots(a, kmod, "pa_append_kv_slots",
                                          ctaThreads);
              })
              .Case([&](AppendKVOp a) {
                return buildAppendKV(a, kmod, "pa_append_kv", ctaThreads);
              })
              .Case([&](ScatterKVOp a) {
                return buildScatterKV(a, kmod, "pa_scatter_kv", ctaThreads);
              })
              .Case([&](KVDeviationOp d) {
                return buildKVDeviation(d, kmod, "pa_kv_deviation");
              })
              .Case([&](SelectTopKOp t) {
                return buildSelectTopK(t, kmod, "pa_select_topk");
              })
              .Case([&](PackMaskOp p) {
                return buildPackMask(p, kmod, "pa_pack_mask", ctaThreads);
              })
              .Case([&](PlanSplitKVOp p) {
                return buildPlanSplitKV(p, kmod, "pa_plan_split_kv",
                                        ctaThreads);
              })
              .Case([&](MergeOp m) {
                return buildMerge(m, kmod, "pa_merge", ctaThreads);
              })
              .Case([&](MergeStatesOp m) {
                return buildMergeStates(m, kmod, "pa_merge_states",
                                        ctaThreads);
              })
              .Case([&](MLADecodeOp m) {
                return buildMLADecode(m, kmod, "pa_mla_decode", mlaRowBlocks,
                                      mlaWarpBlocks);
              });
      if (failed(r))
        return signalPassFailure();
    }
  }
};
} // namespace

gpu::GPUModuleOp gpukernel::getKernelModule(ModuleOp module) {
  if (auto m = module.lookupSymbol<gpu::GPUModuleOp>("pa_kernels"))
    return m;
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(module.getContext()));
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  return gpu::GPUModuleOp::create(b, module.getLoc(), "pa_kernels");
}

FailureOr<gpu::GPUFuncOp>
gpukernel::createSegmentKernel(Operation *op, gpu::GPUModuleOp kmod,
                               StringRef name, StringRef kind,
                               int64_t threads, IRMapping &mapping) {
  for (Value v : op->getOperands())
    if (!isIdentityMemRef(v.getType()))
      return op->emitOpError()
             << "convert-pa-to-gpu expects identity-layout memrefs";
  if (threads % 32 != 0 || threads <= 0)
    return op->emitOpError()
           << "cta-threads must be a positive multiple of 32";
  MLIRContext *ctx = op->getContext();
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto counter = MemRefType::get({1}, IntegerType::get(ctx, 32),
                                 MemRefLayoutAttrInterface(), wg);
  KernelABI abi;
  abi.kind = kind.str();
  abi.args = argRoles(op);
  abi.grid = {GridExtentABI{"batch"}, GridExtentABI{"", 1},
              GridExtentABI{"", 1}};
  abi.block = {threads, 1, 1};
  return createKernel(kmod, op, name, TypeRange{counter}, abi, mapping);
}

gpu::GPUFuncOp gpukernel::createKernel(gpu::GPUModuleOp kmod, Operation *op,
                                       StringRef name, TypeRange smem,
                                       const KernelABI &abi,
                                       IRMapping &mapping, ValueRange extra) {
  OpBuilder b(kmod.getBodyRegion());
  b.setInsertionPointToEnd(kmod.getBody());
  SmallVector<Value> args(op->getOperands());
  args.append(extra.begin(), extra.end());
  auto type =
      FunctionType::get(op->getContext(), ValueRange(args).getTypes(), {});
  auto func = gpu::GPUFuncOp::create(b, op->getLoc(), name, type, smem);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func->setAttr(kKernelABIAttrName, encodeKernelABI(op->getContext(), abi));
  SymbolTable(kmod).insert(func);
  for (auto [v, arg] : llvm::zip(args, func.getArguments()))
    mapping.map(v, arg);
  return func;
}

void gpukernel::launch(OpBuilder &b, Operation *op, gpu::GPUFuncOp func,
                       std::array<Value, 3> grid, int64_t threads,
                       int64_t dynamicSmem, ValueRange extra) {
  Location loc = op->getLoc();
  SmallVector<Value> args(op->getOperands());
  args.append(extra.begin(), extra.end());
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value nt = arith::ConstantIndexOp::create(b, loc, threads);
  gpu::LaunchFuncOp::create(b, loc, func, {grid[0], grid[1], grid[2]},
                            {nt, one, one},
                            dynamicSmem > 0 ? Value(arith::ConstantOp::create(
                                                  b, loc, b.getI32IntegerAttr(dynamicSmem)))
                                            : Value(),
                            args);
  op->erase();
}

void gpukernel::setSharedMemory(gpu::GPUFuncOp func, int64_t bytes) {
  FailureOr<KernelABI> abi = decodeKernelABI(func);
  abi->smem = bytes;
  func->setAttr(kKernelABIAttrName, encodeKernelABI(func.getContext(), *abi));
  auto kmod = func->getParentOfType<gpu::GPUModuleOp>();
  auto module = kmod->getParentOfType<ModuleOp>();
  module.walk([&](gpu::LaunchFuncOp launch) {
    if (launch.getKernelModuleName() != kmod.getName() ||
        launch.getKernelName() != func.getName())
      return;
    OpBuilder b(launch);
    Value size = arith::ConstantOp::create(b, launch.getLoc(),
                                           b.getI32IntegerAttr(bytes));
    launch.getDynamicSharedMemorySizeMutable().assign(size);
  });
}

SmallVector<std::string> gpukernel::argRoles(Operation *op) {
  SmallVector<std::string> roles;
  auto add = [&](std::initializer_list<const char *> names) {
    roles.append(names.begin(), names.end());
  };
  if (auto a = dyn_cast<AttentionOpInterface>(op);
      a && !isa<PrefillOp, PrefillPartialOp>(op)) {
    bool partial = isa<DecodePartialOp>(op);
    add({"q"});
    if (a.getKvCache().size() == 1)
      add({"kv"});
    else
      add({"k", "v"});
    if (a.getKScale())
      add({"k_scale", "v_scale"});
    add({"kv_indptr", "kv_indices", "kv_last_page_len"});
    if (partial)
      add({"work_indptr", "work_request", "work_start", "work_end"});
    if (a.getAlibiSlopes())
      add({"alibi_slopes"});
    if (partial)
      add({"o_part", "lse_part"});
    else
      add({"o", "lse"});
  } else if (isa<PrefillOp, PrefillPartialOp>(op)) {
    PrefillOperands p(op);
    add({"q", "qo_indptr"});
    if (p.kvCache.size() == 1)
      add({"kv"});
    else
      add({"k", "v"});
    if (cast<AttentionOpInterface>(op).getKScale())
      add({"k_scale", "v_scale"});
    add({"kv_indptr", "kv_indices", "kv_last_page_len"});
    if (isa<PrefillPartialOp>(op))
      roles.append(std::begin(PrefillPartialOp::kWorkListNames),
                   std::end(PrefillPartialOp::kWorkListNames));
    if (p.qPositions)
      add({"q_positions"});
    if (p.customMask)
      add({"custom_mask", "mask_indptr"});
    if (p.alibiSlopes)
      add({"alibi_slopes"});
    if (isa<PrefillPartialOp>(op))
      add({"o_part", "lse_part"});
    else
      add({"o", "lse"});
  } else if (isa<MergeSegmentsOp>(op)) {
    add({"o_part", "lse_part", "work_indptr", "o", "lse"});
  } else if (auto a = dyn_cast<AppendKVSlotsOp>(op)) {
    add({"k_new", "v_new", "slot_mapping"});
    if (a.getKScale())
      add({"k_scale", "v_scale"});
    if (a.getOuts().size() == 1)
      add({"kv"});
    else
      add({"k", "v"});
  } else if (isa<AppendKVOp, ScatterKVOp>(op)) {
    auto scatter = dyn_cast<ScatterKVOp>(op);
    Value kScale =
        scatter ? scatter.getKScale() : cast<AppendKVOp>(op).getKScale();
    add({"k_new", "v_new"});
    if (scatter)
      add({"rows_indptr", "positions"});
    else
      add({"append_indptr"});
    add({"kv_indptr", "kv_indices", "kv_last_page_len"});
    if (kScale)
      add({"k_scale", "v_scale"});
    if (cast<DestinationStyleOpInterface>(op).getNumDpsInits() == 1)
      add({"kv"});
    else
      add({"k", "v"});
  } else if (isa<PackMaskOp>(op)) {
    add({"mask", "mask_segments", "custom_mask", "mask_indptr"});
  } else if (isa<PlanSplitKVOp>(op)) {
    add({"kv_indptr", "kv_last_page_len", "work_indptr", "work_request",
         "work_start", "work_end"});
  } else if (isa<KVDeviationOp>(op)) {
    add({"new_rows", "cached_rows", "deviation"});
  } else if (isa<SelectTopKOp>(op)) {
    add({"deviation", "dev_indptr", "positions", "out_indptr"});
  } else if (auto m = dyn_cast<MergeOp>(op)) {
    for (int64_t i = 0; i < m.getNumStates(); ++i) {
      roles.push_back("o_" + std::to_string(i));
      roles.push_back("lse_" + std::to_string(i));
    }
    add({"o", "lse"});
  } else if (isa<MergeStatesOp>(op)) {
    add({"o_states", "lse_states", "o", "lse"});
  } else if (isa<MLADecodeOp>(op)) {
    add({"q_nope", "q_pe", "ckv_kpe", "kv_indptr", "kv_indices",
         "kv_last_page_len", "o", "lse"});
  }
  assert(roles.size() == op->getNumOperands() && "a role per operand");
  return roles;
}

SmallVector<std::string> gpukernel::fusedArgRoles(DecodePartialOp op) {
  SmallVector<std::string> roles = argRoles(op);
  roles.append({"o", "lse", "merge_counters"});
  return roles;
}

FusedMerge gpukernel::mapFusedMerge(DecodePartialOp op, ValueRange extra,
                                    const IRMapping &m) {
  FusedMerge f;
  f.oPart = m.lookup(op.getOuts()[0]);
  f.lsePart = m.lookup(op.getOuts()[1]);
  f.workIndptr = m.lookup(op.getWorkIndptr());
  f.workRequest = m.lookup(op.getWorkRequest());
  f.o = m.lookup(extra[0]);
  f.lse = m.lookup(extra[1]);
  f.counters = m.lookup(extra[2]);
  f.lseBase2 = op.getLseBase2();
  return f;
}

