// RUN: pa-opt %s --convert-pa-to-gpu | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --convert-pa-to-gpu --pa-warp-shuffle-reduce --convert-scf-to-cf --convert-gpu-to-nvvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=NVVM

// pa.plan_split_kv: a CTA per request b (grid x = B = dim of
// kv_last_page_len): the threads sum the item counts ceil(kv_len_i / C) of
// the requests before b into a shared counter (atomic add after a strided
// loop), thread 0 writes work_indptr[b + 1] (CTA 0 also [0]), and the
// threads write b's items c * C .. min((c + 1) * C, kv_len_b), guarded by
// the capacity of the work arrays.
// CHECK-LABEL: func @plan(
// CHECK-SAME: %[[IP:[^:]*]]: memref<?xi32>, %[[LP:[^:]*]]: memref<?xi32>, %[[WI:[^:]*]]: memref<?xi32>, %[[WR:[^:]*]]: memref<?xi32>, %[[WS:[^:]*]]: memref<?xi32>, %[[WE:[^:]*]]: memref<?xi32>
// CHECK: %[[B:.*]] = memref.dim %[[LP]], %c0
// CHECK: gpu.launch_func @pa_kernels::@pa_plan_split_kv blocks in (%[[B]], %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%[[IP]] : memref<?xi32>, %[[LP]] : memref<?xi32>, %[[WI]] : memref<?xi32>, %[[WR]] : memref<?xi32>, %[[WS]] : memref<?xi32>, %[[WE]] : memref<?xi32>)
// CHECK: gpu.func @pa_plan_split_kv(
// CHECK-SAME: workgroup(%[[CNT:.*]] : memref<1xi32, #gpu.address_space<workgroup>>)
// CHECK-SAME: pa.kernel = {args = ["kv_indptr", "kv_last_page_len", "work_indptr", "work_request", "work_start", "work_end"], block = array<i64: 128, 1, 1>, grid = ["batch", 1, 1], kind = "plan_split_kv", smem = 0 : i64}
// CHECK: %[[REQ:.*]] = gpu.block_id x
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: arith.constant 255 : index
// CHECK: arith.divui %{{.*}}, %c256
// CHECK: memref.atomic_rmw addi
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}] : memref<?xi32>
// CHECK: %[[CAP:.*]] = memref.dim %arg3, %c0
// CHECK: scf.for
// CHECK: arith.cmpi ult, %{{.*}}, %[[CAP]]
// CHECK: memref.store %{{.*}}, %arg3[%{{.*}}] : memref<?xi32>
// CHECK: memref.store %{{.*}}, %arg4[%{{.*}}] : memref<?xi32>
// CHECK: memref.store %{{.*}}, %arg5[%{{.*}}] : memref<?xi32>
// NVVM: llvm.func @pa_plan_split_kv(
// NVVM: llvm.atomicrmw add
func.func @plan(%ip: memref<?xi32>, %lp: memref<?xi32>, %wi: memref<?xi32>, %wr: memref<?xi32>, %ws: memref<?xi32>, %we: memref<?xi32>) {
  pa.plan_split_kv pages(%ip, %lp : memref<?xi32>, memref<?xi32>) outs(%wi, %wr, %ws, %we : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) {chunk_size = 256 : i64, page_size = 16 : i64}
  return
}
