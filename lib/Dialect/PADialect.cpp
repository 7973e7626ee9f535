//===- PADialect.cpp - the pa dialect and its attributes -------------------===//

#include "PagedAttn/Dialect/PA.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;
using namespace mlir::pa;

#include "PagedAttn/Dialect/PADialect.cpp.inc"
#include "PagedAttn/Dialect/PAEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "PagedAttn/Dialect/PAAttrs.cpp.inc"

void PADialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "PagedAttn/Dialect/PAAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "PagedAttn/Dialect/PAOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "PagedAttn/Dialect/PATileOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// PagedKVAttr
//===----------------------------------------------------------------------===//

LogicalResult
PagedKVAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                    KVLayout layout, int64_t pageSize, int64_t numKVHeads,
                    int64_t headDim) {
  if (pageSize <= 0)
    return emitError() << "page_size must be > 0, got " << pageSize;
  if (numKVHeads <= 0)
    return emitError() << "kv_heads must be > 0, got " << numKVHeads;
  if (headDim <= 0)
    return emitError() << "head_dim must be > 0, got " << headDim;
  return success();
}

SmallVector<int64_t> PagedKVAttr::getSplitShape(int64_t numPages) const {
  if (getLayout() == KVLayout::NHD)
    return {numPages, getPageSize(), getNumKVHeads(), getHeadDim()};
  return {numPages, getNumKVHeads(), getPageSize(), getHeadDim()};
}

SmallVector<int64_t> PagedKVAttr::getJointShape(int64_t numPages) const {
  SmallVector<int64_t> shape = getSplitShape(numPages);
  shape.insert(shape.begin() + 1, 2);
  return shape;
}

//===----------------------------------------------------------------------===//
// PagedMLAAttr
//===----------------------------------------------------------------------===//

LogicalResult PagedMLAAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t pageSize, int64_t ckvDim,
                                   int64_t kpeDim) {
  if (pageSize <= 0)
    return emitError() << "page_size must be > 0, got " << pageSize;
  if (ckvDim <= 0)
    return emitError() << "ckv (D_ckv) must be > 0, got " << ckvDim;
  if (kpeDim <= 0)
    return emitError() << "kpe (D_kpe) must be > 0, got " << kpeDim;
  if (ckvDim > std::numeric_limits<int32_t>::max() - kpeDim)
    return emitError() << "ckv + kpe must be < 2^31, got " << ckvDim << " + "
                       << kpeDim;
  return success();
}
