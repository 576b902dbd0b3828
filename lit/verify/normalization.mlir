// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.batch_normalization): mean must have shape [3], got [4]
func.func @f(%x: tensor<1x3x2x2xf32>, %m: tensor<4xf32>, %v: tensor<3xf32>) -> tensor<1x3x2x2xf32> {
  %0 = "nn.batch_normalization"(%x, %m, %v) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<1x3x2x2xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  return %0 : tensor<1x3x2x2xf32>
}

// -----

// With axis = 3 the features are the 2 of the last dimension.
// CHECK: (nn.batch_normalization): variance must have shape [2], got [3]
func.func @f(%x: tensor<1x3x2x2xf32>, %m: tensor<2xf32>, %v: tensor<3xf32>) -> tensor<1x3x2x2xf32> {
  %0 = "nn.batch_normalization"(%x, %m, %v) {axis = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<1x3x2x2xf32>, tensor<2xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  return %0 : tensor<1x3x2x2xf32>
}

// -----

// CHECK: (nn.batch_normalization): axis 4 out of range for rank 4
func.func @f(%x: tensor<1x3x2x2xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<1x3x2x2xf32> {
  %0 = "nn.batch_normalization"(%x, %m, %v) {axis = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<1x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  return %0 : tensor<1x3x2x2xf32>
}

// -----

// CHECK: (nn.batch_normalization): input and scale must have the same data type, got ['float16', 'float32']
func.func @f(%x: tensor<1x3x2x2xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>, %s: tensor<3xf16>) -> tensor<1x3x2x2xf32> {
  %0 = "nn.batch_normalization"(%x, %m, %v, %s) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (tensor<1x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf16>) -> tensor<1x3x2x2xf32>
  return %0 : tensor<1x3x2x2xf32>
}

// -----

// CHECK: (nn.batch_normalization): input data type must be one of ['float32', 'float16'], got int32
func.func @f(%x: tensor<1x3xi32>, %m: tensor<3xi32>, %v: tensor<3xi32>) -> tensor<1x3xi32> {
  %0 = "nn.batch_normalization"(%x, %m, %v) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<1x3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<1x3xi32>
  return %0 : tensor<1x3xi32>
}

// -----

// CHECK: (nn.instance_normalization): input must be of rank 4, got shape [3, 2, 2]
func.func @f(%x: tensor<3x2x2xf32>) -> tensor<3x2x2xf32> {
  %0 = "nn.instance_normalization"(%x) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<3x2x2xf32>) -> tensor<3x2x2xf32>
  return %0 : tensor<3x2x2xf32>
}

// -----

// nhwc: the channels are the last dimension (5), not the second (3).
// CHECK: (nn.instance_normalization): bias must have shape [5], got [3]
func.func @f(%x: tensor<1x3x4x5xf32>, %b: tensor<3xf32>) -> tensor<1x3x4x5xf32> {
  %0 = "nn.instance_normalization"(%x, %b) {layout = "nhwc", operandSegmentSizes = array<i32: 1, 0, 1>} : (tensor<1x3x4x5xf32>, tensor<3xf32>) -> tensor<1x3x4x5xf32>
  return %0 : tensor<1x3x4x5xf32>
}

// -----

// CHECK: (nn.instance_normalization): attribute 'layout' must be one of ['nchw', 'nhwc'], got 'ncdhw'
func.func @f(%x: tensor<1x3x4x5xf32>) -> tensor<1x3x4x5xf32> {
  %0 = "nn.instance_normalization"(%x) {layout = "ncdhw", operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<1x3x4x5xf32>) -> tensor<1x3x4x5xf32>
  return %0 : tensor<1x3x4x5xf32>
}

// -----

// CHECK: (nn.layer_normalization): scale must have shape [4], got [3]
func.func @f(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>) -> tensor<2x3x4xf32> {
  %0 = "nn.layer_normalization"(%x, %s) {axes = array<i64: 2>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Without axes the default is [1, 2]: scale needs rank 2.
// CHECK: (nn.layer_normalization): scale must have rank 2 (one dimension per axis of [1, 2]), got shape [12]
func.func @f(%x: tensor<2x3x4xf32>, %s: tensor<12xf32>) -> tensor<2x3x4xf32> {
  %0 = "nn.layer_normalization"(%x, %s) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3x4xf32>, tensor<12xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK: (nn.layer_normalization): axes [0, 3] out of range for rank 3
func.func @f(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = "nn.layer_normalization"(%x) {axes = array<i64: 0, 3>, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK: (nn.layer_normalization): axes [1, 1] contain duplicates
func.func @f(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = "nn.layer_normalization"(%x) {axes = array<i64: 1, 1>, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}
