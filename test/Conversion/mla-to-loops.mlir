// RUN: pa-opt %s --convert-pa-to-loops -split-input-file -verify-diagnostics | FileCheck %s --enable-var-scope

// MLA decode on memrefs becomes loops over requests, heads and tokens with an
// f32 online-softmax state and one scratch accumulator acc[D_ckv]; the
// run-time sizes and the page table are asserted first. The score reads the
// whole row (ckv, then kpe at offset D_ckv); the weighted sum reads ckv only.
// CHECK-LABEL: func @mla_decode
// CHECK-NOT: pa.mla_decode
// CHECK: cf.assert {{.*}} "q_pe must have as many rows (B) as q_nope"
// CHECK: cf.assert {{.*}} "kv_indptr must have B + 1 entries (B = rows of q_nope)"
// CHECK: %[[ACC:.*]] = memref.alloc({{.*}}) : memref<?xf32>
// CHECK: scf.for
// CHECK: cf.assert {{.*}} "kv_last_page_len out of [1, 64]"
// CHECK: scf.for
// CHECK: scf.for {{.*}} iter_args
// CHECK: cf.assert {{.*}} "kv_indices entry out of range [0, num_pages)"
// CHECK: arith.extf {{.*}} : bf16 to f32
// CHECK: %[[OFF:.*]] = arith.addi %{{.*}}, %c512
// CHECK: memref.load %{{.*}}[%{{.*}}, %{{.*}}, %[[OFF]]] : memref<?x64x576xbf16>
// CHECK: arith.mulf
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[ACC]]
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK: math.log
// CHECK: memref.dealloc %[[ACC]]
func.func @mla_decode(%qn: memref<?x16x512xbf16>, %qp: memref<?x16x64xbf16>, %kv: memref<?x64x576xbf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x16x512xbf16>, %l: memref<?x16xf32>) {
  pa.mla_decode q(%qn, %qp : memref<?x16x512xbf16>, memref<?x16x64xbf16>) kv(%kv : memref<?x64x576xbf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x16x512xbf16>, memref<?x16xf32>) {cache = #pa.paged_mla<page_size = 64, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32}
  return
}

// -----

// The soft-cap is c * tanh(s / c); lse_base2 scales lse by 1 / ln 2.
// CHECK-LABEL: func @mla_decode_options
// CHECK: math.tanh
// CHECK: math.log
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : f32
func.func @mla_decode_options(%qn: memref<2x3x8xf32>, %qp: memref<2x3x4xf32>, %kv: memref<?x5x12xf32>, %ip: memref<3xi32>, %ix: memref<?xi32>, %lp: memref<2xi32>, %o: memref<2x3x8xf32>, %l: memref<2x3xf32>) {
  pa.mla_decode q(%qn, %qp : memref<2x3x8xf32>, memref<2x3x4xf32>) kv(%kv : memref<?x5x12xf32>) pages(%ip, %ix, %lp : memref<3xi32>, memref<?xi32>, memref<2xi32>) outs(%o, %l : memref<2x3x8xf32>, memref<2x3xf32>) {cache = #pa.paged_mla<page_size = 5, ckv = 8, kpe = 4>, sm_scale = 0.25 : f32, logits_soft_cap = 20.0 : f32, lse_base2}
  return
}

// -----

// The tensor form is left for one-shot-bufferize.
func.func @mla_decode_tensor(%qn: tensor<2x3x8xf32>, %qp: tensor<2x3x4xf32>, %kv: tensor<?x5x12xf32>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %o: tensor<2x3x8xf32>, %l: tensor<2x3xf32>) {
  // expected-error @+1 {{convert-pa-to-loops expects the memref form; run one-shot-bufferize first}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<2x3x8xf32>, tensor<2x3x4xf32>) kv(%kv : tensor<?x5x12xf32>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) outs(%o, %l : tensor<2x3x8xf32>, tensor<2x3xf32>) {cache = #pa.paged_mla<page_size = 5, ckv = 8, kpe = 4>, sm_scale = 0.25 : f32}
  return
}
