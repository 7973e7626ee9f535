// RUN: pa-opt %s --split-input-file --pa-lower-to-nvvm="chip=sm_90 format=isa" | FileCheck %s
// RUN: pa-opt %s --split-input-file --pa-lower-to-nvvm="chip=sm_90 format=isa" | not grep -E "(ld|st)\.local|__nv_"

// The cache write through the whole GPU pipeline: 16-byte loads of the new
// rows and 16-byte stores into the cache (st.global.v4), no local memory;
// into an fp8 cache the f32 quotient (div.rn.f32, the CPU lowering's
// x / scale) goes through cvt.rn.satfinite.e4m3x2.f32 and the 16 bytes of a
// vector are stored at once.

// CHECK: .entry pa_append_kv_slots(
// CHECK-NOT: .entry
// CHECK: ld.global{{(\.nc)?}}.v4
// CHECK-NOT: .entry
// CHECK: st.global.v4.b32
#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @append(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %slots: tensor<?xi32>, %kv: tensor<?x2x16x8x128xf16>) -> tensor<?x2x16x8x128xf16> {
  %r = pa.append_kv_slots new(%kn, %vn : tensor<?x8x128xf16>, tensor<?x8x128xf16>) slots(%slots : tensor<?xi32>) outs(%kv : tensor<?x2x16x8x128xf16>) {cache = #cache}
  return %r : tensor<?x2x16x8x128xf16>
}

// -----

// CHECK: .entry pa_append_kv_slots(
// CHECK-NOT: .entry
// CHECK: div.rn.f32
// CHECK-NOT: .entry
// CHECK: cvt.rn.satfinite.e4m3x2.f32
// CHECK-NOT: .entry
// CHECK: st.global.v4.b32
#cache8 = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @append_fp8(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %slots: tensor<?xi32>, %ks: tensor<8xf32>, %vs: tensor<8xf32>, %kv: tensor<?x2x16x8x128xf8E4M3FN>) -> tensor<?x2x16x8x128xf8E4M3FN> {
  %r = pa.append_kv_slots new(%kn, %vn : tensor<?x8x128xf16>, tensor<?x8x128xf16>) slots(%slots : tensor<?xi32>) scales(%ks, %vs : tensor<8xf32>, tensor<8xf32>) outs(%kv : tensor<?x2x16x8x128xf8E4M3FN>) {cache = #cache8}
  return %r : tensor<?x2x16x8x128xf8E4M3FN>
}
