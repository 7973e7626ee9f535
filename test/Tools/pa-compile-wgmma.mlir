// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// The default target, sm_90a (H100 / H200), gives the prefill kernels
// wgmma (--prefill-mma auto): one prefill kernel of 8 warps (128 rows of a
// tile: 32 queries x GQA 4) over 64-key tiles, 96 KiB of shared memory
// (Q and two K / V stages in the 128-byte swizzle layout), no prefill_short
// (the wgmma kernel is the faster one at short rows too, docs/PERFORMANCE.md).
// RUN: pa-compile --kernels prefill --causal -o %t/wg | FileCheck %s --check-prefix=LOG
// RUN: ls %t/wg | FileCheck %s --check-prefix=FILES
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/wg/bundle.manifest
// The shipping kernel is pa-opt's pipeline on the same program:
// RUN: pa-opt %t/wg/program.mlir --pa-lower-to-nvvm="chip=sm_90a format=isa" | %python %S/../Pipelines/Inputs/ptx_of.py > %t/opt.ptx
// RUN: diff %t/opt.ptx %t/wg/kernels.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/wg/kernels.ptx
// ptxas: no spill in the prefill kernel.
// RUN: %ptxas -v --gpu-name=sm_90a %t/wg/kernels.ptx -o %t/wg.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// A head dim the wgmma kernel cannot take (96) keeps mma.sync and its
// prefill_short; --chip sm_90 (and --prefill-mma mma.sync) keep mma.sync.
// RUN: pa-compile --kernels prefill --causal --head-dim 96 --kv-heads 2 -o %t/d96 | FileCheck %s --check-prefix=SYNC
// RUN: pa-compile --kernels prefill --causal --chip sm_90 -o %t/sm90 | FileCheck %s --check-prefix=SYNC
// RUN: pa-compile --kernels prefill --causal --prefill-mma mma.sync -o %t/sync | FileCheck %s --check-prefix=SYNC
// RUN: not pa-compile --kernels prefill --prefill-mma wgmma --chip sm_90 -o %t/bad 2>&1 | FileCheck %s --check-prefix=BADCHIP
// RUN: not pa-compile --kernels prefill --prefill-mma tensor -o %t/bad 2>&1 | FileCheck %s --check-prefix=BADMMA
// RUN: not pa-compile --kernels prefill --prefill-mma wgmma --head-dim 96 --kv-heads 2 -o %t/bad 2>&1 | FileCheck %s --check-prefix=BADD
// RUN: not pa-opt %t/wg/program.mlir --pa-lower-to-nvvm="prefill-mma=wgmma" 2>&1 | FileCheck %s --check-prefix=BADPIPE

// LOG: prefill tile_q 128, tile_kv 64, smem 98304
// LOG-NOT: prefill_short
// FILES-NOT: prefill_short
// MANIFEST: launch grid q_tiles kv_heads batch block 256 1 1 smem 98304
// PTX: .target sm_90a
// PTX: .shared .align 1024 .b8 __dynamic_shmem__0;
// PTX: fence.proxy.async.shared::cta;
// PTX: wgmma.fence.sync.aligned;
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// PTX: wgmma.commit_group.sync.aligned;
// PTX: wgmma.wait_group.sync.aligned 0;
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// PTXAS: Compiling entry function 'pa_prefill' for 'sm_90a'
// PTXAS-NEXT: Function properties for pa_prefill
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SYNC: pa-compile: prefill_short
// BADCHIP: --prefill-mma wgmma needs --chip sm_90a (wgmma is an sm_90a instruction), got --chip sm_90
// BADMMA: --prefill-mma must be mma.sync, wgmma or auto, got 'tensor'
// BADD: error: 'pa.prefill' op prefill-mma=wgmma needs a head dim that is a multiple of 64
// BADPIPE: prefill-mma=wgmma needs chip=sm_90a (wgmma is an sm_90a instruction), got chip=sm_90
