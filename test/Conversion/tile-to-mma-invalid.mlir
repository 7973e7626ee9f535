// RUN: pa-opt %s --split-input-file --pa-tile-to-mma -verify-diagnostics

// pa-tile-to-mma names what it cannot map onto fragments, at the op.

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
module attributes {gpu.container_module} {
gpu.module @pa_kernels {
  gpu.func @unpromoted(%q: memref<?x32x128xf16>, %i: index) kernel attributes {pa.kernel = {args = [], block = array<i64: 256, 1, 1>, grid = ["q_tiles", "kv_heads", "batch"], kind = "prefill", smem = 0 : i64}} {
    %qt = memref.alloca() : memref<256x128xf32>
    // expected-error @+1 {{pa-tile-to-mma runs after pa-promote-tiles, which replaces this op}}
    pa.tile.load_q q(%q : memref<?x32x128xf16>) rows(%i, %i) kv_head(%i) outs(%qt : memref<256x128xf32>) {group = 4 : i64, scale = 1.0 : f32}
    gpu.return
  }
}
}

// -----

module attributes {gpu.container_module} {
gpu.module @pa_kernels {
  gpu.func @private_q(%o: memref<?x32x128xf16>, %lse: memref<?x32xf32>, %i: index) kernel attributes {pa.kernel = {args = [], block = array<i64: 256, 1, 1>, grid = ["q_tiles", "kv_heads", "batch"], kind = "prefill", smem = 0 : i64}} {
    %qt = memref.alloca() : memref<256x128xf16>
    %kt = memref.alloca() : memref<32x128xf16>
    %s = memref.alloca() : memref<256x32xf32>
    %m = memref.alloca() : memref<256xf32>
    %l = memref.alloca() : memref<256xf32>
    %acc = memref.alloca() : memref<256x128xf32>
    pa.tile.init_state state(%m, %l, %acc : memref<256xf32>, memref<256xf32>, memref<256x128xf32>)
    // expected-error @+1 {{pa-tile-to-mma reads Q, K and V from workgroup memory (run pa-promote-tiles first), got 'memref<256x128xf16>'}}
    pa.tile.qk ins(%qt, %kt : memref<256x128xf16>, memref<32x128xf16>) outs(%s : memref<256x32xf32>)
    pa.tile.store state(%m, %l, %acc : memref<256xf32>, memref<256xf32>, memref<256x128xf32>) rows(%i, %i) kv_head(%i) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {group = 4 : i64}
    gpu.return
  }
}
}

// -----

module attributes {gpu.container_module} {
gpu.module @pa_kernels {
  gpu.func @rows_per_warp(%o: memref<?x32x128xf16>, %lse: memref<?x32xf32>, %i: index) workgroup(%qt : memref<64x128xf16, #gpu.address_space<workgroup>>, %kt : memref<32x128xf16, #gpu.address_space<workgroup>>) kernel attributes {pa.kernel = {args = [], block = array<i64: 256, 1, 1>, grid = ["q_tiles", "kv_heads", "batch"], kind = "prefill", smem = 0 : i64}} {
    %s = memref.alloca() : memref<64x32xf32>
    %m = memref.alloca() : memref<64xf32>
    %l = memref.alloca() : memref<64xf32>
    %acc = memref.alloca() : memref<64x128xf32>
    pa.tile.init_state state(%m, %l, %acc : memref<64xf32>, memref<64xf32>, memref<64x128xf32>)
    // expected-error @+1 {{pa-tile-to-mma needs f16 / bf16 tiles, a head dim that is a multiple of 16, 16 keys or a multiple per key-splitting warp (1) and 16 or 32 query-tile rows per row block of the 256 threads}}
    pa.tile.qk ins(%qt, %kt : memref<64x128xf16, #gpu.address_space<workgroup>>, memref<32x128xf16, #gpu.address_space<workgroup>>) outs(%s : memref<64x32xf32>)
    pa.tile.store state(%m, %l, %acc : memref<64xf32>, memref<64xf32>, memref<64x128xf32>) rows(%i, %i) kv_head(%i) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {group = 4 : i64}
    gpu.return
  }
}
}

// -----

// fp8 K / V must be both of one fp8 type, in views of pa-promote-tiles'
// memref.view of the dynamic shared memory (read through a 16-bit view of
// the same bytes).
module attributes {gpu.container_module} {
gpu.module @pa_kernels {
  gpu.func @fp8_k_f16_v(%o: memref<?x32x128xf16>, %lse: memref<?x32xf32>, %i: index) workgroup(%qt : memref<16x128xf16, #gpu.address_space<workgroup>>, %kt : memref<64x128xf8E4M3FN, #gpu.address_space<workgroup>>, %vt : memref<64x128xf16, #gpu.address_space<workgroup>>) kernel attributes {pa.kernel = {args = [], block = array<i64: 128, 1, 1>, grid = ["batch", "kv_heads", 1], kind = "decode", kv_warps = 4 : i64, smem = 0 : i64}} {
    %s = memref.alloca() : memref<16x64xf32>
    %m = memref.alloca() : memref<16xf32>
    %l = memref.alloca() : memref<16xf32>
    %acc = memref.alloca() : memref<16x128xf32>
    pa.tile.init_state state(%m, %l, %acc : memref<16xf32>, memref<16xf32>, memref<16x128xf32>)
    // expected-error @+1 {{pa-tile-to-mma needs K and V of the queries' type, or both of one fp8 type in views of a memref.view of shared memory with mma.sync and a head dim that is a multiple of 32}}
    pa.tile.qk ins(%qt, %kt : memref<16x128xf16, #gpu.address_space<workgroup>>, memref<64x128xf8E4M3FN, #gpu.address_space<workgroup>>) outs(%s : memref<16x64xf32>)
    pa.tile.pv ins(%s, %vt : memref<16x64xf32>, memref<64x128xf16, #gpu.address_space<workgroup>>) outs(%acc : memref<16x128xf32>)
    pa.tile.store state(%m, %l, %acc : memref<16xf32>, memref<16xf32>, memref<16x128xf32>) rows(%i, %i) kv_head(%i) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {group = 4 : i64}
    gpu.return
  }
}
}

// -----

// The state lives across the KV loop: it must be initialized before it.
module attributes {gpu.container_module} {
gpu.module @pa_kernels {
  gpu.func @init_in_loop(%o: memref<?x32x128xf16>, %lse: memref<?x32xf32>, %i: index, %n: index) workgroup(%qt : memref<16x128xf16, #gpu.address_space<workgroup>>, %kt : memref<64x128xf16, #gpu.address_space<workgroup>>) kernel attributes {pa.kernel = {args = [], block = array<i64: 128, 1, 1>, grid = ["batch", "kv_heads", 1], kind = "decode", kv_warps = 4 : i64, smem = 0 : i64}} {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %s = memref.alloca() : memref<16x64xf32>
    %m = memref.alloca() : memref<16xf32>
    %l = memref.alloca() : memref<16xf32>
    %acc = memref.alloca() : memref<16x128xf32>
    // expected-error @+1 {{pa-tile-to-mma: the tile state must be initialized outside the loops it lives across}}
    scf.for %t = %c0 to %n step %c64 {
      pa.tile.init_state state(%m, %l, %acc : memref<16xf32>, memref<16xf32>, memref<16x128xf32>)
      pa.tile.qk ins(%qt, %kt : memref<16x128xf16, #gpu.address_space<workgroup>>, memref<64x128xf16, #gpu.address_space<workgroup>>) outs(%s : memref<16x64xf32>)
    }
    pa.tile.store state(%m, %l, %acc : memref<16xf32>, memref<16xf32>, memref<16x128xf32>) rows(%i, %i) kv_head(%i) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {group = 4 : i64}
    gpu.return
  }
}
}
