// RUN: pa-opt %s --convert-pa-to-loops -split-input-file -verify-diagnostics | FileCheck %s

// Decode on memrefs becomes loops over requests, heads and keys with an f32
// online-softmax state; page indices and last_page_len are checked at run
// time.
// CHECK-LABEL: func @decode
// CHECK-NOT: pa.decode
// CHECK: memref.alloc({{.*}}) : memref<?x?x?xf32>
// CHECK: scf.for
// CHECK: cf.assert {{.*}} "kv_last_page_len out of [1, 16]"
// CHECK: scf.for
// CHECK: scf.for {{.*}} iter_args
// CHECK: cf.assert {{.*}} "kv_indices entry out of range [0, num_pages)"
// CHECK: arith.extf {{.*}} : f16 to f32
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.truncf {{.*}} : f32 to f16
// CHECK: math.log
// CHECK: memref.dealloc
func.func @decode(%q: memref<?x?x64xf16>, %kv: memref<?x2x16x2x64xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x?x64xf16>, %l: memref<?x?xf32>) {
  pa.decode q(%q : memref<?x?x64xf16>) kv(%kv : memref<?x2x16x2x64xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x?x64xf16>, memref<?x?xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 2, head_dim = 64>}
  return
}

// -----

// Soft-cap uses tanh; ALiBi adds slope * (t - pos).
// CHECK-LABEL: func @prefill_options
// CHECK: math.tanh
// CHECK: arith.sitofp
func.func @prefill_options(%q: memref<?x?x8xf32>, %qo: memref<?xi32>, %k: memref<?x3x1x8xf32>, %v: memref<?x3x1x8xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %al: memref<?xf32>, %o: memref<?x?x8xf32>, %l: memref<?x?xf32>) {
  pa.prefill q(%q, %qo : memref<?x?x8xf32>, memref<?xi32>) kv(%k, %v : memref<?x3x1x8xf32>, memref<?x3x1x8xf32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) alibi(%al : memref<?xf32>) outs(%o, %l : memref<?x?x8xf32>, memref<?x?xf32>) {cache = #pa.paged_kv<nhd, page_size = 3, kv_heads = 1, head_dim = 8>, causal, logits_soft_cap = 20.0 : f32}
  return
}

// -----

// The tensor form is rejected with a clear message.
func.func @tensor_form(%a: tensor<4x8x16xf32>, %la: tensor<4x8xf32>, %o: tensor<4x8x16xf32>, %l: tensor<4x8xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+1 {{convert-pa-to-loops expects the memref form; run one-shot-bufferize first}}
  %r:2 = pa.merge states(%a, %la : tensor<4x8x16xf32>, tensor<4x8xf32>) outs(%o, %l : tensor<4x8x16xf32>, tensor<4x8xf32>)
  return %r#0 : tensor<4x8x16xf32>
}

// -----

// Over an fp8 cache, K and V are dequantized with their head's scale (here K
// per tensor, V per KV head) after the scales are checked.
// CHECK-LABEL: func @decode_fp8
// CHECK-SAME: %[[KS:[^:]*]]: memref<1xf32>, %[[VS:[^:]*]]: memref<2xf32>
// CHECK: cf.assert {{.*}} "fp8 KV cache scales must be finite and > 0"
// CHECK: memref.load %[[KS]][%{{.*}}] : memref<1xf32>
// CHECK: memref.load %[[VS]][%{{.*}}] : memref<2xf32>
// CHECK: %[[K:.*]] = memref.load {{.*}} : memref<?x2x16x2x64xf8E4M3FN>
// CHECK: %[[KF:.*]] = arith.extf %[[K]] : f8E4M3FN to f32
// CHECK: arith.mulf %[[KF]], %{{.*}} : f32
func.func @decode_fp8(%q: memref<?x?x64xbf16>, %kv: memref<?x2x16x2x64xf8E4M3FN>, %ks: memref<1xf32>, %vs: memref<2xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x?x64xbf16>, %l: memref<?x?xf32>) {
  pa.decode q(%q : memref<?x?x64xbf16>) kv(%kv : memref<?x2x16x2x64xf8E4M3FN>) scales(%ks, %vs : memref<1xf32>, memref<2xf32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x?x64xbf16>, memref<?x?xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 2, head_dim = 64>}
  return
}

// -----

// Writes into an fp8 cache quantize: x / scale, clamped to the largest
// finite value (448 for f8E4M3FN, NaN propagates), rounded by truncf.
// CHECK-LABEL: func @append_kv_slots_fp8
// CHECK: %[[X:.*]] = memref.load {{.*}} : memref<?x2x64xf16>
// CHECK: %[[XF:.*]] = arith.extf %[[X]] : f16 to f32
// CHECK: %[[Y:.*]] = arith.divf %[[XF]], %{{.*}} : f32
// CHECK: %[[LO:.*]] = arith.maximumf %[[Y]], %{{.*}} : f32
// CHECK: %[[HI:.*]] = arith.minimumf %[[LO]], %{{.*}} : f32
// CHECK: %[[Q:.*]] = arith.truncf %[[HI]] : f32 to f8E4M3FN
// CHECK: memref.store %[[Q]], %{{.*}} : memref<?x2x16x2x64xf8E4M3FN>
func.func @append_kv_slots_fp8(%kn: memref<?x2x64xf16>, %vn: memref<?x2x64xf16>, %sm: memref<?xi32>, %ks: memref<2xf32>, %vs: memref<2xf32>, %kv: memref<?x2x16x2x64xf8E4M3FN>) {
  pa.append_kv_slots new(%kn, %vn : memref<?x2x64xf16>, memref<?x2x64xf16>) slots(%sm : memref<?xi32>) scales(%ks, %vs : memref<2xf32>, memref<2xf32>) outs(%kv : memref<?x2x16x2x64xf8E4M3FN>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 2, head_dim = 64>}
  return
}
