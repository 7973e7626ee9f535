// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: pa-compile --group 7 -o %t/g7 | FileCheck %s --check-prefix=G7
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/g7/bundle.manifest
// The kernels that ship are those of pa-opt's pipeline on the same program
// (same passes, same tuned shape):
// RUN: pa-opt %t/g7/program.mlir --pa-lower-to-nvvm="chip=sm_90 format=isa" | %python %S/../Pipelines/Inputs/ptx_of.py > %t/opt.ptx
// RUN: diff %t/opt.ptx %t/g7/kernels.ptx
// A group of 16 at head dim 256 compiles by default (two chunks of 8 heads).
// RUN: pa-compile --group 16 --head-dim 256 --kv-heads 2 --layout hnd --kv split --dtype bf16 -o %t/g16 | FileCheck %s --check-prefix=G16
// RUN: FileCheck %s --check-prefix=SPLIT < %t/g16/bundle.manifest

// G7: pa-compile: {{.*}}g7 ({{[0-9]+}} bytes cubin, {{.*}} ms to cubin; 16 bytes/lane, 2 tokens in flight, 7 heads per CTA)
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
// MANIFEST-NEXT: launch grid batch kv_heads 1 block 128 1 1 smem 0
// MANIFEST-NEXT: kernel decode_partial kernels.cubin pa_decode_partial
// MANIFEST: arg work_indptr memref 1 i32
// MANIFEST: arg o_part memref 3 f32
// MANIFEST: launch grid work_capacity kv_heads 1 block 128 1 1 smem 0
// MANIFEST-NEXT: kernel merge_segments kernels.cubin pa_merge_segments
// MANIFEST-NEXT: arg o_part memref 3 f32
// MANIFEST-NEXT: arg lse_part memref 2 f32
// MANIFEST-NEXT: arg work_indptr memref 1 i32
// MANIFEST-NEXT: arg o memref 3 f16
// MANIFEST-NEXT: arg lse memref 2 f32
// MANIFEST-NEXT: launch grid batch num_q_heads 1 block 128 1 1 smem 0
// MANIFEST-NEXT: end
// G16: 8 heads per CTA
// SPLIT: config head_dim 256 page_size 16 kv_heads 2 group 16 layout hnd dtype bf16 kv split
// SPLIT: arg k memref 4 bf16
// SPLIT-NEXT: arg v memref 4 bf16
// SPLIT: launch grid batch kv_heads 2 block 128 1 1 smem 0
