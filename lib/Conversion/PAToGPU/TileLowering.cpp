//===- TileLowering.cpp - a tile state carried through control flow -------===//
//
// See TileLowering.h.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

bool gpukernel::holdsTileOps(Operation *op) {
  bool found = false;
  op->walk([&](Operation *inner) {
    if (inner != op &&
        isa<TileQKOp, TileMaskOp, TileSoftmaxUpdateOp, TilePVOp, TileStoreOp,
            TileInitStateOp, TileLoadQOp, TileGatherKVOp>(inner))
      found = true;
  });
  return found;
}

FailureOr<SharedTile> gpukernel::sharedTile(StringRef pass, Operation *op,
                                            Value v) {
  auto t = cast<MemRefType>(v.getType());
  if (!isa_and_present<gpu::AddressSpaceAttr>(t.getMemorySpace()) ||
      cast<gpu::AddressSpaceAttr>(t.getMemorySpace()).getValue() !=
          gpu::AddressSpace::Workgroup)
    return op->emitOpError()
           << pass
           << " reads Q, K and V from workgroup memory (run pa-promote-tiles "
              "first), got "
           << t;
  if (auto sv = v.getDefiningOp<memref::SubViewOp>()) {
    ArrayRef<int64_t> off = sv.getStaticOffsets();
    if (off.size() != 2 || ShapedType::isDynamic(off[0]) ||
        ShapedType::isDynamic(off[1]) ||
        !llvm::all_of(sv.getStaticStrides(),
                      [](int64_t s) { return s == 1; }) ||
        !cast<MemRefType>(sv.getSource().getType()).getLayout().isIdentity())
      return op->emitOpError() << pass
                               << " expects a unit-stride subview with static "
                                  "offsets of an identity-layout shared buffer";
    return SharedTile{sv.getSource(), off[0], off[1], t.getDimSize(0)};
  }
  if (!t.getLayout().isIdentity())
    return op->emitOpError()
           << pass << " expects an identity-layout shared buffer";
  return SharedTile{v, 0, 0, t.getDimSize(0)};
}

FailureOr<KernelTileOps> KernelTileOps::collect(Operation *func,
                                                StringRef pass) {
  KernelTileOps ops;
  SmallVector<TileInitStateOp> inits;
  SmallVector<TileStoreOp> stores;
  bool unpromoted = false;
  func->walk([&](Operation *op) {
    if (auto i = dyn_cast<TileInitStateOp>(op))
      inits.push_back(i);
    else if (auto q = dyn_cast<TileQKOp>(op))
      ops.qks.push_back(q);
    else if (auto mk = dyn_cast<TileMaskOp>(op))
      ops.masks.push_back(mk);
    else if (auto st = dyn_cast<TileStoreOp>(op))
      stores.push_back(st);
    else if (isa<TileLoadQOp, TileGatherKVOp>(op)) {
      op->emitOpError() << pass
                        << " runs after pa-promote-tiles, which replaces "
                           "this op";
      unpromoted = true;
    }
  });
  if (unpromoted)
    return failure();
  if (inits.size() != 1 || ops.qks.empty() || stores.size() != 1)
    return func->emitOpError()
           << pass
           << " expects one pa.tile.init_state, one pa.tile.store and at "
              "least one pa.tile.qk per kernel";
  ops.store = stores[0];
  ops.m = inits[0].getM();
  ops.l = inits[0].getL();
  ops.acc = inits[0].getAcc();
  ops.scores = ops.qks[0].getS();
  return ops;
}

LogicalResult KernelTileOps::checkUniformQKs(StringRef pass) const {
  TileQKOp first = qks.front();
  auto shape = [](Value v) { return cast<MemRefType>(v.getType()).getShape(); };
  for (TileQKOp other : qks)
    if (shape(other.getQ()) != shape(first.getQ()) ||
        shape(other.getK()) != shape(first.getK()) ||
        failed(sharedTile(pass, other, other.getK())) ||
        other.getScaleAttr() != first.getScaleAttr() ||
        other.getKScale() != first.getKScale() || other.getS() != scores)
      return other.emitOpError()
             << pass
             << " expects every pa.tile.qk of a kernel to share its shapes, "
                "scales and score buffer";
  return success();
}

TileRowPlace gpukernel::tileRowPlace(Emitter &e, Value r, int64_t group,
                                     Value row0, Value rows, Value kvHead,
                                     Value rowStride) {
  TileRowPlace p;
  Value qi = e.divui(r, e.idx(group));
  p.head = e.add(e.mul(kvHead, e.idx(group)), e.remui(r, e.idx(group)));
  p.valid = e.cmpi(arith::CmpIPredicate::ult, qi, rows);
  p.qi = e.select(p.valid, qi, e.idx(0));
  p.row = e.add(row0, rowStride ? e.mul(p.qi, rowStride) : p.qi);
  return p;
}

LogicalResult gpukernel::readMaskOptions(StringRef pass,
                                         ArrayRef<TileMaskOp> masks,
                                         int64_t group, Value scores,
                                         TileMaskOptions &o) {
  for (TileMaskOp mk : masks) {
    if (static_cast<int64_t>(mk.getGroup()) != group || mk.getS() != scores)
      return mk.emitOpError() << pass
                              << ": the mask's group and scores must be the "
                                 "store's and the qk's";
    if (auto sc = mk.getLogitsSoftCap())
      o.softCap = sc->convertToDouble();
    o.alibi = bool(mk.getAlibiSlopes());
    o.causal = mk.getCausal();
    o.customMask = bool(mk.getCustomMask());
    o.positions = bool(mk.getQPositions());
    if (auto w = mk.getWindow())
      o.window = static_cast<int64_t>(*w);
  }
  return success();
}

void gpukernel::eraseDeadTileBuffers(Operation *func,
                                     const KernelTileOps &ops) {
  for (Value v : {ops.m, ops.l, ops.acc, ops.scores})
    if (Operation *def = v.getDefiningOp(); def && def->use_empty())
      def->erase();
  SmallVector<memref::SubViewOp> views;
  func->walk([&](memref::SubViewOp sv) { views.push_back(sv); });
  for (memref::SubViewOp sv : views)
    if (sv->use_empty())
      sv.erase();
}

LogicalResult TileStateLowering::ensurePrelude(Operation *before) {
  if (prelude)
    return success();
  prelude = true;
  return emitPrelude(before);
}

LogicalResult TileStateLowering::lowerCarrying(Operation *op, Block &block,
                                               TileEnv &inner, size_t carried,
                                               StringRef what) {
  if (failed(lowerBlock(block, inner)))
    return failure();
  if (inner.state.size() != carried)
    return op->emitOpError()
           << pass << ": the tile state must be initialized outside the "
           << what << " it lives across";
  Operation *yield = block.getTerminator();
  yield->insertOperands(yield->getNumOperands(), inner.state);
  return success();
}

LogicalResult TileStateLowering::lowerFor(scf::ForOp op, TileEnv &env) {
  if (failed(ensurePrelude(op)))
    return failure();
  b.setInsertionPoint(op);
  SmallVector<Value> init(op.getInitArgs());
  size_t carried = env.state.size();
  init.append(env.state);
  auto loop = scf::ForOp::create(b, op.getLoc(), op.getLowerBound(),
                                 op.getUpperBound(), op.getStep(), init);
  Block *body = loop.getBody();
  if (!body->empty())
    body->getTerminator()->erase();
  Block *oldBody = op.getBody();
  size_t own = op.getNumRegionIterArgs();
  for (auto [i, arg] : llvm::enumerate(oldBody->getArguments()))
    arg.replaceAllUsesWith(body->getArgument(i));
  body->getOperations().splice(body->end(), oldBody->getOperations());
  TileEnv inner = env;
  inner.state.assign(body->getArguments().begin() + 1 + own,
                     body->getArguments().end());
  if (failed(lowerCarrying(op, *body, inner, carried, "loops")))
    return failure();
  for (auto [i, r] : llvm::enumerate(op.getResults()))
    r.replaceAllUsesWith(loop.getResult(i));
  env.state.assign(loop.getResults().begin() + own, loop.getResults().end());
  op.erase();
  return success();
}

LogicalResult TileStateLowering::lowerIf(scf::IfOp op, TileEnv &env) {
  b.setInsertionPoint(op);
  SmallVector<Type> types(op.getResultTypes());
  size_t own = types.size(), carried = env.state.size();
  for (Value v : env.state)
    types.push_back(v.getType());
  auto ifOp = scf::IfOp::create(b, op.getLoc(), types, op.getCondition(),
                                /*withElse=*/true);
  for (auto [from, to] :
       {std::pair{&op.getThenRegion(), &ifOp.getThenRegion()},
        std::pair{&op.getElseRegion(), &ifOp.getElseRegion()}}) {
    Block *dst = &to->front();
    if (!dst->empty())
      dst->getTerminator()->erase();
    TileEnv inner = env;
    if (from->empty()) {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToEnd(dst);
      scf::YieldOp::create(b, op.getLoc(), env.state);
      continue;
    }
    dst->getOperations().splice(dst->end(), from->front().getOperations());
    if (failed(lowerCarrying(op, *dst, inner, carried, "branches")))
      return failure();
  }
  for (auto [i, r] : llvm::enumerate(op.getResults()))
    r.replaceAllUsesWith(ifOp.getResult(i));
  env.state.assign(ifOp.getResults().begin() + own, ifOp.getResults().end());
  op.erase();
  return success();
}

LogicalResult TileStateLowering::lowerBlock(Block &block, TileEnv &env) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    b.setInsertionPoint(&op);
    if (isa<TileInitStateOp>(op)) {
      env.state = initState();
    } else if (isa<TileQKOp, TileMaskOp>(op)) {
      if (failed(ensurePrelude(&op)))
        return failure();
      b.setInsertionPoint(&op);
      if (auto q = dyn_cast<TileQKOp>(op))
        qk(q, env);
      else
        applyMask(cast<TileMaskOp>(op), env);
    } else if (isa<TileSoftmaxUpdateOp, TilePVOp, TileStoreOp>(op)) {
      if (env.state.empty())
        return op.emitOpError() << pass
                                << ": the tile state is used before "
                                   "pa.tile.init_state";
      if (auto p = dyn_cast<TilePVOp>(op))
        pv(p, env);
      else if (auto st = dyn_cast<TileStoreOp>(op))
        store(st, env);
      else
        softmaxUpdate(env);
    } else if (holdsTileOps(&op)) {
      // Control flow around tile ops: the state lives across it.
      LogicalResult done = failure();
      if (auto f = dyn_cast<scf::ForOp>(op)) {
        done = lowerFor(f, env);
      } else if (auto i = dyn_cast<scf::IfOp>(op); i && env.state.empty()) {
        // No state yet (it is created inside): lower each branch in place.
        done = success();
        for (Region *r : {&i.getThenRegion(), &i.getElseRegion()})
          if (!r->empty()) {
            TileEnv inner = env;
            if (failed(lowerBlock(r->front(), inner)))
              return failure();
          }
      } else if (auto i = dyn_cast<scf::IfOp>(op)) {
        done = lowerIf(i, env);
      } else {
        return op.emitOpError()
               << pass << " cannot carry the tile state through this op";
      }
      if (failed(done))
        return failure();
      continue;
    } else {
      continue;
    }
    op.erase();
  }
  return success();
}
