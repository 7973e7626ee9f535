// Regression: the CPU lowering checks every indptr it reads at run time and
// reports on stderr (pa-assert-to-stderr), instead of running to completion
// with wrong output and out-of-bounds reads.
// RUN: pa-opt %s --pa-lower-to-cpu | not --crash mlir-runner -e first_not_zero -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 >/dev/null | FileCheck %s --check-prefix=FIRST
// RUN: pa-opt %s --pa-lower-to-cpu | not --crash mlir-runner -e decreasing -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 >/dev/null | FileCheck %s --check-prefix=DECR
// RUN: pa-opt %s --pa-lower-to-cpu | not --crash mlir-runner -e beyond_indices -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 >/dev/null | FileCheck %s --check-prefix=BEYOND
// RUN: pa-opt %s --pa-lower-to-cpu | not --crash mlir-runner -e qo_beyond_q -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 >/dev/null | FileCheck %s --check-prefix=QO
// RUN: pa-opt %s --pa-lower-to-cpu | not --crash mlir-runner -e append_negative -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 >/dev/null | FileCheck %s --check-prefix=APPEND
// RUN: pa-opt %s --pa-lower-to-cpu | not --crash mlir-runner -e mask_short -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 >/dev/null | FileCheck %s --check-prefix=MASK
// RUN: pa-opt %s --pa-lower-to-cpu | not --crash mlir-runner -e segments_short -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 >/dev/null | FileCheck %s --check-prefix=SEGMENTS
// RUN: pa-opt %s --pa-lower-to-cpu | mlir-runner -e good -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 | FileCheck %s --check-prefix=GOOD

// FIRST: pa: assertion failed: kv_indptr[0] must be 0
// DECR: pa: assertion failed: kv_indptr must be non-decreasing
// BEYOND: pa: assertion failed: kv_indptr[B] exceeds the length of kv_indices
// QO: pa: assertion failed: qo_indptr[B] exceeds the length of q
// APPEND: pa: assertion failed: append_indptr must be non-decreasing
// MASK: pa: assertion failed: a request's mask segment is shorter than ceil(qo_len * kv_len / 8) bytes
// SEGMENTS: pa: assertion failed: segments must have one more than the rows of o entries
// GOOD-NOT: assertion failed
// GOOD: {{\[\[\[}}1, {{ *}}2]],

#cache = #pa.paged_kv<nhd, page_size = 1, kv_heads = 1, head_dim = 2>

func.func private @printMemrefF32(memref<*xf32>)

func.func @decode(%indptr: tensor<3xi32>, %indices: tensor<?xi32>) -> tensor<2x1x2xf32> {
  %q = arith.constant dense<[[[1.0, 0.0]], [[5.0, 5.0]]]> : tensor<2x1x2xf32>
  %kv = arith.constant dense<[
    [[[[1.0, 0.0]]], [[[1.0, 2.0]]]],
    [[[[0.0, 0.0]]], [[[3.0, 4.0]]]]]> : tensor<2x2x1x1x2xf32>
  %last = arith.constant dense<[1, 1]> : tensor<2xi32>
  %o0 = tensor.empty() : tensor<2x1x2xf32>
  %l0 = tensor.empty() : tensor<2x1xf32>
  %o, %lse = pa.decode q(%q : tensor<2x1x2xf32>) kv(%kv : tensor<2x2x1x1x2xf32>)
      pages(%indptr, %indices, %last : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>)
      outs(%o0, %l0 : tensor<2x1x2xf32>, tensor<2x1xf32>) {cache = #cache, sm_scale = 1.0 : f32}
  return %o : tensor<2x1x2xf32>
}

func.func @run(%indptr: tensor<3xi32>, %indices: tensor<?xi32>) {
  %o = call @decode(%indptr, %indices) : (tensor<3xi32>, tensor<?xi32>) -> tensor<2x1x2xf32>
  %ob = bufferization.to_buffer %o : tensor<2x1x2xf32> to memref<2x1x2xf32>
  %ou = memref.cast %ob : memref<2x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  return
}

func.func @good() {
  %indptr = arith.constant dense<[0, 1, 2]> : tensor<3xi32>
  %ix = arith.constant dense<[0, 1]> : tensor<2xi32>
  %indices = tensor.cast %ix : tensor<2xi32> to tensor<?xi32>
  call @run(%indptr, %indices) : (tensor<3xi32>, tensor<?xi32>) -> ()
  return
}

func.func @first_not_zero() {
  %indptr = arith.constant dense<[1, 1, 2]> : tensor<3xi32>
  %ix = arith.constant dense<[0, 1]> : tensor<2xi32>
  %indices = tensor.cast %ix : tensor<2xi32> to tensor<?xi32>
  call @run(%indptr, %indices) : (tensor<3xi32>, tensor<?xi32>) -> ()
  return
}

func.func @decreasing() {
  %indptr = arith.constant dense<[0, 2, 1]> : tensor<3xi32>
  %ix = arith.constant dense<[0, 1]> : tensor<2xi32>
  %indices = tensor.cast %ix : tensor<2xi32> to tensor<?xi32>
  call @run(%indptr, %indices) : (tensor<3xi32>, tensor<?xi32>) -> ()
  return
}

func.func @beyond_indices() {
  %indptr = arith.constant dense<[0, 1, 3]> : tensor<3xi32>
  %ix = arith.constant dense<[0, 1]> : tensor<2xi32>
  %indices = tensor.cast %ix : tensor<2xi32> to tensor<?xi32>
  call @run(%indptr, %indices) : (tensor<3xi32>, tensor<?xi32>) -> ()
  return
}

// Prefill whose qo_indptr[B] (3) exceeds the 2 rows of q.
func.func @qo_beyond_q() {
  %q = arith.constant dense<[[[1.0, 0.0]], [[5.0, 5.0]]]> : tensor<2x1x2xf32>
  %qo = arith.constant dense<[0, 1, 3]> : tensor<3xi32>
  %kv = arith.constant dense<[
    [[[[1.0, 0.0]]], [[[1.0, 2.0]]]],
    [[[[0.0, 0.0]]], [[[3.0, 4.0]]]]]> : tensor<2x2x1x1x2xf32>
  %indptr = arith.constant dense<[0, 1, 2]> : tensor<3xi32>
  %indices = arith.constant dense<[0, 1]> : tensor<2xi32>
  %last = arith.constant dense<[1, 1]> : tensor<2xi32>
  %o0 = tensor.empty() : tensor<2x1x2xf32>
  %l0 = tensor.empty() : tensor<2x1xf32>
  %o, %lse = pa.prefill q(%q, %qo : tensor<2x1x2xf32>, tensor<3xi32>) kv(%kv : tensor<2x2x1x1x2xf32>)
      pages(%indptr, %indices, %last : tensor<3xi32>, tensor<2xi32>, tensor<2xi32>)
      outs(%o0, %l0 : tensor<2x1x2xf32>, tensor<2x1xf32>) {cache = #cache}
  %ob = bufferization.to_buffer %o : tensor<2x1x2xf32> to memref<2x1x2xf32>
  %ou = memref.cast %ob : memref<2x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  return
}

// append_kv with a decreasing append_indptr.
func.func @append_negative() {
  %k = arith.constant dense<[[[1.0, 0.0]], [[5.0, 5.0]]]> : tensor<2x1x2xf32>
  %ai = arith.constant dense<[0, 2, 1]> : tensor<3xi32>
  %kv = arith.constant dense<0.0> : tensor<2x2x1x1x2xf32>
  %indptr = arith.constant dense<[0, 1, 2]> : tensor<3xi32>
  %indices = arith.constant dense<[0, 1]> : tensor<2xi32>
  %last = arith.constant dense<[1, 1]> : tensor<2xi32>
  %r = pa.append_kv new(%k, %k, %ai : tensor<2x1x2xf32>, tensor<2x1x2xf32>, tensor<3xi32>)
      pages(%indptr, %indices, %last : tensor<3xi32>, tensor<2xi32>, tensor<2xi32>)
      outs(%kv : tensor<2x2x1x1x2xf32>) {cache = #cache}
  %rb = bufferization.to_buffer %r : tensor<2x2x1x1x2xf32> to memref<2x2x1x1x2xf32>
  %ru = memref.cast %rb : memref<2x2x1x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%ru) : (memref<*xf32>) -> ()
  return
}

// A custom mask whose second request's segment is empty although it needs
// ceil(1 * 1 / 8) = 1 byte.
func.func @mask_short() {
  %q = arith.constant dense<[[[1.0, 0.0]], [[5.0, 5.0]]]> : tensor<2x1x2xf32>
  %qo = arith.constant dense<[0, 1, 2]> : tensor<3xi32>
  %kv = arith.constant dense<[
    [[[[1.0, 0.0]]], [[[1.0, 2.0]]]],
    [[[[0.0, 0.0]]], [[[3.0, 4.0]]]]]> : tensor<2x2x1x1x2xf32>
  %indptr = arith.constant dense<[0, 1, 2]> : tensor<3xi32>
  %indices = arith.constant dense<[0, 1]> : tensor<2xi32>
  %last = arith.constant dense<[1, 1]> : tensor<2xi32>
  %mask = arith.constant dense<[1]> : tensor<1xi8>
  %mi = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
  %o0 = tensor.empty() : tensor<2x1x2xf32>
  %l0 = tensor.empty() : tensor<2x1xf32>
  %o, %lse = pa.prefill q(%q, %qo : tensor<2x1x2xf32>, tensor<3xi32>) kv(%kv : tensor<2x2x1x1x2xf32>)
      pages(%indptr, %indices, %last : tensor<3xi32>, tensor<2xi32>, tensor<2xi32>)
      mask(%mask, %mi : tensor<1xi8>, tensor<3xi32>)
      outs(%o0, %l0 : tensor<2x1x2xf32>, tensor<2x1xf32>) {cache = #cache}
  %ob = bufferization.to_buffer %o : tensor<2x1x2xf32> to memref<2x1x2xf32>
  %ou = memref.cast %ob : memref<2x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  return
}

// merge_segments over 2 output rows with a segments array of 2 entries
// (it needs 3).
func.func @merge_segments_of(%seg: tensor<?xi32>) {
  %op = arith.constant dense<1.0> : tensor<2x1x2xf32>
  %lp = arith.constant dense<0.0> : tensor<2x1xf32>
  %o0 = tensor.empty() : tensor<2x1x2xf32>
  %l0 = tensor.empty() : tensor<2x1xf32>
  %o, %lse = pa.merge_segments states(%op, %lp : tensor<2x1x2xf32>, tensor<2x1xf32>)
      segments(%seg : tensor<?xi32>) outs(%o0, %l0 : tensor<2x1x2xf32>, tensor<2x1xf32>)
  %ob = bufferization.to_buffer %o : tensor<2x1x2xf32> to memref<2x1x2xf32>
  %ou = memref.cast %ob : memref<2x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  return
}

func.func @segments_short() {
  %s = arith.constant dense<[0, 2]> : tensor<2xi32>
  %seg = tensor.cast %s : tensor<2xi32> to tensor<?xi32>
  call @merge_segments_of(%seg) : (tensor<?xi32>) -> ()
  return
}
