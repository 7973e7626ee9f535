//===- CacheBlend.h - CacheBlend checks and layer benchmark ----*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TOOLS_PA_GPU_RUNNER_CACHEBLEND_H
#define PAGEDATTN_TOOLS_PA_GPU_RUNNER_CACHEBLEND_H

#include <cstdint>
#include <string>
#include <vector>

namespace pa::runner {

struct CheckCacheBlendOptions {
  std::vector<std::string> bundles;
  /// The seed of every random case (printed; replays a run).
  uint64_t seed = 0;
  int device = 0;
};

/// `check-cacheblend`: for each bundle with kv_deviation and select_topk
/// (pa-compile --kernels all): pa_kv_deviation on random rows (some tokens
/// unchanged) against pa::ref::kvDeviation (relative 1e-5); pa_select_topk
/// with the bundle's ratio on ragged deviations with many ties, -0.0 / +0.0
/// and empty requests, exactly against pa::ref::selectTopK; and checked
/// mode's rejection of a NaN deviation. Returns the exit code.
int runCheckCacheBlend(const CheckCacheBlendOptions &opts);

struct BenchCacheBlendOptions {
  /// L2Eviction's mode (--l2-flush): dirty or clean.
  std::string l2Flush = "dirty";
  /// A `--kernels all --causal --positions` bundle.
  std::string bundle;
  /// Optional: a `--kernels prefill --causal` bundle of the same
  /// configuration for the full prefill (a prompt's prefill needs no
  /// explicit positions); "" = the layer's bundle with positions 0..L-1.
  std::string fullBundle;
  std::string out;
  /// Reused chunks of the prompt and tokens per chunk.
  int64_t chunks = 4, chunkTokens = 1024;
  int warmup = 5, reps = 30;
  uint32_t seed = 1;
  int device = 0;
  /// pa-roofs.cubin ("" = $PA_ROOFS_CUBIN, then beside the executable).
  std::string roofs;
};

/// `bench-cacheblend`: one CacheBlend layer as in the seed document on a
/// prompt of `chunks` x `chunkTokens` reused tokens (one request):
/// kv_deviation of the layer's K, select_topk (the bundle's ratio),
/// scatter_kv of the selected tokens' recomputed K / V, and the partial
/// prefill of the selected queries at their positions (causal) over the
/// fused cache, all enqueued without a host round trip; timed against a
/// full causal prefill of the prompt with the same bundle. Returns the exit
/// code.
int runBenchCacheBlend(const BenchCacheBlendOptions &opts);

} // namespace pa::runner

#endif // PAGEDATTN_TOOLS_PA_GPU_RUNNER_CACHEBLEND_H
