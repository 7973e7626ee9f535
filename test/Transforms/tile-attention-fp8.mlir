// RUN: pa-opt %s --split-input-file --pa-tile-attention | FileCheck %s

// Over an fp8 cache the tiles hold the stored fp8 values (gather_kv widens
// them to f32 without their scales); the KV head's scales are loaded once
// per query tile, before the KV loop, and go to pa.tile.qk (k_scale: on
// the scores) and pa.tile.store (v_scale: on the output). The scales are
// checked (finite, > 0) like the loops lowering checks them.

// CHECK-LABEL: func.func @prefill
// CHECK:        cf.assert %{{.*}}, "fp8 KV cache scales must be finite and > 0"
// CHECK:        pa.tile.load_q
// CHECK:        %[[KS:.*]] = memref.load %arg3[%c0{{.*}}] : memref<1xf32>
// CHECK-NEXT:   %[[VS:.*]] = memref.load %arg4[%[[HK:.*]]] : memref<2xf32>
// CHECK:        scf.for
// CHECK-NEXT:     pa.tile.gather_kv kv(%arg2 : memref<?x2x16x2x64xf8E4M3FN>)
// CHECK-SAME:       outs(%{{.*}}, %{{.*}} : memref<64x64xf32>, memref<64x64xf32>)
// CHECK-NEXT:     pa.tile.qk ins({{.*}}) k_scale(%[[KS]]) outs
// CHECK:        pa.tile.store {{.*}} kv_head(%[[HK]]) v_scale(%[[VS]]) outs
func.func @prefill(%q: memref<?x8x64xf16>, %qi: memref<?xi32>, %kv: memref<?x2x16x2x64xf8E4M3FN>, %ks: memref<1xf32>, %vs: memref<2xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  pa.prefill q(%q, %qi : memref<?x8x64xf16>, memref<?xi32>) kv(%kv : memref<?x2x16x2x64xf8E4M3FN>) scales(%ks, %vs : memref<1xf32>, memref<2xf32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x64xf16>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 2, head_dim = 64>, causal}
  return
}

// -----

// A decode over split e5m2 caches with per-head scales: the same operands.

// CHECK-LABEL: func.func @decode
// CHECK:        cf.assert %{{.*}}, "fp8 KV cache scales must be finite and > 0"
// CHECK:        pa.tile.load_q
// CHECK:        %[[KS:.*]] = memref.load %arg3[%[[HK:.*]]] : memref<2xf32>
// CHECK-NEXT:   %[[VS:.*]] = memref.load %arg4[%[[HK]]] : memref<2xf32>
// CHECK:        pa.tile.gather_kv kv(%arg1, %arg2 : memref<?x16x2x128xf8E5M2>, memref<?x16x2x128xf8E5M2>)
// CHECK-NEXT:   pa.tile.qk ins({{.*}}) k_scale(%[[KS]]) outs
// CHECK:        pa.tile.store {{.*}} v_scale(%[[VS]]) outs
func.func @decode(%q: memref<?x8x128xbf16>, %k: memref<?x16x2x128xf8E5M2>, %v: memref<?x16x2x128xf8E5M2>, %ks: memref<2xf32>, %vs: memref<2xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x8x128xbf16>, %l: memref<?x8xf32>) {
  pa.decode q(%q : memref<?x8x128xbf16>) kv(%k, %v : memref<?x16x2x128xf8E5M2>, memref<?x16x2x128xf8E5M2>) scales(%ks, %vs : memref<2xf32>, memref<2xf32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x8x128xbf16>, memref<?x8xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 2, head_dim = 128>}
  return
}
