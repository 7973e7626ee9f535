//===- BufferizableOpInterfaceImpl.cpp - One-Shot Bufferize for pa ops -----===//
//
// Every pa op is destination-passing style, so bufferization rewrites the
// tensor form into the memref form of the same op: inputs become their
// buffers, `outs` become the buffers the results live in, and the op returns
// nothing.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Dialect/PA.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::pa;

namespace {
/// Inits are read only by the ops that keep what they do not overwrite in
/// their outs (`OpTy::kReadsInits`, the cache writes): for the others a
/// `tensor.empty` init becomes a plain allocation.
template <typename OpTy>
struct PAOpInterface final
    : DstBufferizableOpInterfaceExternalModel<PAOpInterface<OpTy>, OpTy> {
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &) const {
    return OpTy::kReadsInits ||
           !cast<DestinationStyleOpInterface>(op).isDpsInit(&operand);
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto dst = cast<DestinationStyleOpInterface>(op);
    SmallVector<Value> operands, inits;
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      if (isa<TensorType>(v.getType())) {
        FailureOr<Value> buffer = getBuffer(rewriter, v, options, state);
        if (failed(buffer))
          return failure();
        v = *buffer;
      }
      operands.push_back(v);
      if (dst.isDpsInit(&operand))
        inits.push_back(v);
    }
    rewriter.setInsertionPoint(op);
    OperationState newState(op->getLoc(), op->getName(), operands,
                            /*types=*/TypeRange(),
                            llvm::to_vector(op->getDiscardableAttrs()));
    newState.propertiesAttr = op->getPropertiesAsAttribute();
    rewriter.create(newState);
    replaceOpWithBufferizedValues(rewriter, op, inits);
    return success();
  }
};

template <typename... Ops>
void attachAll(MLIRContext *ctx) {
  (Ops::template attachInterface<PAOpInterface<Ops>>(*ctx), ...);
}
} // namespace

void mlir::pa::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, PADialect *) {
    attachAll<
#define GET_OP_LIST
#include "PagedAttn/Dialect/PAOps.cpp.inc"
        >(ctx);
  });
}
