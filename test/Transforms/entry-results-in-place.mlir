// RUN: pa-opt %s -pa-entry-results-in-place -split-input-file | FileCheck %s

// An entry point (public, no caller in the module) returns its outs in place:
// the clones the ownership-based deallocation made of them go, through a
// memref.cast too.
// CHECK-LABEL: func.func @entry(
// CHECK-SAME: %[[A:[^:]+]]: memref<?xf32>, %[[B:[^:]+]]: memref<4xf32>)
// CHECK-NOT: bufferization.clone
// CHECK: %[[C:.*]] = memref.cast %[[B]] : memref<4xf32> to memref<?xf32>
// CHECK-NOT: bufferization.clone
// CHECK: return %[[A]], %[[C]]
func.func @entry(%a: memref<?xf32>, %b: memref<4xf32>) -> (memref<?xf32>, memref<?xf32>) {
  %0 = bufferization.clone %a : memref<?xf32> to memref<?xf32>
  %c = memref.cast %b : memref<4xf32> to memref<?xf32>
  %1 = bufferization.clone %c : memref<?xf32> to memref<?xf32>
  return %0, %1 : memref<?xf32>, memref<?xf32>
}

// -----

// A function called in the module keeps upstream's convention (its caller
// frees the clone), and so does a private one; a clone of a buffer that is
// not an argument, or one with other users, is kept too.
// CHECK-LABEL: func.func @callee(
// CHECK: %[[X:.*]] = bufferization.clone
// CHECK: return %[[X]]
func.func @callee(%a: memref<?xf32>) -> memref<?xf32> {
  %0 = bufferization.clone %a : memref<?xf32> to memref<?xf32>
  return %0 : memref<?xf32>
}
// CHECK-LABEL: func.func @caller(
// CHECK: call @callee
func.func @caller(%a: memref<?xf32>) {
  %0 = call @callee(%a) : (memref<?xf32>) -> memref<?xf32>
  memref.dealloc %0 : memref<?xf32>
  return
}
// CHECK-LABEL: func.func private @hidden(
// CHECK: %[[Y:.*]] = bufferization.clone
// CHECK: return %[[Y]]
func.func private @hidden(%a: memref<?xf32>) -> memref<?xf32> {
  %0 = bufferization.clone %a : memref<?xf32> to memref<?xf32>
  return %0 : memref<?xf32>
}
// CHECK-LABEL: func.func @not_an_argument(
// CHECK: %[[Z:.*]] = bufferization.clone
// CHECK: return %[[Z]]
func.func @not_an_argument(%n: index) -> memref<?xf32> {
  %m = memref.alloc(%n) : memref<?xf32>
  %0 = bufferization.clone %m : memref<?xf32> to memref<?xf32>
  memref.dealloc %m : memref<?xf32>
  return %0 : memref<?xf32>
}
// CHECK-LABEL: func.func @other_users(
// CHECK: %[[W:.*]] = bufferization.clone
// CHECK: memref.store {{.*}}, %[[W]]
// CHECK: return %[[W]]
func.func @other_users(%a: memref<?xf32>, %f: f32) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %0 = bufferization.clone %a : memref<?xf32> to memref<?xf32>
  memref.store %f, %0[%c0] : memref<?xf32>
  return %0 : memref<?xf32>
}
