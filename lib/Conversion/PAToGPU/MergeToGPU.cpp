//===- MergeToGPU.cpp - pa.merge / pa.merge_states to GPU kernels ---------===//
//
// convert-pa-to-gpu's state-merge family (docs/GPU.md, "Merging states"):
//
// - pa.merge (N states as (o, lse) pairs, N static) becomes the kernel
//   `pa_merge` (ABI kind `merge`): states and outs of shape o[R, H, D],
//   lse[R, H]; a CTA per row r (grid x = R, the runtime's `batch`), whose
//   threads walk the row's H x D / W slots of W elements (16 bytes of the
//   states' element type: 8 of f16 / bf16, 4 of f32). Each slot merges the
//   N states of its head with StateMerge (the operator the CPU loops use;
//   the split-KV merges fold its arithmetic online, foldRows), the loops over
//   the N states fully unrolled so that
//   the picks among the distinct state memrefs fold away. Other ranks are
//   reshaped on the host side first: lse[...] of rank > 2 collapses its
//   leading dims into R (o likewise), lse[R] becomes [R, 1].
// - pa.merge_states (o_states[S, N, H, D], lse_states[S, N, H]) becomes
//   `pa_merge_states` (ABI kind `merge_states`): a CTA per row s (grid x =
//   S), the same slots, the loop over the N stacked states unrolled by 8 so
//   that several states' loads are in flight.
//
// Both read each state element once and write each output element once:
// bandwidth-bound, 16-byte loads. The outs must not alias the states (the
// lse of a row is read by every slot of the row and written by one).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/PagedAttention.h"

#include "mlir/Dialect/SCF/Utils/Utils.h"

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;

namespace {

/// Unroll factor of merge_states' loops over its states (rolled loops pay
/// an L2 round trip per state).
constexpr uint64_t kStatesUnroll = 8;

/// Elements per thread slot: 16 bytes of the states' element type, halved
/// until it divides the head dim.
int64_t slotWidth(Type stateElem, int64_t headDim) {
  int64_t w = 16 / (stateElem.getIntOrFloatBitWidth() / 8);
  while (w > 1 && headDim % w != 0)
    w /= 2;
  return w;
}

/// What a merge kernel's slots read and write. `lse(i, h)` is state i's lse
/// of head h as stored (base e, or base 2 with lseBase2); `o(i, h, d)` loads
/// state i's elements [d, d + width) of head h as a vector of the states'
/// element type.
struct RowMerge {
  Value begin, end;
  function_ref<Value(Value, Value)> lse;
  function_ref<Value(Value, Value, Value, VectorType)> o;
  Type stateElem;
  Value oOut, lseOut;
  bool lseBase2 = false;
  /// 0: unroll the loops over the states fully (static bounds), else by
  /// this factor.
  uint64_t unroll = 0;
};

/// The thread loop of row `r`: slot idx = (head h, elements [d, d + W)) for
/// idx = tid, tid + threads, ... < heads * D / W; each slot merges the
/// states of head h into oOut[r, h, d .. d + W), and the slot with d = 0
/// writes lseOut[r, h].
void emitRowMerge(KernelEmitter &e, Value r, Value heads, int64_t headDim,
                  int64_t threads, const RowMerge &m) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  int64_t width = slotWidth(m.stateElem, headDim);
  int64_t perHead = headDim / width;
  Type oElem = cast<MemRefType>(m.oOut.getType()).getElementType();
  auto stateVec = VectorType::get({width}, m.stateElem);
  auto f32Vec = VectorType::get({width}, b.getF32Type());
  Value toLog2 = e.f32(m.lseBase2 ? 1.0 : kLog2e);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value slots = e.mul(heads, e.idx(perHead));
  auto loop = scf::ForOp::create(
      b, loc, tid, slots, e.idx(threads), ValueRange{},
      [&](OpBuilder &, Location, Value idx, ValueRange) {
        Value h = e.divui(idx, e.idx(perHead));
        Value d = e.mul(e.remui(idx, e.idx(perHead)), e.idx(width));
        auto ex2 = [&](Value x) { return e.ex2(x); };
        auto lg2 = [&](Value x) { return e.lg2(x); };
        auto lseOf = [&](Value i) { return e.mul(m.lse(i, h), toLog2); };
        auto oOf = [&](Value i, Value dd) -> Value {
          Value v = m.o(i, h, dd, stateVec);
          if (!m.stateElem.isF32())
            v = arith::ExtFOp::create(b, loc, f32Vec, v);
          return v;
        };
        StateMerge sm(e, ExpBase{/*base2=*/true, ex2, lg2},
                      StateSet{m.begin, m.end, lseOf, /*l=*/nullptr, oOf});
        Value o = sm.element(d, width);
        if (!oElem.isF32())
          o = arith::TruncFOp::create(b, loc, VectorType::get({width}, oElem),
                                      o);
        vector::StoreOp::create(
            b, loc, o, m.oOut, ValueRange{r, h, d}, /*nontemporal=*/false,
            llvm::MaybeAlign(width * oElem.getIntOrFloatBitWidth() / 8));
        e.ifThen(e.cmpi(Pred::eq, d, e.idx(0)), [&]() {
          e.store(sm.lse(m.lseBase2), m.lseOut, {r, h});
        });
        scf::YieldOp::create(b, loc);
      });
  SmallVector<scf::ForOp> stateLoops;
  loop.getBody()->walk([&](scf::ForOp f) { stateLoops.push_back(f); });
  for (scf::ForOp f : stateLoops) {
    if (m.unroll)
      (void)loopUnrollByFactor(f, m.unroll);
    else
      (void)loopUnrollFull(f);
  }
}

/// The alignment of a slot's vector: its size (the slot's first element is
/// a multiple of the width, and so is the head dim).
llvm::MaybeAlign align(VectorType t) {
  return llvm::MaybeAlign(t.getNumElements() *
                          t.getElementType().getIntOrFloatBitWidth() / 8);
}

LogicalResult checkMemRefs(Operation *op) {
  for (Value v : op->getOperands())
    if (!isIdentityMemRef(v.getType()))
      return op->emitOpError()
             << "convert-pa-to-gpu expects identity-layout memrefs";
  return success();
}

/// `v` (rank `rank` + extra, identity layout) as a memref whose lse-shaped
/// part has rank 2: leading dims collapsed into one (rank > 2), or a unit
/// dim appended after the single one (rank 1). `extra` trailing dims (o's
/// head dim) are kept.
Value reshapeToRows(OpBuilder &b, Location loc, Value v, int64_t rank,
                    int64_t extra) {
  auto t = cast<MemRefType>(v.getType());
  if (rank == 2)
    return v;
  if (rank > 2) {
    SmallVector<ReassociationIndices> groups;
    ReassociationIndices lead;
    for (int64_t i = 0; i < rank - 1; ++i)
      lead.push_back(i);
    groups.push_back(lead);
    for (int64_t i = rank - 1; i < rank + extra; ++i)
      groups.push_back({i});
    return memref::CollapseShapeOp::create(b, loc, v, groups);
  }
  // rank 1: [R, (D)] -> [R, 1, (D)].
  auto size = [&](int64_t i) -> OpFoldResult {
    if (t.isDynamicDim(i))
      return memref::DimOp::create(b, loc, v, i).getResult();
    return b.getIndexAttr(t.getDimSize(i));
  };
  SmallVector<int64_t> shape{t.getDimSize(0), 1};
  SmallVector<OpFoldResult> sizes{size(0), b.getIndexAttr(1)};
  SmallVector<ReassociationIndices> groups{{0, 1}};
  for (int64_t i = 1; i < 1 + extra; ++i) {
    shape.push_back(t.getDimSize(i));
    sizes.push_back(size(i));
    groups.push_back({i + 1});
  }
  auto rt = MemRefType::get(shape, t.getElementType());
  return memref::ExpandShapeOp::create(b, loc, rt, v, groups, sizes);
}

} // namespace

LogicalResult gpukernel::buildMerge(MergeOp op, gpu::GPUModuleOp kmod,
                                    StringRef name, int64_t threads) {
  if (failed(checkMemRefs(op)))
    return failure();
  if (threads % 32 != 0 || threads <= 0)
    return op.emitOpError() << "cta-threads must be a positive multiple of 32";
  auto ot = cast<MemRefType>(op.getOuts()[0].getType());
  for (int64_t i = 0; i < op.getNumStates(); ++i)
    if (getElementTypeOrSelf(op.getStateO(i)) != ot.getElementType())
      return op.emitOpError()
             << "pa.merge on the GPU needs states of the o out's element "
                "type (the kernel's ABI), got "
             << op.getStateO(i).getType() << " for state " << i;
  int64_t rank = ot.getRank() - 1;
  int64_t headDim = ot.getDimSize(rank);
  if (ShapedType::isDynamic(headDim))
    return op.emitOpError()
           << "pa.merge on the GPU needs a static last dim of o (the head "
              "dim: the kernel's vector width depends on it)";
  if (rank != 2) {
    // The kernel's form: lse[R, H], o[R, H, D].
    OpBuilder b(op);
    SmallVector<Value> states, outs;
    for (int64_t i = 0; i < op.getNumStates(); ++i) {
      Value o = reshapeToRows(b, op.getLoc(), op.getStateO(i), rank, 1);
      Value l = reshapeToRows(b, op.getLoc(), op.getStateLse(i), rank, 0);
      states.append({o, l});
    }
    Value o = reshapeToRows(b, op.getLoc(), op.getOuts()[0], rank, 1);
    Value l = reshapeToRows(b, op.getLoc(), op.getOuts()[1], rank, 0);
    outs.append({o, l});
    auto flat = MergeOp::create(b, op.getLoc(), TypeRange{}, states, outs,
                                op.getLseBase2Attr());
    op.erase();
    return buildMerge(flat, kmod, name, threads);
  }
  KernelABI abi;
  abi.kind = "merge";
  abi.args = argRoles(op);
  abi.grid = {GridExtentABI{"batch"}, GridExtentABI{"", 1},
              GridExtentABI{"", 1}};
  abi.block = {threads, 1, 1};
  IRMapping map;
  gpu::GPUFuncOp func = createKernel(kmod, op, name, TypeRange{}, abi, map);
  Location loc = op.getLoc();
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, loc}};
    int64_t n = op.getNumStates();
    SmallVector<Value> os, ls;
    for (int64_t i = 0; i < n; ++i) {
      os.push_back(map.lookup(op.getStateO(i)));
      ls.push_back(map.lookup(op.getStateLse(i)));
    }
    Value r = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    // The states are distinct memrefs: pick among them by the loop index
    // (constant once the loops are unrolled, so the selects fold).
    auto pick = [&](Value i, function_ref<Value(int64_t)> get) {
      Value v = get(n - 1);
      for (int64_t s = n - 2; s >= 0; --s)
        v = e.select(e.cmpi(Pred::eq, i, e.idx(s)), get(s), v);
      return v;
    };
    auto lse = [&](Value i, Value h) {
      return pick(i, [&](int64_t s) { return e.load(ls[s], {r, h}); });
    };
    auto o = [&](Value i, Value h, Value d, VectorType t) {
      return pick(i, [&](int64_t s) -> Value {
        return vector::LoadOp::create(b, loc, t, os[s], ValueRange{r, h, d},
                                      /*nontemporal=*/false, align(t));
      });
    };
    Value oOut = map.lookup(op.getOuts()[0]);
    RowMerge m{e.idx(0), e.idx(n), lse, o, ot.getElementType(), oOut,
               map.lookup(op.getOuts()[1]), op.getLseBase2(), /*unroll=*/0};
    emitRowMerge(e, r, e.dim(oOut, 1), headDim, threads, m);
    gpu::ReturnOp::create(b, loc);
  }
  OpBuilder b(op);
  Emitter e{b, loc};
  launch(b, op, func, {e.dim(op.getOuts()[1], 0), e.idx(1), e.idx(1)},
         threads);
  return success();
}

LogicalResult gpukernel::buildMergeStates(MergeStatesOp op,
                                          gpu::GPUModuleOp kmod,
                                          StringRef name, int64_t threads) {
  if (failed(checkMemRefs(op)))
    return failure();
  if (threads % 32 != 0 || threads <= 0)
    return op.emitOpError() << "cta-threads must be a positive multiple of 32";
  auto st = cast<MemRefType>(op.getOStates().getType());
  int64_t headDim = st.getDimSize(3);
  if (ShapedType::isDynamic(headDim))
    return op.emitOpError()
           << "pa.merge_states on the GPU needs a static head dim (the last "
              "dim of o_states: the kernel's vector width depends on it)";
  KernelABI abi;
  abi.kind = "merge_states";
  abi.args = argRoles(op);
  abi.grid = {GridExtentABI{"batch"}, GridExtentABI{"", 1},
              GridExtentABI{"", 1}};
  abi.block = {threads, 1, 1};
  IRMapping map;
  gpu::GPUFuncOp func = createKernel(kmod, op, name, TypeRange{}, abi, map);
  Location loc = op.getLoc();
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, loc}};
    Value os = map.lookup(op.getOStates()), ls = map.lookup(op.getLseStates());
    Value s = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    auto lse = [&](Value i, Value h) { return e.load(ls, {s, i, h}); };
    auto o = [&](Value i, Value h, Value d, VectorType t) -> Value {
      return vector::LoadOp::create(b, loc, t, os, ValueRange{s, i, h, d},
                                    /*nontemporal=*/false, align(t));
    };
    Value oOut = map.lookup(op.getOuts()[0]);
    RowMerge m{e.idx(0), e.dim(os, 1), lse, o, st.getElementType(), oOut,
               map.lookup(op.getOuts()[1]), op.getLseBase2(), kStatesUnroll};
    emitRowMerge(e, s, e.dim(oOut, 1), headDim, threads, m);
    gpu::ReturnOp::create(b, loc);
  }
  OpBuilder b(op);
  Emitter e{b, loc};
  launch(b, op, func, {e.dim(op.getOuts()[1], 0), e.idx(1), e.idx(1)},
         threads);
  return success();
}
