// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// The generator hashes each element's counter with i32 arithmetic inside a linalg.generic.
// CHECK-LABEL: func.func @uniform
// CHECK: linalg.generic
// CHECK: arith.shrui
// CHECK: arith.muli
// CHECK: arith.uitofp
func.func @uniform() -> tensor<2x3xf32> {
  %0 = "nn.random_uniform"() {shape = array<i64: 2, 3>, low = 0.0 : f64, high = 1.0 : f64, seed = 7 : i64, data_type = "float32"} : () -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @normal
// CHECK: linalg.generic
// CHECK: math.log
// CHECK: math.cos
// CHECK: arith.truncf
func.func @normal() -> tensor<4xf16> {
  %0 = "nn.random_normal"() {shape = array<i64: 4>, mean = 0.0 : f64, stddev = 1.0 : f64, seed = 7 : i64, data_type = "float16"} : () -> tensor<4xf16>
  return %0 : tensor<4xf16>
}
