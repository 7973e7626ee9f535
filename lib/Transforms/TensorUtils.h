//===- TensorUtils.h - tensor helpers of the pa rewrites --------*- C++ -*-===//

#ifndef PAGEDATTN_LIB_TRANSFORMS_TENSORUTILS_H
#define PAGEDATTN_LIB_TRANSFORMS_TENSORUTILS_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::pa {

/// An empty tensor of `like`'s type, its dynamic sizes read off `like`: the
/// outs of an op a rewrite creates beside an existing one.
inline Value emptyLike(OpBuilder &b, Location loc, Value like) {
  return tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, like),
                                 getElementTypeOrSelf(like.getType()));
}

} // namespace mlir::pa

#endif // PAGEDATTN_LIB_TRANSFORMS_TENSORUTILS_H
