// RUN: pa-opt %s --split-input-file --pa-promote-tiles -verify-diagnostics

// pa-promote-tiles names what it cannot promote, at the op.

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
module attributes {gpu.container_module} {
gpu.module @pa_kernels {
  // expected-error @+1 {{pa-promote-tiles expects one pa.tile.load_q and one pa.tile.gather_kv per kernel, got 2 and 1}}
  gpu.func @two_loads(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %i: index) kernel attributes {pa.kernel = {args = [], block = array<i64: 256, 1, 1>, grid = ["q_tiles", "kv_heads", "batch"], kind = "prefill", smem = 0 : i64}} {
    %qt = memref.alloca() : memref<256x128xf32>
    %kt = memref.alloca() : memref<32x128xf32>
    %vt = memref.alloca() : memref<32x128xf32>
    pa.tile.load_q q(%q : memref<?x32x128xf16>) rows(%i, %i) kv_head(%i) outs(%qt : memref<256x128xf32>) {group = 4 : i64, scale = 1.0 : f32}
    pa.tile.load_q q(%q : memref<?x32x128xf16>) rows(%i, %i) kv_head(%i) outs(%qt : memref<256x128xf32>) {group = 4 : i64, scale = 1.0 : f32}
    pa.tile.gather_kv kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix : memref<?xi32>, memref<?xi32>) request(%i) tokens(%i, %i) kv_head(%i) outs(%kt, %vt : memref<32x128xf32>, memref<32x128xf32>) {cache = #cache}
    gpu.return
  }
}
}

// -----

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
module attributes {gpu.container_module} {
gpu.module @pa_kernels {
  gpu.func @no_loop(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %i: index) kernel attributes {pa.kernel = {args = [], block = array<i64: 256, 1, 1>, grid = ["q_tiles", "kv_heads", "batch"], kind = "prefill", smem = 0 : i64}} {
    %qt = memref.alloca() : memref<256x128xf32>
    %kt = memref.alloca() : memref<32x128xf32>
    %vt = memref.alloca() : memref<32x128xf32>
    pa.tile.load_q q(%q : memref<?x32x128xf16>) rows(%i, %i) kv_head(%i) outs(%qt : memref<256x128xf32>) {group = 4 : i64, scale = 1.0 : f32}
    // expected-error @+1 {{pa-promote-tiles expects the gather in the body of an scf.for without iter_args whose induction variable is its first token}}
    pa.tile.gather_kv kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix : memref<?xi32>, memref<?xi32>) request(%i) tokens(%i, %i) kv_head(%i) outs(%kt, %vt : memref<32x128xf32>, memref<32x128xf32>) {cache = #cache}
    gpu.return
  }
}
}

// -----

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
module attributes {gpu.container_module} {
gpu.module @pa_kernels {
  gpu.func @step(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %i: index) kernel attributes {pa.kernel = {args = [], block = array<i64: 256, 1, 1>, grid = ["q_tiles", "kv_heads", "batch"], kind = "prefill", smem = 0 : i64}} {
    %qt = memref.alloca() : memref<256x128xf32>
    %kt = memref.alloca() : memref<32x128xf32>
    %vt = memref.alloca() : memref<32x128xf32>
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    pa.tile.load_q q(%q : memref<?x32x128xf16>) rows(%i, %i) kv_head(%i) outs(%qt : memref<256x128xf32>) {group = 4 : i64, scale = 1.0 : f32}
    // expected-error @+1 {{pa-promote-tiles expects the KV loop to step by the K tile's 32 rows}}
    scf.for %t = %c0 to %i step %c16 {
      pa.tile.gather_kv kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix : memref<?xi32>, memref<?xi32>) request(%i) tokens(%t, %i) kv_head(%i) outs(%kt, %vt : memref<32x128xf32>, memref<32x128xf32>) {cache = #cache}
    }
    gpu.return
  }
}
}

// -----

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
module attributes {gpu.container_module} {
gpu.module @pa_kernels {
  gpu.func @f64(%q: memref<?x32x128xf64>, %kv: memref<?x2x16x8x128xf64>, %ip: memref<?xi32>, %ix: memref<?xi32>, %i: index) kernel attributes {pa.kernel = {args = [], block = array<i64: 256, 1, 1>, grid = ["q_tiles", "kv_heads", "batch"], kind = "prefill", smem = 0 : i64}} {
    %qt = memref.alloca() : memref<256x128xf32>
    %kt = memref.alloca() : memref<32x128xf32>
    %vt = memref.alloca() : memref<32x128xf32>
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    // expected-error @+1 {{pa-promote-tiles copies f16 / bf16 / f32 rows, got 'f64'}}
    pa.tile.load_q q(%q : memref<?x32x128xf64>) rows(%i, %i) kv_head(%i) outs(%qt : memref<256x128xf32>) {group = 4 : i64, scale = 1.0 : f32}
    scf.for %t = %c0 to %i step %c32 {
      pa.tile.gather_kv kv(%kv : memref<?x2x16x8x128xf64>) pages(%ip, %ix : memref<?xi32>, memref<?xi32>) request(%i) tokens(%t, %i) kv_head(%i) outs(%kt, %vt : memref<32x128xf32>, memref<32x128xf32>) {cache = #cache}
    }
    gpu.return
  }
}
}

// -----

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
module attributes {gpu.container_module} {
gpu.module @pa_kernels {
  gpu.func @end_in_loop(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %i: index) kernel attributes {pa.kernel = {args = [], block = array<i64: 256, 1, 1>, grid = ["q_tiles", "kv_heads", "batch"], kind = "prefill", smem = 0 : i64}} {
    %qt = memref.alloca() : memref<256x128xf32>
    %kt = memref.alloca() : memref<32x128xf32>
    %vt = memref.alloca() : memref<32x128xf32>
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    pa.tile.load_q q(%q : memref<?x32x128xf16>) rows(%i, %i) kv_head(%i) outs(%qt : memref<256x128xf32>) {group = 4 : i64, scale = 1.0 : f32}
    scf.for %t = %c0 to %i step %c32 {
      %end = arith.addi %t, %c32 : index
      // expected-error @+1 {{pa-promote-tiles needs the gather's cache, page table, request, key bound and KV head defined outside the KV loop}}
      pa.tile.gather_kv kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix : memref<?xi32>, memref<?xi32>) request(%i) tokens(%t, %end) kv_head(%i) outs(%kt, %vt : memref<32x128xf32>, memref<32x128xf32>) {cache = #cache}
    }
    gpu.return
  }
}
}
