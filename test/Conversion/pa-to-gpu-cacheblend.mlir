// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu -verify-diagnostics | FileCheck %s --enable-var-scope

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// kv_deviation: a warp per token, 4 warps a CTA (grid x = ceil(N / 4)); each
// lane sums the squared differences of 16-byte vectors of both rows in f32,
// the warp reduces (gpu.subgroup_reduce, turned into shuffles by
// pa-warp-shuffle-reduce) and lane 0 stores the correctly rounded root.
// CHECK-LABEL: func @dev(
// CHECK: %[[N:.*]] = memref.dim %arg2, %c0
// CHECK: %[[NP:.*]] = arith.addi %[[N]], %c3
// CHECK: %[[CTAS:.*]] = arith.divui %[[NP]], %c4
// CHECK: gpu.launch_func @pa_kernels::@pa_kv_deviation blocks in (%[[CTAS]], %{{.*}}, %{{.*}}) threads in (%c128
// CHECK: gpu.func @pa_kv_deviation(
// CHECK-SAME: pa.kernel = {args = ["new_rows", "cached_rows", "deviation"], block = array<i64: 128, 1, 1>, grid = ["batch", 1, 1], kind = "kv_deviation", smem = 0 : i64}
// CHECK: scf.for
// CHECK: vector.load %arg0{{.*}} {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
// CHECK: vector.load %arg1{{.*}} {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
// CHECK: llvm.intr.fma
// CHECK: vector.reduction <add>
// CHECK: gpu.subgroup_reduce add %{{.*}} uniform
// CHECK: "sqrt.rn.f32 $0, $1;"
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}] : memref<?xf32>
func.func @dev(%a: memref<?x8x128xf16>, %b: memref<?x8x128xf16>, %d: memref<?xf32>) {
  pa.kv_deviation ins(%a, %b : memref<?x8x128xf16>, memref<?x8x128xf16>) outs(%d : memref<?xf32>)
  return
}

// -----

// select_topk: a CTA of 512 threads per request (grid x = B) with three
// shared counters: the output base (a sum of the earlier requests' k),
// then 32 counting passes that build the threshold bit by bit (atomic adds
// into alternating counters, barriers), a count of the keys above it, and
// warp 0's ordered compaction by ballots and lanemask_lt.
// CHECK-LABEL: func @topk(
// CHECK: %[[B:.*]] = arith.subi
// CHECK: gpu.launch_func @pa_kernels::@pa_select_topk blocks in (%[[B]], %{{.*}}, %{{.*}}) threads in (%c512
// CHECK: gpu.func @pa_select_topk(
// CHECK-SAME: workgroup(%{{.*}} : memref<3xi32, #gpu.address_space<workgroup>>)
// CHECK-SAME: pa.kernel = {args = ["deviation", "dev_indptr", "positions", "out_indptr"], block = array<i64: 512, 1, 1>, grid = ["batch", 1, 1], kind = "select_topk", smem = 0 : i64}
// CHECK: arith.mulf %{{.*}} : f64
// CHECK: memref.atomic_rmw addi
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c32
// CHECK: arith.cmpi uge
// CHECK: memref.atomic_rmw addi
// CHECK: gpu.barrier
// CHECK: arith.cmpi ugt
// CHECK: nvvm.read.ptx.sreg.lanemask.lt
// CHECK: nvvm.vote.sync  ballot
// CHECK: llvm.intr.ctpop
// CHECK: nvvm.vote.sync  ballot
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}] : memref<?xi32>
func.func @topk(%d: memref<?xf32>, %i: memref<?xi32>, %p: memref<?xi32>, %o: memref<?xi32>) {
  pa.select_topk ins(%d, %i : memref<?xf32>, memref<?xi32>) outs(%p, %o : memref<?xi32>, memref<?xi32>) {ratio = 0.15 : f64}
  return
}

// -----

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// append_kv: a CTA per row (grid x = the rows); rows past
// append_indptr[B] are skipped; the row's request is a binary search over
// append_indptr of ctlz-many steps; the token kv_len - append_len + j goes
// through the page table (pages outside the cache skipped) and the row is
// copied as append_kv_slots copies it.
// CHECK-LABEL: func @append(
// CHECK: gpu.launch_func @pa_kernels::@pa_append_kv blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%c128
// CHECK: gpu.func @pa_append_kv(
// CHECK-SAME: args = ["k_new", "v_new", "append_indptr", "kv_indptr", "kv_indices", "kv_last_page_len", "kv"], block = array<i64: 128, 1, 1>, grid = ["batch", 1, 1], kind = "append_kv"
// CHECK: %[[R:.*]] = gpu.block_id x
// CHECK: scf.if
// CHECK: "llvm.intr.ctlz"
// CHECK: scf.for
// CHECK: arith.cmpi sle
// CHECK: scf.if
// CHECK: scf.if
// CHECK: vector.load %arg0[%[[R]], %{{.*}}, %{{.*}}] {alignment = 16 : i64}
// CHECK: vector.store %{{.*}}, %arg6[%{{.*}}, %c0{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64}
// CHECK: vector.store %{{.*}}, %arg6[%{{.*}}, %c1{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64}
func.func @append(%k: memref<?x8x128xf16>, %v: memref<?x8x128xf16>, %ai: memref<?xi32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>) {
  pa.append_kv new(%k, %v, %ai : memref<?x8x128xf16>, memref<?x8x128xf16>, memref<?xi32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%kv : memref<?x2x16x8x128xf16>) {cache = #cache}
  return
}

// -----

#cache = #pa.paged_kv<hnd, page_size = 16, kv_heads = 8, head_dim = 128>

// scatter_kv over a split HND fp8 cache: the same search over rows_indptr,
// the row's token from positions (kept only inside [0, kv_len)), the row
// quantized with its head's scale (16 fp8 elements a store).
// CHECK-LABEL: func @scatter(
// CHECK: gpu.func @pa_scatter_kv(
// CHECK-SAME: args = ["k_new", "v_new", "rows_indptr", "positions", "kv_indptr", "kv_indices", "kv_last_page_len", "k_scale", "v_scale", "k", "v"]
// CHECK-SAME: kind = "scatter_kv"
// CHECK: "llvm.intr.ctlz"
// CHECK: memref.load %arg3[%{{.*}}] : memref<?xi32>
// CHECK: arith.cmpi slt
// CHECK: arith.truncf %{{.*}} : vector<16xf32> to vector<16xf8E4M3FN>
// CHECK: vector.store %{{.*}}, %arg9[{{.*}}] {alignment = 16 : i64} : memref<?x8x16x128xf8E4M3FN>, vector<16xf8E4M3FN>
func.func @scatter(%k: memref<?x8x128xf16>, %v: memref<?x8x128xf16>, %ri: memref<?xi32>, %pos: memref<?xi32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %ks: memref<8xf32>, %vs: memref<8xf32>, %kc: memref<?x8x16x128xf8E4M3FN>, %vc: memref<?x8x16x128xf8E4M3FN>) {
  pa.scatter_kv new(%k, %v, %ri : memref<?x8x128xf16>, memref<?x8x128xf16>, memref<?xi32>) positions(%pos : memref<?xi32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%ks, %vs : memref<8xf32>, memref<8xf32>) outs(%kc, %vc : memref<?x8x16x128xf8E4M3FN>, memref<?x8x16x128xf8E4M3FN>) {cache = #cache}
  return
}

// -----

func.func @dev_dynamic(%a: memref<?x8x?xf16>, %b: memref<?x8x?xf16>, %d: memref<?xf32>) {
  // expected-error @+1 {{pa.kv_deviation on the GPU needs static heads and head dim (the rows' [H, D])}}
  pa.kv_deviation ins(%a, %b : memref<?x8x?xf16>, memref<?x8x?xf16>) outs(%d : memref<?xf32>)
  return
}

// -----

// pack_mask: a CTA per segment (grid x = B); the segment's first byte is
// the sum of the earlier segments' ceil(n / 8) (a shared counter), thread 0
// writes packed_indptr[b + 1]; each thread ORs 8 elements (non-zero = 1,
// past the segment 0) into a byte, bit j = element 8k + j.
// CHECK-LABEL: func @pack(
// CHECK: gpu.launch_func @pa_kernels::@pa_pack_mask blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%c128
// CHECK: gpu.func @pa_pack_mask(
// CHECK-SAME: workgroup(%{{.*}} : memref<1xi32, #gpu.address_space<workgroup>>)
// CHECK-SAME: pa.kernel = {args = ["mask", "mask_segments", "custom_mask", "mask_indptr"], block = array<i64: 128, 1, 1>, grid = ["batch", 1, 1], kind = "pack_mask", smem = 0 : i64}
// CHECK: memref.atomic_rmw addi
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %arg3[%{{.*}}] : memref<?xi32>
// CHECK: scf.for
// CHECK-COUNT-8: arith.cmpi ne, %{{.*}}, %c0_i8
// CHECK: arith.trunci %{{.*}} : i32 to i8
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}] : memref<?xi8>
func.func @pack(%m: memref<?xi8>, %i: memref<?xi32>, %p: memref<?xi8>, %pi: memref<?xi32>) {
  pa.pack_mask mask(%m, %i : memref<?xi8>, memref<?xi32>) outs(%p, %pi : memref<?xi8>, memref<?xi32>)
  return
}
