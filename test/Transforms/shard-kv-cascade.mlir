// RUN: pa-opt %s --pa-lower-to-cpu="shard-devices=2" -mlir-print-ir-after=pa-shard-kv -o /dev/null 2>&1 | FileCheck %s

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// pa-lower-to-cpu{shard-devices} decomposes a cascade into its levels (a
// prefill each here: the shared prefix under all queries, then each
// request's own pages) and shards each level with its positions
// (pa.shard_work, a pa.prefill_partial per device, pa.merge).
// CHECK: IR Dump After PAShardKV (pa-shard-kv)
// CHECK-NOT: pa.cascade
// CHECK: pa.shard_work pages(%[[IP0:[^,]*]], {{.*}} {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64}
// CHECK: pa.prefill_partial {{.*}}pa.device = 0 : i64
// CHECK: pa.shard_work pages(%[[IP0]], {{.*}} {device = 1 : i64, devices = 2 : i64, page_size = 16 : i64}
// CHECK: pa.merge
// CHECK: pa.shard_work pages(%[[IP1:[^,]*]], {{.*}} {device = 0 : i64
// CHECK-NOT: %[[IP0]],
// CHECK: pa.shard_work pages(%[[IP1]], {{.*}} {device = 1 : i64
// CHECK: pa.merge
func.func @cascade(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<5xi32>, %ip0: tensor<2xi32>, %ip1: tensor<5xi32>, %ix0: tensor<?xi32>, %ix1: tensor<?xi32>, %lp0: tensor<1xi32>, %lp1: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) -> (tensor<4x32x128xf16>, tensor<4x32xf32>) {
  %r:2 = pa.cascade q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) qo_indptrs(%qo0, %qo1 : tensor<2xi32>, tensor<5xi32>) kv_indptrs(%ip0, %ip1 : tensor<2xi32>, tensor<5xi32>) kv_indices(%ix0, %ix1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_lens(%lp0, %lp1 : tensor<1xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #cache}
  return %r#0, %r#1 : tensor<4x32x128xf16>, tensor<4x32xf32>
}
