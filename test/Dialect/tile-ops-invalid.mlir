// RUN: pa-opt %s -split-input-file -verify-diagnostics

func.func @rows_below_a_group(%q: memref<?x32x128xf16>, %t: memref<3x128xf32>, %i: index) {
  // expected-error @+1 {{the 3 rows of 'tile' must hold a group of 4 query heads}}
  pa.tile.load_q q(%q : memref<?x32x128xf16>) rows(%i, %i) kv_head(%i) outs(%t : memref<3x128xf32>) {group = 4 : i64, scale = 1.0 : f32}
  return
}

// -----

func.func @head_dim(%q: memref<?x32x128xf16>, %t: memref<64x64xf32>, %i: index) {
  // expected-error @+1 {{'tile' dim 1 (64) must equal 'q' dim 2 (128)}}
  pa.tile.load_q q(%q : memref<?x32x128xf16>) rows(%i, %i) kv_head(%i) outs(%t : memref<64x64xf32>) {group = 4 : i64, scale = 1.0 : f32}
  return
}

// -----

func.func @qk_shapes(%q: memref<64x128xf32>, %k: memref<32x128xf32>, %s: memref<64x16xf32>) {
  // expected-error @+1 {{'s' dim 1 (16) must equal 'k' dim 0 (32)}}
  pa.tile.qk ins(%q, %k : memref<64x128xf32>, memref<32x128xf32>) outs(%s : memref<64x16xf32>)
  return
}

// -----

func.func @gather_head_dim(%kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %kt: memref<32x64xf32>, %i: index) {
  // expected-error @+1 {{tile dim 1 (64) must equal the cache's head_dim (128)}}
  pa.tile.gather_kv kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix : memref<?xi32>, memref<?xi32>) request(%i) tokens(%i, %i) kv_head(%i) outs(%kt, %kt : memref<32x64xf32>, memref<32x64xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @window_zero(%s: memref<64x32xf32>, %i: index) {
  // expected-error @+1 {{window must be > 0}}
  pa.tile.mask scores(%s : memref<64x32xf32>) rows(%i, %i, %i) keys(%i, %i) kv_head(%i) {group = 4 : i64, window = 0 : i64}
  return
}

// -----

func.func @pv_shapes(%p: memref<64x32xf32>, %v: memref<16x128xf32>, %acc: memref<64x128xf32>) {
  // expected-error @+1 {{'v' dim 0 (16) must equal 'p' dim 1 (32)}}
  pa.tile.pv ins(%p, %v : memref<64x32xf32>, memref<16x128xf32>) outs(%acc : memref<64x128xf32>)
  return
}

// -----

func.func @store_state(%m: memref<32xf32>, %l: memref<64xf32>, %acc: memref<64x128xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>, %i: index) {
  // expected-error @+1 {{'m' dim 0 (32) must equal 'acc' dim 0 (64)}}
  pa.tile.store state(%m, %l, %acc : memref<32xf32>, memref<64xf32>, memref<64x128xf32>) rows(%i, %i) kv_head(%i) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {group = 4 : i64}
  return
}

// -----

func.func @mask_operands(%s: memref<64x32xf32>, %m: memref<?xi8>, %i: index) {
  // expected-error @+1 {{a custom mask needs the packed mask, its first byte, the tile's first query row and kv_len}}
  "pa.tile.mask"(%s, %i, %i, %i, %i, %i, %i, %m, %i, %i) <{group = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0>}> : (memref<64x32xf32>, index, index, index, index, index, index, memref<?xi8>, index, index) -> ()
  return
}

// -----

func.func @negative_window(%s: memref<64x32xf32>, %i: index) {
  // expected-error @+1 {{window must be > 0}}
  pa.tile.mask scores(%s : memref<64x32xf32>) rows(%i, %i, %i) keys(%i, %i) kv_head(%i) {group = 4 : i64, window = -3 : i64}
  return
}

// -----

func.func @gather_page_size(%kv: memref<?x2x8x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %kt: memref<32x128xf32>, %i: index) {
  // expected-error @+1 {{cache dim 2 is 8, #pa.paged_kv gives 16}}
  pa.tile.gather_kv kv(%kv : memref<?x2x8x8x128xf16>) pages(%ip, %ix : memref<?xi32>, memref<?xi32>) request(%i) tokens(%i, %i) kv_head(%i) outs(%kt, %kt : memref<32x128xf32>, memref<32x128xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @mask_positions_type(%s: memref<64x32xf32>, %p: memref<?xf32>, %i: index) {
  // expected-error @+1 {{'q_positions' must be a 1-D array of i32}}
  pa.tile.mask scores(%s : memref<64x32xf32>) rows(%i, %i, %i) keys(%i, %i) kv_head(%i) positions(%p : memref<?xf32>) {group = 4 : i64}
  return
}

// -----

func.func @store_lse_heads(%m: memref<64xf32>, %acc: memref<64x128xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x16xf32>, %i: index) {
  // expected-error @+1 {{'lse' dim 1 (16) must equal 'o' dim 1 (32)}}
  pa.tile.store state(%m, %m, %acc : memref<64xf32>, memref<64xf32>, memref<64x128xf32>) rows(%i, %i) kv_head(%i) outs(%o, %lse : memref<?x32x128xf16>, memref<?x16xf32>) {group = 4 : i64}
  return
}

// -----

func.func @qk_scale(%q: memref<64x128xf16, 3>, %k: memref<32x128xf16, 3>, %s: memref<64x32xf32>) {
  // expected-error @+1 {{scale must be finite and > 0}}
  pa.tile.qk ins(%q, %k : memref<64x128xf16, 3>, memref<32x128xf16, 3>) outs(%s : memref<64x32xf32>) {scale = -1.0 : f32}
  return
}

// -----

func.func @qk_i8(%q: memref<64x128xi8>, %k: memref<32x128xf16>, %s: memref<64x32xf32>) {
  // expected-error @+1 {{operand #0 must be 2D memref of 32-bit float or 16-bit float or bfloat16 type or f8E4M3FN type or f8E5M2 type values}}
  pa.tile.qk ins(%q, %k : memref<64x128xi8>, memref<32x128xf16>) outs(%s : memref<64x32xf32>)
  return
}

// -----

// fp8 is a K / V cache type (pa-promote-tiles' fp8 stages), never Q's.
func.func @qk_fp8_q(%q: memref<64x128xf8E4M3FN, 3>, %k: memref<32x128xf8E4M3FN, 3>, %s: memref<64x32xf32>) {
  // expected-error @+1 {{q must be f32, f16 or bf16 (fp8 is a K / V cache type)}}
  pa.tile.qk ins(%q, %k : memref<64x128xf8E4M3FN, 3>, memref<32x128xf8E4M3FN, 3>) outs(%s : memref<64x32xf32>)
  return
}

// -----

func.func @init_state_rows(%m: memref<64xf32>, %l: memref<32xf32>, %acc: memref<64x128xf32>) {
  // expected-error @+1 {{'l' dim 0 (32) must equal 'm' dim 0 (64)}}
  pa.tile.init_state state(%m, %l, %acc : memref<64xf32>, memref<32xf32>, memref<64x128xf32>)
  return
}
