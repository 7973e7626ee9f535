// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_90 format=isa decode-kernel=cuda-core" | FileCheck %s
// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_80 format=isa decode-kernel=cuda-core" | FileCheck %s --check-prefix=SM80
// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_90 format=isa decode-kernel=cuda-core" | not grep -E "(ld|st)\.local|__nv_"
// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_90 format=isa split-kv-work-list=true decode-kernel=cuda-core" | FileCheck %s --check-prefix=SPLIT
// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_90 format=isa split-kv-work-list=true decode-kernel=cuda-core split-kv-merge=separate" | FileCheck %s --check-prefix=SEP
// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_90 format=isa split-kv-work-list=true" | FileCheck %s --check-prefix=TCSPLIT
// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_90 format=isa split-kv-work-list=true" | not grep -E "(ld|st)\.local|__nv_"
// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_90 format=isa" | FileCheck %s --check-prefix=TC
// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_90 format=isa" | not grep -E "(ld|st)\.local|__nv_"
// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_90 format=isa l2-prefetch-bytes=0" | FileCheck %s --check-prefix=NOPREFETCH

// The CUDA-core decode kernel's PTX has what the passes promise: cp.async
// copies of q and the K/V rows into shared memory, a barrier, 16-byte shared
// loads of each lane's chunks, butterfly shuffles for the dot products, ex2
// for the softmax, shared memory for the lane groups' merge, and no local
// memory (spills or register arrays).

// CHECK: gpu.binary @pa_kernels
// CHECK-SAME: .target sm_90
// CHECK-SAME: .entry pa_decode(
// CHECK-SAME: cp.async.cg.shared.global
// CHECK-SAME: bar.sync
// CHECK-SAME: ld.shared.v4
// CHECK-SAME: shfl.sync.bfly.b32
// CHECK-SAME: ex2.approx.ftz.f32
// CHECK-SAME: st.shared
// SM80: .target sm_80
// SM80-SAME: .entry pa_decode(
// The default (decode-kernel=auto) for this group of 4 at f16 is the
// tensor-core decode of the tile pipeline: cp.async copies of K/V through
// the page table (each with a 128-byte L2 prefetch size,
// pa-cp-async-l2-prefetch; none with l2-prefetch-bytes=0), ldmatrix, mma.sync, a warp barrier per K/V tile (each
// warp copies and reads only its keys' rows), and the warps' merge through
// shared memory behind barriers.
// TC: .entry pa_decode(
// TC-SAME: cp.async.cg.shared.global.L2::128B
// TC-SAME: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// TC-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// TC-SAME: bar.warp.sync
// TC-SAME: bar.sync
// TC-SAME: st.shared.v2.b32
// TC-SAME: ld.shared.v2.b32
// With split-KV the program is one kernel, decode_split: each CTA writes
// its partial state, fences (membar.gl) and counts its arrival (one atomic
// a CTA), and the last CTA of a request, told by a barrier reduction,
// merges the request's states; with split-kv-merge=separate it is
// decode_partial + merge_segments.
// SPLIT: .entry pa_decode_split(
// SPLIT-SAME: shfl.sync.bfly.b32
// SPLIT-SAME: membar.gl
// SPLIT-SAME: atom.global.add.u32
// SPLIT-SAME: bar.red.or.pred
// SPLIT-SAME: ex2.approx.ftz.f32
// SPLIT-NOT: pa_merge_segments
// SEP: .entry pa_decode_partial(
// SEP-SAME: shfl.sync.bfly.b32
// SEP-NOT: atom.global
// SEP-SAME: .entry pa_merge_segments(
// NOPREFETCH: .entry pa_decode(
// NOPREFETCH-NOT: L2::
// NOPREFETCH: cp.async.cg.shared.global [
// NOPREFETCH-NOT: L2::
// TCSPLIT: .entry pa_decode_split(
// TCSPLIT-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// TCSPLIT-SAME: atom.global.add.u32
// TCSPLIT-SAME: bar.red.or.pred

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @decode(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = pa.decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache}
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
