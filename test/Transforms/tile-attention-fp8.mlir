// RUN: pa-opt %s --pa-tile-attention --verify-diagnostics

// The tile ops have no K/V scale operands yet: tiling a prefill over an fp8
// cache is rejected by the pass (and pa.tile.gather_kv's verifier) instead
// of silently dropping the scales.

func.func @prefill(%q: memref<?x8x64xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x2x64xf8E4M3FN>, %ks: memref<1xf32>, %vs: memref<1xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  // expected-error @+1 {{pa-tile-attention: FP8 KV caches ('f8E4M3FN') are not supported by the tile ops yet (their K/V scales have no operand there)}}
  pa.prefill q(%q, %qi : memref<?x8x64xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x2x64xf8E4M3FN>) scales(%ks, %vs : memref<1xf32>, memref<1xf32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x64xf16>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 2, head_dim = 64>, causal}
  return
}
