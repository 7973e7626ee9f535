// RUN: pa-opt %s --pa-lower-to-cpu | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN: | FileCheck %s

// Regression: a sliding window larger than any sequence (INT64_MAX, which
// the verifier accepts) means "no window". The visibility test used to be
// t + window > pos, which overflows and left only token 0 visible. The same
// decode with window = INT64_MAX, with window = 3 (covers the 3 tokens
// exactly) and without a window must agree: q = [1, 0], k = [1, 0], [0, 0],
// [2, 0], v = [1, 0], [0, 1], [0, 0], sm_scale = 1: scores 1, 0, 2,
// lse = ln(e + 1 + e^2) = 2.40761, o = (e v0 + v1 + e^2 v2) / sum
// = [0.244728, 0.090031]. With window = 1 only the last token is visible:
// o = v2 = [0, 0], lse = 2.

#cache = #pa.paged_kv<nhd, page_size = 2, kv_heads = 1, head_dim = 2>

func.func private @printMemrefF32(memref<*xf32>)

func.func @print(%o: tensor<1x1x2xf32>, %lse: tensor<1x1xf32>) {
  %ob = bufferization.to_buffer %o : tensor<1x1x2xf32> to memref<1x1x2xf32>
  %lb = bufferization.to_buffer %lse : tensor<1x1xf32> to memref<1x1xf32>
  %ou = memref.cast %ob : memref<1x1x2xf32> to memref<*xf32>
  %lu = memref.cast %lb : memref<1x1xf32> to memref<*xf32>
  call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  call @printMemrefF32(%lu) : (memref<*xf32>) -> ()
  return
}

func.func @main() {
  %q = arith.constant dense<[[[1.0, 0.0]]]> : tensor<1x1x2xf32>
  // Two pages of P = 2: tokens 0, 1 in page 1, token 2 in page 0.
  %kv = arith.constant dense<[
    [[[[2.0, 0.0]], [[9.0, 9.0]]], [[[0.0, 0.0]], [[9.0, 9.0]]]],
    [[[[1.0, 0.0]], [[0.0, 0.0]]], [[[1.0, 0.0]], [[0.0, 1.0]]]]]> : tensor<2x2x2x1x2xf32>
  %indptr = arith.constant dense<[0, 2]> : tensor<2xi32>
  %indices = arith.constant dense<[1, 0]> : tensor<2xi32>
  %last = arith.constant dense<[1]> : tensor<1xi32>
  %o0 = tensor.empty() : tensor<1x1x2xf32>
  %l0 = tensor.empty() : tensor<1x1xf32>
  %o1, %lse1 = pa.decode q(%q : tensor<1x1x2xf32>) kv(%kv : tensor<2x2x2x1x2xf32>)
      pages(%indptr, %indices, %last : tensor<2xi32>, tensor<2xi32>, tensor<1xi32>)
      outs(%o0, %l0 : tensor<1x1x2xf32>, tensor<1x1xf32>)
      {cache = #cache, sm_scale = 1.0 : f32, window = 9223372036854775807 : i64}
  %o2, %lse2 = pa.decode q(%q : tensor<1x1x2xf32>) kv(%kv : tensor<2x2x2x1x2xf32>)
      pages(%indptr, %indices, %last : tensor<2xi32>, tensor<2xi32>, tensor<1xi32>)
      outs(%o0, %l0 : tensor<1x1x2xf32>, tensor<1x1xf32>)
      {cache = #cache, sm_scale = 1.0 : f32, window = 3 : i64}
  %o3, %lse3 = pa.decode q(%q : tensor<1x1x2xf32>) kv(%kv : tensor<2x2x2x1x2xf32>)
      pages(%indptr, %indices, %last : tensor<2xi32>, tensor<2xi32>, tensor<1xi32>)
      outs(%o0, %l0 : tensor<1x1x2xf32>, tensor<1x1xf32>)
      {cache = #cache, sm_scale = 1.0 : f32}
  %o4, %lse4 = pa.decode q(%q : tensor<1x1x2xf32>) kv(%kv : tensor<2x2x2x1x2xf32>)
      pages(%indptr, %indices, %last : tensor<2xi32>, tensor<2xi32>, tensor<1xi32>)
      outs(%o0, %l0 : tensor<1x1x2xf32>, tensor<1x1xf32>)
      {cache = #cache, sm_scale = 1.0 : f32, window = 1 : i64}
  // The prefill form: one query at position 2 (qo_len 1 of kv_len 3).
  %qoi = arith.constant dense<[0, 1]> : tensor<2xi32>
  %o5, %lse5 = pa.prefill q(%q, %qoi : tensor<1x1x2xf32>, tensor<2xi32>) kv(%kv : tensor<2x2x2x1x2xf32>)
      pages(%indptr, %indices, %last : tensor<2xi32>, tensor<2xi32>, tensor<1xi32>)
      outs(%o0, %l0 : tensor<1x1x2xf32>, tensor<1x1xf32>)
      {cache = #cache, sm_scale = 1.0 : f32, causal, window = 9223372036854775807 : i64}
  // window = INT64_MAX (only token 0 was visible before the fix: o = [1, 0],
  // lse = 1):
  // CHECK: {{\[\[\[}}0.244728, {{ *}}0.0900{{[0-9]*}}]]]
  // CHECK: {{\[\[}}2.40761]]
  call @print(%o1, %lse1) : (tensor<1x1x2xf32>, tensor<1x1xf32>) -> ()
  // window = 3:
  // CHECK: {{\[\[\[}}0.244728, {{ *}}0.0900{{[0-9]*}}]]]
  // CHECK: {{\[\[}}2.40761]]
  call @print(%o2, %lse2) : (tensor<1x1x2xf32>, tensor<1x1xf32>) -> ()
  // no window:
  // CHECK: {{\[\[\[}}0.244728, {{ *}}0.0900{{[0-9]*}}]]]
  // CHECK: {{\[\[}}2.40761]]
  call @print(%o3, %lse3) : (tensor<1x1x2xf32>, tensor<1x1xf32>) -> ()
  // window = 1:
  // CHECK: {{\[\[\[}}0, {{ *}}0]]]
  // CHECK: {{\[\[}}2]]
  call @print(%o4, %lse4) : (tensor<1x1x2xf32>, tensor<1x1xf32>) -> ()
  // CHECK: {{\[\[\[}}0.244728, {{ *}}0.0900{{[0-9]*}}]]]
  // CHECK: {{\[\[}}2.40761]]
  call @print(%o5, %lse5) : (tensor<1x1x2xf32>, tensor<1x1xf32>) -> ()
  return
}
