// RUN: pa-opt %pa_src_root/examples/mla-decode.mlir --pa-lower-to-nvvm="chip=sm_90 format=isa" | FileCheck %s
// RUN: pa-opt %pa_src_root/examples/mla-decode.mlir --pa-lower-to-nvvm="chip=sm_90 format=isa" | not grep -E "(ld|st)\.local|__nv_"
// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_80 format=isa" | FileCheck %s --check-prefix=SM80
// RUN: pa-opt %pa_src_root/examples/mla-decode.mlir --pa-lower-to-nvvm="chip=sm_90a format=isa" > %t.wgmma
// RUN: FileCheck %s --check-prefix=WGMMA < %t.wgmma
// RUN: FileCheck %s --check-prefix=WGS < %t.wgmma
// RUN: FileCheck %s --check-prefix=WGPV < %t.wgmma
// RUN: FileCheck %s --check-prefix=WGPROD < %t.wgmma
// RUN: FileCheck %s --check-prefix=WGCONS < %t.wgmma
// RUN: pa-opt %pa_src_root/examples/mla-decode.mlir --pa-lower-to-nvvm="chip=sm_90a format=isa" | not grep -E "(ld|st)\.local|__nv_"
// RUN: not pa-opt %pa_src_root/examples/mla-decode.mlir --pa-lower-to-nvvm="chip=sm_90 mla-mma=wgmma" 2>&1 | FileCheck %s --check-prefix=WGCHIP
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
// On sm_90a (mla-mma=auto, 128 heads) the wgmma kernel: dynamic shared
// memory aligned to 1024 bytes (the swizzle's repeat), the stages'
// mbarriers, cp.async with its mbarrier arrival and the async-proxy fence,
// the named barriers between the producer and the consumer warpgroup,
// wgmma m64n64k16 (S) and m64n256k16 (O += P V), no local memory; wgmma
// needs chip=sm_90a.
// WGMMA: .target sm_90a
// WGMMA-SAME: .entry pa_mla_decode(
// WGMMA-SAME: .shared .align 1024 .b8 __dynamic_shmem__0
// WGMMA-SAME: mbarrier.init.shared::cta.b64
// WGMMA-SAME: cp.async.cg.shared.global
// WGMMA-SAME: cp.async.mbarrier.arrive.noinc.shared::cta.b64
// WGMMA-SAME: fence.proxy.async.shared::cta
// WGPROD: bar.sync 3, 256
// WGPROD-SAME: cp.async.mbarrier.arrive.noinc.shared::cta.b64
// WGPROD-SAME: bar.sync 1, 256
// WGCONS: mbarrier.try_wait.parity.shared::cta.b64
// WGCONS-SAME: bar.arrive 1, 256
// WGCONS-SAME: bar.arrive 3, 256
// WGMMA-SAME: atom.global.add.u32
// WGS: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// WGS-SAME: wgmma.commit_group.sync.aligned
// WGS-SAME: wgmma.wait_group.sync.aligned {{(\\09)?}}0;
// WGPV: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// WGPV-SAME: wgmma.commit_group.sync.aligned
// WGPV-SAME: wgmma.wait_group.sync.aligned {{(\\09)?}}0;
// WGCHIP: pa-lower-to-nvvm: mla-mma=wgmma needs chip=sm_90a (wgmma is an sm_90a instruction), got chip=sm_90
// SM80: .target sm_80
// SM80-SAME: .entry pa_mla_decode(
// SM80-SAME: cp.async.cg.shared.global
// SM80-SAME: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// SM80-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32

func.func @mla16(%qn: tensor<?x16x512xf16>, %qp: tensor<?x16x64xf16>, %kv: tensor<?x16x576xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x16x512xf16>, %l: tensor<?x16xf32>) -> (tensor<?x16x512xf16>, tensor<?x16xf32>) {
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<?x16x512xf16>, tensor<?x16x64xf16>) kv(%kv : tensor<?x16x576xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x16x512xf16>, tensor<?x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32, logits_soft_cap = 30.0 : f32}
  return %r#0, %r#1 : tensor<?x16x512xf16>, tensor<?x16xf32>
}
