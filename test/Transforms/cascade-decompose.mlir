// RUN: pa-opt %s --pa-cascade-decompose | FileCheck %s --enable-var-scope

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// Two levels: a prefill per level (causal only on the last one, the other
// options on both) and one merge into the cascade's outs.
// CHECK-LABEL: func @two_levels
// CHECK-SAME: %[[Q:[^:]*]]: tensor<8x32x128xf16>, %[[KV:[^:]*]]: tensor<?x2x16x8x128xf16>, %[[QO0:[^:]*]]: tensor<2xi32>, %[[QO1:[^:]*]]: tensor<9xi32>, %[[P0:[^:]*]]: tensor<2xi32>, %[[P1:[^:]*]]: tensor<9xi32>, %[[I0:[^:]*]]: tensor<?xi32>, %[[I1:[^:]*]]: tensor<?xi32>, %[[L0:[^:]*]]: tensor<1xi32>, %[[L1:[^:]*]]: tensor<8xi32>, %[[O:[^:]*]]: tensor<8x32x128xf16>, %[[L:[^:]*]]: tensor<8x32xf32>
// CHECK: %[[A:.*]]:2 = pa.prefill q(%[[Q]], %[[QO0]] : {{.*}}) kv(%[[KV]] : {{.*}}) pages(%[[P0]], %[[I0]], %[[L0]] : {{.*}}) outs({{.*}}) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, logits_soft_cap = 3.000000e+01 : f32}
// CHECK: %[[B:.*]]:2 = pa.prefill q(%[[Q]], %[[QO1]] : {{.*}}) kv(%[[KV]] : {{.*}}) pages(%[[P1]], %[[I1]], %[[L1]] : {{.*}}) outs({{.*}}) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal, logits_soft_cap = 3.000000e+01 : f32}
// CHECK: %[[M:.*]]:2 = pa.merge states(%[[A]]#0, %[[A]]#1, %[[B]]#0, %[[B]]#1 : {{.*}}) outs(%[[O]], %[[L]] : {{.*}})
// CHECK: return %[[M]]#0, %[[M]]#1
func.func @two_levels(%q: tensor<8x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<9xi32>, %p0: tensor<2xi32>, %p1: tensor<9xi32>, %i0: tensor<?xi32>, %i1: tensor<?xi32>, %l0: tensor<1xi32>, %l1: tensor<8xi32>, %o: tensor<8x32x128xf16>, %l: tensor<8x32xf32>) -> (tensor<8x32x128xf16>, tensor<8x32xf32>) {
  %r:2 = pa.cascade q(%q : tensor<8x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) qo_indptrs(%qo0, %qo1 : tensor<2xi32>, tensor<9xi32>) kv_indptrs(%p0, %p1 : tensor<2xi32>, tensor<9xi32>) kv_indices(%i0, %i1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_lens(%l0, %l1 : tensor<1xi32>, tensor<8xi32>) outs(%o, %l : tensor<8x32x128xf16>, tensor<8x32xf32>) {cache = #cache, causal, logits_soft_cap = 30.0 : f32}
  return %r#0, %r#1 : tensor<8x32x128xf16>, tensor<8x32xf32>
}

// The memref form is left alone.
// CHECK-LABEL: func @memref_form
// CHECK: pa.cascade
func.func @memref_form(%q: memref<8x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo0: memref<2xi32>, %qo1: memref<9xi32>, %p0: memref<2xi32>, %p1: memref<9xi32>, %i0: memref<?xi32>, %i1: memref<?xi32>, %l0: memref<1xi32>, %l1: memref<8xi32>, %o: memref<8x32x128xf16>, %l: memref<8x32xf32>) {
  pa.cascade q(%q : memref<8x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) qo_indptrs(%qo0, %qo1 : memref<2xi32>, memref<9xi32>) kv_indptrs(%p0, %p1 : memref<2xi32>, memref<9xi32>) kv_indices(%i0, %i1 : memref<?xi32>, memref<?xi32>) kv_last_page_lens(%l0, %l1 : memref<1xi32>, memref<8xi32>) outs(%o, %l : memref<8x32x128xf16>, memref<8x32xf32>) {cache = #cache}
  return
}

// Every option reaches every level: split K/V cache, ALiBi slopes, sm_scale,
// soft-cap, window and lse_base2 (the merge keeps lse_base2 too); without
// `causal` no level is causal.
// CHECK-LABEL: func @all_options
// CHECK-SAME: %[[Q:[^:]*]]: tensor<?x4x64xbf16>, %[[K:[^:]*]]: tensor<?x5x2x64xbf16>, %[[V:[^:]*]]: tensor<?x5x2x64xbf16>, %[[QO0:[^:]*]]: tensor<?xi32>, %[[QO1:[^:]*]]: tensor<?xi32>, %[[P0:[^:]*]]: tensor<?xi32>, %[[P1:[^:]*]]: tensor<?xi32>, %[[I0:[^:]*]]: tensor<?xi32>, %[[I1:[^:]*]]: tensor<?xi32>, %[[L0:[^:]*]]: tensor<?xi32>, %[[L1:[^:]*]]: tensor<?xi32>, %[[AL:[^:]*]]: tensor<4xf32>
// CHECK: %[[A:.*]]:2 = pa.prefill q(%[[Q]], %[[QO0]] : {{.*}}) kv(%[[K]], %[[V]] : {{.*}}) pages(%[[P0]], %[[I0]], %[[L0]] : {{.*}}) alibi(%[[AL]] : tensor<4xf32>) outs({{.*}}) {cache = #pa.paged_kv<nhd, page_size = 5, kv_heads = 2, head_dim = 64>, logits_soft_cap = 3.000000e+01 : f32, lse_base2, sm_scale = 1.250000e-01 : f32, window = 64 : i64}
// CHECK: %[[B:.*]]:2 = pa.prefill q(%[[Q]], %[[QO1]] : {{.*}}) kv(%[[K]], %[[V]] : {{.*}}) pages(%[[P1]], %[[I1]], %[[L1]] : {{.*}}) alibi(%[[AL]] : tensor<4xf32>) outs({{.*}}) {cache = #pa.paged_kv<nhd, page_size = 5, kv_heads = 2, head_dim = 64>, logits_soft_cap = 3.000000e+01 : f32, lse_base2, sm_scale = 1.250000e-01 : f32, window = 64 : i64}
// CHECK: pa.merge states(%[[A]]#0, %[[A]]#1, %[[B]]#0, %[[B]]#1 : {{.*}}) outs({{.*}}) {lse_base2}
func.func @all_options(%q: tensor<?x4x64xbf16>, %k: tensor<?x5x2x64xbf16>, %v: tensor<?x5x2x64xbf16>, %qo0: tensor<?xi32>, %qo1: tensor<?xi32>, %p0: tensor<?xi32>, %p1: tensor<?xi32>, %i0: tensor<?xi32>, %i1: tensor<?xi32>, %l0: tensor<?xi32>, %l1: tensor<?xi32>, %al: tensor<4xf32>, %o: tensor<?x4x64xbf16>, %l: tensor<?x4xf32>) -> (tensor<?x4x64xbf16>, tensor<?x4xf32>) {
  %r:2 = pa.cascade q(%q : tensor<?x4x64xbf16>) kv(%k, %v : tensor<?x5x2x64xbf16>, tensor<?x5x2x64xbf16>) qo_indptrs(%qo0, %qo1 : tensor<?xi32>, tensor<?xi32>) kv_indptrs(%p0, %p1 : tensor<?xi32>, tensor<?xi32>) kv_indices(%i0, %i1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_lens(%l0, %l1 : tensor<?xi32>, tensor<?xi32>) alibi(%al : tensor<4xf32>) outs(%o, %l : tensor<?x4x64xbf16>, tensor<?x4xf32>) {cache = #pa.paged_kv<nhd, page_size = 5, kv_heads = 2, head_dim = 64>, sm_scale = 0.125 : f32, logits_soft_cap = 30.0 : f32, window = 64, lse_base2}
  return %r#0, %r#1 : tensor<?x4x64xbf16>, tensor<?x4xf32>
}

// Every level's prefill over an fp8 cache takes the cascade's scales.
// CHECK-LABEL: func @fp8
// CHECK-SAME: %[[KS:[^:]*]]: tensor<2xf32>, %[[VS:[^:]*]]: tensor<2xf32>
// CHECK: pa.prefill q({{.*}}) kv({{.*}}) scales(%[[KS]], %[[VS]] : tensor<2xf32>, tensor<2xf32>) pages(
// CHECK: pa.prefill q({{.*}}) kv({{.*}}) scales(%[[KS]], %[[VS]] : tensor<2xf32>, tensor<2xf32>) pages(
// CHECK: pa.merge
func.func @fp8(%q: tensor<?x4x64xf32>, %k: tensor<?x5x2x64xf8E5M2>, %v: tensor<?x5x2x64xf8E5M2>, %ks: tensor<2xf32>, %vs: tensor<2xf32>, %qo0: tensor<?xi32>, %qo1: tensor<?xi32>, %p0: tensor<?xi32>, %p1: tensor<?xi32>, %i0: tensor<?xi32>, %i1: tensor<?xi32>, %l0: tensor<?xi32>, %l1: tensor<?xi32>, %o: tensor<?x4x64xf32>, %l: tensor<?x4xf32>) -> (tensor<?x4x64xf32>, tensor<?x4xf32>) {
  %r:2 = pa.cascade q(%q : tensor<?x4x64xf32>) kv(%k, %v : tensor<?x5x2x64xf8E5M2>, tensor<?x5x2x64xf8E5M2>) scales(%ks, %vs : tensor<2xf32>, tensor<2xf32>) qo_indptrs(%qo0, %qo1 : tensor<?xi32>, tensor<?xi32>) kv_indptrs(%p0, %p1 : tensor<?xi32>, tensor<?xi32>) kv_indices(%i0, %i1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_lens(%l0, %l1 : tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x4x64xf32>, tensor<?x4xf32>) {cache = #pa.paged_kv<nhd, page_size = 5, kv_heads = 2, head_dim = 64>, causal}
  return %r#0, %r#1 : tensor<?x4x64xf32>, tensor<?x4xf32>
}
