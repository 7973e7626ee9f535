// RUN: pa-opt %s --pa-shard-kv="devices=2" | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --pa-shard-kv="devices=2" --pa-lower-to-cpu | FileCheck %s --check-prefix=CPU

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// A decode whose scores depend on key positions (a window, ALiBi) keeps
// them: one pa.decode_partial per device over the whole page table and
// pa.shard_work's decode-form work list (no queries: work_indptr[b] = b,
// each request's keys of the device's contiguous page range), f32 states,
// and pa.merge into the decode's outs.
// CHECK-LABEL: func @decode
// CHECK-SAME: %[[Q:[^:]*]]: tensor<?x32x128xf16>, %[[KV:[^:]*]]: tensor<?x2x16x8x128xf16>, %[[IP:[^:]*]]: tensor<?xi32>, %[[IX:[^:]*]]: tensor<?xi32>, %[[LP:[^:]*]]: tensor<?xi32>, %[[AL:[^:]*]]: tensor<32xf32>
// CHECK: %[[W0:.*]]:4 = pa.shard_work pages(%[[IP]], %[[IX]], %[[LP]] : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs({{.*}}) {device = 0 : i64, devices = 2 : i64, {{.*}}page_size = 16 : i64}
// CHECK: %[[P0:.*]]:2 = pa.decode_partial q(%[[Q]] : {{.*}}) kv(%[[KV]] : {{.*}}) pages(%[[IP]], %[[IX]], %[[LP]] : {{.*}}) work(%[[W0]]#0, %[[W0]]#1, %[[W0]]#2, %[[W0]]#3 : {{.*}}) alibi(%[[AL]] : tensor<32xf32>) outs({{.*}} : tensor<?x32x128xf32>, tensor<?x32xf32>) {cache = {{.*}}, pa.device = 0 : i64, window = 64 : i64}
// CHECK: %[[W1:.*]]:4 = pa.shard_work {{.*}} {device = 1 : i64
// CHECK: %[[P1:.*]]:2 = pa.decode_partial {{.*}} work(%[[W1]]#0, {{.*}}pa.device = 1 : i64
// CHECK: %[[M:.*]]:2 = pa.merge states(%[[P0]]#0, %[[P0]]#1, %[[P1]]#0, %[[P1]]#1 : tensor<?x32x128xf32>, tensor<?x32xf32>, tensor<?x32x128xf32>, tensor<?x32xf32>) outs(%{{.*}}, %{{.*}} : tensor<?x32x128xf16>, tensor<?x32xf32>)
// CHECK: return %[[M]]#0, %[[M]]#1
// CPU-LABEL: llvm.func @decode
// CPU-NOT: pa.
func.func @decode(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %al: tensor<32xf32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = pa.decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) alibi(%al : tensor<32xf32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache, window = 64 : i64}
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
