//===- TileLowering.h - a tile state carried through control flow -*- C++
//-*-===//
//
// Private to the last stages of the tile pipeline (pa-tile-to-mma,
// pa-tile-to-simt): both replace a kernel's tile ops by register math and
// keep the online-softmax state as SSA values, which the scf.for / scf.if
// that it lives across get as extra iter_args / results. The walk over the
// kernel and that carrying live here once; each stage gives the math of
// the ops (the hooks).
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_LIB_CONVERSION_PATOGPU_TILELOWERING_H
#define PAGEDATTN_LIB_CONVERSION_PATOGPU_TILELOWERING_H

#include "PagedAttn/Conversion/Emitter.h"
#include "PagedAttn/Dialect/PA.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace mlir::pa::gpukernel {

/// True when `op` holds a tile op in one of its regions.
bool holdsTileOps(Operation *op);

/// A tile operand in shared memory: `base[row0 + r][col0 + c]` (the source
/// of a subview with static offsets, or the memref itself), so that the
/// math addresses the kernel's shared memory directly.
struct SharedTile {
  Value base;
  int64_t row0 = 0, col0 = 0;
  /// Rows of the tile (the view's first dimension).
  int64_t rows = 0;
};

/// The shared tile `v` read by `op`, or an error at `op` (naming `pass`)
/// when `v` is not such a view of workgroup memory.
FailureOr<SharedTile> sharedTile(StringRef pass, Operation *op, Value v);

/// The tile ops a math stage reads its configuration off, with the state
/// and score buffers they share.
struct KernelTileOps {
  SmallVector<TileQKOp> qks;
  SmallVector<TileMaskOp> masks;
  TileStoreOp store;
  /// The state (pa.tile.init_state's m, l, acc) and the first qk's scores.
  Value m, l, acc, scores;

  /// Collects the tile ops of `func`: an error (naming `pass`) at a
  /// load_q / gather_kv left (pa-promote-tiles replaces them), or at
  /// `func` unless it has one init_state, one store and a qk.
  static FailureOr<KernelTileOps> collect(Operation *func, StringRef pass);

  /// An error (naming `pass`) at the first pa.tile.qk that does not share
  /// the first one's Q / K shapes, scale, k_scale and score buffer, or
  /// whose K is not a shared tile (the first's, checked by the caller).
  LogicalResult checkUniformQKs(StringRef pass) const;
};

/// Where tile row `r` (a packed (query, group head) row) goes: query i =
/// r / group of the tile, valid when i < `rows`, head kvHead * group + r %
/// group, row row0 + i * stride (stride 1 when `rowStride` is null); `qi`
/// is i, or 0 for an invalid row.
struct TileRowPlace {
  Value valid, head, row, qi;
};
TileRowPlace tileRowPlace(Emitter &e, Value r, int64_t group, Value row0,
                          Value rows, Value kvHead, Value rowStride);

/// What the kernel's pa.tile.mask ops ask of the scores (every mask of a
/// kernel the same), read by readMaskOptions.
struct TileMaskOptions {
  std::optional<double> softCap;
  std::optional<int64_t> window;
  bool alibi = false, causal = false, customMask = false, positions = false;
};

/// Fills `o` from `masks`: an error (naming `pass`) at a mask whose group
/// or score buffer is not `group` / `scores` (the store's and the qk's).
LogicalResult readMaskOptions(StringRef pass, ArrayRef<TileMaskOp> masks,
                              int64_t group, Value scores, TileMaskOptions &o);

/// Erases the buffers of `ops` (state, scores) and the subviews of `func`
/// that the lowering left without a use.
void eraseDeadTileBuffers(Operation *func, const KernelTileOps &ops);

/// The online-softmax state of a tile in registers and the scores (then P)
/// of the current KV tile, in the layout of the stage that lowers them.
struct TileEnv {
  /// Empty before pa.tile.init_state.
  SmallVector<Value> state;
  SmallVector<Value> s;
};

/// Walks a kernel's tile IR, replacing every tile op by the hook of its
/// kind and carrying the state through the control flow around it.
class TileStateLowering {
public:
  virtual ~TileStateLowering() = default;

protected:
  /// `pass` names the pass in the errors.
  TileStateLowering(OpBuilder &b, StringRef pass) : b(b), pass(pass) {}

  /// Emits what every KV tile reuses, once, before `before` (the first KV
  /// loop, qk or mask met).
  virtual LogicalResult emitPrelude(Operation *before) = 0;
  /// The state's values after pa.tile.init_state.
  virtual SmallVector<Value> initState() = 0;
  virtual void qk(TileQKOp op, TileEnv &env) = 0;
  virtual void applyMask(TileMaskOp op, TileEnv &env) = 0;
  virtual void softmaxUpdate(TileEnv &env) = 0;
  virtual void pv(TilePVOp op, TileEnv &env) = 0;
  virtual void store(TileStoreOp op, TileEnv &env) = 0;

  /// Lowers the tile ops of `block` (and of the control flow in it).
  LogicalResult lowerBlock(Block &block, TileEnv &env);
  /// Emits the prelude before `before` unless done.
  LogicalResult ensurePrelude(Operation *before);

private:
  LogicalResult lowerFor(scf::ForOp op, TileEnv &env);
  /// The shared tail of lowerFor / lowerIf: lowers `block` (a body or
  /// branch of `op` whose state starts as `inner`), checks that it carries
  /// `carried` state values out (an error at `op` naming `what`, the
  /// loops or branches, otherwise) and appends them to its terminator.
  LogicalResult lowerCarrying(Operation *op, Block &block, TileEnv &inner,
                              size_t carried, StringRef what);
  LogicalResult lowerIf(scf::IfOp op, TileEnv &env);

  OpBuilder &b;
  StringRef pass;
  bool prelude = false;
};

} // namespace mlir::pa::gpukernel

#endif // PAGEDATTN_LIB_CONVERSION_PATOGPU_TILELOWERING_H
