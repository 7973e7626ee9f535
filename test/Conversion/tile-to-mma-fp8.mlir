// RUN: pa-opt %s --convert-pa-to-gpu --pa-promote-tiles --pa-tile-to-mma | FileCheck %s
// RUN: pa-opt %s --convert-pa-to-gpu --pa-promote-tiles --pa-tile-to-mma="narrow-pv=false" | FileCheck %s --check-prefix=WIDE

// pa-tile-to-mma over fp8 K / V tiles (pa-promote-tiles' fp8-widen=registers:
// the tensor-core decode of GQA 4, D 128, e4m3, 64-key tiles, 3 stages:
// the one-pass fp8 decode's default). The fp8
// stages are read through a 16-bit view of the same shared memory
// ([384][64] f16 at byte 4096). Before the KV loop every thread permutes one
// 16-element group of Q (two 16-byte chunks, new[8h + 2t + i] = old[4t + 2h
// + i]) behind a CTA barrier, so that Q's ldmatrix A fragments match K's
// fragments: one 8x8 matrix of words is 8 keys x 16 dims, lane (g, t)
// holding dims 4t .. 4t + 3 of key g, a whole B fragment once its two
// 16-bit halves are widened (vector.bitcast to 2 x i16, arith.extf of each
// pair: cvt.rn.f16x2.e4m3x2 after pa-fp8-to-nvvm). V comes from
// ldmatrix.trans of the words, its 4 bytes permuted (0, 2, 1, 3: dims 2g and
// 2g + 1 of keys 2t, 2t + 1) before the halves are widened into V^T's A
// fragment (narrow rows) or two B fragments (narrow-pv=false). The stores
// write o from that layout: narrow rows 2 dims a store (16 dp + 2 (lane /
// 4) + {0, 1}), O += P V 4 dims a store (16 c + 4 (lane % 4) + {0..3}).
// CHECK:       gpu.func @pa_decode
// CHECK:         %[[RAW:.*]] = gpu.dynamic_shared_memory
// CHECK:         %[[W:.*]] = memref.view %[[RAW]][%c4096{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<384x64xf16, #gpu.address_space<workgroup>>
// CHECK:         %[[LO:.*]] = vector.load %{{.*}} : memref<16x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK:         %[[HI:.*]] = vector.load %{{.*}} : memref<16x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK:         vector.shuffle %[[LO]], %[[HI]] [0, 1, 4, 5, 8, 9, 12, 13]
// CHECK:         vector.shuffle %[[LO]], %[[HI]] [2, 3, 6, 7, 10, 11, 14, 15]
// CHECK:         gpu.barrier
// CHECK:         nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false} : memref<16x128xf16
// CHECK:         scf.for
// CHECK:           %[[KF:.*]] = nvgpu.ldmatrix %[[W]][{{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK:           %[[KW:.*]] = vector.extract %[[KF]][0] : vector<2xf16> from vector<4x2xf16>
// CHECK:           %[[KB:.*]] = vector.bitcast %[[KW]] : vector<2xf16> to vector<4xi8>
// CHECK-NEXT:      %[[KH:.*]] = vector.bitcast %[[KB]] : vector<4xi8> to vector<2xi16>
// CHECK:           arith.extf %{{.*}} : vector<2xf8E4M3FN> to vector<2xf16>
// CHECK:           nvgpu.mma.sync
// CHECK:           %[[VF:.*]] = nvgpu.ldmatrix %[[W]][{{.*}}] {numTiles = 4 : i32, transpose = true}
// CHECK:           %[[VW:.*]] = vector.extract %[[VF]][0] : vector<2xf16> from vector<4x2xf16>
// CHECK:           %[[VB:.*]] = vector.bitcast %[[VW]] : vector<2xf16> to vector<4xi8>
// CHECK-NEXT:      vector.shuffle %[[VB]], %[[VB]] [0, 2, 1, 3] : vector<4xi8>, vector<4xi8>
// CHECK:           arith.extf %{{.*}} : vector<2xf8E4M3FN> to vector<2xf16>
// CHECK:           nvgpu.mma.sync
// CHECK:         vector.store %{{.*}}, %arg7[{{.*}}] {alignment = 4 : i64} : memref<4x32x128xf16>, vector<2xf16>
// WIDE:          gpu.barrier
// WIDE:          scf.for
// WIDE:            nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true}
// WIDE:            vector.shuffle %{{.*}} [0, 2, 1, 3] : vector<4xi8>, vector<4xi8>
// WIDE:          vector.store %{{.*}}, %arg7[{{.*}}] {alignment = 8 : i64} : memref<4x32x128xf16>, vector<4xf16>
func.func @decode(%q: memref<4x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %ks: memref<1xf32>, %vs: memref<8xf32>, %ip: memref<5xi32>, %ix: memref<?xi32>, %lp: memref<4xi32>, %o: memref<4x32x128xf16>, %l: memref<4x32xf32>) {
  pa.decode q(%q : memref<4x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>) scales(%ks, %vs : memref<1xf32>, memref<8xf32>) pages(%ip, %ix, %lp : memref<5xi32>, memref<?xi32>, memref<4xi32>) outs(%o, %l : memref<4x32x128xf16>, memref<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}
