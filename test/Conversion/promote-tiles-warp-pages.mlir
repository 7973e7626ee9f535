// RUN: pa-opt %s --convert-pa-to-gpu="decode-kernel=tensor-core" --pa-promote-tiles | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --convert-pa-to-gpu="decode-kernel=tensor-core" --pa-promote-tiles="page-list-rounds=0" | FileCheck %s --check-prefix=REGS

// pa-promote-tiles' page lookups in the tensor-core decode, whose tiles are
// warp-local: warp w copies the K / V rows of its 16 keys of each 64-key
// tile, lane l chunk l + 32 i (8 rounds of 2 rows for D = 128).
//
// One-pass (pa_decode): the KV loop starts at key 0, so a warp's 16 keys
// of a tile start at a multiple of 16 and lie in one page of 16 tokens
// (`onePage`): each lane looks up that one entry a step, carries it, and
// every round copies from it. The cache is read as a 1-D memref (a copy's
// source is page * 32768 elements plus its offset in the page, which does
// not change from step to step), and a step whose tile lies inside the
// keys (start + 64 <= end) copies without the per-round key compares and
// zero-fill; the last tile keeps them.
// CHECK-LABEL: gpu.func @pa_decode(
// CHECK:       %[[KV:.*]] = memref.reinterpret_cast %arg1 to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?x2x16x8x128xf16> to memref<?xf16>
// CHECK:       scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c128{{.*}} iter_args(%[[PAGE:.*]] = %{{.*}}) -> (i32) {
// CHECK-NOT:     gpu.shuffle
// CHECK:         %[[WHOLE:.*]] = arith.cmpi ule, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    scf.if %[[WHOLE]] {
// CHECK-NOT:       arith.select
// CHECK:           %[[P:.*]] = arith.index_cast %[[PAGE]] : i32 to index
// CHECK:           %[[PO:.*]] = arith.muli %[[P]], %c32768{{.*}} : index
// CHECK-NEXT:      %[[SRC:.*]] = arith.addi %[[PO]], %{{.*}} : index
// CHECK-NEXT:      nvgpu.device_async_copy %[[KV]][%[[SRC]]], %{{.*}}, 8 {bypassL1}
// CHECK:         } else {
// CHECK:           arith.cmpi ult
// CHECK:           nvgpu.device_async_copy %[[KV]][%{{.*}}], %{{.*}}, 8, %{{.*}} {bypassL1}
// CHECK:         nvgpu.device_async_create_group
//
// Split-KV (pa_decode_partial): a work item's keys may start anywhere, so
// a warp's 16 keys touch at most (16 + 16 - 2) / 16 + 1 = 2 pages: each
// lane looks up one entry (lane j: the warp's j-th page), a step carries
// that one i32, and each round's copy takes its page's entry from the lane
// that holds it (gpu.shuffle idx): one page-table load a lane and tile
// instead of one per round family (8). With page-list-rounds=0 every
// round's entry is carried (8 x i32).
// CHECK-LABEL: gpu.func @pa_decode_partial(
// CHECK:       %[[TID:.*]] = gpu.thread_id x
// The lookups: lane j < 2 of the warp, inside the warp's keys.
// CHECK:       %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK:       arith.cmpi ult, %[[LANE]], %c2
// CHECK:       scf.if %{{.*}} -> (i32) {
// CHECK:       memref.load %{{.*}} : memref<?xi32>
// CHECK:       scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c128{{.*}} iter_args(%[[MINE:.*]] = %{{.*}}) -> (i32) {
// CHECK-COUNT-8: gpu.shuffle  idx %[[MINE]], %{{.*}}, %{{.*}} : i32
// CHECK:       nvgpu.device_async_create_group
// REGS-LABEL: gpu.func @pa_decode(
// REGS-NOT:   gpu.shuffle
// REGS:       scf.for {{.*}} -> (i32) {
// REGS-LABEL: gpu.func @pa_decode_partial(
// REGS-NOT:   gpu.shuffle
// REGS:       scf.for {{.*}} -> (i32, i32, i32, i32, i32, i32, i32, i32) {
func.func @decode(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.decode q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}
func.func @partial(%q: memref<4x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<5xi32>, %ix: memref<?xi32>, %lp: memref<4xi32>, %wi: memref<5xi32>, %wr: memref<?xi32>, %ws: memref<?xi32>, %we: memref<?xi32>, %o: memref<?x32x128xf32>, %l: memref<?x32xf32>) {
  pa.decode_partial q(%q : memref<4x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<5xi32>, memref<?xi32>, memref<4xi32>) work(%wi, %wr, %ws, %we : memref<5xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf32>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}
