//===- TensorUtils.h - tensor helpers of the pa rewrites --------*- C++ -*-===//

#ifndef PAGEDATTN_LIB_TRANSFORMS_TENSORUTILS_H
#define PAGEDATTN_LIB_TRANSFORMS_TENSORUTILS_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::pa {

/// An empty tensor of `like`'s shape and element type (or `elem`), its
/// dynamic sizes read off `like`: the outs of an op a rewrite creates beside
/// an existing one.
inline Value emptyLike(OpBuilder &b, Location loc, Value like,
                       Type elem = Type()) {
  return tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, like),
      elem ? elem : getElementTypeOrSelf(like.getType()));
}

} // namespace mlir::pa

#endif // PAGEDATTN_LIB_TRANSFORMS_TENSORUTILS_H
