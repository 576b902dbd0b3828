// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa --cpu-fuse-int8-padding | FileCheck %s

// cpu-fuse-int8-padding: when every padding of a module is an int8 convolution's, the barriers in
// front of those convolutions go (IREE then fuses each pad into its convolution, by a flag the
// pass asks for); any other padding keeps them.

// Only padded int8 convolutions: the barrier is removed.
// CHECK: // cpu-fuse-int8-padding: fuse-int8-padding=True
// CHECK-LABEL: func.func @only_int8
// CHECK-NOT: util.optimization_barrier
// CHECK: tosa.conv2d {{.*}} pad([1, 1, 1, 1])
func.func @only_int8(%x: tensor<1x5x5x2xui8>, %w: tensor<3x3x3x2xui8>) -> tensor<1x5x5x3xui8> {
  %0 = "nn.quantized_conv2d"(%x, %w) {input_zero_point = 120 : i64, filter_zero_point = 3 : i64, multiplier = 0.25 : f64, output_zero_point = 10 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x5x5x2xui8>, tensor<3x3x3x2xui8>) -> tensor<1x5x5x3xui8>
  return %0 : tensor<1x5x5x3xui8>
}

// -----

// A padded int8 average pooling pads its int32 sums: the barrier stays.
// CHECK-LABEL: func.func @with_pool
// CHECK: util.optimization_barrier {estuary.int8_pad_barrier}
// CHECK: tosa.conv2d
// CHECK: tosa.pad
func.func @with_pool(%x: tensor<1x5x5x2xui8>, %w: tensor<3x3x3x2xui8>) -> tensor<1x5x5x3xui8> {
  %0 = "nn.quantized_conv2d"(%x, %w) {input_zero_point = 120 : i64, filter_zero_point = 3 : i64, multiplier = 0.25 : f64, output_zero_point = 10 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x5x5x2xui8>, tensor<3x3x3x2xui8>) -> tensor<1x5x5x3xui8>
  %1 = "nn.quantized_average_pool2d"(%0) {window_dimensions = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x5x5x3xui8>) -> tensor<1x5x5x3xui8>
  return %1 : tensor<1x5x5x3xui8>
}

// -----

// A padded float convolution beside it: the barrier stays.
// CHECK-LABEL: func.func @with_float
// CHECK: util.optimization_barrier {estuary.int8_pad_barrier}
func.func @with_float(%x: tensor<1x5x5x2xui8>, %w: tensor<3x3x3x2xui8>, %f: tensor<1x8x8x2xf32>, %fw: tensor<4x2x3x3xf32>) -> (tensor<1x5x5x3xui8>, tensor<1x4x4x4xf32>) {
  %0 = "nn.quantized_conv2d"(%x, %w) {input_zero_point = 120 : i64, filter_zero_point = 3 : i64, multiplier = 0.25 : f64, output_zero_point = 10 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x5x5x2xui8>, tensor<3x3x3x2xui8>) -> tensor<1x5x5x3xui8>
  %1 = "nn.conv2d"(%f, %fw) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x8x8x2xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0, %1 : tensor<1x5x5x3xui8>, tensor<1x4x4x4xf32>
}
