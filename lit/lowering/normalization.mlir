// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// CHECK-LABEL: func.func @batch_norm
// CHECK: math.rsqrt
// CHECK: linalg.generic
// CHECK: arith.subf
// CHECK: arith.mulf
func.func @batch_norm(%x: tensor<1x3x2x2xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<1x3x2x2xf32> {
  %0 = "nn.batch_normalization"(%x, %m, %v) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<1x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  return %0 : tensor<1x3x2x2xf32>
}

// -----

// Mean, then the variance of the centred values (two passes), over the spatial axes.
// CHECK-LABEL: func.func @instance_norm
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK: arith.divf
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK: math.rsqrt
func.func @instance_norm(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %0 = "nn.instance_normalization"(%x) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

// Layer normalization over axes [2, 1]: scale is transposed into the input's axis order.
// CHECK-LABEL: func.func @layer_norm
// CHECK: iterator_types = ["parallel", "reduction", "reduction"]
// CHECK: tosa.transpose %arg1 perms([1, 0])
func.func @layer_norm(%x: tensor<2x3x4xf32>, %s: tensor<4x3xf32>) -> tensor<2x3x4xf32> {
  %0 = "nn.layer_normalization"(%x, %s) {axes = array<i64: 2, 1>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3x4xf32>, tensor<4x3xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}
