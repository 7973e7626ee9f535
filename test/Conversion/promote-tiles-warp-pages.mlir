// RUN: pa-opt %s --convert-pa-to-gpu="decode-kernel=tensor-core" --pa-promote-tiles | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --convert-pa-to-gpu="decode-kernel=tensor-core" --pa-promote-tiles="page-list-rounds=0" | FileCheck %s --check-prefix=REGS

// pa-promote-tiles' warp-shuffled page lookups. The tensor-core decode's
// tiles are warp-local: warp w copies the K / V rows of its 16 keys of each
// 64-key tile, lane l chunk l + 32 i (8 rounds of 2 rows for D = 128). The
// 16 keys touch at most (16 + 16 - 2) / 16 + 1 = 2 pages of 16 tokens, so
// each lane looks up one entry (lane j: the warp's j-th page), a step
// carries that one i32, and each round's copy takes its page's entry from
// the lane that holds it (gpu.shuffle idx): one page-table load a lane and
// tile instead of one per round family (8), each lane loading the same
// pages. With page-list-rounds=0 every round's entry is carried (8 x i32).

// CHECK-LABEL: gpu.func @pa_decode(
// CHECK: %[[TID:.*]] = gpu.thread_id x
// The lookups: lane j < 2 of the warp, inside the warp's keys.
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK: arith.cmpi ult, %[[LANE]], %c2
// CHECK: scf.if %{{.*}} -> (i32) {
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c128{{.*}} iter_args(%[[MINE:.*]] = %{{.*}}) -> (i32) {
// CHECK-COUNT-8: gpu.shuffle  idx %[[MINE]], %{{.*}}, %{{.*}} : i32
// CHECK: nvgpu.device_async_create_group
// REGS-LABEL: gpu.func @pa_decode(
// REGS-NOT: gpu.shuffle
// REGS: scf.for {{.*}} -> (i32, i32, i32, i32, i32, i32, i32, i32) {
func.func @decode(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.decode q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}
