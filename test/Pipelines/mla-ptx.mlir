// RUN: pa-opt %pa_src_root/examples/mla-decode.mlir --pa-lower-to-nvvm="chip=sm_90 format=isa" | FileCheck %s
// RUN: pa-opt %pa_src_root/examples/mla-decode.mlir --pa-lower-to-nvvm="chip=sm_90 format=isa" | not grep -E "(ld|st)\.local|__nv_"
// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_80 format=isa" | FileCheck %s --check-prefix=SM80
// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_80 format=isa" | not grep -E "(ld|st)\.local|__nv_"

// The MLA decode kernel's PTX (DeepSeek-V3's shapes: 128 heads, bf16, ckv
// 512 + kpe 64, pages of 64; and 16 heads in f16 with a soft-cap on sm_80):
// cp.async copies of the latent cache with commit / wait, ldmatrix (plain
// for Q, K and P, .trans for V), mma.sync, the quad shuffles of the row
// statistics, barriers, ex2, the split-KV arrival (membar.gl, atom.add)
// and no local memory (spills).

// CHECK: gpu.binary @pa_kernels
// CHECK-SAME: .target sm_90
// CHECK-SAME: .entry pa_mla_decode(
// CHECK-SAME: cp.async.cg.shared.global
// CHECK-SAME: cp.async.commit_group
// CHECK-SAME: bar.sync
// CHECK-SAME: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-SAME: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-SAME: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-SAME: cp.async.wait_group{{[^0-9]+}}0
// CHECK-SAME: shfl.sync.bfly.b32
// CHECK-SAME: ex2.approx
// CHECK-SAME: membar.gl
// CHECK-SAME: atom.global.add.u32
// SM80: .target sm_80
// SM80-SAME: .entry pa_mla_decode(
// SM80-SAME: cp.async.cg.shared.global
// SM80-SAME: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// SM80-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32

func.func @mla16(%qn: tensor<?x16x512xf16>, %qp: tensor<?x16x64xf16>, %kv: tensor<?x16x576xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x16x512xf16>, %l: tensor<?x16xf32>) -> (tensor<?x16x512xf16>, tensor<?x16xf32>) {
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<?x16x512xf16>, tensor<?x16x64xf16>) kv(%kv : tensor<?x16x576xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x16x512xf16>, tensor<?x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32, logits_soft_cap = 30.0 : f32}
  return %r#0, %r#1 : tensor<?x16x512xf16>, tensor<?x16xf32>
}
