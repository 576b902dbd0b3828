// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.average_pool2d): input data type must be one of ['float32', 'float16'], got int32
func.func @f(%x: tensor<1x1x4x4xi32>) -> tensor<1x1x1x1xi32> {
  %0 = "nn.average_pool2d"(%x) : (tensor<1x1x4x4xi32>) -> tensor<1x1x1x1xi32>
  return %0 : tensor<1x1x1x1xi32>
}

// -----

// CHECK: (nn.max_pool2d): input must be of rank 4, got shape [1, 4, 4]
func.func @f(%x: tensor<1x4x4xf32>) -> tensor<1x1x1xf32> {
  %0 = "nn.max_pool2d"(%x) : (tensor<1x4x4xf32>) -> tensor<1x1x1xf32>
  return %0 : tensor<1x1x1xf32>
}

// -----

// CHECK: (nn.l2_pool2d): window_dimensions must have 2 entries, got [1, 1, 1, 1]
func.func @f(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %0 = "nn.l2_pool2d"(%x) {window_dimensions = array<i64: 1, 1, 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// CHECK: (nn.max_pool2d): window_dimensions must be positive, got [0, 2]
func.func @f(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x3xf32> {
  %0 = "nn.max_pool2d"(%x) {window_dimensions = array<i64: 0, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x3xf32>
  return %0 : tensor<1x1x4x3xf32>
}

// -----

// CHECK: (nn.max_pool2d): padding must have 4 entries, got [2, 2]
func.func @f(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x1x1xf32> {
  %0 = "nn.max_pool2d"(%x) {padding = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x1x1xf32>
  return %0 : tensor<1x1x1x1xf32>
}

// -----

// CHECK: (nn.max_pool2d): strides must be positive, got [0, 2]
func.func @f(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x1x1xf32> {
  %0 = "nn.max_pool2d"(%x) {strides = array<i64: 0, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x1x1xf32>
  return %0 : tensor<1x1x1x1xf32>
}

// -----

// CHECK: (nn.average_pool2d): dilations must have 2 entries, got [1, 1, 2]
func.func @f(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x1x1xf32> {
  %0 = "nn.average_pool2d"(%x) {dilations = array<i64: 1, 1, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x1x1xf32>
  return %0 : tensor<1x1x1x1xf32>
}

// -----

// CHECK: (nn.max_pool2d): output_sizes must be positive, got [0, 4]
func.func @f(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32> {
  %0 = "nn.max_pool2d"(%x) {window_dimensions = array<i64: 2, 2>, strides = array<i64: 2, 2>, output_sizes = array<i64: 0, 4>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// outputSizes must be both-floor or both-ceil sizes (here floor [4, 3], ceil [5, 4]).
// CHECK: (nn.max_pool2d): output_sizes [4, 4] must be the floor [4, 3] or the ceil [5, 4] output sizes
func.func @f(%x: tensor<1x1x9x7xf32>) -> tensor<1x1x4x4xf32> {
  %0 = "nn.max_pool2d"(%x) {window_dimensions = array<i64: 2, 2>, strides = array<i64: 2, 2>, output_sizes = array<i64: 4, 4>} : (tensor<1x1x9x7xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// (5 - 6) / 1 + 1 = 0 output rows.
// CHECK: (nn.max_pool2d): output sizes [0, 3] are not valid dimensions: window [6, 3] with dilations [1, 1] does not fit the 5x5 input with padding [0, 0, 0, 0]
func.func @f(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x1x3xf32> {
  %0 = "nn.max_pool2d"(%x) {window_dimensions = array<i64: 6, 3>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x1x3xf32>
  return %0 : tensor<1x2x1x3xf32>
}

// -----

// CHECK: (nn.l2_pool2d): attribute 'rounding_type' must be one of ['floor', 'ceil'], got 'round'
func.func @f(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x1x1xf32> {
  %0 = "nn.l2_pool2d"(%x) {rounding_type = "round"} : (tensor<1x1x4x4xf32>) -> tensor<1x1x1x1xf32>
  return %0 : tensor<1x1x1x1xf32>
}

// -----

// CHECK: (nn.resample2d): input data type must be one of ['float32', 'float16'], got int32
func.func @f(%x: tensor<1x1x2x2xi32>) -> tensor<1x1x2x2xi32> {
  %0 = "nn.resample2d"(%x) : (tensor<1x1x2x2xi32>) -> tensor<1x1x2x2xi32>
  return %0 : tensor<1x1x2x2xi32>
}

// -----

// CHECK: (nn.resample2d): scales must be 2 positive finite values, got [0.0, 1.0]
func.func @f(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %0 = "nn.resample2d"(%x) {scales = array<f64: 0.0, 1.0>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// CHECK: (nn.resample2d): sizes must have 2 entries, got [4]
func.func @f(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x4x2xf32> {
  %0 = "nn.resample2d"(%x) {sizes = array<i64: 4>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x2xf32>
  return %0 : tensor<1x1x4x2xf32>
}

// -----

// CHECK: (nn.resample2d): axes [2, 2] contain duplicates
func.func @f(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %0 = "nn.resample2d"(%x) {axes = array<i64: 2, 2>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// CHECK: (nn.resample2d): axes [3, 4] out of range for rank 4
func.func @f(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %0 = "nn.resample2d"(%x) {axes = array<i64: 3, 4>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// floor(2 * 0.25) = 0 rows.
// CHECK: (nn.resample2d): output sizes [0, 2] along axes [2, 3] are not valid dimensions
func.func @f(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x1x2xf32> {
  %0 = "nn.resample2d"(%x) {scales = array<f64: 0.25, 1.0>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x1x2xf32>
  return %0 : tensor<1x1x1x2xf32>
}
