// RUN: pa-opt %s -canonicalize -split-input-file | FileCheck %s --enable-var-scope

// The identity state (0, -inf) drops out of a merge; a merge of one state is
// that state.
// CHECK-LABEL: func @merge_with_identity
// CHECK-SAME: (%[[O:[^:]*]]: tensor<4x8x64xf16>, %[[L:[^:]*]]: tensor<4x8xf32>
// CHECK-NOT: pa.merge
// CHECK: return %[[O]], %[[L]]
func.func @merge_with_identity(%o: tensor<4x8x64xf16>, %l: tensor<4x8xf32>, %oi: tensor<4x8x64xf16>, %li: tensor<4x8xf32>) -> (tensor<4x8x64xf16>, tensor<4x8xf32>) {
  %zero = arith.constant dense<0.0> : tensor<4x8x64xf16>
  %ninf = arith.constant dense<0xFF800000> : tensor<4x8xf32>
  %r:2 = pa.merge states(%zero, %ninf, %o, %l : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>) outs(%oi, %li : tensor<4x8x64xf16>, tensor<4x8xf32>)
  return %r#0, %r#1 : tensor<4x8x64xf16>, tensor<4x8xf32>
}

// -----

// Not the identity: lse is -inf but o is not zero. Nothing folds.
// CHECK-LABEL: func @merge_not_identity
// CHECK: pa.merge states(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} :
func.func @merge_not_identity(%o: tensor<4x8x64xf16>, %l: tensor<4x8xf32>, %oi: tensor<4x8x64xf16>, %li: tensor<4x8xf32>) -> (tensor<4x8x64xf16>, tensor<4x8xf32>) {
  %one = arith.constant dense<1.0> : tensor<4x8x64xf16>
  %ninf = arith.constant dense<0xFF800000> : tensor<4x8xf32>
  %r:2 = pa.merge states(%one, %ninf, %o, %l : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>) outs(%oi, %li : tensor<4x8x64xf16>, tensor<4x8xf32>)
  return %r#0, %r#1 : tensor<4x8x64xf16>, tensor<4x8xf32>
}

// -----

// Only identity states: the result is the identity state itself.
// CHECK-LABEL: func @merge_all_identity
// CHECK-DAG: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<4x8x64xf16>
// CHECK-DAG: %[[N:.*]] = arith.constant dense<0xFF800000> : tensor<4x8xf32>
// CHECK-NOT: pa.merge
// CHECK: return %[[Z]], %[[N]]
func.func @merge_all_identity(%oi: tensor<4x8x64xf16>, %li: tensor<4x8xf32>) -> (tensor<4x8x64xf16>, tensor<4x8xf32>) {
  %zero = arith.constant dense<0.0> : tensor<4x8x64xf16>
  %ninf = arith.constant dense<0xFF800000> : tensor<4x8xf32>
  %r:2 = pa.merge states(%zero, %ninf, %zero, %ninf : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>) outs(%oi, %li : tensor<4x8x64xf16>, tensor<4x8xf32>)
  return %r#0, %r#1 : tensor<4x8x64xf16>, tensor<4x8xf32>
}

// -----

// merge(merge(a, b), c) -> merge(a, b, c).
// CHECK-LABEL: func @merge_flatten
// CHECK-SAME: (%[[A:[^:]*]]: tensor<2x4x16xf32>, %[[LA:[^:]*]]: tensor<2x4xf32>, %[[B:[^:]*]]: tensor<2x4x16xf32>, %[[LB:[^:]*]]: tensor<2x4xf32>, %[[C:[^:]*]]: tensor<2x4x16xf32>, %[[LC:[^:]*]]: tensor<2x4xf32>
// CHECK: %[[R:.*]]:2 = pa.merge states(%[[A]], %[[LA]], %[[B]], %[[LB]], %[[C]], %[[LC]] :
// CHECK-NOT: pa.merge
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @merge_flatten(%a: tensor<2x4x16xf32>, %la: tensor<2x4xf32>, %b: tensor<2x4x16xf32>, %lb: tensor<2x4xf32>, %c: tensor<2x4x16xf32>, %lc: tensor<2x4xf32>, %oi: tensor<2x4x16xf32>, %li: tensor<2x4xf32>) -> (tensor<2x4x16xf32>, tensor<2x4xf32>) {
  %ab:2 = pa.merge states(%a, %la, %b, %lb : tensor<2x4x16xf32>, tensor<2x4xf32>, tensor<2x4x16xf32>, tensor<2x4xf32>) outs(%oi, %li : tensor<2x4x16xf32>, tensor<2x4xf32>)
  %r:2 = pa.merge states(%ab#0, %ab#1, %c, %lc : tensor<2x4x16xf32>, tensor<2x4xf32>, tensor<2x4x16xf32>, tensor<2x4xf32>) outs(%oi, %li : tensor<2x4x16xf32>, tensor<2x4xf32>)
  return %r#0, %r#1 : tensor<2x4x16xf32>, tensor<2x4xf32>
}

// -----

// Merges in different lse bases do not flatten.
// CHECK-LABEL: func @merge_no_flatten_across_bases
// CHECK: pa.merge states(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}} :
// CHECK: pa.merge states(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}} :
func.func @merge_no_flatten_across_bases(%a: tensor<2x4x16xf32>, %la: tensor<2x4xf32>, %b: tensor<2x4x16xf32>, %lb: tensor<2x4xf32>, %c: tensor<2x4x16xf32>, %lc: tensor<2x4xf32>, %oi: tensor<2x4x16xf32>, %li: tensor<2x4xf32>) -> (tensor<2x4x16xf32>, tensor<2x4xf32>) {
  %ab:2 = pa.merge states(%a, %la, %b, %lb : tensor<2x4x16xf32>, tensor<2x4xf32>, tensor<2x4x16xf32>, tensor<2x4xf32>) outs(%oi, %li : tensor<2x4x16xf32>, tensor<2x4xf32>) {lse_base2}
  %r:2 = pa.merge states(%ab#0, %ab#1, %c, %lc : tensor<2x4x16xf32>, tensor<2x4xf32>, tensor<2x4x16xf32>, tensor<2x4xf32>) outs(%oi, %li : tensor<2x4x16xf32>, tensor<2x4xf32>)
  return %r#0, %r#1 : tensor<2x4x16xf32>, tensor<2x4xf32>
}

// -----

// The memref form is left alone (the outs must still be written).
// CHECK-LABEL: func @merge_memref_single
// CHECK: pa.merge states
func.func @merge_memref_single(%o: memref<2x4x16xf32>, %l: memref<2x4xf32>, %oi: memref<2x4x16xf32>, %li: memref<2x4xf32>) {
  pa.merge states(%o, %l : memref<2x4x16xf32>, memref<2x4xf32>) outs(%oi, %li : memref<2x4x16xf32>, memref<2x4xf32>)
  return
}

// -----

// A one-level cascade is plain prefill attention.
// CHECK-LABEL: func @cascade_one_level
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<8x32x128xf16>, %[[KV:[^:]*]]: tensor<?x2x16x8x128xf16>, %[[QO:[^:]*]]: tensor<9xi32>, %[[IP:[^:]*]]: tensor<9xi32>, %[[IX:[^:]*]]: tensor<?xi32>, %[[LP:[^:]*]]: tensor<8xi32>
// CHECK-NOT: pa.cascade
// CHECK: pa.prefill q(%[[Q]], %[[QO]] : {{.*}}) kv(%[[KV]] : {{.*}}) pages(%[[IP]], %[[IX]], %[[LP]] : {{.*}}) outs({{.*}}) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal, logits_soft_cap = 5.000000e+01 : f32}
func.func @cascade_one_level(%q: tensor<8x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %qo: tensor<9xi32>, %ip: tensor<9xi32>, %ix: tensor<?xi32>, %lp: tensor<8xi32>, %o: tensor<8x32x128xf16>, %l: tensor<8x32xf32>) -> tensor<8x32x128xf16> {
  %r:2 = pa.cascade q(%q : tensor<8x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) qo_indptrs(%qo : tensor<9xi32>) kv_indptrs(%ip : tensor<9xi32>) kv_indices(%ix : tensor<?xi32>) kv_last_page_lens(%lp : tensor<8xi32>) outs(%o, %l : tensor<8x32x128xf16>, tensor<8x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal, logits_soft_cap = 50.0 : f32}
  return %r#0 : tensor<8x32x128xf16>
}

// -----

// Two levels stay a cascade.
// CHECK-LABEL: func @cascade_two_levels
// CHECK: pa.cascade
func.func @cascade_two_levels(%q: tensor<8x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<9xi32>, %p0: tensor<2xi32>, %p1: tensor<9xi32>, %i0: tensor<?xi32>, %i1: tensor<?xi32>, %l0: tensor<1xi32>, %l1: tensor<8xi32>, %o: tensor<8x32x128xf16>, %l: tensor<8x32xf32>) -> tensor<8x32x128xf16> {
  %r:2 = pa.cascade q(%q : tensor<8x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) qo_indptrs(%qo0, %qo1 : tensor<2xi32>, tensor<9xi32>) kv_indptrs(%p0, %p1 : tensor<2xi32>, tensor<9xi32>) kv_indices(%i0, %i1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_lens(%l0, %l1 : tensor<1xi32>, tensor<8xi32>) outs(%o, %l : tensor<8x32x128xf16>, tensor<8x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return %r#0 : tensor<8x32x128xf16>
}

// -----

// Unused tensor-form results: the op has no effects and is erased.
// CHECK-LABEL: func @dead_decode
// CHECK-NOT: pa.decode
func.func @dead_decode(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

// The memref form writes its outs: it stays.
// CHECK-LABEL: func @live_memref_decode
// CHECK: pa.decode
func.func @live_memref_decode(%q: memref<2x8x128xf32>, %kv: memref<?x2x16x8x128xf32>, %ip: memref<3xi32>, %ix: memref<?xi32>, %lp: memref<2xi32>, %o: memref<2x8x128xf32>, %l: memref<2x8xf32>) {
  pa.decode q(%q : memref<2x8x128xf32>) kv(%kv : memref<?x2x16x8x128xf32>) pages(%ip, %ix, %lp : memref<3xi32>, memref<?xi32>, memref<2xi32>) outs(%o, %l : memref<2x8x128xf32>, memref<2x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

// The prefill of a one-level cascade over an fp8 cache keeps the scales.
// CHECK-LABEL: func @cascade_one_level_fp8
// CHECK-SAME: %[[KS:[^:]*]]: tensor<1xf32>, %[[VS:[^:]*]]: tensor<8xf32>
// CHECK: pa.prefill q({{.*}}) kv(%{{.*}} : tensor<?x2x16x8x128xf8E5M2>) scales(%[[KS]], %[[VS]] : tensor<1xf32>, tensor<8xf32>) pages(
func.func @cascade_one_level_fp8(%q: tensor<8x32x128xf16>, %kv: tensor<?x2x16x8x128xf8E5M2>, %ks: tensor<1xf32>, %vs: tensor<8xf32>, %qo: tensor<9xi32>, %ip: tensor<9xi32>, %ix: tensor<?xi32>, %lp: tensor<8xi32>, %o: tensor<8x32x128xf16>, %l: tensor<8x32xf32>) -> tensor<8x32x128xf16> {
  %r:2 = pa.cascade q(%q : tensor<8x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf8E5M2>) scales(%ks, %vs : tensor<1xf32>, tensor<8xf32>) qo_indptrs(%qo : tensor<9xi32>) kv_indptrs(%ip : tensor<9xi32>) kv_indices(%ix : tensor<?xi32>) kv_last_page_lens(%lp : tensor<8xi32>) outs(%o, %l : tensor<8x32x128xf16>, tensor<8x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return %r#0 : tensor<8x32x128xf16>
}
