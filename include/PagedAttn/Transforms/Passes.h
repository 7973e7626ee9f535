//===- Passes.h - pa transformations ----------------------------*- C++ -*-===//

#ifndef PAGEDATTN_TRANSFORMS_PASSES_H
#define PAGEDATTN_TRANSFORMS_PASSES_H

#include "PagedAttn/Dialect/PA.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::pa {

#define GEN_PASS_DECL
#include "PagedAttn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "PagedAttn/Transforms/Passes.h.inc"

} // namespace mlir::pa

#endif // PAGEDATTN_TRANSFORMS_PASSES_H
