// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-tile-kv=32" --pa-promote-tiles="smem-layout=pad" | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-tile-kv=32" --pa-promote-tiles | FileCheck %s --check-prefix=SWZ --enable-var-scope
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-tile-kv=32" --pa-promote-tiles="smem-layout=pad" | %python -c "import re, sys; t = sys.stdin.read(); sys.exit(0 if re.search(r'%%(\w+) = arith\.cmpi ult, %%\w+, %%c384\w* : index\n\s+scf\.if %%\1 \{\n(?:[^{}\n]*\n)*?[^{}\n]*nvgpu\.device_async_copy', t) else 'no guarded partial round of K/V copies')"

// Stage 2 of the prefill GPU pipeline (after convert-pa-to-gpu): Q, K and V
// move to dynamic shared memory, [256 + 4 x 32][128 + 8] f16 (Q, then K and
// V of two stages, rows padded by 16 bytes); load_q becomes cp.async copies
// and its scale moves onto pa.tile.qk; the KV loop handles two tiles per
// iteration (stage 0, then stage 1 under scf.if), each step waiting for its
// own tile (cp.async.wait_group 0) behind one barrier, then issuing the
// next tile's copies into the other stage through the page table, looking
// up the pages of the tile after it (carried as i32) and reading its own
// tile from its stage's views; no second barrier. The ABI and the launch
// get the shared memory size: 384 x 136 x 2 = 104448 bytes. (The padded
// rows of smem-layout=pad.)
//
// The default layout at D = 128 (smem-layout=swizzle): unpadded rows, 384
// x 256 = 98304 bytes, the kernel marked pa.smem_swizzle, and every copy
// into shared memory lands at column col ^ (row % 8) * 8 of its row.
// SWZ-LABEL: func.func @prefill(
// SWZ: gpu.func @pa_prefill({{.*}}smem = 98304 : i64{{.*}}pa.smem_swizzle
// SWZ: %[[SMEM:.*]] = memref.view %{{.*}} to memref<384x128xf16, #gpu.address_space<workgroup>>
// SWZ: %[[R8:.*]] = arith.andi %[[ROW:.*]], %c7{{.*}} : index
// SWZ: %[[S:.*]] = arith.muli %[[R8]], %c8{{.*}} : index
// SWZ-NEXT: %[[COL:.*]] = arith.xori %{{.*}}, %[[S]] : index
// SWZ: nvgpu.device_async_copy %{{.*}}[{{.*}}], %[[SMEM]][%[[ROW]], %[[COL]]], 8
// SWZ-LABEL: func.func @d96(
// SWZ-NOT: pa.smem_swizzle

// CHECK-LABEL: func.func @prefill(
// CHECK: %[[SMEMSZ:.*]] = arith.constant 104448 : i32
// CHECK: gpu.launch_func @pa_kernels::@pa_prefill {{.*}} dynamic_shared_memory_size %[[SMEMSZ]]
// CHECK: gpu.func @pa_prefill({{.*}}) kernel attributes {pa.kernel = {{{.*}}smem = 104448 : i64, tile_kv = 32 : i64, tile_q = 256 : i64}
// CHECK: %[[RAW:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[SMEM:.*]] = memref.view %[[RAW]]{{.*}} to memref<384x136xf16, #gpu.address_space<workgroup>>
// CHECK: %[[Q:.*]] = memref.subview %[[SMEM]][0, 0] [256, 128] [1, 1]
// CHECK: %[[K0:.*]] = memref.subview %[[SMEM]][256, 0] [32, 128] [1, 1]
// CHECK: %[[V0:.*]] = memref.subview %[[SMEM]][320, 0] [32, 128] [1, 1]
// CHECK: %[[K1:.*]] = memref.subview %[[SMEM]][288, 0] [32, 128] [1, 1]
// CHECK: %[[V1:.*]] = memref.subview %[[SMEM]][352, 0] [32, 128] [1, 1]
// CHECK-NOT: memref.alloca() : memref<32x128xf32>
// CHECK: nvgpu.device_async_copy %{{.*}}[{{.*}}], %[[SMEM]][{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x32x128xf16> to memref<384x136xf16, #gpu.address_space<workgroup>>
// CHECK: %[[QGROUP:.*]] = nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_copy %{{.*}}[{{.*}}], %[[SMEM]][{{.*}}], 8, %{{.*}} {bypassL1} : memref<?xf16> to
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_wait %[[QGROUP]] {numGroups = 1 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %[[HI:.*]] step %c64{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (i32, i32) {
// CHECK-NEXT: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.device_async_copy
// CHECK: nvgpu.device_async_create_group
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK: pa.tile.qk ins(%[[Q]], %[[K0]] : {{.*}}) outs(%{{.*}}) {scale = 0.0883883{{[0-9]*}} : f32}
// CHECK: pa.tile.mask
// CHECK: pa.tile.pv ins(%{{.*}}, %[[V0]] :
// CHECK-NOT: gpu.barrier
// CHECK: %[[T1:.*]] = arith.addi %[[T]], %c32
// CHECK: %[[MORE:.*]] = arith.cmpi slt, %[[T1]], %[[HI]]
// CHECK: scf.if %[[MORE]] -> (i32, i32) {
// CHECK-NEXT: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: pa.tile.qk ins(%[[Q]], %[[K1]] :
// CHECK: pa.tile.pv ins(%{{.*}}, %[[V1]] :
// CHECK: pa.tile.store
func.func @prefill(%q: memref<?x32x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.prefill q(%q, %qi : memref<?x32x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

// D = 96 with 32-key tiles: 32 x 12 chunks of 16 bytes are 1.5 rounds of 256
// threads. The threads past the tile in the second round copy nothing (a
// zero-fill there would land outside the tile): their copies sit under an
// `scf.if` on `tid + 256 < 384` (checked by the second RUN line's regex).
// CHECK-LABEL: func.func @d96(
// CHECK: gpu.func @pa_prefill(
// CHECK: memref.view {{.*}} to memref<384x104xf16, #gpu.address_space<workgroup>>
func.func @d96(%q: memref<?x8x96xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x2x96xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x96xf16>, %l: memref<?x8xf32>) {
  pa.prefill q(%q, %qi : memref<?x8x96xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x2x96xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x96xf16>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 2, head_dim = 96>, causal}
  return
}
