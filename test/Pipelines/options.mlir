// One option vocabulary for both pipelines; a bad value is an error that
// names it, never a silently different pipeline.
// RUN: not pa-opt %s --pa-lower-to-nvvm="split-kv-chunk=64 split-kv-work-list=true" 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not pa-opt %s --pa-lower-to-cpu="split-kv-chunk=64 split-kv-work-list=true" 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not pa-opt %s --pa-lower-to-cpu="split-kv-chunk=-1" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not pa-opt %s --pa-lower-to-nvvm="lane-bytes=8" 2>&1 | FileCheck %s --check-prefix=LANE
// RUN: not pa-opt %s --pa-lower-to-nvvm="cta-threads=100" 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not pa-opt %s --pa-lower-to-nvvm="decode-tile-kv=24" 2>&1 | FileCheck %s --check-prefix=TILEKV
// RUN: not pa-opt %s --pa-lower-to-nvvm="format=elf" 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not pa-opt %s --pa-lower-to-nvvm="l2-prefetch-bytes=32" 2>&1 | FileCheck %s --check-prefix=PREFETCH
// RUN: not pa-opt %s --pa-lower-to-nvvm="smem-layout=auto" 2>&1 | FileCheck %s --check-prefix=LAYOUT
// RUN: not pa-opt %s --pa-lower-to-nvvm="prefill-mma=hopper" 2>&1 | FileCheck %s --check-prefix=MMA
// RUN: not pa-opt %s --pa-lower-to-nvvm="prefill-mma=wgmma chip=sm_80" 2>&1 | FileCheck %s --check-prefix=MMACHIP
// split-kv-chunk allocates the work list inside the program (host
// buffers): the GPU pipeline refuses the option. The plan op itself has a
// kernel (pa_plan_split_kv), for work lists the caller allocates.
// RUN: not pa-opt %s --pa-lower-to-nvvm="split-kv-chunk=64" 2>&1 | FileCheck %s --check-prefix=PLAN
// RUN: pa-opt %s --pa-split-kv="chunk-size=64" --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --convert-pa-to-gpu | FileCheck %s --check-prefix=PLANOP
// Both split-KV forms lower on the CPU; the work list on the GPU.
// RUN: pa-opt %s --pa-lower-to-cpu="split-kv-work-list=true" | FileCheck %s --check-prefix=CPUWL
// RUN: pa-opt %s --pa-lower-to-nvvm="split-kv-work-list=true decode-kernel=cuda-core heads-per-cta=2 decode-tile-kv=32 lane-bytes=16" | FileCheck %s --check-prefix=GPU
// RUN: pa-opt %s --pa-lower-to-nvvm="split-kv-work-list=true split-kv-merge=separate" | FileCheck %s --check-prefix=GPUSEP
// RUN: not pa-opt %s --pa-lower-to-nvvm="split-kv-merge=late" 2>&1 | FileCheck %s --check-prefix=MERGE
// MLA decode has a kernel of its own; its option is checked like the others.
// RUN: not pa-opt %s --pa-lower-to-nvvm="mla-row-blocks=3" 2>&1 | FileCheck %s --check-prefix=MLA
// RUN: not pa-opt %s --pa-lower-to-nvvm="mla-mma=tensor" 2>&1 | FileCheck %s --check-prefix=MLAMMA

// BOTH: split-kv-chunk and split-kv-work-list exclude each other
// NEG: split-kv-chunk must be >= 0
// LANE: pa-lower-to-nvvm: lane-bytes must be 16 or 32 (0: the tuned default)
// THREADS: pa-lower-to-nvvm: cta-threads must be a multiple of 32 in [32, 1024]
// TILEKV: pa-lower-to-nvvm: decode-tile-kv must be a multiple of 16 up to 256
// FORMAT: pa-lower-to-nvvm: format must be isa, bin or fatbin
// PREFETCH: pa-lower-to-nvvm: l2-prefetch-bytes must be 64, 128 or 256 (0: none)
// LAYOUT: pa-lower-to-nvvm: smem-layout must be swizzle or pad
// MMA: pa-lower-to-nvvm: prefill-mma must be mma.sync, wgmma or auto
// MMACHIP: pa-lower-to-nvvm: prefill-mma=wgmma needs chip=sm_90a (wgmma is an sm_90a instruction), got chip=sm_80
// PLAN: pa-lower-to-nvvm: split-kv-chunk plans the work list in the IR (pa.plan_split_kv) into buffers the program allocates on the host; on the GPU use split-kv-work-list=true
// PLANOP: gpu.launch_func @pa_kernels::@pa_plan_split_kv
// CPUWL: llvm.func @decode(
// GPU: gpu.binary @pa_kernels
// GPU-SAME: .entry pa_decode_split(
// GPU-NOT: pa_merge_segments
// GPUSEP: gpu.binary @pa_kernels
// GPUSEP-SAME: .entry pa_decode_partial(
// GPUSEP-SAME: .entry pa_merge_segments(
// MERGE: pa-lower-to-nvvm: split-kv-merge must be fused or separate
// MLA: pa-lower-to-nvvm: mla-row-blocks must be 1 or 2 (0: 2 above 16 heads, else 1)
// MLAMMA: pa-lower-to-nvvm: mla-mma must be mma.sync, wgmma or auto

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @decode(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = pa.decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache}
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
