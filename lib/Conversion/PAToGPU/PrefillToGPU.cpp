//===- PrefillToGPU.cpp - prefill and tensor-core decode over tile ops ----===//
//
// The first stage of the prefill GPU pipeline (docs/GPU.md): a memref-form
// pa.prefill becomes the kernel `pa_prefill`, a CTA per (query tile x, KV
// head y, request z), whose body is the tile IR of its query tile
// (emitPrefillQueryTile, the same tiling that pa-tile-attention runs on the
// CPU), and a launch in its place; a pa.prefill_partial becomes
// `pa_prefill_partial`, a CTA per (work item x, KV head y, query tile z of
// the item), whose tile sees only the item's keys and stores its f32
// partial states to the item's rows:
//
//   tile row r (BM = warps x warp rows) = query q0 + r / g of query head
//   hk * g + r % g (the GQA group packed into the rows), so each K/V tile is
//   read once for the whole group; under `causal` the CTAs with the most
//   keys (the last query tiles) run first;
//   pa.tile.load_q, init_state, scf.for over the visible KV tiles of BN keys
//   (gather_kv, qk, mask masked_if the tile needs it, softmax_update, pv),
//   pa.tile.store.
//
// A pa.decode / pa.decode_partial is the prefill of one query per request:
// `pa_decode` / `pa_decode_partial`, a CTA per (request or work item x, KV
// head y, head chunk z), 4 warps that split each KV tile's keys (kv_warps
// in the ABI). The tensor-core decode (decode-kernel, PAToGPU.cpp) packs
// the group's heads into the 16 or 32 rows of its query tile; the
// CUDA-core decode (kSimtAttr) holds h heads of the group, one tile row
// each (QueryTileCoords' head chunks).
//
// The tiles are f32 buffers (memref.alloca) that the later stages replace:
// pa-promote-tiles puts Q / K / V in shared memory behind cp.async copies,
// pa-tile-to-mma turns S and the state into mma.sync register fragments
// (pa-tile-to-simt: into lane groups with shuffle-reduced scores).
// This stage fixes the tile shape (the pass options) and the block size.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/Passes.h"
#include "PagedAttn/Conversion/PrefillTiling.h"

#include <cmath>

using namespace mlir;
using namespace mlir::pa;
using namespace mlir::pa::gpukernel;

using Pred = arith::CmpIPredicate;

namespace {

/// The kernel shape of a tile kernel: warps, of which kvWarps split each KV
/// tile's keys and the others its rows, m16 row blocks per warp (16 or 32
/// query-tile rows a warp), keys per KV tile.
struct PrefillConfig {
  int64_t headDim = 0, group = 0, numKVHeads = 0;
  int64_t warps = 4, kvWarps = 1, mTiles = 1, keys = 0;
  /// K/V stages in shared memory (0: pa-promote-tiles' default, 2).
  int64_t kvStages = 0;
  /// The matmuls as warpgroup MMAs (kWgmmaAttr).
  bool wgmma = false;
  /// The CUDA-core decode (kSimtAttr): a tile of `heads` rows (query heads
  /// of a chunk of the group, `chunks` CTAs a KV head), K / V rows read
  /// `laneBytes` a lane.
  bool simt = false;
  int64_t laneBytes = 0, heads = 0, chunks = 1;
  /// Keys of a KV tile per lane group (the ABI's tokens_in_flight).
  int64_t groupKeys = 0;

  int64_t threads() const { return warps * 32; }
  int64_t tileRows() const {
    return simt ? heads : warps / kvWarps * 16 * mTiles;
  }
  int64_t queriesPerTile() const { return tileRows() / group; }
};

/// The checks every tile kernel makes of its operands (`what` names the op
/// in the messages); fills the head dim, KV heads and group of `c`.
LogicalResult checkTileOperands(const PrefillOperands &p, StringRef what,
                                PrefillConfig &c, bool allowF32 = false) {
  Operation *op = p.op;
  for (Value v : op->getOperands())
    if (!isIdentityMemRef(v.getType()))
      return op->emitOpError()
             << "convert-pa-to-gpu expects identity-layout memrefs";
  auto qt = cast<MemRefType>(p.q.getType());
  if (qt.isDynamicDim(1) || qt.isDynamicDim(2))
    return op->emitOpError()
           << "convert-pa-to-gpu needs static query heads and head dim";
  PagedKVAttr cache = p.cache;
  Type elem = qt.getElementType();
  if (!elem.isF16() && !elem.isBF16() && !(allowF32 && elem.isF32()))
    return op->emitOpError() << what << " on the GPU runs on tensor cores "
                                "and needs f16 or bf16 data, got "
                             << elem;
  Type cacheElem =
      cast<MemRefType>(p.kvCache[0].getType()).getElementType();
  if (cacheElem != elem && !isFP8CacheType(cacheElem))
    return op->emitOpError() << what << " on the GPU reads a cache of the "
                                "queries' type or fp8, got "
                             << cacheElem << " beside " << elem;
  c.headDim = cache.getHeadDim();
  if (c.headDim % 16 != 0 || c.headDim > 256)
    return op->emitOpError() << what << " on the GPU needs a head dim that is "
                               "a multiple of 16 and at most 256, got "
                            << c.headDim;
  c.numKVHeads = cache.getNumKVHeads();
  c.group = qt.getDimSize(1) / c.numKVHeads;
  return success();
}

/// A prefill tile packs the GQA group's heads into its rows: the group must
/// fit them.
LogicalResult checkGroupFits(Operation *op, const PrefillConfig &c) {
  if (c.group > c.tileRows())
    return op->emitOpError() << "pa.prefill on the GPU packs a GQA group into "
                               "the "
                            << c.tileRows() << " rows of a query tile; group "
                            << c.group << " is larger";
  return success();
}

bool isFP8Cache(const PrefillOperands &p) {
  return isFP8CacheType(
      cast<MemRefType>(p.kvCache[0].getType()).getElementType());
}

/// prefill-mma=wgmma: warpgroups of 4 warps, each warp 16 rows (a
/// warpgroup's 64 rows are the M of one wgmma), K / V tiles of `keys` keys
/// (the N of the score matmul, the K of P V in steps of 16). Default: 8
/// warps (128 rows) over 64-key tiles up to D = 128, 32-key tiles above:
/// the shapes without spills (ptxas, sm_90a: 128-key tiles spill 132 bytes
/// at D = 128, 64-key tiles 128-216 at D = 192 / 256) and, at D = 128, the
/// fastest (H200, 2026-11-26: 64-key tiles 2-88% faster than 128-key ones,
/// docs/PERFORMANCE.md).
LogicalResult makeWgmmaPrefillConfig(const PrefillOperands &p,
                                     const PrefillShape &shape,
                                     PrefillConfig &c) {
  Operation *op = p.op;
  if (!prefillFitsWgmma(c.headDim, isFP8Cache(p), shape.warps,
                        shape.warpRows, shape.kvWarps, shape.tileKV))
    return op->emitOpError()
           << "prefill-mma=wgmma needs a head dim that is a multiple of 64 "
              "(whole 128-byte swizzle blocks; got "
           << c.headDim
           << "), K / V of the queries' type (not fp8), prefill-warps 4 or 8 "
              "(one or two warpgroups), prefill-warp-rows 16, "
              "prefill-kv-warps 1 and prefill-tile-kv a multiple of 16 up to "
              "128";
  c.wgmma = true;
  c.warps = shape.warps > 0 ? shape.warps : 8;
  c.mTiles = 1;
  c.kvWarps = 1;
  c.keys = shape.tileKV > 0 ? shape.tileKV : (c.headDim <= 128 ? 64 : 32);
  return checkGroupFits(op, c);
}

LogicalResult makePrefillConfig(const PrefillOperands &p,
                                const PrefillShape &shape, PrefillConfig &c) {
  Operation *op = p.op;
  if (failed(checkTileOperands(p, "pa.prefill", c)))
    return failure();
  if (shape.mma == PrefillMma::Wgmma ||
      (shape.mma == PrefillMma::Auto &&
       prefillFitsWgmma(c.headDim, isFP8Cache(p), shape.warps,
                        shape.warpRows, shape.kvWarps, shape.tileKV)))
    return makeWgmmaPrefillConfig(p, shape, c);
  // Up to D = 128: 8 warps of 32 rows (two m16 blocks sharing each K/V
  // fragment) over 64-key tiles: Q's fragments are re-read from shared
  // memory once per tile, and shared-memory reads bound the kernel (H200,
  // 2026-11-26, causal 4 x 8192, GQA 4: 352 TFLOP/s, vs 324 with 32-key
  // tiles; docs/PERFORMANCE.md), at D = 128 with 96-116 bytes of spill (a
  // few values touched once a tile). D = 96 and 112 spill 160-280 bytes
  // over 64 keys and keep 32, as does the 4-warp shape. Above D = 128 the
  // accumulators of 16 rows already fill the registers: 4 warps of 16
  // rows, 32 keys.
  c.warps = shape.warps > 0 ? shape.warps : (c.headDim <= 128 ? 8 : 4);
  c.mTiles = shape.warpRows > 0 ? shape.warpRows / 16
                                : (c.headDim <= 128 ? 2 : 1);
  c.keys = shape.tileKV > 0
               ? shape.tileKV
               : (c.warps == 8 && c.mTiles == 2 &&
                          (c.headDim <= 80 || c.headDim == 128)
                      ? 64
                      : 32);
  c.kvWarps = shape.kvWarps > 0 ? shape.kvWarps : 1;
  if ((c.warps != 4 && c.warps != 8) || c.keys % 16 != 0 || c.keys > 128 ||
      (shape.warpRows != 0 && shape.warpRows != 16 && shape.warpRows != 32) ||
      (c.kvWarps != 1 && c.kvWarps != c.warps) ||
      c.keys % (16 * c.kvWarps) != 0)
    return op->emitOpError() << "prefill-warps must be 4 or 8, "
                               "prefill-tile-kv a multiple of 16 up to 128 "
                               "(of 16 x prefill-kv-warps), "
                               "prefill-warp-rows 16 or 32 and "
                               "prefill-kv-warps 1 or prefill-warps";
  return checkGroupFits(op, c);
}

/// The tensor-core decode: the query heads of a KV head (one query) packed
/// into the rows of one or two m16 blocks, 4 warps that split each KV tile
/// of `tileKV` keys (default 64: 16 a warp), a softmax state per warp that
/// the store merges.
LogicalResult makeDecodeConfig(const PrefillOperands &p,
                               const PrefillShape &shape, PrefillConfig &c) {
  if (failed(checkTileOperands(p, "the tensor-core decode", c)))
    return failure();
  c.warps = 4;
  c.kvWarps = 4;
  c.keys = shape.tileKV > 0 ? shape.tileKV : 64;
  c.mTiles = llvm::divideCeil(c.group, 16);
  // Over an fp8 cache (widened in registers: D a multiple of 128) a
  // one-pass GQA decode (its KV loop from key 0: one page entry a lane;
  // 167 registers at D = 128 either way for groups 2..8) keeps 3 stages: at
  // 2 its 16 KiB stages left too few bytes in flight (e4m3 GQA 4 256 x
  // 8192 at 93.3% of the read roof, 95.3% with 3 stages; H200, 2026-11-28,
  // docs/PERFORMANCE.md). The split-KV kernels keep 2 (1-2% slower with
  // 3), and so does MHA, whose 2-stage kernel holds 120 registers and runs
  // 4 CTAs an SM (with 3: 139, 3 CTAs; 2% slower at 64 x 8192, 6% faster at
  // 16 x 8192, where the planner keeps 2 CTAs an SM).
  bool threeStages = isFP8Cache(p) && isa<DecodeOp>(p.op) &&
                     c.headDim % 128 == 0 && c.group > 1;
  c.kvStages = shape.kvStages > 0 ? shape.kvStages : threeStages ? 3 : 0;
  if (c.kvStages != 0 && (c.kvStages < 2 || c.kvStages > 4))
    return p.op->emitOpError()
           << "decode-kv-stages must be 2, 3 or 4, got " << c.kvStages;
  if (c.keys % 64 != 0 || c.keys > 128)
    return p.op->emitOpError()
           << "the tensor-core decode splits each KV tile over 4 warps of 16 "
              "or 32 keys: decode-tile-kv must be 64 or 128, got "
           << c.keys;
  if (c.mTiles > 2)
    return p.op->emitOpError()
           << "the tensor-core decode packs a GQA group into at most 32 "
              "rows; group "
           << c.group << " is larger (use decode-kernel=cuda-core)";
  return success();
}

/// The CUDA-core decode: a tile of h rows, h query heads of the group (the
/// whole group up to 8 heads, else its largest divisor <= 8: q and the
/// accumulators of every head live in registers; heads-per-cta must divide
/// the group), CTAs of `threads` threads (default 128) whose warps split
/// each KV tile's keys, each warp in lane groups of L = D * bytes /
/// laneBytes lanes that take the warp's keys in turn (below: the rules
/// that keep every shape of test/Pipelines/decode-shape-sweep.mlir free of
/// spills).
LogicalResult makeSimtDecodeConfig(const PrefillOperands &p,
                                   const PrefillShape &shape,
                                   PrefillConfig &c) {
  Operation *op = p.op;
  if (failed(checkTileOperands(p, "the CUDA-core decode", c,
                               /*allowF32=*/true)))
    return failure();
  c.simt = true;
  Type elem = cast<MemRefType>(p.q.getType()).getElementType();
  int64_t bytes = elem.getIntOrFloatBitWidth() / 8;
  // Heads per CTA and lane width. A lane holds dpl = laneBytes / bytes
  // dims of each head's q and accumulator: at most 128 of those floats a
  // lane for rows up to 256 bytes, 96 for longer ones (D = 256 of 16-bit
  // data, f32 from D = 128: more spill); 32-byte lanes while h * dpl <= 64
  // for f16 at D = 128 (4 heads: on an H200, 2026-11-26, faster than the
  // lane-group kernel it replaced on every row, where 16-byte lanes were up
  // to 19% slower; bf16 there and f16 at D = 64 spill), <= 32 otherwise, or
  // when 16-byte lanes would need more than 32 lanes.
  int64_t rowBytes = c.headDim * bytes;
  bool fitsWide = rowBytes % 32 == 0 && rowBytes / 32 <= 32;
  bool narrowTooWide = rowBytes / 16 > 32;
  bool f16Row128 = elem.isF16() && c.headDim == 128;
  auto laneBytesFor = [&](int64_t h) {
    if (shape.laneBytes > 0)
      return shape.laneBytes;
    bool wide = fitsWide && ((h >= 2 && h * (32 / bytes) <=
                                            (f16Row128 ? 64 : 32)) ||
                             narrowTooWide);
    return int64_t(wide ? 32 : 16);
  };
  if (shape.headsPerCTA > 0) {
    if (c.group % shape.headsPerCTA != 0)
      return op->emitOpError()
             << "heads-per-cta must divide the GQA group (" << c.group
             << "), got " << shape.headsPerCTA;
    c.heads = shape.headsPerCTA;
  } else {
    c.heads = 1;
    for (int64_t h = std::min<int64_t>(8, c.group); h >= 1; --h)
      if (c.group % h == 0 &&
          (h == 1 ||
           h * 2 * (laneBytesFor(h) / bytes) <= (rowBytes <= 256 ? 128 : 96))) {
        c.heads = h;
        break;
      }
  }
  c.chunks = c.group / c.heads;
  c.laneBytes = laneBytesFor(c.heads);
  int64_t threads = shape.threads > 0 ? shape.threads : 128;
  if (threads % 32 != 0 || threads > 1024)
    return op->emitOpError()
           << "cta-threads must be a multiple of 32 up to 1024, got "
           << threads;
  c.warps = threads / 32;
  c.kvWarps = c.warps;
  if ((c.laneBytes != 16 && c.laneBytes != 32) || rowBytes % c.laneBytes != 0)
    return op->emitOpError()
           << "the CUDA-core decode reads K / V rows of " << rowBytes
           << " bytes 16 or 32 bytes a lane: lane-bytes must be 16 or 32 and "
              "divide the row, got "
           << c.laneBytes;
  int64_t lanes = rowBytes / c.laneBytes;
  if (!llvm::isPowerOf2_64(lanes) || lanes > 32)
    return op->emitOpError()
           << "the CUDA-core decode reduces a dot product over the lanes of "
              "a K / V row: head dim x element bytes / lane-bytes must be a "
              "power of two <= 32, got "
           << lanes << " (use decode-kernel=tensor-core)";
  int64_t laneGroups = 32 / lanes;
  // Keys of a tile per lane group: 4 up to 4 heads, else 2 (its scores
  // share the registers with q and the accumulators). MHA at D = 128 (32
  // keys a tile, in 3 stages: 128 registers, 48 KiB, 4 CTAs an SM) was
  // within 2% of the lane-group kernel it replaced on every benchmark row
  // on an H200 (2026-11-26), where 64-key tiles in 2 stages (162
  // registers: 3 CTAs) were up to 6% slower at 16 x 2048
  // (docs/PERFORMANCE.md).
  bool single = c.heads == 1 && bytes == 2 && c.headDim <= 128;
  c.keys = shape.tileKV > 0 ? shape.tileKV
                            : c.warps * laneGroups * (c.heads <= 4 ? 4 : 2);
  c.kvStages = shape.kvStages > 0   ? shape.kvStages
               : single && shape.tileKV <= 0 ? 3
                                             : 0;
  if (c.kvStages != 0 && (c.kvStages < 2 || c.kvStages > 4))
    return op->emitOpError()
           << "decode-kv-stages must be 2, 3 or 4, got " << c.kvStages;
  if (c.keys % (c.warps * laneGroups) != 0 || c.keys > 256)
    return op->emitOpError()
           << "the CUDA-core decode splits each KV tile over " << c.warps
           << " warps of " << laneGroups
           << " lane groups: decode-tile-kv must be a multiple of "
           << c.warps * laneGroups << " up to 256, got " << c.keys;
  c.groupKeys = c.keys / (c.warps * laneGroups);
  return success();
}

/// The f32 tile buffers of a kernel of shape `c` (memref.alloca, replaced
/// by the later stages).
PrefillTiles allocTiles(KernelEmitter &e, const PrefillConfig &c) {
  return PrefillTiles::alloc(e.b, e.loc, c.tileRows(), c.keys, c.headDim);
}

/// The ABI of a tile kernel of shape `c` for `op`.
KernelABI tileABI(Operation *op, const PrefillConfig &c, StringRef kind,
                  std::array<GridExtentABI, 3> grid) {
  KernelABI abi;
  abi.kind = kind.str();
  abi.args = argRoles(op);
  abi.grid = std::move(grid);
  abi.block = {c.threads(), 1, 1};
  abi.tileQ = c.tileRows();
  abi.tileKV = c.keys;
  abi.kvWarps = c.kvWarps;
  abi.kvStages = c.kvStages;
  if (c.simt) {
    abi.laneBytes = c.laneBytes;
    abi.headsPerCTA = c.heads;
    abi.tokensInFlight = c.groupKeys;
  }
  return abi;
}

/// The page table of `op` as the kernel's arguments.
PageTable kernelPageTable(Operation *op, const IRMapping &m) {
  PageTable pt = pageTableOf(cast<PagedOpInterface>(op), /*checked=*/false);
  return PageTable{m.lookup(pt.indptr), m.lookup(pt.indices),
                   m.lookup(pt.last), pt.pageSize, /*checked=*/false};
}

/// The tensor-core decode kernel (`decode` / `decode_partial`, the same
/// ABI kinds and grids as the CUDA-core kernels): a CTA per (request or
/// work item x, KV head y) whose one query tile holds the request's query
/// for the group's heads; a work item sees its keys [work_start,
/// work_end) and writes row w of the partial states.
LogicalResult buildDecodeKernel(Operation *op, const PrefillOperands &p,
                                const PrefillConfig &c,
                                gpu::GPUModuleOp kmod, StringRef name,
                                MergeSegmentsOp merge) {
  auto partial = dyn_cast<DecodePartialOp>(op);
  KernelABI abi = tileABI(
      op, c, merge ? "decode_split" : partial ? "decode_partial" : "decode",
      {GridExtentABI{partial ? "work_capacity" : "batch"},
       GridExtentABI{"kv_heads"}, GridExtentABI{"", c.chunks}});
  SmallVector<Value> extra;
  if (merge) {
    abi.args = fusedArgRoles(partial);
    abi.mergeTogether = kMergeTogetherFlag;
    OpBuilder host(op);
    extra = fusedMergeOperands(host, merge);
  }
  IRMapping m;
  gpu::GPUFuncOp func =
      createKernel(kmod, op, name, TypeRange{}, abi, m, extra);
  if (c.simt)
    func->setAttr(kSimtAttr, UnitAttr::get(func.getContext()));
  Location loc = op->getLoc();
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, loc}};
    PrefillTiles tiles = allocTiles(e, c);
    PageTable pages = kernelPageTable(op, m);
    // The CTAs of one request's (or work item's) KV heads run side by
    // side: linear id x + y X of the (X, Hkv) plane is item id / Hkv, KV
    // head id % Hkv, so that the heads' rows of a page, which the NHD
    // layout interleaves, are read at about the same time.
    Value gridX = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
    Value gridY = gpu::GridDimOp::create(b, loc, gpu::Dimension::y);
    Value linear =
        e.add(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
              e.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::y), gridX));
    Value blockX = e.divui(linear, gridY);
    Value kvHead = e.remui(linear, gridY);
    // The CUDA-core decode's chunk z of the group: its heads are those of
    // "KV head" y * chunks + z of a group of c.heads (QueryTileCoords).
    Value rowsHead = kvHead;
    int64_t rowsGroup = c.simt ? c.heads : c.group;
    if (c.simt && c.chunks > 1)
      rowsHead = e.add(e.mul(kvHead, e.idx(c.chunks)),
                       gpu::BlockIdOp::create(b, loc, gpu::Dimension::z));
    auto chunked = [&](QueryTileCoords t) {
      if (c.simt) {
        t.cacheHead = kvHead;
        t.group = c.heads;
      }
      return t;
    };
    if (partial) {
      // Items past work_indptr[B] exit. Unchecked: the runtime's planner
      // builds the list.
      Value indptr = m.lookup(partial.getWorkIndptr());
      Value items = e.loadIdx(indptr, e.sub(e.dim(indptr, 0), e.idx(1)));
      std::optional<FusedMerge> fused;
      CTAHeads heads{e.mul(rowsHead, e.idx(rowsGroup)), rowsGroup, Value()};
      if (merge)
        fused = mapFusedMerge(partial, extra, m);
      // The item's entries load before the check: the grid has one CTA per
      // entry of the work arrays, so the loads are in bounds, and the
      // request's no longer waits for work_indptr[B] (one dependent global
      // load fewer before the first K / V copy). The check reads the
      // request too (an item without one, request < 0, exits), so that
      // LLVM does not sink its load below the branch.
      DecodeWorkItem item = DecodeWorkItem::load(e, partial, blockX, m);
      // The previous item's request, for emitEmptyRequests at the end:
      // loaded here beside the item rather than after the merge.
      Value prev;
      if (fused)
        prev = e.loadIdx(m.lookup(partial.getWorkRequest()),
                         e.select(e.cmpi(Pred::eq, blockX, e.idx(0)), e.idx(0),
                                  e.sub(blockX, e.idx(1))));
      Value go = e.andi(e.cmpi(Pred::ult, blockX, items),
                        e.cmpi(Pred::sge, item.request, e.idx(0)));
      e.ifThen(go, [&]() {
        emitPrefillQueryTile(
            e, p, m, pages,
            chunked(item.tile(e, blockX, rowsHead,
                              pages.kvLen(e, item.request))),
            tiles);
        if (fused)
          emitArriveAndMerge(e, *fused, item.request, heads, c.headDim,
                             c.threads(), blockX, kMergeTogetherFlag);
      });
      if (fused)
        emitEmptyRequests(e, *fused, blockX, items, item.request, prev, heads,
                          c.headDim, c.threads());
    } else {
      emitPrefillQueryTile(e, p, m, pages,
                           chunked(QueryTileCoords::decode(
                               e, blockX, rowsHead, pages.kvLen(e, blockX))),
                           tiles);
    }
    gpu::ReturnOp::create(b, loc);
  }
  OpBuilder b(op);
  Emitter e{b, loc};
  launch(b, op, func,
         {e.dim(p.o, 0), e.idx(c.numKVHeads), e.idx(c.chunks)}, c.threads(),
         0, extra);
  if (merge)
    finishFusedLaunch(merge, extra[2]);
  return success();
}

LogicalResult makeConfig(const PrefillOperands &p, const PrefillShape &shape,
                         PrefillConfig &c) {
  if (isa<DecodeOp, DecodePartialOp>(p.op))
    return shape.simt ? makeSimtDecodeConfig(p, shape, c)
                      : makeDecodeConfig(p, shape, c);
  return makePrefillConfig(p, shape, c);
}

} // namespace

bool mlir::pa::prefillFitsWgmma(int64_t headDim, bool fp8Cache,
                                int64_t warps, int64_t warpRows,
                                int64_t kvWarps, int64_t tileKV) {
  return headDim % 64 == 0 && headDim <= 256 && !fp8Cache &&
         (warps == 0 || warps == 4 || warps == 8) &&
         (warpRows == 0 || warpRows == 16) && (kvWarps == 0 || kvWarps == 1) &&
         tileKV % 16 == 0 && tileKV <= 128 && tileKV >= 0;
}

LogicalResult mlir::pa::gpukernel::checkTileKernel(Operation *op,
                                                   const PrefillShape &shape) {
  PrefillConfig c;
  return makeConfig(PrefillOperands(op), shape, c);
}

LogicalResult mlir::pa::gpukernel::buildTileKernel(Operation *op,
                                                   gpu::GPUModuleOp kmod,
                                                   StringRef name,
                                                   const PrefillShape &shape,
                                                   MergeSegmentsOp merge) {
  PrefillOperands p(op);
  auto partial = dyn_cast<PrefillPartialOp>(op);
  PrefillConfig c;
  if (failed(makeConfig(p, shape, c)))
    return failure();
  if (isa<DecodeOp, DecodePartialOp>(op))
    return buildDecodeKernel(op, p, c, kmod, name, merge);
  KernelABI abi =
      partial ? tileABI(op, c, "prefill_partial",
                        {GridExtentABI{"work_capacity"},
                         GridExtentABI{"kv_heads"}, GridExtentABI{"q_tiles"}})
              : tileABI(op, c, "prefill",
                        {GridExtentABI{"q_tiles"}, GridExtentABI{"kv_heads"},
                         GridExtentABI{"batch"}});
  IRMapping m;
  gpu::GPUFuncOp func = createKernel(kmod, op, name, TypeRange{}, abi, m);
  if (c.wgmma)
    func->setAttr(kWgmmaAttr, UnitAttr::get(func.getContext()));
  Location loc = op->getLoc();
  int64_t qpt = c.queriesPerTile();
  {
    OpBuilder b(func.getBody());
    b.setInsertionPointToStart(&func.getBody().front());
    KernelEmitter e{{b, loc}};
    PrefillTiles tiles = allocTiles(e, c);
    PageTable pages = kernelPageTable(op, m);
    Value qoIndptr = m.lookup(p.qoIndptr);
    Value blockX = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value kvHead = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
    Value blockZ = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
    // The tile of queries [i0, i0 + rows) of `request`, if i0 < `q1`.
    auto queryTile = [&](Value request, Value i0, Value q1,
                         function_ref<void(QueryTileCoords &)> item) {
      Value qoStart = e.loadIdx(qoIndptr, request);
      Value qoLen =
          e.sub(e.loadIdx(qoIndptr, e.add(request, e.idx(1))), qoStart);
      // CTAs past the tiles of their request (or item) exit.
      e.ifThen(e.cmpi(Pred::ult, i0, q1), [&]() {
        Value rows = arith::MinSIOp::create(b, loc, e.idx(qpt), e.sub(q1, i0));
        Value kvLen = pages.kvLen(e, request);
        Value maskByte0 =
            p.maskIndptr ? e.loadIdx(m.lookup(p.maskIndptr), request)
                         : Value();
        QueryTileCoords t{request, kvHead, qoStart, i0,
                          rows,    qoLen,  kvLen,   maskByte0};
        if (item)
          item(t);
        emitPrefillQueryTile(e, p, m, pages, t, tiles);
      });
    };
    if (partial) {
      // Work item x, its query tile z. Unchecked: the runtime's planner
      // (pa::rt::planPrefill) builds the list.
      PrefillWorkItem item = PrefillWorkItem::load(e, partial, blockX, m);
      Value i0 = e.add(item.qoStart, e.mul(blockZ, e.idx(qpt)));
      queryTile(item.request, i0, item.qoEnd, [&](QueryTileCoords &t) {
        t.kvBegin = item.kvStart;
        t.kvEnd = item.kvEnd;
        t.outRow0 = item.rowOf(e, i0);
        t.outStride = item.partialStride;
      });
    } else {
      Value request = blockZ;
      Value qoLen = e.sub(e.loadIdx(qoIndptr, e.add(request, e.idx(1))),
                          e.loadIdx(qoIndptr, request));
      Value numTiles = e.divui(e.add(qoLen, e.idx(qpt - 1)), e.idx(qpt));
      // Under a causal mask the last tiles see the most keys: run them
      // first. CTAs past the request's tiles get i0 = qo_len and exit.
      Value inRange = e.cmpi(Pred::ult, blockX, numTiles);
      Value tileIdx =
          p.causal ? e.sub(e.sub(numTiles, e.idx(1)), blockX) : blockX;
      Value i0 = e.select(inRange, e.mul(tileIdx, e.idx(qpt)), qoLen);
      queryTile(request, i0, qoLen, nullptr);
    }
    gpu::ReturnOp::create(b, loc);
  }
  // Host launch: a bound on the query tiles of every request (or item; the
  // runtime launches the exact maximum, "q_tiles"), the KV heads, the
  // requests (or items). The dynamic shared memory is set by
  // pa-promote-tiles.
  OpBuilder b(op);
  Emitter e{b, loc};
  Value n = e.dim(p.q, 0);
  Value tiles = arith::MaxSIOp::create(
      b, loc, e.idx(1), e.divui(e.add(n, e.idx(qpt - 1)), e.idx(qpt)));
  if (partial)
    launch(b, op, func, {e.dim(partial.getWorkRequest(), 0),
                         e.idx(c.numKVHeads), tiles},
           c.threads());
  else
    launch(b, op, func,
           {tiles, e.idx(c.numKVHeads), e.sub(e.dim(p.qoIndptr, 0), e.idx(1))},
           c.threads());
  return success();
}
