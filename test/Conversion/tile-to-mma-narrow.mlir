// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="decode-kernel=tensor-core" --pa-promote-tiles --pa-tile-to-mma | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="decode-kernel=tensor-core" --pa-promote-tiles --pa-tile-to-mma="narrow-pv=false" | FileCheck %s --check-prefix=WIDE --enable-var-scope
// RUN: not pa-opt %s --split-input-file --convert-pa-to-gpu --pa-promote-tiles --pa-tile-to-mma="narrow-pv=maybe" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not pa-compile --narrow-pv=maybe -o %t 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: for the --narrow-pv option: 'maybe' is invalid value for boolean argument

// pa-tile-to-mma's narrow rows: the tensor-core decode of a group of at
// most 8 heads holds its valid rows in row half 0 of the one m16 block
// (the store's rows, one query, times the group), so P V is computed
// transposed, O^T += V^T P^T: head dims as the m16 rows, the tile's rows as
// the n8 columns. D = 64: D / 16 = 4 O^T fragments cross the KV loop
// instead of D / 8 = 8 C fragments, and row half 1 keeps no softmax state
// (two m / l values instead of four). V^T's A fragment is one
// ldmatrix.x4.trans, fed to mma.sync whole; P^T is the B operand. The
// alphas of a thread's two columns come from the lanes holding those rows
// (gpu.shuffle idx). At the store each thread shuffles in the m / l of its
// two columns, the key warps merge O^T through 3 x 640 floats of scratch
// (half the C layout's 3 x 2176) and o is written from the O^T layout.

// CHECK-LABEL: gpu.func @pa_decode(
// CHECK: scf.for {{.*}} -> (i32, f32, f32, f32, f32, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>) {
// CHECK: gpu.shuffle idx
// CHECK: gpu.shuffle idx
// CHECK: %[[VT:.*]] = nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-NEXT: nvgpu.mma.sync(%[[VT]], %{{.*}}, %{{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>)
// CHECK: scf.yield
// CHECK-COUNT-4: gpu.shuffle idx
// CHECK: memref.view {{.*}} to memref<1920xf32, #gpu.address_space<workgroup>>
// CHECK: memref.store {{.*}} : memref<?x32x64xf16>
// CHECK: gpu.return
// narrow-pv=false: O += P V with D / 8 accumulators; V's ldmatrix gives
// two B fragments.
// WIDE-LABEL: gpu.func @pa_decode(
// WIDE: scf.for {{.*}} -> (i32, f32, f32, f32, f32, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>) {
// WIDE-NOT: gpu.shuffle idx
// WIDE: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// WIDE-NOT: gpu.shuffle idx
// WIDE: gpu.return
func.func @decode(%q: memref<?x32x64xf16>, %kv: memref<?x2x16x8x64xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x64xf16>, %l: memref<?x32xf32>) {
  pa.decode q(%q : memref<?x32x64xf16>) kv(%kv : memref<?x2x16x8x64xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x64xf16>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 64>}
  return
}

// -----

// A group of 16 fills both row halves: O += P V whatever the option.
// CHECK-LABEL: gpu.func @pa_decode(
// CHECK: scf.for {{.*}} -> (i32, f32, f32, f32, f32, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>) {
// CHECK-NOT: gpu.shuffle idx
// CHECK: gpu.return
// WIDE-LABEL: gpu.func @pa_decode(
// WIDE: scf.for {{.*}} -> (i32, f32, f32, f32, f32, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>) {
func.func @decode_g16(%q: memref<?x32x64xf16>, %kv: memref<?x2x16x2x64xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x64xf16>, %l: memref<?x32xf32>) {
  pa.decode q(%q : memref<?x32x64xf16>) kv(%kv : memref<?x2x16x2x64xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x64xf16>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 2, head_dim = 64>}
  return
}
