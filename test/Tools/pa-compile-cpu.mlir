// pa-compile --target cpu: the program through pa-lower-to-cpu into a host
// shared library (one _mlir_ciface_<fn> per function) and cpu.manifest,
// which names every argument by its role (the Python package's contract).
// RUN: rm -rf %t && mkdir -p %t
// RUN: pa-compile --target cpu --kernels all --head-dim 32 --page-size 4 --kv-heads 2 --group 2 --kv split --logits-soft-cap 30 -o %t/b | FileCheck %s --check-prefix=LOG
// RUN: FileCheck %s < %t/b/cpu.manifest
// RUN: nm -D --defined-only %t/b/kernels_cpu.so | FileCheck %s --check-prefix=SYMS
// RUN: FileCheck %s --check-prefix=IR < %t/b/program.mlir
// RUN: not pa-compile --target tpu -o %t/bad 2>&1 | FileCheck %s --check-prefix=BAD

// LOG: pa-compile: {{.*}}/b (CPU: kernels_cpu.so,

// CHECK: pa-cpu-bundle 1
// CHECK-NEXT: config head_dim 32 page_size 4 kv_heads 2 group 2 layout nhd dtype f16 kv split
// CHECK-NEXT: function prefill
// CHECK-NEXT: arg q memref 3 f16
// CHECK-NEXT: arg qo_indptr memref 1 i32
// CHECK-NEXT: arg k memref 4 f16
// CHECK-NEXT: arg v memref 4 f16
// CHECK-NEXT: arg kv_indptr memref 1 i32
// CHECK-NEXT: arg kv_indices memref 1 i32
// CHECK-NEXT: arg kv_last_page_len memref 1 i32
// CHECK-NEXT: arg o memref 3 f16
// CHECK-NEXT: arg lse memref 2 f32
// CHECK-NEXT: result memref 3 f16
// CHECK-NEXT: result memref 2 f32
// CHECK-NEXT: options causal 0 window 0 soft_cap 30 sm_scale 0 lse_base2 0
// CHECK: function merge_states
// CHECK-NEXT: arg o_states memref 4 f16
// CHECK-NEXT: arg lse_states memref 3 f32
// CHECK: function select_topk
// CHECK: topk ratio 0.1
// CHECK: function decode
// CHECK-NEXT: arg q memref 3 f16
// CHECK-NEXT: arg k memref 4 f16
// CHECK-NEXT: arg v memref 4 f16
// CHECK: function append_kv_slots
// CHECK-NEXT: arg k_new memref 3 f16
// CHECK-NEXT: arg v_new memref 3 f16
// CHECK-NEXT: arg slot_mapping memref 1 i32
// CHECK-NEXT: arg k memref 4 f16
// CHECK-NEXT: arg v memref 4 f16
// CHECK-NEXT: result memref 4 f16
// CHECK-NEXT: result memref 4 f16
// CHECK-NEXT: end

// SYMS-DAG: T _mlir_ciface_decode
// SYMS-DAG: T _mlir_ciface_prefill
// SYMS-DAG: T _mlir_ciface_merge
// SYMS-DAG: T _mlir_ciface_append_kv_slots
// SYMS-DAG: T _mlir_ciface_pack_mask

// The program keeps the role names as argument attributes.
// IR: func.func @decode(%arg0: tensor<?x4x32xf16> {pa.arg_name = "q"}

// BAD: pa-compile: --target must be gpu or cpu, got 'tpu'
