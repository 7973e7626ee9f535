// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-warps=4 prefill-tile-kv=64" --pa-promote-tiles="smem-layout=pad" | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-warps=4 prefill-tile-kv=64" --pa-promote-tiles="page-list-rounds=0 smem-layout=pad" | FileCheck %s --check-prefix=REGS
// RUN: not pa-opt %s --split-input-file --convert-pa-to-gpu --pa-promote-tiles="page-list-rounds=-1" 2>&1 | FileCheck %s --check-prefix=BAD

// pa-promote-tiles' page lists. 4 warps (128 threads) over 64-key tiles of
// D = 128 copy 64 x 16 chunks of 16 bytes a tile: 8 rounds a thread, at
// least page-list-rounds (default 8). So each step carries one i32 per
// thread, not one per round: thread j < 5 looks up the j-th of the (at most
// (16 + 64 - 2) / 16 + 1 = 5) pages of the tile two ahead, stores it before
// the next step's barrier into that stage's list, [2][5] i32 after the
// tiles (at byte (128 + 4 x 64) x 136 x 2 = 104448; 104488 bytes in all),
// and the copies read their pages from the list.
// With page-list-rounds=0 every round's entry is carried (8 x i32) and no
// list is allocated (104448 bytes).

// CHECK-LABEL: func.func @prefill(
// CHECK: gpu.func @pa_prefill({{.*}}smem = 104488 : i64, tile_kv = 64 : i64, tile_q = 128 : i64}
// CHECK: %[[RAW:.*]] = gpu.dynamic_shared_memory
// CHECK: %[[LIST:.*]] = memref.view %[[RAW]][%c104448{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x5xi32, #gpu.address_space<workgroup>>
// CHECK: %[[TID:.*]] = gpu.thread_id x
// The prologue: tile lo copied through registers, thread j's entry of tile
// lo + 64 looked up.
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_create_group
// CHECK: %[[AHEAD:.*]] = scf.if %{{.*}} -> (i32) {
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK: nvgpu.device_async_wait
// CHECK-NEXT: gpu.barrier
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c128{{.*}} iter_args(%[[MINE:.*]] = %[[AHEAD]]) -> (i32) {
// CHECK: %[[WRITER:.*]] = arith.cmpi ult, %[[TID]], %c5
// CHECK-NEXT: scf.if %[[WRITER]] {
// CHECK: memref.store %[[MINE]], %[[LIST]][%c1{{.*}}, %[[TID]]] : memref<2x5xi32, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-8: memref.load %[[LIST]][%c1{{.*}}, %{{.*}}] : memref<2x5xi32, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_create_group
// CHECK: scf.if %{{.*}} -> (i32) {
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK: pa.tile.qk
// The second step of the iteration: stage 0's list.
// CHECK: scf.if %{{.*}} -> (i32) {
// CHECK: memref.store %{{.*}}, %[[LIST]][%c0{{.*}}, %[[TID]]]
// CHECK: gpu.barrier
// CHECK-COUNT-8: memref.load %[[LIST]][%c0{{.*}}, %{{.*}}]

// REGS-LABEL: func.func @prefill(
// REGS: gpu.func @pa_prefill({{.*}}smem = 104448 : i64
// REGS-NOT: xi32, #gpu.address_space<workgroup>>
// REGS: scf.for {{.*}} iter_args({{.*}}) -> (i32, i32, i32, i32, i32, i32, i32, i32) {

// BAD: pa-promote-tiles: page-list-rounds must be >= 0 (0: page-table entries always in registers), got -1
func.func @prefill(%q: memref<?x32x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.prefill q(%q, %qi : memref<?x32x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

// Page size 5 (64-key tiles start anywhere in a page): (5 + 62) / 5 + 1 =
// 14 entries; the rows of rounds do not step by a multiple of the page, so
// every round computes its own entry.
// CHECK-LABEL: func.func @p5(
// CHECK: memref.view {{.*}} to memref<2x14xi32, #gpu.address_space<workgroup>>
// CHECK: arith.cmpi ult, %{{.*}}, %c14
// REGS-LABEL: func.func @p5(
// REGS-NOT: xi32, #gpu.address_space<workgroup>>
func.func @p5(%q: memref<?x8x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x5x2x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  pa.prefill q(%q, %qi : memref<?x8x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x5x2x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x128xf16>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 5, kv_heads = 2, head_dim = 128>, causal}
  return
}
