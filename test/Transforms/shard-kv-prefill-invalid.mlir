// RUN: pa-opt %s --split-input-file --pa-shard-kv="devices=2 round-robin=true" -verify-diagnostics

// Prefill shards by contiguous page ranges only: each device's keys are one
// range of the request's positions, one work item.
#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @prefill_round_robin(%q: tensor<?x32x128xf16>, %qo: tensor<?xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  // expected-error @+1 {{pa-shard-kv shards pa.prefill by contiguous page ranges only}}
  %r:2 = pa.prefill q(%q, %qo : tensor<?x32x128xf16>, tensor<?xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache, causal}
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// -----

// A cascade is sharded by its levels, after pa-cascade-decompose.
#cache2 = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @cascade(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<5xi32>, %ip0: tensor<2xi32>, %ip1: tensor<5xi32>, %ix0: tensor<?xi32>, %ix1: tensor<?xi32>, %lp0: tensor<1xi32>, %lp1: tensor<4xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  // expected-error @+1 {{pa-shard-kv shards a cascade's levels: run pa-cascade-decompose first}}
  %r:2 = pa.cascade q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) qo_indptrs(%qo0, %qo1 : tensor<2xi32>, tensor<5xi32>) kv_indptrs(%ip0, %ip1 : tensor<2xi32>, tensor<5xi32>) kv_indices(%ix0, %ix1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_lens(%lp0, %lp1 : tensor<1xi32>, tensor<4xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache2}
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// -----

// A decode with a window (or ALiBi) shards by contiguous ranges only, too.
#cache3 = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @decode_window_round_robin(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  // expected-error @+1 {{pa-shard-kv shards a decode with a window or ALiBi by contiguous page ranges only}}
  %r:2 = pa.decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache3, window = 64 : i64}
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
