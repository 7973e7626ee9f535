// RUN: pa-opt %s --convert-pa-to-gpu="decode-kv-stages=2" --pa-promote-tiles="smem-layout=pad" | FileCheck %s
// RUN: pa-opt %s --convert-pa-to-gpu="decode-kv-stages=2" --pa-promote-tiles="smem-layout=pad row-pad-bytes=16" | FileCheck %s --check-prefix=PAD16
// RUN: pa-opt %s --convert-pa-to-gpu="decode-kv-stages=2" --pa-promote-tiles="fp8-widen=shared" | FileCheck %s --check-prefix=SWZ
// RUN: pa-opt %s --convert-pa-to-gpu="decode-kv-stages=2" --pa-promote-tiles | FileCheck %s --check-prefix=REG
// RUN: pa-opt %s --convert-pa-to-gpu --pa-promote-tiles | FileCheck %s --check-prefix=ST3
// RUN: not pa-opt %s --convert-pa-to-gpu --pa-promote-tiles="fp8-widen=texture" 2>&1 | FileCheck %s --check-prefix=BADWIDEN
// RUN: not pa-compile --fp8-widen=texture -o %t 2>&1 | FileCheck %s --check-prefix=BADCOMPILE
// RUN: not pa-opt %s --pa-lower-to-nvvm="fp8-widen=texture" 2>&1 | FileCheck %s --check-prefix=BADPIPE
// BADCOMPILE: pa-compile: --fp8-widen must be registers or shared, got 'texture'
// BADPIPE: fp8-widen must be registers or shared
// RUN: not pa-opt %s --convert-pa-to-gpu --pa-promote-tiles="row-pad-bytes=8" 2>&1 | FileCheck %s --check-prefix=BADPAD
// RUN: not pa-opt %s --convert-pa-to-gpu --pa-promote-tiles="smem-layout=diagonal" 2>&1 | FileCheck %s --check-prefix=BADLAYOUT

// pa-promote-tiles over an fp8 cache (the tensor-core decode, GQA 4, D
// 128, 64-key tiles, 2 stages; the ST3 run: the one-pass fp8 decode's default, 3
// stages, where D is a multiple of 128).
//
// Page lookups: a lane copies 4 chunk rounds of its warp's 16 keys a tile
// (one 128-byte row is 8 chunks). In pa_decode (one pass, the loop starts
// at key 0) those 16 keys lie in one page: one entry a lane, whatever the
// stages (onePage, test/Conversion/promote-tiles-warp-pages.mlir); the
// split-KV kernel's lookups: test/Conversion/promote-tiles-fp8-split.mlir.
// ST3:       dynamic_shared_memory_size %c53248_i32
// ST3:       gpu.func @pa_decode({{.*}}kv_stages = 3
// ST3:       scf.for %{{.*}} iter_args(%[[PAGE:.*]] = %{{.*}}) -> (i32) {
// ST3-NOT:   gpu.shuffle
// ST3:       arith.index_cast %[[PAGE]] : i32 to index
// ST3:       nvgpu.device_async_create_group
//
// The default (fp8-widen=registers; D a multiple of 128, swizzled rows): Q
// ([16][128] f16 = 4096 bytes), then the fp8 stages as bytes ([2 x 2 x
// 64][128] = 32768 bytes): 36864 bytes in all. Each 16-byte copy lands at
// its chunk XOR the row's low 3 bits (column col ^ (row % 8) * 16, the
// swizzle of the 16-bit rows), nothing is widened here: pa.tile.qk and
// pa.tile.pv read fp8 views of the stage, which pa-tile-to-mma widens in
// registers (test/Conversion/tile-to-mma-fp8.mlir).
// REG:       dynamic_shared_memory_size %c36864_i32
// REG:       gpu.func @pa_decode({{.*}}smem = 36864 : i64{{.*}}pa.smem_swizzle
// REG:       %[[Q16:.*]] = memref.view %{{.*}}[%c0{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<16x128xf16, #gpu.address_space<workgroup>>
// REG:       %[[B8:.*]] = memref.view %{{.*}}[%c4096{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<256x128xf8E4M3FN, #gpu.address_space<workgroup>>
// REG-DAG:   %[[Q:.*]] = memref.subview %[[Q16]][0, 0] [16, 128] [1, 1]
// REG-DAG:   %[[K0:.*]] = memref.subview %[[B8]][0, 0] [64, 128] [1, 1]
// REG-DAG:   %[[V0:.*]] = memref.subview %[[B8]][128, 0] [64, 128] [1, 1]
// Q's two copy rounds (16 rows of 16 chunks over 128 threads), then K's:
// REG:       nvgpu.device_async_copy %arg0
// REG:       nvgpu.device_async_copy %arg0
// The cache read as a 1-D memref: a copy's source is page * 32768 bytes
// plus its offset within the page (test/Conversion/promote-tiles-warp-pages.mlir).
// REG:       %[[KV8:.*]] = memref.reinterpret_cast %arg1 to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?x2x16x8x128xf8E4M3FN> to memref<?xf8E4M3FN>
// REG:       %[[R8:.*]] = arith.andi %[[ROW:.*]], %c7_{{[0-9]+}} : index
// REG-NEXT:  %[[M:.*]] = arith.muli %[[R8]], %c16_{{[0-9]+}} : index
// REG-NEXT:  %[[COL:.*]] = arith.xori %{{.*}}, %[[M]] : index
// REG:       nvgpu.device_async_copy %[[KV8]][{{.*}}], %[[B8]][%[[ROW]], %[[COL]]], 16
// REG-NOT:   gpu.shuffle
// REG:       scf.for
// REG-NOT:     arith.extf
// REG-NOT:     gpu.shuffle
// REG-NOT:     vector.store
// REG:         pa.tile.qk ins(%[[Q]], %[[K0]] : memref<16x128xf16, strided<[128, 1]>, #gpu.address_space<workgroup>>, memref<64x128xf8E4M3FN, strided<[128, 1]>, #gpu.address_space<workgroup>>)
// REG:         pa.tile.pv ins(%{{.*}}, %[[V0]] : memref<16x64xf32>, memref<64x128xf8E4M3FN, strided<[128, 1], offset: 16384>, #gpu.address_space<workgroup>>)
// BADWIDEN: pa-promote-tiles: fp8-widen must be registers or shared, got 'texture'
//
// fp8-widen=shared (and the other runs, whose padded rows keep it): shared
// memory holds Q and one pair of K / V
// tiles of the queries' type ([16 + 2 x 64][128 + 16] f16 = 41472 bytes),
// then the fp8 stages as bytes ([2 x 2 x 64][128 + 32] = 40960 bytes):
// 82432 bytes in all, the launch's dynamic shared memory. Rows are padded
// by 32 bytes in a decode kernel (sector-aligned copies); row-pad-bytes=16
// gives the prefill kernels' padding ([16 + 128][136] f16 and [256][144]
// bytes, 76032 in all). The copies move
// 16 fp8 elements each into the stages. The decode's warps split each
// tile's keys (kv_warps 4), so each warp copies, widens and reads only the
// rows of its 16 keys (rows 16 w + lane / 8 + 4 i, lane % 8 the 16-byte
// column) and a warp barrier (nvvm.bar.warp.sync) replaces the CTA's: each
// step waits for its stage, passes the warp barrier, issues the next
// copies, widens its stage into the f16 tiles (16-byte loads, arith.extf,
// 16-byte stores: each thread the chunks it copied), passes a second warp
// barrier and runs the tile math on the f16 tiles; k_scale stays on
// pa.tile.qk. Q (shared by every warp) is made visible by the CTA barrier
// before the loop. (The padded rows of smem-layout=pad.)
//
// fp8-widen=shared with the default layout (swizzle) at D = 128: unpadded rows,
// [16 + 128][128] f16 = 36864 bytes, then [256][128] bytes, 69632 in all.
// The f16 rows are XOR-swizzled (kernel attribute pa.smem_swizzle): the Q
// copies land at column col ^ (row % 8) * 8, and each widened 16-element
// chunk is stored as two halves (vector.shuffle), each at its own swizzled
// column; the fp8 byte stages stay unswizzled (whole rows copied and read).
// SWZ:       dynamic_shared_memory_size %c69632_i32
// SWZ:       gpu.func @pa_decode({{.*}}smem = 69632 : i64{{.*}}pa.smem_swizzle
// SWZ:       %[[WIDE:.*]] = memref.view %{{.*}}[%c0{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<144x128xf16, #gpu.address_space<workgroup>>
// SWZ:       %[[BYTES:.*]] = memref.view %{{.*}}[%c36864{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<256x128xf8E4M3FN, #gpu.address_space<workgroup>>
// SWZ:       %[[R8:.*]] = arith.andi %[[QROW:.*]], %c7
// SWZ:       %[[M:.*]] = arith.muli %[[R8]], %c8
// SWZ-NEXT:  %[[QCOL:.*]] = arith.xori %{{.*}}, %[[M]] : index
// SWZ:       nvgpu.device_async_copy %arg0[{{.*}}], %[[WIDE]][%[[QROW]], %[[QCOL]]], 8
// SWZ:       scf.for
// SWZ:         nvgpu.device_async_copy %{{.*}}[{{.*}}], %[[BYTES]][{{.*}}], 16
// SWZ:         %[[X:.*]] = vector.load %[[BYTES]][{{.*}}]
// SWZ-NEXT:    %[[W:.*]] = arith.extf %[[X]] : vector<16xf8E4M3FN> to vector<16xf16>
// SWZ:         %[[H0:.*]] = vector.shuffle %[[W]], %[[W]] [0, 1, 2, 3, 4, 5, 6, 7]
// SWZ:         %[[C0:.*]] = arith.xori
// SWZ-NEXT:    vector.store %[[H0]], %[[WIDE]][%{{.*}}, %[[C0]]] {alignment = 16 : i64} : memref<144x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// SWZ:         %[[H1:.*]] = vector.shuffle %[[W]], %[[W]] [8, 9, 10, 11, 12, 13, 14, 15]
// SWZ:         %[[C1:.*]] = arith.xori
// SWZ-NEXT:    vector.store %[[H1]], %[[WIDE]][%{{.*}}, %[[C1]]] {alignment = 16 : i64}
// BADLAYOUT: pa-promote-tiles: smem-layout must be swizzle or pad, got 'diagonal'

// PAD16:       dynamic_shared_memory_size %c76032_i32
// PAD16:       memref.view %{{.*}}[%c0{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<144x136xf16, #gpu.address_space<workgroup>>
// PAD16:       memref.view %{{.*}}[%c39168{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<256x144xf8E4M3FN, #gpu.address_space<workgroup>>
// BADPAD: pa-promote-tiles: row-pad-bytes must be 16 or 32 (0: 32 in decode kernels, else 16), got 8

// CHECK:       gpu.launch_func @pa_kernels::@pa_decode
// CHECK-SAME:    dynamic_shared_memory_size %c82432_i32
// CHECK:       gpu.func @pa_decode
// CHECK:         %[[RAW:.*]] = gpu.dynamic_shared_memory
// CHECK:         %[[WIDE:.*]] = memref.view %[[RAW]][%c0{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<144x144xf16, #gpu.address_space<workgroup>>
// CHECK:         %[[BYTES:.*]] = memref.view %[[RAW]][%c41472{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<256x160xf8E4M3FN, #gpu.address_space<workgroup>>
// CHECK-DAG:     %[[Q:.*]] = memref.subview %[[WIDE]][0, 0] [16, 128] [1, 1]
// CHECK-DAG:     %[[K:.*]] = memref.subview %[[WIDE]][16, 0] [64, 128] [1, 1]
// CHECK-DAG:     %[[V:.*]] = memref.subview %[[WIDE]][80, 0] [64, 128] [1, 1]
// CHECK:         %[[TID:.*]] = gpu.thread_id x
// CHECK:         %[[KS:.*]] = memref.load %arg2
// CHECK:         %[[KV:.*]] = memref.reinterpret_cast %arg1
// CHECK:         %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK:         %[[WARP:.*]] = arith.divui %[[TID]], %c32
// CHECK-NEXT:    %[[WROW:.*]] = arith.muli %[[WARP]], %c16
// CHECK:         nvgpu.device_async_copy %[[KV]][{{.*}}], %[[BYTES]][{{.*}}], 16, %{{.*}} {bypassL1} : memref<?xf8E4M3FN> to memref<256x160xf8E4M3FN
// CHECK:         gpu.barrier
// CHECK:         scf.for
// CHECK:           nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NOT:       gpu.barrier
// CHECK:           nvvm.bar.warp.sync %{{.*}} : i32
// CHECK:           nvgpu.device_async_copy %[[KV]][{{.*}}], %[[BYTES]][{{.*}}], 16
// CHECK:           %[[X:.*]] = vector.load %[[BYTES]][{{.*}}] {alignment = 16 : i64} : memref<256x160xf8E4M3FN, #gpu.address_space<workgroup>>, vector<16xf8E4M3FN>
// CHECK-NEXT:      %[[W:.*]] = arith.extf %[[X]] : vector<16xf8E4M3FN> to vector<16xf16>
// CHECK:           vector.store %[[W]], %[[WIDE]][{{.*}}] {alignment = 16 : i64} : memref<144x144xf16, #gpu.address_space<workgroup>>, vector<16xf16>
// CHECK-NOT:       gpu.barrier
// CHECK:           nvvm.bar.warp.sync %{{.*}} : i32
// CHECK-NEXT:      pa.tile.qk ins(%[[Q]], %[[K]] : {{.*}}) k_scale(%[[KS]])
// CHECK:           pa.tile.pv ins(%{{.*}}, %[[V]] :
func.func @decode(%q: memref<4x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %ks: memref<1xf32>, %vs: memref<8xf32>, %ip: memref<5xi32>, %ix: memref<?xi32>, %lp: memref<4xi32>, %o: memref<4x32x128xf16>, %l: memref<4x32xf32>) {
  pa.decode q(%q : memref<4x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>) scales(%ks, %vs : memref<1xf32>, memref<8xf32>) pages(%ip, %ix, %lp : memref<5xi32>, memref<?xi32>, memref<4xi32>) outs(%o, %l : memref<4x32x128xf16>, memref<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}
