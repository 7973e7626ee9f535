// RUN: pa-opt %s | pa-opt | FileCheck %s --enable-var-scope

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// CHECK-LABEL: func @tile_ops
// CHECK: pa.tile.load_q q(%{{.*}} : memref<?x32x128xf16>) rows(%{{.*}}, %{{.*}}) kv_head(%{{.*}}) outs(%{{.*}} : memref<64x128xf32>) {group = 4 : i64, scale = 0.08837{{[0-9]*}} : f32}
// CHECK: pa.tile.gather_kv kv(%{{.*}} : memref<?x2x16x8x128xf16>) pages(%{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>) request(%{{.*}}) tokens(%{{.*}}, %{{.*}}) kv_head(%{{.*}}) outs(%{{.*}}, %{{.*}} : memref<32x128xf32>, memref<32x128xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
// CHECK: pa.tile.qk ins(%{{.*}}, %{{.*}} : memref<64x128xf32>, memref<32x128xf32>) outs(%{{.*}} : memref<64x32xf32>)
// CHECK: pa.tile.mask scores(%{{.*}} : memref<64x32xf32>) rows(%{{.*}}, %{{.*}}, %{{.*}}) keys(%{{.*}}, %{{.*}}) kv_head(%{{.*}}) alibi(%{{.*}} : memref<32xf32>) {causal, group = 4 : i64, logits_soft_cap = 3.000000e+01 : f32, window = 128 : i64}
// CHECK: pa.tile.mask scores(%{{.*}} : memref<64x32xf32>) rows(%{{.*}}, %{{.*}}, %{{.*}}) keys(%{{.*}}, %{{.*}}) kv_head(%{{.*}}) positions(%{{.*}} : memref<?xi32>) mask(%{{.*}} : memref<?xi8>, %{{.*}}, %{{.*}}, %{{.*}}) {group = 4 : i64}
// CHECK: pa.tile.softmax_update scores(%{{.*}} : memref<64x32xf32>) state(%{{.*}}, %{{.*}}, %{{.*}} : memref<64xf32>, memref<64xf32>, memref<64x128xf32>)
// CHECK: pa.tile.pv ins(%{{.*}}, %{{.*}} : memref<64x32xf32>, memref<32x128xf32>) outs(%{{.*}} : memref<64x128xf32>)
// CHECK: pa.tile.store state(%{{.*}}, %{{.*}}, %{{.*}} : memref<64xf32>, memref<64xf32>, memref<64x128xf32>) rows(%{{.*}}, %{{.*}}) kv_head(%{{.*}}) outs(%{{.*}}, %{{.*}} : memref<?x32x128xf16>, memref<?x32xf32>) {group = 4 : i64, lse_base2}
func.func @tile_ops(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %al: memref<32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>, %i: index, %mk: memref<?xi8>, %qp: memref<?xi32>) {
  %qt = memref.alloca() : memref<64x128xf32>
  %kt = memref.alloca() : memref<32x128xf32>
  %vt = memref.alloca() : memref<32x128xf32>
  %s = memref.alloca() : memref<64x32xf32>
  %m = memref.alloca() : memref<64xf32>
  %l = memref.alloca() : memref<64xf32>
  %acc = memref.alloca() : memref<64x128xf32>
  pa.tile.load_q q(%q : memref<?x32x128xf16>) rows(%i, %i) kv_head(%i) outs(%qt : memref<64x128xf32>) {group = 4 : i64, scale = 0.0883789 : f32}
  pa.tile.gather_kv kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix : memref<?xi32>, memref<?xi32>) request(%i) tokens(%i, %i) kv_head(%i) outs(%kt, %vt : memref<32x128xf32>, memref<32x128xf32>) {cache = #cache}
  pa.tile.qk ins(%qt, %kt : memref<64x128xf32>, memref<32x128xf32>) outs(%s : memref<64x32xf32>)
  pa.tile.mask scores(%s : memref<64x32xf32>) rows(%i, %i, %i) keys(%i, %i) kv_head(%i) alibi(%al : memref<32xf32>) {group = 4 : i64, causal, window = 128 : i64, logits_soft_cap = 30.0 : f32}
  pa.tile.mask scores(%s : memref<64x32xf32>) rows(%i, %i, %i) keys(%i, %i) kv_head(%i) positions(%qp : memref<?xi32>) mask(%mk : memref<?xi8>, %i, %i, %i) {group = 4 : i64}
  pa.tile.softmax_update scores(%s : memref<64x32xf32>) state(%m, %l, %acc : memref<64xf32>, memref<64xf32>, memref<64x128xf32>)
  pa.tile.pv ins(%s, %vt : memref<64x32xf32>, memref<32x128xf32>) outs(%acc : memref<64x128xf32>)
  pa.tile.store state(%m, %l, %acc : memref<64xf32>, memref<64xf32>, memref<64x128xf32>) rows(%i, %i) kv_head(%i) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {group = 4 : i64, lse_base2}
  return
}
