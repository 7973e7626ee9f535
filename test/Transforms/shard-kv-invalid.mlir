// RUN: pa-opt %s --split-input-file --pa-shard-kv="devices=2" -verify-diagnostics

// The memref form (after bufferization) is not sharded.
#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @memref(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  // expected-error @+1 {{pa-shard-kv runs on the tensor form}}
  pa.decode q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #cache}
  return
}
