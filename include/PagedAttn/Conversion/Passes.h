//===- Passes.h - pa conversion passes --------------------------*- C++ -*-===//

#ifndef PAGEDATTN_CONVERSION_PASSES_H
#define PAGEDATTN_CONVERSION_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <optional>

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

/// Whether convert-pa-to-gpu's wgmma prefill kernel (prefill-mma=wgmma:
/// Hopper warpgroup MMAs) can run a prefill of head dim `headDim` (over an
/// fp8 cache when `fp8Cache`) with the prefill shape options `warps`,
/// `warpRows`, `kvWarps`, `tileKV` (0: the default): a head dim that is a
/// multiple of 64, K / V of the queries' type, 4 or 8 warps (one or two
/// warpgroups) of 16 rows, no key split, KV tiles of a multiple of 16 keys
/// up to 128. prefill-mma=auto takes wgmma where this holds.
bool prefillFitsWgmma(int64_t headDim, bool fp8Cache, int64_t warps,
                      int64_t warpRows, int64_t kvWarps, int64_t tileKV);

/// Whether convert-pa-to-gpu's mla-mma=auto builds the wgmma MLA decode
/// kernel (MLAWgmma.cpp) for `heads` query heads and a latent cache of
/// D_ckv `ckv` + D_kpe `kpe` (16-bit data): from 64 heads, where that kernel
/// takes the shape (D_ckv a multiple of 128 up to 512, D_ckv + D_kpe a
/// multiple of 64, Q and two stages in shared memory). pa-compile then adds
/// the mma.sync kernel as mla_decode_small.
bool mlaAutoPicksWgmma(int64_t heads, int64_t ckv, int64_t kpe);

/// The SM number of an NVIDIA target name (`sm_80` -> 80, `sm_90a` -> 90),
/// none for another name.
std::optional<unsigned> smVersion(StringRef chip);
/// The least SM whose PTX converts fp8 (cvt.rn.f16x2.e4m3x2 and the
/// narrowing ones): pa-fp8-to-nvvm's conversions.
constexpr unsigned kFP8MinSM = 89;

#define GEN_PASS_REGISTRATION
#include "PagedAttn/Conversion/Passes.h.inc"

} // namespace pa
} // namespace mlir

#endif // PAGEDATTN_CONVERSION_PASSES_H
