// RUN: pa-opt %s --pa-warp-shuffle-reduce -cse | FileCheck %s

// CHECK-LABEL: gpu.func @reduce
// CHECK-SAME: (%[[X:.*]]: f32, %[[Y:.*]]: f32)
// A 16-lane add: butterflies 8, 4, 2, 1.
// CHECK: %[[S1:.*]], %{{.*}} = gpu.shuffle xor %[[X]], %c8_i32, %c32_i32 : f32
// CHECK: %[[A1:.*]] = arith.addf %[[X]], %[[S1]] : f32
// CHECK: %[[S2:.*]], %{{.*}} = gpu.shuffle xor %[[A1]], %c4_i32, %c32_i32 : f32
// CHECK: %[[A2:.*]] = arith.addf %[[A1]], %[[S2]] : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32, %c32_i32 : f32
// A whole-warp max: 16, 8, 4, 2, 1.
// CHECK: gpu.shuffle xor %[[Y]], %c16_i32, %c32_i32 : f32
// CHECK: arith.maxnumf
// CHECK-COUNT-4: gpu.shuffle xor
// Strided clusters are left alone.
// CHECK: gpu.subgroup_reduce add %{{.*}} cluster(size = 4, stride = 2)
gpu.module @m {
  gpu.func @reduce(%x: f32, %y: f32) -> (f32, f32, f32) {
    %a = gpu.subgroup_reduce add %x cluster(size = 16) : (f32) -> f32
    %b = gpu.subgroup_reduce maxnumf %y : (f32) -> f32
    %c = gpu.subgroup_reduce add %x cluster(size = 4, stride = 2) : (f32) -> f32
    gpu.return %a, %b, %c : f32, f32, f32
  }
}
