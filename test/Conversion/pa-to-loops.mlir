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
