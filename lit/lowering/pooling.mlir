// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// Max pooling pads with -inf and reduces with a dilated linalg pooling op (NCHW goes through NHWC).
// CHECK-LABEL: func.func @max_pool
// CHECK: tosa.transpose %arg0 perms([0, 2, 3, 1])
// CHECK: tosa.const values(dense<0xFF800000> : tensor<1xf32>)
// CHECK: tosa.pad {{.*}} -> tensor<1x9x9x2xf32>
// CHECK: linalg.pooling_nhwc_max {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
// CHECK: tosa.transpose {{.*}} perms([0, 3, 1, 2])
func.func @max_pool(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x7x7xf32> {
  %0 = "nn.max_pool2d"(%x) {window_dimensions = array<i64: 2, 2>, dilations = array<i64: 2, 2>, padding = array<i64: 1, 0, 1, 0>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x7x7xf32>
  return %0 : tensor<1x2x7x7xf32>
}

// -----

// Max pooling of a relu's output pads with 0 (a memset for IREE) instead of -inf: every window
// holds an input element >= 0, so the maxima are the same.
// CHECK-LABEL: func.func @max_pool_after_relu
// CHECK: arith.maximumf
// CHECK: tosa.const values(dense<0.000000e+00> : tensor<1xf32>)
// CHECK: tosa.pad {{.*}} -> tensor<1x9x9x2xf32>
// CHECK: linalg.pooling_nhwc_max
func.func @max_pool_after_relu(%x: tensor<1x8x8x2xf32>) -> tensor<1x4x4x2xf32> {
  %r = "nn.relu"(%x) : (tensor<1x8x8x2xf32>) -> tensor<1x8x8x2xf32>
  %0 = "nn.max_pool2d"(%r) {window_dimensions = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 0, 1, 0>, layout = "nhwc"} : (tensor<1x8x8x2xf32>) -> tensor<1x4x4x2xf32>
  return %0 : tensor<1x4x4x2xf32>
}

// -----

// A window lying wholly in the padding (ceil rounding) keeps -inf even after a clamp to [0, 6].
// CHECK-LABEL: func.func @max_pool_after_clamp_empty_window
// CHECK: arith.minimumf
// CHECK: tosa.const values(dense<0xFF800000> : tensor<1xf32>)
// CHECK: linalg.pooling_nhwc_max
func.func @max_pool_after_clamp_empty_window(%x: tensor<1x4x4x1xf32>) -> tensor<1x3x3x1xf32> {
  %r = "nn.clamp"(%x) {min_value = 0.0 : f32, max_value = 6.0 : f32} : (tensor<1x4x4x1xf32>) -> tensor<1x4x4x1xf32>
  %0 = "nn.max_pool2d"(%r) {window_dimensions = array<i64: 1, 1>, strides = array<i64: 2, 2>, padding = array<i64: 0, 2, 0, 2>, layout = "nhwc"} : (tensor<1x4x4x1xf32>) -> tensor<1x3x3x1xf32>
  return %0 : tensor<1x3x3x1xf32>
}

// -----

// A clamp from -0.0 may leave -0.0, whose maximum with a zero pad would turn +0.0: -inf stays.
// CHECK-LABEL: func.func @max_pool_after_clamp_from_minus_zero
// CHECK: arith.maximumf
// CHECK: tosa.const values(dense<0xFF800000> : tensor<1xf32>)
func.func @max_pool_after_clamp_from_minus_zero(%x: tensor<1x8x8x2xf32>) -> tensor<1x4x4x2xf32> {
  %r = "nn.clamp"(%x) {min_value = -0.0 : f32} : (tensor<1x8x8x2xf32>) -> tensor<1x8x8x2xf32>
  %0 = "nn.max_pool2d"(%r) {window_dimensions = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 0, 1, 0>, layout = "nhwc"} : (tensor<1x8x8x2xf32>) -> tensor<1x4x4x2xf32>
  return %0 : tensor<1x4x4x2xf32>
}

// -----

// Floor rounding that leaves trailing rows/cols unused crops them.
// CHECK-LABEL: func.func @max_pool_crop
// CHECK: tosa.slice {{.*}} -> tensor<1x5x6x1xf32>
// CHECK: linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<[3, 2]> : tensor<2xi64>}
func.func @max_pool_crop(%x: tensor<1x1x6x7xf32>) -> tensor<1x1x2x3xf32> {
  %0 = "nn.max_pool2d"(%x) {window_dimensions = array<i64: 2, 2>, strides = array<i64: 3, 2>} : (tensor<1x1x6x7xf32>) -> tensor<1x1x2x3xf32>
  return %0 : tensor<1x1x2x3xf32>
}

// -----

// Average pooling divides the window sums by the number of input (non-padding) elements of each window.
// CHECK-LABEL: func.func @avg_pool
// CHECK-NOT: tosa.transpose
// CHECK: tosa.pad {{.*}} -> tensor<1x7x7x2xf32>
// CHECK: linalg.pooling_nhwc_sum
// CHECK: tosa.const values(dense<{{\[\[\[\[}}4.000000e+00], [6.000000e+00], [6.000000e+00], [6.000000e+00], [4.000000e+00]], {{\[\[}}6.000000e+00], [9.000000e+00]
// CHECK: linalg.generic
// CHECK: arith.divf
func.func @avg_pool(%x: tensor<1x5x5x2xf32>) -> tensor<1x5x5x2xf32> {
  %0 = "nn.average_pool2d"(%x) {window_dimensions = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, layout = "nhwc"} : (tensor<1x5x5x2xf32>) -> tensor<1x5x5x2xf32>
  return %0 : tensor<1x5x5x2xf32>
}

// -----

// Ceil rounding: the window reaches past the input, which is padded to that extent; float16 sums in float32.
// CHECK-LABEL: func.func @avg_pool_ceil_f16
// CHECK: tosa.cast %arg0 {{.*}} -> tensor<1x3x3x2xf32>
// CHECK: tosa.const_shape values(dense<[0, 0, 0, 1, 0, 1, 0, 0]> : tensor<8xindex>)
// CHECK: tosa.pad {{.*}} -> tensor<1x4x4x2xf32>
// CHECK: linalg.pooling_nhwc_sum
// CHECK: tosa.const values(dense<{{\[\[\[\[}}6.000000e+00], [3.000000e+00]]]]> : tensor<1x1x2x1xf32>)
// CHECK: arith.divf
// CHECK: tosa.cast {{.*}} -> tensor<1x1x2x2xf16>
func.func @avg_pool_ceil_f16(%x: tensor<1x3x3x2xf16>) -> tensor<1x1x2x2xf16> {
  %0 = "nn.average_pool2d"(%x) {window_dimensions = array<i64: 4, 2>, strides = array<i64: 2, 2>, rounding_type = "ceil", layout = "nhwc"} : (tensor<1x3x3x2xf16>) -> tensor<1x1x2x2xf16>
  return %0 : tensor<1x1x2x2xf16>
}

// -----

// CHECK-LABEL: func.func @l2_pool
// CHECK: tosa.mul %arg0, %arg0
// CHECK: linalg.pooling_nhwc_sum
// CHECK: math.sqrt
func.func @l2_pool(%x: tensor<1x4x4x2xf32>) -> tensor<1x1x1x2xf32> {
  %0 = "nn.l2_pool2d"(%x) {layout = "nhwc"} : (tensor<1x4x4x2xf32>) -> tensor<1x1x1x2xf32>
  return %0 : tensor<1x1x1x2xf32>
}

// -----

// Unsigned max pooling starts from 0, the lowest uint8.
// CHECK-LABEL: func.func @max_pool_u8
// CHECK: arith.constant 0 : i8
// CHECK: linalg.pooling_nhwc_max_unsigned
func.func @max_pool_u8(%x: tensor<1x4x4x1xui8>) -> tensor<1x2x2x1xui8> {
  %0 = "nn.max_pool2d"(%x) {window_dimensions = array<i64: 2, 2>, strides = array<i64: 2, 2>, layout = "nhwc"} : (tensor<1x4x4x1xui8>) -> tensor<1x2x2x1xui8>
  return %0 : tensor<1x2x2x1xui8>
}

// -----

// Linear resampling: one generic gathers the four neighbours through compile-time index and weight tables.
// CHECK-LABEL: func.func @resample_linear
// CHECK: tosa.const values(dense<[0, 0, 0, 1]> : tensor<4xi32>)
// CHECK: tosa.const values(dense<[0, 1, 1, 1]> : tensor<4xi32>)
// CHECK: tosa.const values(dense<[0.000000e+00, 2.500000e-01, 7.500000e-01, 0.000000e+00]> : tensor<4xf32>)
// CHECK: linalg.generic
// CHECK-COUNT-4: tensor.extract %arg0
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @resample_linear(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
  %0 = "nn.resample2d"(%x) {mode = "linear", scales = array<f64: 2.0, 2.0>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// Nearest neighbour: half-pixel centres, ties to the lower index (4 -> 2 takes rows 0 and 2).
// CHECK-LABEL: func.func @resample_nearest
// CHECK: tosa.const values(dense<[0, 2]> : tensor<2xi32>)
// CHECK: tosa.const values(dense<[0, 0, 1, 2, 2, 3, 4, 4, 5]> : tensor<9xi32>)
// CHECK: linalg.generic
// CHECK: tensor.extract %arg0
// CHECK-NEXT: linalg.yield
func.func @resample_nearest(%x: tensor<1x4x6x2xf32>) -> tensor<1x2x9x2xf32> {
  %0 = "nn.resample2d"(%x) {sizes = array<i64: 2, 9>, axes = array<i64: 1, 2>} : (tensor<1x4x6x2xf32>) -> tensor<1x2x9x2xf32>
  return %0 : tensor<1x2x9x2xf32>
}

// -----

// A global average pooling of a 1x1 convolution's product (through its ReLU) reads one extra
// zero row (8x7 window over a 8x7 padded input, divisor still 49), so IREE writes the product
// into a padded buffer rather than data-tiling it (pointwise.py).
// CHECK-LABEL: func.func @global_pool_of_pointwise
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<7x7x16xf32>, tensor<16x32xf32>) outs({{.*}} : tensor<7x7x32xf32>)
// CHECK: tosa.pad {{.*}} -> tensor<1x8x7x32xf32>
// CHECK: linalg.pooling_nhwc_sum {{.*}} ins({{.*}}, {{.*}} : tensor<1x8x7x32xf32>, tensor<8x7xf32>)
// CHECK: tosa.const values(dense<4.900000e+01> : tensor<1x1x1x1xf32>)
func.func @global_pool_of_pointwise(%x: tensor<1x7x7x16xf32>) -> tensor<1x1x1x32xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<32x16x1x1xf32>} : () -> tensor<32x16x1x1xf32>
  %0 = "nn.conv2d"(%x, %w) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x7x7x16xf32>, tensor<32x16x1x1xf32>) -> tensor<1x7x7x32xf32>
  %1 = "nn.relu"(%0) : (tensor<1x7x7x32xf32>) -> tensor<1x7x7x32xf32>
  %2 = "nn.average_pool2d"(%1) {window_dimensions = array<i64: 7, 7>, layout = "nhwc"} : (tensor<1x7x7x32xf32>) -> tensor<1x1x1x32xf32>
  return %2 : tensor<1x1x1x32xf32>
}
