//===- CacheToGPU.cpp - KV-cache writes to GPU kernels --------------------===//
//
// convert-pa-to-gpu's cache-write family: a memref-form pa.append_kv_slots
// becomes the kernel `pa_append_kv_slots` (ABI kind `append_kv_slots`), a
// CTA per new row r (grid x = N, the `batch` symbol of the runtime's append
// dims), whose threads walk the row's Hkv x D elements of K and then of V
// in vectors of 16 bytes of the cache (8 elements of 16 bits, 4 of f32, 16
// of fp8 read as two 16-byte loads of the rows):
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
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/PagedAttention.h"

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;

LogicalResult gpukernel::buildAppendKVSlots(AppendKVSlotsOp op,
                                            gpu::GPUModuleOp kmod,
                                            StringRef name, int64_t threads) {
  for (Value v : op->getOperands())
    if (!isIdentityMemRef(v.getType()))
      return op.emitOpError()
             << "convert-pa-to-gpu expects identity-layout memrefs";
  auto nt = cast<MemRefType>(op.getKNew().getType());
  Type newElem = nt.getElementType();
  Type cacheElem = cast<MemRefType>(op.getOuts()[0].getType()).getElementType();
  // 16-byte stores: 16 / element bytes of the cache per vector (an fp8
  // cache: 16 elements, read as two 16-byte loads of 16-bit rows).
  int64_t vec = 16 / (cacheElem.getIntOrFloatBitWidth() / 8);
  PagedKVAttr attr = op.getCache();
  int64_t d = attr.getHeadDim(), hkv = attr.getNumKVHeads();
  if (d % vec != 0)
    return op.emitOpError() << "append_kv_slots on the GPU writes 16-byte "
                               "vectors: the head dim must be a multiple of "
                            << vec << ", got " << d;
  if (threads % 32 != 0 || threads <= 0)
    return op.emitOpError() << "cta-threads must be a positive multiple of 32";
  KernelABI abi;
  abi.kind = "append_kv_slots";
  abi.args = argRoles(op);
  abi.grid = {GridExtentABI{"batch"}, GridExtentABI{"", 1},
              GridExtentABI{"", 1}};
  abi.block = {threads, 1, 1};
  IRMapping m;
  gpu::GPUFuncOp func = createKernel(kmod, op, name, TypeRange{}, abi, m);
  Location loc = op.getLoc();
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, loc}};
    SmallVector<Value, 2> outs;
    for (Value v : op.getOuts())
      outs.push_back(m.lookup(v));
    KVScales scales;
    if (op.getKScale())
      scales = KVScales{m.lookup(op.getKScale()), m.lookup(op.getVScale())};
    Cache cache{attr, outs, scales};
    Value kNew = m.lookup(op.getKNew()), vNew = m.lookup(op.getVNew());
    Value r = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value slot = e.loadIdx(m.lookup(op.getSlotMapping()), r);
    int64_t pageSize = attr.getPageSize();
    Value slots = e.mul(cache.numPages(e), e.idx(pageSize));
    Value nonNegative = e.cmpi(Pred::sge, slot, e.idx(0));
    Value inCache = e.cmpi(Pred::slt, slot, slots);
    Value valid = e.andi(nonNegative, inCache);
    auto vecT = VectorType::get({vec}, newElem);
    int64_t perHead = d / vec;
    e.ifThen(valid, [&]() {
      Value page = e.divui(slot, e.idx(pageSize));
      Value s = e.remui(slot, e.idx(pageSize));
      for (bool isV : {false, true}) {
        Value rows = isV ? vNew : kNew;
        scf::ForOp::create(
            b, loc, tid, e.idx(hkv * perHead), e.idx(threads), ValueRange{},
            [&](OpBuilder &, Location, Value i, ValueRange) {
              Value h = e.divui(i, e.idx(perHead));
              Value d0 = e.mul(e.remui(i, e.idx(perHead)), e.idx(vec));
              Value x = vector::LoadOp::create(b, loc, vecT, rows,
                                               ValueRange{r, h, d0}, false,
                                               llvm::MaybeAlign(16));
              if (cache.fp8())
                x = emitQuantize(e, x, cache.scale(e, isV, h),
                                 cache.elementType());
              vector::StoreOp::create(b, loc, x, cache.memref(isV),
                                      cache.indices(e, isV, page, s, h, d0),
                                      false, llvm::MaybeAlign(16));
              scf::YieldOp::create(b, loc);
            });
      }
    });
    gpu::ReturnOp::create(b, loc);
  }
  OpBuilder b(op);
  Emitter e{b, loc};
  launch(b, op, func, {e.dim(op.getSlotMapping(), 0), e.idx(1), e.idx(1)},
         threads);
  return success();
}
