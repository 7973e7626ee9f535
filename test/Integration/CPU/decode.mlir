// RUN: pa-opt %s --pa-lower-to-cpu | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN: | FileCheck %s
// RUN: pa-opt %s --pa-lower-to-cpu="split-kv-chunk=1" | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN: | FileCheck %s

// Request 0: two tokens in pages 3 and 1 (P = 1), q = [1, 0], k = [1, 0] and
// [0, 0], v = [1, 2] and [3, 4], sm_scale = 1: scores 1 and 0, so
// lse = ln(e + 1) = 1.31326, o = (e v0 + v1) / (e + 1) = [1.53788, 2.53788].
// Request 1 has no pages: o = 0, lse = -inf. Split-KV with 1-token chunks
// must give the same.

#cache = #pa.paged_kv<nhd, page_size = 1, kv_heads = 1, head_dim = 2>

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %q = arith.constant dense<[[[1.0, 0.0]], [[5.0, 5.0]]]> : tensor<2x1x2xf32>
  // [num_pages = 4, 2 (K, V), P = 1, Hkv = 1, D = 2]; pages 0 and 2 hold junk.
  %kv = arith.constant dense<[
    [[[[9.0, 9.0]]], [[[9.0, 9.0]]]],
    [[[[0.0, 0.0]]], [[[3.0, 4.0]]]],
    [[[[9.0, 9.0]]], [[[9.0, 9.0]]]],
    [[[[1.0, 0.0]]], [[[1.0, 2.0]]]]]> : tensor<4x2x1x1x2xf32>
  %indptr = arith.constant dense<[0, 2, 2]> : tensor<3xi32>
  %indices = arith.constant dense<[3, 1]> : tensor<2xi32>
  %last = arith.constant dense<[1, 1]> : tensor<2xi32>
  %o0 = tensor.empty() : tensor<2x1x2xf32>
  %l0 = tensor.empty() : tensor<2x1xf32>
  %o, %lse = pa.decode q(%q : tensor<2x1x2xf32>) kv(%kv : tensor<4x2x1x1x2xf32>)
      pages(%indptr, %indices, %last : tensor<3xi32>, tensor<2xi32>, tensor<2xi32>)
      outs(%o0, %l0 : tensor<2x1x2xf32>, tensor<2x1xf32>) {cache = #cache, sm_scale = 1.0 : f32}
  %ob = bufferization.to_buffer %o : tensor<2x1x2xf32> to memref<2x1x2xf32>
  %lb = bufferization.to_buffer %lse : tensor<2x1xf32> to memref<2x1xf32>
  %ou = memref.cast %ob : memref<2x1x2xf32> to memref<*xf32>
  %lu = memref.cast %lb : memref<2x1xf32> to memref<*xf32>
  // CHECK: 1.53788, {{ *}}2.53788
  // CHECK-NEXT: {{\[\[}}0, {{ *}}0]]]
  call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  // CHECK: {{\[\[}}1.31326],
  // CHECK-NEXT: [-inf]]
  call @printMemrefF32(%lu) : (memref<*xf32>) -> ()
  return
}
