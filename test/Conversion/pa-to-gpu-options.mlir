// RUN: pa-opt %s --convert-pa-to-gpu="heads-per-cta=16 decode-kernel=cuda-core" -split-input-file -verify-diagnostics
// RUN: pa-opt %s --convert-pa-to-gpu="heads-per-cta=11 decode-kernel=cuda-core" | FileCheck %s

// Asked for all 16 heads of 256 dims in one CTA: 4 lane groups x 16 heads x
// 258 floats exceed the 48 KiB of static shared memory of the cross-group
// merge; the error gives the largest heads-per-cta that fits, and that one
// compiles (a partial last chunk: 11 + 5 heads).
// CHECK: grid = ["batch", "kv_heads", 2], heads_per_cta = 11 : i64
func.func @too_much_smem(%q: memref<?x16x256xf16>, %kv: memref<?x2x16x1x256xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x16x256xf16>, %l: memref<?x16xf32>) {
  // expected-error @+1 {{the cross-group merge needs 66048 bytes of shared memory (4 lane groups x 16 heads), more than 48 KiB: use heads-per-cta <= 11}}
  pa.decode q(%q : memref<?x16x256xf16>) kv(%kv : memref<?x2x16x1x256xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x16x256xf16>, memref<?x16xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 1, head_dim = 256>}
  return
}
