//===- Passes.h - pa conversion passes --------------------------*- C++ -*-===//

#ifndef PAGEDATTN_CONVERSION_PASSES_H
#define PAGEDATTN_CONVERSION_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
namespace pa {

#define GEN_PASS_DECL
#include "PagedAttn/Conversion/Passes.h.inc"

/// Patterns lowering memref-form pa ops to loops, one family per file.
void populatePAAttentionToLoopsPatterns(RewritePatternSet &patterns);
void populatePAStatesToLoopsPatterns(RewritePatternSet &patterns);
void populatePACacheToLoopsPatterns(RewritePatternSet &patterns);
void populatePACacheBlendToLoopsPatterns(RewritePatternSet &patterns);
/// pa.mla_decode (multi-head latent attention) to loops.
void populatePAMLAToLoopsPatterns(RewritePatternSet &patterns);
/// The tile-level ops of pa-tile-attention (pa.tile.*) to loops.
void populatePATileToLoopsPatterns(RewritePatternSet &patterns);
/// Scalar arith.extf / arith.truncf between f8E4M3FN or f8E5M2 and f16, bf16
/// or f32 to integer arithmetic (the patterns of pa-expand-fp8).
void populatePAExpandFP8Patterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "PagedAttn/Conversion/Passes.h.inc"

} // namespace pa
} // namespace mlir

#endif // PAGEDATTN_CONVERSION_PASSES_H
