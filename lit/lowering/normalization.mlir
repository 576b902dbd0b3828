// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// Per-channel operands reshaped to [1, C, 1, 1]; (x - mean) * rsqrt(variance + epsilon).
// CHECK-LABEL: func.func @batch_norm
// CHECK: tosa.reshape %arg2, {{.*}} -> tensor<1x3x1x1xf32>
// CHECK: tosa.const {{.*}}9.99999974E-6{{.*}} tensor<1x1x1x1xf32>
// CHECK: tosa.add
// CHECK: tosa.rsqrt {{.*}} -> tensor<1x3x1x1xf32>
// CHECK: tosa.reshape %arg1, {{.*}} -> tensor<1x3x1x1xf32>
// CHECK: tosa.sub %arg0
// CHECK: tosa.mul
// CHECK-NOT: tosa.add
// CHECK: return
func.func @batch_norm(%x: tensor<1x3x2x2xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<1x3x2x2xf32> {
  %0 = "nn.batch_normalization"(%x, %m, %v) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<1x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  return %0 : tensor<1x3x2x2xf32>
}

// -----

// axis = 2 of a rank-3 input, with scale and bias.
// CHECK-LABEL: func.func @batch_norm_axis
// CHECK: tosa.reshape %arg2, {{.*}} -> tensor<1x1x4xf32>
// CHECK: tosa.rsqrt
// CHECK: tosa.reshape %arg1, {{.*}} -> tensor<1x1x4xf32>
// CHECK: tosa.sub %arg0
// CHECK: tosa.reshape %arg3, {{.*}} -> tensor<1x1x4xf32>
// CHECK: tosa.reshape %arg4, {{.*}} -> tensor<1x1x4xf32>
// CHECK: tosa.mul
// CHECK: tosa.mul
// CHECK: tosa.add {{.*}} -> tensor<2x3x4xf32>
func.func @batch_norm_axis(%x: tensor<2x3x4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %0 = "nn.batch_normalization"(%x, %m, %v, %s, %b) {axis = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Two passes over the spatial axes (1, 2 for nhwc): the mean, then the mean squared deviation.
// CHECK-LABEL: func.func @instance_norm_nhwc
// CHECK: tosa.reduce_sum %arg0 axis(1) : (tensor<1x4x4x3xf32>) -> tensor<1x1x4x3xf32>
// CHECK: tosa.reduce_sum {{.*}} axis(2) : (tensor<1x1x4x3xf32>) -> tensor<1x1x1x3xf32>
// CHECK: tosa.const {{.*}}6.250000e-02
// CHECK: tosa.mul
// CHECK: %[[D:.*]] = tosa.sub %arg0
// CHECK: tosa.mul %[[D]], %[[D]]
// CHECK: tosa.reduce_sum {{.*}} axis(1)
// CHECK: tosa.reduce_sum {{.*}} axis(2)
// CHECK: tosa.rsqrt
func.func @instance_norm_nhwc(%x: tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32> {
  %0 = "nn.instance_normalization"(%x) {layout = "nhwc", operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32>
  return %0 : tensor<1x4x4x3xf32>
}

// -----

// Layer normalization over axes [2, 1]: scale [4, 3] is transposed into the input's axis order.
// CHECK-LABEL: func.func @layer_norm
// CHECK: tosa.transpose %arg1 perms([1, 0]) : (tensor<4x3xf32>) -> tensor<3x4xf32>
// CHECK: tosa.reshape {{.*}} -> tensor<1x3x4xf32>
// CHECK: tosa.reduce_sum %arg0 axis(2)
// CHECK: tosa.reduce_sum {{.*}} axis(1)
// CHECK: tosa.rsqrt {{.*}} -> tensor<2x1x1xf32>
func.func @layer_norm(%x: tensor<2x3x4xf32>, %s: tensor<4x3xf32>) -> tensor<2x3x4xf32> {
  %0 = "nn.layer_normalization"(%x, %s) {axes = array<i64: 2, 1>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3x4xf32>, tensor<4x3xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Empty axes: nothing is reduced, (x - x) / sqrt(epsilon) + bias, with a rank-0 bias.
// CHECK-LABEL: func.func @layer_norm_no_axes
// CHECK-NOT: tosa.reduce_sum
// CHECK: tosa.sub %arg0, %arg0
// CHECK: tosa.add
func.func @layer_norm_no_axes(%x: tensor<2x3xf32>, %b: tensor<f32>) -> tensor<2x3xf32> {
  %0 = "nn.layer_normalization"(%x, %b) {axes = array<i64>, operandSegmentSizes = array<i32: 1, 0, 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// float16 computes in float32, with epsilon cast to float16 first (1e-5 -> 1.00135803E-5).
// CHECK-LABEL: func.func @layer_norm_f16
// CHECK: tosa.cast %arg0 : (tensor<4x8xf16>) -> tensor<4x8xf32>
// CHECK: tosa.reduce_sum {{.*}} axis(1)
// CHECK: tosa.const {{.*}}1.00135803E-5
// CHECK: tosa.cast {{.*}} -> tensor<4x8xf16>
func.func @layer_norm_f16(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %0 = "nn.layer_normalization"(%x) {axes = array<i64: 1>, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}
