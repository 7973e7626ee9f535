// RUN: pa-opt %s --pa-tile-attention="tile-q=8 tile-kv=16" -split-input-file -verify-diagnostics | FileCheck %s --enable-var-scope

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// A causal GQA-4 prefill: loops over requests, KV heads and query tiles of
// 8 / 4 = 2 queries; the KV-tile loop stops at the query tile's last
// position (no tile above the diagonal) and runs gather, qk, mask, online
// softmax and P V per tile; the tile's state is stored at the end.
// CHECK-LABEL: func @prefill
// CHECK-DAG: %[[QT:.*]] = memref.alloca() : memref<8x128xf32>
// CHECK-DAG: %[[KT:.*]] = memref.alloca() : memref<16x128xf32>
// CHECK-DAG: %[[VT:.*]] = memref.alloca() : memref<16x128xf32>
// CHECK-DAG: %[[S:.*]] = memref.alloca() : memref<8x16xf32>
// The mask is marked with the test of whether the KV tile needs it: it
// reaches past kv_len or above the first query's diagonal.
// CHECK: scf.for %[[I0:.*]] = %{{.*}} to %{{.*}} step %c2{{(_[0-9]+)?}} {
// CHECK: pa.tile.load_q {{.*}} kv_head(%[[HK:[^)]*]]) outs(%[[QT]] : memref<8x128xf32>) {group = 4 : i64, scale = 0.0883883{{[0-9]*}} : f32}
// CHECK: pa.tile.init_state
// CHECK: %[[LAST:.*]] = arith.minsi
// CHECK: scf.for %[[T0:.*]] = %{{.*}} to %[[LAST]] step %c16{{(_[0-9]+)?}} {
// CHECK-NEXT: pa.tile.gather_kv {{.*}} request(%{{.*}}) tokens(%[[T0]], %[[LAST]]) kv_head(%[[HK]]) outs(%[[KT]], %[[VT]]
// CHECK-NEXT: pa.tile.qk ins(%[[QT]], %[[KT]] {{.*}} outs(%[[S]]
// CHECK: %[[END:.*]] = arith.addi %[[T0]], %c16
// CHECK-NEXT: %[[PAST:.*]] = arith.cmpi ugt, %[[END]]
// CHECK: %[[DIAG:.*]] = arith.cmpi sgt, %[[END]]
// CHECK-NEXT: %[[NEED:.*]] = arith.ori %[[PAST]], %[[DIAG]]
// CHECK-NEXT: pa.tile.mask scores(%[[S]] {{.*}} masked_if(%[[NEED]]) {causal, group = 4 : i64}
// CHECK-NEXT: pa.tile.softmax_update scores(%[[S]]
// CHECK-NEXT: pa.tile.pv ins(%[[S]], %[[VT]]
// CHECK: pa.tile.store {{.*}} {group = 4 : i64}
// CHECK-NOT: pa.prefill
func.func @prefill(%q: memref<?x32x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.prefill q(%q, %qi : memref<?x32x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #cache, causal}
  return
}

// -----

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// A sliding window starts the KV-tile loop at the first tile that reaches
// into the window.
// CHECK-LABEL: func @window
// CHECK: %[[W:.*]] = arith.constant 100 : index
// CHECK: arith.subi %{{.*}}, %[[W]]
// CHECK: arith.maxsi
// CHECK: %[[FIRST:.*]] = arith.muli
// CHECK: scf.for %{{.*}} = %[[FIRST]] to
// CHECK: pa.tile.mask {{.*}} window = 100 : i64
func.func @window(%q: memref<?x8x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  pa.prefill q(%q, %qi : memref<?x8x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x128xf16>, memref<?x8xf32>) {cache = #cache, window = 100 : i64}
  return
}

// -----

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// A custom mask: the mask op reads the request's segment (its first byte
// from mask_indptr) at the tile's first query row.
// CHECK-LABEL: func @custom_mask
// CHECK: scf.for %[[I0:.*]] = %{{.*}} to %{{.*}} step %c8{{(_[0-9]+)?}} {
// Every tile needs the mask: no masked_if.
// CHECK: pa.tile.mask {{.*}} keys(%{{.*}}, %[[LEN:[^)]*]]) {{.*}} mask(%{{.*}} : memref<?xi8>, %{{.*}}, %[[I0]], %[[LEN]]) {group = 1 : i64}
func.func @custom_mask(%q: memref<?x8x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %m: memref<?xi8>, %mi: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  pa.prefill q(%q, %qi : memref<?x8x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) mask(%m, %mi : memref<?xi8>, memref<?xi32>) outs(%o, %l : memref<?x8x128xf16>, memref<?x8xf32>) {cache = #cache}
  return
}

// -----

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

func.func @tile_not_whole_groups(%q: memref<?x24x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x24x128xf16>, %l: memref<?x24xf32>) {
  // expected-error @+1 {{tile-q (8) must be a positive multiple of the group (3) and tile-kv (16) positive}}
  pa.prefill q(%q, %qi : memref<?x24x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x24x128xf16>, memref<?x24xf32>) {cache = #cache}
  return
}

// -----

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// With explicit positions under causal, one pass over the tile's rows
// takes the min / max of their q_positions, and the KV-tile loop stops at
// min(kv_len, max + 1) (CacheBlend's selected tokens see only the keys
// up to their positions); every tile is still masked with the positions.
// CHECK-LABEL: func @positions
// CHECK: pa.tile.load_q
// CHECK: %[[SPAN:.*]]:2 = scf.for {{.*}} iter_args
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK: arith.minsi
// CHECK: arith.maxsi
// CHECK: %[[END:.*]] = arith.addi %[[SPAN]]#1, %c1
// CHECK: %[[HI:.*]] = arith.minsi %{{.*}}, %[[END]] : index
// CHECK: scf.for %{{.*}} = %c0{{(_[0-9]+)?}} to %[[HI]] step %c16{{(_[0-9]+)?}} {
// CHECK: pa.tile.mask {{.*}} positions(%{{.*}} : memref<?xi32>) {causal, group = 1 : i64}
func.func @positions(%q: memref<?x8x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %pos: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  pa.prefill q(%q, %qi : memref<?x8x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) positions(%pos : memref<?xi32>) outs(%o, %l : memref<?x8x128xf16>, memref<?x8xf32>) {cache = #cache, causal}
  return
}

// -----

// pa.prefill_partial: a loop over the work items; each item's seven
// entries, checked against its request (queries, keys, partial rows); its
// query tiles from qo_start to qo_end; the KV loop clamped to the item's
// keys; the masks stop at min(kv_len, kv_end); the state stored to the
// item's partial rows with its stride.
// CHECK-LABEL: func.func @prefill_partial(
// CHECK: cf.assert {{.*}} "work_partial_stride must have as many as work_request entries"
// CHECK: scf.for %[[W:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-COUNT-7: memref.load %{{.*}}[%[[W]]] : memref<?xi32>
// CHECK: cf.assert {{.*}} "pa.prefill_partial: work_request[w] must be in [0, batch)"
// CHECK: cf.assert {{.*}} "pa.prefill_partial: work item queries must satisfy 0 <= qo_start <= qo_end <= qo_len"
// CHECK: cf.assert {{.*}} "pa.prefill_partial: work item keys must satisfy 0 <= kv_start <= kv_end <= kv_len"
// CHECK: cf.assert {{.*}} "pa.prefill_partial: a work item's partial rows must lie in [0, rows of o_part)"
// CHECK: %[[LO:.*]] = arith.maxsi
// CHECK: %[[HI:.*]] = arith.minsi
// CHECK: %[[END:.*]] = arith.minsi
// CHECK: scf.for %[[T0:.*]] = %[[LO]] to %[[HI]] step %{{.*}}
// CHECK: pa.tile.mask {{.*}} keys(%[[T0]], %[[END]])
// CHECK: pa.tile.store {{.*}} stride(%{{.*}}) {{.*}} outs(%{{.*}}, %{{.*}} : memref<?x32x128xf32>, memref<?x32xf32>)
func.func @prefill_partial(%q: memref<?x32x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %w0: memref<?xi32>, %w1: memref<?xi32>, %w2: memref<?xi32>, %w3: memref<?xi32>, %w4: memref<?xi32>, %w5: memref<?xi32>, %w6: memref<?xi32>, %o: memref<?x32x128xf32>, %l: memref<?x32xf32>) {
  pa.prefill_partial q(%q, %qi : memref<?x32x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) work(%w0, %w1, %w2, %w3, %w4, %w5, %w6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf32>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

// pa.decode: per request and KV head one query tile holding the request's
// query (row b of q, one query at position kv_len - 1) for the group's
// heads; the window starts the KV loop at the tile-aligned first visible
// key; the page table is checked as the loops lowering of pa.decode does.
// CHECK-LABEL: func.func @decode(
// CHECK: cf.assert {{.*}}"kv_indptr must have B + 1 entries (B = rows of q)"
// CHECK: scf.for %[[B:.*]] = %c0{{.*}} to %{{.*}} step
// CHECK: scf.for %[[HK:.*]] = %c0{{.*}} to %c8{{.*}} step
// CHECK: pa.tile.load_q q(%{{.*}} : memref<?x32x128xf16>) rows(%{{.*}}, %c1{{.*}}) kv_head(%[[HK]]) outs(%{{.*}} : memref<8x128xf32>) {group = 4 : i64
// CHECK: scf.for %[[T0:.*]] = %{{.*}} to %{{.*}} step %c16
// CHECK: pa.tile.gather_kv {{.*}} request(%[[B]]) tokens(%[[T0]], %{{.*}}) kv_head(%[[HK]])
// CHECK: pa.tile.mask {{.*}} masked_if(%{{.*}}) {group = 4 : i64, window = 100 : i64}
// CHECK: pa.tile.store {{.*}} kv_head(%[[HK]]) outs(%{{.*}}, %{{.*}} : memref<?x32x128xf16>, memref<?x32xf32>)
// CHECK-NOT: pa.decode
func.func @decode(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.decode q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, window = 100 : i64}
  return
}

// -----

// pa.decode_partial: the work list is checked, then per item in use and KV
// head one query tile over the item's keys, stored to row w.
// CHECK-LABEL: func.func @decode_partial(
// CHECK: cf.assert {{.*}}"work list longer than the partial-state outs"
// CHECK: scf.for %[[W:.*]] = %c0{{.*}} to %{{.*}} step
// CHECK: cf.assert {{.*}}"work_request entry out of range [0, B)"
// CHECK: cf.assert {{.*}}"work item chunk out of [0, kv_len]"
// CHECK: pa.tile.load_q
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: pa.tile.store {{.*}} rows(%[[W]], %c1{{.*}}) kv_head
// CHECK-SAME: memref<?x32x128xf32>
func.func @decode_partial(%q: memref<4x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<5xi32>, %ix: memref<?xi32>, %lp: memref<4xi32>, %wi: memref<5xi32>, %wr: memref<?xi32>, %ws: memref<?xi32>, %we: memref<?xi32>, %o: memref<?x32x128xf32>, %l: memref<?x32xf32>) {
  pa.decode_partial q(%q : memref<4x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<5xi32>, memref<?xi32>, memref<4xi32>) work(%wi, %wr, %ws, %we : memref<5xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf32>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}
