// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa=winograd=true | FileCheck %s

// With winograd=true (llvm-cpu with optimizations on), a batch-1 3x3 stride-1
// convolution with constant weights becomes Winograd F(4x4, 3x3): the 15x15 output is 4x4 tiles
// (a 18x18 padded input), the row and column input transforms read strided slices, the tile
// products are one batched tosa.matmul of 36 with the transformed filter [36, C, F], the output
// transforms follow and the 16x16 result is sliced to 15x15 before the bias. The lowering's
// side result counts it.
// CHECK: // lower-nn-to-tosa: winograd=1
// CHECK-LABEL: func.func @winograd
// CHECK: tosa.pad
// CHECK-COUNT-6: tensor.extract_slice {{.*}}[4, 1, 1] : tensor<18x18x16xf32> to tensor<4x18x16xf32>
// CHECK: linalg.generic
// CHECK-COUNT-6: tensor.extract_slice {{.*}}[1, 1, 4, 1] : tensor<6x4x18x16xf32> to tensor<6x4x4x16xf32>
// CHECK: linalg.generic
// CHECK: tosa.matmul {{.*}} : (tensor<36x16x16xf32>, tensor<36x16x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<36x16x32xf32>
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: tosa.slice
// CHECK: tosa.add {{.*}} -> tensor<1x15x15x32xf32>
// CHECK-NOT: tosa.conv2d
func.func @winograd(%x: tensor<1x15x15x16xf32>) -> tensor<1x15x15x32xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<32x16x3x3xf32>} : () -> tensor<32x16x3x3xf32>
  %b = "nn.constant"() {value = dense<0.25> : tensor<32xf32>} : () -> tensor<32xf32>
  %0 = "nn.conv2d"(%x, %w, %b) {padding = array<i64: 1, 1, 1, 1>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x15x15x16xf32>, tensor<32x16x3x3xf32>, tensor<32xf32>) -> tensor<1x15x15x32xf32>
  return %0 : tensor<1x15x15x32xf32>
}

// -----

// Kept as a direct convolution: stride 2, a 7x7 output (too small to gain), weights that are
// not constant.
// CHECK: // lower-nn-to-tosa: winograd=0
// CHECK-LABEL: func.func @direct
// CHECK-COUNT-3: tosa.conv2d
func.func @direct(%x: tensor<1x16x16x16xf32>, %x7: tensor<1x7x7x16xf32>, %wv: tensor<32x16x3x3xf32>) -> (tensor<1x8x8x32xf32>, tensor<1x7x7x32xf32>, tensor<1x16x16x32xf32>) {
  %w = "nn.constant"() {value = dense<0.5> : tensor<32x16x3x3xf32>} : () -> tensor<32x16x3x3xf32>
  %0 = "nn.conv2d"(%x, %w) {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x16x16x16xf32>, tensor<32x16x3x3xf32>) -> tensor<1x8x8x32xf32>
  %1 = "nn.conv2d"(%x7, %w) {padding = array<i64: 1, 1, 1, 1>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x7x7x16xf32>, tensor<32x16x3x3xf32>) -> tensor<1x7x7x32xf32>
  %2 = "nn.conv2d"(%x, %wv) {padding = array<i64: 1, 1, 1, 1>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x16x16x16xf32>, tensor<32x16x3x3xf32>) -> tensor<1x16x16x32xf32>
  return %0, %1, %2 : tensor<1x8x8x32xf32>, tensor<1x7x7x32xf32>, tensor<1x16x16x32xf32>
}

// -----

// A result transposed after its activation (an NCHW output) stays direct: IREE would fuse the
// transpose into the Winograd output pass.
// CHECK: // lower-nn-to-tosa: winograd=0
// CHECK-LABEL: func.func @transposed_after
// CHECK: tosa.conv2d
func.func @transposed_after(%x: tensor<1x16x16x16xf32>) -> tensor<1x32x16x16xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<32x16x3x3xf32>} : () -> tensor<32x16x3x3xf32>
  %0 = "nn.conv2d"(%x, %w) {padding = array<i64: 1, 1, 1, 1>, input_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x16x16x16xf32>, tensor<32x16x3x3xf32>) -> tensor<1x16x16x32xf32>
  %1 = "nn.relu"(%0) : (tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  %2 = "nn.transpose"(%1) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x16x16x32xf32>) -> tensor<1x32x16x16xf32>
  return %2 : tensor<1x32x16x16xf32>
}
