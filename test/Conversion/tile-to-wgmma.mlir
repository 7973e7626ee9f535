// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-mma=wgmma" --pa-promote-tiles | FileCheck %s --check-prefix=PROMOTE --enable-var-scope
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-mma=wgmma" --pa-promote-tiles --pa-tile-to-mma | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-mma=auto" | FileCheck %s --check-prefix=AUTO

// The wgmma prefill (prefill-mma=wgmma: Hopper warpgroup MMAs). Stage 1
// marks the kernel pa.wgmma and picks its shape: 8 warps (two warpgroups)
// of 16 rows, 64-key tiles up to D = 128. Stage 2 stores every tile in the
// 128-byte swizzle layout of wgmma's descriptors (D / 64 column blocks of
// [rows][64], chunk c of row r at c ^ (r % 8)): Q, 2 stages of K and V,
// [384][128] f16 unpadded (98304 bytes), each copy's shared row and column
// from the block's line; after each cp.async wait a fence.proxy.async
// makes the copies visible to the async proxy wgmma reads through, before
// the barrier.
// PROMOTE-LABEL: gpu.func @pa_prefill(
// PROMOTE-SAME: block = array<i64: 256, 1, 1>
// PROMOTE-SAME: smem = 98304 : i64, tile_kv = 64 : i64, tile_q = 128 : i64}
// PROMOTE-SAME: pa.wgmma
// PROMOTE-NOT: pa.smem_swizzle
// PROMOTE: %[[SMEM:.*]] = memref.view {{.*}} to memref<384x128xf16, #gpu.address_space<workgroup>>
// Q chunk at column %col of tile row %r: line (col / 64) * 128 + r, shared
// row line / 2, column (line % 2) * 64 + ((col % 64) ^ (r % 8) * 8).
// PROMOTE: %[[BLK:.*]] = arith.divui %[[COL:.*]], %c64{{.*}} : index
// PROMOTE-NEXT: %[[L0:.*]] = arith.muli %[[BLK]], %c128{{.*}} : index
// PROMOTE-NEXT: %[[LINE:.*]] = arith.addi %[[L0]], %{{.*}} : index
// PROMOTE: %[[HALF:.*]] = arith.divui %[[LINE]], %c2{{.*}} : index
// PROMOTE: %[[ROW:.*]] = arith.addi %c0{{.*}}, %[[HALF]] : index
// PROMOTE: %[[SIDE:.*]] = arith.remui %[[LINE]], %c2{{.*}} : index
// PROMOTE-NEXT: %[[C0:.*]] = arith.muli %[[SIDE]], %c64{{.*}} : index
// PROMOTE-NEXT: %[[C:.*]] = arith.addi %[[C0]], %{{.*}} : index
// PROMOTE: nvgpu.device_async_copy %arg0[{{.*}}, %[[COL]]], %[[SMEM]][%[[ROW]], %[[C]]], 8
// PROMOTE: nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// PROMOTE-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// PROMOTE-NEXT: gpu.barrier
// PROMOTE: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// PROMOTE-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// PROMOTE-NEXT: gpu.barrier

// Stage 3: one descriptor base from shared memory's address (start >> 4,
// leading byte offset 16 >> 4 for K-major Q / K, stride byte offset 1024
// >> 4, 128-byte swizzle: 0x4000004000010000), the warpgroup's Q rows at
// warpgroup * 64 rows * 128 bytes. S = Q K^T is 8 k steps of
// wgmma m64n64k16 with A and B from descriptors (the first without
// accumulator input), committed and waited; the scores pass an empty asm
// statement (no use moves above the wait); P V is 4 k steps of m64n128k16
// with P's registers as A and V transposed (MN-major); the staged store's
// first barrier spans the warpgroup's 128 threads (whose instructions read
// the Q rows it overwrites). No ldmatrix, no mma.sync.
// CHECK-LABEL: gpu.func @pa_prefill(
// CHECK-NOT: nvgpu.ldmatrix
// CHECK-NOT: nvgpu.mma.sync
// CHECK: %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %{{.*}} : memref<384x128xf16, #gpu.address_space<workgroup>> -> index
// CHECK: %[[ADDR:.*]] = arith.index_cast %[[PTR]] : index to i64
// CHECK: %[[SH:.*]] = arith.shrui %[[ADDR]], %c4_i64
// CHECK-NEXT: %[[START:.*]] = arith.andi %[[SH]], %c16383_i64
// CHECK-NEXT: %c4611686293305360384_i64 = arith.constant 4611686293305360384 : i64
// CHECK-NEXT: arith.ori %[[START]], %c4611686293305360384_i64 : i64
// CHECK: scf.for
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $34, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {$0, {{.*}}, $31}, $32, $33, p, 1, 1, 0, 0;\0A}", "{{(=f,)+}}l,l,r"
// CHECK-COUNT-7: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {$0, {{.*}}, $31}, $64, $65, p, 1, 1, 0, 0;
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "", "{{(=f,)+}}0,1,
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {$0, {{.*}}, $63}, {$128, $129, $130, $131}, $132, p, 1, 1, 1;
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK: vector.store {{.*}} {alignment = 4 : i64} : memref<384x128xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK: nvvm.bar.warp.sync
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<384x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>

// auto: wgmma where the op fits it (D = 128), mma.sync where it does not
// (D = 96 below).
// AUTO-LABEL: gpu.func @pa_prefill(
// AUTO-SAME: pa.wgmma
func.func @prefill(%q: memref<?x32x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.prefill q(%q, %qi : memref<?x32x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

// bf16 at D = 256: 32-key tiles (m64n32k16 scores, m64n256k16 for P V).
// PROMOTE-LABEL: gpu.func @pa_prefill(
// PROMOTE-SAME: tile_kv = 32 : i64, tile_q = 128 : i64}
// PROMOTE-SAME: pa.wgmma
// CHECK-LABEL: gpu.func @pa_prefill(
// CHECK: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// AUTO-LABEL: gpu.func @pa_prefill(
// AUTO-SAME: pa.wgmma
func.func @d256(%q: memref<?x8x256xbf16>, %qi: memref<?xi32>, %kv: memref<?x2x4x16x256xbf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x256xbf16>, %l: memref<?x8xf32>) {
  pa.prefill q(%q, %qi : memref<?x8x256xbf16>, memref<?xi32>) kv(%kv : memref<?x2x4x16x256xbf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x256xbf16>, memref<?x8xf32>) {cache = #pa.paged_kv<hnd, page_size = 16, kv_heads = 4, head_dim = 256>, causal}
  return
}
