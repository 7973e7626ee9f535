// RUN: pa-opt %s | pa-opt | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --mlir-print-op-generic | pa-opt | FileCheck %s --enable-var-scope

#nhd = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
#hnd = #pa.paged_kv<hnd, page_size = 5, kv_heads = 2, head_dim = 64>

// CHECK-LABEL: func @decode_joint
// CHECK: pa.decode q(%{{.*}} : tensor<4x32x128xf16>) kv(%{{.*}} : tensor<?x2x16x8x128xf16>) pages(%{{.*}}, %{{.*}}, %{{.*}} : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%{{.*}}, %{{.*}} : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, sm_scale = 5.000000e-01 : f32}
func.func @decode_joint(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) -> (tensor<4x32x128xf16>, tensor<4x32xf32>) {
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #nhd, sm_scale = 0.5 : f32}
  return %r#0, %r#1 : tensor<4x32x128xf16>, tensor<4x32xf32>
}

// CHECK-LABEL: func @decode_split_hnd_options
// CHECK: pa.decode q(%{{.*}} : tensor<?x4x64xbf16>) kv(%{{.*}}, %{{.*}} : tensor<?x2x5x64xbf16>, tensor<?x2x5x64xbf16>)
// CHECK-SAME: alibi(%{{.*}} : tensor<4xf32>)
// CHECK-SAME: logits_soft_cap = 3.000000e+01 : f32, lse_base2, window = 128 : i64
func.func @decode_split_hnd_options(%q: tensor<?x4x64xbf16>, %k: tensor<?x2x5x64xbf16>, %v: tensor<?x2x5x64xbf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %al: tensor<4xf32>, %o: tensor<?x4x64xbf16>, %l: tensor<?x4xf32>) -> (tensor<?x4x64xbf16>, tensor<?x4xf32>) {
  %r:2 = pa.decode q(%q : tensor<?x4x64xbf16>) kv(%k, %v : tensor<?x2x5x64xbf16>, tensor<?x2x5x64xbf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) alibi(%al : tensor<4xf32>) outs(%o, %l : tensor<?x4x64xbf16>, tensor<?x4xf32>) {cache = #hnd, logits_soft_cap = 30.0 : f32, window = 128, lse_base2}
  return %r#0, %r#1 : tensor<?x4x64xbf16>, tensor<?x4xf32>
}

// CHECK-LABEL: func @decode_memref
// CHECK: pa.decode q(%{{.*}} : memref<2x8x128xf32>)
// CHECK-NOT: ->
// CHECK: return
func.func @decode_memref(%q: memref<2x8x128xf32>, %kv: memref<?x2x16x8x128xf32>, %ip: memref<3xi32>, %ix: memref<?xi32>, %lp: memref<2xi32>, %o: memref<2x8x128xf32>, %l: memref<2x8xf32>) {
  pa.decode q(%q : memref<2x8x128xf32>) kv(%kv : memref<?x2x16x8x128xf32>) pages(%ip, %ix, %lp : memref<3xi32>, memref<?xi32>, memref<2xi32>) outs(%o, %l : memref<2x8x128xf32>, memref<2x8xf32>) {cache = #nhd}
  return
}

// CHECK-LABEL: func @prefill_causal_positions
// CHECK: pa.prefill q(%{{.*}}, %{{.*}} : tensor<?x32x128xf16>, tensor<3xi32>) kv(%{{.*}} : tensor<?x2x16x8x128xf16>) pages({{.*}}) positions(%{{.*}} : tensor<?xi32>) outs({{.*}}) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal, window = 64 : i64}
func.func @prefill_causal_positions(%q: tensor<?x32x128xf16>, %qo: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %pos: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> tensor<?x32x128xf16> {
  %r:2 = pa.prefill q(%q, %qo : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) positions(%pos : tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #nhd, causal, window = 64}
  return %r#0 : tensor<?x32x128xf16>
}

// CHECK-LABEL: func @prefill_custom_mask
// CHECK: mask(%{{.*}}, %{{.*}} : tensor<?xi8>, tensor<3xi32>) alibi(%{{.*}} : tensor<32xf32>)
func.func @prefill_custom_mask(%q: tensor<?x32x128xf16>, %qo: tensor<3xi32>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %m: tensor<?xi8>, %mi: tensor<3xi32>, %al: tensor<32xf32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> tensor<?x32x128xf16> {
  %r:2 = pa.prefill q(%q, %qo : tensor<?x32x128xf16>, tensor<3xi32>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) mask(%m, %mi : tensor<?xi8>, tensor<3xi32>) alibi(%al : tensor<32xf32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #nhd}
  return %r#0 : tensor<?x32x128xf16>
}

// CHECK-LABEL: func @cascade_two_levels
// CHECK: pa.cascade q(%{{.*}} : tensor<8x32x128xf16>) kv(%{{.*}} : tensor<?x2x16x8x128xf16>) qo_indptrs(%{{.*}}, %{{.*}} : tensor<2xi32>, tensor<9xi32>) kv_indptrs(%{{.*}}, %{{.*}} : tensor<2xi32>, tensor<9xi32>) kv_indices(%{{.*}}, %{{.*}} : tensor<?xi32>, tensor<?xi32>) kv_last_page_lens(%{{.*}}, %{{.*}} : tensor<1xi32>, tensor<8xi32>) outs({{.*}}) {cache = {{.*}}, causal}
func.func @cascade_two_levels(%q: tensor<8x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<9xi32>, %p0: tensor<2xi32>, %p1: tensor<9xi32>, %i0: tensor<?xi32>, %i1: tensor<?xi32>, %l0: tensor<1xi32>, %l1: tensor<8xi32>, %o: tensor<8x32x128xf16>, %l: tensor<8x32xf32>) -> tensor<8x32x128xf16> {
  %r:2 = pa.cascade q(%q : tensor<8x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) qo_indptrs(%qo0, %qo1 : tensor<2xi32>, tensor<9xi32>) kv_indptrs(%p0, %p1 : tensor<2xi32>, tensor<9xi32>) kv_indices(%i0, %i1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_lens(%l0, %l1 : tensor<1xi32>, tensor<8xi32>) outs(%o, %l : tensor<8x32x128xf16>, tensor<8x32xf32>) {cache = #nhd, causal}
  return %r#0 : tensor<8x32x128xf16>
}

// CHECK-LABEL: func @merge_three
// CHECK: pa.merge states(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x32x128xf16>, tensor<4x32xf32>, tensor<4x32x128xf16>, tensor<4x32xf32>, tensor<4x32x128xf16>, tensor<4x32xf32>) outs(%{{.*}}, %{{.*}} : tensor<4x32x128xf16>, tensor<4x32xf32>)
func.func @merge_three(%oa: tensor<4x32x128xf16>, %la: tensor<4x32xf32>, %ob: tensor<4x32x128xf16>, %lb: tensor<4x32xf32>, %oc: tensor<4x32x128xf16>, %lc: tensor<4x32xf32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) -> tensor<4x32x128xf16> {
  %r:2 = pa.merge states(%oa, %la, %ob, %lb, %oc, %lc : tensor<4x32x128xf16>, tensor<4x32xf32>, tensor<4x32x128xf16>, tensor<4x32xf32>, tensor<4x32x128xf16>, tensor<4x32xf32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>)
  return %r#0 : tensor<4x32x128xf16>
}

// CHECK-LABEL: func @merge_states
// CHECK: pa.merge_states states(%{{.*}}, %{{.*}} : tensor<?x4x32x128xf32>, tensor<?x4x32xf32>) outs(%{{.*}}, %{{.*}} : tensor<?x32x128xf16>, tensor<?x32xf32>) {lse_base2}
func.func @merge_states(%v: tensor<?x4x32x128xf32>, %s: tensor<?x4x32xf32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> tensor<?x32x128xf16> {
  %r:2 = pa.merge_states states(%v, %s : tensor<?x4x32x128xf32>, tensor<?x4x32xf32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {lse_base2}
  return %r#0 : tensor<?x32x128xf16>
}

// CHECK-LABEL: func @append_kv
// CHECK: pa.append_kv new(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x8x128xf16>, tensor<?x8x128xf16>, tensor<5xi32>) pages({{.*}}) outs(%{{.*}}, %{{.*}} : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
func.func @append_kv(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %ai: tensor<5xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>) -> (tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) {
  %r:2 = pa.append_kv new(%kn, %vn, %ai : tensor<?x8x128xf16>, tensor<?x8x128xf16>, tensor<5xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) {cache = #nhd}
  return %r#0, %r#1 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>
}

// CHECK-LABEL: func @append_kv_slots
// CHECK: pa.append_kv_slots new(%{{.*}}, %{{.*}} : tensor<?x2x64xf32>, tensor<?x2x64xf32>) slots(%{{.*}} : tensor<?xi32>) outs(%{{.*}} : tensor<?x2x2x5x64xf32>)
func.func @append_kv_slots(%kn: tensor<?x2x64xf32>, %vn: tensor<?x2x64xf32>, %s: tensor<?xi32>, %kv: tensor<?x2x2x5x64xf32>) -> tensor<?x2x2x5x64xf32> {
  %r = pa.append_kv_slots new(%kn, %vn : tensor<?x2x64xf32>, tensor<?x2x64xf32>) slots(%s : tensor<?xi32>) outs(%kv : tensor<?x2x2x5x64xf32>) {cache = #hnd}
  return %r : tensor<?x2x2x5x64xf32>
}

// CHECK-LABEL: func @scatter_kv
// CHECK: pa.scatter_kv new({{.*}}) positions(%{{.*}} : tensor<?xi32>) pages({{.*}}) outs(%{{.*}} : tensor<?x2x16x8x128xf16>)
func.func @scatter_kv(%kr: tensor<?x8x128xf16>, %vr: tensor<?x8x128xf16>, %ri: tensor<3xi32>, %pos: tensor<?xi32>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %kv: tensor<?x2x16x8x128xf16>) -> tensor<?x2x16x8x128xf16> {
  %r = pa.scatter_kv new(%kr, %vr, %ri : tensor<?x8x128xf16>, tensor<?x8x128xf16>, tensor<3xi32>) positions(%pos : tensor<?xi32>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) outs(%kv : tensor<?x2x16x8x128xf16>) {cache = #nhd}
  return %r : tensor<?x2x16x8x128xf16>
}

// CHECK-LABEL: func @pack_mask
// CHECK: pa.pack_mask mask(%{{.*}}, %{{.*}} : tensor<?xi1>, tensor<3xi32>) outs(%{{.*}}, %{{.*}} : tensor<?xi8>, tensor<3xi32>)
func.func @pack_mask(%m: tensor<?xi1>, %i: tensor<3xi32>, %p: tensor<?xi8>, %pi: tensor<3xi32>) -> (tensor<?xi8>, tensor<3xi32>) {
  %r:2 = pa.pack_mask mask(%m, %i : tensor<?xi1>, tensor<3xi32>) outs(%p, %pi : tensor<?xi8>, tensor<3xi32>)
  return %r#0, %r#1 : tensor<?xi8>, tensor<3xi32>
}

// CHECK-LABEL: func @cacheblend
// CHECK: pa.kv_deviation ins(%{{.*}}, %{{.*}} : tensor<?x8x128xf16>, tensor<?x8x128xf16>) outs(%{{.*}} : tensor<?xf32>)
// CHECK: pa.select_topk ins(%{{.*}}, %{{.*}} : tensor<?xf32>, tensor<3xi32>) outs(%{{.*}}, %{{.*}} : tensor<?xi32>, tensor<3xi32>) {ratio = 1.500000e-01 : f64}
func.func @cacheblend(%n: tensor<?x8x128xf16>, %c: tensor<?x8x128xf16>, %d: tensor<?xf32>, %i: tensor<3xi32>, %p: tensor<?xi32>, %pi: tensor<3xi32>) -> (tensor<?xi32>, tensor<3xi32>) {
  %dev = pa.kv_deviation ins(%n, %c : tensor<?x8x128xf16>, tensor<?x8x128xf16>) outs(%d : tensor<?xf32>)
  %r:2 = pa.select_topk ins(%dev, %i : tensor<?xf32>, tensor<3xi32>) outs(%p, %pi : tensor<?xi32>, tensor<3xi32>) {ratio = 0.15 : f64}
  return %r#0, %r#1 : tensor<?xi32>, tensor<3xi32>
}

// CHECK-LABEL: func @shard_work
// CHECK: pa.shard_work pages(%{{.*}}, %{{.*}}, %{{.*}} : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) queries(%{{.*}} : tensor<5xi32>) outs({{.*}}) {device = 1 : i64, devices = 4 : i64, page_size = 16 : i64}
func.func @shard_work(%ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %qo: tensor<5xi32>, %a: tensor<4xi32>) -> tensor<4xi32> {
  %s:7 = pa.shard_work pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) queries(%qo : tensor<5xi32>) outs(%a, %a, %a, %a, %a, %a, %a : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {device = 1 : i64, devices = 4 : i64, page_size = 16 : i64}
  return %s#3 : tensor<4xi32>
}

// CHECK-LABEL: func @shard_work_decode
// CHECK: pa.shard_work pages(%{{.*}}, %{{.*}}, %{{.*}} : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs({{.*}} : tensor<5xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64}
func.func @shard_work_decode(%ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %a: tensor<4xi32>) -> tensor<4xi32> {
  %s:4 = pa.shard_work pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%ip, %a, %a, %a : tensor<5xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64}
  return %s#2 : tensor<4xi32>
}

// CHECK-LABEL: func @shard_pages
// CHECK: pa.shard_pages pages(%{{.*}}, %{{.*}}, %{{.*}} : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) {device = 1 : i64, devices = 4 : i64, page_size = 16 : i64, round_robin}
func.func @shard_pages(%ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %a: tensor<5xi32>, %b: tensor<?xi32>, %c: tensor<4xi32>) -> tensor<?xi32> {
  %s:3 = pa.shard_pages pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%a, %b, %c : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) {device = 1 : i64, devices = 4 : i64, page_size = 16 : i64, round_robin}
  return %s#1 : tensor<?xi32>
}

// CHECK-LABEL: func @split_kv
// CHECK: pa.plan_split_kv pages(%{{.*}}, %{{.*}} : tensor<5xi32>, tensor<4xi32>) outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) {chunk_size = 256 : i64, page_size = 16 : i64}
// CHECK: pa.decode_partial q(%{{.*}} : tensor<4x32x128xf16>) kv({{.*}}) pages({{.*}}) work(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%{{.*}}, %{{.*}} : tensor<?x32x128xf32>, tensor<?x32xf32>)
// CHECK: pa.merge_segments states(%{{.*}}, %{{.*}} : tensor<?x32x128xf32>, tensor<?x32xf32>) segments(%{{.*}} : tensor<5xi32>) outs(%{{.*}}, %{{.*}} : tensor<4x32x128xf16>, tensor<4x32xf32>)
func.func @split_kv(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %wi0: tensor<5xi32>, %wr0: tensor<?xi32>, %ws0: tensor<?xi32>, %we0: tensor<?xi32>, %po: tensor<?x32x128xf32>, %pl: tensor<?x32xf32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) -> tensor<4x32x128xf16> {
  %w:4 = pa.plan_split_kv pages(%ip, %lp : tensor<5xi32>, tensor<4xi32>) outs(%wi0, %wr0, %ws0, %we0 : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) {chunk_size = 256 : i64, page_size = 16 : i64}
  %p:2 = pa.decode_partial q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) work(%w#0, %w#1, %w#2, %w#3 : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%po, %pl : tensor<?x32x128xf32>, tensor<?x32xf32>) {cache = #nhd}
  %r:2 = pa.merge_segments states(%p#0, %p#1 : tensor<?x32x128xf32>, tensor<?x32xf32>) segments(%w#0 : tensor<5xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>)
  return %r#0 : tensor<4x32x128xf16>
}

// An empty batch (0 requests, 0 query rows) and an empty ragged query set are
// legal; only heads and head dims must be non-zero.
// CHECK-LABEL: func @empty_batch
// CHECK: pa.decode q(%{{.*}} : tensor<0x32x128xf16>) {{.*}} pages(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1xi32>, tensor<0xi32>, tensor<0xi32>) outs(%{{.*}}, %{{.*}} : tensor<0x32x128xf16>, tensor<0x32xf32>)
// CHECK: pa.prefill q(%{{.*}}, %{{.*}} : tensor<0x32x128xf16>, tensor<3xi32>)
func.func @empty_batch(%q: tensor<0x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<1xi32>, %ix: tensor<0xi32>, %lp: tensor<0xi32>, %o: tensor<0x32x128xf16>, %l: tensor<0x32xf32>, %qo: tensor<3xi32>, %ip2: tensor<3xi32>, %lp2: tensor<2xi32>) -> (tensor<0x32x128xf16>, tensor<0x32xf32>) {
  %r:2 = pa.decode q(%q : tensor<0x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<1xi32>, tensor<0xi32>, tensor<0xi32>) outs(%o, %l : tensor<0x32x128xf16>, tensor<0x32xf32>) {cache = #nhd}
  %p:2 = pa.prefill q(%q, %qo : tensor<0x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip2, %ix, %lp2 : tensor<3xi32>, tensor<0xi32>, tensor<2xi32>) outs(%r#0, %r#1 : tensor<0x32x128xf16>, tensor<0x32xf32>) {cache = #nhd, causal}
  return %p#0, %p#1 : tensor<0x32x128xf16>, tensor<0x32xf32>
}

// FP8 KV caches: `scales(%k_scale, %v_scale)` after the cache operands,
// per tensor ([1]) or per KV head ([Hkv]); q and the rows written may be of
// any of f16, bf16, f32.

// CHECK-LABEL: func @decode_fp8
// CHECK: pa.decode q(%{{.*}} : tensor<4x32x128xf16>) kv(%{{.*}} : tensor<?x2x16x8x128xf8E4M3FN>) scales(%[[KS:.*]], %[[VS:.*]] : tensor<1xf32>, tensor<8xf32>) pages(
func.func @decode_fp8(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf8E4M3FN>, %ks: tensor<1xf32>, %vs: tensor<8xf32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) -> (tensor<4x32x128xf16>, tensor<4x32xf32>) {
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf8E4M3FN>) scales(%ks, %vs : tensor<1xf32>, tensor<8xf32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #nhd}
  return %r#0, %r#1 : tensor<4x32x128xf16>, tensor<4x32xf32>
}

// CHECK-LABEL: func @prefill_fp8_e5m2
// CHECK: pa.prefill q(%{{.*}}, %{{.*}} : memref<?x4x64xbf16>, memref<?xi32>) kv(%{{.*}}, %{{.*}} : memref<?x2x5x64xf8E5M2>, memref<?x2x5x64xf8E5M2>) scales(%{{.*}}, %{{.*}} : memref<2xf32>, memref<2xf32>) pages(
// CHECK-SAME: causal
func.func @prefill_fp8_e5m2(%q: memref<?x4x64xbf16>, %qo: memref<?xi32>, %k: memref<?x2x5x64xf8E5M2>, %v: memref<?x2x5x64xf8E5M2>, %ks: memref<2xf32>, %vs: memref<2xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x4x64xbf16>, %l: memref<?x4xf32>) {
  pa.prefill q(%q, %qo : memref<?x4x64xbf16>, memref<?xi32>) kv(%k, %v : memref<?x2x5x64xf8E5M2>, memref<?x2x5x64xf8E5M2>) scales(%ks, %vs : memref<2xf32>, memref<2xf32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %l : memref<?x4x64xbf16>, memref<?x4xf32>) {cache = #hnd, causal}
  return
}

// CHECK-LABEL: func @cascade_fp8
// CHECK: pa.cascade q(%{{.*}} : tensor<8x32x128xf32>) kv(%{{.*}} : tensor<?x2x16x8x128xf8E4M3FN>) scales(%{{.*}}, %{{.*}} : tensor<8xf32>, tensor<1xf32>) qo_indptrs(
func.func @cascade_fp8(%q: tensor<8x32x128xf32>, %kv: tensor<?x2x16x8x128xf8E4M3FN>, %ks: tensor<8xf32>, %vs: tensor<1xf32>, %qo0: tensor<2xi32>, %qo1: tensor<9xi32>, %p0: tensor<2xi32>, %p1: tensor<9xi32>, %i0: tensor<?xi32>, %i1: tensor<?xi32>, %l0: tensor<1xi32>, %l1: tensor<8xi32>, %o: tensor<8x32x128xf32>, %l: tensor<8x32xf32>) -> (tensor<8x32x128xf32>, tensor<8x32xf32>) {
  %r:2 = pa.cascade q(%q : tensor<8x32x128xf32>) kv(%kv : tensor<?x2x16x8x128xf8E4M3FN>) scales(%ks, %vs : tensor<8xf32>, tensor<1xf32>) qo_indptrs(%qo0, %qo1 : tensor<2xi32>, tensor<9xi32>) kv_indptrs(%p0, %p1 : tensor<2xi32>, tensor<9xi32>) kv_indices(%i0, %i1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_lens(%l0, %l1 : tensor<1xi32>, tensor<8xi32>) outs(%o, %l : tensor<8x32x128xf32>, tensor<8x32xf32>) {cache = #nhd}
  return %r#0, %r#1 : tensor<8x32x128xf32>, tensor<8x32xf32>
}

// CHECK-LABEL: func @decode_partial_fp8
// CHECK: pa.decode_partial q(%{{.*}} : tensor<4x32x128xbf16>) kv(%{{.*}} : tensor<?x2x16x8x128xf8E5M2>) scales(%{{.*}}, %{{.*}} : tensor<1xf32>, tensor<1xf32>) pages(
func.func @decode_partial_fp8(%q: tensor<4x32x128xbf16>, %kv: tensor<?x2x16x8x128xf8E5M2>, %ks: tensor<1xf32>, %vs: tensor<1xf32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %wi: tensor<5xi32>, %wr: tensor<?xi32>, %ws: tensor<?xi32>, %we: tensor<?xi32>, %o: tensor<?x32x128xf32>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf32>, tensor<?x32xf32>) {
  %r:2 = pa.decode_partial q(%q : tensor<4x32x128xbf16>) kv(%kv : tensor<?x2x16x8x128xf8E5M2>) scales(%ks, %vs : tensor<1xf32>, tensor<1xf32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) work(%wi, %wr, %ws, %we : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf32>, tensor<?x32xf32>) {cache = #nhd}
  return %r#0, %r#1 : tensor<?x32x128xf32>, tensor<?x32xf32>
}

// CHECK-LABEL: func @append_kv_fp8
// CHECK: pa.append_kv new(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x8x128xf16>, tensor<?x8x128xf32>, tensor<5xi32>) pages({{.*}}) scales(%{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8xf32>) outs(%{{.*}} : tensor<?x2x16x8x128xf8E4M3FN>)
func.func @append_kv_fp8(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf32>, %ai: tensor<5xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %ks: tensor<8xf32>, %vs: tensor<8xf32>, %kv: tensor<?x2x16x8x128xf8E4M3FN>) -> tensor<?x2x16x8x128xf8E4M3FN> {
  %r = pa.append_kv new(%kn, %vn, %ai : tensor<?x8x128xf16>, tensor<?x8x128xf32>, tensor<5xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) scales(%ks, %vs : tensor<8xf32>, tensor<8xf32>) outs(%kv : tensor<?x2x16x8x128xf8E4M3FN>) {cache = #nhd}
  return %r : tensor<?x2x16x8x128xf8E4M3FN>
}

// CHECK-LABEL: func @append_kv_slots_fp8
// CHECK: pa.append_kv_slots new(%{{.*}}, %{{.*}} : memref<?x2x64xf16>, memref<?x2x64xf16>) slots(%{{.*}} : memref<?xi32>) scales(%{{.*}}, %{{.*}} : memref<1xf32>, memref<2xf32>) outs(%{{.*}}, %{{.*}} : memref<?x2x5x64xf8E5M2>, memref<?x2x5x64xf8E5M2>)
func.func @append_kv_slots_fp8(%kn: memref<?x2x64xf16>, %vn: memref<?x2x64xf16>, %sm: memref<?xi32>, %ks: memref<1xf32>, %vs: memref<2xf32>, %k: memref<?x2x5x64xf8E5M2>, %v: memref<?x2x5x64xf8E5M2>) {
  pa.append_kv_slots new(%kn, %vn : memref<?x2x64xf16>, memref<?x2x64xf16>) slots(%sm : memref<?xi32>) scales(%ks, %vs : memref<1xf32>, memref<2xf32>) outs(%k, %v : memref<?x2x5x64xf8E5M2>, memref<?x2x5x64xf8E5M2>) {cache = #hnd}
  return
}

// CHECK-LABEL: func @scatter_kv_fp8
// CHECK: pa.scatter_kv new({{.*}}) positions({{.*}}) pages({{.*}}) scales(%{{.*}}, %{{.*}} : tensor<1xf32>, tensor<1xf32>) outs(%{{.*}} : tensor<?x2x16x8x128xf8E4M3FN>)
func.func @scatter_kv_fp8(%kr: tensor<?x8x128xbf16>, %vr: tensor<?x8x128xbf16>, %ri: tensor<3xi32>, %pos: tensor<?xi32>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %ks: tensor<1xf32>, %vs: tensor<1xf32>, %kv: tensor<?x2x16x8x128xf8E4M3FN>) -> tensor<?x2x16x8x128xf8E4M3FN> {
  %r = pa.scatter_kv new(%kr, %vr, %ri : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<3xi32>) positions(%pos : tensor<?xi32>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) scales(%ks, %vs : tensor<1xf32>, tensor<1xf32>) outs(%kv : tensor<?x2x16x8x128xf8E4M3FN>) {cache = #nhd}
  return %r : tensor<?x2x16x8x128xf8E4M3FN>
}

// CHECK-LABEL: func @prefill_partial
// CHECK: pa.prefill_partial q(%{{.*}}, %{{.*}} : tensor<?x32x128xf16>, tensor<3xi32>) kv({{.*}}) pages({{.*}}) work(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) alibi(%{{.*}} : tensor<32xf32>) outs(%{{.*}}, %{{.*}} : tensor<?x32x128xf32>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal, lse_base2, window = 64 : i64}
func.func @prefill_partial(%q: tensor<?x32x128xf16>, %qi: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %w0: tensor<?xi32>, %w1: tensor<?xi32>, %w2: tensor<?xi32>, %w3: tensor<?xi32>, %w4: tensor<?xi32>, %w5: tensor<?xi32>, %w6: tensor<?xi32>, %al: tensor<32xf32>, %o: tensor<?x32x128xf32>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf32>, tensor<?x32xf32>) {
  %p:2 = pa.prefill_partial q(%q, %qi : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) work(%w0, %w1, %w2, %w3, %w4, %w5, %w6 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) alibi(%al : tensor<32xf32>) outs(%o, %l : tensor<?x32x128xf32>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal, window = 64 : i64, lse_base2}
  return %p#0, %p#1 : tensor<?x32x128xf32>, tensor<?x32xf32>
}
