// RUN: pa-opt %s --pa-split-kv="chunk-size=256" | FileCheck %s --enable-var-scope --check-prefix=PLAN
// RUN: pa-opt %s --pa-split-kv="work-list=true" | FileCheck %s --enable-var-scope --check-prefix=ARGS

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// In-IR planner: the work list is sized B + ceil(num_pages * P / C) and filled
// by pa.plan_split_kv; partial states are f32; merge_segments writes the
// decode's outs.
// PLAN-LABEL: func @decode
// PLAN-SAME: %[[Q:[^:]*]]: tensor<?x32x128xf16>, %[[KV:[^:]*]]: tensor<?x2x16x8x128xf16>, %[[IP:[^:]*]]: tensor<?xi32>, %[[IX:[^:]*]]: tensor<?xi32>, %[[LP:[^:]*]]: tensor<?xi32>, %[[O:[^:]*]]: tensor<?x32x128xf16>, %[[L:[^:]*]]: tensor<?x32xf32>
// PLAN: %[[NP:.*]] = tensor.dim %[[IX]]
// PLAN: %[[TOK:.*]] = arith.muli %[[NP]], %c16
// PLAN: %[[CH:.*]] = arith.ceildivui %[[TOK]], %c256
// PLAN: %[[W:.*]]:4 = pa.plan_split_kv pages(%[[IP]], %[[LP]] : {{.*}}) outs({{.*}}) {chunk_size = 256 : i64, page_size = 16 : i64}
// PLAN: %[[P:.*]]:2 = pa.decode_partial q(%[[Q]] : {{.*}}) kv(%[[KV]] : {{.*}}) pages(%[[IP]], %[[IX]], %[[LP]] : {{.*}}) work(%[[W]]#0, %[[W]]#1, %[[W]]#2, %[[W]]#3 : {{.*}}) outs({{.*}} : tensor<?x32x128xf32>, tensor<?x32xf32>) {cache = {{.*}}, sm_scale = 1.250000e-01 : f32}
// PLAN: %[[M:.*]]:2 = pa.merge_segments states(%[[P]]#0, %[[P]]#1 : {{.*}}) segments(%[[W]]#0 : tensor<?xi32>) outs(%[[O]], %[[L]] : {{.*}})
// PLAN: return %[[M]]#0, %[[M]]#1

// Run-time planner: four new tagged function arguments carry the work list.
// ARGS-LABEL: func @decode
// ARGS-SAME: %[[WI:[^:]*]]: tensor<?xi32> {pa.work_list = "indptr"}, %[[WR:[^:]*]]: tensor<?xi32> {pa.work_list = "request"}, %[[WS:[^:]*]]: tensor<?xi32> {pa.work_list = "start"}, %[[WE:[^:]*]]: tensor<?xi32> {pa.work_list = "end"}
// ARGS-NOT: pa.plan_split_kv
// ARGS: pa.decode_partial {{.*}} work(%[[WI]], %[[WR]], %[[WS]], %[[WE]] :
// ARGS: pa.merge_segments {{.*}} segments(%[[WI]] :
func.func @decode(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = pa.decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache, sm_scale = 0.125 : f32}
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// Every option of the decode reaches decode_partial (split K/V, ALiBi slopes,
// sm_scale, soft-cap, window, lse_base2) and lse_base2 the merge.
// PLAN-LABEL: func @all_options
// PLAN-SAME: %[[Q:[^:]*]]: tensor<?x4x64xbf16>, %[[K:[^:]*]]: tensor<?x2x5x64xbf16>, %[[V:[^:]*]]: tensor<?x2x5x64xbf16>, %[[IP:[^:]*]]: tensor<?xi32>, %[[IX:[^:]*]]: tensor<?xi32>, %[[LP:[^:]*]]: tensor<?xi32>, %[[AL:[^:]*]]: tensor<4xf32>
// PLAN: %[[W:.*]]:4 = pa.plan_split_kv pages(%[[IP]], %[[LP]] : {{.*}}) outs({{.*}}) {chunk_size = 256 : i64, page_size = 5 : i64}
// PLAN: %[[P:.*]]:2 = pa.decode_partial q(%[[Q]] : {{.*}}) kv(%[[K]], %[[V]] : {{.*}}) pages(%[[IP]], %[[IX]], %[[LP]] : {{.*}}) work(%[[W]]#0, %[[W]]#1, %[[W]]#2, %[[W]]#3 : {{.*}}) alibi(%[[AL]] : tensor<4xf32>) outs({{.*}} : tensor<?x4x64xf32>, tensor<?x4xf32>) {cache = #pa.paged_kv<hnd, page_size = 5, kv_heads = 2, head_dim = 64>, logits_soft_cap = 3.000000e+01 : f32, lse_base2, sm_scale = 1.250000e-01 : f32, window = 128 : i64}
// PLAN: pa.merge_segments states(%[[P]]#0, %[[P]]#1 : {{.*}}) segments(%[[W]]#0 : tensor<?xi32>) outs({{.*}}) {lse_base2}
func.func @all_options(%q: tensor<?x4x64xbf16>, %k: tensor<?x2x5x64xbf16>, %v: tensor<?x2x5x64xbf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %al: tensor<4xf32>, %o: tensor<?x4x64xbf16>, %l: tensor<?x4xf32>) -> (tensor<?x4x64xbf16>, tensor<?x4xf32>) {
  %r:2 = pa.decode q(%q : tensor<?x4x64xbf16>) kv(%k, %v : tensor<?x2x5x64xbf16>, tensor<?x2x5x64xbf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) alibi(%al : tensor<4xf32>) outs(%o, %l : tensor<?x4x64xbf16>, tensor<?x4xf32>) {cache = #pa.paged_kv<hnd, page_size = 5, kv_heads = 2, head_dim = 64>, sm_scale = 0.125 : f32, logits_soft_cap = 30.0 : f32, window = 128, lse_base2}
  return %r#0, %r#1 : tensor<?x4x64xbf16>, tensor<?x4xf32>
}

// work-list=true: a function with uses is fine as long as it has no decode to
// split (see split-kv-callers.mlir for the error), and the entry point that
// calls it takes the work list.
// ARGS-LABEL: func @helper
// ARGS-SAME: (%{{[^:]*}}: tensor<?x4xf32>) -> tensor<?x4xf32>
// ARGS-LABEL: func @entry_calls_helper
// ARGS-SAME: {pa.work_list = "indptr"}
// ARGS: pa.decode_partial
// ARGS: call @helper
func.func @helper(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  return %x : tensor<?x4xf32>
}
func.func @entry_calls_helper(%q: tensor<?x4x64xbf16>, %k: tensor<?x2x5x64xbf16>, %v: tensor<?x2x5x64xbf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x4x64xbf16>, %l: tensor<?x4xf32>) -> (tensor<?x4x64xbf16>, tensor<?x4xf32>) {
  %r:2 = pa.decode q(%q : tensor<?x4x64xbf16>) kv(%k, %v : tensor<?x2x5x64xbf16>, tensor<?x2x5x64xbf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x4x64xbf16>, tensor<?x4xf32>) {cache = #pa.paged_kv<hnd, page_size = 5, kv_heads = 2, head_dim = 64>}
  %h = func.call @helper(%r#1) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r#0, %h : tensor<?x4x64xbf16>, tensor<?x4xf32>
}

// The partial decode over an fp8 cache keeps its scales.
// PLAN-LABEL: func @decode_fp8
// PLAN-SAME: %[[KS:[^:]*]]: tensor<1xf32>, %[[VS:[^:]*]]: tensor<2xf32>
// PLAN: pa.decode_partial q({{.*}}) kv(%{{.*}} : tensor<?x2x2x5x64xf8E4M3FN>) scales(%[[KS]], %[[VS]] : tensor<1xf32>, tensor<2xf32>) pages(
func.func @decode_fp8(%q: tensor<?x4x64xf16>, %kv: tensor<?x2x2x5x64xf8E4M3FN>, %ks: tensor<1xf32>, %vs: tensor<2xf32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x4x64xf16>, %l: tensor<?x4xf32>) -> (tensor<?x4x64xf16>, tensor<?x4xf32>) {
  %r:2 = pa.decode q(%q : tensor<?x4x64xf16>) kv(%kv : tensor<?x2x2x5x64xf8E4M3FN>) scales(%ks, %vs : tensor<1xf32>, tensor<2xf32>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x4x64xf16>, tensor<?x4xf32>) {cache = #pa.paged_kv<hnd, page_size = 5, kv_heads = 2, head_dim = 64>}
  return %r#0, %r#1 : tensor<?x4x64xf16>, tensor<?x4xf32>
}
