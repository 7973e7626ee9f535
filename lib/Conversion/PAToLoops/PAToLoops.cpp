//===- PAToLoops.cpp - the convert-pa-to-loops pass -------------------------===//

#include "PagedAttn/Conversion/PagedAttention.h"
#include "PagedAttn/Conversion/Passes.h"

#include "mlir/Transforms/DialectConversion.h"

namespace mlir::pa {
#define GEN_PASS_DEF_CONVERTPATOLOOPS
#include "PagedAttn/Conversion/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;
using namespace mlir::pa;

namespace {
struct ConvertPAToLoops final
    : pa::impl::ConvertPAToLoopsBase<ConvertPAToLoops> {
  using Base::Base;

  void runOnOperation() override {
    // Check the precondition of every pattern before changing anything.
    WalkResult walk = getOperation()->walk([](Operation *op) {
      if (!isa<PADialect>(op->getDialect()) || hasMemRefSemantics(op))
        return WalkResult::advance();
      op->emitOpError() << "convert-pa-to-loops expects the memref form; run "
                           "one-shot-bufferize first";
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    RewritePatternSet patterns(&getContext());
    populatePAAttentionToLoopsPatterns(patterns);
    populatePAStatesToLoopsPatterns(patterns);
    populatePACacheToLoopsPatterns(patterns);
    populatePACacheBlendToLoopsPatterns(patterns);
    populatePAMLAToLoopsPatterns(patterns);
    populatePATileToLoopsPatterns(patterns);

    ConversionTarget target(getContext());
    target.addIllegalDialect<PADialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    ConversionConfig config;
    config.allowPatternRollback = false;
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns), config)))
      signalPassFailure();
  }
};
} // namespace
