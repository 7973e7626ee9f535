// RUN: pa-opt %s --convert-pa-to-gpu="mla-mma=wgmma" -split-input-file -verify-diagnostics | FileCheck %s
// RUN: pa-opt %s --convert-pa-to-gpu="mla-mma=auto" -split-input-file | FileCheck %s --check-prefix=AUTO
// RUN: pa-opt %s --convert-pa-to-gpu="mla-mma=mma.sync" -split-input-file | FileCheck %s --check-prefix=SYNC
// RUN: pa-opt %s --convert-pa-to-gpu="mla-mma=wgmma mla-consumer-sync=1" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=CSYNC
// RUN: not pa-opt %s --convert-pa-to-gpu="mla-mma=tensor" -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// pa.mla_decode on Hopper warpgroup MMAs (mla-mma=wgmma; auto from 64
// heads): a CTA per (request, 64 heads), two warpgroups (256 threads), Q
// and two 64-token stages of the latent cache in wgmma's swizzle layout
// (222224 bytes of shared memory: each stage's P tile in its D_kpe block,
// the row statistics, the stages' mbarriers). The mbarriers are set up
// first; Q (everyone) and tile 0 (the producer warpgroup, its completion on
// the stage's mbarrier) are copied before the role split:
// - the producer warpgroup: waits for the stage of tile t + 1 to be free
//   (named barriers 3 / 4), copies it (cp.async, arrival on its mbarrier),
//   waits for P of tile t (named barriers 1 / 2) and runs O += P V over
//   output columns [0, 256) (m64n256k16, B MN-major: transpose-b 1);
// - the consumer warpgroup: waits for tile t's mbarrier phase, S = Q K^T
//   over the tile's 64 keys (m64n64k16, B K-major: transpose-b 0), the
//   online softmax, P and the rescale factors to shared memory, arrives at
//   barrier 1 / 2, runs O += P V over columns [256, 512) and arrives at
//   barrier 3 / 4;
// then the row statistics to both and the split-KV arrival (docs/GPU.md,
// "MLA decode on wgmma").

// CHECK-LABEL: func.func @mla_decode
// CHECK: gpu.launch_func @pa_kernels::@pa_mla_decode blocks in (%{{.*}}, %c2, %c1) threads in (%c256, %{{.*}}, %{{.*}}) dynamic_shared_memory_size %c222224_i32
// CHECK: gpu.func @pa_mla_decode
// CHECK-SAME: block = array<i64: 256, 1, 1>, grid = ["batch", 2, "kv_splits"], kind = "mla_decode", kv_stages = 2 : i64, merge_together = 1073741824 : i64, smem = 222224 : i64, tile_kv = 64 : i64, tile_q = 64 : i64
// CHECK-SAME: pa.wgmma
// CHECK: gpu.grid_dim y
// CHECK-COUNT-2: "mbarrier.init.shared::cta.b64 [$0], 128;"
// CHECK: gpu.barrier
// CHECK: nvgpu.device_async_copy
// CHECK: "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];"
// CHECK: nvgpu.device_async_wait
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK: scf.for
// CHECK: "bar.sync 3, 256;"
// CHECK: "bar.sync 4, 256;"
// CHECK: nvgpu.device_async_copy
// CHECK: "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];"
// CHECK: "bar.sync 1, 256;"
// CHECK: "bar.sync 2, 256;"
// CHECK: nvvm.fence.proxy
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 1;
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: } else {
// CHECK: scf.for
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK-NEXT: nvvm.fence.proxy
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-36: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 0;
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: gpu.subgroup_reduce maximumf {{.*}} cluster(size = 4)
// CHECK: vector.store
// CHECK: nvvm.fence.proxy
// CHECK: "bar.arrive 1, 256;"
// CHECK: "bar.arrive 2, 256;"
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 1;
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: "bar.arrive 3, 256;"
// CHECK: "bar.arrive 4, 256;"
// CHECK: scf.yield
// CHECK: gpu.barrier
// CHECK: memref.atomic_rmw addi
// mla-consumer-sync: the consumer waits at the named barriers too.
// CSYNC-LABEL: func.func @mla_decode
// CSYNC-NOT: bar.arrive
// CSYNC: } else {
// CSYNC: "bar.sync 1, 256;"
// CSYNC: "bar.sync 3, 256;"
// CSYNC-NOT: bar.arrive
// CSYNC-LABEL: func.func @mla_decode_40
// AUTO-LABEL: func.func @mla_decode
// AUTO: gpu.launch_func @pa_kernels::@pa_mla_decode blocks in (%{{.*}}, %c2, %c1) threads in (%c256,
// AUTO: m64n256k16
// SYNC-LABEL: func.func @mla_decode
// SYNC: gpu.launch_func @pa_kernels::@pa_mla_decode blocks in (%{{.*}}, %c4, %c1) threads in (%c256,
// SYNC-NOT: wgmma
// SYNC: nvgpu.mma.sync
// BAD: 'pa.mla_decode' op mla-mma must be mma.sync, wgmma or auto, got 'tensor'
func.func @mla_decode(%qn: memref<?x128x512xbf16>, %qp: memref<?x128x64xbf16>, %kv: memref<?x64x576xbf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x128x512xbf16>, %l: memref<?x128xf32>) {
  pa.mla_decode q(%qn, %qp : memref<?x128x512xbf16>, memref<?x128x64xbf16>) kv(%kv : memref<?x64x576xbf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x128x512xbf16>, memref<?x128xf32>) {cache = #pa.paged_mla<page_size = 64, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32}
  return
}

// -----

// 40 heads: one head block, rows past the 40th zero-filled and not stored;
// f16 operands. auto keeps mma.sync below 64 heads.
// CHECK-LABEL: func.func @mla_decode_40
// CHECK: gpu.launch_func @pa_kernels::@pa_mla_decode blocks in (%{{.*}}, %c1{{.*}}, %c1{{.*}}) threads in (%c256,
// CHECK: grid = ["batch", 1, "kv_splits"]
// CHECK: m64n64k16.f32.f16.f16
// AUTO-LABEL: func.func @mla_decode_40
// AUTO-NOT: wgmma
// AUTO: nvgpu.mma.sync
func.func @mla_decode_40(%qn: memref<?x40x512xf16>, %qp: memref<?x40x64xf16>, %kv: memref<?x5x576xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x40x512xf16>, %l: memref<?x40xf32>) {
  pa.mla_decode q(%qn, %qp : memref<?x40x512xf16>, memref<?x40x64xf16>) kv(%kv : memref<?x5x576xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x40x512xf16>, memref<?x40xf32>) {cache = #pa.paged_mla<page_size = 5, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32}
  return
}

// -----

// What the wgmma kernel cannot take is an error at the op with
// mla-mma=wgmma; auto and mma.sync build the mma.sync kernel. D_ckv 192:
// a warpgroup's 96 output columns are not whole 64-column swizzle blocks.
// AUTO-LABEL: func.func @mla_decode_ckv192
// AUTO: nvgpu.mma.sync
// SYNC-LABEL: func.func @mla_decode_ckv192
// SYNC: nvgpu.mma.sync
func.func @mla_decode_ckv192(%qn: memref<?x64x192xbf16>, %qp: memref<?x64x64xbf16>, %kv: memref<?x64x256xbf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x64x192xbf16>, %l: memref<?x64xf32>) {
  // expected-error @+1 {{'pa.mla_decode' op mla-mma=wgmma needs D_ckv a multiple of 128 up to 512 (each warpgroup's half of the output one wgmma of N <= 256)}}
  pa.mla_decode q(%qn, %qp : memref<?x64x192xbf16>, memref<?x64x64xbf16>) kv(%kv : memref<?x64x256xbf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x64x192xbf16>, memref<?x64xf32>) {cache = #pa.paged_mla<page_size = 64, ckv = 192, kpe = 64>, sm_scale = 0.0721687824 : f32}
  return
}
