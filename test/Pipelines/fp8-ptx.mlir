// RUN: pa-opt %s --split-input-file --pa-lower-to-nvvm="chip=sm_90 format=isa" | FileCheck %s
// RUN: pa-opt %s --split-input-file --pa-lower-to-nvvm="chip=sm_90 format=isa" | not grep -E "(ld|st)\.local|__nv_"
// RUN: pa-opt %s --split-input-file --pa-lower-to-nvvm="chip=sm_90 format=isa split-kv-work-list=true" | FileCheck %s --check-prefix=SPLIT

// Over an fp8 cache the kernels copy the fp8 bytes with cp.async (16
// elements a copy) and run the same ldmatrix / mma.sync math. The decode
// reads the swizzled fp8 stages with ldmatrix and widens the fragments in
// registers (pa-promote-tiles fp8-widen=registers): Q's 16-element groups
// permuted once in shared memory (16-byte loads and stores behind a
// barrier), K's words converted as they are, V's after one byte permute
// (prmt) each; the hardware conversion is cvt.rn.f16x2.e4m3x2 / .e5m2x2
// (then f16 -> bf16 through f32 for bf16 queries). The prefill widens each
// tile in shared memory first. No local memory. The split-KV program gets
// the fp8 decode_partial beside the merge.

// CHECK: .entry pa_decode(
// CHECK-SAME: cp.async.cg.shared.global
// CHECK-SAME: ld.shared.v4.b32
// CHECK-SAME: st.shared.v4.b32
// CHECK-SAME: bar.sync
// CHECK-SAME: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-SAME: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-SAME: prmt.b32
// CHECK-SAME: cvt.rn.f16x2.e4m3x2
// CHECK-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// Split-KV is one kernel (decode_split): the partial states, then the
// arrival count and the last CTA's merge.
// SPLIT: .entry pa_decode_split(
// SPLIT-SAME: cvt.rn.f16x2.e4m3x2
// SPLIT-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// SPLIT-SAME: membar.gl
// SPLIT-SAME: atom.global.add.u32
// SPLIT-SAME: bar.red.or.pred
// SPLIT-NOT: pa_merge_segments
#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @decode(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf8E4M3FN>, %ks: tensor<1xf32>, %vs: tensor<1xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = pa.decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf8E4M3FN>) scales(%ks, %vs : tensor<1xf32>, tensor<1xf32>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache}
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// -----

// CHECK: .entry pa_prefill(
// CHECK-SAME: cp.async.cg.shared.global
// CHECK-SAME: ld.shared.v4.b32
// CHECK-SAME: cvt.rn.f16x2.e5m2x2
// CHECK-SAME: cvt.rn.bf16x2.f32
// CHECK-SAME: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
#cache = #pa.paged_kv<hnd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @prefill(%q: tensor<?x8x128xbf16>, %qi: tensor<?xi32>, %k: tensor<?x8x16x128xf8E5M2>, %v: tensor<?x8x16x128xf8E5M2>, %ks: tensor<8xf32>, %vs: tensor<8xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x8x128xbf16>, %l: tensor<?x8xf32>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %r:2 = pa.prefill q(%q, %qi : tensor<?x8x128xbf16>, tensor<?xi32>) kv(%k, %v : tensor<?x8x16x128xf8E5M2>, tensor<?x8x16x128xf8E5M2>) scales(%ks, %vs : tensor<8xf32>, tensor<8xf32>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>) {cache = #cache, causal}
  return %r#0, %r#1 : tensor<?x8x128xbf16>, tensor<?x8xf32>
}
