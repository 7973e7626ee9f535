// RUN: pa-opt %s --convert-pa-to-gpu="heads-per-cta=5 decode-kernel=cuda-core" -split-input-file -verify-diagnostics
// RUN: not pa-opt %s --convert-pa-to-gpu="heads-per-cta=16 cta-threads=1024 decode-kernel=cuda-core" --pa-promote-tiles --pa-tile-to-simt 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: pa-opt %s --convert-pa-to-gpu="heads-per-cta=16 decode-kernel=cuda-core" --pa-promote-tiles --pa-tile-to-simt | FileCheck %s

// The CUDA-core decode's heads per CTA divide the GQA group (each CTA
// holds a whole chunk of it). All 16 heads of 256 dims in one CTA of 128
// threads compile (grid z 1); the store's scratch of the 4 lane groups'
// states (4 x 16 x 258 floats) sets the kernel's shared memory. With 1024
// threads (32 lane groups) it would not fit a CTA: an error at the op.
// CHECK: grid = ["batch", "kv_heads", 1], heads_per_cta = 16 : i64
// CHECK-SAME: smem = 66048 : i64
// SMEM: error: 'pa.tile.qk' op pa-tile-to-simt: the states of 32 lane groups x 16 heads need 528384 bytes of shared memory, more than the 232448 a CTA can have (fewer heads per CTA or threads)
func.func @heads_per_cta(%q: memref<?x16x256xf16>, %kv: memref<?x2x16x1x256xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x16x256xf16>, %l: memref<?x16xf32>) {
  // expected-error @+1 {{heads-per-cta must divide the GQA group (16), got 5}}
  pa.decode q(%q : memref<?x16x256xf16>) kv(%kv : memref<?x2x16x1x256xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x16x256xf16>, memref<?x16xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 1, head_dim = 256>}
  return
}
