// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: pa-compile --chip sm_90 --group 7 --decode-kernel cuda-core -o %t/g7 | FileCheck %s --check-prefix=G7
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/g7/bundle.manifest
// The kernels that ship are those of pa-opt's pipeline on the same program
// (same passes, same tuned shape):
// RUN: pa-opt %t/g7/program.mlir --pa-lower-to-nvvm="chip=sm_90 format=isa decode-kernel=cuda-core" | %python %S/../Pipelines/Inputs/ptx_of.py > %t/opt.ptx
// RUN: diff %t/opt.ptx %t/g7/kernels.ptx
// By default (decode-kernel auto) a group of 4 with f16 data gets the
// tensor-core decode, the same kernel as pa-opt's default pipeline:
// RUN: pa-compile --chip sm_90 --group 4 -o %t/g4 | FileCheck %s --check-prefix=TC
// RUN: FileCheck %s --check-prefix=TCMANIFEST < %t/g4/bundle.manifest
// RUN: pa-opt %t/g4/program.mlir --pa-lower-to-nvvm="chip=sm_90 format=isa" | %python %S/../Pipelines/Inputs/ptx_of.py > %t/opt4.ptx
// RUN: diff %t/opt4.ptx %t/g4/kernels.ptx
// RUN: not pa-compile --chip sm_90 --decode-kernel simd -o %t/bad 2>&1 | FileCheck %s --check-prefix=BADKERNEL
// A group of 16 at head dim 256 compiles by default (four chunks of 4 heads).
// RUN: pa-compile --chip sm_90 --group 16 --head-dim 256 --kv-heads 2 --layout hnd --kv split --dtype bf16 --decode-kernel cuda-core -o %t/g16 | FileCheck %s --check-prefix=G16
// RUN: FileCheck %s --check-prefix=SPLIT < %t/g16/bundle.manifest
// --split-kv-merge separate keeps split-KV decode as two kernels.
// RUN: pa-compile --chip sm_90 --group 7 --decode-kernel cuda-core --split-kv-merge separate -o %t/sep
// RUN: FileCheck %s --check-prefix=SEP < %t/sep/bundle.manifest
// RUN: not pa-compile --chip sm_90 --split-kv-merge later -o %t/bad 2>&1 | FileCheck %s --check-prefix=BADMERGE

// TC: pa-compile: {{.*}}g4 ({{[0-9]+}} bytes cubin, {{.*}} ms to cubin; tensor-core decode tile_q 16, tile_kv 64, kv_warps 4, smem 69632)
// TCMANIFEST: kernel decode kernels.cubin pa_decode
// TCMANIFEST: launch grid batch kv_heads 1 block 128 1 1 smem 69632
// TCMANIFEST: kernel decode_split kernels.cubin pa_decode_split
// TCMANIFEST: launch grid work_capacity kv_heads 1 block 128 1 1 smem 69632
// BADKERNEL: pa-compile: --decode-kernel must be auto, cuda-core or tensor-core, got 'simd'
// G7: pa-compile: {{.*}}g7 ({{[0-9]+}} bytes cubin, {{.*}} ms to cubin; CUDA-core decode 7 heads per CTA, 16 bytes/lane, tile_kv 16, kv_warps 4, smem {{[0-9]+}})
// MANIFEST: pa-bundle 1
// MANIFEST-NEXT: config head_dim 128 page_size 16 kv_heads 8 group 7 layout nhd dtype f16 kv joint
// MANIFEST-NEXT: kernel decode kernels.cubin pa_decode
// MANIFEST-NEXT: arg q memref 3 f16
// MANIFEST-NEXT: arg kv memref 5 f16
// MANIFEST-NEXT: arg kv_indptr memref 1 i32
// MANIFEST-NEXT: arg kv_indices memref 1 i32
// MANIFEST-NEXT: arg kv_last_page_len memref 1 i32
// MANIFEST-NEXT: arg o memref 3 f16
// MANIFEST-NEXT: arg lse memref 2 f32
// MANIFEST-NEXT: launch grid batch kv_heads 1 block 128 1 1 smem 29120
// MANIFEST-NEXT: kernel decode_split kernels.cubin pa_decode_split
// MANIFEST: arg work_indptr memref 1 i32
// MANIFEST: arg o_part memref 3 f32
// MANIFEST-NEXT: arg lse_part memref 2 f32
// MANIFEST-NEXT: arg o memref 3 f16
// MANIFEST-NEXT: arg lse memref 2 f32
// MANIFEST-NEXT: arg merge_counters memref 2 i32
// MANIFEST-NEXT: launch grid work_capacity kv_heads 1 block 128 1 1 smem 29120
// A decode bundle also writes the cache (vLLM's slot mapping):
// MANIFEST-NEXT: kernel append_kv_slots kernels.cubin pa_append_kv_slots
// MANIFEST-NEXT: arg k_new memref 3 f16
// MANIFEST-NEXT: arg v_new memref 3 f16
// MANIFEST-NEXT: arg slot_mapping memref 1 i32
// MANIFEST-NEXT: arg kv memref 5 f16
// MANIFEST-NEXT: launch grid batch 1 1 block 128 1 1 smem 0
// MANIFEST-NEXT: end
// SEP: kernel decode kernels.cubin pa_decode
// SEP: kernel decode_partial kernels.cubin pa_decode_partial
// SEP: launch grid work_capacity kv_heads 1 block 128 1 1 smem 29120
// SEP-NEXT: kernel merge_segments kernels.cubin pa_merge_segments
// SEP-NEXT: arg o_part memref 3 f32
// SEP-NEXT: arg lse_part memref 2 f32
// SEP-NEXT: arg work_indptr memref 1 i32
// SEP-NEXT: arg o memref 3 f16
// SEP-NEXT: arg lse memref 2 f32
// SEP-NEXT: launch grid batch num_q_heads 1 block 128 1 1 smem 0
// SEP-NEXT: kernel append_kv_slots kernels.cubin pa_append_kv_slots
// BADMERGE: pa-compile: --split-kv-merge must be fused or separate, got 'later'
// G16: 4 heads per CTA
// SPLIT: config head_dim 256 page_size 16 kv_heads 2 group 16 layout hnd dtype bf16 kv split
// SPLIT: arg k memref 4 bf16
// SPLIT-NEXT: arg v memref 4 bf16
// SPLIT: launch grid batch kv_heads 4 block 128 1 1 smem 34816
