// RUN: pa-opt %s --pa-assert-to-stderr -split-input-file -verify-diagnostics | FileCheck %s --enable-var-scope

// A failed cf.assert writes its message to fd 2 and aborts.
// CHECK-DAG: llvm.func @write(i32, !llvm.ptr, i64) -> i64
// CHECK-DAG: llvm.func @abort()
// CHECK-DAG: llvm.mlir.global internal constant @pa_assert_msg_0("pa: assertion failed: kv_indptr[0] must be 0\0A")
// CHECK-LABEL: func.func @check
// CHECK-SAME: (%[[OK:.*]]: i1)
// CHECK: cf.cond_br %[[OK]], ^[[CONT:.*]], ^[[FAIL:.*]]
// CHECK: ^[[CONT]]:
// CHECK-NEXT: return
// CHECK: ^[[FAIL]]:
// CHECK: %[[MSG:.*]] = llvm.mlir.addressof @pa_assert_msg_0
// CHECK: %[[FD:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: %[[LEN:.*]] = llvm.mlir.constant(45 : i64) : i64
// CHECK: llvm.call @write(%[[FD]], %{{.*}}, %[[LEN]])
// CHECK: llvm.call @abort()
// CHECK: llvm.unreachable
// CHECK-NOT: cf.assert
func.func @check(%ok: i1) {
  cf.assert %ok, "kv_indptr[0] must be 0"
  return
}

// -----

// Asserts inside structured ops: the CFG is needed.
func.func @structured(%ok: i1, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    // expected-error @+1 {{pa-assert-to-stderr needs the assert in a CFG region; run convert-scf-to-cf first}}
    cf.assert %ok, "in a loop"
  }
  return
}

// -----

// A function of the module named like the libc function it calls.
// expected-error @+1 {{pa-assert-to-stderr calls libc's 'write' to report failed assertions; rename this symbol}}
func.func @write(%ok: i1) {
  cf.assert %ok, "x"
  return
}

// -----

// Message globals get fresh names, and an assert in a nested module reports
// through declarations in that module.
// CHECK-LABEL: module @outer
// CHECK: llvm.mlir.global internal constant @pa_assert_msg_1("pa: assertion failed: outer\0A")
// CHECK: llvm.mlir.global external @pa_assert_msg_0()
// CHECK: module @inner
// CHECK-DAG: llvm.func @write(i32, !llvm.ptr, i64) -> i64
// CHECK-DAG: llvm.func @abort()
// CHECK-DAG: llvm.mlir.global internal constant @pa_assert_msg_0("pa: assertion failed: inner\0A")
// CHECK: llvm.call @write
module @outer {
  llvm.mlir.global external @pa_assert_msg_0() : i32
  func.func @f(%ok: i1) {
    cf.assert %ok, "outer"
    return
  }
  module @inner {
    func.func @g(%ok: i1) {
      cf.assert %ok, "inner"
      return
    }
  }
}
