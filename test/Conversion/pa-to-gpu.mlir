// RUN: pa-opt %s --convert-pa-to-gpu=decode-kernel=cuda-core --pa-promote-tiles --pa-tile-to-simt -split-input-file -verify-diagnostics | FileCheck %s --enable-var-scope

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// A CTA per (request, kv head), 128 threads: the tile IR of the request's
// query for the group's 4 heads (pa.simt), through pa-promote-tiles and
// pa-tile-to-simt. The kernel takes the op's operands and carries its ABI
// (argument roles, launch rule, tile shape); 32-byte lanes (8 a K / V row,
// two 16-byte chunks each, 4 lane groups a warp), 64-key tiles in swizzled
// shared memory behind cp.async, the 4 heads' q chunks read once before the
// KV loop, each key's dot products reduced over the 8 lanes of its group,
// ex2 for the softmax, the groups' states merged through shared memory
// behind a barrier.
// CHECK-LABEL: func @decode
// CHECK-SAME: %[[Q:[^:]*]]: memref<?x32x128xf16>, %[[KV:[^:]*]]: memref<?x2x16x8x128xf16>, %[[IP:[^:]*]]: memref<?xi32>, %[[IX:[^:]*]]: memref<?xi32>, %[[LP:[^:]*]]: memref<?xi32>, %[[O:[^:]*]]: memref<?x32x128xf16>, %[[L:[^:]*]]: memref<?x32xf32>
// CHECK-DAG: %[[B:.*]] = memref.dim %[[O]], %c0
// CHECK-DAG: %[[HKV:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[NT:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[SMEM:.*]] = arith.constant 66560 : i32
// CHECK: gpu.launch_func @pa_kernels::@pa_decode blocks in (%[[B]], %[[HKV]], %{{.*}}) threads in (%[[NT]], %{{.*}}, %{{.*}}) dynamic_shared_memory_size %[[SMEM]] args(%[[Q]] : memref<?x32x128xf16>, %[[KV]] : memref<?x2x16x8x128xf16>, %[[IP]] : memref<?xi32>, %[[IX]] : memref<?xi32>, %[[LP]] : memref<?xi32>, %[[O]] : memref<?x32x128xf16>, %[[L]] : memref<?x32xf32>)
// CHECK: gpu.module @pa_kernels
// CHECK: gpu.func @pa_decode(%{{.*}}: memref<?x32x128xf16>, {{.*}}) kernel
// CHECK-SAME: pa.kernel = {args = ["q", "kv", "kv_indptr", "kv_indices", "kv_last_page_len", "o", "lse"], block = array<i64: 128, 1, 1>, grid = ["batch", "kv_heads", 1], heads_per_cta = 4 : i64, kind = "decode", kv_warps = 4 : i64, lane_bytes = 32 : i64, smem = 66560 : i64, tile_kv = 64 : i64, tile_q = 4 : i64, tokens_in_flight = 4 : i64}, pa.simt, pa.smem_swizzle
// CHECK: nvgpu.device_async_copy
// CHECK-COUNT-8: vector.load {{.*}} : memref<260x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: scf.for
// CHECK: vector.load {{.*}} : memref<260x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: gpu.subgroup_reduce add {{.*}} cluster(size = 8) : (f32) -> f32
// CHECK: ex2.approx.ftz.f32
// CHECK: nvgpu.device_async_wait
// CHECK: gpu.barrier
// CHECK: memref.load {{.*}} : memref<{{[0-9]+}}xf32, #gpu.address_space<workgroup>>
func.func @decode(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.decode q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #cache}
  return
}

// -----

// merge_segments: a CTA per (segment, head); its segments are the split-KV
// work list's indptr.
// CHECK-LABEL: func @merge
// CHECK: %[[S:.*]] = memref.dim %{{.*}}, %c0 : memref<?x32x128xf16>
// CHECK: %[[H:.*]] = memref.dim %{{.*}}, %c1 : memref<?x32x128xf16>
// CHECK: gpu.launch_func @pa_kernels::@pa_merge_segments blocks in (%[[S]], %[[H]], %{{.*}})
// CHECK: gpu.func @pa_merge_segments
// CHECK-SAME: pa.kernel = {args = ["o_part", "lse_part", "work_indptr", "o", "lse"], block = array<i64: 128, 1, 1>, grid = ["batch", "num_q_heads", 1], kind = "merge_segments", smem = 0 : i64}
func.func @merge(%op: memref<?x32x128xf32>, %lp: memref<?x32xf32>, %wi: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.merge_segments states(%op, %lp : memref<?x32x128xf32>, memref<?x32xf32>) segments(%wi : memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}

// -----

// Head dims whose rows do not split into a power of two of 16- or 32-byte
// lanes are rejected (the tensor-core decode takes them).
func.func @bad_head_dim(%q: memref<?x4x96xf16>, %kv: memref<?x2x16x4x96xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x4x96xf16>, %l: memref<?x4xf32>) {
  // expected-error @+1 {{the CUDA-core decode reduces a dot product over the lanes of a K / V row: head dim x element bytes / lane-bytes must be a power of two <= 32, got 12 (use decode-kernel=tensor-core)}}
  pa.decode q(%q : memref<?x4x96xf16>) kv(%kv : memref<?x2x16x4x96xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x4x96xf16>, memref<?x4xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 4, head_dim = 96>}
  return
}

// -----

// 16 heads of 256 dims per KV head: the group is split into 4 chunks of 4
// heads (grid z; a lane holds 8 dims of each head's q and accumulator, at
// most 96 floats), the CTA's heads those of "KV head" y * 4 + z.
// CHECK-LABEL: func @large_group
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: gpu.launch_func @pa_kernels::@pa_decode blocks in (%{{.*}}, %{{.*}}, %[[C4]])
// CHECK: gpu.func @pa_decode
// CHECK-SAME: grid = ["batch", "kv_heads", 4], heads_per_cta = 4 : i64
// CHECK: gpu.block_id  z
func.func @large_group(%q: memref<?x16x256xf16>, %kv: memref<?x2x16x1x256xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x16x256xf16>, %l: memref<?x16xf32>) {
  pa.decode q(%q : memref<?x16x256xf16>) kv(%kv : memref<?x2x16x1x256xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x16x256xf16>, memref<?x16xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 1, head_dim = 256>}
  return
}

// -----

// The sliding window subtracts the window from the position (the first
// key the tile loop visits, max(0, pos - window + 1)) and never adds it: a
// window of INT64_MAX (no window) cannot overflow; the per-key test
// (pos - t < window, in i32) is left out for a window of 2^31 or more.
// CHECK-LABEL: func @window
// CHECK: gpu.func @pa_decode
// CHECK: %[[W:.*]] = arith.constant 9223372036854775807 : index
// CHECK-NOT: arith.addi %{{.*}}, %[[W]]
// CHECK: arith.subi %{{.*}}, %[[W]] : index
// CHECK-NOT: arith.addi %{{.*}}, %[[W]]
func.func @window(%q: memref<?x8x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  pa.decode q(%q : memref<?x8x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x128xf16>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, window = 9223372036854775807 : i64}
  return
}

// -----

// Ops without a GPU lowering are rejected at the op, before anything
// changes, instead of staying behind on the host (pa.cascade reaches the
// GPU through pa-cascade-decompose, which pa-lower-to-nvvm runs first).
func.func @cascade(%q: memref<8x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo0: memref<2xi32>, %qo1: memref<9xi32>, %p0: memref<2xi32>, %p1: memref<9xi32>, %i0: memref<?xi32>, %i1: memref<?xi32>, %l0: memref<1xi32>, %l1: memref<8xi32>, %o: memref<8x32x128xf16>, %l: memref<8x32xf32>) {
  // expected-error @+1 {{'pa.cascade' op is not supported on the GPU yet: convert-pa-to-gpu lowers pa.decode, pa.decode_partial, pa.merge_segments, pa.prefill, pa.prefill_partial, pa.append_kv_slots, pa.append_kv, pa.scatter_kv, pa.merge, pa.merge_states, pa.kv_deviation, pa.select_topk, pa.pack_mask, pa.plan_split_kv and pa.mla_decode (use pa-lower-to-cpu for the other ops)}}
  pa.cascade q(%q : memref<8x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) qo_indptrs(%qo0, %qo1 : memref<2xi32>, memref<9xi32>) kv_indptrs(%p0, %p1 : memref<2xi32>, memref<9xi32>) kv_indices(%i0, %i1 : memref<?xi32>, memref<?xi32>) kv_last_page_lens(%l0, %l1 : memref<1xi32>, memref<8xi32>) outs(%o, %l : memref<8x32x128xf16>, memref<8x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

// split-kv-merge=fused (the default): a decode_partial and the merge of its
// states over its own work_indptr become one kernel, pa_decode_split, whose
// extra arguments are the merge's o / lse and the [B, Hq] arrival counters
// (allocated and zeroed around the launch). Each CTA fences its partial
// stores, counts its arrival (one atomic a CTA, skipped for a request of
// one item), tells every thread whether it was last with a barrier
// reduction, and the last CTA merges the request's rows; empty requests
// are written by the CTA next to them. A counter at merge_together at
// launch (the runtime's cooperative launch) instead waits for the
// request's arrivals, fences, arrives a second time (after the merge, the
// last of those puts the counter back to merge_together for the next
// launch), and every CTA merges a share: a slot per group of lanes, each
// lane a few rows, the group's states folded with xor shuffles (16 .. 1
// lanes apart).
// CHECK-LABEL: func @split_fused
// CHECK-SAME: %[[WI:[^:]*]]: memref<?xi32>, %{{[^:]*}}: memref<?xi32>, %{{[^:]*}}: memref<?xi32>, %{{[^:]*}}: memref<?xi32>, %[[OP:[^:]*]]: memref<?x32x128xf32>, %[[LPART:[^:]*]]: memref<?x32xf32>, %[[O:[^:]*]]: memref<?x32x128xf16>, %[[L:[^:]*]]: memref<?x32xf32>
// CHECK: %[[B:.*]] = memref.dim %[[O]], %c0
// CHECK: %[[CNT:.*]] = gpu.alloc (%[[B]]) : memref<?x32xi32>
// CHECK: gpu.memset %[[CNT]], %{{.*}} : memref<?x32xi32>, i32
// CHECK: gpu.launch_func @pa_kernels::@pa_decode_split {{.*}} args({{.*}}, %[[OP]] : memref<?x32x128xf32>, %[[LPART]] : memref<?x32xf32>, %[[O]] : memref<?x32x128xf16>, %[[L]] : memref<?x32xf32>, %[[CNT]] : memref<?x32xi32>)
// CHECK-NEXT: gpu.dealloc %[[CNT]]
// CHECK-NOT: pa.merge_segments
// CHECK: gpu.func @pa_decode_split(
// CHECK-SAME: args = ["q", "kv", "kv_indptr", "kv_indices", "kv_last_page_len", "work_indptr", "work_request", "work_start", "work_end", "o_part", "lse_part", "o", "lse", "merge_counters"]
// CHECK-SAME: grid = ["work_capacity", "kv_heads", 1]
// CHECK-SAME: kind = "decode_split"
// CHECK-SAME: merge_together = 1073741824 : i64
// CHECK: gpu.subgroup_reduce add
// The request's work_indptr entries load before the fence (their round
// trip overlaps its wait).
// CHECK: memref.load %[[WI]]
// CHECK-NEXT: arith.index_cast
// CHECK: memref.load %[[WI]]
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: nvvm.memory.barrier <gpu>
// CHECK-NEXT: gpu.barrier
// CHECK: %[[OLD:.*]] = memref.atomic_rmw addi %c1_i32{{.*}}, %arg13
// CHECK: arith.andi %[[OLD]], %c1073741824_i32
// The poll starts from what the CTA's own arrival saw.
// CHECK: %[[SEEN:.*]] = arith.xori %[[OLD]], %c1073741824_i32
// CHECK: scf.while (%{{.*}} = %{{.*}})
// CHECK: scf.condition
// CHECK: memref.atomic_rmw addi %c0_i32{{.*}}, %arg13
// The fence before the second arrival, so that it does not wait for the
// atomic's answer; the last CTA's fence before it puts the counter back.
// CHECK: llvm.intr.trap
// CHECK: nvvm.memory.barrier <gpu>
// CHECK-NEXT: arith.constant 1 : i32
// CHECK-NEXT: %[[LEFT:.*]] = memref.atomic_rmw addi %c1_i32{{.*}}, %arg13
// CHECK: nvvm.memory.barrier <gpu>
// CHECK-NEXT: arith.constant 0 : i32
// CHECK-NEXT: memref.store %c0_i32{{.*}}, %arg13
// CHECK: nvvm.barrier #nvvm.reduction<or>
// CHECK: nvvm.barrier #nvvm.reduction<or>
// The share: each lane's rows 2 a step, both rows' loads before their
// math (foldRows), then the fold.
// CHECK: scf.for
// CHECK: vector.load %arg9{{.*}} : memref<?x32x128xf32>, vector<4xf32>
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg9{{.*}} : memref<?x32x128xf32>, vector<4xf32>
// CHECK-NOT: vector.load
// CHECK: llvm.intr.fma
// CHECK: gpu.shuffle {{ *}}xor {{.*}}, %c16_i32
// CHECK: gpu.shuffle {{ *}}xor {{.*}}, %c1_i32
// CHECK: vector.store {{.*}} : memref<?x32x128xf16>, vector<4xf16>
// The last CTA's merge, 8 rows a step, their loads before their math.
// CHECK: scf.for {{.*}} step %c8
// CHECK: vector.load %arg9{{.*}} : memref<?x32x128xf32>, vector<4xf32>
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg9{{.*}} : memref<?x32x128xf32>, vector<4xf32>
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg9{{.*}} : memref<?x32x128xf32>, vector<4xf32>
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg9{{.*}} : memref<?x32x128xf32>, vector<4xf32>
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg9{{.*}} : memref<?x32x128xf32>, vector<4xf32>
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg9{{.*}} : memref<?x32x128xf32>, vector<4xf32>
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg9{{.*}} : memref<?x32x128xf32>, vector<4xf32>
// CHECK-NOT: llvm.intr.fma
// CHECK-NOT: ex2.approx
// CHECK: vector.load %arg9{{.*}} : memref<?x32x128xf32>, vector<4xf32>
// CHECK-NOT: vector.load
// CHECK: llvm.intr.fma
// CHECK: vector.store {{.*}} : memref<?x32x128xf16>, vector<4xf16>
// After the merge, the last CTA to leave puts the counter back.
// CHECK: arith.xori %{{.*}}, %c1073741824_i32
// CHECK: memref.store %c1073741824_i32{{.*}}, %arg13
// CHECK-NOT: gpu.func @pa_merge_segments
#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @split_fused(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %wi: memref<?xi32>, %wr: memref<?xi32>, %ws: memref<?xi32>, %we: memref<?xi32>, %op: memref<?x32x128xf32>, %lpart: memref<?x32xf32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.decode_partial q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) work(%wi, %wr, %ws, %we : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%op, %lpart : memref<?x32x128xf32>, memref<?x32xf32>) {cache = #cache}
  pa.merge_segments states(%op, %lpart : memref<?x32x128xf32>, memref<?x32xf32>) segments(%wi : memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}

// -----

// A merge over other segments than the work list's (or anything touching
// memory between the two) keeps the kernels apart.
// CHECK-LABEL: func @split_not_fused
// CHECK: gpu.launch_func @pa_kernels::@pa_decode_partial
// CHECK: gpu.launch_func @pa_kernels::@pa_merge_segments
// CHECK: gpu.launch_func @pa_kernels::@pa_decode_partial
// CHECK: memref.copy
// CHECK: gpu.launch_func @pa_kernels::@pa_merge_segments
// CHECK-NOT: pa_decode_split
#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @split_not_fused(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %wi: memref<?xi32>, %wr: memref<?xi32>, %ws: memref<?xi32>, %we: memref<?xi32>, %seg: memref<?xi32>, %op: memref<?x32x128xf32>, %lpart: memref<?x32xf32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>, %c: memref<?xi32>) {
  pa.decode_partial q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) work(%wi, %wr, %ws, %we : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%op, %lpart : memref<?x32x128xf32>, memref<?x32xf32>) {cache = #cache}
  pa.merge_segments states(%op, %lpart : memref<?x32x128xf32>, memref<?x32xf32>) segments(%seg : memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>)
  pa.decode_partial q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) work(%wi, %wr, %ws, %we : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%op, %lpart : memref<?x32x128xf32>, memref<?x32xf32>) {cache = #cache}
  memref.copy %wi, %c : memref<?xi32> to memref<?xi32>
  pa.merge_segments states(%op, %lpart : memref<?x32x128xf32>, memref<?x32xf32>) segments(%wi : memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}
