// RUN: pa-opt %s --pa-warp-shuffle-reduce -cse | FileCheck %s

// Upstream's subgroup-reduce lowerings, as the pa pipeline runs them: every
// lane of a cluster ends with the cluster's result after log2(N) xor
// shuffles (width 32) and the combining op.

// CHECK-LABEL: gpu.func @reduce
// CHECK-SAME: (%[[X:.*]]: f32, %[[Y:.*]]: f32)
// A 16-lane add: butterflies 1, 2, 4, 8.
// CHECK: %[[S1:.*]], %{{.*}} = gpu.shuffle xor %[[X]], %c1_i32, %c32_i32 : f32
// CHECK: %[[A1:.*]] = arith.addf %[[X]], %[[S1]] : f32
// CHECK: %[[S2:.*]], %{{.*}} = gpu.shuffle xor %[[A1]], %c2_i32, %c32_i32 : f32
// CHECK: %[[A2:.*]] = arith.addf %[[A1]], %[[S2]] : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32, %c32_i32 : f32
// A whole-warp max: 1, 2, 4, 8, 16.
// CHECK: gpu.shuffle xor %[[Y]], %c1_i32, %c32_i32 : f32
// CHECK: arith.maxnumf
// CHECK-COUNT-4: gpu.shuffle xor
// A strided cluster (4 lanes, stride 2): offsets 2 and 4.
// CHECK: gpu.shuffle xor %[[X]], %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32, %c32_i32 : f32
// CHECK-NOT: gpu.subgroup_reduce
gpu.module @m {
  gpu.func @reduce(%x: f32, %y: f32) -> (f32, f32, f32) {
    %a = gpu.subgroup_reduce add %x cluster(size = 16) : (f32) -> f32
    %b = gpu.subgroup_reduce maxnumf %y : (f32) -> f32
    %c = gpu.subgroup_reduce add %x cluster(size = 4, stride = 2) : (f32) -> f32
    gpu.return %a, %b, %c : f32, f32, f32
  }
}
