// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-tile-kv=32" | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu | FileCheck %s --check-prefix=DEFAULT
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-warps=4 prefill-tile-kv=32" | FileCheck %s --check-prefix=SHAPE

// Stage 1 of the prefill GPU pipeline: pa.prefill becomes a kernel over
// (query tile, KV head, request) whose body is the tile IR of its query
// tile, with f32 tile buffers that the next stages replace; the ABI names
// the grid symbols the runtime resolves and the tile shape (the shared
// memory is set by pa-promote-tiles, test/Conversion/promote-tiles.mlir).

// CHECK-LABEL: func.func @prefill(
// CHECK: gpu.launch_func @pa_kernels::@pa_prefill blocks in ({{.*}}) threads in ({{.*}}) args(
// CHECK-LABEL: gpu.module @pa_kernels
// The default shape at D = 128: 8 warps x 32 rows over 64-key tiles.
// DEFAULT: gpu.func @pa_prefill({{.*}}) kernel attributes {pa.kernel = {{{.*}}block = array<i64: 256, 1, 1>{{.*}}tile_kv = 64 : i64, tile_q = 256 : i64}
// CHECK: gpu.func @pa_prefill({{.*}}) kernel attributes {pa.kernel = {args = ["q", "qo_indptr", "kv", "kv_indptr", "kv_indices", "kv_last_page_len", "o", "lse"], block = array<i64: 256, 1, 1>, grid = ["q_tiles", "kv_heads", "batch"], kind = "prefill", smem = 0 : i64, tile_kv = 32 : i64, tile_q = 256 : i64}
// CHECK-DAG: %[[QT:.*]] = memref.alloca() : memref<256x128xf32>
// CHECK-DAG: %[[S:.*]] = memref.alloca() : memref<256x32xf32>
// CHECK-DAG: %[[X:.*]] = gpu.block_id x
// CHECK-DAG: %[[HK:.*]] = gpu.block_id y
// CHECK-DAG: %[[B:.*]] = gpu.block_id z
// The CTAs past their request's query tiles exit (their first query is
// qo_len); causal runs the last tiles (most keys) first.
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[X]], %{{.*}} : index
// CHECK: arith.subi %{{.*}}, %[[X]]
// CHECK: %[[I0:.*]] = arith.select %[[IN]]
// CHECK: %[[GO:.*]] = arith.cmpi ult, %[[I0]], %{{.*}} : index
// CHECK: scf.if %[[GO]] {
// CHECK: pa.tile.load_q q(%{{.*}}) rows(%{{.*}}) kv_head(%[[HK]]) outs(%[[QT]] : memref<256x128xf32>) {group = 4 : i64, scale = 0.0883883{{[0-9]*}} : f32}
// CHECK: pa.tile.init_state
// CHECK: %[[HI:.*]] = arith.minsi
// CHECK: scf.for %[[T0:.*]] = %{{.*}} to %[[HI]] step %c32
// CHECK-NEXT: pa.tile.gather_kv {{.*}} request(%[[B]]) tokens(%[[T0]], %[[HI]]) kv_head(%[[HK]])
// CHECK-NEXT: pa.tile.qk ins(%[[QT]], %{{.*}}) outs(%[[S]] : memref<256x32xf32>)
// CHECK: pa.tile.mask scores(%[[S]] {{.*}} masked_if(%{{.*}}) {causal, group = 4 : i64}
// CHECK-NEXT: pa.tile.softmax_update
// CHECK-NEXT: pa.tile.pv
// CHECK: pa.tile.store
// SHAPE: block = array<i64: 128, 1, 1>
// SHAPE-SAME: tile_kv = 32 : i64, tile_q = 128 : i64
func.func @prefill(%q: memref<?x32x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.prefill q(%q, %qi : memref<?x32x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

// Every optional operand has a role, in the op's operand order; the mask
// reads them all, and with a custom mask every KV tile needs it (no
// masked_if).
// CHECK-LABEL: func.func @prefill_all(
// CHECK: gpu.func @pa_prefill({{.*}}) kernel attributes {pa.kernel = {args = ["q", "qo_indptr", "k", "v", "kv_indptr", "kv_indices", "kv_last_page_len", "q_positions", "custom_mask", "mask_indptr", "alibi_slopes", "o", "lse"]
// CHECK: pa.tile.gather_kv kv(%{{.*}}, %{{.*}} : memref<?x16x4x64xbf16>, memref<?x16x4x64xbf16>)
// CHECK: pa.tile.mask {{.*}} positions(%{{.*}} : memref<?xi32>) alibi(%{{.*}} : memref<8xf32>) mask(%{{.*}} : memref<?xi8>, %{{.*}}, %{{.*}}, %{{.*}}) {group = 2 : i64}
func.func @prefill_all(%q: memref<?x8x64xbf16>, %qi: memref<?xi32>, %k: memref<?x16x4x64xbf16>, %v: memref<?x16x4x64xbf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %pos: memref<?xi32>, %m: memref<?xi8>, %mi: memref<?xi32>, %al: memref<8xf32>, %o: memref<?x8x64xbf16>, %l: memref<?x8xf32>) {
  pa.prefill q(%q, %qi : memref<?x8x64xbf16>, memref<?xi32>) kv(%k, %v : memref<?x16x4x64xbf16>, memref<?x16x4x64xbf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) positions(%pos : memref<?xi32>) mask(%m, %mi : memref<?xi8>, memref<?xi32>) alibi(%al : memref<8xf32>) outs(%o, %l : memref<?x8x64xbf16>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 4, head_dim = 64>}
  return
}

// -----

// pa.prefill_partial: a CTA per (work item x, KV head y, query tile z of the
// item). The item's seven entries give the request, its queries (the
// tile's first is qo_start + z * queries per tile), its keys (the KV loop
// runs over [max(lo, kv_start), min(hi, kv_end)) and the masks stop at
// min(kv_len, kv_end)) and the partial rows (row0 = partial_row + (i0 -
// qo_start) * stride, stored with that stride into the f32 states).
// CHECK-LABEL: func.func @prefill_partial(
// CHECK: gpu.launch_func @pa_kernels::@pa_prefill_partial blocks in (%{{.*}}, %c8, %{{.*}})
// CHECK: gpu.func @pa_prefill_partial({{.*}}) kernel attributes {pa.kernel = {args = ["q", "qo_indptr", "kv", "kv_indptr", "kv_indices", "kv_last_page_len", "work_request", "work_qo_start", "work_qo_end", "work_kv_start", "work_kv_end", "work_partial_row", "work_partial_stride", "o_part", "lse_part"], block = array<i64: 256, 1, 1>, grid = ["work_capacity", "kv_heads", "q_tiles"], kind = "prefill_partial", smem = 0 : i64, tile_kv = 32 : i64, tile_q = 256 : i64}
// CHECK: %[[W:.*]] = gpu.block_id x
// CHECK: %[[Z:.*]] = gpu.block_id z
// CHECK: memref.load %{{.*}}[%[[W]]] : memref<?xi32>
// CHECK: memref.load %{{.*}}[%[[W]]] : memref<?xi32>
// CHECK: memref.load %{{.*}}[%[[W]]] : memref<?xi32>
// CHECK: memref.load %{{.*}}[%[[W]]] : memref<?xi32>
// CHECK-NEXT: %[[KS:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK-NEXT: memref.load %{{.*}}[%[[W]]] : memref<?xi32>
// CHECK-NEXT: %[[KE:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK-NEXT: memref.load %{{.*}}[%[[W]]] : memref<?xi32>
// CHECK-NEXT: %[[ROW:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK-NEXT: memref.load %{{.*}}[%[[W]]] : memref<?xi32>
// CHECK-NEXT: %[[STRIDE:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: arith.muli %[[Z]], %c64
// CHECK: scf.if
// CHECK: %[[LO:.*]] = arith.maxsi %{{.*}}, %[[KS]]
// CHECK: %[[HI:.*]] = arith.minsi %{{.*}}, %[[KE]]
// CHECK: %[[END:.*]] = arith.minsi %{{.*}}, %[[KE]]
// CHECK: scf.for %[[T0:.*]] = %[[LO]] to %[[HI]] step %c32
// CHECK: pa.tile.mask {{.*}} keys(%[[T0]], %[[END]])
// CHECK: pa.tile.store {{.*}} stride(%[[STRIDE]]) {{.*}} outs(%{{.*}}, %{{.*}} : memref<?x32x128xf32>, memref<?x32xf32>)
func.func @prefill_partial(%q: memref<?x32x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %w0: memref<?xi32>, %w1: memref<?xi32>, %w2: memref<?xi32>, %w3: memref<?xi32>, %w4: memref<?xi32>, %w5: memref<?xi32>, %w6: memref<?xi32>, %o: memref<?x32x128xf32>, %l: memref<?x32xf32>) {
  pa.prefill_partial q(%q, %qi : memref<?x32x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) work(%w0, %w1, %w2, %w3, %w4, %w5, %w6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf32>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}
