// An fp8 (f8E4M3FN) cache end to end through pa-lower-to-cpu and mlir-runner:
// two rows are quantized into the cache (x / scale, saturating at 448), then
// a decode dequantizes them (scale * fp8). Bad scales stop with a message.
// RUN: pa-opt %s --pa-lower-to-cpu | mlir-runner -e good -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 | FileCheck %s --check-prefix=GOOD
// RUN: pa-opt %s --pa-lower-to-cpu | not --crash mlir-runner -e zero_scale -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 >/dev/null | FileCheck %s --check-prefix=ZERO

// Slot 0 stores K = [2, 0], V = [1.5, 2]: values [1, 0] and [3, 4].
// Slot 1 stores K = [0, 448] (2000 saturated), V = [448, -3.5] (500
// saturated): values [0, 224] and [896, -7].
// Request 0 holds slot 0 only, so o = [3, 4]; request 1 holds both, and the
// query [0, 1] scores 224 against 0, which puts all the weight on slot 1.
// GOOD-NOT: assertion failed
// GOOD: {{\[\[\[}}3, {{ *}}4]],
// GOOD-NEXT: {{\[\[}}896, {{ *}}-7]]]
// ZERO: pa: assertion failed: fp8 KV cache scales must be finite and > 0

#cache = #pa.paged_kv<nhd, page_size = 2, kv_heads = 1, head_dim = 2>

func.func private @printMemrefF32(memref<*xf32>)

func.func @step(%ks: tensor<1xf32>, %vs: tensor<1xf32>) -> tensor<2x1x2xf32> {
  %kn = arith.constant dense<[[[1.0, 0.0]], [[0.0, 1000.0]]]> : tensor<2x1x2xf32>
  %vn = arith.constant dense<[[[3.0, 4.0]], [[1000.0, -7.0]]]> : tensor<2x1x2xf32>
  %slots = arith.constant dense<[0, 1]> : tensor<2xi32>
  %s = tensor.cast %slots : tensor<2xi32> to tensor<?xi32>
  %kv0 = tensor.empty() : tensor<1x2x2x1x2xf8E4M3FN>
  %kv = pa.append_kv_slots new(%kn, %vn : tensor<2x1x2xf32>, tensor<2x1x2xf32>)
      slots(%s : tensor<?xi32>) scales(%ks, %vs : tensor<1xf32>, tensor<1xf32>)
      outs(%kv0 : tensor<1x2x2x1x2xf8E4M3FN>) {cache = #cache}
  // Request 0: token 0 (slot 0); request 1: tokens 0, 1 (slots 0, 1).
  %indptr = arith.constant dense<[0, 1, 2]> : tensor<3xi32>
  %ix = arith.constant dense<[0, 0]> : tensor<2xi32>
  %indices = tensor.cast %ix : tensor<2xi32> to tensor<?xi32>
  %last = arith.constant dense<[1, 2]> : tensor<2xi32>
  %q = arith.constant dense<[[[1.0, 0.0]], [[0.0, 1.0]]]> : tensor<2x1x2xf32>
  %o0 = tensor.empty() : tensor<2x1x2xf32>
  %l0 = tensor.empty() : tensor<2x1xf32>
  %o, %lse = pa.decode q(%q : tensor<2x1x2xf32>)
      kv(%kv : tensor<1x2x2x1x2xf8E4M3FN>)
      scales(%ks, %vs : tensor<1xf32>, tensor<1xf32>)
      pages(%indptr, %indices, %last : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>)
      outs(%o0, %l0 : tensor<2x1x2xf32>, tensor<2x1xf32>) {cache = #cache, sm_scale = 1.0 : f32}
  return %o : tensor<2x1x2xf32>
}

func.func @run(%ks: tensor<1xf32>, %vs: tensor<1xf32>) {
  %o = call @step(%ks, %vs) : (tensor<1xf32>, tensor<1xf32>) -> tensor<2x1x2xf32>
  %ob = bufferization.to_buffer %o : tensor<2x1x2xf32> to memref<2x1x2xf32>
  %ou = memref.cast %ob : memref<2x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  return
}

func.func @good() {
  %ks = arith.constant dense<0.5> : tensor<1xf32>
  %vs = arith.constant dense<2.0> : tensor<1xf32>
  call @run(%ks, %vs) : (tensor<1xf32>, tensor<1xf32>) -> ()
  return
}

func.func @zero_scale() {
  %ks = arith.constant dense<0.5> : tensor<1xf32>
  %vs = arith.constant dense<0.0> : tensor<1xf32>
  call @run(%ks, %vs) : (tensor<1xf32>, tensor<1xf32>) -> ()
  return
}
