// RUN: pa-opt %s --pa-lower-to-cpu | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN: | FileCheck %s
// RUN: pa-opt %s --pa-lower-to-cpu="split-kv-chunk=1" | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN: | FileCheck %s

// MLA decode, D_ckv = 2, D_kpe = 1, P = 2. Request 0 has two tokens in page 1
// with rows [ckv | kpe] = [1, 0 | 2] and [0, 3 | -1]. Head 0: q_nope = [1, 1],
// q_pe = [1], sm_scale = 0.5: scores 0.5 * (1 + 2) = 1.5 and 0.5 * (3 - 1) = 1,
// lse = ln(e^1.5 + e) = 1.97408, o = softmax-weighted ckv rows =
// [0.622459, 3 * 0.377541] = [0.622459, 1.13262]. Head 1: q = 0, equal
// weights: lse = ln 2 = 0.693147, o = [0.5, 1.5]. Request 1 has no pages:
// o = 0, lse = -inf. pa-split-kv leaves pa.mla_decode as it is.

#mla = #pa.paged_mla<page_size = 2, ckv = 2, kpe = 1>

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %qn = arith.constant dense<[[[1.0, 1.0], [0.0, 0.0]], [[5.0, 5.0], [5.0, 5.0]]]> : tensor<2x2x2xf32>
  %qp = arith.constant dense<[[[1.0], [0.0]], [[5.0], [5.0]]]> : tensor<2x2x1xf32>
  // [num_pages = 2, P = 2, D_ckv + D_kpe = 3]; page 0 holds junk.
  %kv = arith.constant dense<[
    [[9.0, 9.0, 9.0], [9.0, 9.0, 9.0]],
    [[1.0, 0.0, 2.0], [0.0, 3.0, -1.0]]]> : tensor<2x2x3xf32>
  %indptr = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
  %indices = arith.constant dense<[1]> : tensor<1xi32>
  %last = arith.constant dense<[2, 7]> : tensor<2xi32>
  %o0 = tensor.empty() : tensor<2x2x2xf32>
  %l0 = tensor.empty() : tensor<2x2xf32>
  %o, %lse = pa.mla_decode q(%qn, %qp : tensor<2x2x2xf32>, tensor<2x2x1xf32>)
      kv(%kv : tensor<2x2x3xf32>)
      pages(%indptr, %indices, %last : tensor<3xi32>, tensor<1xi32>, tensor<2xi32>)
      outs(%o0, %l0 : tensor<2x2x2xf32>, tensor<2x2xf32>) {cache = #mla, sm_scale = 0.5 : f32}
  %ob = bufferization.to_buffer %o : tensor<2x2x2xf32> to memref<2x2x2xf32>
  %lb = bufferization.to_buffer %lse : tensor<2x2xf32> to memref<2x2xf32>
  %ou = memref.cast %ob : memref<2x2x2xf32> to memref<*xf32>
  %lu = memref.cast %lb : memref<2x2xf32> to memref<*xf32>
  // CHECK: {{\[\[\[}}0.622459, {{ *}}1.13262],
  // CHECK-NEXT: [0.5, {{ *}}1.5]],
  // CHECK-NEXT: {{\[\[}}0, {{ *}}0],
  // CHECK-NEXT: [0, {{ *}}0]]]
  call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  // CHECK: {{\[\[}}1.97408, {{ *}}0.693147],
  // CHECK-NEXT: [-inf, {{ *}}-inf]]
  call @printMemrefF32(%lu) : (memref<*xf32>) -> ()
  return
}
