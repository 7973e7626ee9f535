// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="decode-kernel=tensor-core" -verify-diagnostics | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu -verify-diagnostics | FileCheck %s --check-prefix=AUTO
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="decode-kernel=tensor-core decode-tile-kv=128" -verify-diagnostics | FileCheck %s --check-prefix=KV128
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="decode-kernel=tensor-core" --pa-promote-tiles --pa-tile-to-mma -verify-diagnostics | FileCheck %s --check-prefix=MMA
// RUN: not pa-opt %s --split-input-file --convert-pa-to-gpu="decode-kernel=simd" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="decode-kernel=tensor-core decode-kv-stages=3" --pa-promote-tiles | FileCheck %s --check-prefix=STAGES

// Stage 1 of the tensor-core decode: pa.decode is the prefill of one query
// per request, tiled by the same emitPrefillQueryTile: a CTA per (request,
// KV head), the group's query heads as the rows of one m16 block, a loop
// over KV tiles of 64 keys that 4 warps split (kv_warps = 4 in the ABI);
// same ABI kind, arguments and grid as the CUDA-core kernel. The window
// starts the loop at the tile-aligned first visible key.

// CHECK-LABEL: func.func @decode(
// CHECK: gpu.launch_func @pa_kernels::@pa_decode blocks in (%{{.*}}, %c8, %c1)
// CHECK: gpu.func @pa_decode({{.*}}) kernel attributes {pa.kernel = {args = ["q", "kv", "kv_indptr", "kv_indices", "kv_last_page_len", "o", "lse"], block = array<i64: 128, 1, 1>, grid = ["batch", "kv_heads", 1], kind = "decode", kv_warps = 4 : i64, smem = 0 : i64, tile_kv = 64 : i64, tile_q = 16 : i64}}
// CHECK-DAG: %[[QT:.*]] = memref.alloca() : memref<16x128xf32>
// CHECK-DAG: %[[S:.*]] = memref.alloca() : memref<16x64xf32>
// The CTAs of a request's KV heads are adjacent: linear id x + y X of the
// grid's plane is request id / Hkv, KV head id % Hkv.
// CHECK-DAG: %[[GX:.*]] = gpu.grid_dim x
// CHECK-DAG: %[[GY:.*]] = gpu.grid_dim y
// CHECK-DAG: %[[BY:.*]] = gpu.block_id y
// CHECK-DAG: %[[YX:.*]] = arith.muli %[[BY]], %[[GX]]
// CHECK-DAG: %[[BX:.*]] = gpu.block_id x
// CHECK: %[[LIN:.*]] = arith.addi %[[BX]], %[[YX]]
// CHECK-NEXT: %[[B:.*]] = arith.divui %[[LIN]], %[[GY]]
// CHECK-NEXT: %[[HK:.*]] = arith.remui %[[LIN]], %[[GY]]
// CHECK: %[[ROW:.*]] = arith.addi %[[B]], %c0
// CHECK: pa.tile.load_q q(%{{.*}}) rows(%[[ROW]], %c1{{(_[0-9]+)?}}) kv_head(%[[HK]]) outs(%[[QT]] : memref<16x128xf32>) {group = 4 : i64
// CHECK: pa.tile.init_state
// CHECK: arith.divui %{{.*}}, %c64
// CHECK: scf.for %[[T0:.*]] = %{{.*}} to %[[LEN:.*]] step %c64
// CHECK-NEXT: pa.tile.gather_kv {{.*}} request(%[[B]]) tokens(%[[T0]], %[[LEN]]) kv_head(%[[HK]])
// CHECK-NEXT: pa.tile.qk ins(%[[QT]], %{{.*}}) outs(%[[S]] : memref<16x64xf32>)
// CHECK: pa.tile.mask scores(%[[S]] {{.*}} masked_if(%{{.*}}) {group = 4 : i64, window = 100 : i64}
// CHECK-NEXT: pa.tile.softmax_update
// CHECK-NEXT: pa.tile.pv
// CHECK: pa.tile.store {{.*}} rows(%[[ROW]], %c1{{(_[0-9]+)?}}) kv_head(%[[HK]])
// The default (auto) takes the tensor-core decode for a group of 4 at f16.
// AUTO-LABEL: func.func @decode(
// AUTO: kind = "decode", kv_warps = 4 : i64
// KV128-LABEL: func.func @decode(
// KV128: tile_kv = 128 : i64, tile_q = 16 : i64
// Stages 2-3: the warps' states merge through shared memory at the store:
// the copies in flight land (an empty group waited on) and every warp is
// past its last tile before the scratch (an f32 view of the same dynamic
// shared memory) is written; the warps with key offset 0 read the others'
// (m, l, acc) after a second barrier and store. D = 128: the rows are
// XOR-swizzled, unpadded (pa.smem_swizzle): (16 + 4 x 64) x 256 bytes.
// The group of 4 has narrow rows (tile-to-mma-narrow.mlir): the scratch
// holds 3 warps x 32 lanes x (2 x 2 m / l + 8 O^T fragments x 4) floats,
// and o is written element by element from the O^T layout.
// MMA-LABEL: func.func @decode(
// MMA: gpu.func @pa_decode({{.*}}smem = 69632 : i64{{.*}}pa.smem_swizzle
// MMA: nvgpu.mma.sync
// After the KV loop (whose steps commit their copies as empty groups too:
// the copies sit in scf.if branches), the row sums' reduction:
// MMA: gpu.subgroup_reduce  add
// MMA: %[[NONE:.*]] = nvgpu.device_async_create_group{{ *$}}
// MMA-NEXT: nvgpu.device_async_wait %[[NONE]] {numGroups = 0 : i32}
// MMA-NEXT: gpu.barrier
// MMA: memref.view {{.*}} to memref<3456xf32, #gpu.address_space<workgroup>>
// MMA: scf.if
// MMA: vector.store {{.*}} : memref<3456xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// MMA: gpu.barrier
// MMA: scf.if
// MMA: vector.load {{.*}} : memref<3456xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// MMA: memref.store {{.*}} : memref<?x32x128xf16>
// BAD: convert-pa-to-gpu: decode-kernel must be auto, cuda-core or tensor-core, got 'simd'
// Three K/V stages (kv_stages in the ABI): Q waits behind the two K/V
// groups issued before the loop, each step waits for all but the newest
// group, and the loop takes three tiles an iteration (the second and third
// under scf.if), so shared memory holds Q + 3 x (K, V) tiles.
// STAGES-LABEL: func.func @decode(
// STAGES: gpu.func @pa_decode({{.*}}kv_stages = 3 : i64, kv_warps = 4 : i64, smem = 102400 : i64
// STAGES: nvgpu.device_async_wait %{{.*}} {numGroups = 2 : i32}
// STAGES: scf.for
// STAGES: nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// STAGES: scf.if
// STAGES: nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// STAGES: scf.if
// STAGES: nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
func.func @decode(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.decode q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, window = 100 : i64}
  return
}

// -----

// decode_partial: a CTA per work item (items past work_indptr[B] exit),
// the item's keys [work_start, work_end) and row w of the partial states.
// The item's three entries load before the check (in bounds: a CTA per
// entry), so that they do not wait for work_indptr[B]; the check reads the
// request too (request < 0 exits), which keeps its load above the branch.
// CHECK-LABEL: func.func @partial(
// CHECK: gpu.func @pa_decode_partial({{.*}}grid = ["work_capacity", "kv_heads", 1], kind = "decode_partial", kv_warps = 4 : i64
// CHECK: %[[W:.*]] = arith.divui %{{.*}}, %grid_dim_y
// CHECK: %[[ITEMS:.*]] = memref.load %arg5
// CHECK-NEXT: %[[N:.*]] = arith.index_cast %[[ITEMS]]
// CHECK: %[[REQ:.*]] = memref.load %arg6[%[[W]]] : memref<?xi32>
// CHECK-NEXT: %[[R:.*]] = arith.index_cast %[[REQ]]
// CHECK: memref.load %arg7[%[[W]]] : memref<?xi32>
// CHECK: memref.load %arg8[%[[W]]] : memref<?xi32>
// CHECK: %[[HAS:.*]] = arith.cmpi sge, %[[R]], %c0{{.*}} : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[W]], %[[N]] : index
// CHECK: %[[GO:.*]] = arith.andi %[[IN]], %[[HAS]] : i1
// CHECK: scf.if %[[GO]] {
// CHECK: pa.tile.load_q
// CHECK: scf.for
// CHECK: pa.tile.store {{.*}} rows(%[[W]], %c1{{.*}}) kv_head
// CHECK-SAME: memref<?x32x128xf32>
// MMA-LABEL: func.func @partial(
// MMA: memref.store {{.*}} : memref<?x32x128xf32>
func.func @partial(%q: memref<4x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<5xi32>, %ix: memref<?xi32>, %lp: memref<4xi32>, %wi: memref<5xi32>, %wr: memref<?xi32>, %ws: memref<?xi32>, %we: memref<?xi32>, %o: memref<?x32x128xf32>, %l: memref<?x32xf32>) {
  pa.decode_partial q(%q : memref<4x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<5xi32>, memref<?xi32>, memref<4xi32>) work(%wi, %wr, %ws, %we : memref<5xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf32>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

// decode_partial and the merge of its states in one kernel (split-kv-merge
// fused, the default): after the item's tile is stored, the arrival count
// and the last CTA's merge of the group's 4 heads (the tile store's rows)
// follow in plain IR, which pa-promote-tiles and pa-tile-to-mma leave as
// they are.
// The work item and the previous item's request (for the requests without
// items, written at the end) load before the KV loop, so that the kernel's
// tail reads no work list.
// CHECK-LABEL: func.func @split_fused(
// CHECK: gpu.launch_func @pa_kernels::@pa_decode_split
// CHECK: gpu.func @pa_decode_split({{.*}}kind = "decode_split", kv_warps = 4 : i64
// CHECK: memref.load %arg6[%[[X:.*]]] : memref<?xi32>
// CHECK: %[[PREVX:.*]] = arith.select %{{.*}}, %c0{{.*}}, %{{.*}} : index
// CHECK-NEXT: memref.load %arg6[%[[PREVX]]] : memref<?xi32>
// CHECK: scf.for
// CHECK: pa.tile.store
// CHECK: nvvm.memory.barrier <gpu>
// CHECK: memref.atomic_rmw addi
// CHECK: nvvm.barrier #nvvm.reduction<or>
// CHECK-NOT: memref.load %arg6
// CHECK-NOT: memref.load %arg5
// CHECK: gpu.return
// MMA-LABEL: func.func @split_fused(
// MMA: mma.sync
// MMA: memref.atomic_rmw addi
// MMA: nvvm.barrier #nvvm.reduction<or>
func.func @split_fused(%q: memref<4x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<5xi32>, %ix: memref<?xi32>, %lp: memref<4xi32>, %wi: memref<5xi32>, %wr: memref<?xi32>, %ws: memref<?xi32>, %we: memref<?xi32>, %op: memref<?x32x128xf32>, %lpart: memref<?x32xf32>, %o: memref<4x32x128xf16>, %l: memref<4x32xf32>) {
  pa.decode_partial q(%q : memref<4x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<5xi32>, memref<?xi32>, memref<4xi32>) work(%wi, %wr, %ws, %we : memref<5xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%op, %lpart : memref<?x32x128xf32>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  pa.merge_segments states(%op, %lpart : memref<?x32x128xf32>, memref<?x32xf32>) segments(%wi : memref<5xi32>) outs(%o, %l : memref<4x32x128xf16>, memref<4x32xf32>)
  return
}

// -----

// Head dim 96 (no power-of-two split into 16-byte lanes): auto takes the
// tensor-core decode even for MHA.
// AUTO-LABEL: func.func @d96(
// AUTO: kind = "decode", kv_warps = 4 : i64
// AUTO: memref.alloca() : memref<16x96xf32>
func.func @d96(%q: memref<?x4x96xbf16>, %kv: memref<?x2x16x4x96xbf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x4x96xbf16>, %l: memref<?x4xf32>) {
  pa.decode q(%q : memref<?x4x96xbf16>) kv(%kv : memref<?x2x16x4x96xbf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x4x96xbf16>, memref<?x4xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 4, head_dim = 96>}
  return
}
