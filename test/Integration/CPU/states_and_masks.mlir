// RUN: pa-opt %s --pa-lower-to-cpu | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN: | FileCheck %s

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefI32(memref<*xi32>)

func.func @print_f32(%t: tensor<?xf32>) {
  %b = bufferization.to_buffer %t : tensor<?xf32> to memref<?xf32>
  %u = memref.cast %b : memref<?xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
func.func @print_i32(%t: tensor<?xi32>) {
  %b = bufferization.to_buffer %t : tensor<?xi32> to memref<?xi32>
  %u = memref.cast %b : memref<?xi32> to memref<*xi32>
  call @printMemrefI32(%u) : (memref<*xi32>) -> ()
  return
}

func.func @main() {
  // Merge of (o = 1, lse = 0) and (o = 3, lse = 0): o = 2, lse = ln 2; of two
  // -inf states: (0, -inf), never NaN. Shapes: lse [2], o [2, 1].
  %oa = arith.constant dense<[[1.0], [7.0]]> : tensor<2x1xf32>
  %la = arith.constant dense<[0.0, 0xFF800000]> : tensor<2xf32>
  %ob = arith.constant dense<[[3.0], [9.0]]> : tensor<2x1xf32>
  %lb = arith.constant dense<[0.0, 0xFF800000]> : tensor<2xf32>
  %o0 = tensor.empty() : tensor<2x1xf32>
  %l0 = tensor.empty() : tensor<2xf32>
  %o, %l = pa.merge states(%oa, %la, %ob, %lb : tensor<2x1xf32>, tensor<2xf32>, tensor<2x1xf32>, tensor<2xf32>)
      outs(%o0, %l0 : tensor<2x1xf32>, tensor<2xf32>)
  %oc = tensor.collapse_shape %o [[0, 1]] : tensor<2x1xf32> into tensor<2xf32>
  %ocd = tensor.cast %oc : tensor<2xf32> to tensor<?xf32>
  %ld = tensor.cast %l : tensor<2xf32> to tensor<?xf32>
  // CHECK: [2, {{ *}}0]
  call @print_f32(%ocd) : (tensor<?xf32>) -> ()
  // CHECK: [0.693147, {{ *}}-inf]
  call @print_f32(%ld) : (tensor<?xf32>) -> ()

  // Segmented packbits, little-endian: request 0 = 1,0,1,1,0,0,0,0,1 (9 bits:
  // bytes 0b00001101 = 13, 0b1 = 1), request 1 = 0,1 (byte 2).
  %bits = arith.constant dense<[1, 0, 1, 1, 0, 0, 0, 0, 1, 0, 1]> : tensor<11xi8>
  %bi = arith.constant dense<[0, 9, 11]> : tensor<3xi32>
  %p0 = tensor.empty() : tensor<3xi8>
  %pi0 = tensor.empty() : tensor<3xi32>
  %p, %pi = pa.pack_mask mask(%bits, %bi : tensor<11xi8>, tensor<3xi32>)
      outs(%p0, %pi0 : tensor<3xi8>, tensor<3xi32>)
  // Widen the bytes to i32 to print them as numbers.
  %pb = bufferization.to_buffer %p : tensor<3xi8> to memref<3xi8>
  %pw = memref.alloc() : memref<3xi32>
  %c0i = arith.constant 0 : index
  %c1i = arith.constant 1 : index
  %c3i = arith.constant 3 : index
  scf.for %i = %c0i to %c3i step %c1i {
    %v = memref.load %pb[%i] : memref<3xi8>
    %w = arith.extui %v : i8 to i32
    memref.store %w, %pw[%i] : memref<3xi32>
  }
  %pu = memref.cast %pw : memref<3xi32> to memref<*xi32>
  %pid = tensor.cast %pi : tensor<3xi32> to tensor<?xi32>
  // CHECK: [13, {{ *}}1, {{ *}}2]
  call @printMemrefI32(%pu) : (memref<*xi32>) -> ()
  // CHECK: [0, {{ *}}2, {{ *}}3]
  call @print_i32(%pid) : (tensor<?xi32>) -> ()

  // Top 50% by deviation per request, ties to the lower index, positions in
  // increasing order: request 0 (4 tokens) [0.5, 2, 2, 1] -> {1, 2};
  // request 1 (3 tokens) [3, 1, 3] -> ceil(1.5) = 2 -> {0, 2}.
  %dev = arith.constant dense<[0.5, 2.0, 2.0, 1.0, 3.0, 1.0, 3.0]> : tensor<7xf32>
  %di = arith.constant dense<[0, 4, 7]> : tensor<3xi32>
  %s0 = tensor.empty() : tensor<7xi32>
  %si0 = tensor.empty() : tensor<3xi32>
  %pos, %si = pa.select_topk ins(%dev, %di : tensor<7xf32>, tensor<3xi32>)
      outs(%s0, %si0 : tensor<7xi32>, tensor<3xi32>) {ratio = 0.5 : f64}
  %sid = tensor.cast %si : tensor<3xi32> to tensor<?xi32>
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %sel = tensor.extract_slice %pos[%c0] [%c4] [1] : tensor<7xi32> to tensor<?xi32>
  // CHECK: [1, {{ *}}2, {{ *}}0, {{ *}}2]
  call @print_i32(%sel) : (tensor<?xi32>) -> ()
  // CHECK: [0, {{ *}}2, {{ *}}4]
  call @print_i32(%sid) : (tensor<?xi32>) -> ()
  return
}
