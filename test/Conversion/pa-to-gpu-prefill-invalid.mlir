// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu --verify-diagnostics
// RUN: not pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-warps=6" 2>&1 | FileCheck %s --check-prefix=WARPS

// What the prefill kernel cannot build is an error at the op, before the IR
// changes.

// WARPS: prefill-warps must be 4 or 8, prefill-tile-kv a multiple of 16 up to 128 (of 16 x prefill-kv-warps), prefill-warp-rows 16 or 32 and prefill-kv-warps 1 or prefill-warps

func.func @f32(%q: memref<?x8x128xf32>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x128xf32>, %l: memref<?x8xf32>) {
  // expected-error @+1 {{pa.prefill on the GPU runs on tensor cores and needs f16 or bf16 data, got 'f32'}}
  pa.prefill q(%q, %qi : memref<?x8x128xf32>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x128xf32>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

func.func @head_dim(%q: memref<?x8x72xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x72xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x72xf16>, %l: memref<?x8xf32>) {
  // expected-error @+1 {{pa.prefill on the GPU needs a head dim that is a multiple of 16 and at most 256, got 72}}
  pa.prefill q(%q, %qi : memref<?x8x72xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x72xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x72xf16>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 72>}
  return
}

// -----

func.func @group(%q: memref<?x512x64xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x1x64xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x512x64xf16>, %l: memref<?x512xf32>) {
  // expected-error @+1 {{pa.prefill on the GPU packs a GQA group into the 256 rows of a query tile; group 512 is larger}}
  pa.prefill q(%q, %qi : memref<?x512x64xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x1x64xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x512x64xf16>, memref<?x512xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 1, head_dim = 64>}
  return
}
