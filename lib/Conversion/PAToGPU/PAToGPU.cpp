//===- PAToGPU.cpp - tile decode / decode_partial / merge_segments to GPU --===//
//
// Kernel shape of the attention ops (see the pass description):
//
//   CTA (item, kv head hk)            item = request (decode) or work item
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

#include "../PAToLoops/LoopUtils.h"
#include "PagedAttn/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
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
using loops::Emitter;

namespace {

constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;

/// Extra builders for kernel code.
struct KernelEmitter : Emitter {
  Value inlinePtx(StringRef text, Value x) {
    MLIRContext *ctx = b.getContext();
    return LLVM::InlineAsmOp::create(
               b, loc, b.getF32Type(), ValueRange{x},
               StringAttr::get(ctx, text), StringAttr::get(ctx, "=f,f"),
               /*has_side_effects=*/UnitAttr(), /*is_align_stack=*/UnitAttr(),
               LLVM::TailCallKindAttr::get(ctx, LLVM::TailCallKind::None),
               LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
               /*operand_attrs=*/ArrayAttr())
        .getResult(0);
  }
  /// 2^x with the special-function unit (ex2.approx; ex2(-inf) = 0).
  Value ex2(Value x) { return inlinePtx("ex2.approx.ftz.f32 $0, $1;", x); }
  /// log2(x) (lg2.approx).
  Value lg2(Value x) { return inlinePtx("lg2.approx.ftz.f32 $0, $1;", x); }
  /// tanh(x) = 1 - 2 / (2^(2 x log2 e) + 1).
  Value tanh(Value x) {
    Value e2 = ex2(mul(x, f32(2.0 * kLog2e)));
    return sub(f32(1), divf(f32(2), add(e2, f32(1))));
  }
  Value splat(Value x, VectorType t) {
    return vector::BroadcastOp::create(b, loc, t, x);
  }
  /// <x, y> over `n` lanes of two f32 vectors as a chain of fused
  /// multiply-adds (fma.rn.f32; a mul + add pair would not fuse).
  Value dot(Value x, Value y, int64_t n) {
    Value acc;
    for (int64_t i = 0; i < n; ++i) {
      Value xi = vector::ExtractOp::create(b, loc, x, i);
      Value yi = vector::ExtractOp::create(b, loc, y, i);
      acc = acc ? math::FmaOp::create(b, loc, xi, yi, acc).getResult()
                : mul(xi, yi);
    }
    return acc;
  }
};

/// Static facts a kernel specializes on, checked before any IR changes.
struct Config {
  Type elem;
  int64_t vec = 0, headDim = 0, lanes = 0, groups = 0, threads = 0;
  int64_t group = 0, numKVHeads = 0, pageSize = 0, unroll = 1;
};

bool isIdentityMemRef(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  return m && m.getLayout().isIdentity();
}

/// Checks the operands of an attention op and fills `cfg`.
template <typename OpTy>
LogicalResult makeConfig(OpTy op, int64_t threads, int64_t unroll,
                         int64_t laneBytes, Config &cfg) {
  for (Value v : op->getOperands())
    if (!isIdentityMemRef(v.getType()))
      return op.emitOpError()
             << "convert-pa-to-gpu expects identity-layout memrefs";
  auto qt = cast<MemRefType>(op.getQ().getType());
  PagedKVAttr cache = op.getCache();
  if (qt.isDynamicDim(1) || qt.isDynamicDim(2))
    return op.emitOpError()
           << "convert-pa-to-gpu needs static query heads and head dim";
  cfg.elem = qt.getElementType();
  if (laneBytes != 16 && laneBytes != 32)
    return op.emitOpError() << "lane-bytes must be 16 or 32";
  cfg.vec = laneBytes / (cfg.elem.getIntOrFloatBitWidth() / 8);
  cfg.headDim = cache.getHeadDim();
  cfg.numKVHeads = cache.getNumKVHeads();
  cfg.pageSize = cache.getPageSize();
  cfg.group = qt.getDimSize(1) / cfg.numKVHeads;
  cfg.threads = threads;
  cfg.unroll = unroll;
  if (cfg.headDim % cfg.vec != 0)
    return op.emitOpError() << "head dim must be a multiple of " << cfg.vec
                            << " (" << laneBytes << "-byte lanes)";
  cfg.lanes = cfg.headDim / cfg.vec;
  if (!llvm::isPowerOf2_64(cfg.lanes) || cfg.lanes > 32)
    return op.emitOpError() << "head dim / " << cfg.vec
                            << " must be a power of two <= 32, got "
                            << cfg.lanes;
  if (threads % 32 != 0 || threads <= 0 || unroll <= 0)
    return op.emitOpError() << "threads must be a multiple of 32 and unroll > 0";
  cfg.groups = threads / cfg.lanes;
  // Workgroup memory of the cross-group merge: (m, l) and acc per group and
  // head; static shared memory is limited to 48 KiB per CTA.
  int64_t smemBytes = 4 * cfg.groups * cfg.group * (2 + cfg.headDim);
  if (smemBytes > 48 * 1024)
    return op.emitOpError()
           << "the cross-group merge needs " << smemBytes
           << " bytes of shared memory (" << cfg.groups << " lane groups x "
           << cfg.group << " heads), more than 48 KiB: use fewer threads or "
              "16-byte lanes (fewer lane groups)";
  return success();
}

/// Returns (or creates) `gpu.module @pa_kernels` in `module`.
gpu::GPUModuleOp getKernelModule(ModuleOp module) {
  if (auto m = module.lookupSymbol<gpu::GPUModuleOp>("pa_kernels"))
    return m;
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(module.getContext()));
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  return gpu::GPUModuleOp::create(b, module.getLoc(), "pa_kernels");
}

/// A kernel `name` taking `op`'s operands, with workgroup buffers `smem`;
/// `mapping` maps the operands to the kernel's arguments.
gpu::GPUFuncOp createKernel(gpu::GPUModuleOp kmod, Operation *op,
                            StringRef name, TypeRange smem,
                            IRMapping &mapping) {
  OpBuilder b(kmod.getBodyRegion());
  b.setInsertionPointToEnd(kmod.getBody());
  auto type = FunctionType::get(op->getContext(), op->getOperandTypes(), {});
  auto func = gpu::GPUFuncOp::create(b, op->getLoc(), name, type, smem);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  SymbolTable(kmod).insert(func);
  for (auto [v, arg] : llvm::zip(op->getOperands(), func.getArguments()))
    mapping.map(v, arg);
  return func;
}

/// Replaces `op` by a launch of `func` over `grid` CTAs of `threads`.
void launch(OpBuilder &b, Operation *op, gpu::GPUFuncOp func,
            std::array<Value, 3> grid, int64_t threads) {
  Location loc = op->getLoc();
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value nt = arith::ConstantIndexOp::create(b, loc, threads);
  gpu::LaunchFuncOp::create(b, loc, func, {grid[0], grid[1], grid[2]},
                            {nt, one, one}, /*dynamicSharedMemorySize=*/Value(),
                            op->getOperands());
  op->erase();
}

/// Operands of an attention kernel, already mapped into the kernel.
struct AttnArgs {
  Value q, k, v, indptr, indices, last, alibi, o, lse;
  bool joint = false;
  KVLayout layout = KVLayout::NHD;
  Value wIndptr, wRequest, wStart, wEnd; // decode_partial only
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

  auto body = [&](Value request, Value start, Value end) {
    Value ip0 = e.loadIdx(a.indptr, request);
    Value ip1 = e.loadIdx(a.indptr, e.add(request, e.idx(1)));
    Value np = e.sub(ip1, ip0);
    Value full = e.mul(e.sub(np, e.idx(1)), e.idx(c.pageSize));
    Value kvLenFull = e.add(full, e.loadIdx(a.last, request));
    Value kvLen = e.select(e.cmpi(arith::CmpIPredicate::sgt, np, e.idx(0)),
                           kvLenFull, e.idx(0));
    if (!end)
      end = kvLen;
    Value pos = e.sub(kvLen, e.idx(1));
    bool natural = a.softCap || a.alibi;
    double scale = a.smScale.value_or(1.0 / std::sqrt((double)c.headDim));
    Value qScale = e.splat(e.f32(natural ? scale : scale * kLog2e), vecF32);
    SmallVector<Value> qv, heads;
    for (int64_t j = 0; j < c.group; ++j) {
      Value h = e.add(e.mul(hk, e.idx(c.group)), e.idx(j));
      heads.push_back(h);
      Value raw = vector::LoadOp::create(b, loc, vecElem, a.q,
                                         ValueRange{request, h, d0}, false,
                                         llvm::MaybeAlign(16));
      Value wide = c.elem.isF32()
                       ? raw
                       : arith::ExtFOp::create(b, loc, vecF32, raw).getResult();
      qv.push_back(e.mul(wide, qScale));
    }
    // Loop state: m[g], l[g], acc[g].
    SmallVector<Value> init;
    for (int64_t j = 0; j < c.group; ++j)
      init.push_back(e.negInf());
    for (int64_t j = 0; j < c.group; ++j)
      init.push_back(e.f32(0));
    Value zeroVec = e.splat(e.f32(0), vecF32);
    for (int64_t j = 0; j < c.group; ++j)
      init.push_back(zeroVec);
    Value step = e.idx(c.groups * c.unroll);
    // Token u of the block starting at t0, whether it is visible, and the
    // (clamped, always in-bounds) token to load.
    auto token = [&](Value t0, int64_t u) {
      Value t = e.add(t0, e.add(e.idx(u * c.groups), grp));
      Value valid = e.cmpi(arith::CmpIPredicate::slt, t, end);
      if (a.window)
        valid = e.andi(valid, e.cmpi(arith::CmpIPredicate::sgt,
                                     e.add(t, e.idx(*a.window)), pos));
      return std::make_tuple(t, valid, e.select(valid, t, start));
    };
    // Issues the page lookups and K/V loads of a block of U tokens.
    auto loadBlock = [&](Value t0) {
      SmallVector<Value> loaded;
      for (int64_t u = 0; u < c.unroll; ++u) {
        auto [t, valid, tc] = token(t0, u);
        (void)t;
        (void)valid;
        Value page =
            e.loadIdx(a.indices, e.add(ip0, e.divui(tc, e.idx(c.pageSize))));
        Value slot = e.remui(tc, e.idx(c.pageSize));
        auto rowIdx = [&](bool isV) {
          SmallVector<Value> idx{page};
          if (a.joint)
            idx.push_back(e.idx(isV ? 1 : 0));
          if (a.layout == KVLayout::NHD)
            idx.append({slot, hk, d0});
          else
            idx.append({hk, slot, d0});
          return idx;
        };
        loaded.push_back(vector::LoadOp::create(b, loc, vecElem, a.k,
                                                rowIdx(false), false,
                                                llvm::MaybeAlign(16)));
        loaded.push_back(vector::LoadOp::create(b, loc, vecElem, a.v,
                                                rowIdx(true), false,
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
    int64_t nState = 3 * c.group;
    auto loop = scf::ForOp::create(
        b, loc, start, end, step, init,
        [&](OpBuilder &, Location, Value t0, ValueRange st) {
          SmallVector<Value> m(st.begin(), st.begin() + c.group);
          SmallVector<Value> l(st.begin() + c.group,
                               st.begin() + 2 * c.group);
          SmallVector<Value> acc(st.begin() + 2 * c.group,
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
          for (int64_t j = 0; j < c.group; ++j) {
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
              accj = math::FmaOp::create(b, loc, e.splat(p, vecF32), vf[u],
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
    int64_t ng = c.groups * c.group;
    for (int64_t j = 0; j < c.group; ++j) {
      Value slotIdx = e.add(e.mul(grp, e.idx(c.group)), e.idx(j));
      Value accOff = e.add(e.mul(slotIdx, e.idx(c.headDim)), d0);
      vector::StoreOp::create(b, loc, loop.getResult(2 * c.group + j), smemAcc,
                              ValueRange{accOff}, /*nontemporal=*/false,
                              llvm::MaybeAlign(16));
      e.ifThen(isLane0, [&]() {
        e.store(loop.getResult(j), smemML, {slotIdx});
        e.store(loop.getResult(c.group + j), smemML,
                {e.add(slotIdx, e.idx(ng))});
      });
    }
    gpu::BarrierOp::create(b, loc);
    // Merge the groups' states: thread idx handles (head j, dim d).
    Value row = a.wIndptr ? item : request;
    Type oElem = cast<MemRefType>(a.o.getType()).getElementType();
    scf::ForOp::create(
        b, loc, tid, e.idx(c.group * c.headDim), e.idx(c.threads),
        ValueRange{}, [&](OpBuilder &, Location, Value idx, ValueRange) {
          Value j = e.divui(idx, e.idx(c.headDim));
          Value d = e.remui(idx, e.idx(c.headDim));
          Value mMax =
              e.forLoop(e.idx(0), e.idx(c.groups), {e.negInf()},
                        [&](Value g, ValueRange r) {
                          Value mg = e.load(
                              smemML, {e.add(e.mul(g, e.idx(c.group)), j)});
                          return SmallVector<Value>{e.maxf(r[0], mg)};
                        })
                  .getResult(0);
          Value mSafe =
              e.select(e.cmpf(arith::CmpFPredicate::OEQ, mMax, e.negInf()),
                       e.f32(0), mMax);
          auto sums = e.forLoop(
              e.idx(0), e.idx(c.groups), {e.f32(0), e.f32(0)},
              [&](Value g, ValueRange r) {
                Value slotIdx = e.add(e.mul(g, e.idx(c.group)), j);
                Value w = e.ex2(e.sub(e.load(smemML, {slotIdx}), mSafe));
                Value lg = e.load(smemML, {e.add(slotIdx, e.idx(ng))});
                Value og = e.load(
                    smemAcc, {e.add(e.mul(slotIdx, e.idx(c.headDim)), d)});
                return SmallVector<Value>{e.add(r[0], e.mul(w, lg)),
                                          e.add(r[1], e.mul(w, og))};
              });
          Value lsum = sums.getResult(0), osum = sums.getResult(1);
          Value nonEmpty = e.cmpf(arith::CmpFPredicate::OGT, lsum, e.f32(0));
          Value o = e.select(nonEmpty, e.divf(osum, lsum), e.f32(0));
          Value h = e.add(e.mul(hk, e.idx(c.group)), j);
          e.store(e.fromF32(o, oElem), a.o, {row, h, d});
          e.ifThen(e.cmpi(arith::CmpIPredicate::eq, d, e.idx(0)), [&]() {
            Value lse2 = e.add(mMax, e.lg2(lsum));
            Value lse = a.lseBase2 ? lse2 : e.mul(lse2, e.f32(kLn2));
            e.store(e.select(nonEmpty, lse, e.negInf()), a.lse, {row, h});
          });
          scf::YieldOp::create(b, loc);
        });
  };

  if (!a.wIndptr) {
    body(item, e.idx(0), Value());
    return;
  }
  Value batch = e.sub(e.dim(a.wIndptr, 0), e.idx(1));
  Value items = e.loadIdx(a.wIndptr, batch);
  e.ifThen(e.cmpi(arith::CmpIPredicate::slt, item, items), [&]() {
    body(e.loadIdx(a.wRequest, item), e.loadIdx(a.wStart, item),
         e.loadIdx(a.wEnd, item));
  });
}

template <typename OpTy>
AttnArgs mapAttnArgs(OpTy op, IRMapping &m) {
  AttnArgs a;
  a.q = m.lookup(op.getQ());
  a.joint = op.getKvCache().size() == 1;
  a.k = m.lookup(op.getKvCache()[0]);
  a.v = a.joint ? a.k : m.lookup(op.getKvCache()[1]);
  a.layout = op.getCache().getLayout();
  a.indptr = m.lookup(op.getKvIndptr());
  a.indices = m.lookup(op.getKvIndices());
  a.last = m.lookup(op.getKvLastPageLen());
  if (op.getAlibiSlopes())
    a.alibi = m.lookup(op.getAlibiSlopes());
  a.o = m.lookup(op.getOuts()[0]);
  a.lse = m.lookup(op.getOuts()[1]);
  if (auto s = op.getSmScale())
    a.smScale = s->convertToDouble();
  if (auto s = op.getLogitsSoftCap())
    a.softCap = s->convertToDouble();
  if (auto w = op.getWindow())
    a.window = static_cast<int64_t>(*w);
  a.lseBase2 = op.getLseBase2();
  return a;
}

/// Builds the kernel of a decode / decode_partial op and launches it.
template <typename OpTy>
LogicalResult tileAttention(OpTy op, gpu::GPUModuleOp kmod, StringRef name,
                            int64_t threads, int64_t unroll,
                            int64_t laneBytes) {
  Config c;
  if (failed(makeConfig(op, threads, unroll, laneBytes, c)))
    return failure();
  MLIRContext *ctx = op.getContext();
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Type f32 = Float32Type::get(ctx);
  int64_t slots = c.groups * c.group;
  auto smemML = MemRefType::get({2 * slots}, f32, MemRefLayoutAttrInterface(),
                                wg);
  auto smemAcc = MemRefType::get({slots * c.headDim}, f32,
                                 MemRefLayoutAttrInterface(), wg);
  IRMapping m;
  gpu::GPUFuncOp func =
      createKernel(kmod, op, name, TypeRange{smemML, smemAcc}, m);
  AttnArgs a = mapAttnArgs(op, m);
  if constexpr (std::is_same_v<OpTy, DecodePartialOp>) {
    a.wIndptr = m.lookup(op.getWorkIndptr());
    a.wRequest = m.lookup(op.getWorkRequest());
    a.wStart = m.lookup(op.getWorkStart());
    a.wEnd = m.lookup(op.getWorkEnd());
  }
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, op.getLoc()}};
    emitAttentionBody(e, c, a, func.getWorkgroupAttributions()[0],
                      func.getWorkgroupAttributions()[1]);
    gpu::ReturnOp::create(b, op.getLoc());
  }
  OpBuilder b(op);
  Value items = memref::DimOp::create(b, op.getLoc(), op.getOuts()[0], 0);
  Value hkv = arith::ConstantIndexOp::create(b, op.getLoc(), c.numKVHeads);
  Value one = arith::ConstantIndexOp::create(b, op.getLoc(), 1);
  launch(b, op, func, {items, hkv, one}, threads);
  return success();
}

/// merge_segments: a CTA per (segment, head); threads walk the head dim.
LogicalResult tileMergeSegments(MergeSegmentsOp op, gpu::GPUModuleOp kmod,
                                StringRef name, int64_t threads) {
  for (Value v : op->getOperands())
    if (!isIdentityMemRef(v.getType()))
      return op.emitOpError()
             << "convert-pa-to-gpu expects identity-layout memrefs";
  IRMapping m;
  gpu::GPUFuncOp func = createKernel(kmod, op, name, TypeRange{}, m);
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
          Value mMax = e.forLoop(begin, end, {e.negInf()}, [&](Value i,
                                                               ValueRange r) {
                          return SmallVector<Value>{e.maxf(
                              r[0], e.mul(e.load(lp, {i, h}), toLog2))};
                        }).getResult(0);
          Value mSafe =
              e.select(e.cmpf(arith::CmpFPredicate::OEQ, mMax, e.negInf()),
                       e.f32(0), mMax);
          auto sums = e.forLoop(
              begin, end, {e.f32(0), e.f32(0)}, [&](Value i, ValueRange r) {
                Value w = e.ex2(e.sub(e.mul(e.load(lp, {i, h}), toLog2), mSafe));
                Value ov = e.toF32(e.load(op_, {i, h, d}));
                // Zero-weight states never reach the result.
                Value contrib = e.select(
                    e.cmpf(arith::CmpFPredicate::OGT, w, e.f32(0)),
                    e.mul(w, ov), e.f32(0));
                return SmallVector<Value>{e.add(r[0], w),
                                          e.add(r[1], contrib)};
              });
          Value lsum = sums.getResult(0), osum = sums.getResult(1);
          Value nonEmpty = e.cmpf(arith::CmpFPredicate::OGT, lsum, e.f32(0));
          e.store(e.fromF32(e.select(nonEmpty, e.divf(osum, lsum), e.f32(0)),
                            oElem),
                  o, {s, h, d});
          e.ifThen(e.cmpi(arith::CmpIPredicate::eq, d, e.idx(0)), [&]() {
            Value lse2 = e.add(mMax, e.lg2(lsum));
            Value out = base2 ? lse2 : e.mul(lse2, e.f32(kLn2));
            e.store(e.select(nonEmpty, out, e.negInf()), lse, {s, h});
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

struct ConvertPAToGPU final : pa::impl::ConvertPAToGPUBase<ConvertPAToGPU> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<DecodeOp, DecodePartialOp, MergeSegmentsOp>(op))
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    for (Operation *op : ops)
      if (!loops::hasMemRefSemantics(op)) {
        op->emitOpError() << "convert-pa-to-gpu expects the memref form; run "
                             "one-shot-bufferize first";
        return signalPassFailure();
      }
    gpu::GPUModuleOp kmod = getKernelModule(module);
    for (Operation *op : ops) {
      LogicalResult r =
          TypeSwitch<Operation *, LogicalResult>(op)
              .Case([&](DecodeOp d) {
                return tileAttention(d, kmod, "pa_decode", threads, unroll,
                                     laneBytes);
              })
              .Case([&](DecodePartialOp d) {
                return tileAttention(d, kmod, "pa_decode_partial", threads,
                                     unroll, laneBytes);
              })
              .Case([&](MergeSegmentsOp d) {
                return tileMergeSegments(d, kmod, "pa_merge_segments", threads);
              });
      if (failed(r))
        return signalPassFailure();
    }
  }
};
} // namespace
