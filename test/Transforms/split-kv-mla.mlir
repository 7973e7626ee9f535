// RUN: pa-opt %s --pa-split-kv="chunk-size=256" | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --pa-split-kv="work-list=true" | FileCheck %s --enable-var-scope

// pa-split-kv rewrites pa.decode only: there is no MLA form of
// pa.decode_partial yet, so pa.mla_decode stays as it is (and its function
// gets no work-list arguments).
// CHECK-LABEL: func @mla_decode(
// CHECK-SAME: %{{[^:]*}}: tensor<?xi32>) -> (
// CHECK-NOT: pa.plan_split_kv
// CHECK-NOT: pa.decode_partial
// CHECK: pa.mla_decode
// CHECK-NOT: pa.merge_segments
// CHECK: return
func.func @mla_decode(%qn: tensor<?x16x512xf16>, %qp: tensor<?x16x64xf16>, %kv: tensor<?x16x576xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>) -> (tensor<?x16x512xf16>, tensor<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %qn, %c0 : tensor<?x16x512xf16>
  %o0 = tensor.empty(%b) : tensor<?x16x512xf16>
  %l0 = tensor.empty(%b) : tensor<?x16xf32>
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<?x16x512xf16>, tensor<?x16x64xf16>) kv(%kv : tensor<?x16x576xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o0, %l0 : tensor<?x16x512xf16>, tensor<?x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32}
  return %r#0, %r#1 : tensor<?x16x512xf16>, tensor<?x16xf32>
}
