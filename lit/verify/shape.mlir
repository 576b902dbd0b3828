// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.reshape): new_shape [4] has 4 elements, the input has 6
func.func @f(%a: tensor<2x3xf32>) -> tensor<4xf32> {
  %0 = "nn.reshape"(%a) {new_shape = array<i64: 4>} : (tensor<2x3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: (nn.transpose): permutation [0, 0] contain duplicates
func.func @f(%a: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %0 = "nn.transpose"(%a) {permutation = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// CHECK: (nn.concat): input shapes [[2, 3], [3, 3]] differ outside axis 1
func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  %0 = "nn.concat"(%a, %b) {axis = 1 : i64, operandSegmentSizes = array<i32: 2>} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// CHECK: (nn.slice): window 2..5 of dimension 0 exceeds its size 4
func.func @f(%a: tensor<4xf32>) -> tensor<3xf32> {
  %0 = "nn.slice"(%a) {starts = array<i64: 2>, sizes = array<i64: 3>} : (tensor<4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK: (nn.split): splits [1, 2] sum to 3, dimension 0 has size 4
func.func @f(%a: tensor<4xf32>) -> (tensor<1xf32>, tensor<2xf32>) {
  %0:2 = "nn.split"(%a) {splits = array<i64: 1, 2>} : (tensor<4xf32>) -> (tensor<1xf32>, tensor<2xf32>)
  return %0#0, %0#1 : tensor<1xf32>, tensor<2xf32>
}

// -----

// CHECK: (nn.pad): reflection padding (4, 0) of dimension 0 exceeds 3 for size 4
func.func @f(%a: tensor<4xf32>) -> tensor<8xf32> {
  %0 = "nn.pad"(%a) {beginning_padding = array<i64: 4>, ending_padding = array<i64: 0>, mode = "reflection"} : (tensor<4xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// CHECK: (nn.pad): attribute 'mode' must be one of ['constant', 'edge', 'reflection', 'symmetric'], got 'wrap'
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.pad"(%a) {beginning_padding = array<i64: 0>, ending_padding = array<i64: 0>, mode = "wrap"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: (nn.expand): input shape [3] is not broadcastable to [2, 4]
func.func @f(%a: tensor<3xf32>) -> tensor<2x4xf32> {
  %0 = "nn.expand"(%a) {new_shape = array<i64: 2, 4>} : (tensor<3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// CHECK: (nn.gather): indices data type must be one of ['int32', 'uint32', 'int64'], got float32
func.func @f(%a: tensor<3xf32>, %i: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "nn.gather"(%a, %i) : (tensor<3xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: (nn.triangular): input must be of rank >= 2, got shape [3]
func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "nn.triangular"(%a) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
