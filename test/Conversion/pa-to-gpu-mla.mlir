// RUN: pa-opt %s --convert-pa-to-gpu -split-input-file -verify-diagnostics
// RUN: pa-opt %s --pa-lower-to-nvvm -split-input-file -verify-diagnostics

// pa.mla_decode has no GPU kernel yet: convert-pa-to-gpu (and so
// pa-lower-to-nvvm, after bufferization) rejects it at the op, before the IR
// changes.

func.func @mla_decode(%qn: memref<4x128x512xbf16>, %qp: memref<4x128x64xbf16>, %kv: memref<?x64x576xbf16>, %ip: memref<5xi32>, %ix: memref<?xi32>, %lp: memref<4xi32>, %o: memref<4x128x512xbf16>, %l: memref<4x128xf32>) {
  // expected-error @+1 {{'pa.mla_decode' op is not supported on the GPU yet: MLA decode has no GPU kernel (use pa-lower-to-cpu)}}
  pa.mla_decode q(%qn, %qp : memref<4x128x512xbf16>, memref<4x128x64xbf16>) kv(%kv : memref<?x64x576xbf16>) pages(%ip, %ix, %lp : memref<5xi32>, memref<?xi32>, memref<4xi32>) outs(%o, %l : memref<4x128x512xbf16>, memref<4x128xf32>) {cache = #pa.paged_mla<page_size = 64, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32}
  return
}

// -----

func.func @mla_decode_tensors(%qn: tensor<?x16x512xf16>, %qp: tensor<?x16x64xf16>, %kv: tensor<?x1x576xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x16x512xf16>, %l: tensor<?x16xf32>) -> (tensor<?x16x512xf16>, tensor<?x16xf32>) {
  // expected-error @+1 {{'pa.mla_decode' op is not supported on the GPU yet}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<?x16x512xf16>, tensor<?x16x64xf16>) kv(%kv : tensor<?x1x576xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x16x512xf16>, tensor<?x16xf32>) {cache = #pa.paged_mla<page_size = 1, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32}
  return %r#0, %r#1 : tensor<?x16x512xf16>, tensor<?x16xf32>
}
