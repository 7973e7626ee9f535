// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu -verify-diagnostics | FileCheck %s --enable-var-scope

// pa.merge of two states: a CTA per row r of lse[R, H] (grid x = R), 128
// threads over the row's H x D / 8 slots of 8 f16 elements; the loops over
// the states are unrolled (no scf.for over them is left: the picks among
// the two memrefs fold), every slot loads both states' 16-byte vectors and
// stores one, and the slot with d = 0 writes the row's lse.
// CHECK-LABEL: func @merge2(
// CHECK-SAME: %[[OA:[^:]*]]: memref<?x32x128xf16>, %[[LA:[^:]*]]: memref<?x32xf32>, %[[OB:[^:]*]]: memref<?x32x128xf16>, %[[LB:[^:]*]]: memref<?x32xf32>, %[[O:[^:]*]]: memref<?x32x128xf16>, %[[L:[^:]*]]: memref<?x32xf32>
// CHECK: %[[R:.*]] = memref.dim %[[L]], %c0
// CHECK: gpu.launch_func @pa_kernels::@pa_merge blocks in (%[[R]], %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%[[OA]] : memref<?x32x128xf16>, %[[LA]] : memref<?x32xf32>, %[[OB]] : memref<?x32x128xf16>, %[[LB]] : memref<?x32xf32>, %[[O]] : memref<?x32x128xf16>, %[[L]] : memref<?x32xf32>)
// CHECK: gpu.func @pa_merge(
// CHECK-SAME: pa.kernel = {args = ["o_0", "lse_0", "o_1", "lse_1", "o", "lse"], block = array<i64: 128, 1, 1>, grid = ["batch", 1, 1], kind = "merge", smem = 0 : i64}
// CHECK: %[[ROW:.*]] = gpu.block_id x
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK: memref.load %arg1[%[[ROW]], %{{.*}}] : memref<?x32xf32>
// CHECK: memref.load %arg3[%[[ROW]], %{{.*}}] : memref<?x32xf32>
// CHECK: arith.maximumf
// CHECK: vector.load %arg0[%[[ROW]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x32x128xf16>, vector<8xf16>
// CHECK: vector.load %arg2[%[[ROW]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x32x128xf16>, vector<8xf16>
// CHECK: vector.store %{{.*}}, %arg4[%[[ROW]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x32x128xf16>, vector<8xf16>
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %arg5[%[[ROW]], %{{.*}}] : memref<?x32xf32>
func.func @merge2(%oa: memref<?x32x128xf16>, %la: memref<?x32xf32>, %ob: memref<?x32x128xf16>, %lb: memref<?x32xf32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.merge states(%oa, %la, %ob, %lb : memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}

// -----

// Three bf16 states of head dim 64 (8-element slots, 16 bytes), lse in
// base 2; the role names count the states.
// CHECK-LABEL: func @merge3(
// CHECK: gpu.func @pa_merge(
// CHECK-SAME: args = ["o_0", "lse_0", "o_1", "lse_1", "o_2", "lse_2", "o", "lse"]
// CHECK-COUNT-3: vector.load %{{.*}} {alignment = 16 : i64} : memref<?x4x64xbf16>, vector<8xbf16>
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<?x4x64xbf16>, vector<8xbf16>
func.func @merge3(%o0: memref<?x4x64xbf16>, %l0: memref<?x4xf32>, %o1: memref<?x4x64xbf16>, %l1: memref<?x4xf32>, %o2: memref<?x4x64xbf16>, %l2: memref<?x4xf32>, %o: memref<?x4x64xbf16>, %l: memref<?x4xf32>) {
  pa.merge states(%o0, %l0, %o1, %l1, %o2, %l2 : memref<?x4x64xbf16>, memref<?x4xf32>, memref<?x4x64xbf16>, memref<?x4xf32>, memref<?x4x64xbf16>, memref<?x4xf32>) outs(%o, %l : memref<?x4x64xbf16>, memref<?x4xf32>) {lse_base2}
  return
}

// -----

// Other ranks are reshaped on the host into the kernel's lse[R, H] /
// o[R, H, D]: rank 1 gains a unit head dim, rank 3 collapses its leading
// dims into the rows.
// CHECK-LABEL: func @merge_rank1(
// CHECK: memref.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [%{{.*}}, 1, 64] : memref<?x64xf16> into memref<?x1x64xf16>
// CHECK: memref.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [%{{.*}}, 1] : memref<?xf32> into memref<?x1xf32>
// CHECK: gpu.launch_func @pa_kernels::@pa_merge
// CHECK-SAME: memref<?x1x64xf16>
func.func @merge_rank1(%oa: memref<?x64xf16>, %la: memref<?xf32>, %ob: memref<?x64xf16>, %lb: memref<?xf32>, %o: memref<?x64xf16>, %l: memref<?xf32>) {
  pa.merge states(%oa, %la, %ob, %lb : memref<?x64xf16>, memref<?xf32>, memref<?x64xf16>, memref<?xf32>) outs(%o, %l : memref<?x64xf16>, memref<?xf32>)
  return
}

// -----

// CHECK-LABEL: func @merge_rank3(
// CHECK: memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2], [3]] : memref<2x?x8x128xf16> into memref<?x8x128xf16>
// CHECK: memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : memref<2x?x8xf32> into memref<?x8xf32>
// CHECK: gpu.launch_func @pa_kernels::@pa_merge
func.func @merge_rank3(%oa: memref<2x?x8x128xf16>, %la: memref<2x?x8xf32>, %ob: memref<2x?x8x128xf16>, %lb: memref<2x?x8xf32>, %o: memref<2x?x8x128xf16>, %l: memref<2x?x8xf32>) {
  pa.merge states(%oa, %la, %ob, %lb : memref<2x?x8x128xf16>, memref<2x?x8xf32>, memref<2x?x8x128xf16>, memref<2x?x8xf32>) outs(%o, %l : memref<2x?x8x128xf16>, memref<2x?x8xf32>)
  return
}

// -----

// pa.merge_states: a CTA per row s of o_states[S, N, H, D]; the loop over
// the N states (a run-time count) is unrolled by 8 (a step-8 main loop and
// its remainder), so that several states' loads are in flight.
// CHECK-LABEL: func @merge_states(
// CHECK: gpu.launch_func @pa_kernels::@pa_merge_states blocks in (%{{.*}}, %{{.*}}, %{{.*}})
// CHECK: gpu.func @pa_merge_states(
// CHECK-SAME: pa.kernel = {args = ["o_states", "lse_states", "o", "lse"], block = array<i64: 128, 1, 1>, grid = ["batch", 1, 1], kind = "merge_states", smem = 0 : i64}
// CHECK: %[[N:.*]] = memref.dim %arg0, %c1
// CHECK: scf.for
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %{{.*}} iter_args
// CHECK-COUNT-8: memref.load %arg1
// CHECK: vector.load %arg0{{.*}} {alignment = 16 : i64} : memref<?x?x32x128xf32>, vector<4xf32>
func.func @merge_states(%v: memref<?x?x32x128xf32>, %s: memref<?x?x32xf32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.merge_states states(%v, %s : memref<?x?x32x128xf32>, memref<?x?x32xf32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}

// -----

func.func @merge_dynamic_d(%oa: memref<?x4x?xf16>, %la: memref<?x4xf32>, %o: memref<?x4x?xf16>, %l: memref<?x4xf32>) {
  // expected-error @+1 {{pa.merge on the GPU needs a static last dim of o (the head dim: the kernel's vector width depends on it)}}
  pa.merge states(%oa, %la : memref<?x4x?xf16>, memref<?x4xf32>) outs(%o, %l : memref<?x4x?xf16>, memref<?x4xf32>)
  return
}

// -----

// The merge kernel's ABI has states of o's element type: wider states (which
// the op allows, e.g. f32 partial states of a sharded prefill) are an error
// at the op.
func.func @merge_wider_states(%oa: memref<?x4x64xf32>, %la: memref<?x4xf32>, %o: memref<?x4x64xf16>, %l: memref<?x4xf32>) {
  // expected-error @+1 {{pa.merge on the GPU needs states of the o out's element type (the kernel's ABI), got 'memref<?x4x64xf32>' for state 0}}
  pa.merge states(%oa, %la : memref<?x4x64xf32>, memref<?x4xf32>) outs(%o, %l : memref<?x4x64xf16>, memref<?x4xf32>)
  return
}
