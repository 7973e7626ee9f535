// RUN: pa-opt %s | pa-opt | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --mlir-print-op-generic | pa-opt | FileCheck %s --enable-var-scope

#deepseek = #pa.paged_mla<page_size = 64, ckv = 512, kpe = 64>
#small = #pa.paged_mla<page_size = 3, ckv = 64, kpe = 16>

// CHECK-LABEL: func @mla_decode_deepseek
// CHECK: %{{.*}}:2 = pa.mla_decode q(%{{.*}}, %{{.*}} : tensor<4x128x512xbf16>, tensor<4x128x64xbf16>) kv(%{{.*}} : tensor<?x64x576xbf16>) pages(%{{.*}}, %{{.*}}, %{{.*}} : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%{{.*}}, %{{.*}} : tensor<4x128x512xbf16>, tensor<4x128xf32>) {cache = #pa.paged_mla<page_size = 64, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32}
func.func @mla_decode_deepseek(%qn: tensor<4x128x512xbf16>, %qp: tensor<4x128x64xbf16>, %kv: tensor<?x64x576xbf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x128x512xbf16>, %l: tensor<4x128xf32>) -> (tensor<4x128x512xbf16>, tensor<4x128xf32>) {
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x128x512xbf16>, tensor<4x128x64xbf16>) kv(%kv : tensor<?x64x576xbf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x128x512xbf16>, tensor<4x128xf32>) {cache = #deepseek, sm_scale = 0.0721687824 : f32}
  return %r#0, %r#1 : tensor<4x128x512xbf16>, tensor<4x128xf32>
}

// CHECK-LABEL: func @mla_decode_dynamic_options
// CHECK: pa.mla_decode q(%{{.*}}, %{{.*}} : tensor<?x?x64xf16>, tensor<?x?x16xf16>) kv(%{{.*}} : tensor<?x3x80xf16>)
// CHECK-SAME: {cache = #pa.paged_mla<page_size = 3, ckv = 64, kpe = 16>, logits_soft_cap = 3.000000e+01 : f32, lse_base2, sm_scale = 1.250000e-01 : f32}
func.func @mla_decode_dynamic_options(%qn: tensor<?x?x64xf16>, %qp: tensor<?x?x16xf16>, %kv: tensor<?x3x80xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x?x64xf16>, %l: tensor<?x?xf32>) -> (tensor<?x?x64xf16>, tensor<?x?xf32>) {
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<?x?x64xf16>, tensor<?x?x16xf16>) kv(%kv : tensor<?x3x80xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x?x64xf16>, tensor<?x?xf32>) {cache = #small, sm_scale = 0.125 : f32, logits_soft_cap = 30.0 : f32, lse_base2}
  return %r#0, %r#1 : tensor<?x?x64xf16>, tensor<?x?xf32>
}

// CHECK-LABEL: func @mla_decode_memref
// CHECK: pa.mla_decode q(%{{.*}}, %{{.*}} : memref<2x16x64xf32>, memref<2x16x16xf32>) kv(%{{.*}} : memref<?x3x80xf32>)
// CHECK-NOT: ->
// CHECK: return
func.func @mla_decode_memref(%qn: memref<2x16x64xf32>, %qp: memref<2x16x16xf32>, %kv: memref<?x3x80xf32>, %ip: memref<3xi32>, %ix: memref<?xi32>, %lp: memref<2xi32>, %o: memref<2x16x64xf32>, %l: memref<2x16xf32>) {
  pa.mla_decode q(%qn, %qp : memref<2x16x64xf32>, memref<2x16x16xf32>) kv(%kv : memref<?x3x80xf32>) pages(%ip, %ix, %lp : memref<3xi32>, memref<?xi32>, memref<2xi32>) outs(%o, %l : memref<2x16x64xf32>, memref<2x16xf32>) {cache = #small, sm_scale = 1.0 : f32}
  return
}
