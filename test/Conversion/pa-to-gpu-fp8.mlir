// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu --verify-diagnostics

// FP8 KV caches run on the CPU lowering only for now: convert-pa-to-gpu
// rejects them at the op, before the IR changes.

func.func @decode(%q: memref<4x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %ks: memref<1xf32>, %vs: memref<8xf32>, %ip: memref<5xi32>, %ix: memref<?xi32>, %lp: memref<4xi32>, %o: memref<4x32x128xf16>, %l: memref<4x32xf32>) {
  // expected-error @+1 {{FP8 KV caches are not supported on the GPU yet (use pa-lower-to-cpu)}}
  pa.decode q(%q : memref<4x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>) scales(%ks, %vs : memref<1xf32>, memref<8xf32>) pages(%ip, %ix, %lp : memref<5xi32>, memref<?xi32>, memref<4xi32>) outs(%o, %l : memref<4x32x128xf16>, memref<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @prefill(%q: memref<?x8x128xbf16>, %qi: memref<?xi32>, %k: memref<?x16x8x128xf8E5M2>, %v: memref<?x16x8x128xf8E5M2>, %ks: memref<8xf32>, %vs: memref<8xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x128xbf16>, %l: memref<?x8xf32>) {
  // expected-error @+1 {{FP8 KV caches are not supported on the GPU yet (use pa-lower-to-cpu)}}
  pa.prefill q(%q, %qi : memref<?x8x128xbf16>, memref<?xi32>) kv(%k, %v : memref<?x16x8x128xf8E5M2>, memref<?x16x8x128xf8E5M2>) scales(%ks, %vs : memref<8xf32>, memref<8xf32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x128xbf16>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

func.func @decode_partial(%q: memref<4x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %ks: memref<1xf32>, %vs: memref<1xf32>, %ip: memref<5xi32>, %ix: memref<?xi32>, %lp: memref<4xi32>, %wi: memref<5xi32>, %wr: memref<?xi32>, %ws: memref<?xi32>, %we: memref<?xi32>, %o: memref<?x32x128xf32>, %l: memref<?x32xf32>) {
  // expected-error @+1 {{FP8 KV caches are not supported on the GPU yet (use pa-lower-to-cpu)}}
  pa.decode_partial q(%q : memref<4x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>) scales(%ks, %vs : memref<1xf32>, memref<1xf32>) pages(%ip, %ix, %lp : memref<5xi32>, memref<?xi32>, memref<4xi32>) work(%wi, %wr, %ws, %we : memref<5xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf32>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}
