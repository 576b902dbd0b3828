// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.dequantize): input data type must be one of ['uint8'], got int32
func.func @f(%x: tensor<3xi32>) -> tensor<3xf32> {
  %0 = "nn.dequantize"(%x) {scale = 0.5 : f64} : (tensor<3xi32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK: (nn.dequantize): scale must be positive, got 0.0
func.func @f(%x: tensor<3xui8>) -> tensor<3xf32> {
  %0 = "nn.dequantize"(%x) {scale = 0.0 : f64} : (tensor<3xui8>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK: (nn.requantize): output_zero_point must be in [0, 255], got 300
func.func @f(%x: tensor<3xi32>) -> tensor<3xui8> {
  %0 = "nn.requantize"(%x) {multiplier = 0.5 : f64, output_zero_point = 300 : i64} : (tensor<3xi32>) -> tensor<3xui8>
  return %0 : tensor<3xui8>
}

// -----

// CHECK: (nn.requantize): multiplier must be positive and finite, got -1.0
func.func @f(%x: tensor<3xi32>) -> tensor<3xui8> {
  %0 = "nn.requantize"(%x) {multiplier = -1.0 : f64} : (tensor<3xi32>) -> tensor<3xui8>
  return %0 : tensor<3xui8>
}

// -----

// CHECK: (nn.table_lookup): table must have shape [256], got [16]
func.func @f(%x: tensor<3xui8>, %t: tensor<16xui8>) -> tensor<3xui8> {
  %0 = "nn.table_lookup"(%x, %t) : (tensor<3xui8>, tensor<16xui8>) -> tensor<3xui8>
  return %0 : tensor<3xui8>
}

// -----

// CHECK: (nn.quantized_conv2d): filter input channels 3 must equal input channels 2
func.func @f(%x: tensor<1x5x5x2xui8>, %w: tensor<3x3x3x3xui8>) -> tensor<1x3x3x3xui8> {
  %0 = "nn.quantized_conv2d"(%x, %w) {multiplier = 0.25 : f64, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x5x5x2xui8>, tensor<3x3x3x3xui8>) -> tensor<1x3x3x3xui8>
  return %0 : tensor<1x3x3x3xui8>
}

// -----

// CHECK: (nn.quantized_conv2d): bias data type must be one of ['int32'], got float32
func.func @f(%x: tensor<1x5x5x2xui8>, %w: tensor<3x3x3x2xui8>, %b: tensor<3xf32>) -> tensor<1x3x3x3xui8> {
  %0 = "nn.quantized_conv2d"(%x, %w, %b) {multiplier = 0.25 : f64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x5x5x2xui8>, tensor<3x3x3x2xui8>, tensor<3xf32>) -> tensor<1x3x3x3xui8>
  return %0 : tensor<1x3x3x3xui8>
}

// -----

// CHECK: (nn.quantized_conv2d): depthwise filter must be [1, KH, KW, C*multiplier] for C=2, got [1, 3, 3, 3]
func.func @f(%x: tensor<1x5x5x2xui8>, %w: tensor<1x3x3x3xui8>) -> tensor<1x3x3x3xui8> {
  %0 = "nn.quantized_conv2d"(%x, %w) {multiplier = 0.25 : f64, filter_layout = "ihwo", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x5x5x2xui8>, tensor<1x3x3x3xui8>) -> tensor<1x3x3x3xui8>
  return %0 : tensor<1x3x3x3xui8>
}

// -----

// CHECK: (nn.quantized_matmul): a is [2, 3] and b is [4, 5]: inner sizes differ
func.func @f(%a: tensor<2x3xui8>, %b: tensor<4x5xui8>) -> tensor<2x4xui8> {
  %0 = "nn.quantized_matmul"(%a, %b) {multiplier = 0.25 : f64, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3xui8>, tensor<4x5xui8>) -> tensor<2x4xui8>
  return %0 : tensor<2x4xui8>
}

// -----

// CHECK: (nn.quantized_average_pool2d): padding [3, 0, 0, 0] must be smaller than the window [3, 3]
func.func @f(%x: tensor<1x4x4x1xui8>) -> tensor<1x3x2x1xui8> {
  %0 = "nn.quantized_average_pool2d"(%x) {window_dimensions = array<i64: 3, 3>, padding = array<i64: 3, 0, 0, 0>} : (tensor<1x4x4x1xui8>) -> tensor<1x3x2x1xui8>
  return %0 : tensor<1x3x2x1xui8>
}

// -----

// CHECK: (nn.quantized_softmax): input data type must be one of ['uint8'], got float32
func.func @f(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = "nn.quantized_softmax"(%x) {scale = 0.1 : f64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}
