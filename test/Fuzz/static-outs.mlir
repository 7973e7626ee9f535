// RUN: pa-opt %s -canonicalize -split-input-file | FileCheck %s --enable-var-scope
// RUN: pa-opt %s -split-input-file -pa-lower-to-cpu | FileCheck %s --check-prefix=LLVM

// pa-ir-fuzz finding (docs/Fuzzing.md, "Findings"): tensor.dim of a static
// dim folds to a constant, tensor.empty(%c16) becomes a static tensor.empty
// plus a tensor.cast, and upstream's cast folding into destination-style ops
// (FoldTensorCastProducerOp) gives the op a static out beside a dynamic
// q: o tensor<16x16x512xf16> with q_nope tensor<?x16x512xf16>. The
// verifiers compared the shapes for equality, so canonicalize "succeeded"
// with IR that did not verify; they now compare them up to static dims.

// CHECK-LABEL: func @mla_decode_static_outs
// CHECK: pa.mla_decode
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<16x16x512xf16>, tensor<16x16xf32>)
// LLVM-LABEL: llvm.func @mla_decode_static_outs
func.func @mla_decode_static_outs(%qn: tensor<?x16x512xf16>, %qp: tensor<?x16x64xf16>, %kv: tensor<?x16x576xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>) -> (tensor<?x16x512xf16>, tensor<?x16xf32>) {
  %c1 = arith.constant 1 : index
  %b = tensor.dim %qn, %c1 : tensor<?x16x512xf16>
  %o0 = tensor.empty(%b) : tensor<?x16x512xf16>
  %l0 = tensor.empty(%b) : tensor<?x16xf32>
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<?x16x512xf16>, tensor<?x16x64xf16>) kv(%kv : tensor<?x16x576xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o0, %l0 : tensor<?x16x512xf16>, tensor<?x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32}
  return %r#0, %r#1 : tensor<?x16x512xf16>, tensor<?x16xf32>
}

// -----

// The same through the shared state-out check (decode, prefill, ...) and a
// split K / V cache whose V is more static than its K.

// CHECK-LABEL: func @decode_static_outs
// CHECK: pa.decode
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<8x8x64xf32>, tensor<8x8xf32>)
// LLVM-LABEL: llvm.func @decode_static_outs
func.func @decode_static_outs(%q: tensor<?x8x64xf32>, %k: tensor<?x16x2x64xf32>, %v: tensor<?x16x2x64xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>) -> (tensor<?x8x64xf32>, tensor<?x8xf32>) {
  %c1 = arith.constant 1 : index
  %b = tensor.dim %q, %c1 : tensor<?x8x64xf32>
  %o0 = tensor.empty(%b) : tensor<?x8x64xf32>
  %l0 = tensor.empty(%b) : tensor<?x8xf32>
  %v5 = tensor.empty() : tensor<5x16x2x64xf32>
  %vd = tensor.cast %v5 : tensor<5x16x2x64xf32> to tensor<?x16x2x64xf32>
  %r:2 = pa.decode q(%q : tensor<?x8x64xf32>) kv(%k, %vd : tensor<?x16x2x64xf32>, tensor<?x16x2x64xf32>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o0, %l0 : tensor<?x8x64xf32>, tensor<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 2, head_dim = 64>}
  return %r#0, %r#1 : tensor<?x8x64xf32>, tensor<?x8xf32>
}

// -----

// pa.merge: static outs beside dynamic states.

// CHECK-LABEL: func @merge_static_outs
// CHECK: pa.merge
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<4x4x32xf32>, tensor<4x4xf32>)
// LLVM-LABEL: llvm.func @merge_static_outs
func.func @merge_static_outs(%oa: tensor<?x4x32xf32>, %la: tensor<?x4xf32>, %ob: tensor<?x4x32xf32>, %lb: tensor<?x4xf32>) -> (tensor<?x4x32xf32>, tensor<?x4xf32>) {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %oa, %c1 : tensor<?x4x32xf32>
  %o0 = tensor.empty(%n) : tensor<?x4x32xf32>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %r:2 = pa.merge states(%oa, %la, %ob, %lb : tensor<?x4x32xf32>, tensor<?x4xf32>, tensor<?x4x32xf32>, tensor<?x4xf32>) outs(%o0, %l0 : tensor<?x4x32xf32>, tensor<?x4xf32>)
  return %r#0, %r#1 : tensor<?x4x32xf32>, tensor<?x4xf32>
}
