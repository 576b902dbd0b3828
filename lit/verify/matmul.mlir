// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.matmul): a's columns (4) must equal b's rows (3)
func.func @f(%a: tensor<2x4xf32>, %b: tensor<3x2xf32>) -> tensor<2x2xf32> {
  %0 = "nn.matmul"(%a, %b) : (tensor<2x4xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// WebNN has no rank-1 promotion: both operands need rank >= 2.
// CHECK: (nn.matmul): a and b must have rank >= 2, got [4] and [4, 2]
func.func @f(%a: tensor<4xf32>, %b: tensor<4x2xf32>) -> tensor<2xf32> {
  %0 = "nn.matmul"(%a, %b) : (tensor<4xf32>, tensor<4x2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: (nn.matmul): batch dimensions [2, 3] and [4] are not broadcastable
func.func @f(%a: tensor<2x3x2x4xf32>, %b: tensor<4x4x2xf32>) -> tensor<2x3x2x2xf32> {
  %0 = "nn.matmul"(%a, %b) : (tensor<2x3x2x4xf32>, tensor<4x4x2xf32>) -> tensor<2x3x2x2xf32>
  return %0 : tensor<2x3x2x2xf32>
}

// -----

// CHECK: (nn.matmul): a and b must have the same data type, got ['float16', 'float32']
func.func @f(%a: tensor<2x4xf32>, %b: tensor<4x2xf16>) -> tensor<2x2xf32> {
  %0 = "nn.matmul"(%a, %b) : (tensor<2x4xf32>, tensor<4x2xf16>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// CHECK: (nn.matmul): result types ['float32[2, 3, 2]'] do not match the inferred ['float32[2, 2]']
func.func @f(%a: tensor<2x4xf32>, %b: tensor<4x2xf32>) -> tensor<2x3x2xf32> {
  %0 = "nn.matmul"(%a, %b) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x3x2xf32>
  return %0 : tensor<2x3x2xf32>
}

// -----

// CHECK: (nn.gemm): c of shape [4] is not broadcastable to [2, 3]
func.func @f(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>, %c: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = "nn.gemm"(%a, %b, %c) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK: (nn.gemm): c of shape [1, 2, 3] is not broadcastable to [2, 3]
func.func @f(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>, %c: tensor<1x2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.gemm"(%a, %b, %c) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<1x2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK: (nn.gemm): a data type must be one of ['float32', 'float16'], got int32
func.func @f(%a: tensor<2x4xi32>, %b: tensor<4x3xi32>) -> tensor<2x3xi32> {
  %0 = "nn.gemm"(%a, %b) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x4xi32>, tensor<4x3xi32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

// CHECK: (nn.gemm): b must be of rank 2, got shape [1, 4, 3]
func.func @f(%a: tensor<2x4xf32>, %b: tensor<1x4x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.gemm"(%a, %b) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x4xf32>, tensor<1x4x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// a is [K, M] = [2, 4] when transposed, so K = 2 against b's 4.
// CHECK: (nn.gemm): inner dimensions differ: a gives 2, b gives 4 (a_transpose=True, b_transpose=False)
func.func @f(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = "nn.gemm"(%a, %b) {a_transpose = true, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK: (nn.gemm): a and c must have the same data type, got ['float16', 'float32']
func.func @f(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>, %c: tensor<3xf16>) -> tensor<2x3xf32> {
  %0 = "nn.gemm"(%a, %b, %c) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
