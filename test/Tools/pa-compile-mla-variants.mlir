// REQUIRES: ptxas
// An MLA bundle for sm_90a with --mla-mma auto (the default) from 64 heads
// holds two kernels: mla_decode on wgmma (64 heads a CTA, 256 threads) and
// mla_decode_small, the mma.sync kernel (32 heads a CTA at 128 heads) in
// its own binary, which the runtime picks for few keys in all
// (chooseMLASmall). --mla-mma wgmma or mma.sync, another chip, or fewer
// than 64 heads: one kernel.
// RUN: rm -rf %t && mkdir -p %t
// RUN: pa-compile --kernels mla --head-dim 512 --kpe 64 --mla-heads 128 --page-size 64 --dtype bf16 --sm-scale 0.0721687836 -o %t/two | FileCheck %s --check-prefix=LOG
// RUN: FileCheck %s --check-prefix=TWO < %t/two/bundle.manifest
// RUN: ls %t/two | FileCheck %s --check-prefix=FILES
// RUN: grep -c "wgmma.mma_async" %t/two/kernels.ptx | FileCheck %s --check-prefix=SOME
// RUN: not grep "wgmma.mma_async" %t/two/mla_small.ptx
// RUN: %ptxas -v --gpu-name=sm_90a %t/two/mla_small.ptx -o %t/small.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: pa-compile --kernels mla --head-dim 512 --kpe 64 --mla-heads 128 --page-size 64 --dtype bf16 --sm-scale 0.07 --mla-mma wgmma -o %t/wg
// RUN: FileCheck %s --check-prefix=ONE < %t/wg/bundle.manifest
// RUN: pa-compile --kernels mla --head-dim 512 --kpe 64 --mla-heads 16 --page-size 64 --dtype bf16 --sm-scale 0.07 -o %t/h16
// RUN: FileCheck %s --check-prefix=ONE < %t/h16/bundle.manifest
// RUN: pa-compile --kernels mla --head-dim 512 --kpe 64 --mla-heads 128 --page-size 64 --dtype bf16 --sm-scale 0.07 --chip sm_90 -o %t/sm90
// RUN: FileCheck %s --check-prefix=ONE < %t/sm90/bundle.manifest
// --mla-consumer-sync: the wgmma kernel's consumer waits at the named
// barriers (bar.sync, no bar.arrive: for compute-sanitizer's racecheck).
// RUN: pa-compile --kernels mla --head-dim 512 --kpe 64 --mla-heads 128 --page-size 64 --dtype bf16 --sm-scale 0.07 --mla-mma wgmma --mla-consumer-sync -o %t/cs
// RUN: FileCheck %s --check-prefix=CSYNC < %t/cs/kernels.ptx
// RUN: grep -c "bar.arrive" %t/two/kernels.ptx | FileCheck %s --check-prefix=SOME
// RUN: not grep "bar.arrive" %t/cs/kernels.ptx
// A second run without the small kernel removes its stale files.
// RUN: pa-compile --kernels mla --head-dim 512 --kpe 64 --mla-heads 128 --page-size 64 --dtype bf16 --sm-scale 0.07 --mla-mma mma.sync -o %t/two
// RUN: FileCheck %s --check-prefix=ONE < %t/two/bundle.manifest
// RUN: ls %t/two | FileCheck %s --check-prefix=NOFILES

// LOG: mla_decode 256 threads, smem 222224
// LOG: pa-compile: mla_decode_small 256 threads, smem 192512
// TWO: kernel mla_decode kernels.cubin pa_mla_decode
// TWO: launch grid batch 2 kv_splits block 256 1 1 smem 222224
// TWO: kernel mla_decode_small mla_small.cubin pa_mla_decode
// TWO-NEXT: prefill queries_per_tile 1 causal 0 window 0 soft_cap 0 sm_scale 0.0721687{{[0-9]*}} lse_base2 0
// TWO: launch grid batch 4 kv_splits block 256 1 1 smem 192512
// FILES: mla_small.cubin
// FILES: mla_small.ptx
// SOME: {{[1-9][0-9]*}}
// PTXAS: 0 bytes spill stores
// ONE: kernel mla_decode
// CSYNC: bar.sync 1, 256
// ONE-NOT: mla_decode_small
// NOFILES-NOT: mla_small
