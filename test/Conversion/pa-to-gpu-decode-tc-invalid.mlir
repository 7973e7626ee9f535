// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="decode-kernel=tensor-core" -verify-diagnostics
// RUN: not pa-opt %s --split-input-file --convert-pa-to-gpu="decode-kernel=tensor-core decode-tile-kv=32" 2>&1 | FileCheck %s --check-prefix=TILE

// What the tensor-core decode cannot build is an error at the op (under
// decode-kernel=auto these take the CUDA-core kernel).
// TILE: decode-tile-kv must be 64 or 128, got 32
// RUN: not pa-opt %s --split-input-file --convert-pa-to-gpu="decode-kernel=tensor-core decode-kv-stages=5" 2>&1 | FileCheck %s --check-prefix=STAGES
// STAGES: decode-kv-stages must be 2, 3 or 4, got 5

func.func @f32(%q: memref<?x8x64xf32>, %kv: memref<?x2x16x2x64xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x64xf32>, %l: memref<?x8xf32>) {
  // expected-error @+1 {{the tensor-core decode on the GPU runs on tensor cores and needs f16 or bf16 data, got 'f32'}}
  pa.decode q(%q : memref<?x8x64xf32>) kv(%kv : memref<?x2x16x2x64xf32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x64xf32>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 2, head_dim = 64>}
  return
}
// -----

// A group above 32 heads does not fit the tile's two m16 blocks.
func.func @group64(%q: memref<?x64x64xf16>, %kv: memref<?x2x16x1x64xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x64x64xf16>, %l: memref<?x64xf32>) {
  // expected-error @+1 {{the tensor-core decode packs a GQA group into at most 32 rows; group 64 is larger (use decode-kernel=cuda-core)}}
  pa.decode q(%q : memref<?x64x64xf16>) kv(%kv : memref<?x2x16x1x64xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x64x64xf16>, memref<?x64xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 1, head_dim = 64>}
  return
}

