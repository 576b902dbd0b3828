// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// Batch dims [2, 1] x [3] broadcast to [2, 3] (tiles), then one rank-3 tosa.matmul.
// CHECK-LABEL: func.func @matmul_broadcast
// CHECK: tosa.tile
// CHECK: tosa.reshape {{.*}} -> tensor<6x3x4xf32>
// CHECK: tosa.tile
// CHECK: tosa.reshape {{.*}} -> tensor<6x4x2xf32>
// CHECK: tosa.matmul {{.*}} -> tensor<6x3x2xf32>
// CHECK: tosa.reshape {{.*}} -> tensor<2x3x3x2xf32>
func.func @matmul_broadcast(%a: tensor<2x1x3x4xf32>, %b: tensor<3x4x2xf32>) -> tensor<2x3x3x2xf32> {
  %0 = "nn.matmul"(%a, %b) : (tensor<2x1x3x4xf32>, tensor<3x4x2xf32>) -> tensor<2x3x3x2xf32>
  return %0 : tensor<2x3x3x2xf32>
}

// -----

// b is one matrix: a's batch folds into the rows, nothing is tiled.
// CHECK-LABEL: func.func @matmul_fold_batch
// CHECK-NOT: tosa.tile
// CHECK: tosa.reshape %arg0, {{.*}} -> tensor<1x6x4xf32>
// CHECK: tosa.reshape %arg1, {{.*}} -> tensor<1x4x5xf32>
// CHECK: tosa.matmul {{.*}} -> tensor<1x6x5xf32>
// CHECK: tosa.reshape {{.*}} -> tensor<2x3x5xf32>
func.func @matmul_fold_batch(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = "nn.matmul"(%a, %b) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// float16 operands go straight into tosa.matmul, which accumulates into a float32 result.
// CHECK-LABEL: func.func @matmul_f16
// CHECK-NOT: tosa.cast %arg
// CHECK: tosa.matmul {{.*}} : (tensor<1x2x3xf16>, tensor<1x3x4xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<1x2x4xf32>
// CHECK: tosa.cast {{.*}} -> tensor<2x4xf16>
func.func @matmul_f16(%a: tensor<2x3xf16>, %b: tensor<3x4xf16>) -> tensor<2x4xf16> {
  %0 = "nn.matmul"(%a, %b) : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf16>
  return %0 : tensor<2x4xf16>
}

// -----

// alpha scales the product; c (rank 1) is expanded to rank 2 and added (beta = 1: no multiply).
// CHECK-LABEL: func.func @gemm
// CHECK: tosa.transpose %arg1 perms([1, 0])
// CHECK: tosa.matmul
// CHECK: tosa.const {{.*}}2.000000e+00{{.*}} tensor<1x1xf32>
// CHECK: tosa.mul
// CHECK: tosa.reshape %arg2, {{.*}} -> tensor<1x5xf32>
// CHECK-NEXT: tosa.add {{.*}} : (tensor<3x5xf32>, tensor<1x5xf32>) -> tensor<3x5xf32>
func.func @gemm(%a: tensor<3x4xf32>, %b: tensor<5x4xf32>, %c: tensor<5xf32>) -> tensor<3x5xf32> {
  %0 = "nn.gemm"(%a, %b, %c) {alpha = 2.0 : f64, b_transpose = true, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// beta = 0 still multiplies c (inf * 0 is NaN), in linalg because tosa.mul folds x * 0 to 0.
// CHECK-LABEL: func.func @gemm_beta_zero
// CHECK: tosa.transpose %arg0 perms([1, 0])
// CHECK: tosa.matmul
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK: tosa.add
func.func @gemm_beta_zero(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>, %c: tensor<3x1xf32>) -> tensor<3x5xf32> {
  %0 = "nn.gemm"(%a, %b, %c) {a_transpose = true, beta = 0.0 : f64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<4x3xf32>, tensor<4x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// float16: alpha and beta are first cast to float16 (0.1 -> 0.0999755859), as the spec says.
// CHECK-LABEL: func.func @gemm_f16
// CHECK: tosa.matmul {{.*}} -> tensor<1x3x5xf32>
// CHECK: tosa.cast %arg2 : (tensor<f16>) -> tensor<f32>
// CHECK: tosa.const {{.*}}0.0999755859{{.*}} tensor<1x1xf32>
// CHECK: tosa.add
// CHECK: tosa.cast {{.*}} -> tensor<3x5xf16>
func.func @gemm_f16(%a: tensor<3x4xf16>, %b: tensor<4x5xf16>, %c: tensor<f16>) -> tensor<3x5xf16> {
  %0 = "nn.gemm"(%a, %b, %c) {beta = 0.1 : f64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3x4xf16>, tensor<4x5xf16>, tensor<f16>) -> tensor<3x5xf16>
  return %0 : tensor<3x5xf16>
}

// -----

// One row times a constant matrix (16 x 600): one multi-result generic marked for cpu-tiles, a
// result per block of 200 columns (at most 256 each), over the transposed matrix; then joined.
// CHECK-LABEL: func.func @vector_times_constant
// CHECK-NOT: tosa.matmul
// CHECK: tosa.transpose {{.*}} perms([1, 0]) : (tensor<16x600xf32>) -> tensor<600x16xf32>
// CHECK-COUNT-3: tosa.slice {{.*}} -> tensor<200x16xf32>
// CHECK: %[[P:.*]]:3 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins({{.*}} : tensor<16xf32>, tensor<200x16xf32>, tensor<200x16xf32>, tensor<200x16xf32>) {{.*}} attrs = {estuary.matvec}
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tosa.concat %[[P]]#0, %[[P]]#1, %[[P]]#2 axis(0) {{.*}} -> tensor<600xf32>
// CHECK: tosa.reshape {{.*}} -> tensor<1x600xf32>
func.func @vector_times_constant(%a: tensor<1x16xf32>) -> tensor<1x600xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<16x600xf32>} : () -> tensor<16x600xf32>
  %0 = "nn.matmul"(%a, %w) : (tensor<1x16xf32>, tensor<16x600xf32>) -> tensor<1x600xf32>
  return %0 : tensor<1x600xf32>
}

// -----

// Not the vector form: a matrix computed at run time, a reduction under 16, two rows.
// CHECK-LABEL: func.func @vector_kept
// CHECK-NOT: linalg.generic
// CHECK-COUNT-3: tosa.matmul
func.func @vector_kept(%a: tensor<1x16xf32>, %b: tensor<16x8xf32>, %c: tensor<1x8xf32>, %d: tensor<2x16xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>, tensor<2x8xf32>) {
  %w = "nn.constant"() {value = dense<0.5> : tensor<8x8xf32>} : () -> tensor<8x8xf32>
  %w2 = "nn.constant"() {value = dense<0.5> : tensor<16x8xf32>} : () -> tensor<16x8xf32>
  %0 = "nn.matmul"(%a, %b) : (tensor<1x16xf32>, tensor<16x8xf32>) -> tensor<1x8xf32>
  %1 = "nn.matmul"(%c, %w) : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
  %2 = "nn.matmul"(%d, %w2) : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
  return %0, %1, %2 : tensor<1x8xf32>, tensor<1x8xf32>, tensor<2x8xf32>
}

// -----

// N = 3 makes two blocks of 2: the transposed matrix gets a zero row, the joined result is sliced.
// CHECK-LABEL: func.func @vector_padded
// CHECK: tosa.pad {{.*}} -> tensor<4x16xf32>
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<16xf32>, tensor<2x16xf32>, tensor<2x16xf32>) {{.*}} attrs = {estuary.matvec}
// CHECK: tosa.concat {{.*}} -> tensor<4xf32>
// CHECK: tosa.slice {{.*}} -> tensor<3xf32>
func.func @vector_padded(%a: tensor<1x16xf32>) -> tensor<1x3xf32> {
  %w = "nn.constant"() {value = dense<0.5> : tensor<16x3xf32>} : () -> tensor<16x3xf32>
  %0 = "nn.matmul"(%a, %w) : (tensor<1x16xf32>, tensor<16x3xf32>) -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}
