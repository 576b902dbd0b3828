// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.conv2d): filter input channels 2 must equal input channels / groups = 3
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = "nn.conv2d"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// CHECK: (nn.conv2d): strides must be 2 positive values, got [0, 1]
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = "nn.conv2d"(%x, %w) {strides = array<i64: 0, 1>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// CHECK: (nn.conv2d): bias must have shape [4], got [3]
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = "nn.conv2d"(%x, %w, %b) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// CHECK: (nn.conv2d): input must be of rank 4, got shape [3, 8, 8]
func.func @f(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<4x6x6xf32> {
  %0 = "nn.conv2d"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<4x6x6xf32>
  return %0 : tensor<4x6x6xf32>
}

// -----

// CHECK: (nn.conv2d): attribute 'filter_layout' must be one of ['oihw', 'hwio', 'ohwi', 'ihwo'], got 'iohw'
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = "nn.conv2d"(%x, %w) {filter_layout = "iohw", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// CHECK: (nn.conv_transpose2d): output_padding [2, 0] must be smaller than strides [2, 2]
func.func @f(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>) -> tensor<1x4x9x7xf32> {
  %0 = "nn.conv_transpose2d"(%x, %w) {strides = array<i64: 2, 2>, output_padding = array<i64: 2, 0>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<1x4x9x7xf32>
  return %0 : tensor<1x4x9x7xf32>
}

// -----

// CHECK: (nn.conv_transpose2d): output_sizes[0] = 10 is not reachable: it must be in [7, 9)
func.func @f(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>) -> tensor<1x4x10x7xf32> {
  %0 = "nn.conv_transpose2d"(%x, %w) {strides = array<i64: 2, 2>, output_sizes = array<i64: 10, 7>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<1x4x10x7xf32>
  return %0 : tensor<1x4x10x7xf32>
}

// -----

// CHECK: (nn.conv2d): input data type must be one of
func.func @f(%x: tensor<1x3x8x8xi32>, %w: tensor<4x3x3x3xi32>) -> tensor<1x4x6x6xi32> {
  %0 = "nn.conv2d"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x8x8xi32>, tensor<4x3x3x3xi32>) -> tensor<1x4x6x6xi32>
  return %0 : tensor<1x4x6x6xi32>
}

// -----

// CHECK: (nn.conv2d): input and filter must have the same data type, got ['float16', 'float32']
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf16>) -> tensor<1x4x6x6xf32> {
  %0 = "nn.conv2d"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf16>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// CHECK: (nn.conv2d): padding must have 4 entries, got [1, 1]
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = "nn.conv2d"(%x, %w) {padding = array<i64: 1, 1>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// CHECK: (nn.conv2d): dilations must be 2 positive values, got [1]
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = "nn.conv2d"(%x, %w) {dilations = array<i64: 1>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// CHECK: (nn.conv2d): input channels 3 are not divisible by groups 2
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = "nn.conv2d"(%x, %w) {groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// CHECK: (nn.conv2d): output channels 5 are not divisible by groups 2
func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<5x2x3x3xf32>) -> tensor<1x5x6x6xf32> {
  %0 = "nn.conv2d"(%x, %w) {groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x4x8x8xf32>, tensor<5x2x3x3xf32>) -> tensor<1x5x6x6xf32>
  return %0 : tensor<1x5x6x6xf32>
}

// -----

// CHECK: (nn.conv2d): output size 0x6 is not positive (kernel larger than padded input)
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32> {
  %0 = "nn.conv2d"(%x, %w) {dilations = array<i64: 4, 1>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32>
  return %0 : tensor<1x4x1x6xf32>
}

// -----

// CHECK: (nn.conv_transpose2d): filter input channels 3 must equal input channels 2
func.func @f(%x: tensor<1x2x3x3xf32>, %w: tensor<3x4x3x3xf32>) -> tensor<1x4x5x5xf32> {
  %0 = "nn.conv_transpose2d"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x2x3x3xf32>, tensor<3x4x3x3xf32>) -> tensor<1x4x5x5xf32>
  return %0 : tensor<1x4x5x5xf32>
}

// -----

// CHECK: (nn.conv_transpose2d): output_padding must have 2 entries, got [1]
func.func @f(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>) -> tensor<1x4x5x5xf32> {
  %0 = "nn.conv_transpose2d"(%x, %w) {output_padding = array<i64: 1>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<1x4x5x5xf32>
  return %0 : tensor<1x4x5x5xf32>
}

// -----

// CHECK: (nn.conv_transpose2d): output_sizes must be 2 positive values, got [5, 5, 5]
func.func @f(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>) -> tensor<1x4x5x5xf32> {
  %0 = "nn.conv_transpose2d"(%x, %w) {output_sizes = array<i64: 5, 5, 5>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<1x4x5x5xf32>
  return %0 : tensor<1x4x5x5xf32>
}
