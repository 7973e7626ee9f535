//===- PA.h - the pa dialect: ops, interfaces, attributes -------*- C++ -*-===//
//
// Public header of the `pa` dialect. Include this to use pa ops from C++.
// Code that handles every attention op (or every op with a page table) works
// on AttentionOpInterface (PagedOpInterface) rather than on a template over
// the op classes; the operand groups those interfaces hand out, and that the
// ops' builders take, are the small structs below.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_DIALECT_PA_H
#define PAGEDATTN_DIALECT_PA_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "PagedAttn/Dialect/PAEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "PagedAttn/Dialect/PAAttrs.h.inc"

#include "PagedAttn/Dialect/PADialect.h.inc"

namespace mlir {
class Builder;
namespace pa {

/// The options of an attention op (`sm_scale`, `logits_soft_cap`, `window`,
/// `lse_base2`) as plain values; unset options are empty. The ops store
/// `sm_scale` and `logits_soft_cap` as f32, so a round trip through this
/// struct is exact.
struct AttentionOptions {
  std::optional<double> smScale, softCap;
  std::optional<int64_t> window;
  bool lseBase2 = false;

  /// From the values the generated accessors return.
  static AttentionOptions get(std::optional<llvm::APFloat> smScale,
                              std::optional<llvm::APFloat> softCap,
                              std::optional<uint64_t> window, bool lseBase2);
  /// `sm_scale`, or its default `1/sqrt(headDim)`.
  double getSmScaleOr(int64_t headDim) const;

  /// The attributes the ops store (null where unset).
  FloatAttr getSmScaleAttr(Builder &b) const;
  FloatAttr getSoftCapAttr(Builder &b) const;
  IntegerAttr getWindowAttr(Builder &b) const;
  UnitAttr getLseBase2Attr(Builder &b) const;

  bool operator==(const AttentionOptions &other) const {
    return smScale == other.smScale && softCap == other.softCap &&
           window == other.window && lseBase2 == other.lseBase2;
  }
  bool operator!=(const AttentionOptions &other) const {
    return !(*this == other);
  }
};

/// The operands of a CSR page table `pages(kv_indptr[B+1], kv_indices[nnz],
/// kv_last_page_len[B])`.
struct PageTableOperands {
  Value indptr, indices, lastPageLen;
};

/// The operands of a split-KV work list `work(work_indptr[B+1],
/// work_request[W], work_start[W], work_end[W])` (see pa.plan_split_kv).
struct WorkListOperands {
  Value indptr, request, start, end;

  /// From the four values in that order (e.g. pa.plan_split_kv's results).
  static WorkListOperands get(ValueRange values);
};

/// The scale operands `scales(%k_scale, %v_scale)` of an op over an fp8 KV
/// cache: 1-D f32 arrays of shape [1] (per tensor) or [Hkv] (per KV head).
/// Both are null for caches of other element types.
struct KVScales {
  Value k, v;

  explicit operator bool() const { return k && v; }
};

/// True for the element types of an fp8 KV cache: f8E4M3FN and f8E5M2.
bool isFP8CacheType(Type t);

/// How the queries of a pa.prefill are placed and masked: `causal`, the
/// explicit positions `positions(%q_positions)` and the packed custom mask
/// `mask(%custom_mask, %mask_indptr)` (null operands are absent).
struct PrefillMasking {
  bool causal = false;
  Value qPositions;
  Value customMask, maskIndptr;
};

namespace detail {
/// Result types of a pa op: its tensor outs (memref outs are written in
/// place and give no result).
LogicalResult inferFromOuts(ValueRange outs, SmallVectorImpl<Type> &inferred);

/// Memory effects of a pa op in the memref form: inputs are read, inits are
/// written (and read too with `readsInits`, for ops that keep what they do
/// not overwrite).
void getDpsEffects(
    Operation *op, bool readsInits,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects);
} // namespace detail
} // namespace pa
} // namespace mlir

#include "PagedAttn/Dialect/PAInterfaces.h.inc"

#define GET_OP_CLASSES
#include "PagedAttn/Dialect/PAOps.h.inc"

#define GET_OP_CLASSES
#include "PagedAttn/Dialect/PATileOps.h.inc"

namespace mlir {
class DialectRegistry;
namespace pa {
/// Registers the BufferizableOpInterface models of all pa ops (One-Shot
/// Bufferize turns the tensor form into the memref form).
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);

/// True if `lse` is a constant whose every element is -inf and `o` a constant
/// whose every element is zero: the identity state of the merge operator.
bool isIdentityState(Value o, Value lse);
} // namespace pa
} // namespace mlir

#endif // PAGEDATTN_DIALECT_PA_H
