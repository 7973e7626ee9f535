//===- PromoteTiles.cpp - Q / K / V tiles into shared memory --------------===//
//
// pa-promote-tiles, the second stage of the prefill GPU pipeline
// (docs/GPU.md): in a kernel whose body is the tile IR (convert-pa-to-gpu),
// the operand tiles move to dynamic shared memory in the cache's element
// type and their loads become asynchronous copies:
//
//   shared memory [BM + 2 S BN][D (+ pad)]: Q, then K and V of S stages (the
//   kernel ABI's kv_stages, default 2). The 8 row addresses of an ldmatrix
//   must fall into distinct banks, and every row should start on a 32-byte
//   sector as it does in global memory: a row shifted by 16 bytes splits
//   each copy instruction's sectors so that L2 is asked for 1.5x the
//   sectors it sends (Nsight Compute, H200, 2026-11-26: 100.7 M requested
//   vs 67.1 M read from DRAM at 64 x 8192 decode). Hence:
//   - head dims that are a multiple of 64 (rows of whole 128-byte lines;
//     option smem-layout=swizzle, the default): unpadded rows, 16-byte
//     chunk c of shared row r at chunk c ^ (r % 8) (the kernel gets the
//     unit attribute pa.smem_swizzle, which pa-tile-to-mma follows). Both
//     conditions hold.
//   - a kWgmmaAttr kernel (prefill-mma=wgmma): wgmma's 128-byte swizzle
//     layout (KernelBuilder.h wgmmaIndex: D / 64 column blocks of
//     [rows][64] per tile, the XOR within each block's lines), whatever
//     smem-layout says, and a fence.proxy.async after each cp.async wait.
//   - other head dims (80, 96, 112: rows that are not whole lines) or
//     smem-layout=pad: rows padded (option row-pad-bytes) by 16 bytes in
//     prefill kernels (conflict-free ldmatrix), by 32 in decode kernels
//     (memory-bound: sector-aligned rows streamed 2-4% faster at large
//     sizes despite 2-way ldmatrix bank conflicts, which cost prefill 15%).
//   pa.tile.load_q -> cp.async of the tile's query rows (16 bytes each,
//   zero-filled past the tile's queries; a last partial round of chunks
//   when the threads do not split them evenly); its scale moves onto
//   pa.tile.qk
//   the KV loop `scf.for %t0 = lo to hi step BN { gather_kv; body }` ->
//     K/V tiles lo, ..., lo + (S - 2) BN -> stages 0 .. S - 2, a commit
//     group each (cp.async through the page table, 16 bytes, zero-filled
//     past hi, whose pages are never looked up)
//     scf.for %t = lo to hi step S BN   (S tiles per iteration, so that the
//                                        stage of every access is static)
//       step(t, 0); if t + BN < hi: step(t + BN, 1); if ...: step(.., S - 1)
//     step(t0, s): cp.async.wait_group S - 2 + barrier (tile t0 visible,
//       and every warp done with the previous step, so its stage is free),
//       cp.async of tile t0 + (S - 1) BN into that stage (its pages looked
//       up one step earlier; the copies overlap this step's math), page
//       lookups of tile t0 + S BN (i32, carried), the body on stage s. One
//       barrier per KV tile: on an H200 (2026-11-23, causal D 128) this ran
//       3-6% faster than issuing the copies before the wait with a second
//       barrier after the math (docs/PERFORMANCE.md); 3 stages for the
//       tensor-core decode ran up to 9% slower than 2 (2026-11-24).
//
// Page lists (option page-list-rounds = R, default 8): the page lookups of
// a step are one i32 per chunk round a thread copies, live across the
// step's math. When a thread of CTA-wide tiles copies R rounds or more,
// thread j instead looks up the tile's j-th page (of the at most
// (P + BN - 2) / P + 1 its keys touch), carries that one entry, and stores
// it before the next step's barrier into the list of the stage the tile
// goes to ([S][entries] i32 after the tiles); the copies read their pages
// from it. 4 warps over 64-key tiles at D = 128 spill 96 bytes with the
// list instead of 172-184 and run 4-7% faster (H200, 2026-11-26).
// Warp-local tiles copying R rounds or more (counted S - 1 times where
// fp8 is widened in registers: there an entry a round costs more with more
// stages) shuffle instead: lane j looks up the j-th page its warp's keys
// touch and each round's copy takes its entry from that lane (gpu.shuffle
// idx); the tensor-core decode (16 keys a warp, 8 rounds) went from 8
// lookups a lane and tile to 1 and from 253 to 217 registers.
//
// An fp8 cache (f8E4M3FN / f8E5M2) is copied as bytes, 16 elements a
// cp.async, into S stages of [2 S BN][D (+ pad)] bytes after Q. With
// fp8-widen=registers (the default) and rows of whole 128-byte lines (D a
// multiple of 128, swizzled layout) the stages are XOR-swizzled like the
// 16-bit tiles (16-byte chunk c of row r at c ^ (r % 8)) and the math reads
// them as they are: pa.tile.qk / pa.tile.pv get fp8 views of the stage and
// pa-tile-to-mma widens the fragments in registers after ldmatrix.
// Otherwise (fp8-widen=shared, other head dims) the stages stay unswizzled
// (their copies and the widening access whole rows) behind one pair of K /
// V tiles of Q's type ([2 BN][D (+ pad)]); each step widens its stage into
// that pair (arith.extf, which pa-fp8-to-nvvm makes one cvt per two
// elements) after the wait, and a second barrier makes it visible before
// the math. The K / V scales stay where the tiling put them (pa.tile.qk's
// k_scale, pa.tile.store's v_scale).
//
// The tile ops that remain (qk, mask, softmax_update, pv, store) read Q, K
// and V from shared memory; pa-tile-to-mma maps them onto tensor cores.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/PagedAttention.h"
#include "PagedAttn/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <functional>
#include <numeric>

namespace mlir::pa {
#define GEN_PASS_DEF_PAPROMOTETILES
#include "PagedAttn/Conversion/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;

namespace {

/// f16 / bf16 elements per 16-byte copy (the type an fp8 cache is widened
/// to).
constexpr int64_t kChunk = 8;
/// fp8 elements per 16-byte copy.
constexpr int64_t kChunk8 = 16;

/// The shared-memory layout and copy schedule of one kernel.
struct Layout {
  /// Q's element type, that of the matmul operands (f16 / bf16; f32 in the
  /// CUDA-core decode).
  Type elem;
  /// The cache's: `elem`, or an fp8 type (copied as bytes, widened in
  /// shared memory).
  Type cacheElem;
  int64_t headDim = 0, rows = 0, keys = 0, threads = 0, group = 1;
  /// K/V tiles in shared memory at once (the ABI's kv_stages, default 2).
  int64_t stages = 2;
  /// Warps that split each KV tile's keys (the ABI's kv_warps).
  int64_t kvWarps = 1;
  /// Entries of a K / V tile's page list in shared memory (0: none, every
  /// thread carries the pages of its chunk rounds in registers).
  int64_t listEntries = 0;
  /// Warp-local tiles: lane j < warpPages looks up the j-th page its warp's
  /// keys touch and carries that one entry; each chunk round takes its
  /// page's entry from that lane (gpu.shuffle idx). 0: every thread looks
  /// up the pages of its own rounds.
  int64_t warpPages = 0;
  /// Every K / V round a thread copies of a tile lies in one page, the same
  /// for its warp (warp-local tiles) or its CTA: the KV loop starts at key
  /// 0 (a one-pass kernel), so a tile's keys, and a warp's, start at a
  /// multiple of their count, which divides the page size. A thread then
  /// carries that one entry (no page list, no shuffles) and its rounds'
  /// sources are one address plus constants.
  bool onePage = false;

  /// Keys a thread's K / V rounds of a tile span: its warp's with
  /// warp-local tiles, else the tile's.
  int64_t roundKeys() const { return warpLocal() ? keys / kvWarps : keys; }
  bool fp8() const { return isFP8CacheType(cacheElem); }
  /// fp8 stages read by the math as they are (widened in registers by
  /// pa-tile-to-mma): swizzled byte rows, no tiles of `elem` for K / V.
  bool fp8Regs = false;
  /// Bytes of an `elem`, and `elem`s per 16-byte copy.
  int64_t bytes() const { return elem.getIntOrFloatBitWidth() / 8; }
  int64_t chunk() const { return 16 / bytes(); }
  /// Every warp owns a block of keys of each tile (kv_warps = the CTA's
  /// warps, pa-tile-to-mma's key split): it copies, widens and reads only
  /// the K / V rows of its keys, so a warp barrier replaces the CTA's.
  bool warpLocal() const {
    return kvWarps > 1 && kvWarps * 32 == threads && keys % kvWarps == 0;
  }
  /// The threads that share one block of K / V chunks (a warp, or the
  /// CTA), and the chunks of a block.
  int64_t kvCopiers() const { return warpLocal() ? 32 : threads; }
  int64_t kvBlockChunks() const {
    return warpLocal() ? kvChunks() / kvWarps : kvChunks();
  }
  /// Rows XOR-swizzled (kSmemSwizzleAttr) rather than padded: rows of
  /// `elem` of a multiple of 128 bytes, with smem-layout=swizzle.
  bool swizzle = false;
  /// A kWgmmaAttr kernel: each tile in wgmma's 128-byte swizzle layout
  /// (wgmmaIndex), unpadded.
  bool wgmma = false;
  /// Padding of a padded shared-memory row in bytes (16 or 32).
  int64_t padBytes = 16;
  int64_t stride() const {
    return headDim + (swizzle || wgmma ? 0 : padBytes / bytes());
  }
  /// Cache elements per 16-byte copy.
  int64_t kvChunk() const { return fp8() ? kChunk8 : chunk(); }
  /// K / V tiles of `elem`: the stages, or the one pair an fp8 stage is
  /// widened into (none when the math reads the fp8 stages).
  int64_t wideStages() const { return fp8() ? (fp8Regs ? 0 : 1) : stages; }
  int64_t smemRows() const { return rows + 2 * wideStages() * keys; }
  int64_t wideBytes() const { return smemRows() * stride() * bytes(); }
  /// Bytes per row of an fp8 stage: padded like `stride`, or with swizzled
  /// rows unpadded (a multiple of 64 bytes: the copies and the widening
  /// read whole rows, 8 lanes a 128-byte line, without bank conflicts; with
  /// fp8Regs whole 128-byte lines, swizzled for ldmatrix).
  int64_t stride8() const { return headDim + (swizzle ? 0 : padBytes); }
  /// Bytes of the tiles (the page lists follow them).
  int64_t tileBytes() const {
    return wideBytes() + (fp8() ? 2 * stages * keys * stride8() : 0);
  }
  /// The tiles, then a page list of `listEntries` i32 per stage.
  int64_t smemBytes() const { return tileBytes() + stages * listEntries * 4; }
  /// First row of K (isV = false) or V of `stage` in `elem` rows (for an
  /// fp8 cache: of the widened pair, whatever the stage).
  int64_t kvRow0(bool isV, int64_t stage) const {
    return rows + ((isV ? wideStages() : 0) + (fp8() ? 0 : stage)) * keys;
  }
  /// First row of K or V of `stage` in the fp8 stages.
  int64_t kvRow8(bool isV, int64_t stage) const {
    return ((isV ? stages : 0) + stage) * keys;
  }
  /// 16-byte chunks of a K (or V) tile, and the rounds a thread copies.
  int64_t kvChunks() const { return keys * (headDim / kvChunk()); }
  int64_t chunkRounds() const {
    return llvm::divideCeil(kvBlockChunks(), kvCopiers());
  }
};

/// The pieces of one kernel that the promotion rewrites.
struct Match {
  gpu::GPUFuncOp func;
  TileLoadQOp loadQ;
  scf::ForOp loop;
  TileGatherKVOp gather;
  Layout layout;
};

/// Finds the tile IR of `func` and checks that this pass can promote it
/// (an error at the offending op otherwise).
LogicalResult matchKernel(gpu::GPUFuncOp func, int64_t pageListRounds,
                          int64_t rowPadBytes, StringRef smemLayout,
                          bool fp8InRegisters, Match &m) {
  m.func = func;
  SmallVector<TileLoadQOp> loads;
  SmallVector<TileGatherKVOp> gathers;
  func.walk([&](TileLoadQOp op) { loads.push_back(op); });
  func.walk([&](TileGatherKVOp op) { gathers.push_back(op); });
  if (loads.size() != 1 || gathers.size() != 1)
    return func.emitOpError()
           << "pa-promote-tiles expects one pa.tile.load_q and one "
              "pa.tile.gather_kv per kernel, got "
           << loads.size() << " and " << gathers.size();
  m.loadQ = loads[0];
  m.gather = gathers[0];
  m.loop = dyn_cast<scf::ForOp>(m.gather->getParentOp());
  if (!m.loop || m.gather.getT0() != m.loop.getInductionVar() ||
      m.loop.getNumRegionIterArgs() != 0)
    return m.gather.emitOpError()
           << "pa-promote-tiles expects the gather in the body of an scf.for "
              "without iter_args whose induction variable is its first token";
  // The copies of the first tiles are issued before the loop: everything
  // the gather reads but its first token must be defined there.
  for (Value v : m.gather->getOperands())
    if (v != m.gather.getT0() && !m.loop.isDefinedOutsideOfLoop(v))
      return m.gather.emitOpError()
             << "pa-promote-tiles needs the gather's cache, page table, "
                "request, key bound and KV head defined outside the KV loop";
  FailureOr<KernelABI> abi = decodeKernelABI(func);
  if (failed(abi))
    return func.emitOpError()
           << "pa-promote-tiles needs the kernel's pa.kernel ABI (its block "
              "size)";
  Layout &l = m.layout;
  auto q = cast<MemRefType>(m.loadQ.getQ().getType());
  auto qt = cast<MemRefType>(m.loadQ.getTile().getType());
  auto kt = cast<MemRefType>(m.gather.getKTile().getType());
  l.elem = q.getElementType();
  l.cacheElem =
      cast<MemRefType>(m.gather.getKvCache()[0].getType()).getElementType();
  l.rows = qt.getDimSize(0);
  l.headDim = qt.getDimSize(1);
  l.keys = kt.getDimSize(0);
  l.threads = abi->block[0];
  l.group = m.loadQ.getGroup();
  if (abi->kvStages > 0)
    l.stages = abi->kvStages;
  if (abi->kvWarps > 0)
    l.kvWarps = abi->kvWarps;
  bool decode = StringRef(abi->kind).starts_with("decode");
  l.padBytes = rowPadBytes ? rowPadBytes : (decode ? 32 : 16);
  // Swizzled rows: whole 128-byte lines of 8 chunks each (D % 64 == 0 for
  // 16-bit elements); other head dims (80, 96, 112) keep padded rows.
  l.swizzle = smemLayout == "swizzle" &&
              l.headDim * (l.elem.getIntOrFloatBitWidth() / 8) % 128 == 0;
  // A wgmma kernel's tiles are in the layout its descriptors describe,
  // whatever smem-layout says.
  l.wgmma = func->hasAttr(kWgmmaAttr);
  if (l.wgmma) {
    l.swizzle = false;
    if (l.headDim % 64 != 0 || l.fp8())
      return m.loadQ.emitOpError()
             << "pa-promote-tiles: a " << kWgmmaAttr
             << " kernel needs a head dim that is a multiple of 64 and K / "
                "V of the queries' type";
  }
  if (!l.elem.isF16() && !l.elem.isBF16() && !l.elem.isF32())
    return m.loadQ.emitOpError()
           << "pa-promote-tiles copies f16 / bf16 / f32 rows, got " << l.elem;
  if (l.cacheElem != l.elem && !l.fp8())
    return m.gather.emitOpError()
           << "pa-promote-tiles needs a cache of the queries' type or fp8, "
              "got "
           << l.cacheElem << " beside " << l.elem;
  // fp8 read by the math as it is: byte rows of whole 128-byte lines,
  // swizzled like the 16-bit ones; decode kernels only (the compute-bound
  // prefill kernels, whose K / V fragments serve 2 m blocks, spilled 300
  // bytes instead of 124 and ran 18-22% slower: H200, 2026-11-27).
  l.fp8Regs = fp8InRegisters && decode && l.fp8() && l.swizzle &&
              l.headDim % 128 == 0;
  if (l.headDim % l.kvChunk() != 0 || l.threads % 32 != 0)
    return m.loadQ.emitOpError()
           << "pa-promote-tiles needs a head dim that is a multiple of "
           << l.kvChunk() << " and whole warps, got " << l.threads
           << " threads";
  std::optional<int64_t> step = getConstantIntValue(m.loop.getStep());
  if (!step || *step != l.keys)
    return m.loop.emitOpError()
           << "pa-promote-tiles expects the KV loop to step by the K tile's "
           << l.keys << " rows";
  // A thread of a CTA-wide tile that copies many chunk rounds would carry
  // one page-table entry per round across a step (registers the math
  // needs): its tile's page list goes to shared memory instead, at most
  // one entry per page the tile's keys touch (its first key need not start
  // a page), one thread each.
  int64_t pageSize = m.gather.getCache().getPageSize();
  l.onePage = matchPattern(m.loop.getLowerBound(), m_Zero()) &&
              pageSize % l.roundKeys() == 0;
  int64_t entries = (pageSize + l.keys - 2) / pageSize + 1;
  if (pageListRounds > 0 && !l.onePage && !l.warpLocal() &&
      l.chunkRounds() >= pageListRounds && entries <= l.threads)
    l.listEntries = entries;
  // A warp's K / V rounds read the few pages its keys touch (e.g. 16 keys
  // of 16-token pages: at most 2): one lookup a lane and shuffles, rather
  // than one load per round family, each lane looking up the same pages.
  // Where the math widens fp8 fragments in registers (the tensor-core
  // decode, at the edge of 3 CTAs an SM) an entry a round costs more with
  // more stages, so there the rounds count S - 1 times: at D = 128 (4
  // rounds) 3 stages hold 186 registers with an entry a round and 167 with
  // the shuffles, 4 stages 211 and 202; at 2 stages the shuffles gain
  // nothing. The CUDA-core decode (3 stages, 4 rounds, 125 registers)
  // keeps its entries: shuffled, its MHA split decode ran 1 x 512 0.5 us
  // slower (docs/PERFORMANCE.md, H200, 2026-11-27).
  int64_t warpKeys = l.warpLocal() ? l.keys / l.kvWarps : 0;
  int64_t warpEntries = (pageSize + warpKeys - 2) / pageSize + 1;
  int64_t roundWeight = l.fp8Regs ? l.stages - 1 : 1;
  if (pageListRounds > 0 && !l.onePage && l.warpLocal() &&
      l.chunkRounds() * roundWeight >= pageListRounds && warpEntries <= 32)
    l.warpPages = warpEntries;
  for (Operation *user : m.loadQ.getTile().getUsers())
    if (user != m.loadQ && !isa<TileQKOp>(user))
      return user->emitOpError()
             << "pa-promote-tiles: the query tile may only be read by "
                "pa.tile.qk";
  for (Value t : {m.gather.getKTile(), m.gather.getVTile()})
    for (Operation *user : t.getUsers())
      if (user != m.gather && !isa<TileQKOp, TilePVOp>(user))
        return user->emitOpError()
               << "pa-promote-tiles: the K / V tiles may only be read by "
                  "pa.tile.qk and pa.tile.pv";
  for (Value t : {m.loadQ.getTile(), m.gather.getKTile(),
                  m.gather.getVTile()})
    if (!t.getDefiningOp<memref::AllocaOp>())
      return m.gather.emitOpError()
             << "pa-promote-tiles expects the tiles to be memref.alloca "
                "buffers";
  return success();
}

class Promoter {
public:
  Promoter(KernelEmitter &e, Match &m) : e(e), b(e.b), loc(e.loc), m(m),
                                         l(m.layout) {}
  void run();

private:
  KernelEmitter &e;
  OpBuilder &b;
  Location loc;
  Match &m;
  const Layout &l;
  /// Shared memory as rows of `elem` (Q, the K / V tiles the math reads)
  /// and, for an fp8 cache, the byte rows of its stages.
  Value smem, smem8, tid, end, pageBase, kvHead;
  /// With a page list (l.listEntries > 0): [stages][listEntries] i32 in
  /// shared memory, the pages of the tile held (or soon copied) in each
  /// stage.
  Value pageList;
  Cache cache;
  /// The cache tensors holding K and V as 1-D memrefs (null where a page's
  /// shape is not static): a copy's source is then page * pageElems plus
  /// its offset within the page, which stays the same from step to step,
  /// so that a round's address costs one multiply-add.
  Value flatKV[2];
  PageTable pages;
  Value qView;
  /// The K / V tiles the math reads, per stage: of `elem` in smem (one
  /// pair for a widened fp8 cache), or with fp8Regs the fp8 stages in
  /// smem8.
  SmallVector<Value, 4> kView, vView;

  /// The column of element `col` of shared row `row` of `elem` (swizzled
  /// or not).
  Value wideCol(Value row, Value col) {
    return l.swizzle ? swizzleCol(e, row, col, l.chunk()) : col;
  }
  /// Where element (r, col) of the [n][D] tile of `elem` at shared row
  /// `row0` lies in `smem`.
  std::pair<Value, Value> tileIndex(int64_t row0, int64_t n, Value r,
                                    Value col) {
    if (l.wgmma)
      return wgmmaIndex(e, row0, n, l.headDim, r, col);
    Value row = e.add(e.idx(row0), r);
    return {row, wideCol(row, col)};
  }
  /// Makes the copies this thread waited for visible to the async proxy
  /// (wgmma reads shared memory through it) before the barrier after them.
  void fenceForWgmma() {
    if (l.wgmma)
      WgmmaOps{e, Type()}.fenceProxyAsync();
  }
  /// Rows [row0, row0 + n) of shared memory (`smem`, or the fp8 stages
  /// `smem8`) as a [n][D] view.
  Value view(int64_t row0, int64_t n, bool bytes = false) {
    Value src = bytes ? smem8 : smem;
    auto st = cast<MemRefType>(src.getType());
    int64_t stride = st.getDimSize(1);
    auto t = MemRefType::get(
        {n, l.headDim}, st.getElementType(),
        StridedLayoutAttr::get(b.getContext(), row0 * stride, {stride, 1}),
        st.getMemorySpace());
    return memref::SubViewOp::create(
        b, loc, t, src, ArrayRef<OpFoldResult>{b.getIndexAttr(row0),
                                                b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(n),
                               b.getIndexAttr(l.headDim)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  }
  /// One 16-byte cp.async of `elems` elements from `src[srcIdx]` to
  /// dst[row][col], reading 16 bytes when `valid` (or without `valid`) and
  /// zero-filling otherwise.
  Value copy16(Value src, ValueRange srcIdx, Value dst, Value row, Value col,
               Value valid, int64_t elems) {
    Value n = valid ? e.select(valid, e.idx(elems), e.idx(0)) : Value();
    return nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), dst,
        ValueRange{row, col}, src, srcIdx, b.getIndexAttr(elems), n,
        b.getUnitAttr());
  }
  Value commit(ArrayRef<Value> tokens) {
    return nvgpu::DeviceAsyncCreateGroupOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tokens);
  }
  void wait(Value group, int32_t pending) {
    nvgpu::DeviceAsyncWaitOp::create(b, loc, group,
                                     b.getI32IntegerAttr(pending));
  }
  /// Chunk round `i` of this thread in a tile of rows of D elements,
  /// `elems` elements a chunk: its row and first column.
  std::pair<Value, Value> chunk(int64_t i, int64_t elems) {
    int64_t cpr = l.headDim / elems;
    if (l.threads % cpr == 0) {
      // Every round covers whole rows: the thread keeps its column and
      // steps by threads / cpr rows, so that the rounds' addresses are one
      // base plus constants (fewer live registers in the KV loop).
      auto [r0, col] = chunk0(tid, cpr, elems);
      return {e.add(r0, e.idx(i * (l.threads / cpr))), col};
    }
    return chunk0(localId(i, /*kv=*/false), cpr, elems);
  }
  /// Row and first column of chunk `id` of a tile of cpr chunks a row.
  std::pair<Value, Value> chunk0(Value id, int64_t cpr, int64_t elems) {
    return {e.divui(id, e.idx(cpr)),
            e.mul(e.remui(id, e.idx(cpr)), e.idx(elems))};
  }
  /// The least number of K / V chunk rounds whose rows differ by a
  /// multiple of the page size (P / gcd(P, kvRowStep())), 0 when the
  /// rounds' rows are not evenly spaced.
  int64_t pagePeriod() const {
    int64_t step = kvRowStep();
    return step ? pages.pageSize / std::gcd(pages.pageSize, step) : 0;
  }
  /// Rows between a thread's consecutive K / V chunk rounds when every
  /// round keeps its column (0: the rounds' rows are not evenly spaced).
  int64_t kvRowStep() const {
    int64_t cpr = l.headDim / l.kvChunk();
    int64_t n = l.warpLocal() ? 32 : l.threads;
    return n % cpr == 0 ? n / cpr : 0;
  }
  /// The first K / V row of this thread's warp with warp-local tiles.
  Value warpKeyRow0() {
    return e.mul(e.divui(tid, e.idx(32)), e.idx(l.keys / l.kvWarps));
  }
  /// K / V chunk round `i` of this thread: its row and first column. With
  /// warp-local tiles warp w takes the rows of its keys, [w K / W, (w + 1)
  /// K / W), lane l chunk l + 32 i of them; otherwise chunk(i, ...).
  std::pair<Value, Value> kvChunkAt(int64_t i);
  /// The threads that share a block of chunks: for K / V (`kv`) a warp
  /// with warp-local tiles, else the CTA.
  int64_t copiers(bool kv) const { return kv ? l.kvCopiers() : l.threads; }
  /// The index of chunk round `i` of this thread within its block (for K /
  /// V the warp's or the CTA's chunks, for Q the CTA's).
  Value localId(int64_t i, bool kv) {
    return kv && l.warpLocal()
               ? e.add(e.remui(tid, e.idx(32)), e.idx(i * 32))
               : e.add(tid, e.idx(i * l.threads));
  }
  /// Orders the shared-memory accesses of the threads that share K / V
  /// rows: a warp barrier (nvvm.bar.warp.sync) for warp-local tiles, else
  /// the CTA's.
  void kvBarrier();
  /// i1: chunk `i` of this thread reads key `t` (inside the CTA's keys,
  /// and inside the tile for a last partial round of chunks); with `whole`
  /// (the tile lies inside the CTA's keys) only the latter.
  Value kvChunkValid(int64_t i, Value t, bool whole);
  /// i1: the tile at `start` lies inside the CTA's keys (start + keys <=
  /// end), as in every step but the last: its copies and page lookups then
  /// need no per-round key compares (wholeOrNot).
  Value wholeTile(Value start);
  /// Emits `body(true)` where the tile at `start` is whole (wholeTile),
  /// else `body(false)`; the branch is the same for the whole CTA.
  SmallVector<Value> wholeOrNot(Value start, TypeRange types,
                                function_ref<SmallVector<Value>(bool)> body);
  /// Emits `copy` for chunk round `i` of a block of `chunks` 16-byte
  /// chunks shared by copiers(kv) threads: for every thread (its tokens
  /// into `tokens`) when the round is full; in a last partial round (e.g.
  /// D = 96 K/V rows: 1.5 rounds) only for the threads inside the block,
  /// the others copying nothing, not even zeros, since their row would lie
  /// outside the tile. (The commit groups a thread's copies regardless of
  /// the tokens it is given.)
  void copyRound(int64_t i, int64_t chunks, bool kv,
                 SmallVectorImpl<Value> &tokens,
                 function_ref<void(SmallVectorImpl<Value> &)> copy);
  /// The page-table entry (i32) of key `t` given the page base `base`,
  /// looked up only where `valid` (0 elsewhere: a key past the CTA's range,
  /// whose request may own no page at all), unconditionally without it.
  Value entryIf(Value valid, Value base, Value t);
  /// The page-table entries of this thread's chunk rounds of the tile at
  /// `start` (i32, 0 for a chunk past the keys).
  SmallVector<Value> lookupPages(Value start);
  /// What a step carries for the tile at `start`: lookupPages, or with a
  /// page list this thread's entry of it (thread j: the tile's j-th page).
  SmallVector<Value> lookupAhead(Value start);
  /// Copies the tile at `start` into `stage`: the pages of its chunk
  /// rounds are `tilePages`, or with `fromList` the page list of `stage`.
  void issueKV(Value start, int64_t stage, ValueRange tilePages, bool fromList);
  /// issueKV's rounds, for a whole tile (wholeTile) or not.
  void issueKVRounds(Value start, int64_t stage, ValueRange tilePages,
                     bool fromList, bool whole);
  /// lookupPages' rounds, for a whole tile or not.
  SmallVector<Value> lookupRounds(Value start, bool whole);
  /// fp8: widens the K / V tiles of `stage` into the tiles the math reads
  /// (each thread the chunks it copied).
  void widenKV(int64_t stage);
  Value issueQ();
  /// One KV tile starting at `t0` held in `stage`: returns the pages of the
  /// tile `stages` ahead. `group` is a token of a commit group in flight
  /// before the loop (cp.async.wait_group counts groups; the token only
  /// orders the wait after it in the IR).
  SmallVector<Value> step(Value t0, int64_t stage, ValueRange tilePages,
                          Value group);
};

Value Promoter::kvChunkValid(int64_t i, Value t, bool whole) {
  int64_t chunks = l.kvBlockChunks();
  Value valid = whole ? Value() : e.cmpi(Pred::ult, t, end);
  if ((i + 1) * copiers(/*kv=*/true) > chunks) {
    Value inTile = e.cmpi(Pred::ult, localId(i, /*kv=*/true), e.idx(chunks));
    valid = valid ? e.andi(valid, inTile) : inTile;
  }
  return valid;
}

Value Promoter::wholeTile(Value start) {
  return e.cmpi(Pred::ule, e.add(start, e.idx(l.keys)), end);
}

SmallVector<Value>
Promoter::wholeOrNot(Value start, TypeRange types,
                     function_ref<SmallVector<Value>(bool)> body) {
  if (types.empty()) {
    e.ifElse(
        wholeTile(start), [&]() { body(true); }, [&]() { body(false); });
    return {};
  }
  return e.ifThenElse(
      wholeTile(start), types, [&]() { return body(true); },
      [&]() { return body(false); });
}

std::pair<Value, Value> Promoter::kvChunkAt(int64_t i) {
  int64_t elems = l.kvChunk();
  if (!l.warpLocal())
    return chunk(i, elems);
  int64_t cpr = l.headDim / elems;
  Value row0 = warpKeyRow0();
  if (int64_t step = kvRowStep()) {
    auto [r, col] = chunk0(e.remui(tid, e.idx(32)), cpr, elems);
    return {e.add(row0, e.add(r, e.idx(i * step))), col};
  }
  auto [r, col] = chunk0(localId(i, /*kv=*/true), cpr, elems);
  return {e.add(row0, r), col};
}

void Promoter::kvBarrier() {
  if (l.warpLocal())
    NVVM::SyncWarpOp::create(b, loc, e.i32(-1));
  else
    gpu::BarrierOp::create(b, loc);
}

Value Promoter::entryIf(Value valid, Value base, Value t) {
  if (!valid)
    return pages.pageEntry(e, base, t);
  return e.ifThenElse(
      valid, b.getI32Type(),
      [&]() -> SmallVector<Value> { return {pages.pageEntry(e, base, t)}; },
      [&]() -> SmallVector<Value> { return {e.i32(0)}; })[0];
}

SmallVector<Value> Promoter::lookupPages(Value start) {
  if (l.onePage) {
    // The page of the first key the thread's warp (or CTA) copies.
    Value key0 = l.warpLocal() ? e.add(start, warpKeyRow0()) : start;
    return wholeOrNot(start, b.getI32Type(), [&](bool whole) {
      Value valid = whole ? Value() : e.cmpi(Pred::ult, key0, end);
      return SmallVector<Value>{entryIf(valid, pageBase, key0)};
    });
  }
  if (l.warpPages) {
    // Lane j: the warp's j-th page, whose first key in the warp's rows is
    // the warp's first (j = 0) or the page's first; none past the keys.
    Value lane = e.remui(tid, e.idx(32)), p = e.idx(pages.pageSize);
    Value first = e.add(start, warpKeyRow0());
    Value key0 = e.select(e.cmpi(Pred::eq, lane, e.idx(0)), first,
                          e.mul(e.add(e.divui(first, p), lane), p));
    Value valid = e.andi(
        e.cmpi(Pred::ult, lane, e.idx(l.warpPages)),
        e.andi(e.cmpi(Pred::ult, key0, end),
               e.cmpi(Pred::ult, key0,
                      e.add(first, e.idx(l.keys / l.kvWarps)))));
    return {entryIf(valid, pageBase, key0)};
  }
  SmallVector<Type> types(l.chunkRounds(), b.getI32Type());
  return wholeOrNot(start, types,
                    [&](bool whole) { return lookupRounds(start, whole); });
}

SmallVector<Value> Promoter::lookupRounds(Value start, bool whole) {
  SmallVector<Value> out;
  // Rounds q = pagePeriod() apart lie a whole number of pages apart, so
  // that their entries are those of the first q rounds plus constants: one
  // address per family rather than one per round.
  int64_t q = pagePeriod();
  for (int64_t i = 0; i < l.chunkRounds(); ++i) {
    Value t = e.add(start, kvChunkAt(i).first);
    Value base = pageBase, tq = t;
    if (q && i >= q) {
      base = e.add(pageBase, e.idx((i / q) * (q * kvRowStep() /
                                              pages.pageSize)));
      tq = e.add(start, kvChunkAt(i % q).first);
    }
    // A key past the CTA's range gets 0 (entryIf); its copy reads
    // nothing. Kept as i32 (kv_indices' type) while carried to the next
    // step.
    out.push_back(entryIf(kvChunkValid(i, t, whole), base, tq));
  }
  return out;
}

SmallVector<Value> Promoter::lookupAhead(Value start) {
  if (!l.listEntries)
    return lookupPages(start);
  // Thread j < listEntries looks up page start / P + j, whose first key in
  // the tile is `start` (j = 0) or the page's first; past the keys it
  // stores 0, which no copy reads.
  Value p = e.idx(pages.pageSize);
  Value key0 = e.select(e.cmpi(Pred::eq, tid, e.idx(0)), start,
                        e.mul(e.add(e.divui(start, p), tid), p));
  Value valid = e.andi(e.cmpi(Pred::ult, tid, e.idx(l.listEntries)),
                       e.cmpi(Pred::ult, key0, end));
  return {entryIf(valid, pageBase, key0)};
}

void Promoter::issueKV(Value start, int64_t stage, ValueRange tilePages,
                       bool fromList) {
  wholeOrNot(start, {}, [&](bool whole) {
    issueKVRounds(start, stage, tilePages, fromList, whole);
    return SmallVector<Value>{};
  });
}

void Promoter::issueKVRounds(Value start, int64_t stage, ValueRange tilePages,
                             bool fromList, bool whole) {
  // (A commit groups a thread's copies, whichever tokens it is given.)
  SmallVector<Value> tokens;
  // An fp8 stage is bytes in smem8; otherwise the stage is in smem.
  auto row0 = [&](bool isV) {
    return e.idx(l.fp8() ? l.kvRow8(isV, stage) : l.kvRow0(isV, stage));
  };
  Value kRow0 = row0(false), vRow0 = row0(true);
  Value dst = l.fp8() ? smem8 : smem;
  // Rounds pagePeriod() apart share their slot within their pages.
  int64_t q = pagePeriod();
  // ... and their entries in a page list (rounds q apart: a constant
  // number of pages further).
  SmallVector<Value> slots, entries;
  Value firstPage = e.divui(start, e.idx(pages.pageSize));
  // Warp-shuffled lookups: the lane holding the page of a round's key.
  bool shuffled = l.warpPages && !fromList;
  Value warpFirstPage =
      shuffled ? e.divui(e.add(start, warpKeyRow0()), e.idx(pages.pageSize))
               : Value();
  for (int64_t i = 0; i < l.chunkRounds(); ++i) {
    auto [r, col] = kvChunkAt(i);
    Value t = e.add(start, r);
    Value valid = kvChunkValid(i, t, whole);
    // Every lane shuffles (before any round that only some lanes copy).
    Value shuffledPage;
    if (shuffled) {
      Value from = e.toI32(
          e.sub(e.divui(t, e.idx(pages.pageSize)), warpFirstPage));
      shuffledPage = gpu::ShuffleOp::create(b, loc, tilePages[0], from,
                                            e.i32(32), gpu::ShuffleMode::IDX)
                         .getShuffleResult();
    }
    if (!q || i < q) {
      // Where every tile starts at a multiple of the page size, a round's
      // slot does not change from tile to tile.
      bool aligned = l.onePage && l.keys % pages.pageSize == 0;
      slots.push_back(e.remui(aligned ? r : t, e.idx(pages.pageSize)));
      if (fromList)
        entries.push_back(
            e.sub(e.divui(t, e.idx(pages.pageSize)), firstPage));
    }
    Value slot = q ? slots[i % q] : slots[i];
    auto copyKV = [&](SmallVectorImpl<Value> &out) {
      Value page;
      if (fromList) {
        Value entry = q ? e.add(entries[i % q],
                                e.idx((i / q) * (q * kvRowStep() /
                                                 pages.pageSize)))
                        : entries[i];
        page = e.toIndex(e.load(pageList, {e.idx(stage), entry}));
      } else {
        page = e.toIndex(shuffled    ? shuffledPage
                         : l.onePage ? tilePages[0]
                                     : tilePages[i]);
      }
      for (bool isV : {false, true}) {
        auto [row, dcol] =
            l.fp8() ? std::make_pair(e.add(isV ? vRow0 : kRow0, r), col)
                    : tileIndex(l.kvRow0(isV, stage), l.keys, r, col);
        if (l.fp8Regs)
          dcol = swizzleCol(e, row, dcol, kChunk8);
        Value src = cache.memref(isV);
        SmallVector<Value> srcIdx;
        if (Value flat = flatKV[isV]) {
          src = flat;
          srcIdx.push_back(
              e.add(e.mul(page, e.idx(cache.pageElems(isV))),
                    cache.offsetInPage(e, isV, slot, kvHead, col)));
        } else {
          srcIdx = cache.indices(e, isV, page, slot, kvHead, col);
        }
        out.push_back(copy16(src, srcIdx, dst, row, dcol, valid, l.kvChunk()));
      }
    };
    copyRound(i, l.kvBlockChunks(), /*kv=*/true, tokens, copyKV);
  }
}

void Promoter::widenKV(int64_t stage) {
  auto fp8T = VectorType::get({kChunk8}, l.cacheElem);
  auto wideT = VectorType::get({kChunk8}, l.elem);
  for (int64_t i = 0; i < l.chunkRounds(); ++i) {
    auto widen = [&](SmallVectorImpl<Value> &) {
      auto [r, col] = kvChunkAt(i);
      for (bool isV : {false, true}) {
        Value x = vector::LoadOp::create(
            b, loc, fp8T, smem8, ValueRange{e.add(e.idx(l.kvRow8(isV, stage)), r), col},
            /*nontemporal=*/false, llvm::Align(16));
        Value w = arith::ExtFOp::create(b, loc, wideT, x);
        Value row = e.add(e.idx(l.kvRow0(isV, 0)), r);
        if (!l.swizzle) {
          vector::StoreOp::create(b, loc, w, smem, ValueRange{row, col},
                                  /*nontemporal=*/false, llvm::Align(16));
          continue;
        }
        // Swizzled: the two 16-byte halves go to their own chunks.
        for (int64_t h = 0; h < 2; ++h) {
          SmallVector<int64_t> lanes;
          for (int64_t i = 0; i < kChunk; ++i)
            lanes.push_back(h * kChunk + i);
          Value half = vector::ShuffleOp::create(b, loc, w, w, lanes);
          vector::StoreOp::create(
              b, loc, half, smem,
              ValueRange{row, wideCol(row, e.add(col, e.idx(h * kChunk)))},
              /*nontemporal=*/false, llvm::Align(16));
        }
      }
    };
    SmallVector<Value> none;
    copyRound(i, l.kvBlockChunks(), /*kv=*/true, none, widen);
  }
}

void Promoter::copyRound(int64_t i, int64_t chunks, bool kv,
                         SmallVectorImpl<Value> &tokens,
                         function_ref<void(SmallVectorImpl<Value> &)> copy) {
  if ((i + 1) * copiers(kv) <= chunks) {
    copy(tokens);
    return;
  }
  Value inTile = e.cmpi(Pred::ult, localId(i, kv), e.idx(chunks));
  e.ifThen(inTile, [&]() {
    SmallVector<Value> inner;
    copy(inner);
  });
}

Value Promoter::issueQ() {
  TileLoadQOp op = m.loadQ;
  int64_t chunks = l.rows * (l.headDim / l.chunk());
  SmallVector<Value> tokens;
  int64_t rounds = static_cast<int64_t>(llvm::divideCeil(chunks, l.threads));
  for (int64_t i = 0; i < rounds; ++i) {
    auto copyQ = [&](SmallVectorImpl<Value> &out) {
      auto [r, col] = chunk(i, l.chunk());
      Value qi = e.divui(r, e.idx(l.group));
      Value head = e.add(e.mul(op.getKvHead(), e.idx(l.group)),
                         e.remui(r, e.idx(l.group)));
      Value valid = e.cmpi(Pred::ult, qi, op.getRows());
      Value qrow = e.add(op.getRow0(), e.select(valid, qi, e.idx(0)));
      auto [srow, scol] = tileIndex(0, l.rows, r, col);
      out.push_back(copy16(op.getQ(), {qrow, head, col}, smem, srow, scol,
                           valid, l.chunk()));
    };
    // 16 rows of D = 80 end in a partial round.
    copyRound(i, chunks, /*kv=*/false, tokens, copyQ);
  }
  return commit(tokens);
}

SmallVector<Value> Promoter::step(Value t0, int64_t stage,
                                  ValueRange tilePages, Value group) {
  // Wait for this tile (every group but the stages - 2 after it) and make
  // it visible; the barrier also means every warp is done with the
  // previous step, so its stage is free: the copies of the tile stages - 1
  // ahead go there (with the pages looked up one step ago) and overlap this
  // tile's math, and the pages of the tile after it are looked up. Every
  // step commits one group, so the count holds to the end. With warp-local
  // tiles only the warp's own rows are involved: a warp barrier.
  // With a page list, the entries looked up one step ago go into the list
  // of the stage they are for before the barrier (its last reader, the
  // copies of a step at least one barrier back, is done).
  int64_t n = l.stages;
  int64_t next = (stage + n - 1) % n;
  if (l.listEntries)
    e.ifThen(e.cmpi(Pred::ult, tid, e.idx(l.listEntries)), [&]() {
      e.store(tilePages[0], pageList, {e.idx(next), tid});
    });
  wait(group, static_cast<int32_t>(n - 2));
  fenceForWgmma();
  kvBarrier();
  issueKV(e.add(t0, e.idx((n - 1) * l.keys)), next, tilePages,
          /*fromList=*/l.listEntries > 0);
  commit({});
  SmallVector<Value> ahead = lookupAhead(e.add(t0, e.idx(n * l.keys)));
  // fp8: widen this stage into the tiles the math reads, visible to the
  // threads that read them (each is past the previous step's math: the
  // barrier above).
  bool widen = l.fp8() && !l.fp8Regs;
  if (widen) {
    widenKV(stage);
    kvBarrier();
  }
  IRMapping map;
  map.map(m.loop.getInductionVar(), t0);
  map.map(m.gather.getKTile(), kView[widen ? 0 : stage]);
  map.map(m.gather.getVTile(), vView[widen ? 0 : stage]);
  for (Operation &op : m.loop.getBody()->without_terminator())
    if (&op != m.gather.getOperation())
      b.clone(op, map);
  return ahead;
}

void Promoter::run() {
  MLIRContext *ctx = b.getContext();
  // Shared memory and the thread id at the kernel's entry.
  b.setInsertionPointToStart(&m.func.getBody().front());
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value raw = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), wg));
  smem = memref::ViewOp::create(
      b, loc,
      MemRefType::get({l.smemRows(), l.stride()}, l.elem,
                      MemRefLayoutAttrInterface(), wg),
      raw, e.idx(0), ValueRange{});
  if (l.fp8())
    smem8 = memref::ViewOp::create(
        b, loc,
        MemRefType::get({2 * l.stages * l.keys, l.stride8()}, l.cacheElem,
                        MemRefLayoutAttrInterface(), wg),
        raw, e.idx(l.wideBytes()), ValueRange{});
  qView = view(0, l.rows);
  for (int64_t s = 0; s < l.wideStages(); ++s) {
    kView.push_back(view(l.kvRow0(false, s), l.keys));
    vView.push_back(view(l.kvRow0(true, s), l.keys));
  }
  for (int64_t s = 0; l.fp8Regs && s < l.stages; ++s) {
    kView.push_back(view(l.kvRow8(false, s), l.keys, /*bytes=*/true));
    vView.push_back(view(l.kvRow8(true, s), l.keys, /*bytes=*/true));
  }
  if (l.listEntries)
    pageList = memref::ViewOp::create(
        b, loc,
        MemRefType::get({l.stages, l.listEntries}, b.getI32Type(),
                        MemRefLayoutAttrInterface(), wg),
        raw, e.idx(l.tileBytes()), ValueRange{});
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);

  TileGatherKVOp g = m.gather;
  cache.attr = g.getCache();
  for (Value v : g.getKvCache())
    cache.tensors.push_back(v);
  pages = PageTable{g.getKvIndptr(), g.getKvIndices(), Value(),
                    g.getCache().getPageSize(), /*checked=*/false};
  end = g.getEnd();
  kvHead = g.getKvHead();

  // Q: copies at the load, the scale onto the score matmuls.
  b.setInsertionPoint(m.loadQ);
  Value qGroup = issueQ();
  double scale = m.loadQ.getScale().convertToDouble();
  Value qTile = m.loadQ.getTile();
  for (Operation *user : llvm::make_early_inc_range(qTile.getUsers()))
    if (auto qk = dyn_cast<TileQKOp>(user)) {
      double own = qk.getScale() ? qk.getScale()->convertToDouble() : 1.0;
      qk.setScaleAttr(b.getF32FloatAttr(static_cast<float>(scale * own)));
    }
  m.loadQ.erase();
  qTile.replaceAllUsesWith(qView);

  // The first K/V tile in flight, then the pipelined loop.
  scf::ForOp old = m.loop;
  b.setInsertionPoint(old);
  pageBase = pages.pageBase(e, g.getRequest());
  // (memref.reinterpret_cast rather than collapse_shape: the kernels'
  // memref lowering takes it without expand-strided-metadata.)
  for (bool isV : {false, true}) {
    int64_t elems = cache.pageElems(isV);
    if (ShapedType::isDynamic(elems))
      continue;
    if (isV && cache.joint()) {
      flatKV[1] = flatKV[0];
      continue;
    }
    Value t = cache.memref(isV);
    auto mt = cast<MemRefType>(t.getType());
    flatKV[isV] = memref::ReinterpretCastOp::create(
        b, loc,
        MemRefType::get({ShapedType::kDynamic}, mt.getElementType(),
                        MemRefLayoutAttrInterface(), mt.getMemorySpace()),
        t, b.getIndexAttr(0),
        ArrayRef<OpFoldResult>{e.mul(cache.numPages(e), e.idx(elems))},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  }
  Value lo = old.getLowerBound(), hi = old.getUpperBound();
  // The first stages - 1 K/V tiles in flight, a commit group each.
  int64_t n = l.stages;
  Value group;
  for (int64_t s = 0; s + 1 < n; ++s) {
    Value t = e.add(lo, e.idx(s * l.keys));
    issueKV(t, s, lookupPages(t), /*fromList=*/false);
    group = commit({});
  }
  SmallVector<Value> ahead = lookupAhead(e.add(lo, e.idx((n - 1) * l.keys)));
  // Q visible before the loop (the fragments may be loaded there).
  wait(qGroup, static_cast<int32_t>(n - 1));
  fenceForWgmma();
  gpu::BarrierOp::create(b, loc);
  // `stages` tiles per iteration, so that every stage index is static; the
  // later ones run while inside [lo, hi).
  std::function<SmallVector<Value>(Value, int64_t, ValueRange)> steps =
      [&](Value t, int64_t s, ValueRange tilePages) -> SmallVector<Value> {
    SmallVector<Value> next = step(t, s, tilePages, group);
    if (s + 1 == n)
      return next;
    Value t1 = e.add(t, e.idx(l.keys));
    return e.ifThenElse(
        e.cmpi(Pred::slt, t1, hi), ValueRange(next).getTypes(),
        [&]() { return steps(t1, s + 1, next); }, [&]() { return next; });
  };
  e.forLoop(lo, hi, e.idx(n * l.keys), ahead,
            [&](Value t, ValueRange tilePages) {
              return steps(t, 0, tilePages);
            });
  Value kTile = g.getKTile(), vTile = g.getVTile();
  old.erase();
  for (Value t : {qTile, kTile, vTile})
    t.getDefiningOp()->erase();
}

struct PAPromoteTiles final
    : pa::impl::PAPromoteTilesBase<PAPromoteTiles> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (pageListRounds < 0) {
      module.emitError() << "pa-promote-tiles: page-list-rounds must be >= 0 "
                            "(0: page-table entries always in registers), got "
                         << static_cast<int64_t>(pageListRounds);
      return signalPassFailure();
    }
    if (smemLayout != "swizzle" && smemLayout != "pad") {
      module.emitError() << "pa-promote-tiles: smem-layout must be swizzle "
                            "or pad, got '"
                         << smemLayout << "'";
      return signalPassFailure();
    }
    if (fp8Widen != "registers" && fp8Widen != "shared") {
      module.emitError() << "pa-promote-tiles: fp8-widen must be registers "
                            "or shared, got '"
                         << fp8Widen << "'";
      return signalPassFailure();
    }
    if (rowPadBytes != 0 && rowPadBytes != 16 && rowPadBytes != 32) {
      module.emitError() << "pa-promote-tiles: row-pad-bytes must be 16 or 32 "
                            "(0: 32 in decode kernels, else 16), got "
                         << static_cast<int64_t>(rowPadBytes);
      return signalPassFailure();
    }
    SmallVector<Match> matches;
    WalkResult walk = module.walk([&](gpu::GPUFuncOp func) {
      bool tiled = false;
      func.walk([&](Operation *op) {
        tiled |= isa<TileLoadQOp, TileGatherKVOp>(op);
      });
      if (!tiled)
        return WalkResult::advance();
      Match m;
      if (failed(matchKernel(func, pageListRounds, rowPadBytes, smemLayout,
                             fp8Widen == "registers", m)))
        return WalkResult::interrupt();
      matches.push_back(m);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    for (Match &m : matches) {
      OpBuilder b(m.func);
      KernelEmitter e{{b, m.func.getLoc()}};
      Promoter(e, m).run();
      setSharedMemory(m.func, m.layout.smemBytes());
      if (m.layout.swizzle)
        m.func->setAttr(kSmemSwizzleAttr, b.getUnitAttr());
    }
  }
};

} // namespace
