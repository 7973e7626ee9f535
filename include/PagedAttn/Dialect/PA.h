//===- PA.h - the pa dialect: ops, attributes, enums ------------*- C++ -*-===//
//
// Public header of the `pa` dialect. Include this to use pa ops from C++.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_DIALECT_PA_H
#define PAGEDATTN_DIALECT_PA_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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

#define GET_OP_CLASSES
#include "PagedAttn/Dialect/PAOps.h.inc"

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
