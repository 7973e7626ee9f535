// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: pa-compile --chip sm_90 --kernels prefill --causal -o %t/gqa4 | FileCheck %s --check-prefix=LOG
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/gqa4/bundle.manifest
// The shipping kernel is pa-opt's pipeline on the same program:
// RUN: pa-opt %t/gqa4/program.mlir --pa-lower-to-nvvm="chip=sm_90 format=isa" | %python %S/../Pipelines/Inputs/ptx_of.py > %t/opt.ptx
// RUN: diff %t/opt.ptx %t/gqa4/kernels.ptx
// ptxas: under 200 bytes of spill (128 stores / 112 loads: 64-key tiles at
// D = 128 with XOR-swizzled shared memory, 96 with padded rows; docs/GPU.md).
// RUN: %ptxas -v --gpu-name=sm_90 %t/gqa4/kernels.ptx -o %t/gqa4.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// Every mask option and a bf16 split HND cache with 4 warps of 32 keys:
// RUN: pa-compile --chip sm_90 --kernels prefill --dtype bf16 --kv split --layout hnd --head-dim 96 --page-size 5 --positions --custom-mask --alibi --lse-base2 --sm-scale 0.25 --logits-soft-cap 30 --prefill-warps 4 --prefill-tile-kv 32 -o %t/masks | FileCheck %s --check-prefix=LOG2
// RUN: FileCheck %s --check-prefix=MASKS < %t/masks/bundle.manifest
// RUN: not pa-compile --chip sm_90 --kernels prefill --prefill-warps 6 -o %t/bad 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not pa-compile --chip sm_90 --kernels prefill --rescale-threshold 16 -o %t/bad 2>&1 | FileCheck %s --check-prefix=BADT
// 4 warps over 64-key tiles at D = 128: 8 copy rounds a thread, so the
// pages go through a page list in shared memory (2 stages x 5 i32 after the
// 98304 bytes of swizzled tiles) and the prefill kernel spills under 200
// bytes (160; 104 with padded rows, 172-184 padded with one register per
// round, docs/GPU.md "Stage 2");
// --page-list-rounds 0 keeps the registers and the tiles' size.
// RUN: pa-compile --chip sm_90 --kernels prefill --causal --prefill-variants one --prefill-warps 4 --prefill-tile-kv 64 -o %t/w4 | FileCheck %s --check-prefix=LOGW4
// RUN: %ptxas -v --gpu-name=sm_90 %t/w4/kernels.ptx -o %t/w4.cubin 2>&1 | FileCheck %s --check-prefix=PTXASW4
// RUN: pa-compile --chip sm_90 --kernels prefill --causal --prefill-variants one --prefill-warps 4 --prefill-tile-kv 64 --page-list-rounds 0 -o %t/w4r | FileCheck %s --check-prefix=LOGW4R
// RUN: not pa-compile --chip sm_90 --kernels prefill --page-list-rounds -1 -o %t/bad 2>&1 | FileCheck %s --check-prefix=BADL
// --smem-layout pad: the padded rows of before (512 rows x 272 bytes
// instead of 512 x 256 swizzled).
// RUN: pa-compile --chip sm_90 --kernels prefill --causal --prefill-variants one --smem-layout pad -o %t/pad | FileCheck %s --check-prefix=LOGPAD
// LOGPAD: prefill tile_q 256, tile_kv 64, smem 139264

// LOG: prefill tile_q 256, tile_kv 64, smem 131072
// MANIFEST: kernel prefill kernels.cubin pa_prefill
// MANIFEST-NEXT: prefill queries_per_tile 64 causal 1 window 0 soft_cap 0 sm_scale 0 lse_base2 0
// MANIFEST-NEXT: arg q memref 3 f16
// MANIFEST-NEXT: arg qo_indptr memref 1 i32
// MANIFEST: launch grid q_tiles kv_heads batch block 256 1 1 smem 131072
// PTXAS: Compiling entry function 'pa_prefill' for 'sm_90'
// PTXAS-NEXT: Function properties for pa_prefill
// PTXAS-NEXT: {{[0-9]?[0-9]|1[0-9][0-9]}} bytes stack frame, {{[0-9]?[0-9]|1[0-9][0-9]}} bytes spill stores, {{[0-9]?[0-9]|1[0-9][0-9]}} bytes spill loads
// PTXAS-NEXT: Used {{[0-9]+}} registers
// LOG2: prefill tile_q 128, tile_kv 32
// MASKS: prefill queries_per_tile 32 causal 0 window 0 soft_cap 30 sm_scale 0.25 lse_base2 1
// MASKS: arg q_positions memref 1 i32
// MASKS-NEXT: arg custom_mask memref 1 i8
// MASKS-NEXT: arg mask_indptr memref 1 i32
// MASKS-NEXT: arg alibi_slopes memref 1 f32
// MASKS: launch grid q_tiles kv_heads batch block 128 1 1
// BAD: --prefill-warps must be 4 or 8
// BADT: --rescale-threshold must lie in [0, 15]
// LOGW4: prefill tile_q 128, tile_kv 64, smem 98344
// PTXASW4: Compiling entry function 'pa_prefill' for 'sm_90'
// PTXASW4-NEXT: Function properties for pa_prefill
// PTXASW4-NEXT: {{[0-9]?[0-9]|1[0-9][0-9]}} bytes stack frame, {{[0-9]?[0-9]|1[0-9][0-9]}} bytes spill stores, {{[0-9]?[0-9]|1[0-9][0-9]}} bytes spill loads
// LOGW4R: prefill tile_q 128, tile_kv 64, smem 98304
// BADL: --page-list-rounds -1 is out of [0,
