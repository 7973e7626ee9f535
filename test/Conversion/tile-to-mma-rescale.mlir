// RUN: pa-opt %s --convert-pa-to-gpu --pa-promote-tiles --pa-tile-to-mma | FileCheck %s
// RUN: pa-opt %s --convert-pa-to-gpu --pa-promote-tiles --pa-tile-to-mma="rescale-threshold=0" | FileCheck %s --check-prefix=EVERY
// RUN: not pa-opt %s --convert-pa-to-gpu --pa-promote-tiles --pa-tile-to-mma="rescale-threshold=16" 2>&1 | FileCheck %s --check-prefix=BAD

// Lazy rescaling in pa-tile-to-mma (the default, rescale-threshold=8): a
// row's reference maximum moves only when the tile's maximum exceeds it by
// more than 8 (base 2): per row half, the new maximum is compared with the
// old one plus 8 and kept or moved by a select; the thread's rows are or-ed
// and the accumulators (2 m blocks x 16 n8 fragments here) are multiplied
// by alpha only under an scf.if on that, whose else yields them unchanged.
// CHECK-LABEL: gpu.func @pa_prefill(
// CHECK: scf.for
// CHECK: gpu.subgroup_reduce maximumf
// CHECK: %[[BOUND:.*]] = arith.addf %{{.*}}, %[[T:.*]] : f32
// CHECK: %[[MOVED:.*]] = arith.cmpf ogt, %{{.*}}, %[[BOUND]] : f32
// CHECK: arith.select %[[MOVED]]
// CHECK: arith.ori
// CHECK: arith.ori
// CHECK: %[[ANY:.*]] = arith.ori
// CHECK: scf.if %[[ANY]] -> (vector<2x2xf32>, vector<2x2xf32>, {{.*}}, vector<2x2xf32>) {
// CHECK-COUNT-128: arith.mulf
// CHECK: scf.yield
// CHECK: } else {
// CHECK-NEXT: scf.yield
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}

// rescale-threshold=0: the classic online softmax, acc *= alpha on every
// tile, no or-ed condition and no scf.if around the multiplies.
// EVERY-LABEL: gpu.func @pa_prefill(
// EVERY: gpu.subgroup_reduce maximumf
// EVERY-NOT: arith.ori
// EVERY: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}

// BAD: pa-tile-to-mma: rescale-threshold must lie in [0, 15]

func.func @prefill(%q: memref<?x32x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.prefill q(%q, %qi : memref<?x32x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}
