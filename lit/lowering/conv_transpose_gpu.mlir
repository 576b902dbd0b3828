// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa=target=vulkan-spirv | FileCheck %s

// On GPU targets (float64 is optional there) a transposed convolution stays a float32 TOSA conv.
// CHECK-LABEL: func.func @conv_transpose
// CHECK: tosa.pad
// CHECK: tosa.conv2d
// CHECK-NOT: f64
func.func @conv_transpose(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>) -> tensor<1x4x7x7xf32> {
  %0 = "nn.conv_transpose2d"(%x, %w) {strides = array<i64: 2, 2>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<1x4x7x7xf32>
  return %0 : tensor<1x4x7x7xf32>
}
