// RUN: pa-opt %s -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -split-input-file | FileCheck %s --enable-var-scope

// The tensor form becomes the memref form of the same op: outs are written in
// place, nothing is returned.
// CHECK-LABEL: func @decode
// CHECK-SAME: %[[Q:[^:]*]]: memref<4x32x128xf16>
// CHECK: %[[O:.*]] = memref.alloc() {{.*}} : memref<4x32x128xf16>
// CHECK: %[[L:.*]] = memref.alloc() {{.*}} : memref<4x32xf32>
// CHECK-NOT: memref.copy
// CHECK: pa.decode q(%[[Q]] : memref<4x32x128xf16>) {{.*}} outs(%[[O]], %[[L]] : memref<4x32x128xf16>, memref<4x32xf32>)
// CHECK: return %[[O]], %[[L]]
func.func @decode(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>) -> (tensor<4x32x128xf16>, tensor<4x32xf32>) {
  %o = tensor.empty() : tensor<4x32x128xf16>
  %l = tensor.empty() : tensor<4x32xf32>
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return %r#0, %r#1 : tensor<4x32x128xf16>, tensor<4x32xf32>
}

// -----

// Appending into the cache updates it in place (the cache is read too: what is
// not overwritten stays).
// CHECK-LABEL: func @append_in_place
// CHECK-SAME: %[[KV:[^:]*]]: memref<?x2x16x8x128xf16>
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: pa.append_kv_slots {{.*}} outs(%[[KV]] : memref<?x2x16x8x128xf16>)
// CHECK: return %[[KV]]
func.func @append_in_place(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %s: tensor<?xi32>, %kv: tensor<?x2x16x8x128xf16> {bufferization.writable = true}) -> tensor<?x2x16x8x128xf16> {
  %r = pa.append_kv_slots new(%kn, %vn : tensor<?x8x128xf16>, tensor<?x8x128xf16>) slots(%s : tensor<?xi32>) outs(%kv : tensor<?x2x16x8x128xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return %r : tensor<?x2x16x8x128xf16>
}

// -----

// The old cache is still read after the append: the append must go to a copy.
// CHECK-LABEL: func @append_then_read_old
// CHECK: %[[NEW:.*]] = memref.alloc
// CHECK: memref.copy %{{.*}}, %[[NEW]]
// CHECK: pa.append_kv_slots {{.*}} outs(%[[NEW]] : memref<?x2x16x8x128xf16>)
func.func @append_then_read_old(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %s: tensor<?xi32>, %kv: tensor<?x2x16x8x128xf16>) -> (tensor<?x2x16x8x128xf16>, tensor<?x2x16x8x128xf16>) {
  %r = pa.append_kv_slots new(%kn, %vn : tensor<?x8x128xf16>, tensor<?x8x128xf16>) slots(%s : tensor<?xi32>) outs(%kv : tensor<?x2x16x8x128xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return %r, %kv : tensor<?x2x16x8x128xf16>, tensor<?x2x16x8x128xf16>
}

// -----

// The scales of an fp8 cache are inputs: they bufferize like any other.
// CHECK-LABEL: func @append_kv_fp8
// CHECK-SAME: %[[KS:[^:]*]]: memref<1xf32>, %[[VS:[^:]*]]: memref<8xf32>, %[[KV:[^:]*]]: memref<?x2x16x8x128xf8E4M3FN>
// CHECK: pa.append_kv new({{.*}}) pages({{.*}}) scales(%[[KS]], %[[VS]] : memref<1xf32>, memref<8xf32>) outs(%[[KV]] : memref<?x2x16x8x128xf8E4M3FN>)
func.func @append_kv_fp8(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %ai: tensor<5xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %ks: tensor<1xf32>, %vs: tensor<8xf32>, %kv: tensor<?x2x16x8x128xf8E4M3FN>) -> tensor<?x2x16x8x128xf8E4M3FN> {
  %r = pa.append_kv new(%kn, %vn, %ai : tensor<?x8x128xf16>, tensor<?x8x128xf16>, tensor<5xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) scales(%ks, %vs : tensor<1xf32>, tensor<8xf32>) outs(%kv : tensor<?x2x16x8x128xf8E4M3FN>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return %r : tensor<?x2x16x8x128xf8E4M3FN>
}

// -----

// MLA decode bufferizes like pa.decode: the cache and the queries are read,
// the outs written in place.
// CHECK-LABEL: func @mla_decode
// CHECK-SAME: %[[QN:[^:]*]]: memref<?x128x512xbf16>, %[[QP:[^:]*]]: memref<?x128x64xbf16>, %[[KV:[^:]*]]: memref<?x64x576xbf16>
// CHECK: %[[O:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x128x512xbf16>
// CHECK: %[[L:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x128xf32>
// CHECK-NOT: memref.copy
// CHECK: pa.mla_decode q(%[[QN]], %[[QP]] : memref<?x128x512xbf16>, memref<?x128x64xbf16>) kv(%[[KV]] : memref<?x64x576xbf16>) {{.*}} outs(%[[O]], %[[L]] : memref<?x128x512xbf16>, memref<?x128xf32>)
// CHECK: return %[[O]], %[[L]]
func.func @mla_decode(%qn: tensor<?x128x512xbf16>, %qp: tensor<?x128x64xbf16>, %kv: tensor<?x64x576xbf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>) -> (tensor<?x128x512xbf16>, tensor<?x128xf32>) {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %qn, %c0 : tensor<?x128x512xbf16>
  %o = tensor.empty(%b) : tensor<?x128x512xbf16>
  %l = tensor.empty(%b) : tensor<?x128xf32>
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<?x128x512xbf16>, tensor<?x128x64xbf16>) kv(%kv : tensor<?x64x576xbf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x128x512xbf16>, tensor<?x128xf32>) {cache = #pa.paged_mla<page_size = 64, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32}
  return %r#0, %r#1 : tensor<?x128x512xbf16>, tensor<?x128xf32>
}

// -----

// pa.prefill_partial writes its partial-state outs in place.
// CHECK-LABEL: func.func @prefill_partial(
// CHECK-SAME: %[[OP:[a-z0-9]+]]: memref<?x32x128xf32>, %[[LP:[a-z0-9]+]]: memref<?x32xf32>)
// CHECK: pa.prefill_partial {{.*}} outs(%[[OP]], %[[LP]] : memref<?x32x128xf32>, memref<?x32xf32>)
func.func @prefill_partial(%q: tensor<?x32x128xf16>, %qi: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %w0: tensor<?xi32>, %w1: tensor<?xi32>, %w2: tensor<?xi32>, %w3: tensor<?xi32>, %w4: tensor<?xi32>, %w5: tensor<?xi32>, %w6: tensor<?xi32>, %o: tensor<?x32x128xf32>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf32>, tensor<?x32xf32>) {
  %p:2 = pa.prefill_partial q(%q, %qi : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) work(%w0, %w1, %w2, %w3, %w4, %w5, %w6 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf32>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return %p#0, %p#1 : tensor<?x32x128xf32>, tensor<?x32xf32>
}
