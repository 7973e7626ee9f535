//===- PATileOps.cpp - verifiers of the tile-level pa ops -----------------===//
//
// Shapes that the tile ops' operands must agree on (static sizes only; the
// tile memrefs are static by construction).
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Dialect/PA.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace mlir::pa;

namespace {
int64_t dimOf(Value v, unsigned d) {
  return cast<ShapedType>(v.getType()).getDimSize(d);
}

/// `a` dim `da` equals `b` dim `db` when both are static.
LogicalResult sameDim(Operation *op, Value a, StringRef an, unsigned da,
                      Value b, StringRef bn, unsigned db) {
  int64_t x = dimOf(a, da), y = dimOf(b, db);
  if (ShapedType::isDynamic(x) || ShapedType::isDynamic(y) || x == y)
    return success();
  return op->emitOpError() << "'" << an << "' dim " << da << " (" << x
                           << ") must equal '" << bn << "' dim " << db << " ("
                           << y << ")";
}

/// `v` is a 1-D array of `elem` (an index array, the packed mask, slopes).
LogicalResult check1D(Operation *op, Value v, StringRef name, Type elem,
                      StringRef what) {
  auto t = cast<ShapedType>(v.getType());
  if (t.getRank() != 1 || t.getElementType() != elem)
    return op->emitOpError() << "'" << name << "' must be a 1-D array of "
                             << what << ", got " << v.getType();
  return success();
}

LogicalResult checkRank(Operation *op, Value v, StringRef name, int64_t rank) {
  if (cast<ShapedType>(v.getType()).getRank() != rank)
    return op->emitOpError() << "'" << name << "' must have rank " << rank
                             << ", got " << v.getType();
  return success();
}

/// A tile holds at least one GQA group: BM >= group. (Rows past the last
/// whole group, r >= (BM / g) g, are never valid, since rows <= BM / g.)
LogicalResult checkGroup(Operation *op, int64_t group, Value tile,
                         StringRef name) {
  if (group < 1)
    return op->emitOpError() << "group must be >= 1, got " << group;
  int64_t rows = dimOf(tile, 0);
  if (!ShapedType::isDynamic(rows) && rows < group)
    return op->emitOpError() << "the " << rows << " rows of '" << name
                             << "' must hold a group of " << group
                             << " query heads";
  return success();
}
} // namespace

LogicalResult TileLoadQOp::verify() {
  if (failed(checkRank(*this, getQ(), "q", 3)) ||
      failed(checkGroup(*this, getGroup(), getTile(), "tile")))
    return failure();
  return sameDim(*this, getTile(), "tile", 1, getQ(), "q", 2);
}

LogicalResult TileGatherKVOp::verify() {
  PagedKVAttr cache = getCache();
  unsigned n = getKvCache().size();
  if (n != 1 && n != 2)
    return emitOpError() << "expects 1 (joint K/V) or 2 (split K and V) cache "
                            "operands, got "
                         << n;
  for (Value v : getKvCache())
    if (failed(checkRank(*this, v, "kv", n == 1 ? 5 : 4)))
      return failure();
  if (n == 2 && getKvCache()[0].getType() != getKvCache()[1].getType())
    return emitOpError() << "split K and V caches must have the same type";
  // The cache's static dims against #pa.paged_kv: [N, (2,) P, Hkv, D] (NHD)
  // or [N, (2,) Hkv, P, D] (HND).
  Value kv = getKvCache()[0];
  unsigned first = n == 1 ? 2 : 1;
  if (n == 1) {
    int64_t two = dimOf(kv, 1);
    if (!ShapedType::isDynamic(two) && two != 2)
      return emitOpError() << "a joint cache's dim 1 must be 2 (K, V), got "
                           << two;
  }
  bool nhd = cache.getLayout() == KVLayout::NHD;
  int64_t expect[3] = {nhd ? cache.getPageSize() : cache.getNumKVHeads(),
                       nhd ? cache.getNumKVHeads() : cache.getPageSize(),
                       cache.getHeadDim()};
  for (unsigned i = 0; i < 3; ++i) {
    int64_t got = dimOf(kv, first + i);
    if (!ShapedType::isDynamic(got) && got != expect[i])
      return emitOpError() << "cache dim " << first + i << " is " << got
                           << ", #pa.paged_kv gives " << expect[i];
  }
  Type i32 = IntegerType::get(getContext(), 32);
  if (failed(check1D(*this, getKvIndptr(), "kv_indptr", i32, "i32")) ||
      failed(check1D(*this, getKvIndices(), "kv_indices", i32, "i32")))
    return failure();
  if (getKTile().getType() != getVTile().getType())
    return emitOpError() << "K and V tiles must have the same type";
  int64_t d = dimOf(getKTile(), 1);
  if (!ShapedType::isDynamic(d) && d != cache.getHeadDim())
    return emitOpError() << "tile dim 1 (" << d
                         << ") must equal the cache's head_dim ("
                         << cache.getHeadDim() << ")";
  return success();
}

LogicalResult TileQKOp::verify() {
  if (auto sc = getScale();
      sc && !(sc->convertToDouble() > 0 && std::isfinite(sc->convertToDouble())))
    return emitOpError() << "scale must be finite and > 0";
  // fp8 is a cache's type (K / V in shared memory), never the queries'.
  if (isFP8CacheType(cast<ShapedType>(getQ().getType()).getElementType()))
    return emitOpError() << "q must be f32, f16 or bf16 (fp8 is a K / V "
                            "cache type), got "
                         << getQ().getType();
  if (failed(sameDim(*this, getQ(), "q", 1, getK(), "k", 1)) ||
      failed(sameDim(*this, getS(), "s", 0, getQ(), "q", 0)))
    return failure();
  return sameDim(*this, getS(), "s", 1, getK(), "k", 0);
}

LogicalResult TileMaskOp::verify() {
  bool mask = bool(getCustomMask());
  if (mask != bool(getMaskByte0()) || mask != bool(getMaskQrow0()) ||
      mask != bool(getMaskKvLen()))
    return emitOpError() << "a custom mask needs the packed mask, its first "
                            "byte, the tile's first query row and kv_len";
  if (getGroup() < 1)
    return emitOpError() << "group must be >= 1, got " << getGroup();
  if (auto w = getWindow(); w && static_cast<int64_t>(*w) <= 0)
    return emitOpError() << "window must be > 0";
  if (auto c = getLogitsSoftCap();
      c && !(c->convertToDouble() > 0 && std::isfinite(c->convertToDouble())))
    return emitOpError() << "logits_soft_cap must be finite and > 0";
  Type i32 = IntegerType::get(getContext(), 32);
  if (Value p = getQPositions();
      p && failed(check1D(*this, p, "q_positions", i32, "i32")))
    return failure();
  if (Value a = getAlibiSlopes();
      a && failed(check1D(*this, a, "alibi slopes",
                          Float32Type::get(getContext()), "f32")))
    return failure();
  if (Value m = getCustomMask();
      m && failed(check1D(*this, m, "custom_mask",
                          IntegerType::get(getContext(), 8), "i8")))
    return failure();
  return checkGroup(*this, getGroup(), getS(), "scores");
}

LogicalResult TileInitStateOp::verify() {
  if (failed(sameDim(*this, getL(), "l", 0, getM(), "m", 0)))
    return failure();
  return sameDim(*this, getAcc(), "acc", 0, getM(), "m", 0);
}

LogicalResult TileSoftmaxUpdateOp::verify() {
  if (failed(sameDim(*this, getM(), "m", 0, getS(), "scores", 0)) ||
      failed(sameDim(*this, getL(), "l", 0, getS(), "scores", 0)))
    return failure();
  return sameDim(*this, getAcc(), "acc", 0, getS(), "scores", 0);
}

LogicalResult TilePVOp::verify() {
  if (failed(sameDim(*this, getAcc(), "acc", 0, getP(), "p", 0)) ||
      failed(sameDim(*this, getV(), "v", 0, getP(), "p", 1)))
    return failure();
  return sameDim(*this, getAcc(), "acc", 1, getV(), "v", 1);
}

LogicalResult TileStoreOp::verify() {
  if (!cast<ShapedType>(getLse().getType()).getElementType().isF32())
    return emitOpError() << "'lse' must hold f32, got " << getLse().getType();
  if (failed(checkRank(*this, getO(), "o", 3)) ||
      failed(checkRank(*this, getLse(), "lse", 2)) ||
      failed(sameDim(*this, getLse(), "lse", 1, getO(), "o", 1)) ||
      failed(checkGroup(*this, getGroup(), getAcc(), "acc")) ||
      failed(sameDim(*this, getM(), "m", 0, getAcc(), "acc", 0)) ||
      failed(sameDim(*this, getL(), "l", 0, getAcc(), "acc", 0)))
    return failure();
  return sameDim(*this, getAcc(), "acc", 1, getO(), "o", 2);
}

#define GET_OP_CLASSES
#include "PagedAttn/Dialect/PATileOps.cpp.inc"
