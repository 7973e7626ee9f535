// REQUIRES: ptxas
// The default prefill shape (8 warps x 32 rows up to head dim 128) comes
// with a second kernel, prefill_short: the same prefill with 4 warps (a
// 128-row query tile), in its own binary, for the planner's short batches.
// RUN: rm -rf %t && mkdir -p %t
// RUN: pa-compile --chip sm_90 --kernels prefill --causal -o %t/two | FileCheck %s --check-prefix=LOG
// RUN: FileCheck %s --check-prefix=TWO < %t/two/bundle.manifest
// RUN: ls %t/two | FileCheck %s --check-prefix=FILES
// The short kernels are pa-opt's pipeline with prefill-warps=4 on their
// program (@prefill and, for split-KV, @prefill_split):
// RUN: pa-opt %t/two/prefill_short.mlir --pa-lower-to-nvvm="chip=sm_90 format=isa prefill-warps=4" | %python %S/../Pipelines/Inputs/ptx_of.py > %t/opt4.ptx
// RUN: diff %t/opt4.ptx %t/two/prefill_short.ptx
// RUN: %ptxas -v --gpu-name=sm_90 %t/two/prefill_short.ptx -o %t/short.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// --kernels all: decode, split-KV and both prefill kernels.
// RUN: pa-compile --chip sm_90 --kernels all --causal -o %t/all | FileCheck %s --check-prefix=LOGALL
// RUN: FileCheck %s --check-prefix=ALL < %t/all/bundle.manifest
// RUN: pa-compile --chip sm_90 --kernels all --topk-ratio 0.5 -o %t/half
// RUN: FileCheck %s --check-prefix=HALF < %t/half/bundle.manifest
// RUN: not pa-compile --chip sm_90 --kernels all --topk-ratio 1.5 -o %t/bad 2>&1 | FileCheck %s --check-prefix=BADRATIO
// A shape flag, --prefill-variants one, a head dim above 128 (whose
// default is already 4 warps) or a group above 128: only the prefill
// kernel.
// RUN: pa-compile --chip sm_90 --kernels prefill --causal --prefill-warps 8 -o %t/warps | FileCheck %s --check-prefix=ONELOG
// RUN: FileCheck %s --check-prefix=ONE < %t/warps/bundle.manifest
// RUN: pa-compile --chip sm_90 --kernels prefill --causal --prefill-tile-kv 64 -o %t/tilekv
// RUN: FileCheck %s --check-prefix=ONE < %t/tilekv/bundle.manifest
// RUN: pa-compile --chip sm_90 --kernels prefill --causal --prefill-warp-rows 16 -o %t/rows
// RUN: FileCheck %s --check-prefix=ONE < %t/rows/bundle.manifest
// RUN: pa-compile --chip sm_90 --kernels prefill --causal --prefill-variants one -o %t/one
// RUN: FileCheck %s --check-prefix=ONE < %t/one/bundle.manifest
// RUN: ls %t/one | FileCheck %s --check-prefix=ONEFILES
// RUN: pa-compile --chip sm_90 --kernels prefill --causal --head-dim 192 --kv-heads 2 -o %t/d192
// RUN: FileCheck %s --check-prefix=ONE < %t/d192/bundle.manifest
// A group larger than the short tile's 128 rows (the default's 256 hold it):
// RUN: pa-compile --chip sm_90 --kernels prefill --causal --group 256 --kv-heads 1 -o %t/g256
// RUN: FileCheck %s --check-prefix=ONE < %t/g256/bundle.manifest
// Recompiling a bundle directory without the short kernel removes its files.
// RUN: pa-compile --chip sm_90 --kernels prefill --causal --prefill-variants one -o %t/two
// RUN: FileCheck %s --check-prefix=ONE < %t/two/bundle.manifest
// RUN: ls %t/two | FileCheck %s --check-prefix=ONEFILES

// LOG: prefill tile_q 256, tile_kv 64, smem 131072
// LOG: pa-compile: prefill_short tile_q 128, tile_kv 32, smem {{[0-9]+}} ({{[0-9]+}} bytes cubin

// TWO: pa-bundle 1
// TWO-NEXT: config head_dim 128 page_size 16 kv_heads 8 group 4 layout nhd dtype f16 kv joint
// TWO-NEXT: kernel prefill kernels.cubin pa_prefill
// TWO-NEXT: prefill queries_per_tile 64 causal 1 window 0 soft_cap 0 sm_scale 0 lse_base2 0
// TWO:      launch grid q_tiles kv_heads batch block 256 1 1 smem 131072
// TWO-NEXT: kernel prefill_short prefill_short.cubin pa_prefill
// TWO-NEXT: prefill queries_per_tile 32 causal 1 window 0 soft_cap 0 sm_scale 0 lse_base2 0
// TWO-NEXT: arg q memref 3 f16
// TWO-NEXT: arg qo_indptr memref 1 i32
// TWO-NEXT: arg kv memref 5 f16
// TWO-NEXT: arg kv_indptr memref 1 i32
// TWO-NEXT: arg kv_indices memref 1 i32
// TWO-NEXT: arg kv_last_page_len memref 1 i32
// TWO-NEXT: arg o memref 3 f16
// TWO-NEXT: arg lse memref 2 f32
// TWO-NEXT: launch grid q_tiles kv_heads batch block 128 1 1 smem {{[0-9]+}}
// Split-KV prefill comes with the short shape: its prefill line, the
// arguments of prefill but o / lse, the work list and the partial states.
// TWO-NEXT: kernel prefill_partial prefill_short.cubin pa_prefill_partial
// TWO-NEXT: prefill queries_per_tile 32 causal 1 window 0 soft_cap 0 sm_scale 0 lse_base2 0
// TWO-NEXT: arg q memref 3 f16
// TWO-NEXT: arg qo_indptr memref 1 i32
// TWO-NEXT: arg kv memref 5 f16
// TWO-NEXT: arg kv_indptr memref 1 i32
// TWO-NEXT: arg kv_indices memref 1 i32
// TWO-NEXT: arg kv_last_page_len memref 1 i32
// TWO-NEXT: arg work_request memref 1 i32
// TWO-NEXT: arg work_qo_start memref 1 i32
// TWO-NEXT: arg work_qo_end memref 1 i32
// TWO-NEXT: arg work_kv_start memref 1 i32
// TWO-NEXT: arg work_kv_end memref 1 i32
// TWO-NEXT: arg work_partial_row memref 1 i32
// TWO-NEXT: arg work_partial_stride memref 1 i32
// TWO-NEXT: arg o_part memref 3 f32
// TWO-NEXT: arg lse_part memref 2 f32
// TWO-NEXT: launch grid work_capacity kv_heads q_tiles block 128 1 1 smem {{[0-9]+}}
// TWO-NEXT: kernel merge_segments prefill_short.cubin pa_merge_segments
// TWO:      launch grid batch num_q_heads 1 block 128 1 1 smem 0
// TWO-NEXT: end

// FILES: bundle.manifest
// FILES: kernels.cubin
// FILES: kernels.ptx
// FILES: prefill_short.cubin
// FILES: prefill_short.mlir
// FILES: prefill_short.ptx
// FILES: program.mlir

// PTXAS: Compiling entry function 'pa_prefill' for 'sm_90'
// PTXAS-NEXT: Function properties for pa_prefill
// The 4-warp shape sits at the 255-register limit like the default and
// spills a little (48 bytes for this GQA-4 kernel; the shape sweep's bound
// is 64, test/Pipelines/prefill-shape-sweep.mlir):
// PTXAS-NEXT: {{[0-9]+}} bytes stack frame, {{([0-9]|[1-5][0-9]|6[0-4])}} bytes spill stores

// HALF: topk ratio 0.5
// BADRATIO: pa-compile: --topk-ratio 1.500000 is out of (0, 1]

// LOGALL: pa-compile: prefill tile_q 256, tile_kv 64
// LOGALL: pa-compile: prefill_short tile_q 128, tile_kv 32

// ALL: kernel prefill kernels.cubin pa_prefill
// With decode and prefill, the merges (pa_merge, pa_merge_states, cascades):
// ALL: kernel merge kernels.cubin pa_merge
// ALL-NEXT: arg o_0 memref 3 f16
// ALL-NEXT: arg lse_0 memref 2 f32
// ALL-NEXT: arg o_1 memref 3 f16
// ALL-NEXT: arg lse_1 memref 2 f32
// ALL-NEXT: arg o memref 3 f16
// ALL-NEXT: arg lse memref 2 f32
// ALL-NEXT: launch grid batch 1 1 block 128 1 1 smem 0
// ALL-NEXT: kernel merge_states kernels.cubin pa_merge_states
// ALL-NEXT: arg o_states memref 4 f16
// ALL-NEXT: arg lse_states memref 3 f32
// ALL-NEXT: arg o memref 3 f16
// ALL-NEXT: arg lse memref 2 f32
// ALL-NEXT: launch grid batch 1 1 block 128 1 1 smem 0
// The page-table writes and the CacheBlend ops (select_topk with its
// compiled ratio, --topk-ratio):
// ALL-NEXT: kernel append_kv kernels.cubin pa_append_kv
// ALL-NEXT: arg k_new memref 3 f16
// ALL-NEXT: arg v_new memref 3 f16
// ALL-NEXT: arg append_indptr memref 1 i32
// ALL: kernel scatter_kv kernels.cubin pa_scatter_kv
// ALL: arg positions memref 1 i32
// ALL: kernel kv_deviation kernels.cubin pa_kv_deviation
// ALL: kernel select_topk kernels.cubin pa_select_topk
// ALL-NEXT: topk ratio 0.15
// ALL-NEXT: arg deviation memref 1 f32
// ALL-NEXT: arg dev_indptr memref 1 i32
// ALL-NEXT: arg positions memref 1 i32
// ALL-NEXT: arg out_indptr memref 1 i32
// ALL-NEXT: launch grid batch 1 1 block 512 1 1 smem 0
// ALL: kernel decode kernels.cubin pa_decode
// Split-KV decode is one kernel; merge_segments serves split prefill:
// ALL: kernel decode_split kernels.cubin pa_decode_split
// ALL: kernel prefill_short prefill_short.cubin pa_prefill
// ALL-NEXT: prefill queries_per_tile 32 causal 1
// ALL: kernel prefill_partial prefill_short.cubin pa_prefill_partial
// ALL: kernel merge_segments prefill_short.cubin pa_merge_segments
// ALL-NOT: kernel merge_segments

// ONELOG: prefill tile_q 256
// ONELOG-NOT: prefill_short
// ONE: kernel prefill kernels.cubin pa_prefill
// ONE-NOT: prefill_short
// Without the short shape, split-KV comes with the prefill shape:
// ONE: kernel prefill_partial kernels.cubin pa_prefill_partial
// ONE-NOT: prefill_short
// ONEFILES-NOT: prefill_short
