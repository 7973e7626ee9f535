// RUN: pa-opt %s --convert-pa-to-gpu -split-input-file -verify-diagnostics | FileCheck %s
// RUN: pa-opt %s --convert-pa-to-gpu="mla-row-blocks=1" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=ONE

// pa.mla_decode becomes the tensor-core kernel pa_mla_decode: a CTA per
// (request, 16 x mla-row-blocks query heads), 4 warps per 16-head row
// block, the latent cache in 64-token tiles of dynamic shared memory
// through cp.async (two stages), S and O on mma.sync (docs/GPU.md, "MLA
// decode"). The ABI names the roles, the grid and the shared memory. Grid
// z splits each request's keys (kv_splits, the runtime's choice; the
// program's own launch uses one split): the partial states and arrival
// counters are kernel arguments, allocated here on the host.

// CHECK-LABEL: func.func @mla_decode
// CHECK: %[[B:.*]] = memref.dim %arg0, %c0
// CHECK: %[[OP:.*]] = gpu.alloc (%[[B]]) : memref<?x128x512xf32>
// CHECK: %[[LP:.*]] = gpu.alloc (%[[B]]) : memref<?x128xf32>
// CHECK: %[[CNT:.*]] = gpu.alloc (%[[B]]) : memref<?x128xi32>
// CHECK: gpu.memset %[[CNT]]
// CHECK: gpu.launch_func @pa_kernels::@pa_mla_decode blocks in (%[[B]], %c4, %c1) threads in (%c256, %c1{{.*}}, %c1{{.*}}) dynamic_shared_memory_size %c192512_i32 args({{.*}}, %[[OP]] : memref<?x128x512xf32>, %[[LP]] : memref<?x128xf32>, %[[CNT]] : memref<?x128xi32>)
// CHECK: gpu.dealloc %[[OP]]
// CHECK: gpu.func @pa_mla_decode
// CHECK-SAME: args = ["q_nope", "q_pe", "ckv_kpe", "kv_indptr", "kv_indices", "kv_last_page_len", "o", "lse", "o_part", "lse_part", "merge_counters"]
// CHECK-SAME: block = array<i64: 256, 1, 1>, grid = ["batch", 4, "kv_splits"], kind = "mla_decode", kv_stages = 2 : i64, merge_together = 1073741824 : i64, smem = 192512 : i64, tile_kv = 64 : i64, tile_q = 32 : i64
// CHECK: gpu.grid_dim z
// CHECK: gpu.dynamic_shared_memory
// CHECK: nvgpu.device_async_copy
// CHECK: scf.for
// CHECK: nvgpu.device_async_wait
// CHECK: gpu.barrier
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.mma.sync
// CHECK: gpu.subgroup_reduce maximumf {{.*}} cluster(size = 4)
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: nvgpu.mma.sync
// The arrival: a counter at merge_together at launch waits for the
// request's splits, then every CTA merges a share; at 0 the last CTA merges.
// CHECK: %[[OLD:.*]] = memref.atomic_rmw addi %c1_i32{{.*}}, %arg10
// CHECK: arith.andi %[[OLD]], %c1073741824_i32
// CHECK: %[[T0:.*]] = llvm.inline_asm has_side_effects {{.*}}"mov.u64 $0, %globaltimer;"
// The poll starts from the arrivals the CTA's own arrival saw.
// CHECK: arith.xori %[[OLD]], %c1073741824_i32
// CHECK: scf.while
// CHECK: scf.condition
// CHECK: %[[NOW:.*]] = memref.atomic_rmw addi %c0_i32{{.*}}, %arg10
// CHECK: arith.xori %[[NOW]], %c1073741824_i32
// A wait of more than 60 s traps. Then the fence and a second arrival,
// read after the merge; the last CTA fences before it resets the counter.
// CHECK: llvm.intr.trap
// CHECK: nvvm.memory.barrier <gpu>
// CHECK-NEXT: arith.constant 1 : i32
// CHECK-NEXT: %[[LEFT:.*]] = memref.atomic_rmw addi %c1_i32{{.*}}, %arg10
// CHECK: nvvm.memory.barrier <gpu>
// CHECK-NEXT: arith.constant 0 : i32
// CHECK-NEXT: memref.store %c0_i32{{.*}}, %arg10
// CHECK: %[[TOGETHER:.*]] = nvvm.barrier #nvvm.reduction<or>
// CHECK: %[[LAST:.*]] = nvvm.barrier #nvvm.reduction<or>
// The share: first the heads' statistics, the 256 threads reading the
// rows' lse 8 ways (thread (p, h): rows p, p + 8, ..., 8 a step, loaded
// together) into shared memory, folded by thread h < 32 after a barrier.
// CHECK: scf.if
// CHECK: memref.view {{.*}} to memref<2x8x32xf32, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<2x32xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for {{.*}} to %grid_dim_z step %c64{{.*}} -> (f32, f32)
// CHECK-NOT: ex2.approx
// CHECK: memref.load %arg9
// CHECK-NOT: ex2.approx
// CHECK: memref.load %arg9
// CHECK-NOT: ex2.approx
// CHECK: memref.load %arg9
// CHECK-NOT: ex2.approx
// CHECK: memref.load %arg9
// CHECK-NOT: ex2.approx
// CHECK: memref.load %arg9
// CHECK-NOT: ex2.approx
// CHECK: memref.load %arg9
// CHECK-NOT: ex2.approx
// CHECK: memref.load %arg9
// CHECK-NOT: ex2.approx
// CHECK: memref.load %arg9
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// Then with many splits (a share of at most 256 slots) a slot a thread,
// 16 rows' loads a step issued before their math ...
// CHECK: scf.if
// CHECK: scf.if
// CHECK: scf.for {{.*}} to %grid_dim_z step %c16{{.*}} -> (vector<4xf32>)
// CHECK-NOT: llvm.intr.fma
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: vector.load
// CHECK: llvm.intr.fma({{.*}}) : (vector<4xf32>, vector<4xf32>, vector<4xf32>)
// ... else 4 slots a thread (threads apart), 4 rows a step: 16 loads.
// CHECK: scf.if
// CHECK: scf.for {{.*}} step %c1024
// CHECK: scf.for {{.*}} to %grid_dim_z step %c4{{.*}} -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
// CHECK-NOT: llvm.intr.fma
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg8
// CHECK-NOT: vector.load
// CHECK: llvm.intr.fma({{.*}}) : (vector<4xf32>, vector<4xf32>, vector<4xf32>)
// The last CTA's merge of all the CTA's heads.
// CHECK: scf.if
// Then the last CTA to leave puts the counter back to merge_together for
// the next launch.
// CHECK: arith.xori %{{.*}}, %c1073741824_i32
// CHECK: memref.store %c1073741824_i32{{.*}}, %arg10
// ONE-LABEL: func.func @mla_decode
// ONE: gpu.launch_func @pa_kernels::@pa_mla_decode blocks in (%{{.*}}, %c8, %c1) threads in (%c128,
// ONE: grid = ["batch", 8, "kv_splits"]
func.func @mla_decode(%qn: memref<?x128x512xbf16>, %qp: memref<?x128x64xbf16>, %kv: memref<?x64x576xbf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x128x512xbf16>, %l: memref<?x128xf32>) {
  pa.mla_decode q(%qn, %qp : memref<?x128x512xbf16>, memref<?x128x64xbf16>) kv(%kv : memref<?x64x576xbf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x128x512xbf16>, memref<?x128xf32>) {cache = #pa.paged_mla<page_size = 64, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32}
  return
}

// -----

// 16 heads: one row block (4 warps, 128 threads), a CTA per request.
// CHECK-LABEL: func.func @mla_decode_16
// CHECK: gpu.launch_func @pa_kernels::@pa_mla_decode blocks in (%{{.*}}, %c1{{.*}}, %c1{{.*}}) threads in (%c128,
// CHECK: grid = ["batch", 1, "kv_splits"]
func.func @mla_decode_16(%qn: memref<?x16x512xf16>, %qp: memref<?x16x64xf16>, %kv: memref<?x1x576xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x16x512xf16>, %l: memref<?x16xf32>) {
  pa.mla_decode q(%qn, %qp : memref<?x16x512xf16>, memref<?x16x64xf16>) kv(%kv : memref<?x1x576xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x16x512xf16>, memref<?x16xf32>) {cache = #pa.paged_mla<page_size = 1, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32, logits_soft_cap = 30.0 : f32, lse_base2}
  return
}

// -----

// What the kernel cannot do is an error at the op, before the IR changes.
func.func @mla_f32(%qn: memref<?x16x512xf32>, %qp: memref<?x16x64xf32>, %kv: memref<?x16x576xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x16x512xf32>, %l: memref<?x16xf32>) {
  // expected-error @+1 {{'pa.mla_decode' op MLA decode on the GPU needs f16 or bf16 data (tensor cores), got 'f32' (f32 runs on pa-lower-to-cpu)}}
  pa.mla_decode q(%qn, %qp : memref<?x16x512xf32>, memref<?x16x64xf32>) kv(%kv : memref<?x16x576xf32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x16x512xf32>, memref<?x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32}
  return
}

// -----

func.func @mla_narrow(%qn: memref<?x16x96xf16>, %qp: memref<?x16x8xf16>, %kv: memref<?x16x104xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x16x96xf16>, %l: memref<?x16xf32>) {
  // expected-error @+1 {{'pa.mla_decode' op MLA decode on the GPU needs D_ckv to be a multiple of 64 (4 warps x 16 columns), got 96}}
  pa.mla_decode q(%qn, %qp : memref<?x16x96xf16>, memref<?x16x8xf16>) kv(%kv : memref<?x16x104xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x16x96xf16>, memref<?x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 96, kpe = 8>, sm_scale = 0.1 : f32}
  return
}

// -----

func.func @mla_dynamic_heads(%qn: memref<?x?x512xf16>, %qp: memref<?x?x64xf16>, %kv: memref<?x16x576xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x?x512xf16>, %l: memref<?x?xf32>) {
  // expected-error @+1 {{'pa.mla_decode' op MLA decode on the GPU needs a static number of query heads (dim 1 of q_nope)}}
  pa.mla_decode q(%qn, %qp : memref<?x?x512xf16>, memref<?x?x64xf16>) kv(%kv : memref<?x16x576xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x?x512xf16>, memref<?x?xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 512, kpe = 64>, sm_scale = 0.0721687824 : f32}
  return
}

// -----

func.func @mla_wide(%qn: memref<?x16x1024xf16>, %qp: memref<?x16x64xf16>, %kv: memref<?x16x1088xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x16x1024xf16>, %l: memref<?x16xf32>) {
  // expected-error @+1 {{'pa.mla_decode' op MLA decode on the GPU: D_ckv + D_kpe = 1088 needs 318464 bytes of shared memory, more than the 232448 a CTA may have (two stages of 64-token tiles)}}
  pa.mla_decode q(%qn, %qp : memref<?x16x1024xf16>, memref<?x16x64xf16>) kv(%kv : memref<?x16x1088xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x16x1024xf16>, memref<?x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 1024, kpe = 64>, sm_scale = 0.05 : f32}
  return
}
