// RUN: pa-opt %s --split-input-file --convert-pa-to-gpu | FileCheck %s
// RUN: not pa-opt %s --split-input-file --convert-pa-to-gpu="decode-kernel=cuda-core" 2>&1 | FileCheck %s --check-prefix=CC

// FP8 KV caches run on the tile kernels: the tensor-core decode (which
// decode-kernel=auto picks for every group over an fp8 cache, MHA
// included) and prefill. The kernel takes the scales as the ABI's k_scale
// and v_scale arguments; the tiling loads the KV head's scales before the
// KV loop (per tensor: entry 0; per head: the CTA's KV head) for
// pa.tile.qk and pa.tile.store. MHA keeps the default 2 K/V stages (no
// kv_stages; a one-pass GQA decode over fp8 at D 128 keeps 3:
// test/Conversion/promote-tiles-fp8.mlir). The CUDA-core decode has no fp8
// path and says so at the op.

// CHECK-LABEL: gpu.func @pa_decode
// CHECK-SAME:    %[[KS:arg2]]: memref<1xf32>, %[[VS:arg3]]: memref<32xf32>
// CHECK-SAME:    args = ["q", "kv", "k_scale", "v_scale", "kv_indptr", "kv_indices", "kv_last_page_len", "o", "lse"]
// CHECK-SAME:    kind = "decode", kv_warps = 4
// CHECK:         %[[HK:.*]] = arith.remui %{{.*}}, %grid_dim_y
// CHECK:         %[[K:.*]] = memref.load %[[KS]][%c0{{.*}}] : memref<1xf32>
// CHECK-NEXT:    %[[V:.*]] = memref.load %[[VS]][%[[HK]]] : memref<32xf32>
// CHECK:         pa.tile.gather_kv kv(%arg1 : memref<?x2x16x32x128xf8E4M3FN>)
// CHECK-NEXT:    pa.tile.qk ins({{.*}}) k_scale(%[[K]]) outs
// CHECK:         pa.tile.store {{.*}} v_scale(%[[V]]) outs
// CC: error: 'pa.decode' op the CUDA-core decode has no FP8 KV cache path: FP8 caches run on the tensor-core decode (decode-kernel=auto or tensor-core, f16 / bf16 queries, a head dim that is a multiple of 16 up to 256, GQA groups up to 32)
func.func @decode_mha(%q: memref<4x32x128xf16>, %kv: memref<?x2x16x32x128xf8E4M3FN>, %ks: memref<1xf32>, %vs: memref<32xf32>, %ip: memref<5xi32>, %ix: memref<?xi32>, %lp: memref<4xi32>, %o: memref<4x32x128xf16>, %l: memref<4x32xf32>) {
  pa.decode q(%q : memref<4x32x128xf16>) kv(%kv : memref<?x2x16x32x128xf8E4M3FN>) scales(%ks, %vs : memref<1xf32>, memref<32xf32>) pages(%ip, %ix, %lp : memref<5xi32>, memref<?xi32>, memref<4xi32>) outs(%o, %l : memref<4x32x128xf16>, memref<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 32, head_dim = 128>}
  return
}

// -----

// CHECK-LABEL: gpu.func @pa_prefill
// CHECK-SAME:    args = ["q", "qo_indptr", "k", "v", "k_scale", "v_scale", "kv_indptr", "kv_indices", "kv_last_page_len", "o", "lse"]
// CHECK:         %[[HK:.*]] = gpu.block_id y
// CHECK:         %[[K:.*]] = memref.load %arg4[%[[HK]]] : memref<8xf32>
// CHECK-NEXT:    %[[V:.*]] = memref.load %arg5[%[[HK]]] : memref<8xf32>
// CHECK:         pa.tile.gather_kv kv(%arg2, %arg3 : memref<?x16x8x128xf8E5M2>, memref<?x16x8x128xf8E5M2>)
// CHECK-NEXT:    pa.tile.qk ins({{.*}}) k_scale(%[[K]]) outs
// CHECK:         pa.tile.store {{.*}} v_scale(%[[V]]) outs
func.func @prefill(%q: memref<?x8x128xbf16>, %qi: memref<?xi32>, %k: memref<?x16x8x128xf8E5M2>, %v: memref<?x16x8x128xf8E5M2>, %ks: memref<8xf32>, %vs: memref<8xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x128xbf16>, %l: memref<?x8xf32>) {
  pa.prefill q(%q, %qi : memref<?x8x128xbf16>, memref<?xi32>) kv(%k, %v : memref<?x16x8x128xf8E5M2>, memref<?x16x8x128xf8E5M2>) scales(%ks, %vs : memref<8xf32>, memref<8xf32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x128xbf16>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}
