// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.batch_normalization): mean must have shape [3], got [4]
func.func @f(%x: tensor<1x3x2x2xf32>, %m: tensor<4xf32>, %v: tensor<3xf32>) -> tensor<1x3x2x2xf32> {
  %0 = "nn.batch_normalization"(%x, %m, %v) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<1x3x2x2xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  return %0 : tensor<1x3x2x2xf32>
}

// -----

// CHECK: (nn.instance_normalization): input must be of rank 4, got shape [3, 2, 2]
func.func @f(%x: tensor<3x2x2xf32>) -> tensor<3x2x2xf32> {
  %0 = "nn.instance_normalization"(%x) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<3x2x2xf32>) -> tensor<3x2x2xf32>
  return %0 : tensor<3x2x2xf32>
}

// -----

// CHECK: (nn.layer_normalization): scale must have shape [4], got [3]
func.func @f(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>) -> tensor<2x3x4xf32> {
  %0 = "nn.layer_normalization"(%x, %s) {axes = array<i64: 2>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}
