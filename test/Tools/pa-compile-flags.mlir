// No ptxas needed: flags are checked before anything is compiled.
// RUN: rm -rf %t && mkdir -p %t
// Bad flags are rejected with a message, and no bundle is written.
// RUN: not pa-compile --group 0 -o %t/bad 2>&1 | FileCheck %s --check-prefix=GROUP
// RUN: not pa-compile --page-size 2147483648 -o %t/bad 2>&1 | FileCheck %s --check-prefix=PAGE
// RUN: not pa-compile --decode-tile-kv 24 -o %t/bad 2>&1 | FileCheck %s --check-prefix=TILEKV
// RUN: not pa-compile --lane-bytes 8 --dtype f64 -o %t/bad 2>&1 | FileCheck %s --check-prefix=MULTI
// RUN: not pa-compile --kernels both -o %t/bad 2>&1 | FileCheck %s --check-prefix=KERNELS
// RUN: not pa-compile --causal --alibi -o %t/bad 2>&1 | FileCheck %s --check-prefix=DECODEONLY
// RUN: not pa-compile --kernels prefill --custom-mask --causal --window 8 -o %t/bad 2>&1 | FileCheck %s --check-prefix=MASK
// RUN: not pa-compile --kernels all --sm-scale -1 --logits-soft-cap 1e39 --window -2 -o %t/bad 2>&1 | FileCheck %s --check-prefix=REALS
// RUN: not pa-compile --kernels prefill --prefill-variants two -o %t/bad 2>&1 | FileCheck %s --check-prefix=VARIANTS
// RUN: not pa-compile --prefill-variants one -o %t/bad 2>&1 | FileCheck %s --check-prefix=VARIANTSDECODE
// RUN: not pa-compile --kernels mla --head-dim 512 -o %t/bad 2>&1 | FileCheck %s --check-prefix=MLASCALE
// RUN: not pa-compile --kernels mla --sm-scale 0.07 --group 4 --kv-dtype e4m3 --mla-row-blocks 3 -o %t/bad 2>&1 | FileCheck %s --check-prefix=MLAFLAGS
// RUN: not pa-compile --kpe 64 -o %t/bad 2>&1 | FileCheck %s --check-prefix=MLAONLY
// RUN: not pa-compile --kernels mla --sm-scale 0.07 --mla-mma tensor -o %t/bad 2>&1 | FileCheck %s --check-prefix=MLAMMA
// RUN: not pa-compile --kernels mla --sm-scale 0.07 --mla-mma wgmma --chip sm_90 -o %t/bad 2>&1 | FileCheck %s --check-prefix=MLAMMACHIP
// RUN: not pa-compile --mla-mma wgmma -o %t/bad 2>&1 | FileCheck %s --check-prefix=MLAMMAONLY
// RUN: not pa-compile --mla-consumer-sync -o %t/bad 2>&1 | FileCheck %s --check-prefix=MLASYNCONLY
// RUN: not pa-compile --l2-prefetch-bytes 512 -o %t/bad 2>&1 | FileCheck %s --check-prefix=PREFETCH
// RUN: not pa-compile --smem-layout diagonal -o %t/bad 2>&1 | FileCheck %s --check-prefix=LAYOUT
// RUN: not ls %t/bad
// --help shows pa-compile's options, not LLVM's.
// RUN: pa-compile --help | FileCheck %s --check-prefix=HELP

// PREFETCH: pa-compile: --l2-prefetch-bytes must be 64, 128 or 256 (0: none)
// LAYOUT: pa-compile: --smem-layout must be swizzle or pad, got 'diagonal'
// GROUP: pa-compile: --group 0 is out of [1, 1048576]
// PAGE: pa-compile: --page-size 2147483648 is out of [1, 1048576]
// TILEKV: pa-compile: --decode-tile-kv must be a multiple of 16 up to 256 (tensor-core: 64 or 128; 0: the kernel's default)
// MULTI: --lane-bytes must be 16 or 32
// MULTI: --dtype must be f16, bf16 or f32, got 'f64'
// KERNELS: pa-compile: --kernels must be decode, prefill, all or mla, got 'both'
// DECODEONLY: pa-compile: --causal is a prefill option: it needs --kernels prefill or all
// DECODEONLY: pa-compile: --alibi is a prefill option
// MASK: pa-compile: --custom-mask excludes --causal
// MASK: pa-compile: --custom-mask excludes --window
// REALS: pa-compile: --window -2 is out of [0, 2147483647]
// REALS: pa-compile: --logits-soft-cap 1e+39 must be a finite f32 value >= 0 (0: none)
// REALS: pa-compile: --sm-scale -1 must be a finite f32 value >= 0 (0: 1/sqrt(head-dim))
// VARIANTS: pa-compile: --prefill-variants must be auto or one, got 'two'
// VARIANTSDECODE: pa-compile: --prefill-variants is a prefill option: it needs --kernels prefill or all
// MLASCALE: pa-compile: --kernels mla needs --sm-scale
// MLAFLAGS: pa-compile: --mla-row-blocks must be 1 or 2
// MLAFLAGS: pa-compile: --kernels mla has no fp8 latent cache (--kv-dtype)
// MLAFLAGS: pa-compile: --group does not apply to --kernels mla
// MLAONLY: pa-compile: --kpe is an MLA option: it needs --kernels mla
// MLAMMA: pa-compile: --mla-mma must be mma.sync, wgmma or auto, got 'tensor'
// MLAMMACHIP: pa-compile: --mla-mma wgmma needs --chip sm_90a (wgmma is an sm_90a instruction), got --chip sm_90
// MLAMMAONLY: pa-compile: --mla-mma is an MLA option: it needs --kernels mla
// MLASYNCONLY: pa-compile: --mla-consumer-sync is an MLA option: it needs --kernels mla
// HELP: pa-compile options:
// HELP: --group
// HELP: --prefill-variants
// HELP-NOT: --mlir-
// HELP-NOT: --pass-pipeline
