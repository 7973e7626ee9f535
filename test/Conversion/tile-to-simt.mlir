// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu | FileCheck %s --check-prefix=STAGE1 --enable-var-scope
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu --pa-promote-tiles | FileCheck %s --check-prefix=STAGE2 --enable-var-scope
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu --pa-promote-tiles --pa-tile-to-simt | FileCheck %s --check-prefix=STAGE3 --enable-var-scope

// The CUDA-core decode, stage by stage (docs/GPU.md, "CUDA-core decode").
// MHA (decode-kernel=auto's CUDA-core case) with a soft-cap and a window:
// stage 1 (convert-pa-to-gpu) is the tile IR of the request's query for the
// CTA's one head, a kernel marked pa.simt whose ABI gives 16-byte lanes and
// 32-key tiles split over 4 warps (kv_warps 4), 3 K/V stages.
// STAGE1-LABEL: gpu.func @pa_decode(
// STAGE1-SAME: grid = ["batch", "kv_heads", 1], heads_per_cta = 1 : i64, kind = "decode", kv_stages = 3 : i64, kv_warps = 4 : i64, lane_bytes = 16 : i64, smem = 0 : i64, tile_kv = 32 : i64, tile_q = 1 : i64, tokens_in_flight = 4 : i64}, pa.simt}
// STAGE1: pa.tile.load_q {{.*}} outs(%{{.*}} : memref<1x128xf32>) {group = 1 : i64
// STAGE1: scf.for
// STAGE1: pa.tile.gather_kv {{.*}} outs(%{{.*}}, %{{.*}} : memref<32x128xf32>, memref<32x128xf32>)
// STAGE1: pa.tile.qk
// STAGE1: pa.tile.mask {{.*}} masked_if(%{{.*}}) {group = 1 : i64, logits_soft_cap = 3.000000e+01 : f32, window = 256 : i64}
// STAGE1: pa.tile.softmax_update
// STAGE1: pa.tile.pv
// STAGE1: pa.tile.store

// Stage 2 (pa-promote-tiles): Q and three stages of warp-local K / V rows in
// swizzled shared memory ([1 + 6 x 32][128] f16) behind cp.async; the loop
// steps three tiles at a time.
// STAGE2-LABEL: gpu.func @pa_decode(
// STAGE2-SAME: smem = 49408 : i64
// STAGE2: memref.view {{.*}} to memref<193x128xf16, #gpu.address_space<workgroup>>
// STAGE2: nvgpu.device_async_copy
// STAGE2: scf.for {{.*}} step %c96
// STAGE2: pa.tile.qk ins(%{{.*}}, %{{.*}} : memref<1x128xf16, strided<[128, 1]>, #gpu.address_space<workgroup>>, memref<32x128xf16, strided<[128, 1], offset: {{[0-9]+}}>, #gpu.address_space<workgroup>>)

// Stage 3 (pa-tile-to-simt): no tile op is left. q's chunk is read once
// before the loop; the loop carries the 4 page entries of the next tiles
// and the state (m, l, a vector<8xf32> accumulator); per key a 16-byte
// shared load and a dot product reduced over the 16 lanes of its group;
// the soft-cap (tanh through ex2) and the window test (i32) under scf.if on
// masked_if; the V chunks; at the store the copies drain, the lane groups'
// states go through shared memory behind a barrier, and the CTA merges
// them.
// STAGE3-LABEL: gpu.func @pa_decode(
// STAGE3-NOT: pa.tile.
// STAGE3: %[[SMEM:.*]] = memref.view {{.*}} to memref<193x128xf16, #gpu.address_space<workgroup>>
// STAGE3: vector.load %[[SMEM]][{{.*}}] {alignment = 16 : i64} : memref<193x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// STAGE3: scf.for {{.*}} -> (i32, i32, i32, i32, f32, f32, vector<8xf32>)
// STAGE3: vector.load %[[SMEM]][{{.*}}] {alignment = 16 : i64} : memref<193x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// STAGE3: gpu.subgroup_reduce add %{{.*}} cluster(size = 16) : (f32) -> f32
// STAGE3: scf.if %{{.*}} -> (f32, f32, f32, f32) {
// STAGE3: ex2.approx.ftz.f32
// STAGE3: arith.cmpi slt, %{{.*}}, %c256_i32 : i32
// STAGE3: } else {
// STAGE3: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// STAGE3-NEXT: gpu.barrier
// STAGE3: vector.store %{{.*}} : memref<{{[0-9]+}}xf32, #gpu.address_space<workgroup>>, vector<8xf32>
// STAGE3: gpu.barrier
// STAGE3: scf.for
// STAGE3: memref.store {{.*}} : memref<?x8x128xf16>
func.func @mha(%q: memref<?x8x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  pa.decode q(%q : memref<?x8x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x128xf16>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, logits_soft_cap = 30.0 : f32, window = 256 : i64}
  return
}

// -----

// f32 data (which only the CUDA-core decode takes), 2 heads of 64 dims with
// ALiBi: 32-byte lanes (two 16-byte chunks of 4 floats a lane, 8 lanes a
// row), the slopes of the tile's 2 heads loaded before the loop, per key
// reductions over the 8 lanes.
// STAGE1-LABEL: gpu.func @pa_decode(
// STAGE1-SAME: heads_per_cta = 2 : i64, kind = "decode", kv_warps = 4 : i64, lane_bytes = 32 : i64, smem = 0 : i64, tile_kv = 64 : i64, tile_q = 2 : i64
// STAGE2-LABEL: gpu.func @pa_decode(
// STAGE2: memref.view {{.*}} to memref<258x64xf32, #gpu.address_space<workgroup>>
// STAGE3-LABEL: gpu.func @pa_decode(
// STAGE3-COUNT-2: memref.load %{{.*}}[%{{.*}}] : memref<4xf32>
// STAGE3: vector.load {{.*}} : memref<258x64xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// STAGE3: scf.for
// STAGE3: gpu.subgroup_reduce add %{{.*}} cluster(size = 8) : (f32) -> f32
func.func @f32_alibi(%q: memref<?x4x64xf32>, %kv: memref<?x2x16x2x64xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %al: memref<4xf32>, %o: memref<?x4x64xf32>, %l: memref<?x4xf32>) {
  pa.decode q(%q : memref<?x4x64xf32>) kv(%kv : memref<?x2x16x2x64xf32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) alibi(%al : memref<4xf32>) outs(%o, %l : memref<?x4x64xf32>, memref<?x4xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 2, head_dim = 64>}
  return
}
