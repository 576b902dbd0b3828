// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa=target=vulkan-spirv | FileCheck %s

// On GPU targets (float64 is optional there) a small transposed convolution accumulates in
// compensated float32: each product's error (Dekker's split, no fma) and each sum's (TwoSum)
// gather in a second float32 accumulator.
// CHECK-LABEL: func.func @conv_transpose
// CHECK: linalg.generic
// CHECK-SAME: reduction
// CHECK: arith.mulf
// CHECK: math.fma
// CHECK: linalg.yield
// CHECK-NOT: f64
func.func @conv_transpose(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>) -> tensor<1x4x7x7xf32> {
  %0 = "nn.conv_transpose2d"(%x, %w) {strides = array<i64: 2, 2>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<1x4x7x7xf32>
  return %0 : tensor<1x4x7x7xf32>
}
