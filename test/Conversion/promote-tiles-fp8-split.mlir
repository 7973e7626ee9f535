// RUN: pa-opt %s --convert-pa-to-gpu --pa-promote-tiles | FileCheck %s --check-prefix=REG
// RUN: pa-opt %s --convert-pa-to-gpu="decode-kv-stages=3" --pa-promote-tiles | FileCheck %s --check-prefix=ST3

// The page lookups of the split-KV fp8 decode (pa_decode_partial: the
// tensor-core decode over an e4m3 cache, GQA 4, D 128, 64-key tiles; the
// one-pass kernel's: test/Conversion/promote-tiles-fp8.mlir). A work
// item's keys may start anywhere, so a warp's 16 keys touch up to 2 pages.
// A lane copies 4 chunk rounds of them a tile (one 128-byte row is 8
// chunks), under page-list-rounds = 8. At 2 stages every round carries
// its own page-table entry (no shuffle). At 3 stages the rounds count
// twice (S - 1, where fp8 is widened in registers): lane j looks up the
// warp's j-th page and the rounds' copies take it by gpu.shuffle idx, one
// i32 carried (167 registers at sm_90a instead of 186: 3 CTAs an SM).
// REG:       gpu.func @pa_decode_partial(
// REG-NOT:   gpu.shuffle
// REG:       scf.for {{.*}} -> (i32, i32, i32, i32) {
// ST3:       gpu.func @pa_decode_partial({{.*}}kv_stages = 3
// ST3:       scf.for %{{.*}} iter_args(%[[MINE:.*]] = %{{.*}}) -> (i32) {
// ST3-COUNT-4: gpu.shuffle  idx %[[MINE]], %{{.*}}, %{{.*}} : i32
// ST3:       nvgpu.device_async_create_group
func.func @partial(%q: memref<4x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %ks: memref<1xf32>, %vs: memref<8xf32>, %ip: memref<5xi32>, %ix: memref<?xi32>, %lp: memref<4xi32>, %wi: memref<5xi32>, %wr: memref<?xi32>, %ws: memref<?xi32>, %we: memref<?xi32>, %o: memref<?x32x128xf32>, %l: memref<?x32xf32>) {
  pa.decode_partial q(%q : memref<4x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>) scales(%ks, %vs : memref<1xf32>, memref<8xf32>) pages(%ip, %ix, %lp : memref<5xi32>, memref<?xi32>, memref<4xi32>) work(%wi, %wr, %ws, %we : memref<5xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf32>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}
