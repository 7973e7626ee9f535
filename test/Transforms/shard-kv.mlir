// RUN: pa-opt %s --pa-shard-kv="devices=3" | FileCheck %s --enable-var-scope
// RUN: pa-opt %s --pa-shard-kv="devices=2 round-robin=true" | FileCheck %s --check-prefix=RR
// RUN: pa-opt %s --pa-shard-kv="devices=2" --pa-lower-to-cpu | FileCheck %s --check-prefix=CPU
// RUN: not pa-opt %s --pa-shard-kv="devices=0" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: pa-opt %s --pa-lower-to-cpu="shard-devices=2 shard-round-robin=1" -mlir-print-ir-after=pa-shard-kv -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPE
// RUN: not pa-opt %s --pa-lower-to-cpu="shard-devices=-1" 2>&1 | FileCheck %s --check-prefix=BADPIPE

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

// Context parallelism (docs/ContextParallel.md): the decode becomes one
// decode per device over that device's page table (pa.shard_pages,
// contiguous ranges by default), tagged pa.device, every option of the
// decode kept, and pa.merge of the three (o, lse) states into the decode's
// outs.
// CHECK-LABEL: func @decode
// CHECK-SAME: %[[Q:[^:]*]]: tensor<?x32x128xf16>, %[[KV:[^:]*]]: tensor<?x2x16x8x128xf16>, %[[IP:[^:]*]]: tensor<?xi32>, %[[IX:[^:]*]]: tensor<?xi32>, %[[LP:[^:]*]]: tensor<?xi32>, %[[O:[^:]*]]: tensor<?x32x128xf16>, %[[L:[^:]*]]: tensor<?x32xf32>
// CHECK: %[[T0:.*]]:3 = pa.shard_pages pages(%[[IP]], %[[IX]], %[[LP]] : {{.*}}) outs({{.*}}) {device = 0 : i64, devices = 3 : i64, page_size = 16 : i64}
// CHECK: %[[D0:.*]]:2 = pa.decode q(%[[Q]] : {{.*}}) kv(%[[KV]] : {{.*}}) pages(%[[T0]]#0, %[[T0]]#1, %[[T0]]#2 : {{.*}}) outs({{.*}}) {cache = {{.*}}, logits_soft_cap = 3.000000e+01 : f32, lse_base2, pa.device = 0 : i64, sm_scale = 1.250000e-01 : f32}
// CHECK: %[[T1:.*]]:3 = pa.shard_pages {{.*}} {device = 1 : i64, devices = 3 : i64, page_size = 16 : i64}
// CHECK: %[[D1:.*]]:2 = pa.decode {{.*}} pages(%[[T1]]#0, %[[T1]]#1, %[[T1]]#2 : {{.*}}) {{.*}}pa.device = 1 : i64
// CHECK: %[[T2:.*]]:3 = pa.shard_pages {{.*}} {device = 2 : i64, devices = 3 : i64, page_size = 16 : i64}
// CHECK: %[[D2:.*]]:2 = pa.decode {{.*}}pa.device = 2 : i64
// CHECK: %[[M:.*]]:2 = pa.merge states(%[[D0]]#0, %[[D0]]#1, %[[D1]]#0, %[[D1]]#1, %[[D2]]#0, %[[D2]]#1 : {{.*}}) outs(%[[O]], %[[L]] : {{.*}}) {lse_base2}
// CHECK: return %[[M]]#0, %[[M]]#1
// RR-LABEL: func @decode
// RR: pa.shard_pages {{.*}} {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64, round_robin}
// RR: pa.shard_pages {{.*}} {device = 1 : i64, devices = 2 : i64, page_size = 16 : i64, round_robin}
// RR-NOT: pa.shard_pages
// The whole CPU pipeline lowers the sharded program (shard_pages to loops).
// CPU-LABEL: llvm.func @decode
// CPU-NOT: pa.
// BAD: pa-shard-kv: devices must be >= 1, got 0
// The pipeline option runs the pass (before split-KV and bufferization).
// PIPE: IR Dump After PAShardKV (pa-shard-kv)
// PIPE: pa.shard_pages {{.*}} {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64, round_robin}
// PIPE: pa.shard_pages {{.*}} {device = 1 : i64, devices = 2 : i64, page_size = 16 : i64, round_robin}
// PIPE: pa.merge
// BADPIPE: pa-lower-to-cpu: shard-devices must be >= 0 (0: no sharding)
func.func @decode(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = pa.decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache, sm_scale = 0.125 : f32, logits_soft_cap = 30.0 : f32, lse_base2}
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

