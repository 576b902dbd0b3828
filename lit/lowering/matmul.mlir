// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// Batch dims broadcast, then one rank-3 tosa.matmul.
// CHECK-LABEL: func.func @matmul_broadcast
// CHECK: tosa.tile
// CHECK: tosa.reshape {{.*}} -> tensor<6x3x4xf32>
// CHECK: tosa.matmul {{.*}} -> tensor<6x3x2xf32>
// CHECK: tosa.reshape {{.*}} -> tensor<2x3x3x2xf32>
func.func @matmul_broadcast(%a: tensor<2x1x3x4xf32>, %b: tensor<3x4x2xf32>) -> tensor<2x3x3x2xf32> {
  %0 = "nn.matmul"(%a, %b) : (tensor<2x1x3x4xf32>, tensor<3x4x2xf32>) -> tensor<2x3x3x2xf32>
  return %0 : tensor<2x3x3x2xf32>
}

// -----

// CHECK-LABEL: func.func @gemm
// CHECK: tosa.transpose %arg1 perms([1, 0])
// CHECK: tosa.matmul
// CHECK: tosa.mul
// CHECK: tosa.add
func.func @gemm(%a: tensor<3x4xf32>, %b: tensor<5x4xf32>, %c: tensor<5xf32>) -> tensor<3x5xf32> {
  %0 = "nn.gemm"(%a, %b, %c) {alpha = 2.0 : f64, b_transpose = true, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// float16 products accumulate in float32.
// CHECK-LABEL: func.func @matmul_f16
// CHECK: tosa.cast {{.*}} -> tensor<2x3xf32>
// CHECK: tosa.matmul {{.*}} -> tensor<1x2x4xf32>
// CHECK: tosa.cast {{.*}} -> tensor<2x4xf16>
func.func @matmul_f16(%a: tensor<2x3xf16>, %b: tensor<3x4xf16>) -> tensor<2x4xf16> {
  %0 = "nn.matmul"(%a, %b) : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf16>
  return %0 : tensor<2x4xf16>
}
