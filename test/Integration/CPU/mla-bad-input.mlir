// The CPU lowering of pa.mla_decode checks at run time what the verifier
// cannot see in dynamic shapes and the page table, and reports on stderr
// (pa-assert-to-stderr) instead of reading out of bounds.
// RUN: pa-opt %s --pa-lower-to-cpu | not --crash mlir-runner -e q_pe_rows -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 >/dev/null | FileCheck %s --check-prefix=ROWS
// RUN: pa-opt %s --pa-lower-to-cpu | not --crash mlir-runner -e page_out_of_range -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 >/dev/null | FileCheck %s --check-prefix=PAGE
// RUN: pa-opt %s --pa-lower-to-cpu | not --crash mlir-runner -e last_page_too_long -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 >/dev/null | FileCheck %s --check-prefix=LAST
// RUN: pa-opt %s --pa-lower-to-cpu | not --crash mlir-runner -e indptr_short -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 >/dev/null | FileCheck %s --check-prefix=INDPTR
// RUN: pa-opt %s --pa-lower-to-cpu | mlir-runner -e good -entry-point-result=void \
// RUN:   -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so \
// RUN:   2>&1 | FileCheck %s --check-prefix=GOOD

// ROWS: pa: assertion failed: q_pe must have as many rows (B) as q_nope
// PAGE: pa: assertion failed: kv_indices entry out of range [0, num_pages)
// LAST: pa: assertion failed: kv_last_page_len out of [1, 2]
// INDPTR: pa: assertion failed: kv_indptr must have B + 1 entries (B = rows of q_nope)
// GOOD: {{\[\[}}0.693147],
// GOOD-NEXT: [-inf]]

#mla = #pa.paged_mla<page_size = 2, ckv = 2, kpe = 1>

func.func private @printMemrefF32(memref<*xf32>)

// MLA decode over a 2-page cache of zeros, H = 1; prints lse.
func.func @run(%qn: tensor<?x1x2xf32>, %qp: tensor<?x1x1xf32>, %indptr: tensor<?xi32>,
               %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  %kv = arith.constant dense<0.0> : tensor<2x2x3xf32>
  %c0 = arith.constant 0 : index
  %b = tensor.dim %qn, %c0 : tensor<?x1x2xf32>
  %o0 = tensor.empty(%b) : tensor<?x1x2xf32>
  %l0 = tensor.empty(%b) : tensor<?x1xf32>
  %o, %lse = pa.mla_decode q(%qn, %qp : tensor<?x1x2xf32>, tensor<?x1x1xf32>)
      kv(%kv : tensor<2x2x3xf32>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x1x2xf32>, tensor<?x1xf32>) {cache = #mla, sm_scale = 1.0 : f32}
  %lb = bufferization.to_buffer %lse : tensor<?x1xf32> to memref<?x1xf32>
  %lu = memref.cast %lb : memref<?x1xf32> to memref<*xf32>
  call @printMemrefF32(%lu) : (memref<*xf32>) -> ()
  return
}

// Zero queries of %nq (q_nope) and %np (q_pe) rows through the page table.
func.func @call(%nq: index, %np: index, %ip: tensor<3xi32>, %ix: tensor<1xi32>, %lp: tensor<?xi32>) {
  %zn = arith.constant dense<0.0> : tensor<3x1x2xf32>
  %zp = arith.constant dense<0.0> : tensor<3x1x1xf32>
  %qn = tensor.extract_slice %zn[0, 0, 0] [%nq, 1, 2] [1, 1, 1] : tensor<3x1x2xf32> to tensor<?x1x2xf32>
  %qp = tensor.extract_slice %zp[0, 0, 0] [%np, 1, 1] [1, 1, 1] : tensor<3x1x1xf32> to tensor<?x1x1xf32>
  %indptr = tensor.cast %ip : tensor<3xi32> to tensor<?xi32>
  %indices = tensor.cast %ix : tensor<1xi32> to tensor<?xi32>
  call @run(%qn, %qp, %indptr, %indices, %lp)
      : (tensor<?x1x2xf32>, tensor<?x1x1xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> ()
  return
}

// Request 0 has two tokens in page 1, request 1 none; q_pe has one row
// fewer than q_nope.
func.func @q_pe_rows() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %ip = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
  %ix = arith.constant dense<[1]> : tensor<1xi32>
  %lp = arith.constant dense<[2, 0]> : tensor<2xi32>
  %l = tensor.cast %lp : tensor<2xi32> to tensor<?xi32>
  call @call(%c2, %c1, %ip, %ix, %l) : (index, index, tensor<3xi32>, tensor<1xi32>, tensor<?xi32>) -> ()
  return
}

func.func @page_out_of_range() {
  %c2 = arith.constant 2 : index
  %ip = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
  %ix = arith.constant dense<[2]> : tensor<1xi32>
  %lp = arith.constant dense<[2, 0]> : tensor<2xi32>
  %l = tensor.cast %lp : tensor<2xi32> to tensor<?xi32>
  call @call(%c2, %c2, %ip, %ix, %l) : (index, index, tensor<3xi32>, tensor<1xi32>, tensor<?xi32>) -> ()
  return
}

func.func @last_page_too_long() {
  %c2 = arith.constant 2 : index
  %ip = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
  %ix = arith.constant dense<[1]> : tensor<1xi32>
  %lp = arith.constant dense<[3, 0]> : tensor<2xi32>
  %l = tensor.cast %lp : tensor<2xi32> to tensor<?xi32>
  call @call(%c2, %c2, %ip, %ix, %l) : (index, index, tensor<3xi32>, tensor<1xi32>, tensor<?xi32>) -> ()
  return
}

// Three queries but a page table of two requests.
func.func @indptr_short() {
  %c3 = arith.constant 3 : index
  %ip = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
  %ix = arith.constant dense<[1]> : tensor<1xi32>
  %lp = arith.constant dense<[2, 0]> : tensor<2xi32>
  %l = tensor.cast %lp : tensor<2xi32> to tensor<?xi32>
  call @call(%c3, %c3, %ip, %ix, %l) : (index, index, tensor<3xi32>, tensor<1xi32>, tensor<?xi32>) -> ()
  return
}

// Zero scores over two tokens: lse = ln 2; the empty request gives -inf.
func.func @good() {
  %c2 = arith.constant 2 : index
  %ip = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
  %ix = arith.constant dense<[1]> : tensor<1xi32>
  %lp = arith.constant dense<[2, 0]> : tensor<2xi32>
  %l = tensor.cast %lp : tensor<2xi32> to tensor<?xi32>
  call @call(%c2, %c2, %ip, %ix, %l) : (index, index, tensor<3xi32>, tensor<1xi32>, tensor<?xi32>) -> ()
  return
}
