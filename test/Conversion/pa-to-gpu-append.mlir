// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu -verify-diagnostics | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu --pa-fp8-to-nvvm -verify-diagnostics | FileCheck %s --check-prefix=CVT

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// append_kv_slots: a CTA per new row (grid x = the rows), 128 threads over
// the row's 8 x 128 elements of K and V in 16-byte vectors, a thread's K
// and V loads before its stores; rows whose slot is negative or past the
// cache are skipped.
// CHECK-LABEL: func @append(
// CHECK-SAME: %[[KN:[^:]*]]: memref<?x8x128xf16>, %[[VN:[^:]*]]: memref<?x8x128xf16>, %[[SL:[^:]*]]: memref<?xi32>, %[[KV:[^:]*]]: memref<?x2x16x8x128xf16>
// CHECK: %[[N:.*]] = memref.dim %[[SL]], %c0
// CHECK: gpu.launch_func @pa_kernels::@pa_append_kv_slots blocks in (%[[N]], %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%[[KN]] : memref<?x8x128xf16>, %[[VN]] : memref<?x8x128xf16>, %[[SL]] : memref<?xi32>, %[[KV]] : memref<?x2x16x8x128xf16>)
// CHECK: gpu.func @pa_append_kv_slots(
// CHECK-SAME: pa.kernel = {args = ["k_new", "v_new", "slot_mapping", "kv"], block = array<i64: 128, 1, 1>, grid = ["batch", 1, 1], kind = "append_kv_slots", smem = 0 : i64}
// CHECK: %[[R:.*]] = gpu.block_id x
// CHECK: %[[S:.*]] = memref.load %{{.*}}[%[[R]]] : memref<?xi32>
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi slt
// CHECK: scf.if
// CHECK: scf.for
// CHECK: %[[XK:.*]] = vector.load %[[KN]][%[[R]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
// CHECK-NEXT: %[[XV:.*]] = vector.load %[[VN]][%[[R]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
// CHECK-NOT: scf.for
// CHECK: vector.store %[[XK]], %{{.*}}[%{{.*}}, %c0{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x2x16x8x128xf16>, vector<8xf16>
// CHECK-NOT: scf.for
// CHECK: vector.store %[[XV]], %{{.*}}[%{{.*}}, %c1{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x2x16x8x128xf16>, vector<8xf16>
func.func @append(%kn: memref<?x8x128xf16>, %vn: memref<?x8x128xf16>, %slots: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>) {
  pa.append_kv_slots new(%kn, %vn : memref<?x8x128xf16>, memref<?x8x128xf16>) slots(%slots : memref<?xi32>) outs(%kv : memref<?x2x16x8x128xf16>) {cache = #cache}
  return
}

// -----

// An fp8 cache (split K / V, HND, per-head scales) stores 16-element (16
// byte) vectors quantized: x / scale of its head, clamped to +-448,
// truncated to f8E4M3FN, which pa-fp8-to-nvvm turns into one
// cvt.rn.satfinite per pair.
// CHECK-LABEL: func @append_fp8(
// CHECK: gpu.func @pa_append_kv_slots(
// CHECK-SAME: args = ["k_new", "v_new", "slot_mapping", "k_scale", "v_scale", "k", "v"]
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<?x8x128xbf16>, vector<16xbf16>
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<?x8x128xbf16>, vector<16xbf16>
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<8xf32>
// CHECK: arith.divf {{.*}} : vector<16xf32>
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK: arith.truncf {{.*}} : vector<16xf32> to vector<16xf8E4M3FN>
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<?x8x16x128xf8E4M3FN>, vector<16xf8E4M3FN>
// CVT-LABEL: func @append_fp8(
// CVT: gpu.func @pa_append_kv_slots(
// CVT-COUNT-8: nvvm.convert.f32x2.to.f8x2 {{.*}} {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : vector<2xi8>(f8E4M3FN)
// CVT: arith.bitcast {{.*}} : vector<16xi8> to vector<16xf8E4M3FN>
// CVT-NOT: arith.truncf {{.*}}f8E4M3FN
func.func @append_fp8(%kn: memref<?x8x128xbf16>, %vn: memref<?x8x128xbf16>, %slots: memref<?xi32>, %ks: memref<8xf32>, %vs: memref<8xf32>, %k: memref<?x8x16x128xf8E4M3FN>, %v: memref<?x8x16x128xf8E4M3FN>) {
  pa.append_kv_slots new(%kn, %vn : memref<?x8x128xbf16>, memref<?x8x128xbf16>) slots(%slots : memref<?xi32>) scales(%ks, %vs : memref<8xf32>, memref<8xf32>) outs(%k, %v : memref<?x8x16x128xf8E4M3FN>, memref<?x8x16x128xf8E4M3FN>) {cache = #pa.paged_kv<hnd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

// A head dim that 16-byte vectors do not divide is refused at the op.
func.func @append_bad_dim(%kn: memref<?x2x36xf16>, %vn: memref<?x2x36xf16>, %slots: memref<?xi32>, %kv: memref<?x2x4x2x36xf16>) {
  // expected-error @+1 {{cache writes on the GPU store 16-byte vectors: the head dim must be a multiple of 8, got 36}}
  pa.append_kv_slots new(%kn, %vn : memref<?x2x36xf16>, memref<?x2x36xf16>) slots(%slots : memref<?xi32>) outs(%kv : memref<?x2x4x2x36xf16>) {cache = #pa.paged_kv<nhd, page_size = 4, kv_heads = 2, head_dim = 36>}
  return
}
