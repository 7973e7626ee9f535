//===- MLAKernel.h - what the two MLA decode kernels share ------*- C++ -*-===//
//
// Private to convert-pa-to-gpu: the shape of a pa.mla_decode kernel and the
// pieces its two bodies share (MLAToGPU.cpp: mma.sync, sm_80 and later;
// MLAWgmma.cpp: Hopper warpgroup MMAs, sm_90a): the request / split a CTA
// works on, the cp.async copies of Q and of the latent cache's token rows,
// and the store of the final or partial state with the fused split-KV
// merge (docs/GPU.md, "MLA decode").
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_LIB_CONVERSION_PATOGPU_MLAKERNEL_H
#define PAGEDATTN_LIB_CONVERSION_PATOGPU_MLAKERNEL_H

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/PagedAttention.h"

namespace mlir::pa::gpukernel {

constexpr int64_t kMLATileKeys = 64; ///< keys per K/V tile
constexpr int64_t kMLAStages = 2;    ///< K/V tiles in shared memory
constexpr int64_t kMLASlots = 4;     ///< warps of an mma.sync row block
constexpr int64_t kMLAPad = 8;       ///< mma.sync row padding (16 bytes)
constexpr int64_t kMaxSmem = 227 * 1024;
/// The wgmma kernel: 64 query heads a CTA (one m64 block), two warpgroups.
constexpr int64_t kMLAWgmmaRows = 64;
constexpr int64_t kMLAWgmmaGroups = 2;

struct MLAShape {
  Type elem;
  int64_t heads = 0, ckv = 0, kpe = 0, pageSize = 0, rowBlocks = 1;
  /// m16 blocks per warp (each warp's QK and PV cover them all, so that
  /// every K / V fragment it loads serves them all).
  int64_t warpBlocks = 1;
  /// The wgmma kernel (MLAWgmma.cpp) rather than the mma.sync one.
  bool wgmma = false;
  /// wgmma: the consumer warpgroup waits at the named barriers
  /// (mla-consumer-sync).
  bool consumerSync = false;
  double smScale = 1;
  std::optional<double> softCap;
  bool lseBase2 = false;

  int64_t rows() const { return wgmma ? kMLAWgmmaRows : 16 * rowBlocks; }
  int64_t warps() const {
    return wgmma ? 4 * kMLAWgmmaGroups
                 : kMLASlots * (rowBlocks / warpBlocks);
  }
  int64_t threads() const { return 32 * warps(); }
  int64_t width() const { return ckv + kpe; }
  int64_t headBlocks() const { return (heads + rows() - 1) / rows(); }
  /// (null `elem`: 16-bit data, for a shape without an op.)
  int64_t elemBytes() const {
    return elem ? elem.getIntOrFloatBitWidth() / 8 : 2;
  }

  // mma.sync: Q rows and the K/V stages ([rows + 2 x 64][stride], rows
  // padded), the P tile ([rows][pStride]), then f32 row maxima and sums
  // ([2][rowBlocks][kMLASlots][16]).
  int64_t stride() const { return width() + kMLAPad; }
  int64_t pStride() const { return kMLATileKeys + kMLAPad; }
  int64_t slotCols() const { return ckv / kMLASlots; }
  // wgmma: Q ([64][width]) and the K/V stages ([64][width] each) in wgmma's
  // swizzle layout (wgmmaIndex: width / 64 column blocks of [64][64]); a P
  // tile per stage ([64][64], the same layout: the stage's first D_kpe
  // block, dead once S has read it, or past the stages when D_kpe < 64);
  // f32 row statistics ([kMLAStages][64] rescale factors, then [2][64] row
  // maxima and sums); then the stages' mbarriers (8 bytes each).
  int64_t regionElems() const { return kMLAWgmmaRows * width(); }
  /// wgmma: the P tile of a stage lies in the stage (its first D_kpe block).
  bool pInStage() const { return kpe >= 64; }
  int64_t blockElems() const { return kMLAWgmmaRows * 64; }

  int64_t pOffset() const {
    return wgmma ? (1 + kMLAStages) * regionElems() * elemBytes()
                 : (rows() + kMLAStages * kMLATileKeys) * stride() *
                       elemBytes();
  }
  int64_t redOffset() const {
    if (wgmma)
      return pOffset() +
             (pInStage() ? 0 : kMLAStages * blockElems() * elemBytes());
    return pOffset() + rows() * pStride() * elemBytes();
  }
  int64_t redFloats() const {
    return wgmma ? (kMLAStages + 2) * kMLAWgmmaRows
                 : 2 * rowBlocks * kMLASlots * 16;
  }
  int64_t mbarOffset() const { return redOffset() + redFloats() * 4; }
  int64_t smemBytes() const {
    return mbarOffset() + (wgmma ? kMLAStages * 8 : 0);
  }
};

/// The request, keys and copies of an MLA decode CTA (both kernels).
class MLAKernelBase : protected MmaFragments {
protected:
  MLAKernelBase(KernelEmitter &e, const MLAShape &s)
      : MmaFragments{e, s.elem}, e(e), b(e.b), loc(e.loc), s(s) {}

  KernelEmitter &e;
  OpBuilder &b;
  Location loc;
  const MLAShape &s;
  Value tid, lane, warp;
  Value request, head0, kvLen, pageBase;
  /// This CTA's keys [kvStart, kvEnd) of the request (grid z splits them
  /// into `splits` chunks; this is chunk `z`).
  Value splits, z, kvStart, kvEnd;

  Type f32() { return b.getF32Type(); }
  /// A view of dynamic shared memory: `shape` of `elem` from byte `offset`.
  Value sharedView(ArrayRef<int64_t> shape, Type elem, int64_t offset);
  /// tid / lane / warp, then the request and first head (given) with the
  /// request's keys and this CTA's split of them.
  void setup(const PageTable &pt, Value request, Value head0);
  Value copy16(Value src, ValueRange srcIdx, Value dst, ValueRange dstIdx,
               Value valid);
  void commitAndWait(bool wait);
  /// Indices into the shared buffer of element `col` (a multiple of 8) of
  /// row `row` of a Q or K/V tile.
  using TileIndex = function_ref<SmallVector<Value>(Value row, Value col)>;
  /// Q (q_nope | q_pe; heads past H zero-filled) into `dst`.
  void copyQ(Value qNope, Value qPe, Value dst, TileIndex at);
  /// The tile of the 64 tokens from t0 into `dst`: warp w copies rows w, w
  /// + warps, ... (one page lookup per row), lane l chunks l, l + 32, ...
  /// (contiguous bytes per copy instruction); tokens past kvEnd
  /// zero-filled without a lookup.
  /// `copyWarp` / `copyWarps`: the warps that copy (default all).
  void copyTile(Value cache, const PageTable &pt, Value t0, Value dst,
                TileIndex at, Value page = Value(), Value copyWarp = Value(),
                int64_t copyWarps = 0);
  /// Whether each tile lies in one page (the page size a multiple of 64;
  /// tiles start at multiples of 64): then copyTile takes the tile's page
  /// (tilePage), loaded a tile ahead by the KV loops, instead of one
  /// lookup per row on the copy's path.
  bool pagePerTile() const { return s.pageSize % kMLATileKeys == 0; }
  /// The page of tile `tile` of the split (index 0 for a tile past
  /// `tiles`, which is not looked up).
  Value tilePage(const PageTable &pt, Value tile, Value tiles);
  /// Keys of the split in whole tiles.
  Value numTiles();
  /// A row's final state (largest logit `m`, base 2; weight sum `l`): 1 /
  /// l and the lse in the output's base (0 and -inf without weight).
  std::pair<Value, Value> finalRow(Value m, Value l);
  /// The end of the kernel: `storeState(outO, outLse, row)` writes the
  /// CTA's rows of o / lse (the final state without a split; else the f32
  /// partial state of split z, after which the last CTA of the request
  /// merges the splits).
  void finish(const FusedMerge &split,
              function_ref<void(Value outO, Value outLse, Value row)>
                  storeState);
  /// The last CTA's merge of the request's splits [begin, begin + splits)
  /// into o / lse for the CTA's heads.
  void mergeSplits(const FusedMerge &split, Value begin);
  /// An output slot of the merge: elements [d, d + 4) of head `hg` (stored
  /// where `valid`), merged with shift `shift` and total weight `total`.
  struct MergeSlot {
    Value hg, valid, d, shift, total;
  };
  /// Each of the CTA's heads' shift and total weight over the rows [begin,
  /// begin + splits), the CTA's threads reading the rows together, into
  /// shared memory (returned: [2][rows] f32, shifts then totals); its
  /// merged lse into lse where the head's first output slot lies in [lo,
  /// hi). Every thread must reach it; a CTA barrier after.
  Value headStats(const FusedMerge &split, Value begin, Value lo, Value hi);
  /// Output slot `idx` (slot i: elements [4 (i mod D_ckv / 4), + 4) of head
  /// head0 + i / (D_ckv / 4)) with its head's statistics from `stats`.
  MergeSlot slotAt(Value stats, Value idx);
  /// The CTA's head `h`: head0 + h, and whether it is below H (a head past
  /// H reads head 0's rows and writes nothing: head 0 is returned).
  std::pair<Value, Value> headAt(Value h);
  /// o[request, hg, d : d + 4] of each slot: sum_i 2^(lse_i - shift)
  /// o_part_i / total over the rows [begin, begin + splits), the loads of
  /// the slots over `rowsPerStep` rows issued together.
  void mergeSlots(const FusedMerge &split, Value begin,
                  ArrayRef<MergeSlot> slots, int64_t rowsPerStep);
  /// The merge together: split z's share (a z / S slice of the CTA's valid
  /// heads x D_ckv / 4 output slots of 4 f32) of the same merge.
  void mergeShare(const FusedMerge &split, Value begin);
};

/// MLAWgmma.cpp: the wgmma kernel's body (a CTA of 64 heads, two
/// warpgroups), inside the kernel function.
void buildMLAWgmmaBody(KernelEmitter &e, const MLAShape &s, Value qNope,
                       Value qPe, Value cache, const PageTable &pt,
                       const FusedMerge &split);

} // namespace mlir::pa::gpukernel

#endif // PAGEDATTN_LIB_CONVERSION_PATOGPU_MLAKERNEL_H
