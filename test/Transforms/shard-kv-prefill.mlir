// RUN: pa-opt %s --pa-shard-kv="devices=2" | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --pa-shard-kv="devices=2" --pa-lower-to-cpu | FileCheck %s --check-prefix=CPU

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// Context parallelism that keeps positions (docs/ContextParallel.md): the
// prefill becomes one pa.prefill_partial per device over the whole page
// table and pa.shard_work's work list of that device (all of a request's
// queries over the keys of its contiguous page range), every mask and
// option kept, f32 partial states with a row per query, and pa.merge of the
// devices' states into the prefill's (f16) outs.
// CHECK-LABEL: func @prefill
// CHECK-SAME: %[[Q:[^:]*]]: tensor<?x32x128xf16>, %[[QO:[^:]*]]: tensor<?xi32>, %[[KV:[^:]*]]: tensor<?x2x16x8x128xf16>, %[[IP:[^:]*]]: tensor<?xi32>, %[[IX:[^:]*]]: tensor<?xi32>, %[[LP:[^:]*]]: tensor<?xi32>, %[[AL:[^:]*]]: tensor<32xf32>, %[[O:[^:]*]]: tensor<?x32x128xf16>, %[[L:[^:]*]]: tensor<?x32xf32>
// CHECK: %[[W0:.*]]:7 = pa.shard_work pages(%[[IP]], %[[IX]], %[[LP]] : {{.*}}) queries(%[[QO]] : tensor<?xi32>) outs({{.*}}) {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64}
// CHECK: %[[P0:.*]]:2 = pa.prefill_partial q(%[[Q]], %[[QO]] : {{.*}}) kv(%[[KV]] : {{.*}}) pages(%[[IP]], %[[IX]], %[[LP]] : {{.*}}) work(%[[W0]]#0, %[[W0]]#1, %[[W0]]#2, %[[W0]]#3, %[[W0]]#4, %[[W0]]#5, %[[W0]]#6 : {{.*}}) alibi(%[[AL]] : tensor<32xf32>) outs({{.*}} : tensor<?x32x128xf32>, tensor<?x32xf32>) {cache = {{.*}}, causal, pa.device = 0 : i64, window = 100 : i64}
// CHECK: %[[W1:.*]]:7 = pa.shard_work {{.*}} {device = 1 : i64, devices = 2 : i64, page_size = 16 : i64}
// CHECK: %[[P1:.*]]:2 = pa.prefill_partial {{.*}} work(%[[W1]]#0, {{.*}}pa.device = 1 : i64
// CHECK: %[[M:.*]]:2 = pa.merge states(%[[P0]]#0, %[[P0]]#1, %[[P1]]#0, %[[P1]]#1 : tensor<?x32x128xf32>, tensor<?x32xf32>, tensor<?x32x128xf32>, tensor<?x32xf32>) outs(%[[O]], %[[L]] : tensor<?x32x128xf16>, tensor<?x32xf32>)
// CHECK: return %[[M]]#0, %[[M]]#1
// The whole CPU pipeline lowers it (shard_work to loops).
// CPU-LABEL: llvm.func @prefill
// CPU-NOT: pa.
func.func @prefill(%q: tensor<?x32x128xf16>, %qo: tensor<?xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %al: tensor<32xf32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = pa.prefill q(%q, %qo : tensor<?x32x128xf16>, tensor<?xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) alibi(%al : tensor<32xf32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache, causal, window = 100 : i64}
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
