//===- PAOps.cpp - verifiers, type inference and effects of pa ops ---------===//
//
// Every statically known invariant of docs/Semantics.md is checked here, with
// a diagnostic that names the operand and the invariant.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Dialect/PA.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <tuple>

using namespace mlir;
using namespace mlir::pa;

static constexpr int64_t kDyn = ShapedType::kDynamic;

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

/// Whether `a` and `b` have the same element type and shapes that are equal
/// where both are static. Upstream's canonicalizations make one operand
/// more static than its partner (tensor.empty with constant sizes, then
/// tensor.cast folded into a destination-style op's outs), so the
/// verifiers compare shapes this way rather than for equality.
static bool sameUpToStaticDims(ShapedType a, ShapedType b) {
  return a.getElementType() == b.getElementType() &&
         succeeded(verifyCompatibleShape(a.getShape(), b.getShape()));
}

/// The K and V caches of a split cache: sameUpToStaticDims, and for memrefs
/// the same layout and memory space.
static bool sameCacheType(Type k, Type v) {
  auto sk = cast<ShapedType>(k), sv = cast<ShapedType>(v);
  if (!sameUpToStaticDims(sk, sv) || isa<MemRefType>(k) != isa<MemRefType>(v))
    return false;
  auto mk = dyn_cast<MemRefType>(k), mv = dyn_cast<MemRefType>(v);
  return !mk || (mk.getLayout() == mv.getLayout() &&
                 mk.getMemorySpace() == mv.getMemorySpace());
}

namespace {
/// Verification context of one op: emits errors at the op's location and
/// collects the sizes that several operands must agree on (batch, tokens, ...).
class Checker {
public:
  explicit Checker(Operation *op) : op(op) {}

  InFlightDiagnostic error() { return op->emitOpError(); }

  static ShapedType shaped(Value v) { return cast<ShapedType>(v.getType()); }

  /// Operands are all tensors or all memrefs.
  LogicalResult sameForm() {
    bool anyTensor = false, anyMemRef = false;
    for (Value v : op->getOperands()) {
      anyTensor |= isa<RankedTensorType>(v.getType());
      anyMemRef |= isa<MemRefType>(v.getType());
    }
    if (anyTensor && anyMemRef)
      return error() << "operands must be all tensors or all memrefs";
    return success();
  }

  /// `v` is rank `rank`; `what` describes the expected shape.
  LogicalResult rank(Value v, StringRef name, int64_t rank, StringRef what) {
    if (shaped(v).getRank() != rank)
      return error() << "'" << name << "' must have rank " << rank << " ("
                     << what << "), got " << v.getType();
    return success();
  }

  /// `v` is a 1-D array of i32 (an index array).
  LogicalResult indexArray(Value v, StringRef name) {
    ShapedType t = shaped(v);
    if (t.getRank() != 1 || !t.getElementType().isSignlessInteger(32))
      return error() << "'" << name << "' must be a 1-D array of i32, got "
                     << v.getType();
    return success();
  }

  /// Binds the named size `key` to dim `dim` of `v` (if static) and checks it
  /// against earlier bindings. `offset` is added to the size (indptr arrays
  /// have batch + 1 entries, so they bind `batch` with offset -1). Head counts
  /// and head dims (see positiveSize) must not be 0; batch and token counts
  /// may.
  LogicalResult bind(StringRef key, Value v, StringRef name, int64_t dim,
                     int64_t offset = 0) {
    int64_t size = shaped(v).getDimSize(dim);
    if (ShapedType::isDynamic(size))
      return success();
    size += offset;
    if (size == 0)
      if (std::optional<StringRef> what = positiveSize(key))
        return error() << *what << " must be > 0, but '" << name << "' dim "
                       << dim << " is 0";
    auto it = sizes.find(key);
    if (it == sizes.end()) {
      sizes[key] = {size, (name + " dim " + Twine(dim)).str()};
      return success();
    }
    if (it->second.first != size)
      return error() << key << " mismatch: '" << name << "' dim " << dim
                     << " gives " << size << " but " << it->second.second
                     << " gives " << it->second.first;
    return success();
  }

  /// The sizes that are never 0, by key, with the invariant's wording: an
  /// attention state without heads or with an empty head dim means nothing.
  static std::optional<StringRef> positiveSize(StringRef key) {
    return llvm::StringSwitch<std::optional<StringRef>>(key)
        .Case("Hq", StringRef("the number of query heads (Hq)"))
        .Case("H", StringRef("the number of heads (H)"))
        .Case("D", StringRef("the head dim (D)"))
        .Default(std::nullopt);
  }

  /// Binds a static known value (from an attribute) to `key`.
  void bindConst(StringRef key, int64_t value, StringRef from) {
    sizes[key] = {value, from.str()};
  }

  std::optional<int64_t> get(StringRef key) const {
    auto it = sizes.find(key);
    if (it == sizes.end())
      return std::nullopt;
    return it->second.first;
  }

  /// A CSR page table: three index arrays; indptr has batch + 1 entries,
  /// last_page_len has batch entries.
  LogicalResult pageTable(Value indptr, Value indices, Value lastPageLen,
                          StringRef batchKey = "batch",
                          StringRef suffix = "") {
    std::string ip = ("kv_indptr" + suffix).str();
    std::string ix = ("kv_indices" + suffix).str();
    std::string lp = ("kv_last_page_len" + suffix).str();
    if (failed(indexArray(indptr, ip)) || failed(indexArray(indices, ix)) ||
        failed(indexArray(lastPageLen, lp)))
      return failure();
    if (failed(bind(batchKey, indptr, ip, 0, -1)) ||
        failed(bind(batchKey, lastPageLen, lp, 0)))
      return failure();
    if (auto b = get(batchKey); b && *b < 0)
      return error() << "'" << ip << "' must have at least one entry";
    return success();
  }

  /// The page table of an op with one.
  LogicalResult pageTable(PagedOpInterface paged) {
    return pageTable(paged.getKvIndptr(), paged.getKvIndices(),
                     paged.getKvLastPageLen());
  }

  /// Cache operands against #pa.paged_kv; returns their element type.
  LogicalResult kvCache(PagedKVAttr cache, ValueRange kv, Type &elemTy) {
    if (kv.size() != 1 && kv.size() != 2)
      return error() << "expects 1 (joint K/V) or 2 (split K and V) cache "
                        "operands, got "
                     << kv.size();
    bool joint = kv.size() == 1;
    SmallVector<int64_t> expected =
        joint ? cache.getJointShape(kDyn) : cache.getSplitShape(kDyn);
    StringRef layout = stringifyKVLayout(cache.getLayout());
    auto shapeText = [&]() -> std::string {
      bool nhd = cache.getLayout() == KVLayout::NHD;
      std::string s = joint ? "[num_pages, 2, " : "[num_pages, ";
      s += nhd ? "P, Hkv, D]" : "Hkv, P, D]";
      return s;
    };
    for (auto [i, v] : llvm::enumerate(kv)) {
      ShapedType t = shaped(v);
      std::string name = joint ? "kv cache" : (i == 0 ? "k cache" : "v cache");
      if (t.getRank() != (int64_t)expected.size())
        return error() << name << " must have rank " << expected.size() << " ("
                       << shapeText() << " for " << layout << "), got "
                       << v.getType();
      for (int64_t d = 1; d < t.getRank(); ++d) {
        int64_t got = t.getDimSize(d);
        if (!ShapedType::isDynamic(got) && got != expected[d])
          return error() << name << " dim " << d << " is " << got
                         << " but the " << layout << " layout of " << cache
                         << " needs " << expected[d] << " (" << shapeText()
                         << ")";
      }
      if (failed(bind("num_pages", v, name, 0)))
        return failure();
    }
    if (!joint && !sameCacheType(kv[0].getType(), kv[1].getType()))
      return error() << "k cache and v cache must have the same type, got "
                     << kv[0].getType() << " and " << kv[1].getType();
    elemTy = shaped(kv[0]).getElementType();
    if (!elemTy.isF16() && !elemTy.isBF16() && !elemTy.isF32() &&
        !isFP8CacheType(elemTy))
      return error() << "cache element type must be f16, bf16, f32, "
                        "f8E4M3FN or f8E5M2, got "
                     << elemTy;
    return success();
  }

  /// The scale operands `scales(%k_scale, %v_scale)`: present iff the cache
  /// is fp8, each a 1-D f32 array of static shape [1] (per tensor) or [Hkv]
  /// (per KV head).
  LogicalResult kvScales(PagedKVAttr cache, Type cacheElem, Value kScale,
                         Value vScale) {
    if (!kScale != !vScale)
      return error() << "scales need both k_scale and v_scale";
    bool fp8 = isFP8CacheType(cacheElem);
    if (fp8 && !kScale)
      return error() << "an fp8 cache (" << cacheElem
                     << ") needs scales(%k_scale, %v_scale): 1-D f32 arrays "
                        "of shape [1] (per tensor) or [kv_heads] (per KV "
                        "head)";
    if (!fp8 && kScale)
      return error() << "scales(%k_scale, %v_scale) apply only to fp8 caches "
                        "(f8E4M3FN or f8E5M2), but the cache element type is "
                     << cacheElem;
    if (!fp8)
      return success();
    int64_t hkv = cache.getNumKVHeads();
    for (auto [v, name] :
         {std::pair{kScale, "k_scale"}, std::pair{vScale, "v_scale"}}) {
      ShapedType t = shaped(v);
      if (t.getRank() != 1 || !t.getElementType().isF32() ||
          t.isDynamicDim(0) || (t.getDimSize(0) != 1 && t.getDimSize(0) != hkv))
        return error() << "'" << name
                       << "' must be a 1-D f32 array of static shape [1] "
                          "(per tensor) or ["
                       << hkv << "] (per KV head, kv_heads = " << hkv
                       << "), got " << v.getType();
    }
    return success();
  }

  /// Rows `[N, Hkv, D]` to be written into the cache.
  LogicalResult kvRows(PagedKVAttr cache, Value k, Value v, Type cacheElem,
                       StringRef tokensKey, StringRef kName, StringRef vName) {
    for (auto [val, name] : {std::pair{k, kName}, std::pair{v, vName}}) {
      if (failed(rank(val, name, 3, "[tokens, Hkv, D]")))
        return failure();
      ShapedType t = shaped(val);
      if (!t.isDynamicDim(1) && t.getDimSize(1) != cache.getNumKVHeads())
        return error() << "'" << name << "' has " << t.getDimSize(1)
                       << " heads but the cache has kv_heads = "
                       << cache.getNumKVHeads();
      if (!t.isDynamicDim(2) && t.getDimSize(2) != cache.getHeadDim())
        return error() << "'" << name << "' head dim " << t.getDimSize(2)
                       << " does not match the cache's head_dim = "
                       << cache.getHeadDim();
      Type elem = t.getElementType();
      if (isFP8CacheType(cacheElem)) {
        if (!elem.isF16() && !elem.isBF16() && !elem.isF32())
          return error() << "'" << name << "' element type must be f16, bf16 "
                         << "or f32 (rows are quantized into the "
                         << cacheElem << " cache), got " << elem;
      } else if (elem != cacheElem) {
        return error() << "'" << name << "' element type " << elem
                       << " does not match the cache's " << cacheElem;
      }
      if (failed(bind(tokensKey, val, name, 0)))
        return failure();
    }
    return success();
  }

  /// An attention state out pair: o like q (or `oShapeFrom`), lse f32
  /// [tokens, H].
  LogicalResult stateOuts(ValueRange outs, Value q) {
    if (outs.size() != 2)
      return error() << "expects 2 outs (o, lse), got " << outs.size();
    ShapedType qt = shaped(q), ot = shaped(outs[0]), lt = shaped(outs[1]);
    if (!sameUpToStaticDims(ot, qt))
      return error() << "o must have q's shape and element type "
                     << "(o: " << outs[0].getType() << ", q: " << q.getType()
                     << ")";
    if (lt.getRank() != 2 || !lt.getElementType().isF32())
      return error() << "lse must be a 2-D f32 array [tokens, Hq], got "
                     << outs[1].getType();
    if (failed(bind("tokens", outs[1], "lse", 0)) ||
        failed(bind("Hq", outs[1], "lse", 1)))
      return failure();
    return success();
  }

private:
  Operation *op;
  llvm::StringMap<std::pair<int64_t, std::string>> sizes;
};
} // namespace

/// q `[tokens, Hq, D]` against the cache: element type, head dim, Hq % Hkv.
/// Binds "tokens" and "Hq".
static LogicalResult verifyQuery(Checker &c, PagedKVAttr cache, Value q,
                                 Type cacheElem) {
  if (failed(c.rank(q, "q", 3, "[tokens, Hq, D]")))
    return failure();
  ShapedType qt = Checker::shaped(q);
  Type qElem = qt.getElementType();
  if (!qElem.isF16() && !qElem.isBF16() && !qElem.isF32())
    return c.error() << "q element type must be f16, bf16 or f32, got "
                     << qElem;
  // Over an fp8 cache q may be any of the three (K and V are dequantized to
  // f32); otherwise q and the cache share one element type.
  if (qElem != cacheElem && !isFP8CacheType(cacheElem))
    return c.error() << "q element type " << qElem
                     << " does not match the cache's " << cacheElem;
  if (!qt.isDynamicDim(2) && qt.getDimSize(2) != cache.getHeadDim())
    return c.error() << "q head dim " << qt.getDimSize(2)
                     << " does not match the cache's head_dim = "
                     << cache.getHeadDim();
  if (failed(c.bind("tokens", q, "q", 0)) || failed(c.bind("Hq", q, "q", 1)))
    return failure();
  if (!qt.isDynamicDim(1) && qt.getDimSize(1) % cache.getNumKVHeads() != 0)
    return c.error() << "number of query heads (" << qt.getDimSize(1)
                     << ") must be a multiple of kv_heads ("
                     << cache.getNumKVHeads() << ")";
  return success();
}

/// The attention options: ALiBi slopes `[Hq]` f32, sm_scale, soft-cap,
/// window.
static LogicalResult verifyOptions(Checker &c, AttentionOpInterface op) {
  std::optional<APFloat> smScale = op.getSmScale();
  std::optional<APFloat> softCap = op.getLogitsSoftCap();
  std::optional<int64_t> window;
  if (std::optional<uint64_t> w = op.getWindow())
    window = static_cast<int64_t>(*w);
  if (Value alibi = op.getAlibiSlopes()) {
    ShapedType at = Checker::shaped(alibi);
    if (at.getRank() != 1 || !at.getElementType().isF32())
      return c.error() << "'alibi_slopes' must be a 1-D f32 array [Hq], got "
                       << alibi.getType();
    if (failed(c.bind("Hq", alibi, "alibi_slopes", 0)))
      return failure();
  }
  if (smScale && !smScale->isFiniteNonZero())
    return c.error() << "sm_scale must be finite and non-zero";
  if (softCap && !(softCap->isFiniteNonZero() && !softCap->isNegative()))
    return c.error() << "logits_soft_cap must be > 0";
  if (window && *window <= 0)
    return c.error() << "window must be > 0, got " << *window;
  return success();
}

/// Checks shared by every attention op: one form (tensors or memrefs), the
/// cache operands against #pa.paged_kv, and q against the cache.
static LogicalResult verifyAttentionInputs(Checker &c,
                                           AttentionOpInterface op) {
  Type cacheElem;
  if (failed(c.sameForm()) ||
      failed(c.kvCache(op.getCache(), op.getKvCache(), cacheElem)) ||
      failed(c.kvScales(op.getCache(), cacheElem, op.getKScale(),
                        op.getVScale())))
    return failure();
  return verifyQuery(c, op.getCache(), op.getQ(), cacheElem);
}

/// Checks shared by decode, prefill and cascade: the inputs, the state outs
/// (o like q, lse f32), the alibi slopes and the attention options.
static LogicalResult verifyAttention(Checker &c, AttentionOpInterface op) {
  if (failed(verifyAttentionInputs(c, op)) ||
      failed(c.stateOuts(op.getOuts(), op.getQ())))
    return failure();
  return verifyOptions(c, op);
}

bool mlir::pa::isFP8CacheType(Type t) {
  return isa<Float8E4M3FNType, Float8E5M2Type>(t);
}

//===----------------------------------------------------------------------===//
// Type inference and memory effects (shared by every op, see PA_Op)
//===----------------------------------------------------------------------===//

LogicalResult mlir::pa::detail::inferFromOuts(ValueRange outs,
                                              SmallVectorImpl<Type> &inferred) {
  for (Value v : outs)
    if (isa<RankedTensorType>(v.getType()))
      inferred.push_back(v.getType());
  return success();
}

void mlir::pa::detail::getDpsEffects(
    Operation *op, bool readsInits,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  auto dst = cast<DestinationStyleOpInterface>(op);
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    bool init = dst.isDpsInit(&operand);
    if (!init || readsInits)
      effects.emplace_back(MemoryEffects::Read::get(), &operand, /*stage=*/0,
                           /*effectOnFullRegion=*/true,
                           SideEffects::DefaultResource::get());
    if (init)
      effects.emplace_back(MemoryEffects::Write::get(), &operand, /*stage=*/0,
                           /*effectOnFullRegion=*/true,
                           SideEffects::DefaultResource::get());
  }
}

//===----------------------------------------------------------------------===//
// Operand groups of the interfaces and builders
//===----------------------------------------------------------------------===//

AttentionOptions AttentionOptions::get(std::optional<APFloat> smScale,
                                       std::optional<APFloat> softCap,
                                       std::optional<uint64_t> window,
                                       bool lseBase2) {
  AttentionOptions o;
  if (smScale)
    o.smScale = smScale->convertToDouble();
  if (softCap)
    o.softCap = softCap->convertToDouble();
  if (window)
    o.window = static_cast<int64_t>(*window);
  o.lseBase2 = lseBase2;
  return o;
}

double AttentionOptions::getSmScaleOr(int64_t headDim) const {
  return smScale ? *smScale : 1.0 / std::sqrt(static_cast<double>(headDim));
}

FloatAttr AttentionOptions::getSmScaleAttr(Builder &b) const {
  return smScale ? b.getF32FloatAttr(static_cast<float>(*smScale))
                 : FloatAttr();
}

FloatAttr AttentionOptions::getSoftCapAttr(Builder &b) const {
  return softCap ? b.getF32FloatAttr(static_cast<float>(*softCap))
                 : FloatAttr();
}

IntegerAttr AttentionOptions::getWindowAttr(Builder &b) const {
  return window ? b.getI64IntegerAttr(*window) : IntegerAttr();
}

UnitAttr AttentionOptions::getLseBase2Attr(Builder &b) const {
  return lseBase2 ? b.getUnitAttr() : UnitAttr();
}

WorkListOperands WorkListOperands::get(ValueRange values) {
  assert(values.size() == 4 && "a work list has four operands");
  return {values[0], values[1], values[2], values[3]};
}

#include "PagedAttn/Dialect/PAInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Attention ops
//===----------------------------------------------------------------------===//

LogicalResult DecodeOp::verify() {
  Checker c(*this);
  if (failed(verifyAttention(c, *this)))
    return failure();
  if (failed(c.pageTable(*this)))
    return failure();
  // One query per request: tokens == batch.
  if (auto t = c.get("tokens"), b = c.get("batch"); t && b && *t != *b)
    return emitOpError() << "decode has one query per request: q has " << *t
                         << " rows but the page table has " << *b
                         << " requests";
  return success();
}

LogicalResult MLADecodeOp::verify() {
  Checker c(*this);
  if (failed(c.sameForm()))
    return failure();
  PagedMLAAttr cache = getCache();
  int64_t ckv = cache.getCkvDim(), kpe = cache.getKpeDim();
  // The cache [num_pages, P, D_ckv + D_kpe].
  Value kv = getKvCache();
  ShapedType kvt = Checker::shaped(kv);
  if (kvt.getRank() != 3)
    return emitOpError() << "MLA cache must have rank 3 ([num_pages, P, "
                            "D_ckv + D_kpe]), got "
                         << kv.getType();
  SmallVector<int64_t> expected = cache.getShape(kDyn);
  for (int64_t d = 1; d < 3; ++d)
    if (!kvt.isDynamicDim(d) && kvt.getDimSize(d) != expected[d])
      return emitOpError() << "MLA cache dim " << d << " is "
                           << kvt.getDimSize(d) << " but " << cache << " needs "
                           << expected[d] << " ([num_pages, P, D_ckv + D_kpe])";
  Type elem = kvt.getElementType();
  if (!elem.isF16() && !elem.isBF16() && !elem.isF32())
    return emitOpError() << "MLA cache element type must be f16, bf16 or "
                            "f32, got "
                         << elem;
  // The queries q_nope [B, H, D_ckv] and q_pe [B, H, D_kpe].
  for (auto [q, name, width, dimName] :
       {std::tuple{getQNope(), "q_nope", ckv, "D_ckv"},
        std::tuple{getQPe(), "q_pe", kpe, "D_kpe"}}) {
    std::string shape = std::string("[B, H, ") + dimName + "]";
    if (failed(c.rank(q, name, 3, shape)))
      return failure();
    ShapedType qt = Checker::shaped(q);
    if (qt.getElementType() != elem)
      return emitOpError() << "'" << name << "' element type "
                           << qt.getElementType()
                           << " does not match the MLA cache's " << elem;
    if (!qt.isDynamicDim(2) && qt.getDimSize(2) != width)
      return emitOpError() << "'" << name << "' dim 2 is " << qt.getDimSize(2)
                           << " but " << cache << " needs " << dimName << " = "
                           << width;
    if (failed(c.bind("batch", q, name, 0)) || failed(c.bind("H", q, name, 1)))
      return failure();
  }
  // The state outs: o [B, H, D_ckv] like q_nope, lse [B, H] f32.
  if (getOuts().size() != 2)
    return emitOpError() << "expects 2 outs (o, lse), got " << getOuts().size();
  Value o = getO(), lse = getLse();
  ShapedType ot = Checker::shaped(o), lt = Checker::shaped(lse);
  if (failed(verifyCompatibleShape(
          ot.getShape(), Checker::shaped(getQNope()).getShape())) ||
      ot.getElementType() != elem)
    return emitOpError() << "o must have q_nope's shape [B, H, D_ckv] and "
                            "element type (o: "
                         << o.getType() << ", q_nope: " << getQNope().getType()
                         << ")";
  if (lt.getRank() != 2 || !lt.getElementType().isF32())
    return emitOpError() << "lse must be a 2-D f32 array [B, H], got "
                         << lse.getType();
  if (failed(c.bind("batch", lse, "lse", 0)) ||
      failed(c.bind("H", lse, "lse", 1)))
    return failure();
  if (failed(c.pageTable(*this)))
    return failure();
  // Options.
  if (!getSmScale().isFiniteNonZero())
    return emitOpError() << "sm_scale must be finite and non-zero";
  if (std::optional<APFloat> cap = getLogitsSoftCap();
      cap && !(cap->isFiniteNonZero() && !cap->isNegative()))
    return emitOpError() << "logits_soft_cap must be > 0";
  return success();
}

/// The partial-state outs of decode_partial and prefill_partial: o_part
/// [rows, Hq, D] and lse_part [rows, Hq], f32, their rows named `rows` and
/// the query's row dimension named `queries` ("batch" or "tokens").
static LogicalResult verifyPartialOuts(Checker &c, AttentionOpInterface op,
                                       StringRef rows, StringRef queries) {
  if (op.getOuts().size() != 2)
    return c.error() << "expects 2 outs (o_part, lse_part), got "
                     << op.getOuts().size();
  Value o = op.getOuts()[0], lse = op.getOuts()[1];
  std::string oShape = ("[" + rows + ", Hq, D]").str();
  std::string lseShape = ("[" + rows + ", Hq]").str();
  if (failed(c.rank(o, "o_part", 3, oShape)) ||
      failed(c.rank(lse, "lse_part", 2, lseShape)))
    return failure();
  if (!Checker::shaped(o).getElementType().isF32() ||
      !Checker::shaped(lse).getElementType().isF32())
    return c.error() << "o_part and lse_part must be f32";
  if (failed(c.bind(queries, op.getQ(), "q", 0)) ||
      failed(c.bind("D", op.getQ(), "q", 2)) ||
      failed(c.bind(rows, o, "o_part", 0)) ||
      failed(c.bind("Hq", o, "o_part", 1)) ||
      failed(c.bind("D", o, "o_part", 2)) ||
      failed(c.bind(rows, lse, "lse_part", 0)) ||
      failed(c.bind("Hq", lse, "lse_part", 1)))
    return failure();
  return verifyOptions(c, op);
}

/// The query segments, positions and masks of pa.prefill and
/// pa.prefill_partial.
template <typename PrefillLike>
static LogicalResult verifyPrefillQueries(Checker &c, PrefillLike op) {
  if (failed(c.indexArray(op.getQoIndptr(), "qo_indptr")) ||
      failed(c.bind("batch", op.getQoIndptr(), "qo_indptr", 0, -1)) ||
      failed(c.pageTable(op)))
    return failure();
  if (Value pos = op.getQPositions())
    if (failed(c.indexArray(pos, "q_positions")) ||
        failed(c.bind("tokens", pos, "q_positions", 0)))
      return failure();
  Value mask = op.getCustomMask(), maskIndptr = op.getMaskIndptr();
  if (!mask != !maskIndptr)
    return op.emitOpError()
           << "a custom mask needs both the packed mask and mask_indptr";
  if (mask) {
    ShapedType mt = Checker::shaped(mask);
    if (mt.getRank() != 1 || !mt.getElementType().isInteger(8))
      return op.emitOpError() << "'custom_mask' must be a 1-D array of packed "
                                 "bytes (i8 or ui8), got "
                              << mask.getType();
    if (failed(c.indexArray(maskIndptr, "mask_indptr")) ||
        failed(c.bind("batch", maskIndptr, "mask_indptr", 0, -1)))
      return failure();
    if (op.getCausal())
      return op.emitOpError()
             << "a custom mask and 'causal' exclude each other";
    if (op.getWindow())
      return op.emitOpError()
             << "a custom mask and 'window' exclude each other";
  }
  return success();
}

LogicalResult PrefillOp::verify() {
  Checker c(*this);
  if (failed(verifyAttention(c, *this)))
    return failure();
  return verifyPrefillQueries(c, *this);
}

LogicalResult PrefillPartialOp::verify() {
  Checker c(*this);
  if (failed(verifyAttentionInputs(c, *this)) ||
      failed(verifyPartialOuts(c, *this, "partial rows", "tokens")))
    return failure();
  for (auto [v, name] : llvm::zip_equal(getWorkList(), kWorkListNames))
    if (failed(c.indexArray(v, name)) ||
        failed(c.bind("work items", v, name, 0)))
      return failure();
  return verifyPrefillQueries(c, *this);
}

LogicalResult CascadeOp::verify() {
  Checker c(*this);
  if (failed(verifyAttention(c, *this)))
    return failure();
  int64_t levels = getQoIndptrs().size();
  if (levels < 1)
    return emitOpError() << "cascade needs at least one level";
  if ((int64_t)getKvIndptrs().size() != levels ||
      (int64_t)getKvIndices().size() != levels ||
      (int64_t)getKvLastPageLens().size() != levels)
    return emitOpError() << "every level needs a qo_indptr and a page table: "
                         << "got " << levels << " qo_indptrs, "
                         << getKvIndptrs().size() << " kv_indptrs, "
                         << getKvIndices().size() << " kv_indices, "
                         << getKvLastPageLens().size() << " kv_last_page_lens";
  for (int64_t l = 0; l < levels; ++l) {
    std::string key = ("batch of level " + Twine(l)).str();
    std::string suffix = ("[" + Twine(l) + "]").str();
    std::string qo = "qo_indptrs" + suffix;
    if (failed(c.indexArray(getQoIndptrs()[l], qo)) ||
        failed(c.bind(key, getQoIndptrs()[l], qo, 0, -1)))
      return failure();
    if (failed(c.pageTable(getKvIndptrs()[l], getKvIndices()[l],
                           getKvLastPageLens()[l], key, suffix)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Split-KV
//===----------------------------------------------------------------------===//

/// The CSR work list `(work_indptr[B+1], request[W], start[W], end[W])`.
static LogicalResult verifyWorkList(Checker &c, Value indptr, Value request,
                                    Value start, Value end) {
  if (failed(c.indexArray(indptr, "work_indptr")) ||
      failed(c.bind("batch", indptr, "work_indptr", 0, -1)))
    return failure();
  for (auto [v, name] : {std::pair{request, "work_request"},
                         std::pair{start, "work_start"},
                         std::pair{end, "work_end"}})
    if (failed(c.indexArray(v, name)) ||
        failed(c.bind("work items", v, name, 0)))
      return failure();
  return success();
}

/// The attributes of pa.shard_pages / pa.shard_work: a positive page size,
/// at least one device and `device` among them.
static LogicalResult verifyShardAttrs(Operation *op, int64_t pageSize,
                                      int64_t devices, int64_t device) {
  if (pageSize <= 0)
    return op->emitOpError() << "page_size must be > 0, got " << pageSize;
  if (devices < 1)
    return op->emitOpError() << "devices must be >= 1, got " << devices;
  if (device < 0 || device >= devices)
    return op->emitOpError() << "device must lie in [0, devices = " << devices
                             << "), got " << device;
  return success();
}

LogicalResult ShardPagesOp::verify() {
  Checker c(*this);
  if (failed(c.sameForm()) ||
      failed(verifyShardAttrs(*this, getPageSize(), getDevices(),
                              getDevice())))
    return failure();
  if (getOuts().size() != 3)
    return emitOpError() << "expects 3 outs (the device's kv_indptr, "
                            "kv_indices, kv_last_page_len), got "
                         << getOuts().size();
  Value ip = getOuts()[0], ix = getOuts()[1], lp = getOuts()[2];
  if (failed(c.indexArray(getKvIndptr(), "kv_indptr")) ||
      failed(c.bind("batch", getKvIndptr(), "kv_indptr", 0, -1)) ||
      failed(c.indexArray(getKvIndices(), "kv_indices")) ||
      failed(c.bind("nnz", getKvIndices(), "kv_indices", 0)) ||
      failed(c.indexArray(getKvLastPageLen(), "kv_last_page_len")) ||
      failed(c.bind("batch", getKvLastPageLen(), "kv_last_page_len", 0)) ||
      failed(c.indexArray(ip, "outs[0] (kv_indptr)")) ||
      failed(c.bind("batch", ip, "outs[0] (kv_indptr)", 0, -1)) ||
      failed(c.indexArray(ix, "outs[1] (kv_indices)")) ||
      failed(c.bind("nnz", ix, "outs[1] (kv_indices)", 0)) ||
      failed(c.indexArray(lp, "outs[2] (kv_last_page_len)")) ||
      failed(c.bind("batch", lp, "outs[2] (kv_last_page_len)", 0)))
    return failure();
  return success();
}

LogicalResult ShardWorkOp::verify() {
  Checker c(*this);
  if (failed(c.sameForm()) ||
      failed(verifyShardAttrs(*this, getPageSize(), getDevices(),
                              getDevice())))
    return failure();
  Value qo = getQoIndptr();
  if (getOuts().size() != (qo ? 7u : 4u))
    return emitOpError() << "expects " << (qo ? 7 : 4)
                         << " outs (the work list of "
                         << (qo ? "pa.prefill_partial" : "pa.decode_partial")
                         << "), got " << getOuts().size();
  if (failed(c.indexArray(getKvIndptr(), "kv_indptr")) ||
      failed(c.bind("batch", getKvIndptr(), "kv_indptr", 0, -1)) ||
      failed(c.indexArray(getKvIndices(), "kv_indices")) ||
      failed(c.indexArray(getKvLastPageLen(), "kv_last_page_len")) ||
      failed(c.bind("batch", getKvLastPageLen(), "kv_last_page_len", 0)))
    return failure();
  if (qo && (failed(c.indexArray(qo, "qo_indptr")) ||
             failed(c.bind("batch", qo, "qo_indptr", 0, -1))))
    return failure();
  static constexpr const char *kDecodeNames[4] = {
      "work_indptr", "work_request", "work_start", "work_end"};
  for (auto [i, out] : llvm::enumerate(getOuts())) {
    std::string name = "outs[" + std::to_string(i) + "] (" +
                       (qo ? PrefillPartialOp::kWorkListNames[i]
                           : kDecodeNames[i]) +
                       ")";
    // The decode form's work_indptr has B + 1 entries.
    if (failed(c.indexArray(out, name)) ||
        failed(c.bind("batch", out, name, 0, !qo && i == 0 ? -1 : 0)))
      return failure();
  }
  return success();
}

LogicalResult PlanSplitKVOp::verify() {
  Checker c(*this);
  if (failed(c.sameForm()))
    return failure();
  if (getPageSize() <= 0)
    return emitOpError() << "page_size must be > 0, got " << getPageSize();
  if ((int64_t)getChunkSize() <= 0)
    return emitOpError() << "chunk_size must be > 0, got "
                         << (int64_t)getChunkSize();
  if (getOuts().size() != 4)
    return emitOpError() << "expects 4 outs (work_indptr, work_request, "
                            "work_start, work_end), got "
                         << getOuts().size();
  if (failed(c.indexArray(getKvIndptr(), "kv_indptr")) ||
      failed(c.bind("batch", getKvIndptr(), "kv_indptr", 0, -1)) ||
      failed(c.indexArray(getKvLastPageLen(), "kv_last_page_len")) ||
      failed(c.bind("batch", getKvLastPageLen(), "kv_last_page_len", 0)))
    return failure();
  return verifyWorkList(c, getOuts()[0], getOuts()[1], getOuts()[2],
                        getOuts()[3]);
}

LogicalResult DecodePartialOp::verify() {
  Checker c(*this);
  if (failed(verifyAttentionInputs(c, *this)) ||
      failed(verifyPartialOuts(c, *this, "work items", "batch")) ||
      failed(c.pageTable(*this)))
    return failure();
  return verifyWorkList(c, getWorkIndptr(), getWorkRequest(), getWorkStart(),
                        getWorkEnd());
}

LogicalResult MergeSegmentsOp::verify() {
  Checker c(*this);
  if (failed(c.sameForm()))
    return failure();
  if (getOuts().size() != 2)
    return emitOpError() << "expects 2 outs (o, lse), got "
                         << getOuts().size();
  Value op = getOPart(), lp = getLsePart(), o = getOuts()[0],
        lse = getOuts()[1];
  if (failed(c.rank(op, "o_part", 3, "[items, H, D]")) ||
      failed(c.rank(lp, "lse_part", 2, "[items, H]")) ||
      failed(c.rank(o, "o", 3, "[segments, H, D]")) ||
      failed(c.rank(lse, "lse", 2, "[segments, H]")))
    return failure();
  if (!isa<FloatType>(Checker::shaped(op).getElementType()) ||
      !isa<FloatType>(Checker::shaped(o).getElementType()))
    return emitOpError() << "o_part and o must have float element types";
  if (!Checker::shaped(lp).getElementType().isF32() ||
      !Checker::shaped(lse).getElementType().isF32())
    return emitOpError() << "lse_part and lse must be f32";
  if (failed(c.indexArray(getSegments(), "segments")) ||
      failed(c.bind("segments", getSegments(), "segments", 0, -1)) ||
      failed(c.bind("items", op, "o_part", 0)) ||
      failed(c.bind("items", lp, "lse_part", 0)) ||
      failed(c.bind("H", op, "o_part", 1)) ||
      failed(c.bind("H", lp, "lse_part", 1)) ||
      failed(c.bind("D", op, "o_part", 2)) ||
      failed(c.bind("segments", o, "o", 0)) ||
      failed(c.bind("H", o, "o", 1)) || failed(c.bind("D", o, "o", 2)) ||
      failed(c.bind("segments", lse, "lse", 0)) ||
      failed(c.bind("H", lse, "lse", 1)))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// State merges
//===----------------------------------------------------------------------===//

LogicalResult MergeOp::verify() {
  Checker c(*this);
  if (failed(c.sameForm()))
    return failure();
  if (getStates().empty() || getStates().size() % 2 != 0)
    return emitOpError() << "states must be a non-empty list of (o, lse) "
                            "pairs, got "
                         << getStates().size() << " values";
  if (getOuts().size() != 2)
    return emitOpError() << "expects 2 outs (o, lse), got "
                         << getOuts().size();
  ShapedType ot = Checker::shaped(getOuts()[0]);
  ShapedType lt = Checker::shaped(getOuts()[1]);
  if (!isa<FloatType>(ot.getElementType()))
    return emitOpError() << "o must have a float element type";
  if (!lt.getElementType().isF32())
    return emitOpError() << "lse must be f32, got " << lt.getElementType();
  if (ot.getRank() != lt.getRank() + 1 ||
      failed(verifyCompatibleShape(ot.getShape().drop_back(), lt.getShape())))
    return emitOpError() << "o must be lse's shape plus a head dim (o: "
                         << ot << ", lse: " << lt << ")";
  if (failed(c.bind("D", getOuts()[0], "o", ot.getRank() - 1)))
    return failure();
  for (int64_t i = 0, e = getNumStates(); i < e; ++i) {
    ShapedType si = Checker::shaped(getStateO(i));
    ShapedType li = Checker::shaped(getStateLse(i));
    if (failed(verifyCompatibleShape(si.getShape(), ot.getShape())) ||
        !isa<FloatType>(si.getElementType()))
      return emitOpError() << "state " << i << ": o must have the shape of "
                           << "the o out and a float element type, got "
                           << si;
    if (failed(verifyCompatibleShape(li.getShape(), lt.getShape())) ||
        !li.getElementType().isF32())
      return emitOpError() << "state " << i << ": lse must have the shape of "
                           << "the lse out and be f32, got " << li;
  }
  return success();
}

LogicalResult MergeStatesOp::verify() {
  Checker c(*this);
  if (failed(c.sameForm()))
    return failure();
  if (getOuts().size() != 2)
    return emitOpError() << "expects 2 outs (o, lse), got "
                         << getOuts().size();
  Value os = getOStates(), ls = getLseStates();
  if (failed(c.rank(os, "o_states", 4, "[rows, states, H, D]")) ||
      failed(c.rank(ls, "lse_states", 3, "[rows, states, H]")))
    return failure();
  Value o = getOuts()[0], lse = getOuts()[1];
  if (failed(c.rank(o, "o", 3, "[rows, H, D]")) ||
      failed(c.rank(lse, "lse", 2, "[rows, H]")))
    return failure();
  if (!isa<FloatType>(Checker::shaped(os).getElementType()) ||
      !isa<FloatType>(Checker::shaped(o).getElementType()))
    return emitOpError() << "o_states and o must have float element types";
  if (!Checker::shaped(ls).getElementType().isF32() ||
      !Checker::shaped(lse).getElementType().isF32())
    return emitOpError() << "lse_states and lse must be f32";
  if (failed(c.bind("rows", os, "o_states", 0)) ||
      failed(c.bind("states", os, "o_states", 1)) ||
      failed(c.bind("H", os, "o_states", 2)) ||
      failed(c.bind("D", os, "o_states", 3)) ||
      failed(c.bind("rows", ls, "lse_states", 0)) ||
      failed(c.bind("states", ls, "lse_states", 1)) ||
      failed(c.bind("H", ls, "lse_states", 2)) ||
      failed(c.bind("rows", o, "o", 0)) || failed(c.bind("H", o, "o", 1)) ||
      failed(c.bind("D", o, "o", 2)) || failed(c.bind("rows", lse, "lse", 0)) ||
      failed(c.bind("H", lse, "lse", 1)))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Cache writes
//===----------------------------------------------------------------------===//

LogicalResult AppendKVOp::verify() {
  Checker c(*this);
  Type elem;
  if (failed(c.sameForm()) || failed(c.kvCache(getCache(), getOuts(), elem)) ||
      failed(c.kvScales(getCache(), elem, getKScale(), getVScale())) ||
      failed(c.kvRows(getCache(), getKNew(), getVNew(), elem, "rows", "k_new",
                      "v_new")) ||
      failed(c.indexArray(getAppendIndptr(), "append_indptr")) ||
      failed(c.bind("batch", getAppendIndptr(), "append_indptr", 0, -1)) ||
      failed(c.pageTable(*this)))
    return failure();
  return success();
}

LogicalResult AppendKVSlotsOp::verify() {
  Checker c(*this);
  Type elem;
  if (failed(c.sameForm()) || failed(c.kvCache(getCache(), getOuts(), elem)) ||
      failed(c.kvScales(getCache(), elem, getKScale(), getVScale())) ||
      failed(c.kvRows(getCache(), getKNew(), getVNew(), elem, "rows", "k_new",
                      "v_new")) ||
      failed(c.indexArray(getSlotMapping(), "slot_mapping")) ||
      failed(c.bind("rows", getSlotMapping(), "slot_mapping", 0)))
    return failure();
  return success();
}

LogicalResult ScatterKVOp::verify() {
  Checker c(*this);
  Type elem;
  if (failed(c.sameForm()) || failed(c.kvCache(getCache(), getOuts(), elem)) ||
      failed(c.kvScales(getCache(), elem, getKScale(), getVScale())) ||
      failed(c.kvRows(getCache(), getKRows(), getVRows(), elem, "rows",
                      "k_rows", "v_rows")) ||
      failed(c.indexArray(getRowsIndptr(), "rows_indptr")) ||
      failed(c.bind("batch", getRowsIndptr(), "rows_indptr", 0, -1)) ||
      failed(c.indexArray(getPositions(), "positions")) ||
      failed(c.bind("rows", getPositions(), "positions", 0)) ||
      failed(c.pageTable(*this)))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Masks and CacheBlend
//===----------------------------------------------------------------------===//

LogicalResult PackMaskOp::verify() {
  Checker c(*this);
  if (failed(c.sameForm()))
    return failure();
  ShapedType mt = Checker::shaped(getMask());
  if (mt.getRank() != 1 || !(mt.getElementType().isInteger(1) ||
                             mt.getElementType().isInteger(8)))
    return emitOpError() << "'mask' must be a 1-D array of i1 or i8, got "
                         << getMask().getType();
  if (getOuts().size() != 2)
    return emitOpError() << "expects 2 outs (packed, packed_indptr), got "
                         << getOuts().size();
  ShapedType pt = Checker::shaped(getOuts()[0]);
  if (pt.getRank() != 1 || !pt.getElementType().isInteger(8))
    return emitOpError() << "'packed' must be a 1-D array of i8, got " << pt;
  if (failed(c.indexArray(getIndptr(), "indptr")) ||
      failed(c.bind("batch", getIndptr(), "indptr", 0, -1)) ||
      failed(c.indexArray(getOuts()[1], "packed_indptr")) ||
      failed(c.bind("batch", getOuts()[1], "packed_indptr", 0, -1)))
    return failure();
  return success();
}

LogicalResult KVDeviationOp::verify() {
  Checker c(*this);
  if (failed(c.sameForm()))
    return failure();
  Value n = getNewRows(), o = getCachedRows();
  if (failed(c.rank(n, "new_rows", 3, "[tokens, H, D]")) ||
      failed(c.rank(o, "cached_rows", 3, "[tokens, H, D]")))
    return failure();
  ShapedType nt = Checker::shaped(n), ot = Checker::shaped(o);
  if (!isa<FloatType>(nt.getElementType()) ||
      nt.getElementType() != ot.getElementType())
    return emitOpError() << "new_rows and cached_rows must have the same float "
                            "element type";
  for (int64_t d = 0; d < 3; ++d)
    if (failed(c.bind(d == 0 ? "tokens" : d == 1 ? "H" : "D", n, "new_rows",
                      d)) ||
        failed(c.bind(d == 0 ? "tokens" : d == 1 ? "H" : "D", o, "cached_rows",
                      d)))
      return failure();
  if (getOuts().size() != 1)
    return emitOpError() << "expects 1 out (deviation), got "
                         << getOuts().size();
  ShapedType dt = Checker::shaped(getOuts()[0]);
  if (dt.getRank() != 1 || !dt.getElementType().isF32())
    return emitOpError() << "'deviation' must be a 1-D f32 array [tokens], "
                            "got "
                         << dt;
  return c.bind("tokens", getOuts()[0], "deviation", 0);
}

LogicalResult SelectTopKOp::verify() {
  Checker c(*this);
  if (failed(c.sameForm()))
    return failure();
  double ratio = getRatio().convertToDouble();
  if (!(ratio > 0.0 && ratio <= 1.0))
    return emitOpError() << "ratio must be in (0, 1], got " << ratio;
  ShapedType dt = Checker::shaped(getDeviation());
  if (dt.getRank() != 1 || !dt.getElementType().isF32())
    return emitOpError() << "'deviation' must be a 1-D f32 array, got " << dt;
  if (getOuts().size() != 2)
    return emitOpError() << "expects 2 outs (positions, out_indptr), got "
                         << getOuts().size();
  if (failed(c.indexArray(getIndptr(), "indptr")) ||
      failed(c.bind("batch", getIndptr(), "indptr", 0, -1)) ||
      failed(c.indexArray(getOuts()[0], "positions")) ||
      failed(c.indexArray(getOuts()[1], "out_indptr")) ||
      failed(c.bind("batch", getOuts()[1], "out_indptr", 0, -1)))
    return failure();
  return success();
}

#define GET_OP_CLASSES
#include "PagedAttn/Dialect/PAOps.cpp.inc"
