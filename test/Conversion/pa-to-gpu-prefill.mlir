// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu="prefill-warps=4 prefill-tile-kv=32" | FileCheck %s --check-prefix=SHAPE
// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu | %python -c "import re, sys; t = sys.stdin.read(); sys.exit(0 if re.search(r'%%(\w+) = arith\.cmpi ult, %%\w+, %%c384\w* : index\n\s+scf\.if %%\1 \{\n(?:[^{}\n]*\n)*?[^{}\n]*nvgpu\.device_async_copy', t) else 'no guarded partial round of K/V copies')"

// pa.prefill becomes the tensor-core kernel: dynamic shared memory viewed as
// Q + two K/V stages (rows padded to D + 8), cp.async (16 bytes, zero-fill
// count) through the page table, ldmatrix (plain for Q and K, transposed for
// V), mma.sync m16n8k16, quad shuffles for the row max / sum; the ABI names
// the grid symbols the runtime resolves and the dynamic shared memory.

// CHECK-LABEL: func.func @prefill(
// CHECK: gpu.launch_func @pa_kernels::@pa_prefill blocks in ({{.*}}) threads in ({{.*}}) dynamic_shared_memory_size %{{.*}} args(
// CHECK-LABEL: gpu.module @pa_kernels
// CHECK: gpu.func @pa_prefill({{.*}}) kernel attributes {pa.kernel = {args = ["q", "qo_indptr", "kv", "kv_indptr", "kv_indices", "kv_last_page_len", "o", "lse"], block = array<i64: 256, 1, 1>, grid = ["q_tiles", "kv_heads", "batch"], kind = "prefill", smem = 104448 : i64, tile_kv = 32 : i64, tile_q = 256 : i64}
// CHECK: %[[RAW:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[SMEM:.*]] = memref.view %[[RAW]]{{.*}} to memref<384x136xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}}, %[[SMEM]][{{.*}}], 8, %{{.*}} {bypassL1}
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: nvgpu.ldmatrix %[[SMEM]][{{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: gpu.shuffle xor
// CHECK: nvgpu.ldmatrix %[[SMEM]][{{.*}}] {numTiles = 4 : i32, transpose = true}
// CHECK: nvgpu.mma.sync
// CHECK: gpu.barrier
// CHECK: vector.store {{.*}} {alignment = 4 : i64} : memref<?x32x128xf16>, vector<2xf16>
// SHAPE: block = array<i64: 128, 1, 1>
// SHAPE-SAME: smem = 69632 : i64, tile_kv = 32 : i64, tile_q = 128 : i64
func.func @prefill(%q: memref<?x32x128xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  pa.prefill q(%q, %qi : memref<?x32x128xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x32x128xf16>, memref<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

// Every optional operand has a role, in the op's operand order; bf16 split
// caches keep the same kernel with bf16 fragments.
// CHECK-LABEL: func.func @prefill_all(
// CHECK: gpu.func @pa_prefill({{.*}}) kernel attributes {pa.kernel = {args = ["q", "qo_indptr", "k", "v", "kv_indptr", "kv_indices", "kv_last_page_len", "q_positions", "custom_mask", "mask_indptr", "alibi_slopes", "o", "lse"]
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
func.func @prefill_all(%q: memref<?x8x64xbf16>, %qi: memref<?xi32>, %k: memref<?x16x4x64xbf16>, %v: memref<?x16x4x64xbf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %pos: memref<?xi32>, %m: memref<?xi8>, %mi: memref<?xi32>, %al: memref<8xf32>, %o: memref<?x8x64xbf16>, %l: memref<?x8xf32>) {
  pa.prefill q(%q, %qi : memref<?x8x64xbf16>, memref<?xi32>) kv(%k, %v : memref<?x16x4x64xbf16>, memref<?x16x4x64xbf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) positions(%pos : memref<?xi32>) mask(%m, %mi : memref<?xi8>, memref<?xi32>) alibi(%al : memref<8xf32>) outs(%o, %l : memref<?x8x64xbf16>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 4, head_dim = 64>}
  return
}

// -----

// D = 96 with 32-key tiles: 32 x 12 chunks of 16 bytes are 1.5 rounds of 256
// threads. The threads past the tile in the second round copy nothing (a
// zero-fill there would land outside the tile): their copies sit under an
// `scf.if` on `tid + 256 < 384` (checked by the third RUN line's regex).
// CHECK-LABEL: func.func @d96(
// CHECK: gpu.func @pa_prefill(
func.func @d96(%q: memref<?x8x96xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x2x96xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x96xf16>, %l: memref<?x8xf32>) {
  pa.prefill q(%q, %qi : memref<?x8x96xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x2x96xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x96xf16>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 2, head_dim = 96>, causal}
  return
}
