// RUN: pa-opt %s --convert-pa-to-gpu -split-input-file -verify-diagnostics | FileCheck %s --enable-var-scope

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// A CTA per (request, kv head), 128 threads; the kernel takes the op's
// operands; 16-byte vector loads of q/K/V rows; clustered subgroup reductions
// over the 16 lanes of a token; the groups' states go through workgroup
// memory behind a barrier.
// CHECK-LABEL: func @decode
// CHECK-SAME: %[[Q:[^:]*]]: memref<?x32x128xf16>, %[[KV:[^:]*]]: memref<?x2x16x8x128xf16>, %[[IP:[^:]*]]: memref<?xi32>, %[[IX:[^:]*]]: memref<?xi32>, %[[LP:[^:]*]]: memref<?xi32>, %[[O:[^:]*]]: memref<?x32x128xf16>, %[[L:[^:]*]]: memref<?x32xf32>
// CHECK-DAG: %[[B:.*]] = memref.dim %[[O]], %c0
// CHECK-DAG: %[[HKV:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[NT:.*]] = arith.constant 128 : index
// CHECK: gpu.launch_func @pa_kernels::@pa_decode blocks in (%[[B]], %[[HKV]], %{{.*}}) threads in (%[[NT]], %{{.*}}, %{{.*}}) args(%[[Q]] : memref<?x32x128xf16>, %[[KV]] : memref<?x2x16x8x128xf16>, %[[IP]] : memref<?xi32>, %[[IX]] : memref<?xi32>, %[[LP]] : memref<?xi32>, %[[O]] : memref<?x32x128xf16>, %[[L]] : memref<?x32xf32>)
// CHECK: gpu.module @pa_kernels
// CHECK: gpu.func @pa_decode(%{{.*}}: memref<?x32x128xf16>, {{.*}}) workgroup(%{{.*}} : memref<64xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<4096xf32, #gpu.address_space<workgroup>>) kernel
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<?x32x128xf16>, vector<8xf16>
// CHECK: scf.for
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<?x2x16x8x128xf16>, vector<8xf16>
// CHECK: gpu.subgroup_reduce add {{.*}} cluster(size = 16) : (f32) -> f32
// CHECK: ex2.approx.ftz.f32
// CHECK: gpu.barrier
func.func @decode(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.decode q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #cache}
  return
}

// -----

// merge_segments: a CTA per (segment, head).
// CHECK-LABEL: func @merge
// CHECK: %[[S:.*]] = memref.dim %{{.*}}, %c0 : memref<?x32x128xf16>
// CHECK: %[[H:.*]] = memref.dim %{{.*}}, %c1 : memref<?x32x128xf16>
// CHECK: gpu.launch_func @pa_kernels::@pa_merge_segments blocks in (%[[S]], %[[H]], %{{.*}})
func.func @merge(%op: memref<?x32x128xf32>, %lp: memref<?x32xf32>, %wi: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.merge_segments states(%op, %lp : memref<?x32x128xf32>, memref<?x32xf32>) segments(%wi : memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}

// -----

// Head dims whose 16-byte lanes are not a power of two are rejected.
func.func @bad_head_dim(%q: memref<?x4x96xf16>, %kv: memref<?x2x16x4x96xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x4x96xf16>, %l: memref<?x4xf32>) {
  // expected-error @+1 {{head dim / 8 must be a power of two <= 32, got 12}}
  pa.decode q(%q : memref<?x4x96xf16>) kv(%kv : memref<?x2x16x4x96xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x4x96xf16>, memref<?x4xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 4, head_dim = 96>}
  return
}

// -----

// 16 heads of 256 dims per KV head: 4 lane groups x 16 heads x 258 floats
// exceed the 48 KiB of static shared memory of the cross-group merge.
func.func @too_much_smem(%q: memref<?x16x256xf16>, %kv: memref<?x2x16x1x256xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x16x256xf16>, %l: memref<?x16xf32>) {
  // expected-error @+1 {{the cross-group merge needs 66048 bytes of shared memory (4 lane groups x 16 heads), more than 48 KiB}}
  pa.decode q(%q : memref<?x16x256xf16>) kv(%kv : memref<?x2x16x1x256xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x16x256xf16>, memref<?x16xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 1, head_dim = 256>}
  return
}
