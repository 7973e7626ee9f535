// RUN: pa-opt %s --split-input-file --pa-shard-kv="devices=2" -verify-diagnostics

// A shard renumbers its keys from 0, so position-dependent attention cannot
// be sharded: an error at the decode.
#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @window(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  // expected-error @+1 {{pa-shard-kv: a sliding window needs the keys' positions}}
  %r:2 = pa.decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache, window = 64 : i64}
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// -----

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @alibi(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %al: tensor<32xf32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  // expected-error @+1 {{pa-shard-kv: ALiBi needs the keys' positions}}
  %r:2 = pa.decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) alibi(%al : tensor<32xf32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache}
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// -----

// The memref form (after bufferization) is not sharded.
#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @memref(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  // expected-error @+1 {{pa-shard-kv runs on the tensor form}}
  pa.decode q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #cache}
  return
}
