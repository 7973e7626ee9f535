// RUN: pa-opt %s --convert-pa-to-gpu="prefill-mma=auto" | FileCheck %s
// RUN: not pa-opt %s --convert-pa-to-gpu="prefill-mma=wgmma" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not pa-opt %s --convert-pa-to-gpu="prefill-mma=hopper" 2>&1 | FileCheck %s --check-prefix=BAD

// D = 96 is not whole 64-column blocks: auto keeps mma.sync (no pa.wgmma,
// the mma.sync shape of 8 warps x 32 rows), wgmma asked for is an error at
// the op.
// CHECK-LABEL: gpu.func @pa_prefill(
// CHECK-SAME: block = array<i64: 256, 1, 1>
// CHECK-SAME: tile_q = 256 : i64
// CHECK-NOT: pa.wgmma
// ERR: error: 'pa.prefill' op prefill-mma=wgmma needs a head dim that is a multiple of 64 (whole 128-byte swizzle blocks; got 96), K / V of the queries' type (not fp8), prefill-warps 4 or 8 (one or two warpgroups), prefill-warp-rows 16, prefill-kv-warps 1 and prefill-tile-kv a multiple of 16 up to 128
// BAD: convert-pa-to-gpu: prefill-mma must be mma.sync, wgmma or auto, got 'hopper'
func.func @d96(%q: memref<?x8x96xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x2x96xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x96xf16>, %l: memref<?x8xf32>) {
  pa.prefill q(%q, %qi : memref<?x8x96xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x2x96xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x96xf16>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 2, head_dim = 96>, causal}
  return
}
