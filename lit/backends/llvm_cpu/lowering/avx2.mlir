// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa="cpu-lanes=8 retile=true" | FileCheck %s

// On AVX2 (cpu-lanes=8 with retile: CompileOptions.tile_lanes), an unstrided 1x1 convolution at
// most 7 pixels wide is a plain matmul over its 49 pixels, which IREE data-tiles
// (backends/llvm_cpu/lowering/pointwise.py).
// CHECK-LABEL: func.func @narrow
// CHECK: %[[W:.*]] = tosa.const values(dense<{{\[\[}}1.000000e+00, 1.000000e+00, 0.000000e+00, 2.000000e+00], [2.000000e+00, 1.000000e+00, 0.000000e+00, 2.000000e+00]{{.*}} : tensor<8x4xf32>)
// CHECK: linalg.matmul ins({{.*}}, %[[W]] : tensor<49x8xf32>, tensor<8x4xf32>) outs({{.*}} : tensor<49x4xf32>)
// CHECK-NOT: linalg.generic
// CHECK: tosa.add {{.*}} -> tensor<1x7x7x4xf32>
func.func @narrow(%x: tensor<1x7x7x8xf32>, %b: tensor<4xf32>) -> tensor<1x7x7x4xf32> {
  %w = "nn.constant"() {value = dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[7.0]], [[8.0]]], [[[1.0]], [[1.0]], [[1.0]], [[1.0]], [[1.0]], [[1.0]], [[1.0]], [[1.0]]], [[[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]]], [[[2.0]], [[2.0]], [[2.0]], [[2.0]], [[2.0]], [[2.0]], [[2.0]], [[2.0]]]]> : tensor<4x8x1x1xf32>} : () -> tensor<4x8x1x1xf32>
  %0 = "nn.conv2d"(%x, %w, %b) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x7x7x8xf32>, tensor<4x8x1x1xf32>, tensor<4xf32>) -> tensor<1x7x7x4xf32>
  return %0 : tensor<1x7x7x4xf32>
}

// -----

// Wider, or strided, it keeps the [C, F] generic that cpu-tiles retiles.
// CHECK-LABEL: func.func @wide_or_strided
// CHECK-NOT: linalg.matmul
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<8x8x8xf32>, tensor<8x4xf32>) outs({{.*}} : tensor<8x8x4xf32>)
// CHECK: tensor.extract_slice {{.*}} [2, 2, 1] : tensor<7x7x8xf32> to tensor<4x4x8xf32>
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<4x4x8xf32>, tensor<8x4xf32>) outs({{.*}} : tensor<4x4x4xf32>)
func.func @wide_or_strided(%x: tensor<1x8x8x8xf32>, %y: tensor<1x7x7x8xf32>) -> (tensor<1x8x8x4xf32>, tensor<1x4x4x4xf32>) {
  %w = "nn.constant"() {value = dense<0.5> : tensor<4x8x1x1xf32>} : () -> tensor<4x8x1x1xf32>
  %0 = "nn.conv2d"(%x, %w) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x8x8x8xf32>, tensor<4x8x1x1xf32>) -> tensor<1x8x8x4xf32>
  %1 = "nn.conv2d"(%y, %w) {strides = array<i64: 2, 2>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x7x7x8xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x4x4xf32>
  return %0, %1 : tensor<1x8x8x4xf32>, tensor<1x4x4x4xf32>
}

// -----

// On AVX2 a 3x3 convolution with an output at most 7 wide is im2col (one copy generic whose
// input map carries the stride) and a matmul with [KH*KW*C, F] constant weights.
// CHECK: #[[WIN:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0 * 2 + d2, d1 * 2 + d3, d4)>
// CHECK-LABEL: func.func @im2col
// CHECK-NOT: tosa.conv2d
// CHECK: tosa.pad
// CHECK: linalg.generic {indexing_maps = [#[[WIN]], {{.*}} ins({{.*}} : tensor<9x9x2xf32>) outs({{.*}} : tensor<4x4x3x3x2xf32>)
// CHECK: linalg.matmul ins({{.*}} : tensor<16x18xf32>, tensor<18x4xf32>) outs({{.*}} : tensor<16x4xf32>)
// CHECK: tosa.add {{.*}} -> tensor<1x4x4x4xf32>
func.func @im2col(%x: tensor<1x8x8x2xf32>) -> tensor<1x4x4x4xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<4x2x3x3xf32>} : () -> tensor<4x2x3x3xf32>
  %0 = "nn.conv2d"(%x, %w) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x8x8x2xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// Wider than 7, or without a known 8-lane target, it stays TOSA's convolution.
// CHECK-LABEL: func.func @direct
// CHECK-NOT: linalg.matmul
// CHECK: tosa.conv2d
func.func @direct(%x: tensor<1x8x8x2xf32>) -> tensor<1x8x8x4xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<4x2x3x3xf32>} : () -> tensor<4x2x3x3xf32>
  %0 = "nn.conv2d"(%x, %w) {padding = array<i64: 1, 1, 1, 1>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x8x8x2xf32>, tensor<4x2x3x3xf32>) -> tensor<1x8x8x4xf32>
  return %0 : tensor<1x8x8x4xf32>
}

// -----

// At least 128 output channels (a multiple of 64, an even width): the weights come in blocks of
// 32 output channels, [F / 32, C, 32], and the product has loops (oh, ow, f / 32, f % 32, c),
// a strided slice for a stride (backends/llvm_cpu/lowering/pointwise.py,
// tile_rules.blocked_pointwise_tiles).
// CHECK: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>
// CHECK: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d4, d3)>
// CHECK: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @blocked
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[W]], #[[OUT]]], {{.*}} ins({{.*}} : tensor<8x8x8xf32>, tensor<4x8x32xf32>) outs({{.*}} : tensor<8x8x4x32xf32>)
// CHECK: tosa.add {{.*}} -> tensor<1x8x8x128xf32>
// CHECK: tensor.extract_slice {{.*}} [2, 2, 1] : tensor<8x8x8xf32> to tensor<4x4x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[W]], #[[OUT]]], {{.*}} ins({{.*}} : tensor<4x4x8xf32>, tensor<4x8x32xf32>) outs({{.*}} : tensor<4x4x4x32xf32>)
func.func @blocked(%x: tensor<1x8x8x8xf32>, %b: tensor<128xf32>) -> (tensor<1x8x8x128xf32>, tensor<1x4x4x128xf32>) {
  %w = "nn.constant"() {value = dense<0.5> : tensor<128x8x1x1xf32>} : () -> tensor<128x8x1x1xf32>
  %0 = "nn.conv2d"(%x, %w, %b) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x8x8x8xf32>, tensor<128x8x1x1xf32>, tensor<128xf32>) -> tensor<1x8x8x128xf32>
  %1 = "nn.conv2d"(%x, %w) {strides = array<i64: 2, 2>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x8x8x8xf32>, tensor<128x8x1x1xf32>) -> tensor<1x4x4x128xf32>
  return %0, %1 : tensor<1x8x8x128xf32>, tensor<1x4x4x128xf32>
}
