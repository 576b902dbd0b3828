// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.matmul): a's columns (4) must equal b's rows (3)
func.func @f(%a: tensor<2x4xf32>, %b: tensor<3x2xf32>) -> tensor<2x2xf32> {
  %0 = "nn.matmul"(%a, %b) : (tensor<2x4xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// CHECK: (nn.matmul): a and b must have rank >= 2, got [4] and [4, 2]
func.func @f(%a: tensor<4xf32>, %b: tensor<4x2xf32>) -> tensor<2xf32> {
  %0 = "nn.matmul"(%a, %b) : (tensor<4xf32>, tensor<4x2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: (nn.gemm): c of shape [4] is not broadcastable to [2, 3]
func.func @f(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>, %c: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = "nn.gemm"(%a, %b, %c) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK: (nn.gemm): a data type must be one of ['float32', 'float16'], got int32
func.func @f(%a: tensor<2x4xi32>, %b: tensor<4x3xi32>) -> tensor<2x3xi32> {
  %0 = "nn.gemm"(%a, %b) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x4xi32>, tensor<4x3xi32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}
