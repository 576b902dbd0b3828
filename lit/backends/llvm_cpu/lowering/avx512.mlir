// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa="cpu-lanes=16 retile=true" | FileCheck %s

// On AVX-512 (cpu-lanes=16 with retile: CompileOptions.tile_lanes), a 1x1 convolution with at
// least 512 output channels takes its weights in blocks of 32 output channels, [F / 32, C, 32]; the
// product has loops (oh, ow, f / 32, f % 32, c) (backends/llvm_cpu/lowering/pointwise.py,
// tile_rules.pointwise_block and blocked_pointwise_tiles).
// CHECK: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>
// CHECK: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d4, d3)>
// CHECK: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @blocked
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[W]], #[[OUT]]], {{.*}} ins({{.*}} : tensor<14x14x8xf32>, tensor<16x8x32xf32>) outs({{.*}} : tensor<14x14x16x32xf32>)
// CHECK: tosa.add {{.*}} -> tensor<1x14x14x512xf32>
func.func @blocked(%x: tensor<1x14x14x8xf32>, %b: tensor<512xf32>) -> tensor<1x14x14x512xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<512x8x1x1xf32>} : () -> tensor<512x8x1x1xf32>
  %0 = "nn.conv2d"(%x, %w, %b) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x14x14x8xf32>, tensor<512x8x1x1xf32>, tensor<512xf32>) -> tensor<1x14x14x512xf32>
  return %0 : tensor<1x14x14x512xf32>
}

// -----

// At most 7 pixels wide the blocks are 64 channels (one register tile's width there); a stride
// is a strided slice of the input.
// CHECK: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>
// CHECK: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d4, d3)>
// CHECK-LABEL: func.func @narrow_strided
// CHECK: tensor.extract_slice {{.*}} [2, 2, 1] : tensor<14x14x8xf32> to tensor<7x7x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[W]], {{.*}}], {{.*}} ins({{.*}} : tensor<7x7x8xf32>, tensor<8x8x64xf32>) outs({{.*}} : tensor<7x7x8x64xf32>)
func.func @narrow_strided(%x: tensor<1x14x14x8xf32>) -> tensor<1x7x7x512xf32> {
  %w = "nn.constant"() {value = dense<0.25> : tensor<512x8x1x1xf32>} : () -> tensor<512x8x1x1xf32>
  %0 = "nn.conv2d"(%x, %w) {strides = array<i64: 2, 2>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x14x14x8xf32>, tensor<512x8x1x1xf32>) -> tensor<1x7x7x512xf32>
  return %0 : tensor<1x7x7x512xf32>
}

// -----

// A projection (a 1x1 convolution of a depthwise convolution's result that no padding follows,
// MobileNetV2's linear bottleneck) takes blocks of 32 from 64 output channels; as [C, F] IREE
// data-tiles it and packs its input inside the depthwise convolution's dispatch. The same
// product before a padded convolution keeps [C, F] weights.
// CHECK-LABEL: func.func @projection
// CHECK: tosa.depthwise_conv2d
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<14x14x16xf32>, tensor<5x16x32xf32>) outs({{.*}} : tensor<14x14x5x32xf32>)
// CHECK: tosa.depthwise_conv2d
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<14x14x16xf32>, tensor<16x160xf32>) outs({{.*}} : tensor<14x14x160xf32>)
func.func @projection(%x: tensor<1x14x14x16xf32>) -> (tensor<1x14x14x160xf32>, tensor<1x14x14x160xf32>) {
  %d = "nn.constant"() {value = dense<0.5> : tensor<16x1x3x3xf32>} : () -> tensor<16x1x3x3xf32>
  %w = "nn.constant"() {value = dense<0.25> : tensor<160x16x1x1xf32>} : () -> tensor<160x16x1x1xf32>
  %e = "nn.constant"() {value = dense<0.5> : tensor<160x1x3x3xf32>} : () -> tensor<160x1x3x3xf32>
  %0 = "nn.conv2d"(%x, %d) {padding = array<i64: 1, 1, 1, 1>, groups = 16 : i64, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x14x14x16xf32>, tensor<16x1x3x3xf32>) -> tensor<1x14x14x16xf32>
  %1 = "nn.relu"(%0) : (tensor<1x14x14x16xf32>) -> tensor<1x14x14x16xf32>
  %2 = "nn.conv2d"(%1, %w) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x14x14x16xf32>, tensor<160x16x1x1xf32>) -> tensor<1x14x14x160xf32>
  %3 = "nn.conv2d"(%x, %d) {padding = array<i64: 1, 1, 1, 1>, groups = 16 : i64, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x14x14x16xf32>, tensor<16x1x3x3xf32>) -> tensor<1x14x14x16xf32>
  %4 = "nn.conv2d"(%3, %w) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x14x14x16xf32>, tensor<160x16x1x1xf32>) -> tensor<1x14x14x160xf32>
  %5 = "nn.conv2d"(%4, %e) {padding = array<i64: 1, 1, 1, 1>, groups = 160 : i64, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x14x14x160xf32>, tensor<160x1x3x3xf32>) -> tensor<1x14x14x160xf32>
  return %2, %5 : tensor<1x14x14x160xf32>, tensor<1x14x14x160xf32>
}

// -----

// Narrower projections take the widest of 16 or 8 channels that makes two blocks or more: 32
// channels as 2 x 16, 24 as 3 x 8 (one block IREE would fold away and data-tile again).
// CHECK-LABEL: func.func @narrow_projection
// CHECK: tosa.depthwise_conv2d
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<28x28x16xf32>, tensor<2x16x16xf32>) outs({{.*}} : tensor<28x28x2x16xf32>)
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<28x28x16xf32>, tensor<3x16x8xf32>) outs({{.*}} : tensor<28x28x3x8xf32>)
func.func @narrow_projection(%x: tensor<1x28x28x16xf32>) -> (tensor<1x28x28x32xf32>, tensor<1x28x28x24xf32>) {
  %d = "nn.constant"() {value = dense<0.5> : tensor<16x1x3x3xf32>} : () -> tensor<16x1x3x3xf32>
  %w = "nn.constant"() {value = dense<0.25> : tensor<32x16x1x1xf32>} : () -> tensor<32x16x1x1xf32>
  %v = "nn.constant"() {value = dense<0.25> : tensor<24x16x1x1xf32>} : () -> tensor<24x16x1x1xf32>
  %0 = "nn.conv2d"(%x, %d) {padding = array<i64: 1, 1, 1, 1>, groups = 16 : i64, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x28x28x16xf32>, tensor<16x1x3x3xf32>) -> tensor<1x28x28x16xf32>
  %1 = "nn.conv2d"(%0, %w) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x28x28x16xf32>, tensor<32x16x1x1xf32>) -> tensor<1x28x28x32xf32>
  %2 = "nn.conv2d"(%0, %v) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x28x28x16xf32>, tensor<24x16x1x1xf32>) -> tensor<1x28x28x24xf32>
  return %1, %2 : tensor<1x28x28x32xf32>, tensor<1x28x28x24xf32>
}

// -----

// Fewer than 512 output channels, or a pixel count no register tile of 7 or 8 divides: [C, F]
// weights, loops (oh, ow, f, c).
// CHECK-LABEL: func.func @unblocked
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<14x14x8xf32>, tensor<8x256xf32>) outs({{.*}} : tensor<14x14x256xf32>)
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<5x5x8xf32>, tensor<8x512xf32>) outs({{.*}} : tensor<5x5x512xf32>)
func.func @unblocked(%x: tensor<1x14x14x8xf32>, %y: tensor<1x5x5x8xf32>) -> (tensor<1x14x14x256xf32>, tensor<1x5x5x512xf32>) {
  %w = "nn.constant"() {value = dense<0.5> : tensor<256x8x1x1xf32>} : () -> tensor<256x8x1x1xf32>
  %v = "nn.constant"() {value = dense<0.5> : tensor<512x8x1x1xf32>} : () -> tensor<512x8x1x1xf32>
  %0 = "nn.conv2d"(%x, %w) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x14x14x8xf32>, tensor<256x8x1x1xf32>) -> tensor<1x14x14x256xf32>
  %1 = "nn.conv2d"(%y, %v) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x5x5x8xf32>, tensor<512x8x1x1xf32>) -> tensor<1x5x5x512xf32>
  return %0, %1 : tensor<1x14x14x256xf32>, tensor<1x5x5x512xf32>
}

// -----

// A one-row product with a constant matrix of at least 256 columns is in the column-vector form
// (backends/llvm_cpu/lowering/matvec.py unit_products): weights in blocks of 32 columns, [N / 32, K, 32], one
// generic with two results of [blocks, 32] over (block, column, k), marked for cpu-tiles, joined
// along the row of the [1, N] result (N padded to whole blocks and sliced back).
// CHECK: #[[V:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK: #[[WB:.*]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK: #[[R:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @column_form
// CHECK-COUNT-2: tosa.const {{.*}} : () -> tensor<5x16x32xf32>
// CHECK: linalg.generic {indexing_maps = [#[[V]], #[[WB]], #[[WB]], #[[R]], #[[R]]], iterator_types = ["parallel", "parallel", "reduction"]} ins({{.*}} : tensor<16xf32>, tensor<5x16x32xf32>, tensor<5x16x32xf32>) outs({{.*}} : tensor<5x32xf32>, tensor<5x32xf32>) attrs = {estuary.unit_matvec}
// CHECK: tosa.concat {{.*}} axis(1) : (tensor<1x160xf32>, tensor<1x160xf32>) -> tensor<1x320xf32>
// CHECK: tosa.slice {{.*}} -> tensor<1x300xf32>
func.func @column_form(%x: tensor<1x16xf32>) -> tensor<1x300xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<16x300xf32>} : () -> tensor<16x300xf32>
  %0 = "nn.matmul"(%x, %w) : (tensor<1x16xf32>, tensor<16x300xf32>) -> tensor<1x300xf32>
  return %0 : tensor<1x300xf32>
}

// -----

// A batch-1, one-direction LSTM with constant recurrent weights: each step's recurrent product is
// the column-vector form with one result per gate (hidden 64: two blocks of 32 units), and the
// blocked weights are built once for all steps (here the four gates' weights are equal: one
// constant for all of them, read by each of the three steps).
// CHECK-LABEL: func.func @lstm_columns
// CHECK: %[[W:.*]] = tosa.const {{.*}} : () -> tensor<2x64x32xf32>
// CHECK-NOT: () -> tensor<2x64x32xf32>
// CHECK-COUNT-3: linalg.generic {{.*}} ins({{.*}}, %[[W]], %[[W]], %[[W]], %[[W]] : {{.*}}) outs({{.*}} : tensor<2x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>) attrs = {estuary.unit_matvec}
// CHECK-NOT: estuary.matvec
func.func @lstm_columns(%x: tensor<3x1x8xf32>, %w: tensor<1x256x8xf32>) -> tensor<1x1x64xf32> {
  %r = "nn.constant"() {value = dense<0.125> : tensor<1x256x64xf32>} : () -> tensor<1x256x64xf32>
  %0:2 = "nn.lstm"(%x, %w, %r) {steps = 3 : i64, hidden_size = 64 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<3x1x8xf32>, tensor<1x256x8xf32>, tensor<1x256x64xf32>) -> (tensor<1x1x64xf32>, tensor<1x1x64xf32>)
  return %0#0 : tensor<1x1x64xf32>
}

// -----

// With AVX-512 (16 lanes) the narrow product stays a generic too.
// CHECK-LABEL: func.func @narrow_avx512
// CHECK-NOT: linalg.matmul
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<7x7x8xf32>, tensor<8x4xf32>) outs({{.*}} : tensor<7x7x4xf32>)
func.func @narrow_avx512(%x: tensor<1x7x7x8xf32>) -> tensor<1x7x7x4xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<4x8x1x1xf32>} : () -> tensor<4x8x1x1xf32>
  %0 = "nn.conv2d"(%x, %w) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x7x7x8xf32>, tensor<4x8x1x1xf32>) -> tensor<1x7x7x4xf32>
  return %0 : tensor<1x7x7x4xf32>
}
