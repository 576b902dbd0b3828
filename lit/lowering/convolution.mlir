// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// NCHW input / OIHW filter: transposed to NHWC / OHWI around one tosa.conv2d. The end padding
// no window reaches is trimmed (TOSA wants exact stride division).
// CHECK-LABEL: func.func @conv_nchw
// CHECK: tosa.transpose %arg0 perms([0, 2, 3, 1])
// CHECK: tosa.conv2d {{.*}} pad([1, 0, 1, 0]) stride([2, 2]) dilation([1, 1]) acc_type(f32)
// CHECK: tosa.transpose {{.*}} perms([0, 3, 1, 2])
func.func @conv_nchw(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = "nn.conv2d"(%x, %w, %b) {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// Depthwise (groups == channels, one input channel per group) uses tosa.depthwise_conv2d.
// CHECK-LABEL: func.func @depthwise
// CHECK: tosa.depthwise_conv2d
func.func @depthwise(%x: tensor<1x8x8x4xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x6x6x4xf32> {
  %0 = "nn.conv2d"(%x, %w) {groups = 4 : i64, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x8x8x4xf32>, tensor<4x1x3x3xf32>) -> tensor<1x6x6x4xf32>
  return %0 : tensor<1x6x6x4xf32>
}

// -----

// Other groupings: the windows of each group copied out once ([G, N, OH, OW, KH, KW, C/G], the
// channel read as g*2 + c), one matrix product batched over the groups.
// CHECK: affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d2 + d4, d3 + d5, d0 * 2 + d6)>
// CHECK-LABEL: func.func @grouped
// CHECK: linalg.generic {{.*}} outs({{.*}} : tensor<2x1x6x6x3x3x2xf32>)
// CHECK: tosa.matmul {{.*}} : (tensor<2x36x18xf32>, tensor<2x18x3xf32>, {{.*}}) -> tensor<2x36x3xf32>
// CHECK-NOT: tosa.conv2d
func.func @grouped(%x: tensor<1x8x8x4xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32> {
  %0 = "nn.conv2d"(%x, %w) {groups = 2 : i64, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x8x8x4xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  return %0 : tensor<1x6x6x6xf32>
}

// -----

// float16 convolutions accumulate in float32.
// CHECK-LABEL: func.func @conv_f16
// CHECK: tosa.cast {{.*}} -> tensor<1x4x4x3xf32>
// CHECK: tosa.conv2d
// CHECK: tosa.cast {{.*}} -> tensor<1x2x2x2xf16>
func.func @conv_f16(%x: tensor<1x4x4x3xf16>, %w: tensor<2x3x3x3xf16>) -> tensor<1x2x2x2xf16> {
  %0 = "nn.conv2d"(%x, %w) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x4x4x3xf16>, tensor<2x3x3x3xf16>) -> tensor<1x2x2x2xf16>
  return %0 : tensor<1x2x2x2xf16>
}

// -----

// Transposed convolution: zero-stuffed input, flipped filter, regular convolution; a small one
// accumulates in float64 on the CPU (rounded once to float32).
// CHECK-LABEL: func.func @conv_transpose
// CHECK: tosa.reverse {{.*}} axis(2)
// CHECK: tosa.reverse {{.*}} axis(3)
// CHECK: tosa.pad
// CHECK: linalg.conv_2d_nhwc_fhwc {{.*}} outs({{.*}} : tensor<1x7x7x4xf64>)
// CHECK: arith.truncf {{.*}} : f64 to f32
func.func @conv_transpose(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>) -> tensor<1x4x7x7xf32> {
  %0 = "nn.conv_transpose2d"(%x, %w) {strides = array<i64: 2, 2>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<1x4x7x7xf32>
  return %0 : tensor<1x4x7x7xf32>
}

// -----

// Padding beyond the kernel extent: the stuffed input is padded where the window needs zeros,
// then cropped where the padding removes rows (here the first row and the first two columns).
// CHECK-LABEL: func.func @conv_transpose_crop
// CHECK: tosa.transpose %arg1 perms([3, 2, 0, 1])
// CHECK: tosa.pad {{.*}} -> tensor<1x3x3x3x3x2xf32>
// CHECK: tosa.pad {{.*}} -> tensor<1x7x8x2xf32>
// CHECK: tosa.slice {{.*}} -> tensor<1x6x6x2xf32>
// CHECK: linalg.conv_2d_nhwc_fhwc {{.*}} -> tensor<1x5x5x4xf64>
// CHECK: arith.addf {{.*}} : f64
func.func @conv_transpose_crop(%x: tensor<1x3x3x2xf32>, %w: tensor<2x2x4x2xf32>, %b: tensor<4xf32>) -> tensor<1x5x5x4xf32> {
  %0 = "nn.conv_transpose2d"(%x, %w, %b) {strides = array<i64: 3, 3>, padding = array<i64: 2, 1, 3, 0>, input_layout = "nhwc", filter_layout = "hwoi", operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x3x3x2xf32>, tensor<2x2x4x2xf32>, tensor<4xf32>) -> tensor<1x5x5x4xf32>
  return %0 : tensor<1x5x5x4xf32>
}

// -----

// Grouped transposed convolution: per-group filters swapped to OIHW, then one conv per group.
// CHECK-LABEL: func.func @conv_transpose_grouped
// CHECK: tosa.concat {{.*}} axis(0) : {{.*}} -> tensor<6x2x3x3xf32>
// CHECK-COUNT-2: linalg.conv_2d_nhwc_fhwc
// CHECK: tosa.concat {{.*}} axis(3) : {{.*}} -> tensor<1x7x7x6xf64>
func.func @conv_transpose_grouped(%x: tensor<1x4x3x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x6x7x7xf32> {
  %0 = "nn.conv_transpose2d"(%x, %w) {strides = array<i64: 2, 2>, groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x6x7x7xf32>
  return %0 : tensor<1x6x7x7xf32>
}

// -----

// Batch-1 float32 1x1 convolution with constant weights: one linalg.generic over (oh, ow, f, c)
// with the weights as a [C, F] constant (passes/lowering/pointwise.py), then the bias.
// CHECK-LABEL: func.func @pointwise
// CHECK-NOT: tosa.conv2d
// CHECK: %[[W:.*]] = tosa.const values(dense<{{\[\[}}1.000000e+00, 1.000000e+00, 0.000000e+00, 2.000000e+00], [2.000000e+00, 1.000000e+00, 0.000000e+00, 2.000000e+00]{{.*}} : tensor<8x4xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[X:.*]], #[[WM:.*]], #[[O:.*]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins({{.*}}, %[[W]] : tensor<6x6x8xf32>, tensor<8x4xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tosa.add {{.*}} -> tensor<1x6x6x4xf32>
func.func @pointwise(%x: tensor<1x6x6x8xf32>, %b: tensor<4xf32>) -> tensor<1x6x6x4xf32> {
  %w = "nn.constant"() {value = dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[7.0]], [[8.0]]], [[[1.0]], [[1.0]], [[1.0]], [[1.0]], [[1.0]], [[1.0]], [[1.0]], [[1.0]]], [[[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]], [[0.0]]], [[[2.0]], [[2.0]], [[2.0]], [[2.0]], [[2.0]], [[2.0]], [[2.0]], [[2.0]]]]> : tensor<4x8x1x1xf32>} : () -> tensor<4x8x1x1xf32>
  %0 = "nn.conv2d"(%x, %w, %b) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x6x6x8xf32>, tensor<4x8x1x1xf32>, tensor<4xf32>) -> tensor<1x6x6x4xf32>
  return %0 : tensor<1x6x6x4xf32>
}

// -----

// A stride is a strided slice of the input (IREE folds it into the product's dispatch as a
// strided view; in the indexing map it made IREE compile some products as generic reductions).
// CHECK: #[[IN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func.func @pointwise_strided
// CHECK: tensor.extract_slice {{.*}}[0, 0, 0] [4, 4, 8] [2, 2, 1] : tensor<7x7x8xf32> to tensor<4x4x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[IN]], {{.*}} ins({{.*}} : tensor<4x4x8xf32>, tensor<8x4xf32>) outs({{.*}} : tensor<4x4x4xf32>)
func.func @pointwise_strided(%x: tensor<1x7x7x8xf32>) -> tensor<1x4x4x4xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<4x8x1x1xf32>} : () -> tensor<4x8x1x1xf32>
  %0 = "nn.conv2d"(%x, %w) {strides = array<i64: 2, 2>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x7x7x8xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// Not the pointwise form: weights computed at run time, a strided batch of two, padding.
// CHECK-LABEL: func.func @pointwise_kept
// CHECK-NOT: linalg.generic
// CHECK-COUNT-3: tosa.conv2d
func.func @pointwise_kept(%x: tensor<1x6x6x8xf32>, %w: tensor<4x8x1x1xf32>, %x2: tensor<2x6x6x8xf32>) -> (tensor<1x6x6x4xf32>, tensor<2x3x3x4xf32>, tensor<1x8x8x4xf32>) {
  %c = "nn.constant"() {value = dense<0.5> : tensor<4x8x1x1xf32>} : () -> tensor<4x8x1x1xf32>
  %0 = "nn.conv2d"(%x, %w) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x6x6x8xf32>, tensor<4x8x1x1xf32>) -> tensor<1x6x6x4xf32>
  %1 = "nn.conv2d"(%x2, %c) {strides = array<i64: 2, 2>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x6x6x8xf32>, tensor<4x8x1x1xf32>) -> tensor<2x3x3x4xf32>
  %2 = "nn.conv2d"(%x, %c) {padding = array<i64: 1, 1, 1, 1>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x6x6x8xf32>, tensor<4x8x1x1xf32>) -> tensor<1x8x8x4xf32>
  return %0, %1, %2 : tensor<1x6x6x4xf32>, tensor<2x3x3x4xf32>, tensor<1x8x8x4xf32>
}

// -----

// An unstrided batch is one image N times as high (a 1x1 convolution mixes no pixels).
// CHECK-LABEL: func.func @pointwise_batch
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<12x6x8xf32>, tensor<8x4xf32>) outs({{.*}} : tensor<12x6x4xf32>)
// CHECK: tosa.add {{.*}} -> tensor<2x6x6x4xf32>
func.func @pointwise_batch(%x: tensor<2x6x6x8xf32>) -> tensor<2x6x6x4xf32> {
  %c = "nn.constant"() {value = dense<0.5> : tensor<4x8x1x1xf32>} : () -> tensor<4x8x1x1xf32>
  %0 = "nn.conv2d"(%x, %c) {input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x6x6x8xf32>, tensor<4x8x1x1xf32>) -> tensor<2x6x6x4xf32>
  return %0 : tensor<2x6x6x4xf32>
}

// -----

// Without `winograd` (other targets, optimizations off, `--disable-pass cpu-winograd`) a 3x3
// convolution stays TOSA's (winograd.mlir: the Winograd form).
// CHECK-LABEL: func.func @no_winograd
// CHECK: tosa.conv2d
// CHECK-NOT: tosa.matmul
func.func @no_winograd(%x: tensor<1x16x16x16xf32>) -> tensor<1x16x16x32xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<32x16x3x3xf32>} : () -> tensor<32x16x3x3xf32>
  %0 = "nn.conv2d"(%x, %w) {padding = array<i64: 1, 1, 1, 1>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x16x16x16xf32>, tensor<32x16x3x3xf32>) -> tensor<1x16x16x32xf32>
  return %0 : tensor<1x16x16x32xf32>
}
