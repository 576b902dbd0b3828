// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// Max pooling pads with -inf and reduces with a dilated linalg pooling op.
// CHECK-LABEL: func.func @max_pool
// CHECK: tosa.transpose %arg0 perms([0, 2, 3, 1])
// CHECK: tosa.pad
// CHECK: linalg.pooling_nhwc_max {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
func.func @max_pool(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x7x7xf32> {
  %0 = "nn.max_pool2d"(%x) {window_dimensions = array<i64: 2, 2>, dilations = array<i64: 2, 2>, padding = array<i64: 1, 0, 1, 0>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x7x7xf32>
  return %0 : tensor<1x2x7x7xf32>
}

// -----

// Average pooling divides by the number of valid (non-padding) elements of each window.
// CHECK-LABEL: func.func @avg_pool
// CHECK: linalg.pooling_nhwc_sum
// CHECK: tosa.mul
func.func @avg_pool(%x: tensor<1x5x5x2xf32>) -> tensor<1x5x5x2xf32> {
  %0 = "nn.average_pool2d"(%x) {window_dimensions = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, layout = "nhwc"} : (tensor<1x5x5x2xf32>) -> tensor<1x5x5x2xf32>
  return %0 : tensor<1x5x5x2xf32>
}

// -----

// CHECK-LABEL: func.func @l2_pool
// CHECK: tosa.mul
// CHECK: linalg.pooling_nhwc_sum
// CHECK: math.sqrt
func.func @l2_pool(%x: tensor<1x4x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %0 = "nn.l2_pool2d"(%x) {layout = "nhwc"} : (tensor<1x4x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %0 : tensor<1x1x1x2xf32>
}

// -----

// CHECK-LABEL: func.func @max_pool_u8
// CHECK: linalg.pooling_nhwc_max_unsigned
func.func @max_pool_u8(%x: tensor<1x4x4x1xui8>) -> tensor<1x2x2x1xui8> {
  %0 = "nn.max_pool2d"(%x) {window_dimensions = array<i64: 2, 2>, strides = array<i64: 2, 2>, layout = "nhwc"} : (tensor<1x4x4x1xui8>) -> tensor<1x2x2x1xui8>
  return %0 : tensor<1x2x2x1xui8>
}

// -----

// Linear resampling gathers the two neighbours (compile-time tables) and blends them.
// CHECK-LABEL: func.func @resample_linear
// CHECK: tensor.extract %arg0
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @resample_linear(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
  %0 = "nn.resample2d"(%x) {mode = "linear", scales = array<f64: 2.0, 2.0>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}
