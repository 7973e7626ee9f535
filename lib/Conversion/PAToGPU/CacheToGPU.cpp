//===- CacheToGPU.cpp - KV-cache writes to GPU kernels --------------------===//
//
// convert-pa-to-gpu's cache-write family: a memref-form pa.append_kv_slots
// becomes the kernel `pa_append_kv_slots` (ABI kind `append_kv_slots`), a
// CTA per new row r (grid x = N, the `batch` symbol of the runtime's append
// dims), whose threads walk the row's Hkv x D elements of K and V together
// in vectors of 16 bytes of the cache (8 elements of 16 bits, 4 of f32, 16
// of fp8 read as two 16-byte loads of the rows; both loads before either
// store):
//
//   slot = slot_mapping[r]; rows with slot < 0 (vLLM's padding) or slot >=
//   num_pages * P (out of range: the runtime's checked mode reports it) are
//   skipped; page = slot / P, s = slot % P;
//   thread i: vector.load k_new[r, h, d .. d + V) and vector.store to the
//   cache at (page, s, h, d) (NHD or HND, joint or split), 16 bytes; an
//   fp8 cache stores emitQuantize's value (x / scale of head h, clamped,
//   rounded to nearest even: cvt.rn.satfinite after pa-fp8-to-nvvm).
//
// Distinct rows must have distinct slots: two rows writing one slot race
// (the CPU lowering's last row wins).
//
// The page-table writes take the same CTA per row and the same copy:
//
// - pa.append_kv -> `pa_append_kv` (ABI kind `append_kv`): row r belongs to
//   request b, the last with append_indptr[b] <= r (a binary search over
//   append_indptr, ceil(log2(B + 1)) steps); it goes to token
//   kv_len[b] - append_len[b] + (r - append_indptr[b]) of the request's
//   pages (the table describes the cache after the append).
// - pa.scatter_kv -> `pa_scatter_kv` (ABI kind `scatter_kv`): row r of
//   request b (the same search over rows_indptr) goes to the request's
//   token positions[r].
//
// Rows past the last request's, tokens outside [0, kv_len) and page indices
// outside [0, num_pages) are skipped rather than written (the CPU lowering
// asserts; the runtime's checked mode reports them).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/PagedAttention.h"

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;

namespace {

/// The checks every cache-write kernel makes of its op: identity layouts, a
/// head dim that 16-byte vectors of the cache divide, a whole number of
/// warps. Returns the vector width (elements), or 0 after an error at the op.
int64_t checkCacheWrite(Operation *op, PagedKVAttr attr, Type cacheElem,
                        int64_t threads) {
  for (Value v : op->getOperands())
    if (!isIdentityMemRef(v.getType())) {
      op->emitOpError() << "convert-pa-to-gpu expects identity-layout memrefs";
      return 0;
    }
  // 16-byte stores: 16 / element bytes of the cache per vector (an fp8
  // cache: 16 elements, read as two 16-byte loads of 16-bit rows).
  int64_t vec = 16 / (cacheElem.getIntOrFloatBitWidth() / 8);
  int64_t d = attr.getHeadDim();
  if (d % vec != 0) {
    op->emitOpError() << "cache writes on the GPU store 16-byte vectors: "
                         "the head dim must be a multiple of "
                      << vec << ", got " << d;
    return 0;
  }
  if (threads % 32 != 0 || threads <= 0) {
    op->emitOpError() << "cta-threads must be a positive multiple of 32";
    return 0;
  }
  return vec;
}

/// The CTA's threads write row `r` of `kNew` / `vNew` ([N, Hkv, D]) into
/// (page, slot) of `cache`, one 16-byte vector of the cache each (quantized
/// for an fp8 cache): a thread loads its K and its V vector before it
/// stores either, so that the two loads are in flight together (the
/// compiler keeps a load after a store to memory that may alias it).
void emitRowCopy(KernelEmitter &e, const Cache &cache, Value kNew, Value vNew,
                 Value r, Value page, Value slot, int64_t vec,
                 int64_t threads) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  PagedKVAttr attr = cache.attr;
  int64_t d = attr.getHeadDim(), hkv = attr.getNumKVHeads();
  Type newElem = cast<MemRefType>(kNew.getType()).getElementType();
  auto vecT = VectorType::get({vec}, newElem);
  int64_t perHead = d / vec;
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  scf::ForOp::create(
      b, loc, tid, e.idx(hkv * perHead), e.idx(threads), ValueRange{},
      [&](OpBuilder &, Location, Value i, ValueRange) {
        Value h = e.divui(i, e.idx(perHead));
        Value d0 = e.mul(e.remui(i, e.idx(perHead)), e.idx(vec));
        Value x[2];
        for (bool isV : {false, true})
          x[isV] = vector::LoadOp::create(b, loc, vecT, isV ? vNew : kNew,
                                          ValueRange{r, h, d0}, false,
                                          llvm::MaybeAlign(16));
        for (bool isV : {false, true}) {
          Value v = x[isV];
          if (cache.fp8())
            v = emitQuantize(e, v, cache.scale(e, isV, h),
                             cache.elementType());
          vector::StoreOp::create(b, loc, v, cache.memref(isV),
                                  cache.indices(e, isV, page, slot, h, d0),
                                  false, llvm::MaybeAlign(16));
        }
        scf::YieldOp::create(b, loc);
      });
}

/// The cache operand group of a write op, mapped into the kernel.
Cache mappedCache(PagedKVAttr attr, ValueRange outs, Value kScale,
                  Value vScale, const IRMapping &m) {
  SmallVector<Value, 2> tensors;
  for (Value v : outs)
    tensors.push_back(m.lookup(v));
  KVScales scales;
  if (kScale)
    scales = KVScales{m.lookup(kScale), m.lookup(vScale)};
  return Cache{attr, tensors, scales};
}

/// The request b of row `r` of a ragged array: the last b with
/// indptr[b] <= r, by a binary search over indptr's B + 1 entries
/// (ceil(log2(B + 1)) dependent loads). Rows past indptr[B] get the last
/// request; the caller tests r < indptr[B].
Value emitRowRequest(KernelEmitter &e, Value indptr, Value r) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Value batch = e.sub(e.dim(indptr, 0), e.idx(1));
  Value batch64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), batch);
  // The bits of B: the search's steps are 2^(bits - 1), ..., 1.
  Value lz = LLVM::CountLeadingZerosOp::create(b, loc, b.getI64Type(),
                                               batch64, /*is_zero_poison=*/false);
  Value lzIndex = arith::IndexCastOp::create(b, loc, b.getIndexType(), lz);
  Value bits = e.sub(e.idx(64), lzIndex);
  return e
      .forLoop(e.idx(0), bits, {e.idx(0)},
               [&](Value i, ValueRange pos) -> SmallVector<Value> {
                 Value bit = e.sub(e.sub(bits, e.idx(1)), i);
                 Value step = arith::ShLIOp::create(b, loc, e.idx(1), bit);
                 Value cand = e.add(pos[0], step);
                 Value inside = e.cmpi(Pred::slt, cand, batch);
                 Value v = e.loadIdx(indptr, e.select(inside, cand, e.idx(0)));
                 Value take = e.andi(inside, e.cmpi(Pred::sle, v, r));
                 return {e.select(take, cand, pos[0])};
               })
      .getResult(0);
}

/// i1: page index `page` (index) lies in [0, num_pages).
Value pageInCache(KernelEmitter &e, const Cache &cache, Value page) {
  Value nonNegative = e.cmpi(Pred::sge, page, e.idx(0));
  Value below = e.cmpi(Pred::slt, page, cache.numPages(e));
  return e.andi(nonNegative, below);
}

/// The launch of a write kernel: a CTA per row of `rows` (dim 0).
void launchRows(Operation *op, gpu::GPUFuncOp func, Value rows,
                int64_t threads) {
  OpBuilder b(op);
  Emitter e{b, op->getLoc()};
  launch(b, op, func, {e.dim(rows, 0), e.idx(1), e.idx(1)}, threads);
}

KernelABI writeABI(Operation *op, StringRef kind, int64_t threads) {
  KernelABI abi;
  abi.kind = kind.str();
  abi.args = argRoles(op);
  abi.grid = {GridExtentABI{"batch"}, GridExtentABI{"", 1},
              GridExtentABI{"", 1}};
  abi.block = {threads, 1, 1};
  return abi;
}

} // namespace

LogicalResult gpukernel::buildAppendKVSlots(AppendKVSlotsOp op,
                                            gpu::GPUModuleOp kmod,
                                            StringRef name, int64_t threads) {
  PagedKVAttr attr = op.getCache();
  Type cacheElem = cast<MemRefType>(op.getOuts()[0].getType()).getElementType();
  int64_t vec = checkCacheWrite(op, attr, cacheElem, threads);
  if (!vec)
    return failure();
  IRMapping m;
  gpu::GPUFuncOp func = createKernel(
      kmod, op, name, TypeRange{}, writeABI(op, "append_kv_slots", threads), m);
  Location loc = op.getLoc();
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, loc}};
    Cache cache = mappedCache(attr, op.getOuts(), op.getKScale(),
                              op.getVScale(), m);
    Value r = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value slot = e.loadIdx(m.lookup(op.getSlotMapping()), r);
    int64_t pageSize = attr.getPageSize();
    Value slots = e.mul(cache.numPages(e), e.idx(pageSize));
    // One op per statement: the order of the IR (and of its tests) must not
    // depend on the compiler's order of evaluating arguments.
    Value nonNegative = e.cmpi(Pred::sge, slot, e.idx(0));
    Value inCache = e.cmpi(Pred::slt, slot, slots);
    Value valid = e.andi(nonNegative, inCache);
    e.ifThen(valid, [&]() {
      emitRowCopy(e, cache, m.lookup(op.getKNew()), m.lookup(op.getVNew()), r,
                  e.divui(slot, e.idx(pageSize)),
                  e.remui(slot, e.idx(pageSize)), vec, threads);
    });
    gpu::ReturnOp::create(b, loc);
  }
  launchRows(op, func, op.getSlotMapping(), threads);
  return success();
}

namespace {

/// The operands of a page-table write (pa.append_kv or pa.scatter_kv).
struct PageWrite {
  Operation *op;
  StringRef kind;
  PagedKVAttr attr;
  Value kNew, vNew, rowsIndptr, kvIndptr, kvIndices, kvLastPageLen, kScale,
      vScale;
  ValueRange outs;
};

/// The token of row `r` of request `req` (mapped operands `m`, the page
/// table `pt`) and an i1 saying whether it lies inside the request.
using TokenOf = function_ref<std::pair<Value, Value>(
    KernelEmitter &, const IRMapping &, const PageTable &, Value req,
    Value r)>;

/// A CTA per row: rows past rowsIndptr[B] are skipped; the row's request
/// is a binary search over rowsIndptr; the row goes to `tokenOf`'s token
/// through the page table when that token is inside the request and its
/// page inside the cache.
LogicalResult buildPageWrite(const PageWrite &w, gpu::GPUModuleOp kmod,
                             StringRef name, int64_t threads,
                             TokenOf tokenOf) {
  Type cacheElem = cast<MemRefType>(w.outs[0].getType()).getElementType();
  int64_t vec = checkCacheWrite(w.op, w.attr, cacheElem, threads);
  if (!vec)
    return failure();
  IRMapping m;
  gpu::GPUFuncOp func = createKernel(kmod, w.op, name, TypeRange{},
                                     writeABI(w.op, w.kind, threads), m);
  Location loc = w.op->getLoc();
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, loc}};
    Cache cache = mappedCache(w.attr, w.outs, w.kScale, w.vScale, m);
    PageTable pt{m.lookup(w.kvIndptr), m.lookup(w.kvIndices),
                 m.lookup(w.kvLastPageLen), w.attr.getPageSize(),
                 /*checked=*/false};
    Value ri = m.lookup(w.rowsIndptr);
    Value r = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value batch = e.sub(e.dim(ri, 0), e.idx(1));
    Value rows = e.loadIdx(ri, batch);
    e.ifThen(e.cmpi(Pred::slt, r, rows), [&]() {
      Value req = emitRowRequest(e, ri, r);
      auto [t, inRequest] = tokenOf(e, m, pt, req, r);
      e.ifThen(inRequest, [&, t = t]() {
        auto [page, slot] = pt.locate(e, pt.pageBase(e, req), t);
        e.ifThen(pageInCache(e, cache, page), [&, page = page,
                                               slot = slot]() {
          emitRowCopy(e, cache, m.lookup(w.kNew), m.lookup(w.vNew), r, page,
                      slot, vec, threads);
        });
      });
    });
    gpu::ReturnOp::create(b, loc);
  }
  launchRows(w.op, func, w.kNew, threads);
  return success();
}

} // namespace

LogicalResult gpukernel::buildAppendKV(AppendKVOp op, gpu::GPUModuleOp kmod,
                                       StringRef name, int64_t threads) {
  PageWrite w{op,
              "append_kv",
              op.getCache(),
              op.getKNew(),
              op.getVNew(),
              op.getAppendIndptr(),
              op.getKvIndptr(),
              op.getKvIndices(),
              op.getKvLastPageLen(),
              op.getKScale(),
              op.getVScale(),
              op.getOuts()};
  Value ai = op.getAppendIndptr();
  return buildPageWrite(
      w, kmod, name, threads,
      [&](KernelEmitter &e, const IRMapping &m, const PageTable &pt,
          Value req, Value r) -> std::pair<Value, Value> {
        // Token kv_len - append_len + j (the table describes the cache
        // after the append); append_len <= kv_len is the op's precondition
        // (checked mode), a negative token is skipped.
        Value start = e.loadIdx(m.lookup(ai), req);
        Value end = e.loadIdx(m.lookup(ai), e.add(req, e.idx(1)));
        Value alen = e.sub(end, start);
        Value kvLen = pt.kvLen(e, req);
        Value before = e.sub(kvLen, alen);
        Value j = e.sub(r, start);
        Value t = e.add(before, j);
        return {t, e.cmpi(Pred::sge, t, e.idx(0))};
      });
}

LogicalResult gpukernel::buildScatterKV(ScatterKVOp op, gpu::GPUModuleOp kmod,
                                        StringRef name, int64_t threads) {
  PageWrite w{op,
              "scatter_kv",
              op.getCache(),
              op.getKRows(),
              op.getVRows(),
              op.getRowsIndptr(),
              op.getKvIndptr(),
              op.getKvIndices(),
              op.getKvLastPageLen(),
              op.getKScale(),
              op.getVScale(),
              op.getOuts()};
  Value positions = op.getPositions();
  return buildPageWrite(
      w, kmod, name, threads,
      [&](KernelEmitter &e, const IRMapping &m, const PageTable &pt,
          Value req, Value r) -> std::pair<Value, Value> {
        // The request's token positions[r], kept inside [0, kv_len).
        Value t = e.loadIdx(m.lookup(positions), r);
        Value nonNegative = e.cmpi(Pred::sge, t, e.idx(0));
        Value kvLen = pt.kvLen(e, req);
        Value below = e.cmpi(Pred::slt, t, kvLen);
        return {t, e.andi(nonNegative, below)};
      });
}
