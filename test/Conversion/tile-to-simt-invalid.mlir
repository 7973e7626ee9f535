// RUN: pa-opt %s --split-input-file --pa-tile-to-simt -verify-diagnostics

// pa-tile-to-simt names what it cannot map onto lane groups, at the op.

module attributes {gpu.container_module} {
gpu.module @pa_kernels {
  gpu.func @unpromoted(%q: memref<?x32x128xf16>, %i: index) kernel attributes {pa.kernel = {args = [], block = array<i64: 128, 1, 1>, grid = ["batch", "kv_heads", 1], kind = "decode", kv_warps = 4 : i64, lane_bytes = 16 : i64, smem = 0 : i64}, pa.simt} {
    %qt = memref.alloca() : memref<1x128xf32>
    // expected-error @+1 {{pa-tile-to-simt runs after pa-promote-tiles, which replaces this op}}
    pa.tile.load_q q(%q : memref<?x32x128xf16>) rows(%i, %i) kv_head(%i) outs(%qt : memref<1x128xf32>) {group = 1 : i64, scale = 1.0 : f32}
    gpu.return
  }
}
}

// -----

module attributes {gpu.container_module} {
gpu.module @pa_kernels {
  gpu.func @not_shared(%o: memref<?x32x128xf16>, %lse: memref<?x32xf32>, %i: index) kernel attributes {pa.kernel = {args = [], block = array<i64: 128, 1, 1>, grid = ["batch", "kv_heads", 1], kind = "decode", kv_warps = 4 : i64, lane_bytes = 16 : i64, smem = 0 : i64}, pa.simt} {
    %qt = memref.alloca() : memref<1x128xf32>
    %kt = memref.alloca() : memref<32x128xf32>
    %s = memref.alloca() : memref<1x32xf32>
    %m = memref.alloca() : memref<1xf32>
    %l = memref.alloca() : memref<1xf32>
    %acc = memref.alloca() : memref<1x128xf32>
    pa.tile.init_state state(%m, %l, %acc : memref<1xf32>, memref<1xf32>, memref<1x128xf32>)
    // expected-error @+1 {{pa-tile-to-simt reads Q, K and V from workgroup memory (run pa-promote-tiles first), got 'memref<1x128xf32>'}}
    pa.tile.qk ins(%qt, %kt : memref<1x128xf32>, memref<32x128xf32>) outs(%s : memref<1x32xf32>)
    pa.tile.store state(%m, %l, %acc : memref<1xf32>, memref<1xf32>, memref<1x128xf32>) rows(%i, %i) kv_head(%i) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {group = 1 : i64}
    gpu.return
  }
}
}
