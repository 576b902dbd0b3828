// RUN: estuary-opt %s --split-input-file --nn-fold-batch-norm | FileCheck %s

// batch_normalization after a conv folds into its weights: w' = w * s, b' = (b - mean) * s + beta,
// s = gamma / sqrt(var + eps). Here s = [2, 0.5]: w' = [2, 0.5], b' = [(1 - 1) * 2 + 3, (0 - 2) * 0.5 + 0].
// CHECK-LABEL: func.func @bn
// CHECK-DAG: "nn.constant"() {value = dense<[{{\[\[}}[2.000000e+00]]], {{\[\[}}[5.000000e-01]]]]> : tensor<2x1x1x1xf32>}
// CHECK-DAG: "nn.constant"() {value = dense<[3.000000e+00, -1.000000e+00]> : tensor<2xf32>}
// CHECK: "nn.conv2d"
// CHECK-NOT: nn.batch_normalization
func.func @bn(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = "nn.constant"() {value = dense<[[[[1.0]]], [[[1.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %b = "nn.constant"() {value = dense<[1.0, 0.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %m = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %v = "nn.constant"() {value = dense<[0.25, 4.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %g = "nn.constant"() {value = dense<[1.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %be = "nn.constant"() {value = dense<[3.0, 0.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %c = "nn.conv2d"(%x, %w, %b) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %y = "nn.batch_normalization"(%c, %m, %v, %g, %be) {epsilon = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

// A per-channel constant mul then add fold too (bias created when the conv has none).
// CHECK-LABEL: func.func @scale_bias
// CHECK-DAG: dense<[{{\[\[}}[3.000000e+00]]], {{\[\[}}[-1.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-DAG: dense<[5.000000e-01, 0.000000e+00]> : tensor<2xf32>
// CHECK: "nn.conv2d"
// CHECK-NOT: nn.mul
// CHECK-NOT: nn.add
func.func @scale_bias(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = "nn.constant"() {value = dense<[[[[1.0]]], [[[1.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %s = "nn.constant"() {value = dense<[[[3.0]], [[-1.0]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %t = "nn.constant"() {value = dense<[[[0.5]], [[0.0]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %c = "nn.conv2d"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %m = "nn.mul"(%c, %s) : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %y = "nn.add"(%m, %t) : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

// Not folded into the conv: its result has another use (the batch norm gets its scale
// precomputed instead, below), or the constant varies along a spatial axis.
// CHECK-LABEL: func.func @keep
// CHECK-NOT: nn.batch_normalization
// CHECK: nn.sub
// CHECK: nn.mul
// CHECK: nn.add
func.func @keep(%x: tensor<1x1x2x2xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
  %w = "nn.constant"() {value = dense<[[[[2.0]]]]> : tensor<1x1x1x1xf32>} : () -> tensor<1x1x1x1xf32>
  %p = "nn.constant"() {value = dense<[1.0]> : tensor<1xf32>} : () -> tensor<1xf32>
  %sp = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %c = "nn.conv2d"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  %y = "nn.batch_normalization"(%c, %p, %p) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<1x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %c2 = "nn.conv2d"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  %z = "nn.add"(%c2, %sp) : (tensor<1x1x2x2xf32>, tensor<2xf32>) -> tensor<1x1x2x2xf32>
  %u = "nn.add"(%y, %c) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %u, %z : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
}

// -----

// A float32 batch norm after no convolution (DenseNet's after a concatenation): (x - mean) * s + beta
// with s = gamma / sqrt(var + eps) = [2 / 0.5, 1 / 2] = [4, 0.5] precomputed, broadcast along axis 1.
// A float16 one is left to the lowering (which computes in float32).
// CHECK-LABEL: func.func @precomputed
// CHECK: dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}2.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK: "nn.sub"(%arg0
// CHECK: dense<{{\[\[\[}}4.000000e+00]], {{\[\[}}5.000000e-01]]]> : tensor<2x1x1xf32>
// CHECK: "nn.mul"
// CHECK: dense<{{\[\[\[}}3.000000e+00]], {{\[\[}}0.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK: "nn.add"
// CHECK: "nn.batch_normalization"(%arg1
func.func @precomputed(%x: tensor<1x2x3x3xf32>, %h: tensor<1x2x3x3xf16>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf16>) {
  %m = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %v = "nn.constant"() {value = dense<[0.25, 4.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %g = "nn.constant"() {value = dense<[2.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %be = "nn.constant"() {value = dense<[3.0, 0.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %y = "nn.batch_normalization"(%x, %m, %v, %g, %be) {epsilon = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %mh = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf16>} : () -> tensor<2xf16>
  %vh = "nn.constant"() {value = dense<[0.25, 4.0]> : tensor<2xf16>} : () -> tensor<2xf16>
  %z = "nn.batch_normalization"(%h, %mh, %vh) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<1x2x3x3xf16>, tensor<2xf16>, tensor<2xf16>) -> tensor<1x2x3x3xf16>
  return %y, %z : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf16>
}
