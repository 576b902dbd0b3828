// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.average_pool2d): input data type must be one of ['float32', 'float16'], got int32
func.func @f(%x: tensor<1x1x4x4xi32>) -> tensor<1x1x1x1xi32> {
  %0 = "nn.average_pool2d"(%x) : (tensor<1x1x4x4xi32>) -> tensor<1x1x1x1xi32>
  return %0 : tensor<1x1x1x1xi32>
}

// -----

// CHECK: (nn.max_pool2d): window 5 (dilation 1) is larger than the padded input 4
func.func @f(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x1x1xf32> {
  %0 = "nn.max_pool2d"(%x) {window_dimensions = array<i64: 5, 5>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x1x1xf32>
  return %0 : tensor<1x1x1x1xf32>
}

// -----

// CHECK: (nn.max_pool2d): output_sizes[0] = 5 must be the floor (4) or ceil (4) size
func.func @f(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x5x4xf32> {
  %0 = "nn.max_pool2d"(%x) {window_dimensions = array<i64: 2, 2>, strides = array<i64: 2, 2>, output_sizes = array<i64: 5, 4>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x5x4xf32>
  return %0 : tensor<1x1x5x4xf32>
}

// -----

// CHECK: (nn.l2_pool2d): attribute 'rounding_type' must be one of ['floor', 'ceil'], got 'round'
func.func @f(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x1x1xf32> {
  %0 = "nn.l2_pool2d"(%x) {rounding_type = "round"} : (tensor<1x1x4x4xf32>) -> tensor<1x1x1x1xf32>
  return %0 : tensor<1x1x1x1xf32>
}

// -----

// CHECK: (nn.resample2d): axes [2, 2] contain duplicates
func.func @f(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %0 = "nn.resample2d"(%x) {axes = array<i64: 2, 2>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// CHECK: (nn.resample2d): scales must be 2 positive values, got [0.0, 1.0]
func.func @f(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %0 = "nn.resample2d"(%x) {scales = array<f64: 0.0, 1.0>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}
