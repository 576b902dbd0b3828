// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// On AVX-512 (compile_nn sets estuary.cpu_lanes = 16), a 1x1 convolution with at least 512
// output channels takes its weights in blocks of 32 output channels, [F / 32, C, 32]; the
// product has loops (oh, ow, f / 32, f % 32, c), a stride in the input's map
// (passes/lowering/pointwise.py, cpu_tiles.pointwise_block and blocked_pointwise_tiles).
// CHECK: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>
// CHECK: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d4, d3)>
// CHECK: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @blocked
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[W]], #[[OUT]]], {{.*}} ins({{.*}} : tensor<14x14x8xf32>, tensor<16x8x32xf32>) outs({{.*}} : tensor<14x14x16x32xf32>)
// CHECK: tosa.add {{.*}} -> tensor<1x14x14x512xf32>
module attributes {estuary.cpu_lanes = 16 : i64} {
func.func @blocked(%x: tensor<1x14x14x8xf32>, %b: tensor<512xf32>) -> tensor<1x14x14x512xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<512x8x1x1xf32>} : () -> tensor<512x8x1x1xf32>
  %0 = "nn.conv2d"(%x, %w, %b) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x14x14x8xf32>, tensor<512x8x1x1xf32>, tensor<512xf32>) -> tensor<1x14x14x512xf32>
  return %0 : tensor<1x14x14x512xf32>
}
}

// -----

// At most 7 pixels wide the blocks are 64 channels (one register tile's width there); a stride
// goes into the input's map.
// CHECK: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0 * 2, d1 * 2, d4)>
// CHECK: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d4, d3)>
// CHECK-LABEL: func.func @narrow_strided
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[W]], {{.*}}], {{.*}} ins({{.*}} : tensor<14x14x8xf32>, tensor<8x8x64xf32>) outs({{.*}} : tensor<7x7x8x64xf32>)
module attributes {estuary.cpu_lanes = 16 : i64} {
func.func @narrow_strided(%x: tensor<1x14x14x8xf32>) -> tensor<1x7x7x512xf32> {
  %w = "nn.constant"() {value = dense<0.25> : tensor<512x8x1x1xf32>} : () -> tensor<512x8x1x1xf32>
  %0 = "nn.conv2d"(%x, %w) {strides = array<i64: 2, 2>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x14x14x8xf32>, tensor<512x8x1x1xf32>) -> tensor<1x7x7x512xf32>
  return %0 : tensor<1x7x7x512xf32>
}
}

// -----

// Fewer than 512 output channels, or a pixel count no register tile of 7 or 8 divides: [C, F]
// weights, loops (oh, ow, f, c).
// CHECK-LABEL: func.func @unblocked
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<14x14x8xf32>, tensor<8x256xf32>) outs({{.*}} : tensor<14x14x256xf32>)
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<5x5x8xf32>, tensor<8x512xf32>) outs({{.*}} : tensor<5x5x512xf32>)
module attributes {estuary.cpu_lanes = 16 : i64} {
func.func @unblocked(%x: tensor<1x14x14x8xf32>, %y: tensor<1x5x5x8xf32>) -> (tensor<1x14x14x256xf32>, tensor<1x5x5x512xf32>) {
  %w = "nn.constant"() {value = dense<0.5> : tensor<256x8x1x1xf32>} : () -> tensor<256x8x1x1xf32>
  %v = "nn.constant"() {value = dense<0.5> : tensor<512x8x1x1xf32>} : () -> tensor<512x8x1x1xf32>
  %0 = "nn.conv2d"(%x, %w) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x14x14x8xf32>, tensor<256x8x1x1xf32>) -> tensor<1x14x14x256xf32>
  %1 = "nn.conv2d"(%y, %v) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x5x5x8xf32>, tensor<512x8x1x1xf32>) -> tensor<1x5x5x512xf32>
  return %0, %1 : tensor<1x14x14x256xf32>, tensor<1x5x5x512xf32>
}
}
