// RUN: pa-opt %s --split-input-file --pa-expand-fp8 --verify-diagnostics | FileCheck %s --enable-var-scope

// pa-expand-fp8 turns fp8 conversions into integer arithmetic (their values
// are checked exhaustively against APFloat by the CPU differential tests,
// FP8Test.cpp).

// CHECK-LABEL: func @extf_e4m3fn
// CHECK-SAME: (%[[X:.*]]: f8E4M3FN)
// CHECK: %[[B:.*]] = arith.bitcast %[[X]] : f8E4M3FN to i8
// CHECK: arith.extui %[[B]] : i8 to i32
// CHECK: arith.uitofp
// CHECK: %[[F:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK-NOT: arith.extf
// CHECK: return %[[F]] : f32
func.func @extf_e4m3fn(%x: f8E4M3FN) -> f32 {
  %y = arith.extf %x : f8E4M3FN to f32
  return %y : f32
}

// CHECK-LABEL: func @extf_e5m2_to_f16
// CHECK: arith.bitcast %{{.*}} : f8E5M2 to i8
// CHECK: %[[F:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: %[[H:.*]] = arith.truncf %[[F]] : f32 to f16
// CHECK: return %[[H]] : f16
func.func @extf_e5m2_to_f16(%x: f8E5M2) -> f16 {
  %y = arith.extf %x : f8E5M2 to f16
  return %y : f16
}

// CHECK-LABEL: func @truncf_f32_e4m3fn
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK: %[[U:.*]] = arith.bitcast %[[X]] : f32 to i32
// CHECK: arith.addf
// CHECK: %[[B:.*]] = arith.trunci %{{.*}} : i32 to i8
// CHECK: %[[R:.*]] = arith.bitcast %[[B]] : i8 to f8E4M3FN
// CHECK-NOT: arith.truncf
// CHECK: return %[[R]] : f8E4M3FN
func.func @truncf_f32_e4m3fn(%x: f32) -> f8E4M3FN {
  %y = arith.truncf %x : f32 to f8E4M3FN
  return %y : f8E4M3FN
}

// CHECK-LABEL: func @truncf_bf16_e5m2
// CHECK: %[[W:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.bitcast %[[W]] : f32 to i32
// CHECK: arith.bitcast %{{.*}} : i8 to f8E5M2
func.func @truncf_bf16_e5m2(%x: bf16) -> f8E5M2 {
  %y = arith.truncf %x : bf16 to f8E5M2
  return %y : f8E5M2
}

// Other types and conversions are left alone.
// CHECK-LABEL: func @untouched
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.extf %{{.*}} : f8E8M0FNU to f32
func.func @untouched(%x: f32, %e: f8E8M0FNU) -> (f16, f32) {
  %y = arith.truncf %x : f32 to f16
  %z = arith.extf %e : f8E8M0FNU to f32
  return %y, %z : f16, f32
}

// -----

func.func @vector(%x: vector<4xf32>) -> vector<4xf8E4M3FN> {
  // expected-error @+1 {{pa-expand-fp8 expands scalar conversions between f8E4M3FN / f8E5M2 and f16, bf16 or f32 that round to nearest even only}}
  %y = arith.truncf %x : vector<4xf32> to vector<4xf8E4M3FN>
  return %y : vector<4xf8E4M3FN>
}

// -----

func.func @from_f64(%x: f64) -> f8E5M2 {
  // expected-error @+1 {{pa-expand-fp8 expands scalar conversions}}
  %y = arith.truncf %x : f64 to f8E5M2
  return %y : f8E5M2
}

// -----

func.func @rounding_mode(%x: f32) -> f8E5M2 {
  // expected-error @+1 {{pa-expand-fp8 expands scalar conversions}}
  %y = arith.truncf %x to_nearest_away : f32 to f8E5M2
  return %y : f8E5M2
}
