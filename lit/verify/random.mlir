// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.random_uniform): low 2.0 must not exceed high 1.0
func.func @f() -> tensor<2xf32> {
  %0 = "nn.random_uniform"() {shape = array<i64: 2>, low = 2.0 : f64, high = 1.0 : f64} : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: (nn.random_normal): stddev -1.0 must be non-negative
func.func @f() -> tensor<2xf32> {
  %0 = "nn.random_normal"() {shape = array<i64: 2>, stddev = -1.0 : f64} : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: (nn.random_normal): shape [2, 0] must have positive dimensions
func.func @f() -> tensor<2x0xf32> {
  %0 = "nn.random_normal"() {shape = array<i64: 2, 0>} : () -> tensor<2x0xf32>
  return %0 : tensor<2x0xf32>
}

// -----

// CHECK: (nn.random_uniform): attribute 'data_type' must be one of ['float32', 'float16'], got 'int32'
func.func @f() -> tensor<2xi32> {
  %0 = "nn.random_uniform"() {shape = array<i64: 2>, data_type = "int32"} : () -> tensor<2xi32>
  return %0 : tensor<2xi32>
}
