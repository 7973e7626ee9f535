// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-tile-kv=32" --pa-promote-tiles="smem-layout=pad" --pa-tile-to-mma | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-tile-kv=32" --pa-promote-tiles --pa-tile-to-mma | FileCheck %s --check-prefix=SWZ --enable-var-scope
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-warp-rows=16" --pa-promote-tiles --pa-tile-to-mma | FileCheck %s --check-prefix=QREG

// Stage 3 of the prefill GPU pipeline (after pa-promote-tiles): the tile
// math becomes mma.sync register fragments. No tile op or f32 tile buffer
// is left; S = Q K^T is ldmatrix (of the shared Q and K views' rows) +
// mma.sync m16n8k16; the masks sit under scf.if on masked_if and yield the
// score fragments; the row maxima and sums are quad reductions
// (gpu.subgroup_reduce, cluster 4); P V reads V with ldmatrix.trans; the
// state (m, l of 4 row halves, 2 x 16 acc fragments) is carried by the
// pipelined loop (2 page iter_args + 40 state values) and by its scf.if.
// (The padded rows of smem-layout=pad; SWZ below: the default swizzle.)

// CHECK-LABEL: gpu.func @pa_prefill(
// CHECK-NOT: pa.tile.
// CHECK-NOT: memref.alloca
// CHECK: %[[SMEM:.*]] = memref.view {{.*}} to memref<384x136xf16, #gpu.address_space<workgroup>>
// CHECK: %[[LOOP:.*]]:42 = scf.for {{.*}} -> (i32, i32, f32, f32, f32, f32, f32, f32, f32, f32, vector<2x2xf32>,
// CHECK: nvgpu.ldmatrix %[[SMEM]][{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<384x136xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: scf.if %{{.*}} -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>) {
// CHECK: arith.cmpi sle
// CHECK: gpu.subgroup_reduce maximumf %{{.*}} cluster(size = 4) : (f32) -> f32
// CHECK: llvm.inline_asm asm_dialect = att "ex2.approx.ftz.f32 $0, $1;"
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: nvgpu.ldmatrix %[[SMEM]][{{.*}}] {numTiles = 4 : i32, transpose = true}
// CHECK: scf.if %{{.*}} -> (i32, i32, f32, f32, f32, f32, f32, f32, f32, f32, vector<2x2xf32>,
// CHECK: gpu.subgroup_reduce add %[[LOOP]]#6 cluster(size = 4) : (f32) -> f32
// The store goes through the warp's Q rows in shared memory: every lane
// done reading them, the o pairs written there, the warp's lanes synced,
// then whole rows out in 16-byte chunks.
// CHECK: nvvm.bar.warp.sync
// CHECK: vector.store {{.*}}, %[[SMEM]][{{.*}}] {alignment = 4 : i64} : memref<384x136xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK: nvvm.bar.warp.sync
// CHECK: vector.load %[[SMEM]][{{.*}}] {alignment = 16 : i64} : memref<384x136xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<?x32x128xf16>, vector<8xf16>
// CHECK-NOT: pa.tile.

// Swizzled rows (the default at D = 128, kernel attribute
// pa.smem_swizzle): [384][128] f16, and every ldmatrix reads chunk
// (2 (kk % 4) + half) ^ (row % 8) of 128-byte line kk / 4 of its row, as
// line * 64 + ((half * 8 ^ (row % 8) * 8) ^ (kk % 4) * 16) elements;
// the staged o store writes and reads Q's rows at swizzled columns too.
// SWZ-LABEL: gpu.func @pa_prefill(
// SWZ-SAME: pa.smem_swizzle
// SWZ: %[[SMEM:.*]] = memref.view {{.*}} to memref<384x128xf16, #gpu.address_space<workgroup>>
// SWZ: scf.for
// SWZ: %[[X:.*]] = arith.xori %{{.*}}, %c{{16|32|48}}{{(_[0-9]+)?}} : index
// SWZ-NEXT: %[[LINE:.*]] = arith.constant {{0|64}} : index
// SWZ-NEXT: %[[COL:.*]] = arith.addi %[[LINE]], %[[X]] : index
// SWZ-NEXT: nvgpu.ldmatrix %[[SMEM]][%{{.*}}, %[[COL]]] {numTiles = 4 : i32, transpose = false}
// SWZ: nvgpu.ldmatrix %[[SMEM]][{{.*}}] {numTiles = 4 : i32, transpose = true}
// SWZ: nvvm.bar.warp.sync
// SWZ: %[[OC:.*]] = arith.xori
// SWZ-NEXT: vector.store {{.*}}, %[[SMEM]][%{{.*}}, %[[OC]]] {alignment = 4 : i64} : memref<384x128xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// SWZ: nvvm.bar.warp.sync
// SWZ: %[[LC:.*]] = arith.xori
// SWZ-NEXT: vector.load %[[SMEM]][%{{.*}}, %[[LC]]] {alignment = 16 : i64} : memref<384x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>

// With 16 rows a warp and D = 128 the Q fragments (8 k steps) are loaded
// once before the loop and held in registers.
// QREG-LABEL: gpu.func @pa_prefill(
// QREG-COUNT-8: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// QREG: scf.for
func.func @prefill(%q: memref<?x32x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.prefill q(%q, %qi : memref<?x32x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

// bf16, soft-cap and ALiBi: the score modifiers apply on every tile (tanh
// through ex2, the slope times the distance as an FMA), bf16 fragments.
// CHECK-LABEL: gpu.func @pa_prefill(
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: arith.sitofp
// CHECK: llvm.intr.fma
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @mods(%q: memref<?x8x64xbf16>, %qi: memref<?xi32>, %kv: memref<?x2x4x16x64xbf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %al: memref<8xf32>, %o: memref<?x8x64xbf16>, %l: memref<?x8xf32>) {
  pa.prefill q(%q, %qi : memref<?x8x64xbf16>, memref<?xi32>) kv(%kv : memref<?x2x4x16x64xbf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) alibi(%al : memref<8xf32>) outs(%o, %l : memref<?x8x64xbf16>, memref<?x8xf32>) {cache = #pa.paged_kv<hnd, page_size = 16, kv_heads = 4, head_dim = 64>, causal, logits_soft_cap = 30.0 : f32}
  return
}
